#include "gateway/dispatch.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "fs/exec_read_plan.h"
#include "fs/path_glob.h"
#include "fs/workspace_path.h"
#include "fs/workspace_root.h"
#include "gateway/exec_broker.h"
#include "policy/exec_rules.h"

namespace anvil::gateway {
namespace {

using ipc::Request;
using ipc::Response;

// fs.rename of a directory looks through everything beneath it for protected names; a tree
// deeper than this (or with more entries than GatewayLimits::max_rename_entries) is refused
// ("limit") rather than moved unchecked.
constexpr std::size_t kRenameWalkMaxDepth = 64;

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

bool ArgCount(const Request& r, size_t n, Response& out, AuditEntry& audit) {
  if (r.args.size() == n) return true;
  out = FromError(r, Error{"invalid", r.op + " takes " + std::to_string(n) + " argument(s)", 0},
                  audit);
  return false;
}

// sys.exec: [program, JSON array of args, stdin] -> [code, stdout, stderr, stdout_truncated,
// stderr_truncated, limit]. The grant names the table entries; the table (exec_rules) checks
// the argv; the path operands are resolved beneath the workspace as sys.fs.read resolves a path;
// the read plan (exec_read_plan.h) says what of the workspace the tool's view holds: exactly what
// sys.fs.read allows the grant. The broker checks again and the runner confines the tool to that
// plan and its own executable and libraries, read-only, with no network.
Response DispatchExec(const DispatchContext& ctx, const Grant& grant, const Request& r,
                      AuditEntry& audit) {
  Response out;
  if (!ArgCount(r, 3, out, audit)) return out;
  const std::string& program = r.args[0];
  audit.target = program;
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

}  // namespace

Response Dispatch(const DispatchContext& ctx, const Grant& grant, const Request& r,
                  AuditEntry& audit) {
  audit.op = r.op;
  if (!r.args.empty() && r.op != "fs.write") audit.target = r.args[0];
  if (r.op == "fs.write" && !r.args.empty()) audit.target = r.args[0];
  Response out;
  const WorkspaceRoot& root = *ctx.root;

  if (r.op == "ping") return Okay(r, {}, audit);

  const bool reads = r.op == "fs.read" || r.op == "fs.list" || r.op == "fs.stat";
  const bool writes =
      r.op == "fs.write" || r.op == "fs.mkdir" || r.op == "fs.remove" || r.op == "fs.rename";
  if (reads || writes) {
    size_t want = r.op == "fs.write" || r.op == "fs.rename" ? 2 : 1;
    if (!ArgCount(r, want, out, audit)) return out;
    RootPolicy root_policy =
        (r.op == "fs.list" || r.op == "fs.stat") ? RootPolicy::kAllow : RootPolicy::kReject;
    // Validation before any syscall (T1): absolute, empty components, "..", non-UTF-8.
    auto path = NormalizeWorkspacePath(r.args[0], root_policy);
    if (!path) return FromError(r, path.error(), audit);
    const auto& globs = reads ? grant.fs_read : grant.fs_write;
    Access access = reads ? Access::kRead : Access::kWrite;
    const char* what = reads ? "fs.read" : "fs.write";
    if (!GrantAllows(globs, *path, access)) {
      return Denied(r, std::string(what) + " outside the grant: " + r.args[0], audit);
    }
    // Where an in-workspace symlink led must be granted too ("docs/l -> ../.env").
    ResolvedPathCheck check = [&globs, access](std::string_view resolved) {
      return GrantAllows(globs, resolved, access);
    };
    if (r.op == "fs.read") {
      auto data = root.Read(*path, check);
      if (!data) return FromError(r, data.error(), audit);
      audit.bytes = data->size();
      return Okay(r, {std::move(*data)}, audit);
    }
    if (r.op == "fs.list") {
      auto listing = root.List(*path, check);
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
    if (r.op == "fs.stat") {
      auto info = root.Stat(*path, check);
      if (!info) return FromError(r, info.error(), audit);
      return Okay(r,
                  {std::string(ToString(info->type)), std::to_string(info->size),
                   std::to_string(info->mtime_sec), std::to_string(info->mtime_nsec)},
                  audit);
    }
    if (r.op == "fs.write") {
      audit.bytes = r.args[1].size();
      if (auto s = root.Write(*path, r.args[1]); !s) return FromError(r, s.error(), audit);
      return Okay(r, {}, audit);
    }
    if (r.op == "fs.mkdir") {
      if (auto s = root.Mkdir(*path); !s) return FromError(r, s.error(), audit);
      return Okay(r, {}, audit);
    }
    if (r.op == "fs.remove") {
      if (auto s = root.Remove(*path); !s) return FromError(r, s.error(), audit);
      return Okay(r, {}, audit);
    }
    // fs.rename: both names must be writable under the grant.
    auto to = NormalizeWorkspacePath(r.args[1], RootPolicy::kReject);
    if (!to) return FromError(r, to.error(), audit);
    audit.target = r.args[0] + " -> " + r.args[1];
    if (!GrantAllows(grant.fs_write, *to, Access::kWrite)) {
      return Denied(r, "fs.write outside the grant: " + r.args[1], audit);
    }
    // Moving a directory moves what is inside it: a nested repository's .git (or .anvil, an
    // anvil.lock, ...) at any depth would change name without the protected-name rule ever
    // seeing it. The whole tree is looked through (bounded; past the bound, refused).
    auto held = root.FindBeneath(*path, IsProtectedName, ctx.limits->max_rename_entries,
                                 kRenameWalkMaxDepth);
    if (!held) {
      Error e = held.error();
      if (e.code == "limit") {
        e.message = "fs.rename: cannot check " + r.args[0] + " for protected names: " + e.message +
                    " (fix: move its contents in smaller parts)";
      }
      return FromError(r, e, audit);
    }
    if (*held) {
      return Denied(
          r,
          "fs.write: directory holds protected " + QuotePathForMessage(**held) + ": " + r.args[0],
          audit);
    }
    if (auto s = root.Rename(*path, *to); !s) return FromError(r, s.error(), audit);
    return Okay(r, {}, audit);
  }
  if (r.op == "net.fetch") {
    if (ctx.net == nullptr) return Denied(r, "sys.net is not available in this gateway", audit);
    return ctx.net->Handle(audit.plugin, grant, r, audit, ctx.cancelled);
  }
  if (r.op == "exec") return DispatchExec(ctx, grant, r, audit);
  return FromError(r, Error{"invalid", "unknown operation " + r.op, 0}, audit);
}

}  // namespace anvil::gateway
