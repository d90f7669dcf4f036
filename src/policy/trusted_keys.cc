#include "policy/trusted_keys.h"

#include <algorithm>
#include <cerrno>

#include "fs/file_facts.h"
#include "fs/file_io.h"
#include "fs/workspace_path.h"

namespace anvil {
namespace {

constexpr std::string_view kKeySuffix = ".pub";

Result<std::string> ConfigHome() {
  const std::string config = XdgConfigHome();
  if (!config.empty()) return config;
  const std::string home = AnvilUserHome();
  if (home.empty()) {
    return Fail("not_found",
                "cannot find a home directory for the trusted keys (fix: set HOME or "
                "XDG_CONFIG_HOME)");
  }
  return home + "/.config";
}

// The user's own, not writable by anyone else: whoever can write here decides what "signed"
// means.
Status CheckOwned(const OwnerFacts& owner, const std::string& what) {
  if (!owner.Mine()) {
    return Fail("denied", what + " is owned by uid " + std::to_string(owner.uid) +
                              ", not by you; refusing keys another user controls");
  }
  if (owner.others_may_write) {
    return Fail("denied", what + " is writable by other users (fix: chmod go-w it)");
  }
  return Ok();
}

// Opens the directory without following a symlink in its last component; "not_found" when
// missing.
Result<UniqueFd> OpenKeyDir(const std::string& dir) {
  auto fd = OpenDirectory(dir, DirOpen::kReadNoFollow);
  if (!fd) {
    const int e = fd.error().sys_errno;
    if (e == ENOENT) return SysFail("not_found", QuotePathForMessage(dir), e);
    if (e == ELOOP || e == ENOTDIR) {
      return Fail("denied", "trusted keys directory " + QuotePathForMessage(dir) +
                                " is a symbolic link or not a directory; refusing it");
    }
    return SysFail("io", "open " + QuotePathForMessage(dir), e);
  }
  ANVIL_TRY(owner, OwnerOfFd(fd->Get(), dir));
  ANVIL_RETURN_IF_ERROR(CheckOwned(*owner, "trusted keys directory " + QuotePathForMessage(dir)));
  return fd;
}

Result<std::string> DirOrDefault(const std::string& dir) {
  if (!dir.empty()) return dir;
  return TrustedKeysDir();
}

}  // namespace

Result<std::string> TrustedKeysDir() {
  ANVIL_TRY(home, ConfigHome());
  return *home + "/anvil/trusted-keys";
}

Result<std::vector<TrustedKey>> LoadTrustedKeys(const std::string& dir_arg) {
  ANVIL_TRY(dir, DirOrDefault(dir_arg));
  auto fd = OpenKeyDir(*dir);
  if (!fd) {
    if (fd.error().code == "not_found") return std::vector<TrustedKey>{};
    return tl::unexpected(fd.error());
  }
  std::vector<std::string> names;
  ANVIL_TRY(
      listed,
      ForEachName(
          fd->Get(), "list " + QuotePathForMessage(*dir), [&](const std::string& name) -> Status {
            if (name.size() <= kKeySuffix.size() || !name.ends_with(kKeySuffix) || name[0] == '.') {
              return Ok();
            }
            names.push_back(name);
            if (names.size() > kMaxTrustedKeys) {
              return Fail("limit", QuotePathForMessage(*dir) + " holds more than " +
                                       std::to_string(kMaxTrustedKeys) + " keys");
            }
            return Ok();
          }));
  std::sort(names.begin(), names.end());
  std::vector<TrustedKey> keys;
  for (const std::string& file : names) {
    const std::string shown = "trusted key " + QuotePathForMessage(*dir + "/" + file);
    TrustedKey key;
    key.name = file.substr(0, file.size() - kKeySuffix.size());
    if (auto s = ValidateKeyName(key.name); !s) {
      return Fail("invalid", shown + ": " + s.error().message);
    }
    OwnerFacts file_owner;
    auto text = ReadRegularFileNoFollowOwned(fd->Get(), file, 4096, file_owner);
    if (!text) return Fail(text.error().error_code(), shown + ": " + text.error().message);
    ANVIL_RETURN_IF_ERROR(CheckOwned(file_owner, shown));
    auto raw = ParsePublicKey(*text);
    if (!raw) return Fail("invalid", shown + ": " + raw.error().message);
    key.public_key = std::move(*raw);
    keys.push_back(std::move(key));
  }
  return keys;
}

Status TrustKey(const std::string& name, const std::string& raw_public_key,
                const std::string& dir_arg) {
  ANVIL_RETURN_IF_ERROR(ValidateKeyName(name));
  if (raw_public_key.size() != kEd25519PublicKeyBytes) {
    return Fail("invalid", "an Ed25519 public key is 32 bytes");
  }
  ANVIL_TRY(dir, DirOrDefault(dir_arg));
  // Create each missing component 0700 (the config dir is private to the user).
  ANVIL_RETURN_IF_ERROR(MakePrivateDirs(*dir, "create directory "));
  ANVIL_TRY(fd, OpenKeyDir(*dir));
  return WriteFileAtomically(fd->Get(), name + std::string(kKeySuffix),
                             PublicKeyPem(raw_public_key), 0600);
}

Status UntrustKey(const std::string& name, const std::string& dir_arg) {
  ANVIL_RETURN_IF_ERROR(ValidateKeyName(name));
  ANVIL_TRY(dir, DirOrDefault(dir_arg));
  auto fd = OpenKeyDir(*dir);
  if (!fd) return Fail("not_found", "no trusted key named " + name);
  const std::string file = name + std::string(kKeySuffix);
  if (auto removed = RemoveFileAt(fd->Get(), file); !removed) {
    const int e = removed.error().sys_errno;
    if (e == ENOENT) return Fail("not_found", "no trusted key named " + name);
    return SysFail("io", "remove " + QuotePathForMessage(*dir + "/" + file), e);
  }
  return Ok();
}

Result<std::optional<std::string>> ReadSignatureFile(const std::string& plugin_dir) {
  auto dir = OpenDirectory(plugin_dir, DirOpen::kPath);
  if (!dir) {
    return SysFail("not_found", "plugin directory " + QuotePathForMessage(plugin_dir),
                   dir.error().sys_errno);
  }
  auto text =
      ReadRegularFileNoFollow(dir->Get(), std::string(kSignatureFileName), kMaxSignatureFileBytes);
  if (!text) {
    if (text.error().code == "not_found") return std::optional<std::string>();
    return Fail(text.error().code == "limit" ? ErrorCode("invalid") : text.error().error_code(),
                std::string(kSignatureFileName) + " in " + QuotePathForMessage(plugin_dir) + ": " +
                    text.error().message);
  }
  return std::optional<std::string>(std::move(*text));
}

}  // namespace anvil
