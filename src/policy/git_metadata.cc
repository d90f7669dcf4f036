// What the git walk, its plan and the check after the run share (git_metadata_internal.h), and
// the --git-scan-limit flag. The steps themselves: git_scan.cc, git_plan.cc, git_config_keys.cc,
// git_check.cc; the real file system behind GitFs: linux/git_real_fs.h.
#include "policy/git_metadata.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "policy/git_metadata_internal.h"
#include "policy/git_paths.h"

namespace anvil {
namespace git_internal {
namespace {

using git_paths::StripTrailingSlashes;

// The home directory of `user` from a passwd(5) file (no NSS: the anvil binary is static).
std::optional<std::string> HomeOf(const std::string& user, const GitEnv& env, const GitFs& fs) {
  auto text = fs.read_file(env.passwd_file, 16 << 20);
  if (!text || !*text) return std::nullopt;
  std::string_view rest(**text);
  while (!rest.empty()) {
    auto nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    std::vector<std::string_view> fields;
    size_t start = 0;
    for (;;) {
      auto colon = line.find(':', start);
      fields.push_back(line.substr(start, colon - start));
      if (colon == std::string_view::npos) break;
      start = colon + 1;
    }
    if (fields.size() >= 6 && fields[0] == user && !fields[5].empty()) {
      return std::string(fields[5]);
    }
  }
  return std::nullopt;
}

}  // namespace

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r' || s[b] == '\n')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r' || s[e - 1] == '\n')) {
    --e;
  }
  return std::string(s.substr(b, e - b));
}

std::optional<std::string> ExpandUserPath(const std::string& value, const GitEnv& env,
                                          const GitFs& fs) {
  if (value.rfind("%(prefix)/", 0) == 0) return std::nullopt;
  if (value.empty() || value[0] != '~') return value;
  auto slash = value.find('/');
  std::string user = value.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
  std::string rest = slash == std::string::npos ? "" : value.substr(slash);
  if (user.empty()) {
    if (env.home.empty()) return std::nullopt;
    return StripTrailingSlashes(env.home) + rest;
  }
  auto home = HomeOf(user, env, fs);
  if (!home) return std::nullopt;
  return StripTrailingSlashes(*home) + rest;
}

Error LimitError(std::string_view bound, const std::string& value, const std::string& what,
                 const std::string& where) {
  return Error{"limit",
               "git metadata: " + what + " (the '" + std::string(bound) + "' bound is " + value +
                   "; reached at " + where +
                   "). The sandbox did not start: a repository past the bound could not be "
                   "protected. fix: raise it with --git-scan-limit " +
                   std::string(bound) +
                   "=N, or pass --writable-git to run without protecting git metadata"};
}

std::string SecondsText(double s) {
  std::string t = std::to_string(s);
  while (t.find('.') != std::string::npos && (t.back() == '0' || t.back() == '.')) {
    bool dot = t.back() == '.';
    t.pop_back();
    if (dot) break;
  }
  return t;
}

std::string ConfigReason(const GitConfigFile& f) {
  return f.included_from.empty()
             ? "git's user config"
             : "include in " + f.included_from + ":" + std::to_string(f.include_line);
}

}  // namespace git_internal

Status ApplyGitScanLimit(std::string_view flag_value, GitScanLimits& limits) {
  auto eq = flag_value.find('=');
  if (eq == std::string_view::npos) {
    return Fail("invalid", "--git-scan-limit expects NAME=VALUE, got " + std::string(flag_value));
  }
  std::string name(flag_value.substr(0, eq));
  std::string value(flag_value.substr(eq + 1));
  char* end = nullptr;
  errno = 0;
  if (name == "seconds") {
    double s = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || errno != 0 || !(s > 0) || !std::isfinite(s) || s > 86400) {
      return Fail("invalid", "--git-scan-limit seconds expects a positive number, got " + value);
    }
    limits.seconds = s;
    return Ok();
  }
  unsigned long long n = std::strtoull(value.c_str(), &end, 10);
  if (value.empty() || value[0] == '-' || *end != '\0' || errno != 0 || n == 0 ||
      n > (1ULL << 40)) {
    return Fail("invalid",
                "--git-scan-limit " + name + " expects a positive whole number, got " + value);
  }
  if (name == "entries") {
    limits.entries = n;
  } else if (name == "depth") {
    limits.depth = n;
  } else if (name == "paths") {
    limits.paths = n;
  } else {
    return Fail("invalid",
                "--git-scan-limit: unknown bound '" + name + "' (entries, depth, seconds, paths)");
  }
  return Ok();
}

std::optional<std::string> ParseGitPointer(std::string_view text, GitPointerKind kind) {
  // git reads the file as a C string: what follows a NUL is not there.
  text = text.substr(0, text.find('\0'));
  if (kind == GitPointerKind::kDotGitFile) {
    // read_gitfile_gently: "gitdir: " exactly, the rest of the file the path.
    constexpr std::string_view kPrefix = "gitdir: ";
    if (text.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
    text.remove_prefix(kPrefix.size());
  }
  // git strips line ends at the end only (a worktree's back pointer: any blank, strbuf_rtrim);
  // blanks and lines before them are part of the path.
  auto strip = [&](char c) {
    return c == '\n' || c == '\r' ||
           (kind == GitPointerKind::kBackPointer && std::isspace(static_cast<unsigned char>(c)));
  };
  while (!text.empty() && strip(text.back())) text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  return std::string(text);
}

}  // namespace anvil
