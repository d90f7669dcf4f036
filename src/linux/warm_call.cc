#include "linux/warm_call.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "common/fd_io.h"
#include "ipc/fd_passing.h"
#include "linux/sandbox_launch.h"

namespace anvil {
namespace launch {

Status ReadExactly(int fd, char* into, size_t n) {
  auto r = fd_io::ReadExactly(fd, into, n, fd_io::Wait::NoWait());
  if (r.eof) return Fail("sandbox", "the call was cut short");
  if (!r) return SysFail("sandbox", "read the call");
  return Ok();
}

Status ValidateRuntimeFile(const std::string& path) {
  if (path.size() < 2 || path[0] != '/' || path.size() > 4096 || path.back() == '/' ||
      path.find("/./") != std::string::npos || path.find("/../") != std::string::npos ||
      path.find("//") != std::string::npos ||
      (path.size() >= 3 && path.compare(path.size() - 3, 3, "/..") == 0) ||
      (path.size() >= 2 && path.compare(path.size() - 2, 2, "/.") == 0)) {
    return Fail("sandbox", "malformed runtime file in the call: " + path);
  }
  return Ok();
}

}  // namespace launch

Status SendWarmCall(int channel, int program_fd, int stdin_fd, const WarmCall& call) {
  if (call.argv.empty()) return Fail("invalid", "a call needs argv[0]");
  std::string body;
  auto add = [&body](const std::string& s) -> Status {
    if (s.find('\0') != std::string::npos) return Fail("invalid", "NUL in a call string");
    body += s;
    body.push_back('\0');
    return Ok();
  };
  const std::vector<std::string> plan = EncodeReadPlan(call.read_plan);
  for (const auto& list : {&call.argv, &plan, &call.runtime_files}) {
    for (const auto& item : *list) {
      ANVIL_RETURN_IF_ERROR(add(item));
    }
  }
  if (body.size() > launch::kMaxWarmCallBody)
    return Fail("limit", "call too large for the sandbox");
  launch::WarmCallHeader header{launch::kWarmCallMagic, static_cast<uint32_t>(call.argv.size()),
                                static_cast<uint32_t>(plan.size()),
                                static_cast<uint32_t>(call.runtime_files.size()),
                                static_cast<uint32_t>(body.size())};
  const int fds[2] = {program_fd, stdin_fd};
  ssize_t n = ipc::SendWithFds(channel, &header, sizeof(header), fds);
  if (n != static_cast<ssize_t>(sizeof(header))) {
    return SysFail("io", "the sandbox is gone before the call");
  }
  if (!fd_io::SendAll(channel, body, 0, fd_io::Wait::NoWait())) {
    return SysFail("io", "the sandbox is gone before the call");
  }
  return Ok();
}

}  // namespace anvil
