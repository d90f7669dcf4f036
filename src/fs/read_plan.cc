#include "fs/read_plan.h"

#include <algorithm>
#include <unordered_map>

#include "fs/path_glob.h"
#include "fs/workspace_path.h"

namespace anvil {
namespace {

std::string Join(const std::string& dir, const std::string& name) {
  return dir == kWorkspaceRootPath ? name : dir + "/" + name;
}

// Whether a symlink in `dir` with text `target` stays beneath the workspace when resolved by name
// (".." cannot climb above the root, no absolute target): what RESOLVE_BENEATH lets sys.fs.read
// follow. Links further on in the target are the view's business (it holds only granted files).
bool LinkStaysInside(const std::string& dir, const std::string& target) {
  if (target.empty() || target[0] == '/') return false;
  std::size_t depth = 0;
  if (dir != kWorkspaceRootPath)
    depth = static_cast<std::size_t>(std::count(dir.begin(), dir.end(), '/')) + 1;
  std::size_t start = 0;
  while (start <= target.size()) {
    std::size_t end = target.find('/', start);
    if (end == std::string::npos) end = target.size();
    std::string_view part(target.data() + start, end - start);
    if (part == "..") {
      if (depth == 0) return false;
      --depth;
    } else if (!part.empty() && part != ".") {
      ++depth;
    }
    start = end + 1;
  }
  return true;
}

bool IsMount(ReadOpKind kind) {
  return kind == ReadOpKind::kBindDir || kind == ReadOpKind::kBindFile ||
         kind == ReadOpKind::kBindLinkedFile || kind == ReadOpKind::kMaskFile ||
         kind == ReadOpKind::kMaskDir;
}

class Planner {
 public:
  Planner(const std::vector<std::string>& globs, const DirFactsLookup& facts,
          const ReadPlanOptions& options)
      : globs_(globs), facts_(facts), options_(options) {}

  Result<std::vector<ReadOp>> Run() {
    ANVIL_RETURN_IF_ERROR(Visit(std::string(kWorkspaceRootPath), 0));
    return std::move(ops_);
  }

 private:
  Status Emit(ReadOpKind kind, std::string path, std::string target = {}) {
    if (ops_.size() >= options_.max_ops) {
      return Fail("limit", "sys.exec: the files this grant allows need more than " +
                               std::to_string(options_.max_ops) +
                               " entries in the tool's view (fix: grant whole directories, "
                               "e.g. \"docs/**\", or fewer files)");
    }
    if (IsMount(kind) && ++mounts_ > options_.max_mounts) {
      return Fail("limit", "sys.exec: the files this grant allows need more than " +
                               std::to_string(options_.max_mounts) +
                               " separate mounts in the tool's view (fix: grant whole "
                               "directories, e.g. \"docs/**\", instead of patterns such as "
                               "\"**/*.md\" that pick files one by one)");
    }
    ops_.push_back(ReadOp{kind, std::move(path), std::move(target)});
    return Ok();
  }

  Status Depth(std::size_t depth, const std::string& path) {
    if (depth <= options_.max_depth) return Ok();
    return Fail("limit", "sys.exec: the workspace is deeper than " +
                             std::to_string(options_.max_depth) + " directories at " +
                             QuotePathForMessage(path) + " (fix: narrow fs.read)");
  }

  // A directory the grant reaches: shown whole when every descendant is granted, else rebuilt
  // from what is granted.
  Status Visit(const std::string& path, std::size_t depth) {
    ANVIL_RETURN_IF_ERROR(Depth(depth, path));
    ANVIL_TRY(facts, facts_(path));
    if (*facts == nullptr) {
      // Gone since its parent was listed: nothing to show (the root is always the view's own).
      if (path == kWorkspaceRootPath) return Emit(ReadOpKind::kDir, path);
      return Ok();
    }
    if (GrantCoversSubtree(globs_, path)) {
      ANVIL_RETURN_IF_ERROR(Emit(ReadOpKind::kBindDir, path));
      return Masks(path, **facts, depth, /*bind_root=*/true);
    }
    ANVIL_RETURN_IF_ERROR(Emit(ReadOpKind::kDir, path));
    const std::size_t self = ops_.size() - 1;
    for (const WalkEntry& e : **facts) {
      // A name no sys.fs path can spell is never granted.
      if (!e.valid_name) continue;
      const std::string child = Join(path, e.name);
      if (child.size() > kMaxWorkspacePathBytes) continue;
      Status s = Ok();
      switch (e.kind) {
        case EntryKind::kFile:
          // The runner binds a kBindFile only while it has a single link (the bind then holds
          // that inode, whatever happens to the name).
          if (GrantAllows(globs_, child, Access::kRead)) {
            if (options_.allow_hardlinked) {
              s = Emit(ReadOpKind::kBindLinkedFile, child);
            } else if (e.nlink <= 1) {
              s = Emit(ReadOpKind::kBindFile, child);
            }
          }
          break;
        case EntryKind::kSymlink:
          // Recreated, not bound: it resolves inside the view, where only granted files are,
          // and cannot be swapped for another target during the call. One that leaves the
          // workspace (absolute, or ".." above the root) is refused by sys.fs.read: not shown.
          if (options_.follow_symlinks && LinkStaysInside(path, e.link_target) &&
              GrantAllows(globs_, child, Access::kRead)) {
            s = Emit(ReadOpKind::kSymlink, child, e.link_target);
          }
          break;
        case EntryKind::kDir:
          if (GrantReaches(globs_, child)) s = Visit(child, depth + 1);
          break;
        case EntryKind::kOther:
          break;  // FIFOs, sockets, devices: sys.fs.read refuses them
      }
      if (!s) return s;
    }
    // A directory holding nothing the grant reads is not shown at all ("**/*.md" reaches every
    // directory, but .git with no .md file in it is not there for the tool, name included).
    if (ops_.size() == self + 1 && path != kWorkspaceRootPath) ops_.pop_back();
    return Ok();
  }

  // Beneath a whole-bound directory: hide what sys.fs.read would refuse.
  Status Masks(const std::string& path, const DirFacts& facts, std::size_t depth,
               bool bind_root = false) {
    ANVIL_RETURN_IF_ERROR(Depth(depth, path));
    // Deeper than PATH_MAX: no path spells it, but the bind shows it, and a relative symlink
    // operand (src/s -> the deep directory) takes a tool there. What would need a mask there (a
    // hard link, a special file, a bad name, a directory that cannot be walked by path) is
    // hidden with the deepest directory that can be spelled: this one, masked whole.
    const bool beyond = std::any_of(facts.begin(), facts.end(), [&](const WalkEntry& e) {
      if (Join(path, e.name).size() <= kMaxWorkspacePathBytes) return false;
      switch (e.kind) {
        case EntryKind::kFile:
          return !e.valid_name || (e.nlink > 1 && !options_.allow_hardlinked);
        case EntryKind::kSymlink:
          return false;  // never followed by the tools' walk
        default:
          return true;
      }
    });
    if (beyond) {
      if (bind_root) {
        return Fail("limit", "sys.exec: " + QuotePathForMessage(path) +
                                 " holds entries deeper than " +
                                 std::to_string(kMaxWorkspacePathBytes) +
                                 " bytes that the tool's view cannot hide (fix: narrow fs.read, "
                                 "or shorten the directory names)");
      }
      return Emit(ReadOpKind::kMaskDir, path);
    }
    for (const WalkEntry& e : facts) {
      const std::string child = Join(path, e.name);
      // A plain file or a link beyond PATH_MAX: granted like the rest of the bound tree.
      if (child.size() > kMaxWorkspacePathBytes) continue;
      const bool spellable = e.valid_name;
      Status s = Ok();
      switch (e.kind) {
        case EntryKind::kFile:
          if (!spellable || (e.nlink > 1 && !options_.allow_hardlinked)) {
            s = Emit(ReadOpKind::kMaskFile, child);
          }
          break;
        case EntryKind::kOther:
          s = Emit(ReadOpKind::kMaskFile, child);
          break;
        case EntryKind::kDir: {
          if (!spellable) {
            s = Emit(ReadOpKind::kMaskDir, child);
            break;
          }
          ANVIL_TRY(sub, facts_(child));
          // Could not be inspected (unreadable, or replaced since): hidden, not guessed at.
          s = *sub == nullptr ? Emit(ReadOpKind::kMaskDir, child) : Masks(child, **sub, depth + 1);
          break;
        }
        case EntryKind::kSymlink:
          // Never followed by the walk of the tools; an operand cannot name a badly named one.
          break;
      }
      if (!s) return s;
    }
    return Ok();
  }

  const std::vector<std::string>& globs_;
  const DirFactsLookup& facts_;
  const ReadPlanOptions& options_;
  std::vector<ReadOp> ops_;
  std::size_t mounts_ = 0;
};

bool ValidPlanPath(const std::string& path) {
  auto norm = NormalizeWorkspacePath(path, RootPolicy::kAllow);
  return norm && *norm == path;
}

// A mask hides entries no sys.fs path can spell: its last component may be any name the kernel
// accepts (no '/', no NUL, not "." or ".."), beneath a valid path.
bool ValidMaskPath(const std::string& path) {
  if (ValidPlanPath(path) && path != kWorkspaceRootPath) return true;
  const std::size_t slash = path.rfind('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty() || name == "." || name == ".." || name.size() > kMaxPathComponentBytes ||
      name.find('\0') != std::string::npos) {
    return false;
  }
  return slash == std::string::npos || ValidPlanPath(path.substr(0, slash));
}

}  // namespace

Result<std::vector<ReadOp>> PlanWorkspaceReads(const std::vector<std::string>& globs,
                                               const DirFactsLookup& facts,
                                               const ReadPlanOptions& options) {
  return Planner(globs, facts, options).Run();
}

std::size_t CountReadPlanMounts(const std::vector<ReadOp>& ops) {
  return static_cast<std::size_t>(
      std::count_if(ops.begin(), ops.end(), [](const ReadOp& op) { return IsMount(op.kind); }));
}

Status ValidateReadPlan(const std::vector<ReadOp>& ops, std::size_t max_ops) {
  auto bad = [](const std::string& why) { return Fail("invalid", "sys.exec read plan: " + why); };
  if (ops.empty()) return bad("empty");
  if (ops.size() > max_ops) return bad("more than " + std::to_string(max_ops) + " entries");
  std::unordered_map<std::string, ReadOpKind> seen;
  seen.reserve(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const ReadOp& op = ops[i];
    const std::string shown = QuotePathForMessage(op.path);
    switch (op.kind) {
      case ReadOpKind::kDir:
      case ReadOpKind::kBindDir:
      case ReadOpKind::kBindFile:
      case ReadOpKind::kBindLinkedFile:
      case ReadOpKind::kSymlink:
      case ReadOpKind::kMaskFile:
      case ReadOpKind::kMaskDir:
        break;
      default:
        return bad("unknown entry kind");
    }
    const bool mask = op.kind == ReadOpKind::kMaskFile || op.kind == ReadOpKind::kMaskDir;
    if (!(mask ? ValidMaskPath(op.path) : ValidPlanPath(op.path))) {
      return bad("not a normalized workspace path: " + shown);
    }
    if (op.kind == ReadOpKind::kSymlink) {
      if (op.target.empty() || op.target.size() > kMaxWorkspacePathBytes ||
          op.target.find('\0') != std::string::npos) {
        return bad("bad link text for " + shown);
      }
    } else if (!op.target.empty()) {
      return bad("unexpected link text for " + shown);
    }
    const bool root = op.path == kWorkspaceRootPath;
    if ((i == 0) != root) return bad("the root must come first, once");
    if (root) {
      if (op.kind != ReadOpKind::kDir && op.kind != ReadOpKind::kBindDir) {
        return bad("the root must be a directory");
      }
      seen.emplace(op.path, op.kind);
      continue;
    }
    if (seen.count(op.path)) return bad("path twice: " + shown);
    if (mask) {
      // The nearest ancestor the plan names must be a whole-bound directory.
      std::string_view up = op.path;
      ReadOpKind found = ReadOpKind::kDir;
      bool any = false;
      while (up != kWorkspaceRootPath) {
        up = SplitParent(up).first;
        auto it = seen.find(std::string(up));
        if (it != seen.end()) {
          found = it->second;
          any = true;
          break;
        }
      }
      if (!any || found != ReadOpKind::kBindDir) return bad("mask outside a bound tree: " + shown);
    } else {
      // Binds, links and directories live in a directory of the view's own, so nothing of the
      // plan is ever created through a bound (host) tree or a link.
      auto it = seen.find(std::string(SplitParent(op.path).first));
      if (it == seen.end() || it->second != ReadOpKind::kDir) {
        return bad("parent of " + shown + " is not a directory of the view");
      }
    }
    seen.emplace(op.path, op.kind);
  }
  return Ok();
}

std::vector<std::string> EncodeReadPlan(const std::vector<ReadOp>& ops) {
  std::vector<std::string> out;
  out.reserve(ops.size() * 2);
  for (const ReadOp& op : ops) {
    out.push_back(static_cast<char>(op.kind) + op.path);
    out.push_back(op.target);
  }
  return out;
}

Result<std::vector<ReadOp>> DecodeReadPlan(const std::vector<std::string>& strings) {
  if (strings.size() % 2 != 0) return Fail("invalid", "sys.exec read plan: odd string count");
  std::vector<ReadOp> ops;
  ops.reserve(strings.size() / 2);
  for (std::size_t i = 0; i < strings.size(); i += 2) {
    if (strings[i].empty()) return Fail("invalid", "sys.exec read plan: empty entry");
    ops.push_back(
        ReadOp{static_cast<ReadOpKind>(strings[i][0]), strings[i].substr(1), strings[i + 1]});
  }
  return ops;
}

}  // namespace anvil
