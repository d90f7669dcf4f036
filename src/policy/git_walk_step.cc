#include "policy/git_walk_step.h"

#include "fs/protected_names.h"

namespace anvil {

GitWalkStep DecideGitWalkEntry(const GitDirEntry& e, std::string_view dir_name, size_t depth,
                               size_t max_depth) {
  GitWalkStep step;
  // One fold for every protected name, `.git` too: where a file system ignores code points or
  // folds letters when it looks a name up (`.g\u200cit`, `.GIT`, `.git.`), git asking for `.git`
  // opens that entry.
  const auto kind = ProtectedNameKindIn(dir_name, e.name);
  if (e.type == GitFileType::kDir || e.type == GitFileType::kFile) {
    step.protected_name = kind && *kind != ProtectedNameKind::kGitMetadata;
  } else if (e.type == GitFileType::kSymlink &&
             ((kind && FollowedThroughLinks(*kind)) || IsProtectedFilesDirName(e.name))) {
    // Anvil opens its own names without following a link; an agent, hg, jj and VS Code follow
    // one (VS Code reads `.vscode/tasks.json` through a `.vscode` symlink too).
    step.protected_name = true;
  }
  if (kind == ProtectedNameKind::kGitMetadata) {
    switch (e.type) {
      case GitFileType::kDir:
        step.marker = GitMarkerKind::kGitDir;
        break;
      case GitFileType::kFile:
        step.marker = GitMarkerKind::kGitFile;
        break;
      case GitFileType::kSymlink:
        step.marker = GitMarkerKind::kGitLink;
        break;
      default:
        break;  // a socket or device named .git is nothing git reads
    }
    // `.git` itself is never entered. Another spelling (`.GIT`, `.g\u200cit`) is a git dir only
    // where names fold; elsewhere it is an ordinary directory git and Anvil may be started in,
    // which finds what lies in it: judged as a repository, and walked too.
    if (e.name == ".git" || e.type != GitFileType::kDir) return step;
  }
  if (e.type != GitFileType::kDir) return step;  // symlinks are not followed
  step.descent = depth + 1 > max_depth ? GitWalkDescent::kPastDepth : GitWalkDescent::kWalk;
  return step;
}

}  // namespace anvil
