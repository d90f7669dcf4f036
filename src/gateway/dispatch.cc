#include "gateway/dispatch.h"

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "fs/exec_read_plan.h"
#include "fs/git_dir_guard.h"
#include "fs/path_glob.h"
#include "fs/workspace_path.h"
#include "fs/workspace_root.h"
#include "gateway/exec_broker.h"
#include "gateway/registration.h"
#include "linux/git_run_guard.h"
#include "policy/exec_rules.h"
#include "policy/plugin_api.h"
#include "policy/plugin_code_paths.h"
#include "policy/trust_state_paths.h"

namespace anvil::gateway {
namespace {

using ipc::Request;
using ipc::Response;

// fs.rename and a recursive fs.remove of a directory look through everything beneath it for
// protected names; a tree deeper than this (or with more entries than
// GatewayLimits::max_rename_entries) is refused ("limit") rather than moved or removed unchecked.
constexpr std::size_t kTreeWalkMaxDepth = 64;

Response FromError(const Request& r, const Error& e, AuditEntry& audit) {
  audit.verdict = e.code == "denied" ? "deny" : "error";
  audit.code = e.code;
  audit.reason = e.message;
  return Response::Error(r.id, e.code, e.message);
}

Response Denied(const Request& r, const std::string& why, AuditEntry& audit) {
  return FromError(r, Error{"denied", why, 0}, audit);
}

Response Okay(const Request& r, std::vector<std::string> fields, AuditEntry& audit) {
  audit.verdict = "allow";
  return Response{r.id, true, std::move(fields)};
}

// sys.exec: [program, JSON array of args, stdin] -> [code, stdout, stderr, stdout_truncated,
// stderr_truncated, limit]. The grant names the table entries; the table (exec_rules) checks
// the argv; the path operands are resolved beneath the workspace as sys.fs.read resolves a path;
// the read plan (exec_read_plan.h) says what of the workspace the tool's view holds: exactly what
// sys.fs.read allows the grant. The broker checks again and the runner confines the tool to that
// plan and its own executable and libraries, read-only, with no network.
Response DoExec(const DispatchContext& ctx, const Grant& grant, const Request& r,
                const std::vector<std::string>& /*paths*/, AuditEntry& audit) {
  const std::string& program = r.args[0];
  // A name that is not text cannot be a table entry; say so rather than echo its bytes back.
  if (!IsValidUtf8(program)) {
    return FromError(r, Error{"invalid", "sys.exec program is not valid UTF-8", 0}, audit);
  }
  auto rule = LookupExecRule(program);
  if (!rule) return FromError(r, rule.error(), audit);
  // The grant first: `anvil run` starts no exec broker for a grant without `exec`, and such a
  // plugin is told what it lacks, not that the session has no broker.
  if (std::find(grant.exec.begin(), grant.exec.end(), program) == grant.exec.end()) {
    return Denied(r, "executable not granted: " + program, audit);
  }
  if (ctx.exec == nullptr) {
    std::string why =
        ctx.exec_unavailable && !ctx.exec_unavailable->empty() ? ": " + *ctx.exec_unavailable : "";
    return Denied(r, "sys.exec is not available in this session" + why, audit);
  }
  nlohmann::json parsed = nlohmann::json::parse(r.args[1], nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_array()) {
    return FromError(r, Error{"invalid", "sys.exec args must be a list of strings", 0}, audit);
  }
  std::vector<std::string> args;
  for (const auto& a : parsed) {
    if (!a.is_string()) {
      return FromError(r, Error{"invalid", "sys.exec args must be a list of strings", 0}, audit);
    }
    args.push_back(a.get<std::string>());
  }
  audit.target = program + " " + r.args[1];
  auto checked = CheckExecArgv(**rule, args);
  if (!checked) return FromError(r, checked.error(), audit);
  if (auto s = CheckExecOperands(*ctx.root, grant.fs_read, program, checked->path_operands); !s) {
    return FromError(r, s.error(), audit);
  }
  if (ctx.read_plans == nullptr) return Denied(r, "sys.exec has no read plan here", audit);
  auto plan = ctx.read_plans->Plan(grant.fs_read);
  if (!plan) return FromError(r, plan.error(), audit);
  ExecRequest request;
  request.program = program;
  request.args = std::move(args);
  request.stdin_data = r.args[2];
  request.read_plan = std::move(*plan);
  auto result = ctx.exec->Run(request, ctx.cancelled);
  if (!result) return FromError(r, result.error(), audit);
  audit.bytes = result->stdout_data.size() + result->stderr_data.size();
  audit.reason = "exit " + std::to_string(result->code) +
                 (result->limit.empty() ? "" : ", stopped at the " + result->limit + " cap");
  return Okay(
      r,
      {std::to_string(result->code), std::move(result->stdout_data), std::move(result->stderr_data),
       result->stdout_truncated ? "1" : "0", result->stderr_truncated ? "1" : "0", result->limit},
      audit);
}

// ---- what the OpSpec does for every op -------------------------------------------------------

const std::vector<std::string>& GlobsFor(const Grant& grant, const OpSpec& spec) {
  return spec.grant == "fs.write" ? grant.fs_write : grant.fs_read;
}

// A write refusal says why when the path is protected: a wildcard grant never covers it.
std::string OutsideTheGrant(const OpSpec& spec, std::string_view normalized,
                            const std::string& raw) {
  std::string why = spec.grant + " outside the grant: " + raw;
  if (spec.grant == "fs.write" && IsProtectedPath(normalized)) {
    why +=
        " (a protected path: .git, .anvil, anvil.lock and Anvil.toml are written only under a "
        "grant that names the exact path)";
  }
  return why;
}

std::string AuditTarget(const OpSpec& spec, const Request& r) {
  std::string out;
  const std::string& t = spec.audit_target;
  for (size_t i = 0; i < t.size();) {
    const size_t close = t[i] == '{' ? t.find('}', i) : std::string::npos;
    if (close == std::string::npos) {
      out.push_back(t[i++]);
      continue;
    }
    const std::string name = t.substr(i + 1, close - i - 1);
    for (size_t f = 0; f < spec.request.size() && f < r.args.size(); ++f) {
      if (spec.request[f].name == name) out += r.args[f];
    }
    i = close + 1;
  }
  return out;
}

// Flag field `index` ("1" or "0"; "0" when a client left it out).
Result<bool> FlagField(const OpSpec& spec, const Request& r, size_t index) {
  if (index >= r.args.size()) return false;
  if (r.args[index] == "1") return true;
  if (r.args[index] == "0") return false;
  return Fail("invalid", spec.op + " " + spec.request[index].name + " must be 1 or 0");
}

// ---- handlers: only what is particular to each op ---------------------------------------------

using Handler = Response (*)(const DispatchContext&, const Grant&, const Request&,
                             const std::vector<std::string>& paths, AuditEntry&);

Response DoPing(const DispatchContext&, const Grant&, const Request& r,
                const std::vector<std::string>&, AuditEntry& audit) {
  return Okay(r, {}, audit);
}

// Where an in-workspace symlink led must be granted too ("docs/l -> ../.env").
ResolvedPathCheck ReadCheck(const Grant& grant) {
  return [&grant](std::string_view resolved) {
    return GrantAllows(grant.fs_read, resolved, Access::kRead);
  };
}

Response DoRead(const DispatchContext& ctx, const Grant& grant, const Request& r,
                const std::vector<std::string>& paths, AuditEntry& audit) {
  auto data = ctx.root->Read(paths[0], ReadCheck(grant));
  if (!data) return FromError(r, data.error(), audit);
  audit.bytes = data->size();
  return Okay(r, {std::move(*data)}, audit);
}

Response DoList(const DispatchContext& ctx, const Grant& grant, const Request& r,
                const std::vector<std::string>& paths, AuditEntry& audit) {
  auto listing = ctx.root->List(paths[0], ReadCheck(grant));
  if (!listing) return FromError(r, listing.error(), audit);
  // [omitted count, "name\0type\0name\0type\0..."]: names are validated path components,
  // so they never hold a NUL.
  std::string packed;
  for (const auto& e : listing->entries) {
    packed += e.name;
    packed.push_back('\0');
    packed += ToString(e.type);
    packed.push_back('\0');
  }
  return Okay(r, {std::to_string(listing->omitted), std::move(packed)}, audit);
}

Response DoStat(const DispatchContext& ctx, const Grant& grant, const Request& r,
                const std::vector<std::string>& paths, AuditEntry& audit) {
  auto info = ctx.root->Stat(paths[0], ReadCheck(grant));
  if (!info) return FromError(r, info.error(), audit);
  return Okay(r,
              {std::string(ToString(info->type)), std::to_string(info->size),
               std::to_string(info->mtime_sec), std::to_string(info->mtime_nsec)},
              audit);
}

// ---- the git-dir guard (fs/git_dir_guard.h) ----------------------------------------------------

// An op that makes an entry named like one of git's (HEAD, objects, refs, commondir, in any
// case), makes directories on the way, or moves a tree runs its check and its mutation under
// this lock: two such ops of one session (workers run in parallel) cannot each see half of a
// layout and together complete it. Other writes never complete one (their name is none of
// git's), so they do not wait.
std::mutex& GitShapeLock() {
  static std::mutex lock;
  return lock;
}

bool MayShapeGitDir(std::string_view path) {
  return ClassifyGitDirName(SplitParent(path).second, /*folds_case=*/true) != GitDirName::kNone;
}

// Refuses an op on `target` beneath a directory git takes for a git dir, or one whose entry
// `made` (kMissing: none) would complete that shape in its directory (the rule serve's buffer
// edits share: WorkspaceRoot::CheckGitDirs).
Status CheckGitDirs(const DispatchContext& ctx, const std::string& op, std::string_view target,
                    GitDirEntryKind made) {
  return ctx.root->CheckGitDirs(op, target, made);
}

// A tree that is or holds a git dir is neither moved nor removed by a plugin.
Status CheckTreeForGitDirs(const DispatchContext& ctx, const std::string& op,
                           const std::string& path) {
  if (IsProtectedPath(path)) return Ok();
  auto found = ctx.root->FindGitDirBeneath(path, ctx.limits->max_rename_entries, kTreeWalkMaxDepth);
  if (!found) {
    Error e = found.error();
    if (e.code == "limit") {
      e.message = op + ": cannot check " + QuotePathForMessage(path) +
                  " for git directories: " + e.message +
                  " (fix: " + (op == "fs.rename" ? "move" : "remove") +
                  " its contents in smaller parts)";
    }
    return tl::unexpected(std::move(e));
  }
  if (*found) return tl::unexpected(GitDirInTreeError(op, path, **found));
  return Ok();
}

// The plugin's write budget (registration.h, WriteBudget): what a call writes and makes, taken
// before it does; its error names the call and the path.
Status TakeWrite(const DispatchContext& ctx, const std::string& op, std::string_view path,
                 uint64_t bytes, uint64_t entries) {
  if (!ctx.writes) return Ok();
  if (auto s = ctx.writes->Take(bytes, entries); !s) {
    Error e = s.error();
    e.message = op + " " + QuotePathForMessage(std::string(path)) + ": " + e.message;
    return tl::unexpected(std::move(e));
  }
  return Ok();
}

// Directories that fs.write {parents} or fs.mkdir {recursive} makes: each one a write of its
// own, under the same grant as the path asked for, and under the git-dir guard.
Status MakeDirectories(const DispatchContext& ctx, const Grant& grant, std::string_view dir,
                       const char* asked_by, const std::string& op) {
  return ctx.root->MakeDirs(dir, [&](std::string_view made) -> Status {
    if (!GrantAllows(grant.fs_write, made, Access::kWrite)) {
      return Fail("denied", "fs.write outside the grant: " + std::string(made) + " (a directory " +
                                asked_by +
                                " would create; fix: add it to fs.write in the manifest, or "
                                "create the directories first)");
    }
    ANVIL_RETURN_IF_ERROR(CheckGitDirs(ctx, op, made, GitDirEntryKind::kDir));
    // Asked before each directory is made: one entry of the plugin's budget.
    if (ctx.writes) ANVIL_RETURN_IF_ERROR(TakeWrite(ctx, op, made, 0, 1));
    return Ok();
  });
}

Response DoWrite(const DispatchContext& ctx, const Grant& grant, const Request& r,
                 const std::vector<std::string>& paths, AuditEntry& audit) {
  auto parents = FlagField(*FindOp(r.op), r, 2);
  if (!parents) return FromError(r, parents.error(), audit);
  audit.bytes = r.args[1].size();
  const std::string_view parent = SplitParent(paths[0]).first;
  const bool makes_dirs = *parents && parent != ".";
  std::unique_lock<std::mutex> shaping(GitShapeLock(), std::defer_lock);
  if (makes_dirs || MayShapeGitDir(paths[0])) shaping.lock();
  // A replaced file keeps its mode: an executable one passes git's access(X_OK) as objects/refs.
  auto old = ctx.root->GitEntryKind(paths[0]);
  if (!old) return FromError(r, old.error(), audit);
  const GitDirEntryKind made =
      *old == GitDirEntryKind::kExecFile ? GitDirEntryKind::kExecFile : GitDirEntryKind::kFile;
  if (auto s = CheckGitDirs(ctx, r.op, paths[0], made); !s) return FromError(r, s.error(), audit);
  if (makes_dirs) {
    if (auto s = MakeDirectories(ctx, grant, parent, "sys.fs.write {parents}", r.op); !s) {
      return FromError(r, s.error(), audit);
    }
    // Looked at again where the directories were missing before.
    if (auto s = CheckGitDirs(ctx, r.op, paths[0], made); !s) {
      return FromError(r, s.error(), audit);
    }
  }
  const uint64_t new_entries = *old == GitDirEntryKind::kMissing ? 1 : 0;
  if (auto s = TakeWrite(ctx, r.op, paths[0], r.args[1].size(), new_entries); !s) {
    return FromError(r, s.error(), audit);
  }
  WriteOutcome did;
  const Status written = ctx.root->Write(paths[0], r.args[1], &did);
  if (ctx.writes) {
    // Kept once the data is in place, whatever failed after; the entry as the rename found it.
    const WriteSettlement settle = SettleWriteCharge(r.args[1].size(), new_entries, did);
    ctx.writes->GiveBack(settle.give_back_bytes, settle.give_back_entries);
    if (settle.more_entries > 0) ctx.writes->Charge(0, settle.more_entries);
  }
  if (const Status& s = written; !s) {
    Error e = s.error();
    if (e.code == "not_found" && !*parents) {
      e.message += " (a parent directory is missing; fix: create it first, or pass parents)";
    }
    return FromError(r, e, audit);
  }
  return Okay(r, {}, audit);
}

Response DoMkdir(const DispatchContext& ctx, const Grant& grant, const Request& r,
                 const std::vector<std::string>& paths, AuditEntry& audit) {
  auto recursive = FlagField(*FindOp(r.op), r, 1);
  if (!recursive) return FromError(r, recursive.error(), audit);
  std::unique_lock<std::mutex> shaping(GitShapeLock(), std::defer_lock);
  if (*recursive || MayShapeGitDir(paths[0])) shaping.lock();
  if (*recursive) {
    if (auto s = MakeDirectories(ctx, grant, paths[0], "sys.fs.mkdir {recursive}", r.op); !s) {
      return FromError(r, s.error(), audit);
    }
    return Okay(r, {}, audit);
  }
  if (auto s = CheckGitDirs(ctx, r.op, paths[0], GitDirEntryKind::kDir); !s) {
    return FromError(r, s.error(), audit);
  }
  if (auto s = TakeWrite(ctx, r.op, paths[0], 0, 1); !s) return FromError(r, s.error(), audit);
  if (auto s = ctx.root->Mkdir(paths[0]); !s) {
    if (ctx.writes) ctx.writes->GiveBack(0, 1);
    Error e = s.error();
    if (e.sys_errno == EEXIST) e.message += " (pass recursive to accept an existing directory)";
    if (e.code == "not_found") {
      e.message += " (a parent directory is missing; fix: pass recursive to create it too)";
    }
    return FromError(r, e, audit);
  }
  return Okay(r, {}, audit);
}

// Everything beneath directory `path` goes (or moves, to `to`) with it, so each entry there is
// judged as if the plugin removed or moved it by itself: a protected name refuses, and so does an
// entry the fs.write grant does not cover (where it is, and for a rename where it would land).
// Moving or removing a directory reaches nothing the plugin could not write one by one.
// A rename changes what a name denotes, never what may be read: a file whose new name fs.read
// covers must be one fs.read covers at its old name too. Otherwise fs.write over both names
// would be a read grant for all it covers (rename .env to pub/env, read it, rename it back).
Status RenameKeepsReadBoundary(const Grant& grant, const std::string& from, const std::string& to) {
  if (!GrantAllows(grant.fs_read, to, Access::kRead) ||
      GrantAllows(grant.fs_read, from, Access::kRead)) {
    return Ok();
  }
  return Fail("denied", "fs.rename would make " + QuotePathForMessage(from) + " readable as " +
                            QuotePathForMessage(to) +
                            ", and fs.read does not cover it where it is (fix: add it to fs.read "
                            "in the manifest, or rename it to a name fs.read does not cover)");
}

Status CheckTreeBeneath(const DispatchContext& ctx, const Grant& grant, const std::string& op,
                        const std::string& path, const std::string* to, const std::string& raw) {
  bool protected_name = false;
  bool plugin_code = false;
  std::string uncovered;
  std::optional<Status> exposed;
  auto under = [](const std::string& base, std::string_view rel) {
    return base == "." ? std::string(rel) : base + "/" + std::string(rel);
  };
  auto match = [&](std::string_view name, std::string_view rel) {
    // A file protected in its directory (`.vscode/tasks.json`) counts where it is and, for a
    // rename, where it would land (a directory renamed to `.vscode`).
    if (IsProtectedName(name) || IsProtectedPath(under(path, rel)) ||
        (to != nullptr && IsProtectedPath(under(*to, rel)))) {
      protected_name = true;
      return true;
    }
    if (IsPluginManifestName(name)) {
      plugin_code = true;
      return true;
    }
    for (const std::string* base : {&path, to}) {
      if (base == nullptr) continue;
      std::string at = under(*base, rel);
      if (!GrantAllows(grant.fs_write, at, Access::kWrite)) {
        uncovered = std::move(at);
        return true;
      }
    }
    if (to != nullptr) {
      if (auto s = RenameKeepsReadBoundary(grant, under(path, rel), under(*to, rel)); !s) {
        exposed = std::move(s);
        return true;
      }
    }
    return false;
  };
  auto held = ctx.root->FindBeneath(path, match, ctx.limits->max_rename_entries, kTreeWalkMaxDepth);
  const char* verb = op == "fs.rename" ? "move" : "remove";
  if (!held) {
    Error e = held.error();
    if (e.code == "limit") {
      e.message = op + ": cannot check " + raw + " for protected names: " + e.message +
                  " (fix: " + verb + " its contents in smaller parts)";
    }
    return tl::unexpected(std::move(e));
  }
  if (!*held) return Ok();
  if (exposed) return *exposed;
  if (plugin_code) {
    const std::string manifest = path == "." ? **held : path + "/" + **held;
    return tl::unexpected(
        PluginCodeError(*ctx.root, op, raw, std::string(SplitParent(manifest).first)));
  }
  if (protected_name) {
    return Fail("denied",
                "fs.write: directory holds protected " + QuotePathForMessage(**held) + ": " + raw);
  }
  return Fail("denied", "fs.write outside the grant: " + QuotePathForMessage(uncovered) +
                            " (beneath " + raw + ", which " + op + " would " + verb +
                            " with it; fix: add it to fs.write in the manifest, or " + verb +
                            " only what the grant covers)");
}

Response DoRemove(const DispatchContext& ctx, const Grant& grant, const Request& r,
                  const std::vector<std::string>& paths, AuditEntry& audit) {
  auto recursive = FlagField(*FindOp(r.op), r, 1);
  if (!recursive) return FromError(r, recursive.error(), audit);
  // Nothing beneath a git dir is removed either: it is the repository's, as a .git is.
  if (auto s = CheckGitDirs(ctx, r.op, paths[0], GitDirEntryKind::kMissing); !s) {
    return FromError(r, s.error(), audit);
  }
  if (!*recursive) {
    if (auto s = ctx.root->Remove(paths[0]); !s) {
      Error e = s.error();
      if (e.sys_errno == ENOTEMPTY || e.sys_errno == EEXIST) {
        e.message += " (pass recursive to remove it with everything in it)";
      }
      return FromError(r, e, audit);
    }
    return Okay(r, {}, audit);
  }
  // Removing a directory removes what is inside it: a nested repository's .git at any depth
  // would go without the protected-name rule ever seeing it. Looked through first, so that a
  // refusal removes nothing; the removal refuses such a name again if one appears meanwhile.
  if (auto s = CheckTreeBeneath(ctx, grant, r.op, paths[0], nullptr, r.args[0]); !s) {
    return FromError(r, s.error(), audit);
  }
  if (auto s = CheckTreeForGitDirs(ctx, r.op, paths[0]); !s) return FromError(r, s.error(), audit);
  if (auto s = ctx.root->RemoveTree(paths[0], IsProtectedName, ctx.limits->max_rename_entries,
                                    kTreeWalkMaxDepth);
      !s) {
    return FromError(r, s.error(), audit);
  }
  return Okay(r, {}, audit);
}

Response DoRename(const DispatchContext& ctx, const Grant& grant, const Request& r,
                  const std::vector<std::string>& paths, AuditEntry& audit) {
  // Moving a directory moves what is inside it: a nested repository's .git (or .anvil, an
  // anvil.lock, ...) at any depth would change name without the protected-name rule ever
  // seeing it. The whole tree is looked through (bounded; past the bound, refused).
  if (auto s = RenameKeepsReadBoundary(grant, paths[0], paths[1]); !s) {
    return FromError(r, s.error(), audit);
  }
  if (auto s = CheckTreeBeneath(ctx, grant, r.op, paths[0], &paths[1], r.args[0]); !s) {
    return FromError(r, s.error(), audit);
  }
  // git dirs: nothing moved out of or into one, no tree holding one moved, and nothing moved
  // into place that completes one at the destination.
  std::lock_guard<std::mutex> shaping(GitShapeLock());
  if (auto s = CheckGitDirs(ctx, r.op, paths[0], GitDirEntryKind::kMissing); !s) {
    return FromError(r, s.error(), audit);
  }
  auto moved = ctx.root->GitEntryKind(paths[0]);
  if (!moved) return FromError(r, moved.error(), audit);
  if (*moved != GitDirEntryKind::kMissing) {
    if (auto s = CheckGitDirs(ctx, r.op, paths[1], *moved); !s) {
      return FromError(r, s.error(), audit);
    }
  }
  if (auto s = CheckTreeForGitDirs(ctx, r.op, paths[0]); !s) return FromError(r, s.error(), audit);
  if (auto s = ctx.root->Rename(paths[0], paths[1]); !s) {
    Error e = s.error();
    if (e.sys_errno == EEXIST || e.sys_errno == ENOTEMPTY) {
      e.message += " (sys.fs.rename never replaces; fix: remove the destination first)";
    }
    return FromError(r, e, audit);
  }
  return Okay(r, {}, audit);
}

Response DoNetFetch(const DispatchContext& ctx, const Grant& grant, const Request& r,
                    const std::vector<std::string>&, AuditEntry& audit) {
  if (ctx.net == nullptr) return Denied(r, "sys.net is not available in this gateway", audit);
  return ctx.net->Handle(audit.plugin, grant, r, audit, ctx.cancelled);
}

const std::unordered_map<std::string_view, Handler>& Handlers() {
  static const std::unordered_map<std::string_view, Handler> kHandlers = {
      {"ping", DoPing},        {"fs.read", DoRead},     {"fs.list", DoList},
      {"fs.stat", DoStat},     {"fs.write", DoWrite},   {"fs.mkdir", DoMkdir},
      {"fs.remove", DoRemove}, {"fs.rename", DoRename}, {"net.fetch", DoNetFetch},
      {"exec", DoExec},
  };
  return kHandlers;
}

// The gateway's ops by name (the description's, built once).
const std::unordered_map<std::string_view, const OpSpec*>& GatewayOps() {
  static const auto kOps = [] {
    std::unordered_map<std::string_view, const OpSpec*> ops;
    for (const auto& spec : PluginApi().ops) {
      if (spec.channel == ApiChannel::kGateway) ops.emplace(spec.op, &spec);
    }
    return ops;
  }();
  return kOps;
}

// The protected subtrees of the workspace (policy/protected_subtrees.h) a write op's `path`
// may not touch, in this order: what git runs or follows (a hooks dir of core.hooksPath, ...),
// as a protected name, only under a grant of the exact path; Anvil's own trust state (grants,
// trusted keys), which no grant opens; plugin code (any directory holding an anvil-plugin.toml),
// which no grant opens, since the plugin whose code it is would run what is written there with
// its own grant. A move or a removal takes what is beneath along.
Status CheckProtectedSubtrees(const DispatchContext& ctx, const Grant& grant, const std::string& op,
                              const std::string& path) {
  const bool takes_tree = op == "fs.rename" || op == "fs.remove";
  if (ctx.git_run != nullptr) {
    ANVIL_RETURN_IF_ERROR(ctx.git_run->Check(op, path, takes_tree, grant.fs_write));
  }
  if (ctx.trust_state != nullptr) {
    ANVIL_RETURN_IF_ERROR(CheckTrustStateWrite(*ctx.trust_state, op, path, takes_tree));
  }
  return CheckPluginCodeWrite(*ctx.root, op, path);
}

}  // namespace

Response Dispatch(const DispatchContext& ctx, const Grant& grant, const Request& r,
                  AuditEntry& audit) {
  audit.op = r.op;
  const auto& ops = GatewayOps();
  const auto found = ops.find(r.op);
  const auto handler = Handlers().find(r.op);
  if (found == ops.end() || handler == Handlers().end()) {
    return FromError(r, Error{"invalid", "unknown operation " + r.op, 0}, audit);
  }
  const OpSpec& spec = *found->second;
  audit.target = AuditTarget(spec, r);
  size_t required = 0;
  for (const auto& field : spec.request) required += field.optional ? 0 : 1;
  if (r.args.size() < required || r.args.size() > spec.request.size()) {
    const std::string count =
        required == spec.request.size()
            ? std::to_string(required)
            : std::to_string(required) + " to " + std::to_string(spec.request.size());
    return FromError(r, Error{"invalid", r.op + " takes " + count + " argument(s)", 0}, audit);
  }
  // Validation before any syscall (T1): absolute, empty components, "..", non-UTF-8; then the
  // grant, for every path the op names (both names of a rename).
  std::vector<std::string> paths;
  const RootPolicy root_policy = spec.root_allowed ? RootPolicy::kAllow : RootPolicy::kReject;
  const Access access = spec.grant == "fs.write" ? Access::kWrite : Access::kRead;
  for (size_t i = 0; i < r.args.size(); ++i) {
    if (!spec.request[i].path) continue;
    auto path = NormalizeWorkspacePath(r.args[i], root_policy);
    if (!path) return FromError(r, path.error(), audit);
    if (!GrantAllows(GlobsFor(grant, spec), *path, access)) {
      return Denied(r, OutsideTheGrant(spec, *path, r.args[i]), audit);
    }
    if (access == Access::kWrite && ctx.no_fs_write) {
      return Denied(r, "writes are disabled for this session (--no-fs-write)", audit);
    }
    if (access == Access::kWrite) {
      if (auto s = CheckProtectedSubtrees(ctx, grant, r.op, *path); !s) {
        return FromError(r, s.error(), audit);
      }
    }
    paths.push_back(std::move(*path));
  }
  return handler->second(ctx, grant, r, paths, audit);
}

bool RunsInline(std::string_view op) {
  const auto& ops = GatewayOps();
  const auto found = ops.find(op);
  return found != ops.end() && found->second->runs_inline;
}

}  // namespace anvil::gateway
