// `anvil serve`'s JSON-RPC dispatch (src/session/serve_peer.cc) end to end on one input: the
// bytes are the editor's side of stdin (LSP-framed JSON-RPC; the seeds start with an
// `initialize`, which starts a real anvil-gateway with --no-exec found next to this binary, so
// the handlers behind it are reached), RunServe reads them to EOF and stops. No plugins are
// configured: every request reaches a handler without a plugin host. Invariants: RunServe
// returns (no crash, abort or hang; the gateway is stopped), and everything it wrote is a
// sequence of well-formed frames, each a JSON-RPC 2.0 object.
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "fuzz_util.h"
#include "session/lsp_framing.h"
#include "session/serve_session.h"

namespace {

using anvil::fuzz::Require;

std::string g_workspace;

int MemFile(const char* name) {
  int fd = ::memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) std::abort();
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char tmpl[] = "/tmp/anvil-fuzz-serve-XXXXXX";
  const char* dir = ::mkdtemp(tmpl);
  if (dir == nullptr) std::abort();
  const std::string base = dir;
  static std::string g_dir;
  g_dir = base;
  std::atexit([] { std::filesystem::remove_all(g_dir); });
  g_workspace = base + "/ws";
  ::mkdir(g_workspace.c_str(), 0755);
  ::mkdir((base + "/run").c_str(), 0700);
  // The audit log and the gateway's runtime directory stay inside the fuzzer's own directory.
  ::setenv("XDG_STATE_HOME", base.c_str(), 1);
  ::setenv("XDG_RUNTIME_DIR", (base + "/run").c_str(), 1);
  ::setenv("HOME", base.c_str(), 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int in = MemFile("serve-in");
  int out = MemFile("serve-out");
  size_t off = 0;
  while (off < size) {
    ssize_t n = ::write(in, data + off, size - off);
    if (n <= 0) std::abort();
    off += static_cast<size_t>(n);
  }
  ::lseek(in, 0, SEEK_SET);
  anvil::session::ServeOptions options;
  options.workspace = g_workspace;
  options.gateway_args = {"--no-exec"};
  options.command_timeout = std::chrono::milliseconds(2000);
  options.max_message_bytes = 1u << 20;
  options.in_fd = in;
  options.out_fd = out;
  (void)anvil::session::RunServe(options);
  ::close(in);

  std::string written;
  ::lseek(out, 0, SEEK_SET);
  char buf[65536];
  ssize_t n;
  while ((n = ::read(out, buf, sizeof(buf))) > 0) written.append(buf, static_cast<size_t>(n));
  ::close(out);
  anvil::session::LspReader reader(64u << 20);
  reader.Append(written.data(), written.size());
  size_t frames = 0;
  while (auto event = reader.Next()) {
    Require(event->message.has_value(), "anvil serve wrote a malformed frame", event->error_text);
    const auto& m = *event->message;
    Require(m.is_object() && m.contains("jsonrpc") && m["jsonrpc"] == "2.0",
            "not a JSON-RPC 2.0 message",
            m.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    ++frames;
  }
  Require(!reader.AtEof(), "anvil serve's output ends inside a frame");
  Require(frames <= 4 * size + 8, "more answers than the input could ask for");
  return 0;
}
