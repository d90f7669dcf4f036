// The gateway's request dispatch (src/gateway/dispatch) on one request frame body from a
// hostile plugin host: the frame decoder, then Dispatch against a real workspace (read-only
// grant, so nothing is written; no exec, no network) — the path, glob, UTF-8 and JSON checks
// of every op (fs.*, exec's argv JSON, net.fetch) — then the audit line for the decision.
// Invariants: nothing throws or aborts; the response answers the request's id; an error has
// exactly (code, message) with a known code; the response re-encodes and decodes unchanged.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include "fs/workspace_root.h"
#include "fuzz_util.h"
#include "gateway/audit_log.h"
#include "gateway/dispatch.h"
#include "ipc/frame.h"

namespace {

using anvil::fuzz::Require;

anvil::WorkspaceRoot* g_root = nullptr;
anvil::gateway::AuditLog* g_audit = nullptr;
anvil::gateway::GatewayLimits g_limits;
anvil::Grant g_grant;

void Write(const std::string& path, const std::string& data) {
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data.data(), 1, data.size(), f);
    std::fclose(f);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char tmpl[] = "/tmp/anvil-fuzz-dispatch-XXXXXX";
  const char* dir = ::mkdtemp(tmpl);
  if (dir == nullptr) std::abort();
  const std::string ws = dir;
  static std::string g_dir;
  g_dir = ws;
  std::atexit([] { std::filesystem::remove_all(g_dir); });
  ::mkdir((ws + "/src").c_str(), 0755);
  ::mkdir((ws + "/.git").c_str(), 0755);
  Write(ws + "/a.txt", "alpha");
  Write(ws + "/src/b.c", "int b;");
  Write(ws + "/src/bad\xff.c", "not UTF-8 name");
  Write(ws + "/.git/config", "[core]");
  (void)::symlink("../a.txt", (ws + "/src/link").c_str());
  (void)::symlink("/etc/passwd", (ws + "/out").c_str());
  auto root = anvil::WorkspaceRoot::Open(ws);
  if (!root) std::abort();
  g_root = new anvil::WorkspaceRoot(std::move(*root));
  auto audit = anvil::gateway::AuditLog::Open("", "fuzz");
  if (!audit) std::abort();
  g_audit = *audit;
  g_grant.fs_read = {"**"};
  g_grant.exec = {"rg"};
  g_grant.net_hosts = {"api.example.com"};
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto request = anvil::ipc::DecodeRequest(anvil::fuzz::AsView(data, size));
  if (!request) return 0;
  static const std::set<std::string> kCodes = {"denied", "invalid",  "not_found", "limit",
                                               "io",     "busy",     "timeout",   "cancelled",
                                               "stale",  "internal", "sandbox"};
  std::atomic<bool> cancelled{false};
  const std::string unavailable = "not in this fuzzer";
  anvil::gateway::DispatchContext ctx{g_root, &g_limits, nullptr, &cancelled, &unavailable};
  anvil::gateway::AuditEntry audit;
  audit.plugin = "fuzz.plugin";
  audit.request_id = request->id;
  anvil::ipc::Response response = anvil::gateway::Dispatch(ctx, g_grant, *request, audit);
  Require(response.id == request->id, "response answers another id");
  if (!response.ok) {
    Require(response.fields.size() == 2, "error response shape");
    Require(kCodes.count(response.fields[0]) == 1, "unknown error code", response.fields[0]);
    Require(!response.fields[1].empty(), "error without a message");
  }
  Require(!audit.verdict.empty(), "decision without an audit verdict");
  g_audit->Record(audit);  // a plugin-chosen target or reason must not make the line throw
  g_audit->Flush();
  const std::string encoded = anvil::ipc::EncodeResponse(response);
  auto decoded = anvil::ipc::DecodeResponse(std::string_view(encoded).substr(5));
  Require(decoded.has_value(), "response does not decode");
  Require(decoded->fields == response.fields && decoded->ok == response.ok, "response round trip");
  return 0;
}
