#include "gateway/server.h"

#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <system_error>

#include "gateway/admission.h"
#include "gateway/dispatch.h"

namespace anvil::gateway {

using ipc::Request;
using ipc::Response;

Server::Server(const GatewayOptions& options, WorkspaceRoot root, AuditLog* audit,
               const ExecBroker* exec, std::unique_ptr<NetService> net, GitRunGuard* git_run)
    : options_(options),
      answer_caps_{options_.limits.max_read_bytes, options_.limits.max_list_entries,
                   options_.exec_limits.max_stdout_bytes + options_.exec_limits.max_stderr_bytes,
                   options_.net.limits.max_body_bytes + options_.net.limits.max_header_bytes},
      root_(std::move(root)),
      audit_(audit),
      exec_(exec),
      read_plans_(root_),
      net_(std::move(net)),
      git_run_(git_run),
      queue_(Context(), audit, options_.limits.max_queued_jobs,
             options_.exec_limits.max_concurrent),
      transport_(epoll_, conn_epoll_, options_.limits, options_.trusted_pid, audit,
                 [this](uint64_t id, Connection& c, const ipc::Frame& frame) {
                   return HandleFrame(id, c, frame);
                 }),
      control_(options_, epoll_, transport_, queue_, audit) {}

// What a request is dispatched with, by a worker (each job sets `cancelled`) or inline.
DispatchContext Server::Context() {
  DispatchContext context{&root_, &options_.limits, exec_, nullptr, &options_.exec_unavailable};
  context.net = net_.get();
  context.read_plans = &read_plans_;
  context.git_run = git_run_;
  context.no_fs_write = options_.no_fs_write;
  context.trust_state = &options_.trust_state_paths;
  return context;
}

namespace {

// One I/O thread per CPU this process may run on, at most four: the connections' work spreads
// over the CPUs, and a few threads are enough for the few plugin hosts of a session.
uint32_t IoThreads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  return static_cast<uint32_t>(std::clamp(cpus, 1, 4));
}

}  // namespace

Status Server::Start(const std::string& socket_path) {
  io_thread_count_ = IoThreads();  // before hardening: the filter need not allow the look-up
  epoll_.Reset(epoll_create1(EPOLL_CLOEXEC));
  conn_epoll_.Reset(epoll_create1(EPOLL_CLOEXEC));
  stop_.Reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  io_failed_.Reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  const bool woke = queue_.Open();
  // The stop signals are taken from a signalfd by the main loop, which then stops in order (as
  // when the control channel ends): blocked here, on the one thread there is, so that every
  // thread started later has them blocked too and none dies of one mid-write. The exec broker,
  // forked before, keeps its own mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop_signals, sig);
  if (pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr) != 0) {
    return Fail("internal", "cannot block the stop signals");
  }
  signals_.Reset(signalfd(-1, &stop_signals, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!epoll_ || !conn_epoll_ || !stop_ || !io_failed_ || !woke || !signals_) {
    return SysFail("internal", "epoll/eventfd/signalfd");
  }
  ANVIL_RETURN_IF_ERROR(transport_.Listen(socket_path));
  socket_path_ = socket_path;
  transport_.SetRearmDelayForTesting(options_.rearm_delay_ms_for_testing);
  auto add = [&](int fd, uint64_t tag) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag;
    return epoll_ctl(epoll_.Get(), EPOLL_CTL_ADD, fd, &ev);
  };
  if (add(options_.control_fd, MakeTag(kControl, 0)) || add(queue_.wake_fd(), MakeTag(kWake, 0)) ||
      add(io_failed_.Get(), MakeTag(kIoFailed, 0)) || add(signals_.Get(), MakeTag(kSignal, 0))) {
    return SysFail("internal", "epoll_ctl");
  }
  epoll_event stop{};
  stop.events = EPOLLIN;  // level-triggered: once written, every I/O thread sees it
  stop.data.u64 = MakeTag(kStop, 0);
  if (epoll_ctl(conn_epoll_.Get(), EPOLL_CTL_ADD, stop_.Get(), &stop) != 0) {
    return SysFail("internal", "epoll_ctl");
  }
  return Ok();
}

// Test-only builds (GatewayOptions::io_wait_fail_after_for_testing): true for the event that
// would be the N-th one served (stale events, which another thread's serving or the load makes
// come and go, are not counted), which is then left unserved.
bool Server::InjectedWaitFailure(uint64_t id) {
  const uint32_t after = options_.io_wait_fail_after_for_testing;
  return after > 0 && transport_.WouldServe(id) &&
         io_events_taken_.load(std::memory_order_relaxed) + 1 >= after;
}

void Server::IoLoop() {
  // One event at a time: a connection whose requests take long (a flood of large reads) then
  // holds up only this thread; the others' events stay for the other threads.
  epoll_event events[1];
  // The audit lines of the events this thread served since it last waited are written with one
  // append once it is about to wait, or after kEventsPerAuditWrite events in a row: one write
  // for a burst instead of one per request (a crash loses the lines of the batch in progress; a
  // stop writes them). While every other I/O thread is busy, what is ready is this one's to serve,
  // so it looks (without waiting) before it writes; while another one waits, an event that comes
  // wakes that one, and a look would only cost the answer's latency a syscall.
  uint32_t unwritten = 0;
  while (true) {
    int n;
    if (unwritten > 0 && io_threads_waiting_.load(std::memory_order_relaxed) == 0) {
      n = epoll_wait(conn_epoll_.Get(), events, 1, 0);
      if (n == 0) {
        audit_->FlushOrHandOff();
        unwritten = 0;
        continue;
      }
    } else {
      if (unwritten > 0) {
        audit_->FlushOrHandOff();
        unwritten = 0;
      }
      io_threads_waiting_.fetch_add(1, std::memory_order_relaxed);
      n = epoll_wait(conn_epoll_.Get(), events, 1, -1);
      io_threads_waiting_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (n > 0 && static_cast<Tag>(events[0].data.u64 >> 56) != kStop &&
        InjectedWaitFailure(events[0].data.u64 & ((1ull << 56) - 1))) {
      n = -1;
      errno = EBADF;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      // This thread can serve none of its connections any more, and a connection it would
      // have served waits forever: the gateway stops instead (its connections closed, its
      // session told by the exit status).
      const int err = errno;
      audit_->Flush();
      IoThreadFailed(err);
      return;
    }
    for (int i = 0; i < n; ++i) {
      uint64_t tag = events[i].data.u64;
      if (static_cast<Tag>(tag >> 56) == kStop) {
        audit_->Flush();
        return;
      }
      if (transport_.HandleEvents(tag & ((1ull << 56) - 1), events[i].events) &&
          options_.io_wait_fail_after_for_testing > 0) {
        io_events_taken_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (++unwritten >= kEventsPerAuditWrite) {
      audit_->FlushOrHandOff();
      unwritten = 0;
    }
  }
}

void Server::IoThreadFailed(int err) {
  if (io_failed_said_.exchange(true)) return;  // once, by the first thread that failed
  const std::string line = std::string(
                               "anvil-gateway: internal: an I/O thread cannot wait for "
                               "its connections (epoll_wait: ") +
                           std::strerror(err) + "); the gateway stops\n";
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  const uint64_t one = 1;
  ignored = ::write(io_failed_.Get(), &one, sizeof(one));
  (void)ignored;
}

int Server::Loop() {
  // Workers start only now, after the caller hardened this thread: Landlock and seccomp are
  // inherited by threads created later, never applied to threads that already exist.
  auto stop_threads = [this] {
    transport_.Stop();
    uint64_t one = 1;
    ssize_t ignored = ::write(stop_.Get(), &one, sizeof(one));
    (void)ignored;
    for (auto& t : io_threads_) t.join();
    io_threads_.clear();
    // The I/O threads' last batches go out before the workers drain the queue, which the stop's
    // grace may cut short.
    audit_->Flush();
    queue_.Stop();
  };
  try {
    queue_.Start(std::max<uint32_t>(1, options_.limits.worker_threads),
                 exec_ ? std::max<uint32_t>(1, options_.exec_limits.max_concurrent) : 0);
    for (uint32_t i = io_thread_count_; i > 0; --i) io_threads_.emplace_back([this] { IoLoop(); });
  } catch (const std::system_error& e) {
    // No thread to be had (the user's process limit, memory): the gateway ends saying so,
    // after stopping the threads it did start, instead of aborting with them still joinable.
    const std::string line = std::string("anvil-gateway: resource: cannot start its threads (") +
                             e.what() +
                             "); fix: raise the user's process limit (ulimit -u) or end some "
                             "of its processes\n";
    ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
    (void)ignored;
    stop_threads();
    return 1;
  }
  // Connections are accepted (served) only once every worker runs (JobQueue::WaitRunning); the
  // control channel is served from the start, so a registration need not wait for the
  // threads' start.
  bool workers_running = false;
  epoll_event events[64];
  int status = 0;
  while (control_.open() && status == 0) {
    int timeout;
    {
      std::lock_guard lock(transport_.mu());
      timeout = transport_.ExpireHelloDeadlines();
    }
    int n = epoll_wait(epoll_.Get(), events, 64, timeout);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string line = std::string(
                                   "anvil-gateway: internal: the event loop cannot wait "
                                   "(epoll_wait: ") +
                               std::strerror(errno) + "); the gateway stops\n";
      ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
      (void)ignored;
      status = 1;
      break;
    }
    if (!workers_running && std::any_of(events, events + std::max(n, 0), [](const epoll_event& e) {
          return static_cast<Tag>(e.data.u64 >> 56) == kListen;
        })) {
      queue_.WaitRunning();
      workers_running = true;
    }
    {
      std::lock_guard lock(transport_.mu());
      for (int i = 0; i < n && control_.open() && status == 0; ++i) {
        uint64_t tag = events[i].data.u64;
        uint64_t id = tag & ((1ull << 56) - 1);
        switch (static_cast<Tag>(tag >> 56)) {
          case kListen:
            transport_.Accept();
            break;
          case kControl:
            control_.HandleReadable();
            break;
          case kWake:
            HandleWake();
            break;
          case kPidfd:
            control_.HostExited(id);
            break;
          case kIoFailed:
            status = 1;  // said by the failed thread
            break;
          case kSignal: {
            signalfd_siginfo info{};
            int signo = 0;
            while (::read(signals_.Get(), &info, sizeof(info)) == sizeof(info)) {
              if (signo == 0) signo = static_cast<int>(info.ssi_signo);
            }
            if (signo == 0) break;
            status = 128 + signo;  // stops in order below
            // What is in flight gets a short while to finish; a worker that does not (a queue of
            // long execs, a wait nothing cancels) does not keep the gateway, its broker and their
            // commands alive once the trusted side asked it to go or is gone.
            try {
              std::thread([socket = socket_path_, status] {
                std::this_thread::sleep_for(kStopGrace);
                ::unlink(socket.c_str());
                ::_exit(status);
              }).detach();
            } catch (const std::system_error&) {
              ::unlink(socket_path_.c_str());
              ::_exit(status);
            }
            break;
          }
          default:
            break;
        }
      }
    }
    audit_->Flush();  // without the connections' lock: the I/O threads go on meanwhile
  }
  stop_threads();
  audit_->Flush();
  return status;
}

bool Server::HandleFrame(uint64_t id, Connection& c, const ipc::Frame& frame) {
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
        std::lock_guard lock(transport_.mu());
        transport_.Close(id, "malformed request");
        return false;
      }
      return HandleRequest(id, c, std::move(*request));
    }
    case ipc::FrameKind::kCancel: {
      auto request_id = ipc::DecodeCancel(frame.body);
      std::lock_guard lock(transport_.mu());
      if (!request_id) {
        transport_.Close(id, "malformed cancel");
        return false;
      }
      if (auto job = c.jobs.find(*request_id); job != c.jobs.end()) {
        if (auto j = job->second.lock()) j->Cancel("request cancelled");
      }
      return !c.closed;
    }
    default: {
      std::lock_guard lock(transport_.mu());
      transport_.Close(id, "unexpected frame kind");
      return false;
    }
  }
}

void Server::Deny(Connection& c, const Request& r, const std::string& plugin,
                  const Refusal& refusal) {
  AuditEntry audit;
  audit.plugin = plugin;
  audit.op = r.op;
  audit.request_id = r.id;
  if (!r.args.empty() && r.op != "hello") audit.target = r.args[0];
  audit.verdict = refusal.code == "busy" ? "busy" : "deny";
  audit.code = refusal.code;
  audit.reason = refusal.reason;
  audit_->Record(audit);
  c.out += ipc::EncodeResponse(Response::Error(r.id, refusal.code, refusal.reason));
  if (refusal.close) c.close_after_flush = true;
}

bool Server::HandleRequest(uint64_t id, Connection& c, Request r) {
  std::unique_lock lock(transport_.mu());
  if (c.closed) return false;  // revoked, say, since its last frame
  auto reg = control_.FindByToken(r.token);
  RequestFacts facts;
  facts.op = r.op;
  facts.args = &r.args;
  facts.registration = reg ? &reg->host : nullptr;
  facts.bound = c.bound != nullptr;
  facts.bound_to_registration = c.bound != nullptr && c.bound == reg;
  facts.sender = *c.frame_sender;
  facts.connection_uid = c.peer.uid;
  facts.workspace = options_.workspace;
  facts.in_flight = c.jobs.size();
  RequestAdmission admission = AdmitRequest(facts, options_.limits);
  if (admission.verdict == RequestVerdict::kRefuse) {
    // Audited under the plugin the token names, else the one the connection said hello for.
    Deny(c, r, reg ? reg->host.plugin : (c.bound ? c.bound->host.plugin : ""), admission.refusal);
    return true;
  }
  if (admission.verdict == RequestVerdict::kHello) {
    c.bound = reg;
    AuditEntry audit;
    audit.plugin = reg->host.plugin;
    audit.op = "hello";
    audit.verdict = "allow";
    audit.request_id = r.id;
    audit_->Record(audit);
    // [session id, frame cap]: the host checks its requests against the cap before sending.
    c.out += ipc::EncodeResponse(Response{
        r.id, true, {options_.session_id, std::to_string(options_.limits.max_frame_bytes)}});
    return true;
  }
  // Admitted: the registration's meters, requests first, then bytes.
  if (!reg->requests.Take(1)) {
    Deny(c, r, reg->host.plugin, {"limit", "request quota exceeded", false});
    return true;
  }
  uint64_t payload = 0;
  for (const auto& a : r.args) payload += a.size();
  // The answer's bound is taken now and settled once the answer is ready (QuotaReservation).
  const double reserved = static_cast<double>(QuotaReservation(
      AnswerBound(r.op, answer_caps_), payload, static_cast<uint64_t>(reg->bytes.capacity())));
  if (!reg->bytes.Take(static_cast<double>(payload) + reserved)) {
    Deny(c, r, reg->host.plugin, {"limit", "byte quota exceeded", false});
    return true;
  }
  const bool cheap = RunsInline(r.op);
  if (cheap && c.out.size() - c.out_offset < options_.limits.max_output_buffer) {
    // Read-only and short (bounded by the read/list caps, no fsync): answered right here on
    // the I/O thread, without the mutex. Two thread hand-offs (queue, completion) cost more
    // than the operation. The transport serves no frame while the output buffer is full; should
    // queued answers have filled it since, the request goes through the queue instead, whose
    // in-flight and queue caps then apply (answers are matched by id, so order does not
    // matter). `reg` keeps the grant alive should it be revoked meanwhile.
    lock.unlock();
    AuditEntry audit;
    audit.plugin = reg->host.plugin;
    audit.request_id = r.id;
    audit.op = r.op;
    auto start = Clock::now();
    // The workers' context, without a cancel flag: an inline op is short.
    DispatchContext context = Context();
    context.writes = reg->writes.get();
    Response response = Dispatch(context, reg->grant, r, audit);
    if (options_.inline_answer_delay_ms_for_testing > 0) {
      std::this_thread::sleep_for(
          std::chrono::milliseconds(options_.inline_answer_delay_ms_for_testing));
    }
    audit.duration_us = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count());
    std::string frame = ipc::EncodeResponse(response);
    std::string line = audit_->Line(audit);  // formatted before the lock, appended under it
    lock.lock();
    // Audited under the mutex, in order with a revocation's line: an answer that leaves is
    // audited before the revocation, one dropped as cancelled, never "allow" after it.
    if (c.closed) {
      // Revoked (or closed for another reason) while it was read: the answer is dropped (and
      // its reservation given back), and the close that is waiting for this thread returns
      // only now.
      reg->bytes.Settle(reserved, 0);
      if (audit.verdict == "allow") {
        audit.verdict = "cancelled";
        audit.code = "cancelled";
        audit.reason = "connection closed before the answer was sent";
      }
      audit_->Record(audit);
      return false;
    }
    audit_->Append(line);
    reg->bytes.Settle(reserved, static_cast<double>(frame.size()));
    if (c.out.empty()) {
      c.out = std::move(frame);
    } else {
      c.out += frame;
    }
    return true;
  }
  auto job = std::make_shared<Job>();
  job->conn_id = id;
  job->registration = reg;
  job->request = std::move(r);
  job->reserved_bytes = reserved;
  const bool exec = job->request.op == "exec" && exec_ != nullptr;
  if (auto full = queue_.Push(job, exec)) {
    reg->bytes.Settle(reserved, 0);
    Deny(c, job->request, reg->host.plugin, {"busy", *full, false});
    return true;
  }
  c.jobs[job->request.id] = job;
  return true;
}

void Server::HandleWake() {
  std::vector<uint64_t> touched;
  for (auto& d : queue_.TakeCompletions()) {
    Connection* c = transport_.Find(d.conn_id);
    if (c == nullptr) continue;  // connection gone; the decision is in the audit log
    c->jobs.erase(d.request_id);
    // Replies count against the plugin's byte quota too: its reservation, taken on arrival,
    // is settled against the answer's size.
    if (c->bound) c->bound->bytes.Settle(d.reserved_bytes, static_cast<double>(d.frame.size()));
    if (c->busy) {
      c->late += d.frame;  // its owner sends it when it lets go
      continue;
    }
    c->out += d.frame;
    touched.push_back(d.conn_id);
  }
  for (uint64_t id : touched) {
    Connection* c = transport_.Find(id);
    if (c != nullptr && !c->busy) transport_.Flush(id, *c);
  }
}

}  // namespace anvil::gateway
