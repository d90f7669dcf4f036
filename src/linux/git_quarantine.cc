#include "linux/git_quarantine.h"

#include <cerrno>
#include <optional>

#include "policy/display_text.h"
#include "policy/git_paths.h"

namespace anvil {

using namespace git_paths;

GitQuarantineResult ApplyGitQuarantine(const std::vector<GitQuarantineAction>& actions,
                                       const std::vector<std::string>& roots, const GitFs& fs) {
  GitQuarantineResult result;
  for (const auto& a : actions) {
    auto parent = fs.resolve(Dirname(a.path));
    if (!parent || !WithinAny(*parent, roots)) {
      result.failures.push_back(a.path + ": no longer inside a writable root");
      continue;
    }
    const std::string from = Join(*parent, Basename(a.path));
    // A link is kept as a file holding its target: renamed, it would still lead there.
    std::optional<std::string> target;
    if (a.link) {
      target = fs.readlink ? fs.readlink(from) : std::nullopt;
      if (!target || !fs.link_to_file) {
        result.failures.push_back(from + ": no longer a symlink that can be read");
        continue;
      }
    }
    std::string to;
    Status moved = Fail("io", "no free name");
    for (int n = 1; n <= 100; ++n) {
      to = from + std::string(kGitQuarantineSuffix) + (n == 1 ? "" : "-" + std::to_string(n));
      moved = a.link ? fs.link_to_file(from, to) : fs.rename_noreplace(from, to);
      if (moved || moved.error().sys_errno != EEXIST) break;
    }
    if (!moved) {
      result.failures.push_back(from + ": " + moved.error().message);
      continue;
    }
    if (a.link) {
      result.moved.push_back({from, to, a.reason,
                              "ln -s " + PasteableShellWord(*target) + " " +
                                  PasteableShellWord(from) + " && rm " + PasteableShellWord(to)});
      continue;
    }
    std::string restore = "mv " + PasteableShellWord(to) + " " + PasteableShellWord(from);
    if (a.git_dir && fs.lstat(Join(to, "HEAD")).exists()) {
      // Under its new name the directory would still be a git dir to git started inside it.
      const std::string head = Join(to, "HEAD");
      const std::string head_to = head + std::string(kGitQuarantineSuffix);
      if (auto s = fs.rename_noreplace(head, head_to); s) {
        restore =
            "mv " + PasteableShellWord(head_to) + " " + PasteableShellWord(head) + " && " + restore;
      } else {
        result.failures.push_back(head + ": " + s.error().message);
      }
    }
    result.moved.push_back({from, to, a.reason, restore});
  }
  return result;
}

}  // namespace anvil
