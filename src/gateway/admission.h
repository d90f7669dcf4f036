// Who may talk to the gateway, decided from facts alone: no sockets, no clock, no state. The
// gateway gathers the facts (what the kernel attests about the peer, what the registration the
// presented token names expects, how many connections and requests there are) and carries out
// the answer; the order of the checks here is a security property (tests/unit/admission_test.cc
// states it).
//
// Two doors:
//   a connection, at accept: the peer's uid (SO_PEERCRED), then the slots a process that has
//     not said hello may hold (GatewayLimits, "Admission"), then the connection cap;
//   a request, per frame: the capability token (the registration it names, found in constant
//     time by the caller), the kernel-attested sender (SCM_CREDENTIALS) against the host the
//     token was issued to, the binding (hello, or the plugin the connection said hello for),
//     then the requests in flight on the connection.
// The per-registration rate buckets (requests and bytes per second) are meters, not facts: the
// caller applies them right after an admitted request, in that order.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/gateway_limits.h"
#include "ipc/peer_credentials.h"

namespace anvil::gateway {

// A refusal as the peer and the audit log see it.
struct Refusal {
  std::string code;    // the wire error code: "denied", "invalid", "busy"
  std::string reason;  // the error text
  bool close = false;  // the connection is closed once the answer is sent
};

// ---- a connection ----------------------------------------------------------------------------

struct ConnectionFacts {
  std::optional<ipc::PeerCredentials> peer;  // SO_PEERCRED at accept; none: the kernel named none
  uid_t session_uid = 0;                     // the gateway's own effective uid
  pid_t trusted_pid = 0;                     // the control channel's peer (the trusted side)
  size_t connections = 0;                    // open now
  size_t unbound = 0;                        // of those, not said hello yet (any process)
  // Not said hello yet and not the trusted side's: from this peer's pid, and from anyone.
  size_t unbound_from_peer = 0;
  size_t unbound_from_others = 0;
};

enum class ConnectionVerdict {
  kAdmit,
  // Every slot is taken and the trusted side is starting a host: the oldest connection that
  // never said hello is closed, then this one is admitted.
  kAdmitAfterEvictingOldest,
  kDeny,  // not the session's user: closed without an answer, always audited
  kBusy,  // no room: answered "busy", then closed (audited at a bounded rate)
};

struct ConnectionAdmission {
  ConnectionVerdict verdict = ConnectionVerdict::kAdmit;
  std::string reason;  // kDeny, kBusy
};

ConnectionAdmission AdmitConnection(const ConnectionFacts& facts, const GatewayLimits& limits);

// ---- a request -------------------------------------------------------------------------------

// What a registration expects of the host its capability token was issued to.
struct ExpectedHost {
  std::string plugin;
  pid_t pid = 0;
  uid_t uid = 0;
  std::string workspace;
};

struct RequestFacts {
  std::string_view op;
  const std::vector<std::string>* args =
      nullptr;  // the request's fields (hello: plugin, workspace)
  // The registration the presented token names; null: none does (unknown, or revoked).
  const ExpectedHost* registration = nullptr;
  bool bound = false;                  // the connection said hello (to some registration)
  bool bound_to_registration = false;  // ... and to the one this token names
  ipc::PeerCredentials sender;         // SCM_CREDENTIALS of the frame's bytes
  uid_t connection_uid = 0;            // SO_PEERCRED at accept
  std::string_view workspace;          // the session's (canonical)
  size_t in_flight = 0;                // requests queued or running on this connection
};

enum class RequestVerdict {
  kRefuse,  // answer `refusal` (and close when it says so)
  kHello,   // a valid hello: bind the connection to the registration and answer it
  kServe,   // go on: the rate buckets, then the operation
};

struct RequestAdmission {
  RequestVerdict verdict = RequestVerdict::kServe;
  Refusal refusal;  // kRefuse
};

RequestAdmission AdmitRequest(const RequestFacts& facts, const GatewayLimits& limits);

// The byte quota's reservation. An admitted request takes from its plugin's byte bucket, before
// the op runs, its own payload and what its answer can hold under the session's caps; once the
// answer is ready the bucket is settled against its real size (the unused part given back, an
// answer over the bound charged). So calls running at once cannot together take more than the
// bucket holds: charged only after the fact, every call let in while the balance was positive
// added a whole answer past the quota.
struct AnswerCaps {
  uint64_t read_bytes = 0;         // GatewayLimits::max_read_bytes
  uint64_t list_entries = 0;       // GatewayLimits::max_list_entries
  uint64_t exec_output_bytes = 0;  // ExecLimits: stdout and stderr caps together
  uint64_t fetch_bytes = 0;        // FetchLimits: body and header caps together
};
// The most bytes the answer frame of `op` can hold: its data's cap plus room for the frame and
// an error's text.
uint64_t AnswerBound(std::string_view op, const AnswerCaps& caps);
// What to reserve beside `payload` in a bucket of `capacity`: the bound, but never so much that
// the request could not be let in with a full bucket (an answer bigger than the whole quota then
// takes it all, and is charged the rest once it is ready).
uint64_t QuotaReservation(uint64_t answer_bound, uint64_t payload, uint64_t capacity);

}  // namespace anvil::gateway
