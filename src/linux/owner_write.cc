#include "linux/owner_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace anvil {
namespace {

// chmod(2) of what `fd` refers to, O_PATH descriptors too (fchmod(2) refuses those).
int ChmodFd(int fd, mode_t mode) {
  if (::fchmod(fd, mode) == 0) return 0;
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  return ::chmod(proc.c_str(), mode);
}

}  // namespace

int WithOwnerWrite(int dir, const std::function<int()>& change) {
  if (change() == 0) return 0;
  const int first = errno;
  if (first != EACCES && first != EPERM) return -1;
  struct stat st {};
  if (::fstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & (S_IWUSR | S_IXUSR)) == (S_IWUSR | S_IXUSR)) {
    errno = first;
    return -1;
  }
  const mode_t mode = st.st_mode & 07777;
  if (ChmodFd(dir, mode | S_IWUSR | S_IXUSR) != 0) {
    errno = first;
    return -1;
  }
  const int result = change();
  const int error = errno;
  (void)ChmodFd(dir, mode);
  errno = error;
  return result;
}

OwnerAccess::OwnerAccess(int dir) : dir_(dir) {
  struct stat st {};
  if (::fstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) return;
  const mode_t all = S_IRUSR | S_IWUSR | S_IXUSR;
  if ((st.st_mode & all) == all) return;
  mode_ = st.st_mode & 07777;
  changed_ = ChmodFd(dir, mode_ | all) == 0;
}

OwnerAccess::~OwnerAccess() {
  if (changed_) (void)ChmodFd(dir_, static_cast<mode_t>(mode_));
}

}  // namespace anvil
