// Optional ed25519 signatures over plugin manifests (threat model T8: "signed manifest").
//
// A plugin author signs the manifest with `anvil plugin sign --key KEY PLUGIN_DIR`, which writes
// a detached signature next to it, <plugin_dir>/anvil-plugin.toml.sig, one line of ASCII:
//
//   ed25519 <key id: 64 hex> <signature: base64 of 64 bytes>
//
// The signed message is kSignatureDomain followed by the manifest's SHA-256 (lower-case hex, as
// Manifest::sha256) and "\n". Signing the hash of the exact bytes binds every byte of the file
// (comments included), and lets the verifier check the very bytes that were parsed and keyed the
// grant, rather than reading the file a second time (a swap in between could otherwise pair a
// signed manifest's signature with an unsigned one's permissions). The domain string keeps an
// Anvil signature from being valid for any other protocol that signs SHA-256 digests.
//
// The key id is the SHA-256 of the 32-byte raw public key. It is only a hint that picks which
// trusted key to try and lets the error say "signed by a key you do not trust" rather than
// "does not verify": acceptance always comes from the signature verifying under a key the user
// trusts, never from the id.
//
// Trust comes only from the user: keys live in the user's config directory (trusted_keys.h),
// never in the workspace or the plugin directory, both of which an attacker may write.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace anvil {

inline constexpr std::string_view kSignatureFileName = "anvil-plugin.toml.sig";
inline constexpr std::string_view kSignatureDomain = "anvil plugin manifest signature v1\n";
inline constexpr std::size_t kMaxSignatureFileBytes = 1024;
inline constexpr std::size_t kEd25519PublicKeyBytes = 32;
inline constexpr std::size_t kEd25519SignatureBytes = 64;

// A public key the user trusts, under the name they gave it.
struct TrustedKey {
  std::string name;        // [a-z0-9][a-z0-9._-]*, at most 64 bytes (a file name)
  std::string public_key;  // 32 raw bytes
};

// A parsed signature file. Says nothing about validity.
struct ManifestSignature {
  std::string key_id;     // 64 lower-case hex
  std::string signature;  // 64 raw bytes
};

// What a plugin's signature state is, once checked.
struct SignatureCheck {
  bool signed_by_trusted_key = false;
  std::string signer;  // the trusted key's name when signed
};

// Strict: exactly "ed25519 <64 hex> <88 base64 chars>" with an optional final "\n". Errors:
// "invalid: anvil-plugin.toml.sig: <what>".
Result<ManifestSignature> ParseSignatureFile(std::string_view text);
std::string RenderSignatureFile(const ManifestSignature& signature);

// The message that is signed for a manifest hash (see above).
std::string SignedMessage(std::string_view manifest_sha256);

// Lower-case hex SHA-256 of a raw public key.
std::string KeyId(std::string_view raw_public_key);

// The decision, pure. `signature_text` is the signature file's content, nullopt when the plugin
// has none.
//  - no signature, require_signed false: Ok, unsigned;
//  - no signature, require_signed true: "denied: <sig file>: missing; signatures are required";
//  - malformed file: "invalid: ...";
//  - key id of no trusted key: "denied: ... signed by a key you do not trust (key id ...)";
//  - key trusted but the signature does not verify: "denied: ... does not match the manifest";
//  - otherwise: signed by that key's name.
Result<SignatureCheck> VerifyManifestSignature(std::string_view manifest_sha256,
                                               const std::optional<std::string>& signature_text,
                                               const std::vector<TrustedKey>& trusted,
                                               bool require_signed);

// Ed25519 on raw keys (libsodium, RFC 8032). Verify returns false for a key or a signature of
// the wrong length without asking the library.
bool Ed25519Verify(std::string_view raw_public_key, std::string_view message,
                   std::string_view signature);

// PEM handling for the CLI. Public keys: "-----BEGIN PUBLIC KEY-----" (SubjectPublicKeyInfo,
// what `openssl pkey -pubout` writes) or 64 hex digits of the raw key; anything that is not an
// Ed25519 key is "invalid". Private keys: PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----").
Result<std::string> ParsePublicKey(std::string_view text);
std::string PublicKeyPem(std::string_view raw_public_key);

struct Ed25519KeyPair {
  std::string private_pem;  // PKCS#8, unencrypted
  std::string public_raw;   // 32 bytes
};
Result<Ed25519KeyPair> GenerateEd25519KeyPair();
// Signs the manifest hash with a PKCS#8 PEM private key; the signature file contents.
Result<std::string> SignManifest(std::string_view manifest_sha256, std::string_view private_pem);

// Strict standard base64 (RFC 4648 §4, padded, no whitespace, canonical final bits).
std::optional<std::string> DecodeBase64(std::string_view text);
std::string EncodeBase64(std::string_view bytes);

// Name rule for trusted keys (they become file names).
Status ValidateKeyName(std::string_view name);

}  // namespace anvil
