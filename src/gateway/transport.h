// The gateway's plugin socket: the listening socket (0600), accepting a connection (admission.h
// decides; out of descriptors the spare one answers "busy"), the hello deadline, reading frames
// with the kernel-attested sender of their bytes, and writing answers with backpressure (a peer
// whose unread answers reach the cap is neither read from nor served a frame it sent already).
// What a frame means is the server's (FrameHandler); this file only moves bytes and closes
// connections.
//
// Threads: the connections live in their own epoll set, which several I/O threads wait on, each
// connection registered one-shot so that one thread at a time serves it (it "owns" it: `busy`).
// Everything shared (the connection table, what a connection is bound to and has in flight, the
// registrations, the meters) is under mu(); the owner reads, parses, dispatches and sends without
// it. Closing a connection another thread owns waits until that thread let go of it, so once a
// close (a revocation) returns, no answer reaches the connection any more.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

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
// kIoFailed: an I/O thread could not wait for its connections (the gateway stops).
// kSignal: SIGTERM, SIGINT or SIGHUP arrived (the gateway stops as on the control channel's
// end: the parent-death signal when the trusted side is killed, or a user's kill).
enum Tag : uint64_t {
  kListen = 1,
  kControl = 2,
  kWake = 3,
  kConn = 4,
  kPidfd = 5,
  kStop = 6,
  kIoFailed = 7,
  kSignal = 8,
};
inline uint64_t MakeTag(Tag tag, uint64_t id) { return (static_cast<uint64_t>(tag) << 56) | id; }

// Fields marked "owner" are used by the thread that owns the connection (`busy`), or under mu()
// while nobody does; every other field is under mu().
struct Connection {
  UniqueFd fd;
  ipc::PeerCredentials peer;
  bool from_trusted_side = false;  // connected by the control channel's peer
  Clock::time_point hello_deadline;
  ipc::FrameReader reader;  // owner
  std::string out;          // owner
  size_t out_offset = 0;    // owner
  std::shared_ptr<Registration> bound;
  std::map<uint64_t, std::weak_ptr<Job>> jobs;       // in flight
  bool reading = true;                               // owner
  bool close_after_flush = false;                    // owner
  std::optional<ipc::PeerCredentials> frame_sender;  // owner: sender of the frame being assembled
  bool mixed_senders = false;                        // owner
  // owner: the mask registered with epoll (UpdateInterest skips no-ops)
  uint32_t epoll_events = 0;
  bool busy = false;  // an I/O thread serves it (`owner`)
  // An event came while it was owned (after its owner re-armed it): the owner re-arms it again.
  bool missed_events = false;
  std::thread::id owner;
  bool closed = false;  // closed while busy: its owner removes it when it lets go
  std::string late;     // answers of queued jobs that completed while it was busy
  // owner: whole frames wait in `reader`, not served while the output buffer was full or once
  // the turn had served its share (Transport::kFramesPerTurn)
  bool frames_waiting = false;
};

class Transport {
 public:
  // Called without mu() on the thread that owns `c`, for each whole frame, whose bytes all came
  // from `c.frame_sender`. It may close the connection (Close, under mu()); false when it did.
  using FrameHandler = std::function<bool(uint64_t id, Connection& c, const ipc::Frame& frame)>;

  // `epoll`: the set of the listening socket (the main loop's); `conn_epoll`: the connections'.
  Transport(const UniqueFd& epoll, const UniqueFd& conn_epoll, const GatewayLimits& limits,
            pid_t trusted_pid, AuditLog* audit, FrameHandler on_frame)
      : epoll_(epoll),
        conn_epoll_(conn_epoll),
        limits_(limits),
        trusted_pid_(trusted_pid),
        audit_(audit),
        on_frame_(std::move(on_frame)) {}

  // Makes the listening socket at `socket_path` (0600) and adds it to the epoll set.
  Status Listen(const std::string& socket_path);

  // What the connections' state is guarded by (see the top of this file).
  std::mutex& mu() { return mu_; }

  // Under mu():
  void Accept();  // the listening socket is readable
  // Closes connections that did not say hello in time; returns the epoll timeout (ms, -1 none)
  // until the next such deadline.
  int ExpireHelloDeadlines();
  // Sends what is buffered for `c`, which no thread owns (then closes it if a denial asked so),
  // and updates what epoll watches for it (`rearm`: its one-shot registration fired). `c` may be
  // gone afterwards.
  void Flush(uint64_t id, Connection& c, bool rearm = false);
  // Closes the connection; its jobs are cancelled. When another thread owns it, waits (mu()
  // released meanwhile) until that thread let go of it.
  void Close(uint64_t id, const std::string& why);
  Connection* Find(uint64_t id);
  std::map<uint64_t, Connection>& connections() { return conns_; }

  // Without mu(), on an I/O thread: a connection's epoll events. Takes the connection, serves
  // it, lets go of it. False for a stale event (the connection busy with another thread, or
  // closed): nothing was served.
  bool HandleEvents(uint64_t id, uint32_t events);
  // Whether an event of connection `id` would be served now (not busy with another thread, not
  // closed): for the gateway's test-only fault injection.
  bool WouldServe(uint64_t id) {
    std::lock_guard lock(mu_);
    auto it = conns_.find(id);
    return it != conns_.end() && !it->second.closed && !it->second.busy;
  }
  // The session ends: a connection being served stops at its next frame (its requests would
  // never be answered anyway), so that the I/O threads can be joined at once.
  void Stop() { stopping_.store(true, std::memory_order_relaxed); }
  // Test-only builds (GatewayOptions::rearm_delay_ms_for_testing).
  void SetRearmDelayForTesting(uint32_t ms) { rearm_delay_ms_for_testing_ = ms; }

 private:
  // Serves `c`, which this thread owns; returns why it is to be closed, or nothing.
  std::optional<std::string> Serve(uint64_t id, Connection& c, uint32_t events);
  // Serves the whole frames buffered in `c.reader` until none is left or the output buffer is
  // full (`c.frames_waiting`); returns why `c` is to be closed, or sets `closed` when the
  // handler closed it.
  // What one turn of a connection has served (a turn: an I/O thread took it for an epoll event).
  struct Turn {
    uint32_t frames;
    size_t pending_at_start;  // its unsent answers' bytes when the turn began
  };
  std::optional<std::string> ServeFrames(uint64_t id, Connection& c, bool& closed, Turn& turn);
  // A turn serves at most this many frames, and starts no further frame once its inline answers
  // reach this many bytes; then it lets go of the connection with the rest waiting, read and in
  // order. What one connection's pipeline holds up the connections waiting behind it is one
  // turn's work (a few small requests, or one large read), not the whole pipeline.
  static constexpr uint32_t kFramesPerTurn = 16;
  static constexpr size_t kAnswerBytesPerTurn = 1u << 20;
  // Whether `c` may be read from (its output buffer is below the cap, with hysteresis).
  bool WantRead(const Connection& c) const;
  // Sends what is buffered for `c` (its owner, or under mu() when none); false on an error.
  bool Send(Connection& c);
  // Audits a malformed frame on `c` (takes mu()).
  void AuditFrame(Connection& c, const std::string& code, const std::string& reason);
  void UpdateInterest(uint64_t id, Connection& c, bool rearm);
  // Whether a connection from `peer` may be admitted (AdmitConnection, over the connections
  // now); closes the oldest connection that never said hello when the trusted side needs its
  // slot.
  ConnectionAdmission Admit(const std::optional<ipc::PeerCredentials>& peer);
  // Audits a refused connection; a "busy" one is told why first.
  void Refused(int fd, const ConnectionAdmission& admission, const ipc::PeerCredentials* peer);

  const UniqueFd& epoll_;
  const UniqueFd& conn_epoll_;
  const GatewayLimits& limits_;
  pid_t trusted_pid_;
  AuditLog* audit_;
  FrameHandler on_frame_;
  std::atomic<bool> stopping_{false};
  uint32_t rearm_delay_ms_for_testing_ = 0;
  std::mutex mu_;
  std::condition_variable released_;  // an owner let go of a closed connection
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
