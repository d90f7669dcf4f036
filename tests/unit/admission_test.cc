// The gateway's admission (src/gateway/admission.h), table by table: every refusal of a new
// connection and of a request beside the neighbour that is admitted, and rows where several
// checks fail at once, which say the order the checks run in (the first refusal is the answer).
#include "gateway/admission.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gateway/registration.h"

namespace anvil::gateway {
namespace admission_test {
namespace {

constexpr uid_t kUser = 1000;
constexpr pid_t kTrusted = 50;  // the control channel's peer
constexpr pid_t kHost = 77;     // the host a token was issued to
constexpr pid_t kOther = 99;    // another process of the user

GatewayLimits Limits() {
  GatewayLimits l;
  l.max_connections = 8;
  l.max_unbound_per_peer = 2;
  l.max_unbound_others = 3;
  l.max_inflight_per_connection = 4;
  return l;
}

// ---- connections -----------------------------------------------------------------------------

struct ConnectionRow {
  const char* name;
  ConnectionFacts facts;
  ConnectionVerdict verdict;
  const char* reason;
};

ConnectionFacts From(pid_t pid, uid_t uid = kUser) {
  ConnectionFacts f;
  f.peer = ipc::PeerCredentials{pid, uid, uid};
  f.session_uid = kUser;
  f.trusted_pid = kTrusted;
  return f;
}

ConnectionFacts With(ConnectionFacts f, size_t connections, size_t unbound, size_t from_peer,
                     size_t from_others) {
  f.connections = connections;
  f.unbound = unbound;
  f.unbound_from_peer = from_peer;
  f.unbound_from_others = from_others;
  return f;
}

TEST(GatewayAdmission, ConnectionsTable) {
  using V = ConnectionVerdict;
  ConnectionFacts no_peer = From(kOther);
  no_peer.peer.reset();
  const std::vector<ConnectionRow> rows = {
      {"a process of the user, room everywhere", From(kOther), V::kAdmit, ""},
      {"no peer credentials", no_peer, V::kDeny, "no peer credentials"},
      {"another user", From(kOther, 1001), V::kDeny, "peer uid 1001 is not the session's user"},
      {"another user, even the trusted pid", From(kTrusted, 0), V::kDeny,
       "peer uid 0 is not the session's user"},
      // Connections that have not said hello: per process, then all processes together.
      {"one below the per-process cap", With(From(kOther), 2, 1, 1, 1), V::kAdmit, ""},
      {"at the per-process cap", With(From(kOther), 2, 2, 2, 2), V::kBusy,
       "too many connections from pid 99 that have not said hello"},
      {"one below the cap of all others", With(From(kOther), 2, 2, 0, 2), V::kAdmit, ""},
      {"at the cap of all others", With(From(kOther), 3, 3, 0, 3), V::kBusy,
       "too many connections that have not said hello"},
      {"the trusted side is not held to either", With(From(kTrusted), 5, 5, 5, 5), V::kAdmit, ""},
      // The connection cap.
      {"one below the connection cap", With(From(kOther), 7, 0, 0, 0), V::kAdmit, ""},
      {"at the connection cap", With(From(kOther), 8, 0, 0, 0), V::kBusy, "too many connections"},
      {"the trusted side at the cap: the oldest without hello gives way",
       With(From(kTrusted), 8, 1, 0, 0), V::kAdmitAfterEvictingOldest, ""},
      {"the trusted side at the cap, every connection bound", With(From(kTrusted), 8, 0, 0, 0),
       V::kBusy, "too many connections"},
      // Order: the first failing check is the answer.
      {"another user and every cap passed: the uid", With(From(kOther, 1001), 9, 9, 9, 9), V::kDeny,
       "peer uid 1001 is not the session's user"},
      {"both hello caps passed: the per-process one", With(From(kOther), 3, 3, 2, 3), V::kBusy,
       "too many connections from pid 99 that have not said hello"},
      {"a hello cap and the connection cap: the hello cap", With(From(kOther), 8, 3, 0, 3),
       V::kBusy, "too many connections that have not said hello"},
  };
  const GatewayLimits limits = Limits();
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    ConnectionAdmission a = AdmitConnection(row.facts, limits);
    EXPECT_EQ(a.verdict, row.verdict);
    EXPECT_EQ(a.reason, row.reason);
  }
}

// ---- requests --------------------------------------------------------------------------------

const ExpectedHost kRegistration{"p.one", kHost, kUser, "/ws"};

struct RequestCase {
  std::string op = "fs.read";
  std::vector<std::string> args = {"a.txt"};
  const ExpectedHost* registration = &kRegistration;
  bool bound = true;
  bool bound_to_registration = true;
  ipc::PeerCredentials sender{kHost, kUser, kUser};
  uid_t connection_uid = kUser;
  size_t in_flight = 0;
};

RequestCase Hello() {
  RequestCase c;
  c.op = "hello";
  c.args = {"p.one", "/ws"};
  c.bound = false;
  c.bound_to_registration = false;
  return c;
}

template <typename F>
RequestCase Hello(F change) {
  RequestCase c = Hello();
  change(c);
  return c;
}

template <typename F>
RequestCase Call(F change) {
  RequestCase c;
  change(c);
  return c;
}

struct RequestRow {
  const char* name;
  RequestCase in;
  RequestVerdict verdict;
  const char* code;  // kRefuse only
  const char* reason;
  bool close;
};

TEST(GatewayAdmission, RequestsTable) {
  using V = RequestVerdict;
  const ExpectedHost other_ws{"p.one", kHost, kUser, "/elsewhere"};
  const std::vector<RequestRow> rows = {
      // The token.
      {"a hello with the token of this host", Hello(), V::kHello, "", "", false},
      {"an unknown token", Hello([](auto& c) { c.registration = nullptr; }), V::kRefuse, "denied",
       "unknown capability token", true},
      {"a revoked token on a bound connection", Call([](auto& c) { c.registration = nullptr; }),
       V::kRefuse, "denied", "capability token revoked", true},
      // The kernel-attested sender against the host the token was issued to.
      {"another process presents the token", Hello([](auto& c) { c.sender.pid = kOther; }),
       V::kRefuse, "denied", "token presented by pid 99, issued to pid 77", true},
      {"the host's pid under another uid", Hello([](auto& c) { c.sender.uid = 1001; }), V::kRefuse,
       "denied", "token presented by pid 77, issued to pid 77", true},
      {"a connection another uid made", Hello([](auto& c) { c.connection_uid = 1001; }), V::kRefuse,
       "denied", "token presented by pid 77, issued to pid 77", true},
      {"a request from the host, on a bound connection", Call([](auto&) {}), V::kServe, "", "",
       false},
      {"a request from another process, on the host's bound connection",
       Call([](auto& c) { c.sender.pid = kOther; }), V::kRefuse, "denied",
       "token presented by pid 99, issued to pid 77", true},
      // hello.
      {"hello without the workspace", Hello([](auto& c) { c.args = {"p.one"}; }), V::kRefuse,
       "invalid", "hello takes plugin id and workspace", true},
      {"hello with a field too many", Hello([](auto& c) { c.args.push_back("x"); }), V::kRefuse,
       "invalid", "hello takes plugin id and workspace", true},
      {"hello for another plugin", Hello([](auto& c) { c.args[0] = "p.two"; }), V::kRefuse,
       "denied", "token is not for plugin p.two", true},
      {"hello for another workspace", Hello([](auto& c) { c.args[1] = "/other"; }), V::kRefuse,
       "denied", "wrong workspace: /other", true},
      {"hello for the registration's workspace, not the session's", Hello([&](auto& c) {
         c.registration = &other_ws;
         c.args[1] = "/elsewhere";
       }),
       V::kRefuse, "denied", "wrong workspace: /elsewhere", true},
      {"hello for the session's workspace, not the registration's",
       Hello([&](auto& c) { c.registration = &other_ws; }), V::kRefuse, "denied",
       "wrong workspace: /ws", true},
      {"hello on a connection bound to another plugin", Hello([](auto& c) { c.bound = true; }),
       V::kRefuse, "denied", "connection already bound to another plugin", true},
      {"hello again on the connection bound to this plugin", Hello([](auto& c) {
         c.bound = true;
         c.bound_to_registration = true;
       }),
       V::kHello, "", "", false},
      // The binding.
      {"a request before hello", Call([](auto& c) {
         c.bound = false;
         c.bound_to_registration = false;
       }),
       V::kRefuse, "denied", "say hello with this token first", true},
      {"a request with the token of another plugin than the connection's",
       Call([](auto& c) { c.bound_to_registration = false; }), V::kRefuse, "denied",
       "say hello with this token first", true},
      // Requests in flight.
      {"one below the in-flight cap", Call([](auto& c) { c.in_flight = 3; }), V::kServe, "", "",
       false},
      {"at the in-flight cap", Call([](auto& c) { c.in_flight = 4; }), V::kRefuse, "busy",
       "too many requests in flight on this connection", false},
      {"hello is not held to the in-flight cap", Hello([](auto& c) { c.in_flight = 9; }), V::kHello,
       "", "", false},
      // Order: the first failing check is the answer.
      {"unknown token from another process", Hello([](auto& c) {
         c.registration = nullptr;
         c.sender.pid = kOther;
       }),
       V::kRefuse, "denied", "unknown capability token", true},
      {"another process, hello for another plugin and workspace", Hello([](auto& c) {
         c.sender.pid = kOther;
         c.args = {"p.two", "/other"};
       }),
       V::kRefuse, "denied", "token presented by pid 99, issued to pid 77", true},
      {"hello for another plugin and workspace, on a bound connection", Hello([](auto& c) {
         c.args = {"p.two", "/other"};
         c.bound = true;
       }),
       V::kRefuse, "denied", "token is not for plugin p.two", true},
      {"hello for another workspace on a connection bound elsewhere", Hello([](auto& c) {
         c.args[1] = "/other";
         c.bound = true;
       }),
       V::kRefuse, "denied", "wrong workspace: /other", true},
      {"before hello and over the in-flight cap", Call([](auto& c) {
         c.bound = false;
         c.bound_to_registration = false;
         c.in_flight = 9;
       }),
       V::kRefuse, "denied", "say hello with this token first", true},
  };
  const GatewayLimits limits = Limits();
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    RequestFacts facts;
    facts.op = row.in.op;
    facts.args = &row.in.args;
    facts.registration = row.in.registration;
    facts.bound = row.in.bound;
    facts.bound_to_registration = row.in.bound_to_registration;
    facts.sender = row.in.sender;
    facts.connection_uid = row.in.connection_uid;
    facts.workspace = "/ws";
    facts.in_flight = row.in.in_flight;
    RequestAdmission a = AdmitRequest(facts, limits);
    EXPECT_EQ(a.verdict, row.verdict);
    if (row.verdict != V::kRefuse) continue;
    EXPECT_EQ(a.refusal.code, row.code);
    EXPECT_EQ(a.refusal.reason, row.reason);
    EXPECT_EQ(a.refusal.close, row.close);
  }
}

// What a write's charge becomes once the write says what it did (SettleWriteCharge): data that
// is in place keeps its bytes charged whatever failed after (a failed fsync of the directory);
// the entry follows what the rename found, not the look before it.
TEST(GatewayAdmission, AWriteChargeIsSettledByWhatTheWriteDid) {
  struct Row {
    const char* name;
    uint64_t charged_entries;
    WriteOutcome did;
    WriteSettlement want;
  };
  const Row rows[] = {
      {"nothing placed: all back", 1, {false, false}, {10, 1, 0}},
      {"nothing placed, a rewrite: bytes back", 0, {false, false}, {10, 0, 0}},
      {"made, as charged", 1, {true, true}, {0, 0, 0}},
      {"replaced, as charged", 0, {true, false}, {0, 0, 0}},
      {"made where a file was seen: one entry more", 0, {true, true}, {0, 0, 1}},
      {"replaced where none was seen: the entry back", 1, {true, false}, {0, 1, 0}},
  };
  for (const Row& row : rows) {
    const WriteSettlement got = SettleWriteCharge(10, row.charged_entries, row.did);
    EXPECT_EQ(got.give_back_bytes, row.want.give_back_bytes) << row.name;
    EXPECT_EQ(got.give_back_entries, row.want.give_back_entries) << row.name;
    EXPECT_EQ(got.more_entries, row.want.more_entries) << row.name;
  }
  // An entry made past the look is counted even at the cap: the next call is refused, also one
  // that makes nothing.
  WriteBudget budget(100, 1);
  ASSERT_TRUE(budget.Take(0, 1));
  EXPECT_TRUE(budget.Take(5, 0)) << "at the cap, a rewrite still writes";
  budget.Charge(0, 1);
  EXPECT_FALSE(budget.Take(0, 1));
  EXPECT_FALSE(budget.Take(5, 0)) << "past the cap, nothing more";
  budget.GiveBack(0, 1);
  EXPECT_FALSE(budget.Take(0, 1)) << "one over the cap was counted";
}

}  // namespace
}  // namespace admission_test
}  // namespace anvil::gateway

namespace anvil::gateway {
namespace admission_test {
namespace {

// The byte quota's reservation: an op takes what its answer can hold, never more than a full
// bucket leaves beside the request itself.
TEST(GatewayAdmission, QuotaReservationTable) {
  const AnswerCaps caps{8u << 20, 10000, 9u << 20, (8u << 20) + (64u << 10)};
  constexpr uint64_t kRoom = 16 * 1024;
  EXPECT_EQ(AnswerBound("fs.read", caps), (8u << 20) + kRoom);
  EXPECT_EQ(AnswerBound("fs.list", caps), 10000u * 272 + kRoom);
  EXPECT_EQ(AnswerBound("exec", caps), (9u << 20) + kRoom);
  EXPECT_EQ(AnswerBound("net.fetch", caps), (8u << 20) + (64u << 10) + kRoom);
  for (const char* op : {"fs.stat", "fs.write", "fs.mkdir", "fs.remove", "fs.rename", "ping", ""}) {
    EXPECT_EQ(AnswerBound(op, caps), kRoom) << op;
  }
  struct Row {
    uint64_t bound, payload, capacity, want;
  };
  for (const Row& row : {
           Row{100, 10, 1000, 100},   // fits: the whole bound
           Row{5000, 10, 1000, 990},  // bigger than the bucket: all of it beside the payload
           Row{5000, 1000, 1000, 0},  // the payload alone fills it
           Row{5000, 2000, 1000, 0},  // refused for the payload anyway
           Row{0, 0, 1000, 0},
       }) {
    EXPECT_EQ(QuotaReservation(row.bound, row.payload, row.capacity), row.want)
        << row.bound << " " << row.payload << " " << row.capacity;
  }
}

// Settling gives back what an answer did not use, never past a full bucket, and charges what it
// used beyond the reservation.
TEST(GatewayAdmission, ABucketSettlesItsReservation) {
  TokenBucket bucket(1000);
  ASSERT_TRUE(bucket.Take(900));
  EXPECT_FALSE(bucket.Take(200));
  bucket.Settle(900, 100);  // 800 unused: back
  EXPECT_TRUE(bucket.Take(850));
  bucket.Settle(850, 2000);  // 1150 more than reserved: a debt
  EXPECT_FALSE(bucket.Take(1));
  TokenBucket full(1000);
  full.Settle(500, 0);  // never past full
  EXPECT_FALSE(full.Take(1001));
  EXPECT_TRUE(full.Take(1000));
}

}  // namespace
}  // namespace admission_test
}  // namespace anvil::gateway

namespace anvil::gateway {
namespace admission_test {
namespace {

// A plugin's write budget takes bytes and entries together or not at all, up to each cap
// exactly, and gives back what a failed call did not write.
TEST(GatewayAdmission, AWriteBudgetTakesBothOrNeither) {
  WriteBudget budget(100, 3);
  EXPECT_TRUE(budget.Take(60, 1));
  EXPECT_TRUE(budget.Take(40, 1));  // exactly the byte cap
  auto over = budget.Take(1, 0);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code, "limit");
  EXPECT_TRUE(budget.Take(0, 1));  // exactly the entry cap
  EXPECT_FALSE(budget.Take(0, 1));
  EXPECT_TRUE(budget.Take(0, 0));  // a rewrite of nothing new
  budget.GiveBack(50, 1);
  EXPECT_FALSE(budget.Take(10, 2)) << "bytes fit, entries do not: neither is taken";
  EXPECT_TRUE(budget.Take(50, 1));
  EXPECT_FALSE(budget.Take(UINT64_MAX, 0));
}

}  // namespace
}  // namespace admission_test
}  // namespace anvil::gateway
