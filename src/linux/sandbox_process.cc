#include "linux/sandbox_process.h"

#include <fcntl.h>
#include <unistd.h>

#include "linux/sandbox_report.h"

namespace anvil::launch {

void MarkCommandFailed(const Plan& plan) {
  if (plan.command_failed_fd < 0) return;
  ssize_t ignored = ::write(plan.command_failed_fd, "F", 1);
  (void)ignored;
}

[[noreturn]] void Die(const Plan& plan, const Error& error) {
  MarkCommandFailed(plan);
  SendRecord(plan.report_fd, kSetupError, 0, error.sys_errno, error.ToString());
  _exit(125);
}

Status InjectedFailure(const Plan& plan, const char* step) {
  if (plan.spec->fail_step_for_testing == step) {
    return Fail("sandbox", std::string("injected failure of the ") + step + " layer (test)");
  }
  return Ok();
}

Status WriteFile(const char* path, const std::string& text) {
  UniqueFd fd(::open(path, O_WRONLY | O_CLOEXEC));
  if (!fd) return SysFail("sandbox", std::string("open ") + path);
  if (::write(fd.Get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return SysFail("sandbox", std::string("write ") + path);
  }
  return Ok();
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

bool IsScript(int fd) {
  UniqueFd f(::open(("/proc/self/fd/" + std::to_string(fd)).c_str(), O_RDONLY | O_CLOEXEC));
  char magic[2] = {};
  return f && ::read(f.Get(), magic, 2) == 2 && magic[0] == '#' && magic[1] == '!';
}

}  // namespace anvil::launch
