// The gateway's plugin socket: the listening socket (0600), accepting a connection (admission.h
// decides; out of descriptors the spare one answers "busy"), the hello deadline, reading frames
// with the kernel-attested sender of their bytes, and writing answers with backpressure. What a
// frame means is the server's (FrameHandler); this file only moves bytes and closes connections.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "gateway/audit_log.h"
#include "gateway/gateway_limits.h"
#include "gateway/job_queue.h"
#include "gateway/registration.h"
#include "ipc/frame.h"
#include "ipc/peer_credentials.h"

namespace anvil::gateway {

// What each descriptor in the gateway's epoll set is: the tag in the high byte, an id below.
enum Tag : uint64_t { kListen = 1, kControl = 2, kWake = 3, kConn = 4, kPidfd = 5 };
inline uint64_t MakeTag(Tag tag, uint64_t id) { return (static_cast<uint64_t>(tag) << 56) | id; }

struct Connection {
  UniqueFd fd;
  ipc::PeerCredentials peer;
  bool from_trusted_side = false;  // connected by the control channel's peer
  Clock::time_point hello_deadline;
  ipc::FrameReader reader;
  std::string out;
  size_t out_offset = 0;
  std::shared_ptr<Registration> bound;
  std::map<uint64_t, std::weak_ptr<Job>> jobs;  // in flight
  bool reading = true;
  bool close_after_flush = false;
  std::optional<ipc::PeerCredentials> frame_sender;  // sender of the frame being assembled
  bool mixed_senders = false;
  uint32_t epoll_events = 0;  // the mask registered with epoll (UpdateInterest skips no-ops)
};

class Transport {
 public:
  // Called for each whole frame, whose bytes all came from `c.frame_sender`. It may close the
  // connection (Close); the transport looks it up again afterwards.
  using FrameHandler = std::function<void(uint64_t id, Connection& c, const ipc::Frame& frame)>;

  Transport(const UniqueFd& epoll, const GatewayLimits& limits, pid_t trusted_pid, AuditLog* audit,
            FrameHandler on_frame)
      : epoll_(epoll),
        limits_(limits),
        trusted_pid_(trusted_pid),
        audit_(audit),
        on_frame_(std::move(on_frame)) {}

  // Makes the listening socket at `socket_path` (0600) and adds it to the epoll set.
  Status Listen(const std::string& socket_path);

  void Accept();                                    // the listening socket is readable
  void HandleEvents(uint64_t id, uint32_t events);  // a connection's epoll events
  // Closes connections that did not say hello in time; returns the epoll timeout (ms, -1 none)
  // until the next such deadline.
  int ExpireHelloDeadlines();

  // Sends what is buffered for `c` (then closes it if a denial asked so) and updates what epoll
  // watches for it. `c` may be gone afterwards.
  void Flush(uint64_t id, Connection& c);
  // Closes the connection; its jobs are cancelled.
  void Close(uint64_t id, const std::string& why);

  Connection* Find(uint64_t id);
  std::map<uint64_t, Connection>& connections() { return conns_; }

 private:
  void UpdateInterest(uint64_t id, Connection& c);
  // Whether a connection from `peer` may be admitted (AdmitConnection, over the connections
  // now); closes the oldest connection that never said hello when the trusted side needs its
  // slot.
  ConnectionAdmission Admit(const std::optional<ipc::PeerCredentials>& peer);
  // Audits a refused connection; a "busy" one is told why first.
  void Refused(int fd, const ConnectionAdmission& admission, const ipc::PeerCredentials* peer);

  const UniqueFd& epoll_;
  const GatewayLimits& limits_;
  pid_t trusted_pid_;
  AuditLog* audit_;
  FrameHandler on_frame_;
  UniqueFd listen_;
  // Held open so that, out of file descriptors (EMFILE), the gateway can still accept a pending
  // connection to tell it why and close it, instead of leaving it unanswered in the backlog while
  // the level-triggered listening socket spins the loop.
  UniqueFd spare_fd_;
  std::map<uint64_t, Connection> conns_;
  uint64_t next_conn_ = 1;
  // Connections that have not said hello, oldest first (ids; bound or closed ones are skipped).
  std::deque<uint64_t> awaiting_hello_;
  // Refused connections are audited at this rate at most (a flood must not fill the disk).
  TokenBucket refusal_audit_{20};
  uint64_t refusals_unaudited_ = 0;
};

}  // namespace anvil::gateway
