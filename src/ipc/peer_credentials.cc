#include "ipc/peer_credentials.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace anvil::ipc {

Result<PeerCredentials> GetPeerCredentials(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return SysFail("internal", "SO_PEERCRED");
  }
  return PeerCredentials{cred.pid, cred.uid, cred.gid};
}

Status EnablePassCredentials(int fd) {
  int one = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) != 0) {
    return SysFail("internal", "SO_PASSCRED");
  }
  return Ok();
}

ssize_t ReceiveWithCredentials(int fd, char* buffer, size_t size,
                               std::optional<PeerCredentials>& sender) {
  iovec iov{buffer, size};
  // Room for the credentials and nothing else, on purpose: descriptors a peer passes along
  // (SCM_RIGHTS) do not fit, so the kernel drops them instead of installing them here, where
  // nothing would close them (tests/security T5GatewayIpc.DescriptorsPassedToTheGatewayAreNever
  // Kept).
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  sender.reset();
  if (n <= 0) return n;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
        c->cmsg_len >= CMSG_LEN(sizeof(ucred))) {
      ucred cred;
      std::memcpy(&cred, CMSG_DATA(c), sizeof(cred));
      sender = PeerCredentials{cred.pid, cred.uid, cred.gid};
    }
  }
  return n;
}

}  // namespace anvil::ipc
