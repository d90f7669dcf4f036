#include "policy/git_inert_keys.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <iterator>
#include <string_view>

namespace anvil {
namespace {

enum class Value {
  kData,  // any value
  kUrl,   // a URL or path git fetches from: not through a transport that runs a command
  // A remote's name, or a URL or path used as one (branch.*.remote): a path judged as kUrl's.
  kRemote,
};

struct InertKey {
  std::string_view section;
  bool subsection;  // [section "NAME"] (any NAME) rather than [section]
  std::string_view key;
  Value value;
};

// Lower-case, as the parser gives them.
constexpr std::array kInertKeys = {
    // git init (and what it probes for the file system)
    InertKey{"core", false, "repositoryformatversion", Value::kData},
    InertKey{"core", false, "filemode", Value::kData},
    InertKey{"core", false, "bare", Value::kData},
    InertKey{"core", false, "logallrefupdates", Value::kData},
    InertKey{"core", false, "ignorecase", Value::kData},
    InertKey{"core", false, "precomposeunicode", Value::kData},
    InertKey{"core", false, "symlinks", Value::kData},
    InertKey{"extensions", false, "objectformat", Value::kData},
    InertKey{"extensions", false, "refstorage", Value::kData},
    InertKey{"extensions", false, "worktreeconfig", Value::kData},
    InertKey{"init", false, "defaultbranch", Value::kData},
    // git sparse-checkout set (in config.worktree: the patterns lie in info/sparse-checkout)
    InertKey{"core", false, "sparsecheckout", Value::kData},
    InertKey{"core", false, "sparsecheckoutcone", Value::kData},
    InertKey{"index", false, "sparse", Value::kData},
    // git config rerere.* (recorded resolutions lie in rr-cache/)
    InertKey{"rerere", false, "enabled", Value::kData},
    InertKey{"rerere", false, "autoupdate", Value::kData},
    // git clone, git remote add, git fetch of a partial clone
    InertKey{"remote", true, "url", Value::kUrl},
    InertKey{"remote", true, "pushurl", Value::kUrl},
    InertKey{"remote", true, "fetch", Value::kData},
    InertKey{"remote", true, "push", Value::kData},
    InertKey{"remote", true, "mirror", Value::kData},
    InertKey{"remote", true, "tagopt", Value::kData},
    InertKey{"remote", true, "promisor", Value::kData},
    InertKey{"remote", true, "partialclonefilter", Value::kData},
    InertKey{"extensions", false, "partialclone", Value::kData},
    // git clone, git branch --set-upstream-to, git push -u
    InertKey{"branch", true, "remote", Value::kRemote},
    InertKey{"branch", true, "merge", Value::kData},
    InertKey{"branch", true, "rebase", Value::kData},
    InertKey{"branch", true, "pushremote", Value::kRemote},
    // git config user.*
    InertKey{"user", false, "name", Value::kData},
    InertKey{"user", false, "email", Value::kData},
    // git submodule add / init (in the superproject's config)
    InertKey{"submodule", true, "url", Value::kUrl},
    InertKey{"submodule", true, "active", Value::kData},
    InertKey{"submodule", false, "active", Value::kData},
    // git gc and git maintenance bookkeeping
    InertKey{"gc", false, "auto", Value::kData},
    InertKey{"gc", false, "autodetach", Value::kData},
    // git maintenance register (the repository's path goes to the user's config)
    InertKey{"maintenance", false, "auto", Value::kData},
    InertKey{"maintenance", false, "strategy", Value::kData},
};

// The URL schemes git speaks itself or with a helper it ships.
constexpr std::string_view kNativeSchemes[] = {"file", "git",   "ssh", "git+ssh", "ssh+git",
                                               "http", "https", "ftp", "ftps"};

// A remote-helper transport `NAME::ADDRESS` (ext:: runs its address as a command, fd:: talks
// over inherited descriptors, others run git-remote-NAME), or an option smuggled as a URL.
std::optional<std::string> UrlNotInert(std::string_view value) {
  const auto colons = value.find("::");
  if (colons != std::string_view::npos && value.substr(0, colons).find('/') == std::string::npos) {
    return "a URL with the " + std::string(value.substr(0, colons)) +
           ":: transport (git runs a remote helper for it; ext:: runs its address as a command)";
  }
  if (!value.empty() && value[0] == '-') return "a URL that starts with '-'";
  // `NAME://...` (NAME of letters and digits: what git's is_url takes for a URL): git itself
  // speaks file, git and ssh, and ships the helpers of http(s) and ftp(s); for any other scheme
  // it runs git-remote-NAME from PATH (review s15: `foo://`, `0foo://`, `HTTPS://`).
  const auto sep = value.find("://");
  if (sep != std::string_view::npos && sep > 0) {
    const std::string_view scheme = value.substr(0, sep);
    const bool is_url = std::all_of(scheme.begin(), scheme.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0;
    });
    if (is_url && std::find(std::begin(kNativeSchemes), std::end(kNativeSchemes), scheme) ==
                      std::end(kNativeSchemes)) {
      return "a URL with the scheme " + std::string(scheme) +
             ":// (git runs the remote helper git-remote-" + std::string(scheme) +
             " from PATH for it)";
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> GitKeyNotInert(const GitConfigEntry& e, bool worktree_is_top,
                                          const GitLocalRefJudge& local_ref) {
  if (e.section == "core" && !e.has_subsection && e.key == "worktree") {
    if (worktree_is_top) return std::nullopt;
    return "core.worktree names another directory than the one whose .git leads here (git "
           "checks files out there)";
  }
  for (const InertKey& k : kInertKeys) {
    if (k.section != e.section || k.subsection != e.has_subsection || k.key != e.key) continue;
    if (k.value == Value::kData || !e.value) return std::nullopt;
    // A branch's remote may be a URL itself (git fetch and pull then use it as one).
    if (k.value == Value::kUrl || k.value == Value::kRemote) {
      if (auto why = UrlNotInert(*e.value)) return why;
    }
    if (local_ref) return local_ref(*e.value);
    return std::nullopt;
  }
  return std::string(
      "not a key git init, clone or remote add writes, the only ones a repository the command "
      "made may hold");
}

}  // namespace anvil
