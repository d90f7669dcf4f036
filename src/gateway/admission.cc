#include "gateway/admission.h"

#include <algorithm>

namespace anvil::gateway {

ConnectionAdmission AdmitConnection(const ConnectionFacts& facts, const GatewayLimits& limits) {
  if (!facts.peer || facts.peer->uid != facts.session_uid) {
    // The 0700 directory already keeps other users out; this is the second check.
    return {ConnectionVerdict::kDeny, facts.peer ? "peer uid " + std::to_string(facts.peer->uid) +
                                                       " is not the session's user"
                                                 : "no peer credentials"};
  }
  const bool trusted = facts.peer->pid == facts.trusted_pid;
  if (!trusted) {
    if (facts.unbound_from_peer >= limits.max_unbound_per_peer) {
      return {ConnectionVerdict::kBusy, "too many connections from pid " +
                                            std::to_string(facts.peer->pid) +
                                            " that have not said hello"};
    }
    if (facts.unbound_from_others >= limits.max_unbound_others) {
      return {ConnectionVerdict::kBusy, "too many connections that have not said hello"};
    }
  }
  if (facts.connections < limits.max_connections) return {ConnectionVerdict::kAdmit, ""};
  // Every slot is taken: the trusted side is starting a host, and a connection that never said
  // hello (the oldest) is what gives way. A registered host's connection never does.
  if (trusted && facts.unbound > 0) return {ConnectionVerdict::kAdmitAfterEvictingOldest, ""};
  return {ConnectionVerdict::kBusy, "too many connections"};
}

namespace {

RequestAdmission Refuse(std::string code, std::string reason, bool close) {
  return {RequestVerdict::kRefuse, Refusal{std::move(code), std::move(reason), close}};
}

}  // namespace

RequestAdmission AdmitRequest(const RequestFacts& facts, const GatewayLimits& limits) {
  static const std::vector<std::string> kNoArgs;
  const std::vector<std::string>& args = facts.args ? *facts.args : kNoArgs;
  const ExpectedHost* reg = facts.registration;
  if (reg == nullptr) {
    return Refuse("denied", facts.bound ? "capability token revoked" : "unknown capability token",
                  true);
  }
  // The kernel-attested sender must be the host the token was issued to.
  if (facts.sender.pid != reg->pid || facts.sender.uid != reg->uid ||
      facts.connection_uid != reg->uid) {
    return Refuse("denied",
                  "token presented by pid " + std::to_string(facts.sender.pid) +
                      ", issued to pid " + std::to_string(reg->pid),
                  true);
  }
  if (facts.op == "hello") {
    // args: plugin id, workspace. A connection serves exactly one plugin.
    if (args.size() != 2) return Refuse("invalid", "hello takes plugin id and workspace", true);
    if (args[0] != reg->plugin) return Refuse("denied", "token is not for plugin " + args[0], true);
    if (args[1] != reg->workspace || args[1] != facts.workspace) {
      return Refuse("denied", "wrong workspace: " + args[1], true);
    }
    if (facts.bound && !facts.bound_to_registration) {
      return Refuse("denied", "connection already bound to another plugin", true);
    }
    return {RequestVerdict::kHello, {}};
  }
  if (!facts.bound_to_registration) {
    return Refuse("denied", "say hello with this token first", true);
  }
  if (facts.in_flight >= limits.max_inflight_per_connection) {
    return Refuse("busy", "too many requests in flight on this connection", false);
  }
  return {RequestVerdict::kServe, {}};
}

uint64_t AnswerBound(std::string_view op, const AnswerCaps& caps) {
  // Ids, field lengths, a status and an error's text (which may quote a path).
  constexpr uint64_t kFrameRoom = 16 * 1024;
  // fs.list: "name\0type\0" per entry, a name at most NAME_MAX (255) bytes.
  constexpr uint64_t kListEntryBytes = 272;
  if (op == "fs.read") return caps.read_bytes + kFrameRoom;
  if (op == "fs.list") return caps.list_entries * kListEntryBytes + kFrameRoom;
  if (op == "exec") return caps.exec_output_bytes + kFrameRoom;
  if (op == "net.fetch") return caps.fetch_bytes + kFrameRoom;
  return kFrameRoom;
}

uint64_t QuotaReservation(uint64_t answer_bound, uint64_t payload, uint64_t capacity) {
  if (payload >= capacity) return 0;  // refused for the payload alone
  return std::min(answer_bound, capacity - payload);
}

}  // namespace anvil::gateway
