// Who is on the other end of a Unix socket. SO_PEERCRED says who connect()ed; SCM_CREDENTIALS
// (with SO_PASSCRED) says, per message, which process *sent* those bytes, checked by the
// kernel — so a socket handed to another process, or stolen from a host, is caught at the
// first byte that process sends.
#pragma once

#include <sys/types.h>

#include <optional>

#include "common/result.h"

namespace anvil::ipc {

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  bool operator==(const PeerCredentials&) const = default;
};

Result<PeerCredentials> GetPeerCredentials(int fd);
Status EnablePassCredentials(int fd);

// recvmsg(2) that also returns the kernel-attested sender of the bytes read. Returns 0 at EOF;
// -1 with errno EAGAIN when nothing is ready on a non-blocking socket.
ssize_t ReceiveWithCredentials(int fd, char* buffer, size_t size,
                               std::optional<PeerCredentials>& sender);

}  // namespace anvil::ipc
