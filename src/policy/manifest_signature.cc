#include "policy/manifest_signature.h"

#include <sodium.h>

#include <cstring>
#include <string>

#include "policy/digest.h"

namespace anvil {
namespace {

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// RFC 8410 encodings of Ed25519 keys: the DER is fixed but for the 32 key bytes at the end.
// SubjectPublicKeyInfo ("-----BEGIN PUBLIC KEY-----", what `openssl pkey -pubout` writes):
constexpr unsigned char kSpkiPrefix[] = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03,
                                         0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};
// PKCS#8 v1 PrivateKeyInfo with the 32-byte seed ("-----BEGIN PRIVATE KEY-----", what
// `openssl genpkey -algorithm ed25519` and `anvil plugin keygen` write):
constexpr unsigned char kPkcs8Prefix[] = {0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06,
                                          0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20};
// The AlgorithmIdentifier of Ed25519 (OID 1.3.101.112), to tell "another key type" apart from
// "not a key".
constexpr unsigned char kEd25519Oid[] = {0x06, 0x03, 0x2b, 0x65, 0x70};

// Key generation and signing need libsodium's CPU-feature and random set-up; verification and
// hashing do not, but calling it first costs nothing after the first time.
bool SodiumReady() {
  static const bool ready = sodium_init() >= 0;
  return ready;
}

template <size_t N>
bool HasPrefix(const std::string& der, const unsigned char (&prefix)[N]) {
  return der.size() >= N && std::memcmp(der.data(), prefix, N) == 0;
}

// The body of the first PEM block labelled `label`, decoded: text before the BEGIN line is
// allowed (as OpenSSL allows it), the base64 lines must be strict (no headers, no stray
// characters), and the END line must match. `error` says whether there was no such block or
// a malformed one.
enum class PemError { kNone, kNoBlock, kBadBody };
std::string PemBody(std::string_view text, std::string_view label, PemError& error) {
  const std::string begin = "-----BEGIN " + std::string(label) + "-----";
  const std::string end = "-----END " + std::string(label) + "-----";
  error = PemError::kNoBlock;
  bool inside = false;
  std::string b64;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!inside) {
      inside = line == begin;
      continue;
    }
    if (line == end) {
      auto der = DecodeBase64(b64);
      error = der ? PemError::kNone : PemError::kBadBody;
      return der ? *der : std::string();
    }
    if (line.empty() || line.size() > 76) break;
    b64.append(line);
  }
  if (inside) error = PemError::kBadBody;
  return {};
}

bool IsLowerHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string SigFile() { return std::string(kSignatureFileName); }

}  // namespace

std::optional<std::string> DecodeBase64(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int v[4] = {0, 0, 0, 0};
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = text[i + k];
      if (c == '=') {
        // Padding only at the very end, and only in the last two positions.
        if (i + 4 != text.size() || k < 2) return std::nullopt;
        ++pad;
        v[k] = 0;
        continue;
      }
      if (pad) return std::nullopt;  // data after padding
      const char* at = std::char_traits<char>::find(kBase64, 64, c);
      if (!at) return std::nullopt;
      v[k] = static_cast<int>(at - kBase64);
    }
    const unsigned n = (static_cast<unsigned>(v[0]) << 18) | (static_cast<unsigned>(v[1]) << 12) |
                       (static_cast<unsigned>(v[2]) << 6) | static_cast<unsigned>(v[3]);
    out += static_cast<char>((n >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((n >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(n & 0xff);
    // Canonical: the bits the padding drops must be zero, so one value has one spelling.
    if ((pad == 1 && (n & 0xff) != 0) || (pad == 2 && (n & 0xffff) != 0)) return std::nullopt;
  }
  return out;
}

std::string EncodeBase64(std::string_view bytes) {
  std::string out;
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    unsigned n = (static_cast<unsigned char>(bytes[i]) << 16) |
                 (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                 static_cast<unsigned char>(bytes[i + 2]);
    out += kBase64[(n >> 18) & 63];
    out += kBase64[(n >> 12) & 63];
    out += kBase64[(n >> 6) & 63];
    out += kBase64[n & 63];
  }
  size_t rest = bytes.size() - i;
  if (rest > 0) {
    unsigned n = static_cast<unsigned char>(bytes[i]) << 16;
    if (rest == 2) n |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += kBase64[(n >> 18) & 63];
    out += kBase64[(n >> 12) & 63];
    out += rest == 2 ? kBase64[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Status ValidateKeyName(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 64 &&
            ((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9'));
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')) {
      ok = false;
    }
  }
  if (!ok) {
    return Fail("invalid",
                "key name must match [a-z0-9][a-z0-9._-]* and be at most 64 bytes (fix: e.g. "
                "\"alice\" or \"acme-release\")");
  }
  return Ok();
}

Result<ManifestSignature> ParseSignatureFile(std::string_view text) {
  auto bad = [](std::string what) {
    return Fail("invalid", SigFile() + ": " + what + " (fix: re-sign with `anvil plugin sign`)");
  };
  if (text.size() > kMaxSignatureFileBytes) return bad("over 1 KiB");
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  const auto sp1 = text.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : text.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || text.find(' ', sp2 + 1) != std::string_view::npos) {
    return bad("expected one line \"ed25519 <key id> <signature>\"");
  }
  if (text.substr(0, sp1) != "ed25519") return bad("unknown algorithm (only ed25519)");
  std::string_view id = text.substr(sp1 + 1, sp2 - sp1 - 1);
  if (id.size() != 64 || !IsLowerHex(id)) return bad("key id is not 64 lower-case hex digits");
  auto sig = DecodeBase64(text.substr(sp2 + 1));
  if (!sig) return bad("signature is not valid base64");
  if (sig->size() != kEd25519SignatureBytes) {
    return bad("signature is " + std::to_string(sig->size()) + " bytes, not 64 (truncated?)");
  }
  return ManifestSignature{std::string(id), std::move(*sig)};
}

std::string RenderSignatureFile(const ManifestSignature& s) {
  return "ed25519 " + s.key_id + " " + EncodeBase64(s.signature) + "\n";
}

std::string SignedMessage(std::string_view manifest_sha256) {
  return std::string(kSignatureDomain) + std::string(manifest_sha256) + "\n";
}

std::string KeyId(std::string_view raw_public_key) { return Sha256Hex(raw_public_key); }

bool Ed25519Verify(std::string_view raw_public_key, std::string_view message,
                   std::string_view signature) {
  if (raw_public_key.size() != kEd25519PublicKeyBytes ||
      signature.size() != kEd25519SignatureBytes || !SodiumReady()) {
    return false;
  }
  // RFC 8032 verification; libsodium also refuses a non-canonical S or R and small-order
  // public keys, so one message has no second valid signature under a key.
  return crypto_sign_verify_detached(
             reinterpret_cast<const unsigned char*>(signature.data()),
             reinterpret_cast<const unsigned char*>(message.data()), message.size(),
             reinterpret_cast<const unsigned char*>(raw_public_key.data())) == 0;
}

Result<SignatureCheck> VerifyManifestSignature(std::string_view manifest_sha256,
                                               const std::optional<std::string>& signature_text,
                                               const std::vector<TrustedKey>& trusted,
                                               bool require_signed) {
  if (!signature_text) {
    if (require_signed) {
      return Fail("denied", SigFile() +
                                ": missing, and signed manifests are required (--require-signed)"
                                " (fix: ask the author for a signed release, or drop the flag)");
    }
    return SignatureCheck{};
  }
  ANVIL_TRY(parsed, ParseSignatureFile(*signature_text));
  for (const TrustedKey& key : trusted) {
    if (KeyId(key.public_key) != parsed->key_id) continue;
    if (!Ed25519Verify(key.public_key, SignedMessage(manifest_sha256), parsed->signature)) {
      return Fail("denied", SigFile() + ": the signature by trusted key " + key.name +
                                " does not match anvil-plugin.toml (the manifest changed after "
                                "it was signed, or the signature was altered)");
    }
    return SignatureCheck{true, key.name};
  }
  return Fail("denied", SigFile() + ": signed by a key you do not trust (key id " +
                            parsed->key_id.substr(0, 16) +
                            "...) (fix: `anvil plugin trust-key NAME FILE` if you trust its "
                            "author, or remove the signature file)");
}

Result<std::string> ParsePublicKey(std::string_view text) {
  std::string_view trimmed = text;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == '\r')) {
    trimmed.remove_suffix(1);
  }
  if (trimmed.size() == 64 && IsLowerHex(trimmed)) {
    std::string raw;
    for (size_t i = 0; i < 64; i += 2) {
      raw += static_cast<char>(std::stoi(std::string(trimmed.substr(i, 2)), nullptr, 16));
    }
    return raw;
  }
  if (text.size() > 4096) return Fail("invalid", "public key file over 4 KiB");
  PemError error = PemError::kNone;
  std::string der = PemBody(text, "PUBLIC KEY", error);
  if (error != PemError::kNone) {
    return Fail("invalid",
                "not a PEM public key (\"-----BEGIN PUBLIC KEY-----\") or 64 hex digits of a raw "
                "Ed25519 key");
  }
  if (der.size() != sizeof(kSpkiPrefix) + kEd25519PublicKeyBytes || !HasPrefix(der, kSpkiPrefix)) {
    return Fail("invalid", "not an Ed25519 key (fix: `anvil plugin keygen` makes one)");
  }
  return der.substr(sizeof(kSpkiPrefix));
}

std::string PublicKeyPem(std::string_view raw_public_key) {
  if (raw_public_key.size() != kEd25519PublicKeyBytes) return {};
  std::string der(reinterpret_cast<const char*>(kSpkiPrefix), sizeof(kSpkiPrefix));
  der.append(raw_public_key);
  return "-----BEGIN PUBLIC KEY-----\n" + EncodeBase64(der) + "\n-----END PUBLIC KEY-----\n";
}

namespace {

std::string PrivateKeyPem(const unsigned char (&seed)[crypto_sign_SEEDBYTES]) {
  std::string der(reinterpret_cast<const char*>(kPkcs8Prefix), sizeof(kPkcs8Prefix));
  der.append(reinterpret_cast<const char*>(seed), sizeof(seed));
  std::string pem =
      "-----BEGIN PRIVATE KEY-----\n" + EncodeBase64(der) + "\n-----END PRIVATE KEY-----\n";
  sodium_memzero(der.data(), der.size());
  return pem;
}

}  // namespace

Result<Ed25519KeyPair> GenerateEd25519KeyPair() {
  if (!SodiumReady()) return Fail("internal", "libsodium cannot initialise");
  unsigned char seed[crypto_sign_SEEDBYTES];
  unsigned char pk[crypto_sign_PUBLICKEYBYTES];
  unsigned char sk[crypto_sign_SECRETKEYBYTES];
  randombytes_buf(seed, sizeof(seed));
  if (crypto_sign_seed_keypair(pk, sk, seed) != 0) {
    sodium_memzero(seed, sizeof(seed));
    return Fail("internal", "cannot generate an Ed25519 key");
  }
  Ed25519KeyPair pair{PrivateKeyPem(seed), std::string(reinterpret_cast<char*>(pk), sizeof(pk))};
  sodium_memzero(seed, sizeof(seed));
  sodium_memzero(sk, sizeof(sk));
  return pair;
}

Result<std::string> SignManifest(std::string_view manifest_sha256, std::string_view private_pem) {
  if (!IsSha256Hex(manifest_sha256)) return Fail("invalid", "manifest hash is not SHA-256 hex");
  if (private_pem.size() > 16384) return Fail("invalid", "private key file over 16 KiB");
  if (!SodiumReady()) return Fail("internal", "libsodium cannot initialise");
  PemError error = PemError::kNone;
  std::string der = PemBody(private_pem, "PRIVATE KEY", error);
  if (error != PemError::kNone) {
    bool encrypted = private_pem.find("-----BEGIN ENCRYPTED PRIVATE KEY-----") != std::string::npos;
    return Fail("invalid", encrypted ? "an encrypted private key; Anvil signs with an "
                                       "unencrypted PKCS#8 PEM key (`anvil plugin keygen`)"
                                     : "not an unencrypted PEM private key");
  }
  auto wipe = [&der] { sodium_memzero(der.data(), der.size()); };
  if (der.size() != sizeof(kPkcs8Prefix) + crypto_sign_SEEDBYTES || !HasPrefix(der, kPkcs8Prefix)) {
    bool ed25519 = der.find(std::string(reinterpret_cast<const char*>(kEd25519Oid),
                                        sizeof(kEd25519Oid))) != std::string::npos;
    wipe();
    return Fail("invalid", ed25519 ? "an Ed25519 key in a PKCS#8 form Anvil does not read "
                                     "(only v1, as `openssl genpkey -algorithm ed25519` writes)"
                                   : "not an Ed25519 key (fix: `anvil plugin keygen` makes one)");
  }
  unsigned char pk[crypto_sign_PUBLICKEYBYTES];
  unsigned char sk[crypto_sign_SECRETKEYBYTES];
  int rc = crypto_sign_seed_keypair(
      pk, sk, reinterpret_cast<const unsigned char*>(der.data()) + sizeof(kPkcs8Prefix));
  wipe();
  if (rc != 0) return Fail("internal", "cannot derive the Ed25519 key");
  const std::string message = SignedMessage(manifest_sha256);
  unsigned char sig[crypto_sign_BYTES];
  rc = crypto_sign_detached(sig, nullptr, reinterpret_cast<const unsigned char*>(message.data()),
                            message.size(), sk);
  sodium_memzero(sk, sizeof(sk));
  if (rc != 0) return Fail("internal", "Ed25519 signing failed");
  return RenderSignatureFile({KeyId(std::string(reinterpret_cast<char*>(pk), sizeof(pk))),
                              std::string(reinterpret_cast<char*>(sig), sizeof(sig))});
}

}  // namespace anvil
