#include "gateway/gateway.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/unique_fd.h"
#include "fs/workspace_root.h"
#include "gateway/audit_log.h"
#include "gateway/dispatch.h"
#include "gateway/exec_broker.h"
#include "gateway/self_hardening.h"
#include "ipc/capability_token.h"
#include "ipc/frame.h"
#include "ipc/peer_credentials.h"
#include "policy/grant.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace anvil::gateway {
namespace {

using Clock = std::chrono::steady_clock;
using ipc::Request;
using ipc::Response;

// Token bucket: `rate` per second, burst of one second's worth.
class TokenBucket {
 public:
  explicit TokenBucket(uint64_t rate) : rate_(static_cast<double>(rate)), tokens_(rate_) {}
  bool Take(double amount) {
    Refill();
    if (tokens_ < amount) return false;
    tokens_ -= amount;
    return true;
  }
  // Charges what was already served (a read's reply): the balance may go negative, and the
  // plugin's next requests wait until it has been paid back.
  void Charge(double amount) {
    Refill();
    tokens_ -= amount;
  }

 private:
  void Refill() {
    auto now = Clock::now();
    tokens_ = std::min(rate_, tokens_ + rate_ * std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }
  double rate_;
  double tokens_;
  Clock::time_point last_ = Clock::now();
};

struct Registration {
  std::string token;  // raw bytes
  std::string plugin;
  pid_t pid = 0;
  uid_t uid = 0;
  std::string workspace;
  Grant grant;
  UniqueFd pidfd;  // closes when the host exits: the token is revoked then
  // Set under the registry lock when the token is revoked, in the same critical section that
  // removes it from the registry: a loop serving a connection bound to it then looks the token
  // up again (and finds nothing) instead of trusting the binding.
  std::atomic<bool> revoked{false};
  // The plugin's quotas, shared by its connections on every loop: a lock per registration,
  // never a global one.
  std::mutex quota_mu;
  TokenBucket requests{0};
  TokenBucket bytes{0};
};

class EventLoop;

struct Job {
  EventLoop* loop;  // the loop that owns the connection: the completion goes back to it
  uint64_t conn_id;
  Request request;
  std::shared_ptr<const Registration> registration;
  std::atomic<bool> cancelled{false};
  std::string cancel_reason;  // written once, by the owning loop, before `cancelled` is set
  Clock::time_point queued = Clock::now();
};

// Marks `job` cancelled with `reason`, unless it already is. Only the loop that owns the job's
// connection calls this, so the reason is written exactly once, before the flag is published.
void CancelJob(Job& job, const std::string& reason) {
  if (job.cancelled.load(std::memory_order_relaxed)) return;
  job.cancel_reason = reason;
  job.cancelled.store(true, std::memory_order_release);
}

struct Completion {
  uint64_t conn_id;
  uint64_t request_id;
  std::string frame;
  AuditEntry audit;  // written to the log by the owning loop, before the reply is sent
};

struct Connection {
  UniqueFd fd;
  ipc::PeerCredentials peer;
  ipc::FrameReader reader;
  std::string out;
  size_t out_offset = 0;
  std::shared_ptr<Registration> bound;
  std::map<uint64_t, std::weak_ptr<Job>> jobs;  // in flight
  bool reading = true;
  bool close_after_flush = false;
  bool touched = false;  // has output or interest changes to apply at the end of this turn
  std::optional<ipc::PeerCredentials> frame_sender;  // sender of the frame being assembled
  bool mixed_senders = false;
  uint32_t epoll_events = 0;  // the mask registered with epoll (UpdateInterest skips no-ops)
};

enum Tag : uint64_t { kListen = 1, kControl = 2, kWake = 3, kConn = 4, kPidfd = 5 };
uint64_t MakeTag(Tag tag, uint64_t id) { return (static_cast<uint64_t>(tag) << 56) | id; }

// What the main thread, the event loops and the workers share. Everything here is immutable
// after start-up or guarded as noted.
struct Shared {
  Shared(const GatewayOptions& o, WorkspaceRoot r, AuditLog* a, const ExecBroker* e,
         std::unique_ptr<NetFetchService> n)
      : options(o), root(std::move(r)), audit(a), exec(e), net(std::move(n)) {}

  // Callers hold reg_mu.
  std::shared_ptr<Registration> FindByToken(std::string_view token) {
    std::shared_ptr<Registration> found;
    // Visit every registration whatever matches, so timing says nothing about which did.
    for (auto& [index, reg] : registrations) {
      if (ipc::ConstantTimeEquals(reg->token, token)) found = reg;
    }
    return found;
  }

  GatewayOptions options;
  WorkspaceRoot root;
  AuditLog* audit;
  const ExecBroker* exec;  // null: sys.exec unavailable in this gateway
  std::unique_ptr<NetFetchService> net;

  // The registry: written by the main thread (control channel, pidfds); read by the loops
  // only to bind a connection (hello) or when a request's token is not its binding's.
  std::mutex reg_mu;
  std::map<uint64_t, std::shared_ptr<Registration>> registrations;  // by index

  std::atomic<uint32_t> connections{0};  // accepted by the main thread, closed by the loops

  std::mutex queue_mu;
  std::condition_variable queue_cv;
  std::deque<std::shared_ptr<Job>> queue;
  // sys.exec calls last as long as the tool runs: their own workers, so that a slow `rg` never
  // holds up sys.fs.
  std::condition_variable exec_cv;
  std::deque<std::shared_ptr<Job>> exec_queue;
  bool stopping = false;
};

// One event loop: a thread with its own epoll set, wake eventfd, connections and audit buffer.
// A connection lives on exactly one loop from accept to close, so its frames are read, checked
// and answered in order by one thread, and its jobs are cancelled by that thread. Loops share
// no lock on the request path except the per-plugin quota lock.
class EventLoop {
 public:
  EventLoop(Shared& shared, size_t index) : index_(index), s_(shared) {}
  Status Init();
  void Start() {
    thread_ = std::thread([this] { Run(); });
  }
  // Hands over an accepted, checked connection (main thread).
  void Adopt(UniqueFd fd, ipc::PeerCredentials peer);
  // A worker finished a job of one of this loop's connections (worker threads).
  void Complete(Completion completion);
  // Runs `fn` on the loop's thread, writes the audit lines it recorded, then calls `done`.
  void Post(std::function<void(EventLoop&)> fn, std::function<void()> done);
  // After the workers are joined: answers what they finished, writes the audit, joins.
  void Stop();

  // For closures posted to the loop (they run on its thread).
  void CloseBoundTo(const std::shared_ptr<Registration>& reg);
  size_t CancelPlugin(const std::string& plugin, const std::string& reason);
  size_t index() const { return index_; }
  size_t ConnectionCount() const { return conns_.size(); }

 private:
  void Run();
  void Wake();
  void HandleWake();
  void EndTurn();
  void Record(const AuditEntry& audit) { s_.audit->Format(audit, audit_); }
  void Touch(uint64_t id, Connection& c);
  void HandleConnection(uint64_t id, uint32_t events);
  void HandleFrame(uint64_t id, Connection& c, const ipc::Frame& frame);
  void HandleRequest(uint64_t id, Connection& c, Request request);
  void Reply(uint64_t id, Connection& c, const Response& response);
  void Deny(uint64_t id, Connection& c, const Request& r, const std::string& plugin,
            std::string code, std::string reason, bool close);
  void Flush(uint64_t id, Connection& c);
  void CloseConnection(uint64_t id, const std::string& why);
  void UpdateInterest(uint64_t id, Connection& c);

  struct Mail {
    std::function<void(EventLoop&)> fn;
    std::function<void()> done;
  };

  const size_t index_;
  Shared& s_;
  UniqueFd epoll_, wake_;
  std::unordered_map<uint64_t, Connection> conns_;
  uint64_t next_conn_ = 1;
  std::string audit_;              // lines recorded during this turn
  std::vector<uint64_t> touched_;  // connections to flush at the end of this turn
  bool stopping_ = false;
  std::mutex mu_;  // guards the three below (other threads -> this loop)
  std::vector<Mail> mail_;
  std::vector<Completion> done_;
  bool stop_requested_ = false;
  std::thread thread_;
};

class Server {
 public:
  Server(const GatewayOptions& options, WorkspaceRoot root, AuditLog* audit, const ExecBroker* exec,
         std::unique_ptr<NetFetchService> net)
      : s_(options, std::move(root), audit, exec, std::move(net)) {}

  Status Start(const std::string& socket_path);
  int Loop();

 private:
  void Worker(bool exec);
  void HandleAccept();
  void HandleControl();
  void HandlePidfd(uint64_t reg_index);
  void Record(const AuditEntry& audit) { s_.audit->Format(audit, audit_); }
  // Runs `fn` on every loop, in parallel, and returns when all have (and have written the
  // audit lines it recorded). Only the main thread calls it; loops never wait for it.
  void OnEveryLoop(const std::function<void(EventLoop&)>& fn);
  void ControlReply(const nlohmann::json& reply);
  nlohmann::json ControlRegister(const nlohmann::json& msg);
  nlohmann::json ControlRevoke(const nlohmann::json& msg);
  nlohmann::json ControlCancel(const nlohmann::json& msg);
  void RevokeRegistration(const std::shared_ptr<Registration>& reg, const std::string& why);

  Shared s_;
  UniqueFd epoll_, listen_;
  // Held open so that, out of file descriptors (EMFILE), the gateway can still accept a pending
  // connection to tell it why and close it, instead of leaving it unanswered in the backlog while
  // the level-triggered listening socket spins the loop.
  UniqueFd spare_fd_;
  ipc::FrameReader control_reader_;
  std::string audit_;  // the main thread's audit lines of this turn
  uint64_t next_reg_ = 1;
  bool running_ = true;
  std::vector<std::unique_ptr<EventLoop>> loops_;
  size_t next_loop_ = 0;
  std::vector<std::thread> workers_;
};

// ---- EventLoop ----------------------------------------------------------------------------

Status EventLoop::Init() {
  epoll_.Reset(epoll_create1(EPOLL_CLOEXEC));
  wake_.Reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!epoll_ || !wake_) return SysFail("internal", "epoll/eventfd");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = MakeTag(kWake, 0);
  if (epoll_ctl(epoll_.Get(), EPOLL_CTL_ADD, wake_.Get(), &ev) != 0) {
    return SysFail("internal", "epoll_ctl");
  }
  return Ok();
}

void EventLoop::Wake() {
  uint64_t one = 1;
  ssize_t ignored = ::write(wake_.Get(), &one, sizeof(one));
  (void)ignored;
}

void EventLoop::Post(std::function<void(EventLoop&)> fn, std::function<void()> done) {
  {
    std::lock_guard lock(mu_);
    mail_.push_back({std::move(fn), std::move(done)});
  }
  Wake();
}

void EventLoop::Adopt(UniqueFd fd, ipc::PeerCredentials peer) {
  auto shared_fd = std::make_shared<UniqueFd>(std::move(fd));
  Post(
      [shared_fd, peer](EventLoop& loop) {
        uint64_t id = loop.next_conn_++;
        Connection c;
        c.fd = std::move(*shared_fd);
        c.peer = peer;
        c.reader = ipc::FrameReader(loop.s_.options.limits.max_frame_bytes);
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.u64 = MakeTag(kConn, id);
        if (epoll_ctl(loop.epoll_.Get(), EPOLL_CTL_ADD, c.fd.Get(), &ev) != 0) {
          loop.s_.connections.fetch_sub(1, std::memory_order_relaxed);
          return;
        }
        c.epoll_events = ev.events;
        loop.conns_.emplace(id, std::move(c));
      },
      nullptr);
}

void EventLoop::Complete(Completion completion) {
  {
    std::lock_guard lock(mu_);
    done_.push_back(std::move(completion));
  }
  Wake();
}

void EventLoop::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_requested_ = true;
  }
  Wake();
  if (thread_.joinable()) thread_.join();
}

void EventLoop::Run() {
  epoll_event events[64];
  while (!stopping_) {
    int n = epoll_wait(epoll_.Get(), events, 64, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      // Only a broken epoll set gets here; serving on without it would strand connections.
      std::cerr << "anvil-gateway: epoll_wait: " << std::strerror(errno) << "\n";
      std::abort();
    }
    for (int i = 0; i < n; ++i) {
      uint64_t tag = events[i].data.u64;
      uint64_t id = tag & ((1ull << 56) - 1);
      if (static_cast<Tag>(tag >> 56) == kWake) {
        HandleWake();
      } else {
        HandleConnection(id, events[i].events);
      }
    }
    EndTurn();
  }
  HandleWake();  // the workers are joined: the last completions
  EndTurn();
}

void EventLoop::EndTurn() {
  // The decisions first, then the answers: a plugin never holds a reply whose audit line is
  // not written. One write for the whole turn, and one send per connection with output.
  s_.audit->Write(audit_);
  for (uint64_t id : touched_) {
    auto it = conns_.find(id);
    if (it == conns_.end()) continue;
    it->second.touched = false;
    Flush(id, it->second);
  }
  touched_.clear();
}

void EventLoop::Touch(uint64_t id, Connection& c) {
  if (c.touched) return;
  c.touched = true;
  touched_.push_back(id);
}

void EventLoop::HandleWake() {
  uint64_t count;
  ssize_t ignored = ::read(wake_.Get(), &count, sizeof(count));
  (void)ignored;
  std::vector<Mail> mail;
  std::vector<Completion> done;
  {
    std::lock_guard lock(mu_);
    mail.swap(mail_);
    done.swap(done_);
    if (stop_requested_) stopping_ = true;
  }
  for (auto& m : mail) {
    m.fn(*this);
    if (m.done) {
      s_.audit->Write(audit_);
      m.done();
    }
  }
  for (auto& d : done) {
    Record(d.audit);
    auto it = conns_.find(d.conn_id);
    if (it == conns_.end()) continue;  // connection gone; the decision is in the audit log
    Connection& c = it->second;
    c.jobs.erase(d.request_id);
    // Replies count against the plugin's byte quota too (requests were charged on arrival).
    if (c.bound) {
      std::lock_guard lock(c.bound->quota_mu);
      c.bound->bytes.Charge(static_cast<double>(d.frame.size()));
    }
    c.out += d.frame;
    Touch(d.conn_id, c);
  }
}

void EventLoop::HandleConnection(uint64_t id, uint32_t events) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Connection& c = it->second;
  if (events & EPOLLOUT) Touch(id, c);
  if (!(events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) || !c.reading) {
    Touch(id, c);
    return;
  }
  char buffer[65536];
  for (int round = 0; round < 16 && c.reading; ++round) {
    std::optional<ipc::PeerCredentials> sender;
    ssize_t n = ipc::ReceiveWithCredentials(c.fd.Get(), buffer, sizeof(buffer), sender);
    if (n == 0) {
      CloseConnection(id, "peer closed");
      return;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      CloseConnection(id, "recv failed");
      return;
    }
    // A short read drained the socket for now (or stopped at a change of sender); epoll is
    // level-triggered and reports whatever is left, so no extra recv just to see EAGAIN.
    bool drained = static_cast<size_t>(n) < sizeof(buffer);
    if (!sender || (c.frame_sender && !(*c.frame_sender == *sender))) c.mixed_senders = true;
    c.frame_sender = sender;
    c.reader.Append(buffer, static_cast<size_t>(n));
    while (true) {
      auto frame = c.reader.Next();
      if (!frame) {
        AuditEntry audit;
        audit.plugin = c.bound ? c.bound->plugin : "";
        audit.op = "frame";
        audit.verdict = "deny";
        audit.code = frame.error().code;
        audit.reason = frame.error().message + "; connection closed";
        Record(audit);
        CloseConnection(id, "malformed frame");
        return;
      }
      if (!*frame) break;
      bool mixed = c.mixed_senders;
      // The bytes of the next frame start after this one; their sender is the current one.
      c.mixed_senders = false;
      if (mixed) {
        AuditEntry audit;
        audit.plugin = c.bound ? c.bound->plugin : "";
        audit.op = "frame";
        audit.verdict = "deny";
        audit.code = "denied";
        audit.reason = "frame bytes from more than one process; connection closed";
        Record(audit);
        CloseConnection(id, "mixed senders");
        return;
      }
      HandleFrame(id, c, **frame);
      if (conns_.find(id) == conns_.end()) return;
    }
    if (c.reader.Buffered() == 0) c.frame_sender.reset();
    if (drained) break;
  }
  Touch(id, c);
}

void EventLoop::HandleFrame(uint64_t id, Connection& c, const ipc::Frame& frame) {
  switch (frame.kind) {
    case ipc::FrameKind::kRequest: {
      auto request = ipc::DecodeRequest(frame.body);
      if (!request) {
        AuditEntry audit;
        audit.op = "frame";
        audit.verdict = "deny";
        audit.code = "invalid";
        audit.reason = request.error().message + "; connection closed";
        Record(audit);
        CloseConnection(id, "malformed request");
        return;
      }
      HandleRequest(id, c, std::move(*request));
      return;
    }
    case ipc::FrameKind::kCancel: {
      auto request_id = ipc::DecodeCancel(frame.body);
      if (!request_id) {
        CloseConnection(id, "malformed cancel");
        return;
      }
      if (auto job = c.jobs.find(*request_id); job != c.jobs.end()) {
        if (auto j = job->second.lock()) CancelJob(*j, "request cancelled");
      }
      return;
    }
    default:
      CloseConnection(id, "unexpected frame kind");
      return;
  }
}

void EventLoop::Deny(uint64_t id, Connection& c, const Request& r, const std::string& plugin,
                     std::string code, std::string reason, bool close) {
  AuditEntry audit;
  audit.plugin = plugin;
  audit.op = r.op;
  audit.request_id = r.id;
  if (!r.args.empty() && r.op != "hello") audit.target = r.args[0];
  audit.verdict = code == "busy" ? "busy" : "deny";
  audit.code = code;
  audit.reason = reason;
  Record(audit);
  Reply(id, c, Response::Error(r.id, std::move(code), std::move(reason)));
  if (close) c.close_after_flush = true;
}

void EventLoop::HandleRequest(uint64_t id, Connection& c, Request r) {
  const ipc::PeerCredentials& sender = *c.frame_sender;
  const GatewayLimits& limits = s_.options.limits;
  // The connection's own, still registered token needs no registry lookup (no shared lock,
  // no reference count traffic between loops); any other token is looked up.
  std::shared_ptr<Registration> looked_up;
  Registration* reg = nullptr;
  if (c.bound && !c.bound->revoked.load(std::memory_order_acquire) &&
      ipc::ConstantTimeEquals(c.bound->token, r.token)) {
    reg = c.bound.get();
  } else {
    {
      std::lock_guard lock(s_.reg_mu);
      looked_up = s_.FindByToken(r.token);
    }
    reg = looked_up.get();
  }
  if (reg == nullptr) {
    Deny(id, c, r, c.bound ? c.bound->plugin : "", "denied",
         c.bound ? "capability token revoked" : "unknown capability token", true);
    return;
  }
  // The kernel-attested sender must be the host the token was issued to.
  if (sender.pid != reg->pid || sender.uid != reg->uid || c.peer.uid != reg->uid) {
    Deny(id, c, r, reg->plugin, "denied",
         "token presented by pid " + std::to_string(sender.pid) + ", issued to pid " +
             std::to_string(reg->pid),
         true);
    return;
  }
  if (r.op == "hello") {
    // args: plugin id, workspace. A connection serves exactly one plugin.
    if (r.args.size() != 2) {
      Deny(id, c, r, reg->plugin, "invalid", "hello takes plugin id and workspace", true);
      return;
    }
    if (r.args[0] != reg->plugin) {
      Deny(id, c, r, reg->plugin, "denied", "token is not for plugin " + r.args[0], true);
      return;
    }
    if (r.args[1] != reg->workspace || r.args[1] != s_.options.workspace) {
      Deny(id, c, r, reg->plugin, "denied", "wrong workspace: " + r.args[1], true);
      return;
    }
    if (c.bound && c.bound.get() != reg) {
      Deny(id, c, r, reg->plugin, "denied", "connection already bound to another plugin", true);
      return;
    }
    if (!c.bound) c.bound = std::move(looked_up);
    AuditEntry audit;
    audit.plugin = reg->plugin;
    audit.op = "hello";
    audit.verdict = "allow";
    audit.request_id = r.id;
    Record(audit);
    Reply(id, c, Response{r.id, true, {s_.options.session_id}});
    return;
  }
  if (!c.bound || c.bound.get() != reg) {
    Deny(id, c, r, reg->plugin, "denied", "say hello with this token first", true);
    return;
  }
  if (c.jobs.size() >= limits.max_inflight_per_connection) {
    Deny(id, c, r, reg->plugin, "busy", "too many requests in flight on this connection", false);
    return;
  }
  uint64_t payload = 0;
  for (const auto& a : r.args) payload += a.size();
  const char* over_quota = nullptr;
  {
    std::lock_guard lock(reg->quota_mu);
    if (!reg->requests.Take(1)) {
      over_quota = "request quota exceeded";
    } else if (!reg->bytes.Take(static_cast<double>(payload))) {
      over_quota = "byte quota exceeded";
    }
  }
  if (over_quota != nullptr) {
    Deny(id, c, r, reg->plugin, "limit", over_quota, false);
    return;
  }
  const std::string& op = r.op;
  const bool cheap = op == "ping" || op == "fs.stat" || op == "fs.read" || op == "fs.list";
  if (cheap && c.out.size() - c.out_offset < limits.max_output_buffer) {
    // Read-only and short (bounded by the read/list caps, no fsync): answered right here on
    // the event loop. Two thread hand-offs (queue, completion) cost more than the operation.
    // A peer with a full output buffer goes through the queue instead, whose in-flight and
    // queue caps then apply (answers are matched by id, so order does not matter).
    AuditEntry audit;
    audit.plugin = reg->plugin;
    audit.request_id = r.id;
    audit.op = op;
    auto start = Clock::now();
    DispatchContext context{&s_.root, &limits, s_.exec, nullptr, &s_.options.exec_unavailable};
    Response response = Dispatch(context, reg->grant, r, audit);
    audit.duration_us = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count());
    Record(audit);
    std::string frame = ipc::EncodeResponse(response);
    {
      std::lock_guard lock(reg->quota_mu);
      reg->bytes.Charge(static_cast<double>(frame.size()));
    }
    c.out += frame;
    return;
  }
  auto job = std::make_shared<Job>();
  job->loop = this;
  job->conn_id = id;
  job->registration = c.bound;  // == reg
  job->request = std::move(r);
  const bool exec = job->request.op == "exec" && s_.exec != nullptr;
  const char* busy = nullptr;
  {
    std::lock_guard lock(s_.queue_mu);
    if (s_.stopping) {
      busy = "gateway is shutting down";
    } else if (s_.queue.size() + s_.exec_queue.size() >= limits.max_queued_jobs) {
      busy = "gateway is at its concurrency limit";
    } else if (exec && s_.exec_queue.size() >= s_.options.exec_limits.max_concurrent) {
      busy = "sys.exec is at its concurrency limit";
    } else {
      c.jobs[job->request.id] = job;
      (exec ? s_.exec_queue : s_.queue).push_back(job);
    }
  }
  if (busy != nullptr) {
    Request rejected = std::move(job->request);
    Deny(id, c, rejected, reg->plugin, "busy", busy, false);
    return;
  }
  (exec ? s_.exec_cv : s_.queue_cv).notify_one();
}

void EventLoop::Reply(uint64_t /*id*/, Connection& c, const Response& response) {
  c.out += ipc::EncodeResponse(response);
}

void EventLoop::Flush(uint64_t id, Connection& c) {
  while (c.out_offset < c.out.size()) {
    ssize_t n = ::send(c.fd.Get(), c.out.data() + c.out_offset, c.out.size() - c.out_offset,
                       MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      CloseConnection(id, "send failed");
      return;
    }
    c.out_offset += static_cast<size_t>(n);
  }
  if (c.out_offset == c.out.size()) {
    c.out.clear();
    c.out_offset = 0;
    if (c.close_after_flush) {
      CloseConnection(id, "closed after denial");
      return;
    }
  } else if (c.out_offset > (1u << 20)) {
    c.out.erase(0, c.out_offset);
    c.out_offset = 0;
  }
  UpdateInterest(id, c);
}

void EventLoop::UpdateInterest(uint64_t id, Connection& c) {
  // Backpressure: a peer that does not read its answers stops being read from.
  size_t pending = c.out.size() - c.out_offset;
  // Hysteresis: stop at the cap, resume once half of it has drained.
  const uint64_t cap = s_.options.limits.max_output_buffer;
  bool want_read = c.reading ? pending < cap : pending < cap / 2;
  want_read = want_read && !c.close_after_flush;
  c.reading = want_read;
  epoll_event ev{};
  uint32_t read_events = EPOLLIN | EPOLLRDHUP;
  uint32_t write_events = EPOLLOUT;
  ev.events = (want_read ? read_events : 0u) | (pending ? write_events : 0u);
  // Level-triggered, so re-registering the same mask changes nothing: after an ordinary
  // request (read, answer flushed whole) that was one wasted syscall per request.
  if (ev.events == c.epoll_events) return;
  ev.data.u64 = MakeTag(kConn, id);
  if (epoll_ctl(epoll_.Get(), EPOLL_CTL_MOD, c.fd.Get(), &ev) == 0) c.epoll_events = ev.events;
}

void EventLoop::CloseConnection(uint64_t id, const std::string& /*why*/) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  for (auto& [rid, weak] : it->second.jobs) {
    if (auto j = weak.lock()) CancelJob(*j, "connection closed");
  }
  epoll_ctl(epoll_.Get(), EPOLL_CTL_DEL, it->second.fd.Get(), nullptr);
  conns_.erase(it);
  s_.connections.fetch_sub(1, std::memory_order_relaxed);
}

void EventLoop::CloseBoundTo(const std::shared_ptr<Registration>& reg) {
  std::vector<uint64_t> bound;
  for (auto& [id, c] : conns_) {
    if (c.bound == reg) bound.push_back(id);
  }
  for (uint64_t id : bound) CloseConnection(id, "token revoked");
}

size_t EventLoop::CancelPlugin(const std::string& plugin, const std::string& reason) {
  std::string text = reason == "reload" ? "plugin reloading" : reason;
  size_t cancelled = 0;
  for (auto& [id, c] : conns_) {
    if (!c.bound || c.bound->plugin != plugin) continue;
    for (auto& [rid, weak] : c.jobs) {
      if (auto j = weak.lock()) {
        CancelJob(*j, text);
        ++cancelled;
        AuditEntry audit;
        audit.plugin = plugin;
        audit.op = j->request.op;
        audit.request_id = rid;
        audit.verdict = "cancelled";
        audit.code = "cancelled";
        audit.reason = reason == "reload" ? "cancelled_by_reload" : text;
        Record(audit);
      }
    }
  }
  return cancelled;
}

// ---- Server (main thread: accept, control channel, host pidfds) ---------------------------

Status Server::Start(const std::string& socket_path) {
  epoll_.Reset(epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_) return SysFail("internal", "epoll");
  spare_fd_.Reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  listen_.Reset(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!listen_) return SysFail("internal", "socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) return Fail("invalid", "socket path too long");
  std::strcpy(addr.sun_path, socket_path.c_str());
  ::unlink(socket_path.c_str());
  // umask makes the socket 0600 from the moment it exists; chmod is the belt to those braces.
  mode_t old = umask(0177);
  int rc = bind(listen_.Get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  umask(old);
  if (rc != 0) return SysFail("internal", "bind " + socket_path);
  if (chmod(socket_path.c_str(), 0600) != 0) return SysFail("internal", "chmod socket");
  if (listen(listen_.Get(), 128) != 0) return SysFail("internal", "listen");
  if (auto s = ipc::EnablePassCredentials(listen_.Get()); !s) return s;
  auto add = [&](int fd, uint64_t tag) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag;
    return epoll_ctl(epoll_.Get(), EPOLL_CTL_ADD, fd, &ev);
  };
  if (add(listen_.Get(), MakeTag(kListen, 0)) || add(s_.options.control_fd, MakeTag(kControl, 0))) {
    return SysFail("internal", "epoll_ctl");
  }
  // The loops' descriptors exist before hardening and before the caller counts them; their
  // threads start in Loop().
  for (uint32_t i = 0; i < std::max<uint32_t>(1, s_.options.limits.event_loops); ++i) {
    auto loop = std::make_unique<EventLoop>(s_, loops_.size());
    if (auto st = loop->Init(); !st) return st;
    loops_.push_back(std::move(loop));
  }
  return Ok();
}

void Server::Worker(bool exec) {
  DispatchContext context{&s_.root, &s_.options.limits, s_.exec, nullptr,
                          &s_.options.exec_unavailable};
  context.net = s_.net.get();
  auto& queue = exec ? s_.exec_queue : s_.queue;
  auto& cv = exec ? s_.exec_cv : s_.queue_cv;
  while (true) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(s_.queue_mu);
      cv.wait(lock, [&] { return s_.stopping || !queue.empty(); });
      if (s_.stopping && queue.empty()) return;
      job = std::move(queue.front());
      queue.pop_front();
    }
    context.cancelled = &job->cancelled;
    Completion done{job->conn_id, job->request.id, {}, {}};
    AuditEntry& audit = done.audit;
    audit.plugin = job->registration->plugin;
    audit.request_id = job->request.id;
    audit.op = job->request.op;
    Response response;
    auto start = Clock::now();
    if (job->cancelled.load(std::memory_order_acquire)) {
      response = Response::Error(job->request.id, "cancelled", job->cancel_reason);
      audit.verdict = "cancelled";
      audit.code = "cancelled";
      audit.reason = job->cancel_reason;
      if (!job->request.args.empty()) audit.target = job->request.args[0];
    } else {
      response = Dispatch(context, job->registration->grant, job->request, audit);
      if (job->cancelled.load(std::memory_order_acquire)) {
        // Finished anyway, but the caller was told it is cancelled: never answer twice.
        response = Response::Error(job->request.id, "cancelled", job->cancel_reason);
        audit.verdict = "cancelled";
        audit.reason = job->cancel_reason;
      }
    }
    audit.duration_us = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count());
    done.frame = ipc::EncodeResponse(response);
    job->loop->Complete(std::move(done));
  }
}

void Server::OnEveryLoop(const std::function<void(EventLoop&)>& fn) {
  std::mutex mu;
  std::condition_variable cv;
  size_t remaining = loops_.size();
  for (auto& loop : loops_) {
    loop->Post(fn, [&] {
      std::lock_guard lock(mu);
      if (--remaining == 0) cv.notify_one();
    });
  }
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return remaining == 0; });
}

int Server::Loop() {
  // Loops and workers start only now, after the caller hardened this thread: Landlock and
  // seccomp are inherited by threads created later, never applied to threads that already exist.
  for (auto& loop : loops_) loop->Start();
  for (uint32_t i = 0; i < std::max<uint32_t>(1, s_.options.limits.worker_threads); ++i) {
    workers_.emplace_back([this] { Worker(false); });
  }
  if (s_.exec) {
    for (uint32_t i = 0; i < std::max<uint32_t>(1, s_.options.exec_limits.max_concurrent); ++i) {
      workers_.emplace_back([this] { Worker(true); });
    }
  }
  epoll_event events[64];
  while (running_) {
    int n = epoll_wait(epoll_.Get(), events, 64, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < n && running_; ++i) {
      uint64_t tag = events[i].data.u64;
      uint64_t id = tag & ((1ull << 56) - 1);
      switch (static_cast<Tag>(tag >> 56)) {
        case kListen:
          HandleAccept();
          break;
        case kControl:
          HandleControl();
          break;
        case kPidfd:
          HandlePidfd(id);
          break;
        default:
          break;
      }
    }
    s_.audit->Write(audit_);
  }
  {
    std::lock_guard lock(s_.queue_mu);
    s_.stopping = true;
  }
  s_.queue_cv.notify_all();
  s_.exec_cv.notify_all();
  // Workers first: what they finish goes back to the loops, which answer it and write its audit
  // line; then the loops.
  for (auto& t : workers_) t.join();
  for (auto& loop : loops_) loop->Stop();
  s_.audit->Write(audit_);
  return 0;
}

void Server::HandleAccept() {
  while (true) {
    int fd = accept4(listen_.Get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0 && (errno == EMFILE || errno == ENFILE) && spare_fd_) {
      spare_fd_.Reset();
      UniqueFd refused(accept4(listen_.Get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (refused) {
        std::string busy =
            ipc::EncodeResponse(Response::Error(0, "busy", "gateway is out of file descriptors"));
        ssize_t ignored = ::send(refused.Get(), busy.data(), busy.size(), MSG_NOSIGNAL);
        (void)ignored;
        AuditEntry audit;
        audit.op = "connect";
        audit.verdict = "busy";
        audit.code = "busy";
        audit.reason = "out of file descriptors";
        Record(audit);
      }
      const bool drained = !refused;  // EMFILE comes before the backlog is looked at
      refused.Reset();
      spare_fd_.Reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
      if (drained) return;
      continue;
    }
    if (fd < 0) return;
    UniqueFd conn_fd(fd);
    auto peer = ipc::GetPeerCredentials(fd);
    AuditEntry audit;
    audit.op = "connect";
    if (!peer || peer->uid != geteuid()) {
      // The 0700 directory already keeps other users out; this is the second check.
      audit.verdict = "deny";
      audit.code = "denied";
      audit.reason = peer ? "peer uid " + std::to_string(peer->uid) + " is not the session's user"
                          : "no peer credentials";
      Record(audit);
      continue;
    }
    if (s_.connections.load(std::memory_order_relaxed) >= s_.options.limits.max_connections) {
      std::string busy = ipc::EncodeResponse(Response::Error(0, "busy", "too many connections"));
      ssize_t ignored = ::send(fd, busy.data(), busy.size(), MSG_NOSIGNAL);
      (void)ignored;
      audit.verdict = "busy";
      audit.code = "busy";
      audit.reason = "too many connections";
      Record(audit);
      continue;
    }
    if (!ipc::EnablePassCredentials(fd)) continue;
    s_.connections.fetch_add(1, std::memory_order_relaxed);
    // Round robin: the loops take turns, so clients spread over the cores.
    EventLoop& loop = *loops_[next_loop_++ % loops_.size()];
    loop.Adopt(std::move(conn_fd), *peer);
  }
}

void Server::ControlReply(const nlohmann::json& reply) {
  std::string frame = ipc::EncodeControl(reply.dump());
  size_t off = 0;
  while (off < frame.size()) {
    ssize_t n = ::send(s_.options.control_fd, frame.data() + off, frame.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        pollfd p{s_.options.control_fd, POLLOUT, 0};
        poll(&p, 1, 1000);
        continue;
      }
      running_ = false;
      return;
    }
    off += static_cast<size_t>(n);
  }
}

void Server::HandleControl() {
  char buffer[65536];
  ssize_t n = ::recv(s_.options.control_fd, buffer, sizeof(buffer), MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    running_ = false;  // the trusted side is gone: so is the session
    return;
  }
  if (n < 0) return;
  control_reader_.Append(buffer, static_cast<size_t>(n));
  while (true) {
    auto frame = control_reader_.Next();
    if (!frame || !*frame || (*frame)->kind != ipc::FrameKind::kControl) {
      if (!frame || (*frame && (*frame)->kind != ipc::FrameKind::kControl)) {
        ControlReply({{"ok", false}, {"error", "invalid: malformed control frame"}});
        running_ = false;
      }
      return;
    }
    nlohmann::json msg = nlohmann::json::parse((*frame)->body, nullptr, false);
    nlohmann::json reply;
    std::string op = msg.is_object() && msg.contains("op") && msg["op"].is_string()
                         ? msg["op"].get<std::string>()
                         : "";
    if (op == "register") {
      reply = ControlRegister(msg);
    } else if (op == "revoke") {
      reply = ControlRevoke(msg);
    } else if (op == "cancel") {
      reply = ControlCancel(msg);
    } else if (op == "status") {
      size_t queued;
      {
        std::lock_guard lock(s_.queue_mu);
        queued = s_.queue.size();
      }
      size_t registrations;
      {
        std::lock_guard lock(s_.reg_mu);
        registrations = s_.registrations.size();
      }
      // Connections per event loop (each loop writes its own slot).
      std::vector<size_t> per_loop(loops_.size());
      OnEveryLoop([&](EventLoop& loop) { per_loop[loop.index()] = loop.ConnectionCount(); });
      reply = {{"ok", true},
               {"connections", s_.connections.load(std::memory_order_relaxed)},
               {"registrations", registrations},
               {"queued", queued},
               {"loop_connections", per_loop}};
    } else if (op == "shutdown") {
      reply = {{"ok", true}};
      running_ = false;
    } else {
      reply = {{"ok", false}, {"error", "invalid: unknown control op '" + op + "'"}};
    }
    if (msg.is_object() && msg.contains("seq")) reply["seq"] = msg["seq"];
    s_.audit->Write(audit_);
    ControlReply(reply);
  }
}

nlohmann::json Server::ControlRegister(const nlohmann::json& msg) {
  auto fail = [](const std::string& why) {
    return nlohmann::json{{"ok", false}, {"error", "invalid: " + why}};
  };
  if (!msg.contains("token") || !msg["token"].is_string() || !msg.contains("plugin") ||
      !msg["plugin"].is_string() || !msg.contains("pid") || !msg["pid"].is_number_integer() ||
      !msg.contains("uid") || !msg["uid"].is_number_integer() || !msg.contains("grant")) {
    return fail("register needs token, plugin, pid, uid, grant");
  }
  auto token = ipc::CapabilityToken::FromHex(msg["token"].get<std::string>());
  if (!token) return fail(token.error().message);
  auto grant = GrantFromJson(msg["grant"]);
  if (!grant) return fail(grant.error().message);
  std::string workspace = msg.value("workspace", s_.options.workspace);
  if (workspace != s_.options.workspace) {
    return nlohmann::json{{"ok", false}, {"error", "denied: wrong workspace: " + workspace}};
  }
  {
    std::lock_guard lock(s_.reg_mu);
    if (s_.FindByToken(token->bytes())) return fail("token already registered");
  }
  auto reg = std::make_shared<Registration>();
  reg->token = token->bytes();
  reg->plugin = msg["plugin"].get<std::string>();
  reg->pid = msg["pid"].get<pid_t>();
  reg->uid = msg["uid"].get<uid_t>();
  reg->workspace = workspace;
  reg->grant = std::move(*grant);
  reg->requests = TokenBucket(s_.options.limits.plugin_requests_per_second);
  reg->bytes = TokenBucket(s_.options.limits.plugin_bytes_per_second);
  // A pidfd, not the number: when the host exits its token dies with it, and a recycled pid
  // can never inherit it.
  long pidfd = syscall(SYS_pidfd_open, reg->pid, 0);
  if (pidfd < 0) return fail("no such host process " + std::to_string(reg->pid));
  reg->pidfd.Reset(static_cast<int>(pidfd));
  uint64_t index = next_reg_++;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = MakeTag(kPidfd, index);
  epoll_ctl(epoll_.Get(), EPOLL_CTL_ADD, reg->pidfd.Get(), &ev);
  AuditEntry audit;
  audit.plugin = reg->plugin;
  audit.op = "register";
  audit.verdict = "allow";
  audit.target = "pid " + std::to_string(reg->pid);
  Record(audit);
  std::lock_guard lock(s_.reg_mu);
  s_.registrations.emplace(index, std::move(reg));
  return {{"ok", true}};
}

void Server::RevokeRegistration(const std::shared_ptr<Registration>& reg, const std::string& why) {
  AuditEntry audit;
  audit.plugin = reg->plugin;
  audit.op = "revoke";
  audit.verdict = "allow";
  audit.reason = why;
  Record(audit);
  {
    std::lock_guard lock(s_.reg_mu);
    reg->revoked.store(true, std::memory_order_release);
    for (auto it = s_.registrations.begin(); it != s_.registrations.end();) {
      if (it->second == reg) {
        epoll_ctl(epoll_.Get(), EPOLL_CTL_DEL, reg->pidfd.Get(), nullptr);
        it = s_.registrations.erase(it);
      } else {
        ++it;
      }
    }
  }
  // From here no loop serves the token again; connections bound to it are closed on every loop
  // before the control channel hears that the revocation is done.
  OnEveryLoop([&reg](EventLoop& loop) { loop.CloseBoundTo(reg); });
}

nlohmann::json Server::ControlRevoke(const nlohmann::json& msg) {
  std::vector<std::shared_ptr<Registration>> victims;
  if (msg.contains("token") && msg["token"].is_string()) {
    auto token = ipc::CapabilityToken::FromHex(msg["token"].get<std::string>());
    if (!token) return {{"ok", false}, {"error", "invalid: " + token.error().message}};
    std::lock_guard lock(s_.reg_mu);
    if (auto reg = s_.FindByToken(token->bytes())) victims.push_back(reg);
  } else if (msg.contains("plugin") && msg["plugin"].is_string()) {
    std::lock_guard lock(s_.reg_mu);
    for (auto& [i, reg] : s_.registrations) {
      if (reg->plugin == msg["plugin"].get<std::string>()) victims.push_back(reg);
    }
  } else {
    return {{"ok", false}, {"error", "invalid: revoke needs token or plugin"}};
  }
  for (auto& reg : victims) RevokeRegistration(reg, msg.value("reason", "revoked"));
  return {{"ok", true}, {"revoked", victims.size()}};
}

nlohmann::json Server::ControlCancel(const nlohmann::json& msg) {
  if (!msg.contains("plugin") || !msg["plugin"].is_string()) {
    return {{"ok", false}, {"error", "invalid: cancel needs plugin"}};
  }
  std::string plugin = msg["plugin"].get<std::string>();
  std::string reason = msg.value("reason", "cancelled");
  // Each loop cancels the jobs of its own connections (it is their only writer).
  std::atomic<size_t> cancelled{0};
  OnEveryLoop([&](EventLoop& loop) {
    cancelled.fetch_add(loop.CancelPlugin(plugin, reason), std::memory_order_relaxed);
  });
  return {{"ok", true}, {"cancelled", cancelled.load()}};
}

void Server::HandlePidfd(uint64_t index) {
  std::shared_ptr<Registration> reg;
  {
    std::lock_guard lock(s_.reg_mu);
    auto it = s_.registrations.find(index);
    if (it == s_.registrations.end()) return;
    reg = it->second;
  }
  RevokeRegistration(reg, "host exited");
}

Result<std::string> PrepareRuntimeDir(GatewayOptions& options) {
  if (options.runtime_dir.empty()) {
    const char* xdg = std::getenv("XDG_RUNTIME_DIR");
    std::string base;
    if (xdg && *xdg == '/') {
      base = std::string(xdg) + "/anvil";
    } else {
      base = "/tmp/anvil-" + std::to_string(geteuid());
    }
    if (::mkdir(base.c_str(), 0700) != 0 && errno != EEXIST) return SysFail("io", "mkdir " + base);
    struct stat st {};
    // A pre-made /tmp/anvil-UID owned by someone else (or group/world-accessible) could be a
    // trap: refuse to use it.
    if (::lstat(base.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077) != 0) {
      return Fail("denied", "runtime base " + base + " is not a private directory of this user");
    }
    options.runtime_dir = base + "/" + options.session_id;
  }
  if (::mkdir(options.runtime_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return SysFail("io", "mkdir " + options.runtime_dir);
  }
  struct stat st {};
  if (::lstat(options.runtime_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
      st.st_uid != geteuid()) {
    return Fail("denied", "runtime dir " + options.runtime_dir + " is not ours");
  }
  if (::chmod(options.runtime_dir.c_str(), 0700) != 0) return SysFail("io", "chmod runtime dir");
  return options.runtime_dir + "/gateway.sock";
}

}  // namespace

int RunGateway(const GatewayOptions& input) {
  GatewayOptions options = input;
  signal(SIGPIPE, SIG_IGN);
  auto fail = [](const Error& e) {
    std::cerr << "anvil-gateway: " << e.ToString() << "\n";
    return 1;
  };
  if (options.control_fd < 0) return fail(Error{"invalid", "--control-fd is required", 0});
  if (options.session_id.empty()) {
    auto t = ipc::CapabilityToken::Generate();
    if (!t) return fail(t.error());
    options.session_id = t->Hex().substr(0, 16);
  }
  WorkspaceOptions ws_options;
  ws_options.no_symlinks = options.no_symlinks;
  ws_options.allow_hardlinked_reads = options.allow_hardlinked_reads;
  ws_options.max_read_bytes = options.limits.max_read_bytes;
  ws_options.max_write_bytes = options.limits.max_write_bytes;
  ws_options.max_list_entries = options.limits.max_list_entries;
  auto root = WorkspaceRoot::Open(options.workspace, ws_options);
  if (!root) return fail(root.error());
  options.workspace = root->path();  // canonical, pinned
  auto socket_path = PrepareRuntimeDir(options);
  if (!socket_path) return fail(socket_path.error());
  if (options.audit_log.empty()) options.audit_log = options.runtime_dir + "/audit.jsonl";
  auto audit = AuditLog::Open(options.audit_log, options.session_id);
  if (!audit) return fail(audit.error());
  std::unique_ptr<AuditLog> audit_owner(*audit);
  // The exec broker is forked now, while this process has one thread and no Landlock domain:
  // the runner it starts needs namespaces and mounts that the hardened gateway may not make.
  std::unique_ptr<ExecBroker> exec;
  if (!options.exec_runner.empty()) {
    ExecBrokerConfig config;
    config.workspace = options.workspace;
    config.runner_path = options.exec_runner;
    config.limits = options.exec_limits;
    config.fail_layer_for_testing = options.exec_fail_layer_for_testing;
    auto broker = ExecBroker::Start(config);
    if (broker) {
      exec = std::move(*broker);
    } else {
      // The gateway still serves sys.fs; every sys.exec is refused with this reason.
      options.exec_unavailable = broker.error().ToString();
      std::cerr << "anvil-gateway: sys.exec unavailable: " << options.exec_unavailable << "\n";
    }
  } else {
    options.exec_unavailable = "disabled for this session (--no-exec)";
  }
  if (options.limits.event_loops == 0) {
    // One loop per two CPUs, at most four: the plugin hosts run on the same cores, and on two
    // cores a second loop measured no gain (bench/README.md). Each loop is a thread and two
    // descriptors.
    options.limits.event_loops =
        std::clamp<uint32_t>(std::thread::hardware_concurrency() / 2, 1, 4);
  }
  // A fetch holds a worker for up to its time caps: keep one worker free of fetches, so slow
  // servers cannot stall every other request of the session.
  const uint32_t workers = std::max<uint32_t>(1, options.limits.worker_threads);
  options.net.max_fetches_per_session =
      std::max<uint32_t>(1, std::min(options.net.max_fetches_per_session, workers - 1));
  // Before hardening: reads the --unsafe-test-ca file, initialises libcurl single-threaded.
  auto net = NetFetchService::Create(options.net);
  if (!net) return fail(net.error());
  Server server(options, std::move(*root), audit_owner.get(), exec.get(), std::move(*net));
  if (auto s = server.Start(*socket_path); !s) return fail(s.error());
  if (options.harden) {
    if (auto s = HardenGateway(options.workspace, options.runtime_dir, options.audit_log); !s) {
      ::unlink(socket_path->c_str());
      return fail(s.error());
    }
  }
  nlohmann::json ready = {{"event", "ready"},
                          {"socket", *socket_path},
                          {"session", options.session_id},
                          {"workspace", options.workspace},
                          {"audit_log", options.audit_log},
                          {"hardened", options.harden}};
  std::string frame = ipc::EncodeControl(ready.dump());
  if (::send(options.control_fd, frame.data(), frame.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(frame.size())) {
    ::unlink(socket_path->c_str());
    return fail(Error{"internal", "control channel closed before ready", errno});
  }
  int status = server.Loop();
  ::unlink(socket_path->c_str());
  ::rmdir(options.runtime_dir.c_str());
  return status;
}

}  // namespace anvil::gateway
