#include "gateway/transport.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <utility>

#include "common/fd_io.h"

namespace anvil::gateway {

using ipc::Response;

Status Transport::Listen(const std::string& socket_path) {
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
  ANVIL_RETURN_IF_ERROR(ipc::EnablePassCredentials(listen_.Get()));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = MakeTag(kListen, 0);
  if (epoll_ctl(epoll_.Get(), EPOLL_CTL_ADD, listen_.Get(), &ev) != 0) {
    return SysFail("internal", "epoll_ctl");
  }
  return Ok();
}

void Transport::Accept() {
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
    std::optional<ipc::PeerCredentials> peer;
    if (auto attested = ipc::GetPeerCredentials(fd)) peer = *attested;
    ConnectionAdmission admission = Admit(peer);
    if (admission.verdict == ConnectionVerdict::kDeny ||
        admission.verdict == ConnectionVerdict::kBusy) {
      Refused(fd, admission, peer ? &*peer : nullptr);
      continue;
    }
    if (!ipc::EnablePassCredentials(fd)) continue;
    uint64_t id = next_conn_++;
    Connection c;
    c.fd = std::move(conn_fd);
    c.peer = *peer;
    c.from_trusted_side = peer->pid == trusted_pid_;
    c.hello_deadline =
        Clock::now() + std::chrono::milliseconds(std::max<uint32_t>(1, limits_.hello_timeout_ms));
    c.reader = ipc::FrameReader(limits_.max_frame_bytes);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    ev.data.u64 = MakeTag(kConn, id);
    // An I/O thread may take it as soon as this returns; mu() (held) keeps it waiting until the
    // connection is in the table.
    if (epoll_ctl(conn_epoll_.Get(), EPOLL_CTL_ADD, c.fd.Get(), &ev) != 0) continue;
    c.epoll_events = ev.events;
    conns_.emplace(id, std::move(c));
    awaiting_hello_.push_back(id);
  }
}

ConnectionAdmission Transport::Admit(const std::optional<ipc::PeerCredentials>& peer) {
  ConnectionFacts facts;
  facts.peer = peer;
  facts.session_uid = geteuid();
  facts.trusted_pid = trusted_pid_;
  facts.connections = 0;
  for (const auto& [id, c] : conns_) {
    if (c.closed) continue;  // its owner is about to let go of it
    ++facts.connections;
    if (c.bound) continue;
    ++facts.unbound;
    if (c.from_trusted_side) continue;
    ++facts.unbound_from_others;
    if (peer && c.peer.pid == peer->pid) ++facts.unbound_from_peer;
  }
  ConnectionAdmission admission = AdmitConnection(facts, limits_);
  if (admission.verdict != ConnectionVerdict::kAdmitAfterEvictingOldest) return admission;
  // The oldest connection that never said hello gives way (bound or closed ones are skipped).
  while (!awaiting_hello_.empty()) {
    const uint64_t oldest = awaiting_hello_.front();
    awaiting_hello_.pop_front();
    auto it = conns_.find(oldest);
    if (it == conns_.end() || it->second.bound || it->second.closed) continue;
    AuditEntry audit;
    audit.op = "connect";
    audit.verdict = "busy";
    audit.code = "busy";
    audit.target = "pid " + std::to_string(it->second.peer.pid);
    audit.reason = "closed without hello: every connection slot was taken";
    audit_->Record(audit);
    Close(oldest, "evicted");
    return admission;
  }
  return {ConnectionVerdict::kBusy, "too many connections"};
}

void Transport::Refused(int fd, const ConnectionAdmission& admission,
                        const ipc::PeerCredentials* peer) {
  AuditEntry audit;
  audit.op = "connect";
  if (admission.verdict == ConnectionVerdict::kDeny) {
    // Not the session's user: closed without a word, always audited.
    audit.verdict = "deny";
    audit.code = "denied";
    audit.reason = admission.reason;
    audit_->Record(audit);
    return;
  }
  std::string busy = ipc::EncodeResponse(Response::Error(0, "busy", admission.reason));
  ssize_t ignored = ::send(fd, busy.data(), busy.size(), MSG_NOSIGNAL);
  (void)ignored;
  if (!refusal_audit_.Take(1)) {
    ++refusals_unaudited_;
    return;
  }
  audit.verdict = "busy";
  audit.code = "busy";
  audit.target = "pid " + std::to_string(peer->pid);
  audit.reason = admission.reason;
  if (refusals_unaudited_ > 0) {
    audit.reason +=
        " (and " + std::to_string(refusals_unaudited_) + " more refused connections not logged)";
    refusals_unaudited_ = 0;
  }
  audit_->Record(audit);
}

int Transport::ExpireHelloDeadlines() {
  const auto now = Clock::now();
  while (!awaiting_hello_.empty()) {
    auto it = conns_.find(awaiting_hello_.front());
    if (it == conns_.end() || it->second.bound || it->second.closed) {
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
    audit.reason = "no hello within " + std::to_string(limits_.hello_timeout_ms) + " ms";
    audit_->Record(audit);
    awaiting_hello_.pop_front();
    Close(it->first, "no hello");
    audit_->Flush();
  }
  return -1;
}

bool Transport::HandleEvents(uint64_t id, uint32_t events) {
  Connection* c = nullptr;
  {
    std::lock_guard lock(mu_);
    auto it = conns_.find(id);
    // Busy: a stale event (its owner re-arms it when it lets go, and level-triggered epoll
    // reports again whatever is still there). Closed: its owner removes it.
    if (it == conns_.end() || it->second.closed) return false;
    if (it->second.busy) {
      // Its owner re-armed it before letting go and is about to: it re-arms it once more.
      it->second.missed_events = true;
      return false;
    }
    c = &it->second;
    c->busy = true;
    c->owner = std::this_thread::get_id();
  }
  std::optional<std::string> close = Serve(id, *c, events);
  // The usual end (answered, nothing to close): re-armed while still owned, without mu(), so
  // that the other I/O threads do not wait for this syscall. The descriptor stays open until its
  // owner lets go, and a close meanwhile removes it from epoll (a re-arm after that fails).
  const bool rearmed = !close && !(c->close_after_flush && c->out_offset == c->out.size());
  if (rearmed) UpdateInterest(id, *c, /*rearm=*/true);
  if (rearm_delay_ms_for_testing_ > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(rearm_delay_ms_for_testing_));
  }
  std::lock_guard lock(mu_);
  c->busy = false;
  c->owner = {};
  const bool missed = std::exchange(c->missed_events, false);
  if (c->closed) {
    conns_.erase(id);
    released_.notify_all();
    return true;
  }
  if (close) {
    Close(id, *close);
    return true;
  }
  if (!c->late.empty()) {
    // Answers of queued jobs that completed meanwhile: sent now (Flush re-arms). Moved, not
    // copied, and its memory given back: it can hold up to the in-flight cap's answers.
    if (c->out_offset == c->out.size()) {
      c->out = std::move(c->late);
      c->out_offset = 0;
    } else {
      c->out += c->late;
    }
    std::string().swap(c->late);
    Flush(id, *c, /*rearm=*/true);
    return true;
  }
  if (c->out_offset == c->out.size() && c->close_after_flush) {
    Close(id, "closed after denial");
    return true;
  }
  // An event that fired after the re-arm found it still owned: armed once more, it fires again
  // (level-triggered) for whatever is still there.
  if (!rearmed || missed) UpdateInterest(id, *c, /*rearm=*/true);
  return true;
}

std::optional<std::string> Transport::Serve(uint64_t id, Connection& c, uint32_t events) {
  if ((events & EPOLLOUT) && !Send(c)) return "send failed";
  const bool readable = events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR);
  bool closed = false;
  Turn turn{0, c.out.size() - c.out_offset};
  if (c.frames_waiting) {
    // Frames read before the output buffer filled are served first, once it drained enough.
    c.reading = WantRead(c);
    if (!c.reading) return std::nullopt;
    if (auto why = ServeFrames(id, c, closed, turn)) return why;
    if (closed) return std::nullopt;
    if (c.reader.Buffered() == 0) c.frame_sender.reset();
  } else if (!readable || !c.reading) {
    return std::nullopt;
  }
  char buffer[65536];
  for (int round = 0; readable && round < 16 && c.reading && !c.frames_waiting; ++round) {
    std::optional<ipc::PeerCredentials> sender;
    ssize_t n = ipc::ReceiveWithCredentials(c.fd.Get(), buffer, sizeof(buffer), sender);
    if (n == 0) return "peer closed";
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return "recv failed";
    }
    // A short read drained the socket for now (or stopped at a change of sender); epoll is
    // level-triggered and reports whatever is left, so no extra recv just to see EAGAIN.
    bool drained = static_cast<size_t>(n) < sizeof(buffer);
    if (!sender || (c.frame_sender && !(*c.frame_sender == *sender))) c.mixed_senders = true;
    c.frame_sender = sender;
    c.reader.Append(buffer, static_cast<size_t>(n));
    if (auto why = ServeFrames(id, c, closed, turn)) return why;
    if (closed) return std::nullopt;
    if (c.reader.Buffered() == 0) c.frame_sender.reset();
    if (drained) break;
  }
  if (!Send(c)) return "send failed";
  return std::nullopt;
}

std::optional<std::string> Transport::ServeFrames(uint64_t id, Connection& c, bool& closed,
                                                  Turn& turn) {
  while (true) {
    if (c.out.size() - c.out_offset >= limits_.max_output_buffer) {
      // Backpressure between frames too: a burst of requests read at once would otherwise have
      // all its answers buffered (or queued) before the peer read any. The rest waits in the
      // reader, already read with its senders checked, until the peer drained its answers.
      c.frames_waiting = c.reader.Buffered() > 0;
      return std::nullopt;
    }
    if (turn.frames >= kFramesPerTurn ||
        c.out.size() - c.out_offset >= turn.pending_at_start + kAnswerBytesPerTurn) {
      // This turn's share: the rest waits in the reader, and the connection goes to the back of
      // the ready list (UpdateInterest arms writability for it), so that a peer with a deep
      // pipeline of requests holds an I/O thread for a bounded time while others wait.
      c.frames_waiting = c.reader.Buffered() > 0;
      return std::nullopt;
    }
    auto frame = c.reader.Next();
    if (!frame) {
      AuditFrame(c, frame.error().code, frame.error().message + "; connection closed");
      return "malformed frame";
    }
    if (!*frame) {
      c.frames_waiting = false;
      return std::nullopt;
    }
    if (stopping_.load(std::memory_order_relaxed)) return "gateway stopping";
    bool mixed = c.mixed_senders;
    // The bytes of the next frame start after this one; their sender is the current one.
    c.mixed_senders = false;
    if (mixed) {
      AuditFrame(c, "denied", "frame bytes from more than one process; connection closed");
      return "mixed senders";
    }
    ++turn.frames;
    if (!on_frame_(id, c, **frame)) {  // closed by the handler
      closed = true;
      return std::nullopt;
    }
  }
}

void Transport::AuditFrame(Connection& c, const std::string& code, const std::string& reason) {
  AuditEntry audit;
  {
    std::lock_guard lock(mu_);
    audit.plugin = c.bound ? c.bound->host.plugin : "";
  }
  audit.op = "frame";
  audit.verdict = "deny";
  audit.code = code;
  audit.reason = reason;
  audit_->Record(audit);
}

bool Transport::Send(Connection& c) {
  // As much as the socket takes now; the rest when it is writable again.
  const auto sent = fd_io::SendAll(c.fd.Get(), std::string_view(c.out).substr(c.out_offset),
                                   MSG_DONTWAIT, fd_io::Wait::NoWait());
  c.out_offset += sent.done;
  if (sent.error != 0 && sent.error != EAGAIN && sent.error != EWOULDBLOCK) return false;
  if (c.out_offset == c.out.size()) {
    // Emptied: a buffer that held a burst of large answers gives its memory back.
    if (c.out.capacity() > (1u << 20)) {
      std::string().swap(c.out);
    } else {
      c.out.clear();
    }
    c.out_offset = 0;
  } else if (c.out_offset > (1u << 20)) {
    c.out.erase(0, c.out_offset);
    c.out_offset = 0;
  }
  return true;
}

void Transport::Flush(uint64_t id, Connection& c, bool rearm) {
  if (!Send(c)) {
    Close(id, "send failed");
    return;
  }
  if (c.out.empty() && c.close_after_flush) {
    Close(id, "closed after denial");
    return;
  }
  UpdateInterest(id, c, rearm);
}

bool Transport::WantRead(const Connection& c) const {
  // Backpressure: a peer that does not read its answers stops being read from.
  size_t pending = c.out.size() - c.out_offset;
  // Hysteresis: stop at the cap, resume once half of it has drained.
  bool want_read =
      c.reading ? pending < limits_.max_output_buffer : pending < limits_.max_output_buffer / 2;
  return want_read && !c.close_after_flush;
}

void Transport::UpdateInterest(uint64_t id, Connection& c, bool rearm) {
  size_t pending = c.out.size() - c.out_offset;
  bool want_read = WantRead(c);
  c.reading = want_read;
  epoll_event ev{};
  uint32_t read_events = EPOLLIN | EPOLLRDHUP;
  uint32_t write_events = EPOLLOUT;
  // Frames already read wait for the output buffer to drain, not for more bytes from the peer:
  // once it may be read from again, writability (at once, unless the peer's socket is full)
  // brings an I/O thread to serve them.
  const bool wake = pending > 0 || (want_read && c.frames_waiting);
  ev.events = (want_read ? read_events : 0u) | (wake ? write_events : 0u) | EPOLLONESHOT;
  // One-shot: the owner re-arms it every time it lets go. Otherwise (a queued job's answer sent
  // while nobody owns it) it is still armed, or an I/O thread is about to take it and re-arm it:
  // re-registering the same mask changes nothing.
  if (!rearm && ev.events == c.epoll_events) return;
  ev.data.u64 = MakeTag(kConn, id);
  if (epoll_ctl(conn_epoll_.Get(), EPOLL_CTL_MOD, c.fd.Get(), &ev) == 0) c.epoll_events = ev.events;
}

void Transport::Close(uint64_t id, const std::string& /*why*/) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Connection& c = it->second;
  if (!c.closed) {
    c.closed = true;
    for (auto& [rid, weak] : c.jobs) {
      if (auto j = weak.lock()) j->Cancel("connection closed");
    }
    epoll_ctl(conn_epoll_.Get(), EPOLL_CTL_DEL, c.fd.Get(), nullptr);
  }
  if (!c.busy) {
    conns_.erase(it);
    return;
  }
  if (c.owner == std::this_thread::get_id()) return;  // it removes it when it lets go
  // Another thread is serving it (an answer being read from the workspace): once this returns,
  // that answer has been dropped and nothing more reaches the connection. mu() is held by the
  // caller; the wait releases it so that the owner can finish.
  std::unique_lock lock(mu_, std::adopt_lock);
  released_.wait(lock, [&] { return conns_.find(id) == conns_.end(); });
  lock.release();
}

Connection* Transport::Find(uint64_t id) {
  auto it = conns_.find(id);
  return it == conns_.end() || it->second.closed ? nullptr : &it->second;
}

}  // namespace anvil::gateway
