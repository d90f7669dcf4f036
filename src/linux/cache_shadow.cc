#include "linux/cache_shadow.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/unique_fd.h"

namespace anvil {
namespace {

// `relative` beneath the directory `base`, each component made when missing and opened without
// following a link: the last one's descriptor.
Result<UniqueFd> MakeBeneath(int base, const std::string& base_path, const std::string& relative) {
  UniqueFd dir(::fcntl(base, F_DUPFD_CLOEXEC, 0));
  if (!dir) return SysFail("sandbox", "dup " + base_path);
  std::string path = base_path;
  size_t start = 0;
  while (start < relative.size()) {
    size_t end = relative.find('/', start);
    if (end == std::string::npos) end = relative.size();
    const std::string name = relative.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;
    path += "/" + name;
    if (::mkdirat(dir.Get(), name.c_str(), 0700) != 0 && errno != EEXIST) {
      return SysFail("sandbox", "make " + path);
    }
    UniqueFd next(
        ::openat(dir.Get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) {
      return SysFail("sandbox", path + " in the sandbox home is not a directory (fix: remove it)");
    }
    dir = std::move(next);
  }
  return dir;
}

}  // namespace

Result<std::vector<MappedBind>> CacheShadowBinds(const HomeView& home,
                                                 const std::vector<HostCachePlace>& places,
                                                 const std::vector<AutorunShadow>& shadowed) {
  std::vector<MappedBind> out;
  if (home.kind != HomeKind::kPersistent || home.home.source.empty() || shadowed.empty()) {
    return out;
  }
  UniqueFd root(::open(home.home.source.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!root) return SysFail("sandbox", "open the sandbox home " + home.home.source);
  struct stat st {};
  if (::fstat(root.Get(), &st) != 0) return SysFail("sandbox", "stat " + home.home.source);
  if (home.home.expect_ino != 0 &&
      (st.st_dev != home.home.expect_dev || st.st_ino != home.home.expect_ino)) {
    return Fail("sandbox", home.home.source + " was replaced after it was checked");
  }
  for (const auto& s : shadowed) {
    auto place = std::find_if(places.begin(), places.end(),
                              [&](const HostCachePlace& p) { return p.path == s.place; });
    if (place == places.end()) continue;
    ANVIL_TRY(dir, MakeBeneath(root.Get(), home.home.source, place->key));
    if (::fstat(dir->Get(), &st) != 0) return SysFail("sandbox", "stat " + place->key);
    out.push_back({home.home.source + "/" + place->key, s.path, true, st.st_dev, st.st_ino});
  }
  return out;
}

Status MakeShadowMountPoint(const ShadowMountPoint& point) {
  UniqueFd base(::open(point.source.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!base) return SysFail("sandbox", "open " + point.source);
  ANVIL_TRY(made, MakeBeneath(base.Get(), point.source, point.relative));
  return Ok();
}

}  // namespace anvil
