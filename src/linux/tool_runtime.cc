#include "linux/tool_runtime.h"

#include <elf.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/unique_fd.h"

namespace anvil {
namespace {

constexpr std::size_t kMaxImageBytes = 64 * 1024;  // where PT_INTERP is looked for
constexpr std::size_t kMaxLoaderOutput = 64 * 1024;
constexpr auto kLoaderTimeout = std::chrono::seconds(5);

template <typename Ehdr, typename Phdr>
Result<std::string> InterpreterOf(std::string_view image) {
  Ehdr eh{};
  std::memcpy(&eh, image.data(), sizeof(eh));
  if (eh.e_phentsize != sizeof(Phdr)) return Fail("invalid", "unexpected ELF program header size");
  for (std::size_t i = 0; i < eh.e_phnum; ++i) {
    const std::size_t off = static_cast<std::size_t>(eh.e_phoff) + i * sizeof(Phdr);
    if (eh.e_phoff > image.size() || off + sizeof(Phdr) > image.size()) {
      return Fail("invalid", "ELF program headers beyond the bytes read");
    }
    Phdr ph{};
    std::memcpy(&ph, image.data() + off, sizeof(ph));
    if (ph.p_type != PT_INTERP) continue;
    if (ph.p_offset > image.size() || ph.p_filesz == 0 ||
        ph.p_filesz > image.size() - static_cast<std::size_t>(ph.p_offset)) {
      return Fail("invalid", "ELF interpreter beyond the bytes read");
    }
    std::string interp(
        image.substr(static_cast<std::size_t>(ph.p_offset), static_cast<std::size_t>(ph.p_filesz)));
    while (!interp.empty() && interp.back() == '\0') interp.pop_back();
    if (interp.empty() || interp[0] != '/' || interp.find('\0') != std::string::npos) {
      return Fail("invalid", "ELF interpreter is not an absolute path");
    }
    return interp;
  }
  return std::string();  // static
}

void AddUnique(std::vector<std::string>& list, const std::string& path) {
  if (std::find(list.begin(), list.end(), path) == list.end()) list.push_back(path);
}

// Runs `interp --list program` with an empty environment; its standard output, bounded.
Result<std::string> RunLoaderList(const std::string& interp, const std::string& program) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return SysFail("sandbox", "pipe");
  UniqueFd out_r(out[0]), out_w(out[1]);
  pid_t pid = fork();
  if (pid < 0) return SysFail("sandbox", "fork " + interp);
  if (pid == 0) {
    int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(out_w.Get(), 1) < 0 || dup2(null, 2) < 0) _exit(127);
    std::string arg0 = interp, list = "--list", prog = program;
    char* argv[] = {arg0.data(), list.data(), prog.data(), nullptr};
    char* envp[] = {nullptr};
    execve(interp.c_str(), argv, envp);
    _exit(127);
  }
  out_w.Reset();
  std::string output;
  const auto deadline = std::chrono::steady_clock::now() + kLoaderTimeout;
  bool timed_out = false;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out_r.Get(), POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[4096];
    ssize_t n = ::read(out_r.Get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (output.size() + static_cast<std::size_t>(n) > kMaxLoaderOutput) {
      timed_out = true;  // an answer this long is not the loader's list
      break;
    }
    output.append(buf, static_cast<std::size_t>(n));
  }
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return Fail("sandbox", interp + " --list " + program + " did not answer in time");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Fail("sandbox", interp + " --list " + program + " failed (status " +
                               std::to_string(status) + "): the tool cannot start");
  }
  return output;
}

}  // namespace

Result<std::string> ElfInterpreter(std::string_view image) {
  if (image.size() < EI_NIDENT || std::memcmp(image.data(), ELFMAG, SELFMAG) != 0) {
    return Fail("invalid", "not an ELF file");
  }
  if (image[EI_DATA] != ELFDATA2LSB) return Fail("invalid", "not a little-endian ELF file");
  if (image[EI_CLASS] == ELFCLASS64) {
    if (image.size() < sizeof(Elf64_Ehdr)) return Fail("invalid", "truncated ELF header");
    return InterpreterOf<Elf64_Ehdr, Elf64_Phdr>(image);
  }
  if (image[EI_CLASS] == ELFCLASS32) {
    if (image.size() < sizeof(Elf32_Ehdr)) return Fail("invalid", "truncated ELF header");
    return InterpreterOf<Elf32_Ehdr, Elf32_Phdr>(image);
  }
  return Fail("invalid", "unknown ELF class");
}

Result<std::vector<std::string>> ParseLoaderList(std::string_view output) {
  std::vector<std::string> paths;
  std::size_t start = 0;
  while (start < output.size()) {
    std::size_t end = output.find('\n', start);
    if (end == std::string_view::npos) end = output.size();
    std::string_view line = output.substr(start, end - start);
    start = end + 1;
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    if (line.empty()) continue;
    std::string_view path = line;
    const std::size_t arrow = line.find(" => ");
    if (arrow != std::string_view::npos) {
      path = line.substr(arrow + 4);
      if (path.rfind("not found", 0) == 0) {
        return Fail("not_found",
                    "the dynamic loader cannot find " + std::string(line.substr(0, arrow)));
      }
    }
    const std::size_t addr = path.rfind(" (0x");
    if (addr != std::string_view::npos && path.back() == ')') path = path.substr(0, addr);
    if (path.empty()) return Fail("invalid", "unexpected loader line: " + std::string(line));
    if (path[0] != '/') {
      // The vDSO ("linux-vdso.so.1 (0x...)") is no file; anything else without a path is not
      // something this parser understands.
      if (arrow == std::string_view::npos && path.find('/') == std::string_view::npos &&
          (path.find("vdso") != std::string_view::npos || path.find("linux-gate") == 0)) {
        continue;
      }
      return Fail("invalid", "unexpected loader line: " + std::string(line));
    }
    AddUnique(paths, std::string(path));
  }
  return paths;
}

Result<ProgramIdentity> IdentityOf(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return SysFail("io", "fstat");
  return ProgramIdentity{st.st_dev, st.st_ino, st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_size};
}

Result<ToolRuntime> ResolveToolRuntime(const std::string& program,
                                       const std::vector<std::string>& extra_files) {
  if (program.empty() || program[0] != '/') return Fail("invalid", "tool path is not absolute");
  UniqueFd fd(::open(program.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return SysFail("not_found", "executable missing: " + program);
  ANVIL_TRY(identity, IdentityOf(fd.Get()));
  std::string image(kMaxImageBytes, '\0');
  ssize_t n = ::pread(fd.Get(), image.data(), image.size(), 0);
  if (n < 0) return SysFail("sandbox", "read " + program);
  image.resize(static_cast<std::size_t>(n));
  auto interp = ElfInterpreter(image);
  if (!interp) {
    return Fail("sandbox", program + ": " + interp.error().message +
                               " (a tool of the policy table must be an ELF executable)");
  }
  ToolRuntime rt;
  rt.program = program;
  rt.identity = *identity;
  rt.files.push_back(program);
  if (!interp->empty()) {
    ANVIL_TRY(listed, RunLoaderList(*interp, program));
    auto libs = ParseLoaderList(*listed);
    if (!libs) {
      return Fail("sandbox", program + ": " + libs.error().message);
    }
    AddUnique(rt.files, *interp);
    for (const auto& lib : *libs) AddUnique(rt.files, lib);
    // The loader looks its libraries up in the cache first; without it, it would search (and
    // need) the library directories themselves.
    struct stat st {};
    if (::stat("/etc/ld.so.cache", &st) == 0 && S_ISREG(st.st_mode)) {
      AddUnique(rt.files, "/etc/ld.so.cache");
    }
  }
  for (const auto& extra : extra_files) {
    struct stat st {};
    if (!extra.empty() && extra[0] == '/' && ::stat(extra.c_str(), &st) == 0 &&
        S_ISREG(st.st_mode)) {
      AddUnique(rt.files, extra);
    }
  }
  return rt;
}

}  // namespace anvil
