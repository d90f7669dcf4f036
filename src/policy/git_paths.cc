#include "policy/git_paths.h"

#include <algorithm>

#include "policy/sandbox_policy.h"

namespace anvil::git_paths {

std::string Join(const std::string& dir, std::string_view name) {
  if (dir == "/") return "/" + std::string(name);
  return dir + "/" + std::string(name);
}

std::string StripTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

std::string Dirname(const std::string& path) {
  std::string p = StripTrailingSlashes(path);
  auto slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

std::string Basename(const std::string& path) {
  std::string p = StripTrailingSlashes(path);
  auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string LexicalNormal(const std::string& path) {
  std::vector<std::string> parts;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    std::string part = path.substr(pos, next - pos);
    pos = next + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(std::move(part));
  }
  std::string out;
  for (const auto& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

bool WithinAny(const std::string& path, const std::vector<std::string>& roots) {
  return std::any_of(roots.begin(), roots.end(),
                     [&](const std::string& r) { return PathIsWithin(path, r); });
}

bool UnderAny(const std::string& path, const std::set<std::string>& set) {
  std::string p = path;
  for (;;) {
    if (set.count(p)) return true;
    if (p == "/" || p.empty() || p == ".") return false;
    p = Dirname(p);
  }
}

}  // namespace anvil::git_paths
