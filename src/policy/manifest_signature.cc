#include "policy/manifest_signature.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <memory>
#include <string>

#include "policy/digest.h"

namespace anvil {
namespace {

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;
using Bio = std::unique_ptr<BIO, BioFree>;

bool IsLowerHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string SigFile() { return std::string(kSignatureFileName); }

Result<std::string> RawPublicKey(EVP_PKEY* key) {
  if (EVP_PKEY_get_id(key) != EVP_PKEY_ED25519) {
    return Fail("invalid", "not an Ed25519 key (fix: `anvil plugin keygen` makes one)");
  }
  unsigned char raw[kEd25519PublicKeyBytes];
  size_t len = sizeof(raw);
  if (EVP_PKEY_get_raw_public_key(key, raw, &len) != 1 || len != sizeof(raw)) {
    return Fail("invalid", "cannot read the Ed25519 public key");
  }
  return std::string(reinterpret_cast<char*>(raw), len);
}

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
      signature.size() != kEd25519SignatureBytes) {
    return false;
  }
  Pkey key(EVP_PKEY_new_raw_public_key(
      EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(raw_public_key.data()),
      raw_public_key.size()));
  MdCtx ctx(EVP_MD_CTX_new());
  if (!key || !ctx) return false;
  // Ed25519 is one-shot ("pure" EdDSA): no digest, EVP_DigestVerify over the whole message.
  if (EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1) return false;
  return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                          signature.size(), reinterpret_cast<const unsigned char*>(message.data()),
                          message.size()) == 1;
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
  auto parsed = ParseSignatureFile(*signature_text);
  if (!parsed) return tl::unexpected(parsed.error());
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
  Bio bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  if (!bio) return Fail("internal", "OpenSSL BIO");
  Pkey key(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
  if (!key) {
    return Fail("invalid",
                "not a PEM public key (\"-----BEGIN PUBLIC KEY-----\") or 64 hex digits of a raw "
                "Ed25519 key");
  }
  return RawPublicKey(key.get());
}

std::string PublicKeyPem(std::string_view raw_public_key) {
  Pkey key(EVP_PKEY_new_raw_public_key(
      EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(raw_public_key.data()),
      raw_public_key.size()));
  Bio bio(BIO_new(BIO_s_mem()));
  if (!key || !bio || PEM_write_bio_PUBKEY(bio.get(), key.get()) != 1) return {};
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  return len > 0 ? std::string(data, static_cast<size_t>(len)) : std::string();
}

Result<Ed25519KeyPair> GenerateEd25519KeyPair() {
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr));
  EVP_PKEY* raw = nullptr;
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1 || EVP_PKEY_keygen(ctx.get(), &raw) != 1) {
    return Fail("internal", "cannot generate an Ed25519 key");
  }
  Pkey key(raw);
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return Fail("internal", "cannot encode the private key");
  }
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  auto pub = RawPublicKey(key.get());
  if (!pub || len <= 0) return Fail("internal", "cannot encode the key pair");
  return Ed25519KeyPair{std::string(data, static_cast<size_t>(len)), std::move(*pub)};
}

Result<std::string> SignManifest(std::string_view manifest_sha256, std::string_view private_pem) {
  if (!IsSha256Hex(manifest_sha256)) return Fail("invalid", "manifest hash is not SHA-256 hex");
  if (private_pem.size() > 16384) return Fail("invalid", "private key file over 16 KiB");
  Bio bio(BIO_new_mem_buf(private_pem.data(), static_cast<int>(private_pem.size())));
  if (!bio) return Fail("internal", "OpenSSL BIO");
  Pkey key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) return Fail("invalid", "not an unencrypted PEM private key");
  auto pub = RawPublicKey(key.get());
  if (!pub) return tl::unexpected(pub.error());
  const std::string message = SignedMessage(manifest_sha256);
  unsigned char sig[kEd25519SignatureBytes];
  size_t sig_len = sizeof(sig);
  MdCtx ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), sig, &sig_len,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1 ||
      sig_len != sizeof(sig)) {
    return Fail("internal", "Ed25519 signing failed");
  }
  return RenderSignatureFile({KeyId(*pub), std::string(reinterpret_cast<char*>(sig), sig_len)});
}

}  // namespace anvil
