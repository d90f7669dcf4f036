#include "linux/helper_executable.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#ifndef ANVIL_HELPER_RELATIVE_DIR
#error "ANVIL_HELPER_RELATIVE_DIR (bin/ -> libexec/anvil/) must come from CMake"
#endif

namespace anvil {
namespace {

// Resolves "." and ".." lexically. Only used on paths built from a canonical directory (no
// symbolic links in it), where that is the same as the kernel's resolution.
std::string LexicallyNormal(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view part = path.substr(i, j - i);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    i = j + 1;
  }
  std::string out;
  for (auto p : parts) {
    out += '/';
    out += p;
  }
  return out.empty() ? "/" : out;
}

std::string Octal(mode_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

Result<std::string> SelfDirectory() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) {
    return SysFail("not_found",
                   "cannot read /proc/self/exe to find Anvil's helpers beside the running program "
                   "(fix: mount /proc)");
  }
  std::string self(buf, static_cast<size_t>(n));
  // The program file was replaced while it runs (a package upgrade): its directory still holds
  // the helpers of the installed version.
  constexpr std::string_view kDeleted = " (deleted)";
  if (self.size() > kDeleted.size() && self.ends_with(kDeleted)) {
    self.resize(self.size() - kDeleted.size());
  }
  if (self.empty() || self[0] != '/') {
    return Fail("not_found", "/proc/self/exe is not an absolute path: " + self);
  }
  return self.substr(0, std::max<size_t>(1, self.rfind('/')));
}

}  // namespace

std::string_view InstalledHelperDir() { return ANVIL_HELPER_RELATIVE_DIR; }

std::vector<std::string> HelperCandidates(std::string_view self_dir, std::string_view name) {
  std::string dir(self_dir);
  return {LexicallyNormal(dir + "/" + std::string(InstalledHelperDir()) + "/" + std::string(name)),
          LexicallyNormal(dir + "/" + std::string(name))};
}

Status CheckHelperPath(const std::vector<PathStep>& steps, uid_t euid) {
  if (steps.empty()) return Fail("sandbox", "no path to check");
  const PathStep& helper = steps.front();
  if (!S_ISREG(helper.mode)) {
    return Fail("sandbox", "helper " + helper.path +
                               " is not a regular file (fix: reinstall anvil, or rebuild it)");
  }
  if ((helper.mode & 0111) == 0) {
    return Fail("sandbox", "helper " + helper.path + " is not executable (fix: chmod 755 " +
                               helper.path + ", or reinstall anvil)");
  }
  for (const PathStep& step : steps) {
    const bool dir = S_ISDIR(step.mode);
    const char* what = dir ? "directory " : "";
    if (step.uid != 0 && step.uid != euid) {
      return Fail("sandbox",
                  "helper " + helper.path + " refused: " + what + step.path + " is owned by uid " +
                      std::to_string(step.uid) + ", not root or you (uid " + std::to_string(euid) +
                      "), so that user could replace the helper (fix: " + "chown root " +
                      step.path + ", or install anvil where only root or you " + "can write)");
    }
    const bool sticky = dir && (step.mode & S_ISVTX) != 0;
    if ((step.mode & (S_IWGRP | S_IWOTH)) != 0 && !sticky) {
      const char* who = (step.mode & S_IWOTH) != 0 ? "anyone" : "its group";
      return Fail("sandbox", "helper " + helper.path + " refused: " + what + step.path +
                                 " is writable by " + who + " (mode " + Octal(step.mode) +
                                 "), who could replace the helper (fix: chmod go-w " + step.path +
                                 ")");
    }
  }
  return Ok();
}

Result<HelperLocation> FindHelper(std::string_view name) {
  ANVIL_TRY(self_dir, SelfDirectory());
  std::vector<std::string> candidates = HelperCandidates(*self_dir, name);
  for (const std::string& candidate : candidates) {
    struct stat st {};
    if (::lstat(candidate.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) continue;
      return SysFail("sandbox", "helper " + candidate);
    }
    // The first one that exists is the one: a later candidate is never a fallback for one that
    // was refused.
    char buf[PATH_MAX];
    if (::realpath(candidate.c_str(), buf) == nullptr) {
      return SysFail("not_found", "helper " + candidate + " (a dangling symbolic link?)");
    }
    HelperLocation found{std::string(name), buf};
    std::vector<PathStep> steps;
    std::string path = found.path;
    while (true) {
      struct stat s {};
      if (::lstat(path.c_str(), &s) != 0) return SysFail("sandbox", "helper: stat " + path);
      if (S_ISLNK(s.st_mode)) {
        // realpath just resolved every link: one appearing now is a change under our feet.
        return Fail("sandbox", "helper " + found.path + ": " + path +
                                   " became a symbolic link while it was checked");
      }
      steps.push_back({path, s.st_uid, s.st_mode});
      if (path == "/") break;
      size_t slash = path.rfind('/');
      path = slash == 0 ? "/" : path.substr(0, slash);
    }
    ANVIL_RETURN_IF_ERROR(CheckHelperPath(steps, ::geteuid()));
    return found;
  }
  std::string looked;
  for (const auto& c : candidates) looked += (looked.empty() ? "" : " and ") + c;
  return Fail("not_found", std::string(name) + " not found beside " + *self_dir + ": looked at " +
                               looked +
                               " (fix: reinstall anvil, or build every target of the build tree)");
}

}  // namespace anvil
