// Descriptor passing over Unix sockets (SCM_RIGHTS): the one implementation the gateway, its
// exec broker and warm jobs, the sandbox launcher and anvil-proxy share.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <span>
#include <vector>

namespace anvil::ipc {

// The most descriptors one message carries.
inline constexpr size_t kMaxPassedFds = 4;

// sendmsg(2) of `size` bytes (at least one) with `fds` attached (at most kMaxPassedFds; none: no
// control message). MSG_NOSIGNAL | `flags` (MSG_DONTWAIT); retries EINTR. Returns what sendmsg
// returned.
ssize_t SendWithFds(int socket, const void* data, size_t size, std::span<const int> fds,
                    int flags = 0);

// recvmsg(2) into `data` with MSG_CMSG_CLOEXEC | `flags`; retries EINTR. The descriptors that
// came with the bytes are appended to `fds`, at most `max_fds` of them (any beyond are closed).
// `msg_flags`, when given, receives the message's flags (MSG_TRUNC, MSG_CTRUNC). Returns what
// recvmsg returned: 0 at EOF, -1 with errno on error.
ssize_t ReceiveWithFds(int socket, void* data, size_t size, std::vector<int>& fds, size_t max_fds,
                       int flags = 0, int* msg_flags = nullptr);

}  // namespace anvil::ipc
