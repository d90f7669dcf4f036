#include "gateway/gateway.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "fs/exec_read_plan.h"
#include "fs/pending_writes.h"
#include "fs/workspace_path.h"
#include "fs/workspace_root.h"
#include "gateway/audit_log.h"
#include "gateway/dispatch.h"
#include "gateway/exec_broker.h"
#include "gateway/self_hardening.h"
#include "ipc/capability_token.h"
#include "ipc/frame.h"
#include "ipc/peer_credentials.h"
#include "policy/display_text.h"
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
  TokenBucket requests{0};
  TokenBucket bytes{0};
};

struct Job {
  uint64_t conn_id;
  Request request;
  std::shared_ptr<const Registration> registration;
  std::atomic<bool> cancelled{false};
  std::string cancel_reason;  // written before `cancelled` is set
  Clock::time_point queued = Clock::now();
};

struct Completion {
  uint64_t conn_id;
  uint64_t request_id;
  std::string frame;
};

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

enum Tag : uint64_t { kListen = 1, kControl = 2, kWake = 3, kConn = 4, kPidfd = 5 };
uint64_t MakeTag(Tag tag, uint64_t id) { return (static_cast<uint64_t>(tag) << 56) | id; }

class Server {
 public:
  Server(const GatewayOptions& options, WorkspaceRoot root, AuditLog* audit, const ExecBroker* exec,
         std::unique_ptr<NetFetchService> net)
      : options_(options),
        root_(std::move(root)),
        audit_(audit),
        exec_(exec),
        read_plans_(root_),
        net_(std::move(net)) {}

  Status Start(const std::string& socket_path);
  int Loop();

 private:
  void Worker(bool exec);
  void HandleAccept();
  // Whether a new connection from `peer` may be admitted; may close the oldest connection that
  // never said hello to make room for the trusted side. Fills `why` when it may not.
  bool Admit(const ipc::PeerCredentials& peer, std::string& why);
  // Closes connections that did not say hello in time; returns the epoll timeout (ms, -1 none)
  // until the next such deadline.
  int ExpireHelloDeadlines();
  void HandleControl();
  void HandleConnection(uint64_t id, uint32_t events);
  void HandleFrame(uint64_t id, Connection& c, const ipc::Frame& frame);
  void HandleRequest(uint64_t id, Connection& c, Request request);
  void HandleWake();
  void HandlePidfd(uint64_t reg_index);
  void Reply(Connection& c, const Response& response);
  void Deny(Connection& c, const Request& r, const std::string& plugin, std::string code,
            std::string reason, bool close);
  void Flush(uint64_t id, Connection& c);
  void CloseConnection(uint64_t id, const std::string& why);
  void UpdateInterest(uint64_t id, Connection& c);
  void ControlReply(const nlohmann::json& reply);
  nlohmann::json ControlRegister(const nlohmann::json& msg);
  nlohmann::json ControlRevoke(const nlohmann::json& msg);
  nlohmann::json ControlCancel(const nlohmann::json& msg);
  void RevokeRegistration(const std::shared_ptr<Registration>& reg, const std::string& why);
  std::shared_ptr<Registration> FindByToken(std::string_view token);

  GatewayOptions options_;
  WorkspaceRoot root_;
  AuditLog* audit_;
  const ExecBroker* exec_;      // null: sys.exec unavailable in this gateway
  ExecReadPlanner read_plans_;  // what of the workspace a sys.exec tool sees (per call, cached)
  std::unique_ptr<NetFetchService> net_;
  UniqueFd epoll_, listen_, wake_;
  // Held open so that, out of file descriptors (EMFILE), the gateway can still accept a pending
  // connection to tell it why and close it, instead of leaving it unanswered in the backlog while
  // the level-triggered listening socket spins the loop.
  UniqueFd spare_fd_;
  ipc::FrameReader control_reader_;
  std::map<uint64_t, Connection> conns_;
  uint64_t next_conn_ = 1;
  // Connections that have not said hello, oldest first (ids; bound or closed ones are skipped).
  std::deque<uint64_t> awaiting_hello_;
  // Refused connections are audited at this rate at most (a flood must not fill the disk).
  TokenBucket refusal_audit_{20};
  uint64_t refusals_unaudited_ = 0;
  std::map<uint64_t, std::shared_ptr<Registration>> registrations_;  // by index
  uint64_t next_reg_ = 1;
  bool running_ = true;

  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  // sys.exec calls last as long as the tool runs: their own workers, so that a slow `rg` never
  // holds up sys.fs.
  std::condition_variable exec_cv_;
  std::deque<std::shared_ptr<Job>> exec_queue_;
  bool stopping_ = false;
  std::mutex done_mu_;
  std::vector<Completion> done_;
  std::vector<std::thread> workers_;
  size_t workers_running_ = 0;  // under queue_mu_; Loop waits for all before serving
  std::condition_variable workers_cv_;
};

Status Server::Start(const std::string& socket_path) {
  epoll_.Reset(epoll_create1(EPOLL_CLOEXEC));
  wake_.Reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!epoll_ || !wake_) return SysFail("internal", "epoll/eventfd");
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
  if (add(listen_.Get(), MakeTag(kListen, 0)) || add(options_.control_fd, MakeTag(kControl, 0)) ||
      add(wake_.Get(), MakeTag(kWake, 0))) {
    return SysFail("internal", "epoll_ctl");
  }
  return Ok();
}

void Server::Worker(bool exec) {
  DispatchContext context{&root_, &options_.limits, exec_, nullptr, &options_.exec_unavailable};
  context.net = net_.get();
  context.read_plans = &read_plans_;
  auto& queue = exec ? exec_queue_ : queue_;
  auto& cv = exec ? exec_cv_ : queue_cv_;
  {
    std::lock_guard lock(queue_mu_);
    ++workers_running_;
  }
  workers_cv_.notify_all();
  while (true) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(queue_mu_);
      cv.wait(lock, [&] { return stopping_ || !queue.empty(); });
      if (stopping_ && queue.empty()) return;
      job = std::move(queue.front());
      queue.pop_front();
    }
    context.cancelled = &job->cancelled;
    AuditEntry audit;
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
    audit_->Record(audit);
    {
      std::lock_guard lock(done_mu_);
      done_.push_back({job->conn_id, job->request.id, ipc::EncodeResponse(response)});
    }
    uint64_t one = 1;
    ssize_t ignored = ::write(wake_.Get(), &one, sizeof(one));
    (void)ignored;
  }
}

int Server::Loop() {
  // Workers start only now, after the caller hardened this thread: Landlock and seccomp are
  // inherited by threads created later, never applied to threads that already exist.
  for (uint32_t i = 0; i < std::max<uint32_t>(1, options_.limits.worker_threads); ++i) {
    workers_.emplace_back([this] { Worker(false); });
  }
  if (exec_) {
    for (uint32_t i = 0; i < std::max<uint32_t>(1, options_.exec_limits.max_concurrent); ++i) {
      workers_.emplace_back([this] { Worker(true); });
    }
  }
  // Serve only once every worker runs: a worker's start-up then never meets what serving can
  // bring (the file-descriptor limit reached, which sanitizer runtimes need a pipe to survive).
  {
    std::unique_lock lock(queue_mu_);
    workers_cv_.wait(lock, [this] { return workers_running_ == workers_.size(); });
  }
  epoll_event events[64];
  while (running_) {
    int n = epoll_wait(epoll_.Get(), events, 64, ExpireHelloDeadlines());
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
        case kWake:
          HandleWake();
          break;
        case kConn:
          HandleConnection(id, events[i].events);
          break;
        case kPidfd:
          HandlePidfd(id);
          break;
      }
    }
    audit_->Flush();
  }
  {
    std::lock_guard lock(queue_mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  exec_cv_.notify_all();
  for (auto& t : workers_) t.join();
  audit_->Flush();
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
        audit_->Record(audit);
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
      audit_->Record(audit);
      continue;
    }
    if (std::string why; !Admit(*peer, why)) {
      std::string busy = ipc::EncodeResponse(Response::Error(0, "busy", why));
      ssize_t ignored = ::send(fd, busy.data(), busy.size(), MSG_NOSIGNAL);
      (void)ignored;
      if (refusal_audit_.Take(1)) {
        audit.verdict = "busy";
        audit.code = "busy";
        audit.target = "pid " + std::to_string(peer->pid);
        audit.reason = why;
        if (refusals_unaudited_ > 0) {
          audit.reason += " (and " + std::to_string(refusals_unaudited_) +
                          " more refused connections not logged)";
          refusals_unaudited_ = 0;
        }
        audit_->Record(audit);
      } else {
        ++refusals_unaudited_;
      }
      continue;
    }
    if (!ipc::EnablePassCredentials(fd)) continue;
    uint64_t id = next_conn_++;
    Connection c;
    c.fd = std::move(conn_fd);
    c.peer = *peer;
    c.from_trusted_side = peer->pid == options_.trusted_pid;
    c.hello_deadline = Clock::now() + std::chrono::milliseconds(
                                          std::max<uint32_t>(1, options_.limits.hello_timeout_ms));
    c.reader = ipc::FrameReader(options_.limits.max_frame_bytes);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = MakeTag(kConn, id);
    if (epoll_ctl(epoll_.Get(), EPOLL_CTL_ADD, c.fd.Get(), &ev) != 0) continue;
    c.epoll_events = ev.events;
    conns_.emplace(id, std::move(c));
    awaiting_hello_.push_back(id);
  }
}

bool Server::Admit(const ipc::PeerCredentials& peer, std::string& why) {
  const GatewayLimits& limits = options_.limits;
  const bool trusted = peer.pid == options_.trusted_pid;
  if (!trusted) {
    size_t from_peer = 0, from_others = 0;
    for (const auto& [id, c] : conns_) {
      if (c.bound || c.from_trusted_side) continue;
      ++from_others;
      if (c.peer.pid == peer.pid) ++from_peer;
    }
    if (from_peer >= limits.max_unbound_per_peer) {
      why =
          "too many connections from pid " + std::to_string(peer.pid) + " that have not said hello";
      return false;
    }
    if (from_others >= limits.max_unbound_others) {
      why = "too many connections that have not said hello";
      return false;
    }
  }
  if (conns_.size() < limits.max_connections) return true;
  if (trusted) {
    // Every slot is taken: the trusted side is starting a host, and a connection that never
    // said hello (the oldest) is what gives way. A registered host's connection never does.
    while (!awaiting_hello_.empty()) {
      const uint64_t oldest = awaiting_hello_.front();
      awaiting_hello_.pop_front();
      auto it = conns_.find(oldest);
      if (it == conns_.end() || it->second.bound) continue;
      AuditEntry audit;
      audit.op = "connect";
      audit.verdict = "busy";
      audit.code = "busy";
      audit.target = "pid " + std::to_string(it->second.peer.pid);
      audit.reason = "closed without hello: every connection slot was taken";
      audit_->Record(audit);
      CloseConnection(oldest, "evicted");
      return true;
    }
  }
  why = "too many connections";
  return false;
}

int Server::ExpireHelloDeadlines() {
  const auto now = Clock::now();
  while (!awaiting_hello_.empty()) {
    auto it = conns_.find(awaiting_hello_.front());
    if (it == conns_.end() || it->second.bound) {
      awaiting_hello_.pop_front();
      continue;
    }
    if (it->second.hello_deadline > now) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(it->second.hello_deadline - now);
      return static_cast<int>(std::min<int64_t>(left.count(), 60000));
    }
    AuditEntry audit;
    audit.op = "connect";
    audit.verdict = "deny";
    audit.code = "timeout";
    audit.target = "pid " + std::to_string(it->second.peer.pid);
    audit.reason = "no hello within " + std::to_string(options_.limits.hello_timeout_ms) + " ms";
    audit_->Record(audit);
    awaiting_hello_.pop_front();
    CloseConnection(it->first, "no hello");
    audit_->Flush();
  }
  return -1;
}

void Server::HandleConnection(uint64_t id, uint32_t events) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Connection& c = it->second;
  if (events & EPOLLOUT) {
    Flush(id, c);
    if (conns_.find(id) == conns_.end()) return;
  }
  if (!(events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) || !c.reading) {
    UpdateInterest(id, c);
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
        audit_->Record(audit);
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
        audit_->Record(audit);
        CloseConnection(id, "mixed senders");
        return;
      }
      HandleFrame(id, c, **frame);
      if (conns_.find(id) == conns_.end()) return;
    }
    if (c.reader.Buffered() == 0) c.frame_sender.reset();
    if (drained) break;
  }
  Flush(id, c);
}

void Server::HandleFrame(uint64_t id, Connection& c, const ipc::Frame& frame) {
  switch (frame.kind) {
    case ipc::FrameKind::kRequest: {
      auto request = ipc::DecodeRequest(frame.body);
      if (!request) {
        AuditEntry audit;
        audit.op = "frame";
        audit.verdict = "deny";
        audit.code = "invalid";
        audit.reason = request.error().message + "; connection closed";
        audit_->Record(audit);
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
        if (auto j = job->second.lock()) {
          j->cancel_reason = "request cancelled";
          j->cancelled.store(true, std::memory_order_release);
        }
      }
      return;
    }
    default:
      CloseConnection(id, "unexpected frame kind");
      return;
  }
}

std::shared_ptr<Registration> Server::FindByToken(std::string_view token) {
  std::shared_ptr<Registration> found;
  // Visit every registration whatever matches, so timing says nothing about which did.
  for (auto& [index, reg] : registrations_) {
    if (ipc::ConstantTimeEquals(reg->token, token)) found = reg;
  }
  return found;
}

void Server::Deny(Connection& c, const Request& r, const std::string& plugin, std::string code,
                  std::string reason, bool close) {
  AuditEntry audit;
  audit.plugin = plugin;
  audit.op = r.op;
  audit.request_id = r.id;
  if (!r.args.empty() && r.op != "hello") audit.target = r.args[0];
  audit.verdict = code == "busy" ? "busy" : "deny";
  audit.code = code;
  audit.reason = reason;
  audit_->Record(audit);
  Reply(c, Response::Error(r.id, std::move(code), std::move(reason)));
  if (close) c.close_after_flush = true;
}

void Server::HandleRequest(uint64_t id, Connection& c, Request r) {
  const ipc::PeerCredentials& sender = *c.frame_sender;
  auto reg = FindByToken(r.token);
  std::string claimed = c.bound ? c.bound->plugin : "";
  if (!reg) {
    Deny(c, r, claimed, "denied", c.bound ? "capability token revoked" : "unknown capability token",
         true);
    return;
  }
  // The kernel-attested sender must be the host the token was issued to.
  if (sender.pid != reg->pid || sender.uid != reg->uid || c.peer.uid != reg->uid) {
    Deny(c, r, reg->plugin, "denied",
         "token presented by pid " + std::to_string(sender.pid) + ", issued to pid " +
             std::to_string(reg->pid),
         true);
    return;
  }
  if (r.op == "hello") {
    // args: plugin id, workspace. A connection serves exactly one plugin.
    if (r.args.size() != 2) {
      Deny(c, r, reg->plugin, "invalid", "hello takes plugin id and workspace", true);
      return;
    }
    if (r.args[0] != reg->plugin) {
      Deny(c, r, reg->plugin, "denied", "token is not for plugin " + r.args[0], true);
      return;
    }
    if (r.args[1] != reg->workspace || r.args[1] != options_.workspace) {
      Deny(c, r, reg->plugin, "denied", "wrong workspace: " + r.args[1], true);
      return;
    }
    if (c.bound && c.bound != reg) {
      Deny(c, r, reg->plugin, "denied", "connection already bound to another plugin", true);
      return;
    }
    c.bound = reg;
    AuditEntry audit;
    audit.plugin = reg->plugin;
    audit.op = "hello";
    audit.verdict = "allow";
    audit.request_id = r.id;
    audit_->Record(audit);
    // [session id, frame cap]: the host checks its requests against the cap before sending.
    Reply(c,
          Response{
              r.id, true, {options_.session_id, std::to_string(options_.limits.max_frame_bytes)}});
    return;
  }
  if (!c.bound || c.bound != reg) {
    Deny(c, r, reg->plugin, "denied", "say hello with this token first", true);
    return;
  }
  if (c.jobs.size() >= options_.limits.max_inflight_per_connection) {
    Deny(c, r, reg->plugin, "busy", "too many requests in flight on this connection", false);
    return;
  }
  if (!reg->requests.Take(1)) {
    Deny(c, r, reg->plugin, "limit", "request quota exceeded", false);
    return;
  }
  uint64_t payload = 0;
  for (const auto& a : r.args) payload += a.size();
  if (!reg->bytes.Take(static_cast<double>(payload))) {
    Deny(c, r, reg->plugin, "limit", "byte quota exceeded", false);
    return;
  }
  const bool cheap = RunsInline(r.op);
  if (cheap && c.out.size() - c.out_offset < options_.limits.max_output_buffer) {
    // Read-only and short (bounded by the read/list caps, no fsync): answered right here on
    // the event loop. Two thread hand-offs (queue, completion) cost more than the operation.
    // A peer with a full output buffer goes through the queue instead, whose in-flight and
    // queue caps then apply (answers are matched by id, so order does not matter).
    AuditEntry audit;
    audit.plugin = reg->plugin;
    audit.request_id = r.id;
    audit.op = r.op;
    auto start = Clock::now();
    DispatchContext context{&root_, &options_.limits, exec_, nullptr, &options_.exec_unavailable};
    context.read_plans = &read_plans_;
    Response response = Dispatch(context, reg->grant, r, audit);
    audit.duration_us = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count());
    audit_->Record(audit);
    std::string frame = ipc::EncodeResponse(response);
    reg->bytes.Charge(static_cast<double>(frame.size()));
    if (c.out.empty()) {
      c.out = std::move(frame);
    } else {
      c.out += frame;
    }
    return;
  }
  auto job = std::make_shared<Job>();
  job->conn_id = id;
  job->registration = reg;
  job->request = std::move(r);
  const std::string& op = job->request.op;
  const bool exec = op == "exec" && exec_ != nullptr;
  {
    std::lock_guard lock(queue_mu_);
    if (queue_.size() + exec_queue_.size() >= options_.limits.max_queued_jobs) {
      Request rejected = std::move(job->request);
      Deny(c, rejected, reg->plugin, "busy", "gateway is at its concurrency limit", false);
      return;
    }
    if (exec && exec_queue_.size() >= options_.exec_limits.max_concurrent) {
      Request rejected = std::move(job->request);
      Deny(c, rejected, reg->plugin, "busy", "sys.exec is at its concurrency limit", false);
      return;
    }
    c.jobs[job->request.id] = job;
    (exec ? exec_queue_ : queue_).push_back(job);
  }
  (exec ? exec_cv_ : queue_cv_).notify_one();
}

void Server::HandleWake() {
  uint64_t count;
  ssize_t ignored = ::read(wake_.Get(), &count, sizeof(count));
  (void)ignored;
  std::vector<Completion> done;
  {
    std::lock_guard lock(done_mu_);
    done.swap(done_);
  }
  std::vector<uint64_t> touched;
  for (auto& d : done) {
    auto it = conns_.find(d.conn_id);
    if (it == conns_.end()) continue;  // connection gone; the decision is in the audit log
    it->second.jobs.erase(d.request_id);
    // Replies count against the plugin's byte quota too (requests were charged on arrival).
    if (it->second.bound) it->second.bound->bytes.Charge(static_cast<double>(d.frame.size()));
    it->second.out += d.frame;
    touched.push_back(d.conn_id);
  }
  for (uint64_t id : touched) {
    auto it = conns_.find(id);
    if (it != conns_.end()) Flush(id, it->second);
  }
}

void Server::Reply(Connection& c, const Response& response) {
  c.out += ipc::EncodeResponse(response);
}

void Server::Flush(uint64_t id, Connection& c) {
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

void Server::UpdateInterest(uint64_t id, Connection& c) {
  // Backpressure: a peer that does not read its answers stops being read from.
  size_t pending = c.out.size() - c.out_offset;
  // Hysteresis: stop at the cap, resume once half of it has drained.
  bool want_read = c.reading ? pending < options_.limits.max_output_buffer
                             : pending < options_.limits.max_output_buffer / 2;
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

void Server::CloseConnection(uint64_t id, const std::string& /*why*/) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  for (auto& [rid, weak] : it->second.jobs) {
    if (auto j = weak.lock()) {
      j->cancel_reason = "connection closed";
      j->cancelled.store(true, std::memory_order_release);
    }
  }
  epoll_ctl(epoll_.Get(), EPOLL_CTL_DEL, it->second.fd.Get(), nullptr);
  conns_.erase(it);
}

void Server::ControlReply(const nlohmann::json& reply) {
  // Replies can quote a plugin id or reason back: never an exception on invalid UTF-8.
  std::string frame =
      ipc::EncodeControl(reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  size_t off = 0;
  while (off < frame.size()) {
    ssize_t n = ::send(options_.control_fd, frame.data() + off, frame.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        pollfd p{options_.control_fd, POLLOUT, 0};
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
  ssize_t n = ::recv(options_.control_fd, buffer, sizeof(buffer), MSG_DONTWAIT);
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
        std::lock_guard lock(queue_mu_);
        queued = queue_.size();
      }
      reply = {{"ok", true},
               {"connections", conns_.size()},
               {"registrations", registrations_.size()},
               {"queued", queued}};
    } else if (op == "shutdown") {
      reply = {{"ok", true}};
      running_ = false;
    } else {
      reply = {{"ok", false}, {"error", "invalid: unknown control op '" + op + "'"}};
    }
    if (msg.is_object() && msg.contains("seq")) reply["seq"] = msg["seq"];
    ControlReply(reply);
    audit_->Flush();
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
  std::string workspace = msg.value("workspace", options_.workspace);
  if (workspace != options_.workspace) {
    return nlohmann::json{{"ok", false}, {"error", "denied: wrong workspace: " + workspace}};
  }
  if (FindByToken(token->bytes())) return fail("token already registered");
  auto reg = std::make_shared<Registration>();
  reg->token = token->bytes();
  reg->plugin = msg["plugin"].get<std::string>();
  reg->pid = msg["pid"].get<pid_t>();
  reg->uid = msg["uid"].get<uid_t>();
  reg->workspace = workspace;
  reg->grant = std::move(*grant);
  reg->requests = TokenBucket(options_.limits.plugin_requests_per_second);
  reg->bytes = TokenBucket(options_.limits.plugin_bytes_per_second);
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
  audit_->Record(audit);
  registrations_.emplace(index, std::move(reg));
  return {{"ok", true}};
}

void Server::RevokeRegistration(const std::shared_ptr<Registration>& reg, const std::string& why) {
  AuditEntry audit;
  audit.plugin = reg->plugin;
  audit.op = "revoke";
  audit.verdict = "allow";
  audit.reason = why;
  audit_->Record(audit);
  for (auto it = registrations_.begin(); it != registrations_.end();) {
    if (it->second == reg) {
      epoll_ctl(epoll_.Get(), EPOLL_CTL_DEL, reg->pidfd.Get(), nullptr);
      it = registrations_.erase(it);
    } else {
      ++it;
    }
  }
  // Connections bound to it stop being served at once.
  std::vector<uint64_t> bound;
  for (auto& [id, c] : conns_) {
    if (c.bound == reg) bound.push_back(id);
  }
  for (uint64_t id : bound) CloseConnection(id, "token revoked");
}

nlohmann::json Server::ControlRevoke(const nlohmann::json& msg) {
  std::vector<std::shared_ptr<Registration>> victims;
  if (msg.contains("token") && msg["token"].is_string()) {
    auto token = ipc::CapabilityToken::FromHex(msg["token"].get<std::string>());
    if (!token) return {{"ok", false}, {"error", "invalid: " + token.error().message}};
    if (auto reg = FindByToken(token->bytes())) victims.push_back(reg);
  } else if (msg.contains("plugin") && msg["plugin"].is_string()) {
    for (auto& [i, reg] : registrations_) {
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
  std::string text = reason == "reload" ? "plugin reloading" : reason;
  size_t cancelled = 0;
  for (auto& [id, c] : conns_) {
    if (!c.bound || c.bound->plugin != plugin) continue;
    for (auto& [rid, weak] : c.jobs) {
      if (auto j = weak.lock()) {
        j->cancel_reason = text;
        j->cancelled.store(true, std::memory_order_release);
        ++cancelled;
        AuditEntry audit;
        audit.plugin = plugin;
        audit.op = j->request.op;
        audit.request_id = rid;
        audit.verdict = "cancelled";
        audit.code = "cancelled";
        audit.reason = reason == "reload" ? "cancelled_by_reload" : text;
        audit_->Record(audit);
      }
    }
  }
  return {{"ok", true}, {"cancelled", cancelled}};
}

void Server::HandlePidfd(uint64_t index) {
  auto it = registrations_.find(index);
  if (it == registrations_.end()) return;
  auto reg = it->second;
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
  // Its stderr is the user's terminal (`anvil run`) or an editor's log (`anvil serve`): what it
  // says there (paths, reasons) passes the display sanitizer.
  auto fail = [](const Error& e) {
    std::cerr << "anvil-gateway: " << SanitizeForDisplay(e.ToString(), 2000) << "\n";
    return 1;
  };
  // First of all, before any token or grant arrives: another process of the user may not
  // ptrace this one or read its memory (/proc/PID/mem, environ, fds), as for the plugin host,
  // the exec broker and every sandbox. Inherited by the broker; reset for the runner by its exec.
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    return fail(
        Error{"sandbox", "cannot make the gateway non-dumpable (prctl PR_SET_DUMPABLE)", errno});
  }
  signal(SIGPIPE, SIG_IGN);
  if (options.control_fd < 0) return fail(Error{"invalid", "--control-fd is required", 0});
  // The trusted side made the control socketpair, so it is the peer the kernel names for it:
  // the one process whose connections are always admitted (GatewayLimits, admission).
  auto control_peer = ipc::GetPeerCredentials(options.control_fd);
  if (!control_peer || control_peer->pid <= 0) {
    return fail(Error{"invalid",
                      "--control-fd is not a Unix socket naming its peer (fix: start the gateway "
                      "through anvil run / anvil serve, which pass one end of a socketpair)",
                      0});
  }
  options.trusted_pid = control_peer->pid;
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
  std::unique_ptr<PendingWrites> pending_writes;
  if (options.pending_writes_fd >= 0) {
    struct stat journal {};
    if (::fstat(options.pending_writes_fd, &journal) != 0 || !S_ISREG(journal.st_mode)) {
      return fail(Error{"invalid", "--pending-writes-fd is not an open journal file", 0});
    }
    // Not for the exec broker's children: only this process writes workspace files.
    ::fcntl(options.pending_writes_fd, F_SETFD, FD_CLOEXEC);
    pending_writes = std::make_unique<PendingWrites>(UniqueFd(options.pending_writes_fd));
    ws_options.pending_writes = pending_writes.get();
  }
  auto root = WorkspaceRoot::Open(options.workspace, ws_options);
  if (!root) return fail(root.error());
  options.workspace = root->path();  // canonical, pinned
  // The workspace path travels as a JSON string (the ready event, registrations): it must be
  // text, or the trusted side would see a different path than the one served.
  if (!IsValidUtf8(options.workspace)) {
    return fail(Error{"invalid", "the workspace path is not valid UTF-8", 0});
  }
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
      std::cerr << "anvil-gateway: sys.exec unavailable: "
                << SanitizeForDisplay(options.exec_unavailable, 2000) << "\n";
    }
  } else if (options.exec_unavailable.empty()) {
    options.exec_unavailable = "disabled for this session (--no-exec)";
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
  std::string frame =
      ipc::EncodeControl(ready.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
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
