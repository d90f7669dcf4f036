#include "gateway/control_channel.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <vector>

#include "common/fd_io.h"
#include "common/syscalls.h"
#include "ipc/capability_token.h"

namespace anvil::gateway {

void ControlChannel::Reply(const nlohmann::json& reply) {
  // Replies can quote a plugin id or reason back: never an exception on invalid UTF-8.
  std::string frame =
      ipc::EncodeControl(reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  // A full channel is waited for (the trusted side reads it); any other error closes it.
  if (!fd_io::SendAll(options_.control_fd, frame)) open_ = false;
}

void ControlChannel::HandleReadable() {
  char buffer[65536];
  ssize_t n = ::recv(options_.control_fd, buffer, sizeof(buffer), MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    open_ = false;  // the trusted side is gone: so is the session
    return;
  }
  if (n < 0) return;
  reader_.Append(buffer, static_cast<size_t>(n));
  while (true) {
    auto frame = reader_.Next();
    if (!frame || !*frame || (*frame)->kind != ipc::FrameKind::kControl) {
      if (!frame || (*frame && (*frame)->kind != ipc::FrameKind::kControl)) {
        Reply({{"ok", false}, {"error", "invalid: malformed control frame"}});
        open_ = false;
      }
      return;
    }
    nlohmann::json msg = nlohmann::json::parse((*frame)->body, nullptr, false);
    nlohmann::json reply;
    std::string op = msg.is_object() && msg.contains("op") && msg["op"].is_string()
                         ? msg["op"].get<std::string>()
                         : "";
    if (op == "register") {
      reply = Register(msg);
    } else if (op == "revoke") {
      reply = Revoke(msg);
    } else if (op == "cancel") {
      reply = Cancel(msg);
    } else if (op == "status") {
      size_t queued = queue_.Queued();
      reply = {{"ok", true},
               {"connections", transport_.connections().size()},
               {"registrations", registrations_.size()},
               {"queued", queued}};
    } else if (op == "shutdown") {
      reply = {{"ok", true}};
      open_ = false;
    } else {
      reply = {{"ok", false}, {"error", "invalid: unknown control op '" + op + "'"}};
    }
    if (msg.is_object() && msg.contains("seq")) reply["seq"] = msg["seq"];
    // Written before the reply: the trusted side then finds every line of what it was answered
    // (a revocation's) and of what the plugins were answered, whose lines the I/O threads
    // record before the answer is sent but may write only after this reply.
    audit_->Flush();
    Reply(reply);
  }
}

std::shared_ptr<Registration> ControlChannel::FindByToken(std::string_view token) {
  std::shared_ptr<Registration> found;
  // Visit every registration whatever matches, so timing says nothing about which did.
  for (auto& [index, reg] : registrations_) {
    if (ipc::ConstantTimeEquals(reg->token, token)) found = reg;
  }
  return found;
}

nlohmann::json ControlChannel::Register(const nlohmann::json& msg) {
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
  reg->host.plugin = msg["plugin"].get<std::string>();
  reg->host.pid = msg["pid"].get<pid_t>();
  reg->host.uid = msg["uid"].get<uid_t>();
  reg->host.workspace = workspace;
  reg->grant = std::move(*grant);
  reg->requests = TokenBucket(options_.limits.plugin_requests_per_second);
  reg->bytes = TokenBucket(options_.limits.plugin_bytes_per_second);
  // Where the plugin's write usage is counted: a slot of the session's table when the trusted
  // side keeps one (the counts then outlive this gateway), else here.
  ipc::WriteUsageSlot* usage = nullptr;
  if (msg.contains("write_usage_slot")) {
    const nlohmann::json& slot = msg["write_usage_slot"];
    if (!slot.is_number_unsigned() || options_.write_usage == nullptr ||
        (usage = options_.write_usage->slot(slot.get<uint64_t>())) == nullptr) {
      return fail("write_usage_slot names no slot of the session's write usage table");
    }
  }
  auto& writes = write_budgets_[reg->host.plugin];
  if (!writes) {
    writes = usage ? std::make_shared<WriteBudget>(options_.limits.plugin_write_bytes,
                                                   options_.limits.plugin_new_entries, usage)
                   : std::make_shared<WriteBudget>(options_.limits.plugin_write_bytes,
                                                   options_.limits.plugin_new_entries);
  }
  reg->writes = writes;
  // A pidfd, not the number: when the host exits its token dies with it, and a recycled pid
  // can never inherit it.
  long pidfd = syscall(SYS_pidfd_open, reg->host.pid, 0);
  if (pidfd < 0) return fail("no such host process " + std::to_string(reg->host.pid));
  reg->pidfd.Reset(static_cast<int>(pidfd));
  uint64_t index = next_reg_++;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = MakeTag(kPidfd, index);
  epoll_ctl(epoll_.Get(), EPOLL_CTL_ADD, reg->pidfd.Get(), &ev);
  AuditEntry audit;
  audit.plugin = reg->host.plugin;
  audit.op = "register";
  audit.verdict = "allow";
  audit.target = "pid " + std::to_string(reg->host.pid);
  audit_->Record(audit);
  registrations_.emplace(index, std::move(reg));
  return {{"ok", true}};
}

void ControlChannel::RevokeRegistration(const std::shared_ptr<Registration>& reg,
                                        const std::string& why) {
  AuditEntry audit;
  audit.plugin = reg->host.plugin;
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
  for (auto& [id, c] : transport_.connections()) {
    if (c.bound == reg && !c.closed) bound.push_back(id);
  }
  for (uint64_t id : bound) transport_.Close(id, "token revoked");
}

nlohmann::json ControlChannel::Revoke(const nlohmann::json& msg) {
  std::vector<std::shared_ptr<Registration>> victims;
  if (msg.contains("token") && msg["token"].is_string()) {
    auto token = ipc::CapabilityToken::FromHex(msg["token"].get<std::string>());
    if (!token) return {{"ok", false}, {"error", "invalid: " + token.error().message}};
    if (auto reg = FindByToken(token->bytes())) victims.push_back(reg);
  } else if (msg.contains("plugin") && msg["plugin"].is_string()) {
    for (auto& [i, reg] : registrations_) {
      if (reg->host.plugin == msg["plugin"].get<std::string>()) victims.push_back(reg);
    }
  } else {
    return {{"ok", false}, {"error", "invalid: revoke needs token or plugin"}};
  }
  for (auto& reg : victims) RevokeRegistration(reg, msg.value("reason", "revoked"));
  return {{"ok", true}, {"revoked", victims.size()}};
}

nlohmann::json ControlChannel::Cancel(const nlohmann::json& msg) {
  if (!msg.contains("plugin") || !msg["plugin"].is_string()) {
    return {{"ok", false}, {"error", "invalid: cancel needs plugin"}};
  }
  std::string plugin = msg["plugin"].get<std::string>();
  std::string reason = msg.value("reason", "cancelled");
  std::string text = reason == "reload" ? "plugin reloading" : reason;
  size_t cancelled = 0;
  for (auto& [id, c] : transport_.connections()) {
    if (!c.bound || c.closed || c.bound->host.plugin != plugin) continue;
    for (auto& [rid, weak] : c.jobs) {
      if (auto j = weak.lock()) {
        j->Cancel(text);
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

void ControlChannel::HostExited(uint64_t index) {
  auto it = registrations_.find(index);
  if (it == registrations_.end()) return;
  auto reg = it->second;
  RevokeRegistration(reg, "host exited");
}

}  // namespace anvil::gateway
