#include "ipc/fd_passing.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace anvil::ipc {

ssize_t SendWithFds(int socket, const void* data, size_t size, std::span<const int> fds,
                    int flags) {
  if (fds.size() > kMaxPassedFds) {
    errno = EINVAL;
    return -1;
  }
  iovec iov{const_cast<void*>(data), size};
  alignas(cmsghdr) char control[CMSG_SPACE(kMaxPassedFds * sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
  }
  ssize_t n;
  do {
    n = ::sendmsg(socket, &msg, MSG_NOSIGNAL | flags);
  } while (n < 0 && errno == EINTR);
  return n;
}

ssize_t ReceiveWithFds(int socket, void* data, size_t size, std::vector<int>& fds, size_t max_fds,
                       int flags, int* msg_flags) {
  iovec iov{data, size};
  alignas(cmsghdr) char control[CMSG_SPACE(kMaxPassedFds * sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC | flags);
  } while (n < 0 && errno == EINTR);
  if (msg_flags != nullptr) *msg_flags = n < 0 ? 0 : msg.msg_flags;
  if (n < 0) return n;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (fds.size() < max_fds) {
        fds.push_back(fd);
      } else {
        ::close(fd);
      }
    }
  }
  return n;
}

}  // namespace anvil::ipc
