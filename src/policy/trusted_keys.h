// The public keys the user trusts to sign plugin manifests (manifest_signature.h), and the
// signature file of a plugin. Thin I/O around the pure decision.
//
// Keys live in the user's configuration, never anywhere a repository or a plugin can write:
//   ${XDG_CONFIG_HOME:-$HOME/.config}/anvil/trusted-keys/<name>.pub
// one PEM public key (or 64 hex digits of a raw Ed25519 key) per file, the name being the
// signer's name shown in consent and `anvil plugin inspect`. The directory must be the user's
// own and not writable by others, and so must each key (whoever can add a file there decides
// which plugins count as signed); a symlinked key, a foreign owner or a group/world-writable
// file is refused with an error naming it, never skipped silently.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "policy/manifest_signature.h"

namespace anvil {

inline constexpr std::size_t kMaxTrustedKeys = 256;

// ${XDG_CONFIG_HOME:-$HOME/.config}/anvil/trusted-keys (a relative XDG_CONFIG_HOME is ignored,
// as the XDG spec requires).
Result<std::string> TrustedKeysDir();

// Every key in `dir` (TrustedKeysDir() when empty), sorted by name. A missing directory means
// no trusted keys. Files not ending in ".pub" are ignored.
Result<std::vector<TrustedKey>> LoadTrustedKeys(const std::string& dir = "");

// Stores `raw_public_key` as <dir>/<name>.pub (PEM, 0600; the directory is created 0700).
// "invalid" for a bad name; an existing name is replaced.
Status TrustKey(const std::string& name, const std::string& raw_public_key,
                const std::string& dir = "");
// Removes <dir>/<name>.pub; "not_found" when there is none.
Status UntrustKey(const std::string& name, const std::string& dir = "");

// <plugin_dir>/anvil-plugin.toml.sig (O_NOFOLLOW, at most kMaxSignatureFileBytes); nullopt
// when absent.
Result<std::optional<std::string>> ReadSignatureFile(const std::string& plugin_dir);

}  // namespace anvil
