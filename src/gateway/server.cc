#include "gateway/server.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "gateway/admission.h"
#include "gateway/dispatch.h"

namespace anvil::gateway {

using ipc::Request;
using ipc::Response;

Server::Server(const GatewayOptions& options, WorkspaceRoot root, AuditLog* audit,
               const ExecBroker* exec, std::unique_ptr<NetFetchService> net, GitRunGuard* git_run)
    : options_(options),
      root_(std::move(root)),
      audit_(audit),
      exec_(exec),
      read_plans_(root_),
      net_(std::move(net)),
      git_run_(git_run),
      queue_(Context(), audit, options_.limits.max_queued_jobs,
             options_.exec_limits.max_concurrent),
      transport_(epoll_, options_.limits, options_.trusted_pid, audit,
                 [this](uint64_t id, Connection& c, const ipc::Frame& frame) {
                   HandleFrame(id, c, frame);
                 }),
      control_(options_, epoll_, transport_, queue_, audit) {}

// What a worker dispatches with (each job sets `cancelled`).
DispatchContext Server::Context() {
  DispatchContext context{&root_, &options_.limits, exec_, nullptr, &options_.exec_unavailable};
  context.net = net_.get();
  context.read_plans = &read_plans_;
  context.git_run = git_run_;
  context.no_fs_write = options_.no_fs_write;
  return context;
}

Status Server::Start(const std::string& socket_path) {
  epoll_.Reset(epoll_create1(EPOLL_CLOEXEC));
  const bool woke = queue_.Open();
  if (!epoll_ || !woke) return SysFail("internal", "epoll/eventfd");
  if (auto s = transport_.Listen(socket_path); !s) return s;
  auto add = [&](int fd, uint64_t tag) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag;
    return epoll_ctl(epoll_.Get(), EPOLL_CTL_ADD, fd, &ev);
  };
  if (add(options_.control_fd, MakeTag(kControl, 0)) || add(queue_.wake_fd(), MakeTag(kWake, 0))) {
    return SysFail("internal", "epoll_ctl");
  }
  return Ok();
}

int Server::Loop() {
  // Workers start only now, after the caller hardened this thread: Landlock and seccomp are
  // inherited by threads created later, never applied to threads that already exist.
  queue_.Start(std::max<uint32_t>(1, options_.limits.worker_threads),
               exec_ ? std::max<uint32_t>(1, options_.exec_limits.max_concurrent) : 0);
  epoll_event events[64];
  while (control_.open()) {
    int n = epoll_wait(epoll_.Get(), events, 64, transport_.ExpireHelloDeadlines());
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < n && control_.open(); ++i) {
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
        case kConn:
          transport_.HandleEvents(id, events[i].events);
          break;
        case kPidfd:
          control_.HostExited(id);
          break;
      }
    }
    audit_->Flush();
  }
  queue_.Stop();
  audit_->Flush();
  return 0;
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
        transport_.Close(id, "malformed request");
        return;
      }
      HandleRequest(id, c, std::move(*request));
      return;
    }
    case ipc::FrameKind::kCancel: {
      auto request_id = ipc::DecodeCancel(frame.body);
      if (!request_id) {
        transport_.Close(id, "malformed cancel");
        return;
      }
      if (auto job = c.jobs.find(*request_id); job != c.jobs.end()) {
        if (auto j = job->second.lock()) j->Cancel("request cancelled");
      }
      return;
    }
    default:
      transport_.Close(id, "unexpected frame kind");
      return;
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

void Server::HandleRequest(uint64_t id, Connection& c, Request r) {
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
    return;
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
    return;
  }
  // Admitted: the registration's meters, requests first, then bytes.
  if (!reg->requests.Take(1)) {
    Deny(c, r, reg->host.plugin, {"limit", "request quota exceeded", false});
    return;
  }
  uint64_t payload = 0;
  for (const auto& a : r.args) payload += a.size();
  if (!reg->bytes.Take(static_cast<double>(payload))) {
    Deny(c, r, reg->host.plugin, {"limit", "byte quota exceeded", false});
    return;
  }
  const bool cheap = RunsInline(r.op);
  if (cheap && c.out.size() - c.out_offset < options_.limits.max_output_buffer) {
    // Read-only and short (bounded by the read/list caps, no fsync): answered right here on
    // the event loop. Two thread hand-offs (queue, completion) cost more than the operation.
    // A peer with a full output buffer goes through the queue instead, whose in-flight and
    // queue caps then apply (answers are matched by id, so order does not matter).
    AuditEntry audit;
    audit.plugin = reg->host.plugin;
    audit.request_id = r.id;
    audit.op = r.op;
    auto start = Clock::now();
    DispatchContext context{&root_, &options_.limits, exec_, nullptr, &options_.exec_unavailable};
    context.read_plans = &read_plans_;
    context.git_run = git_run_;
    context.no_fs_write = options_.no_fs_write;
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
  const bool exec = job->request.op == "exec" && exec_ != nullptr;
  if (auto full = queue_.Push(job, exec)) {
    Deny(c, job->request, reg->host.plugin, {"busy", *full, false});
    return;
  }
  c.jobs[job->request.id] = job;
}

void Server::HandleWake() {
  std::vector<uint64_t> touched;
  for (auto& d : queue_.TakeCompletions()) {
    Connection* c = transport_.Find(d.conn_id);
    if (c == nullptr) continue;  // connection gone; the decision is in the audit log
    c->jobs.erase(d.request_id);
    // Replies count against the plugin's byte quota too (requests were charged on arrival).
    if (c->bound) c->bound->bytes.Charge(static_cast<double>(d.frame.size()));
    c->out += d.frame;
    touched.push_back(d.conn_id);
  }
  for (uint64_t id : touched) {
    if (Connection* c = transport_.Find(id)) transport_.Flush(id, *c);
  }
}

}  // namespace anvil::gateway
