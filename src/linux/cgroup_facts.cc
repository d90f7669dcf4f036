#include "linux/cgroup_facts.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "common/unique_fd.h"

namespace anvil {
namespace {

std::string ReadProcFile(const char* path) {
  std::string out;
  UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd) return out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd.Get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// Calls `f(line)` for every line of `text` (the last one also without a newline).
template <typename F>
void ForEachLine(std::string_view text, F f) {
  while (!text.empty()) {
    size_t end = text.find('\n');
    f(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
}

// Whitespace-separated fields (runs of blanks separate one field from the next).
void SplitFields(std::string_view line, std::vector<std::string_view>& fields) {
  fields.clear();
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && IsSpace(line[i])) ++i;
    size_t start = i;
    while (i < line.size() && !IsSpace(line[i])) ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
}

// Whether the comma-separated `list` holds `item`.
bool ListHolds(std::string_view list, std::string_view item) {
  while (true) {
    size_t comma = list.find(',');
    if (list.substr(0, comma) == item) return true;
    if (comma == std::string_view::npos) return false;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace

CgroupFacts ReadCgroupFacts() {
  return CgroupFacts{ReadProcFile("/proc/self/cgroup"), ReadProcFile("/proc/self/mountinfo")};
}

CgroupPlaces LocateController(const CgroupFacts& facts, std::string_view controller) {
  CgroupPlaces out;
  ForEachLine(facts.proc_self_cgroup, [&](std::string_view line) {
    size_t a = line.find(':');
    if (a == std::string_view::npos) return;
    size_t b = line.find(':', a + 1);
    if (b == std::string_view::npos) return;
    std::string_view controllers = line.substr(a + 1, b - a - 1);
    std::string_view path = line.substr(b + 1);
    if (ListHolds(controllers, controller)) out.v1_path = std::string(path);
    if (controllers.empty()) {
      out.have_v2 = true;
      out.v2_path = std::string(path);
    }
  });
  std::vector<std::string_view> fields;
  ForEachLine(facts.mountinfo, [&](std::string_view line) {
    SplitFields(line, fields);
    size_t dash = 0;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (fields.size() < 5 || dash + 3 >= fields.size()) return;
    std::string_view mount_point = fields[4];
    std::string_view fstype = fields[dash + 1];
    std::string_view superopts = fields[dash + 3];
    if (fstype == "cgroup" && ListHolds(superopts, controller)) {
      out.v1_mount = std::string(mount_point);
    } else if (fstype == "cgroup2" && out.v2_mount.empty()) {
      out.v2_mount = std::string(mount_point);
    }
  });
  return out;
}

}  // namespace anvil
