// sys.fs through a real gateway process: the benign paths, with grants enforced.
#include <gtest/gtest.h>
#include <unistd.h>

#include "gateway_fixture.h"
#include "policy/plugin_api.h"

namespace anvil::testing {
namespace gateway_fs_test {
namespace {

class GatewayFs : public GatewayTest {};

TEST_F(GatewayFs, ReadWriteListStatWithinTheGrant) {
  WriteFile(*ws_ / "a.txt", "hello");
  Shell("mkdir -p '" + ws_->path() + "/notes'");
  StartGateway();
  auto token = RegisterPlugin("example.rw", ReadWriteGrant());
  auto client = Client(token, "example.rw");
  auto r = client->Call("fs.read", {"a.txt"});
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->ok) << r->ErrorText();
  EXPECT_EQ(r->fields[0], "hello");

  std::string binary("\x00\xff\x01 data", 8);
  r = client->Call("fs.write", {"notes/n.bin", binary});
  ASSERT_TRUE(r && r->ok) << (r ? r->ErrorText() : r.error().ToString());
  EXPECT_EQ(ReadFile(*ws_ / "notes/n.bin"), binary);

  r = client->Call("fs.stat", {"notes/n.bin"});
  ASSERT_TRUE(r && r->ok);
  EXPECT_EQ(r->fields[0], "file");
  EXPECT_EQ(r->fields[1], "8");

  r = client->Call("fs.list", {"."});
  ASSERT_TRUE(r && r->ok) << r->ErrorText();
  EXPECT_NE(r->fields[1].find(std::string("a.txt\0file\0", 11)), std::string::npos);

  r = client->Call("fs.write", {"a.txt", "overwrite"});
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->ok);
  EXPECT_EQ(r->fields[0], "denied");
  EXPECT_EQ(ReadFile(*ws_ / "a.txt"), "hello");

  r = client->Call("fs.read", {"missing.c"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->ErrorText(), "not_found: missing.c");
}

TEST_F(GatewayFs, AuditHasOneLinePerDecisionWithReason) {
  WriteFile(*ws_ / "a.txt", "x");
  StartGateway();
  auto token = RegisterPlugin("example.audit", ReadWriteGrant());
  auto client = Client(token, "example.audit");
  ASSERT_TRUE(client->Call("fs.read", {"a.txt"}));
  ASSERT_TRUE(client->Call("fs.read", {"../etc/passwd"}));
  ASSERT_TRUE(gateway_->Control({{"op", "status"}}));  // flushes the log
  auto lines = AuditLines();
  int reads = 0, denied = 0;
  for (const auto& l : lines) {
    if (l["op"] == "fs.read") {
      ++reads;
      if (l["verdict"] != "allow") {
        ++denied;
        EXPECT_EQ(l["code"], "invalid");
        EXPECT_FALSE(l["reason"].get<std::string>().empty());
      }
      EXPECT_EQ(l["plugin"], "example.audit");
    }
  }
  EXPECT_EQ(reads, 2);
  EXPECT_EQ(denied, 1);
}

// A control reply comes after every audit line of the answers the plugin already has: the
// lines of I/O threads are flushed before the trusted side is answered, not after.
TEST_F(GatewayFs, ControlReplyFollowsTheAuditLinesOfAnswersAlreadySent) {
  WriteFile(*ws_ / "a.txt", "x");
  StartGateway();
  auto token = RegisterPlugin("example.audit", ReadWriteGrant());
  auto client = Client(token, "example.audit");
  usleep(100000);  // the hello's line is written
  size_t lines = AuditLines().size();
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE(client->Call("fs.read", {"a.txt"}));
    ASSERT_TRUE(gateway_->Control({{"op", "status"}}));
    auto now = AuditLines();
    ASSERT_EQ(now.size(), lines + 1) << "read " << i << ": its audit line was not yet written";
    lines = now.size();
  }
}

// The gateway knows every gateway op of the plugin API description (policy/plugin_api.h): none
// is "unknown operation", and each takes exactly its described number of fields (the optional
// ones may be left out).
TEST_F(GatewayFs, EveryDescribedOpIsDispatchedWithItsFieldCount) {
  StartGateway();
  auto token = RegisterPlugin("example.ops", ReadWriteGrant());
  auto client = Client(token, "example.ops");
  size_t seen = 0;
  for (const OpSpec& op : PluginApi().ops) {
    if (op.channel != ApiChannel::kGateway) continue;
    ++seen;
    std::vector<std::string> fields;
    for (const auto& f : op.request) fields.push_back(f.example);
    auto r = client->Call(op.op, fields);
    ASSERT_TRUE(r) << op.op;
    EXPECT_EQ(r->ErrorText().find("unknown operation"), std::string::npos) << op.op;
    if (!op.request.empty()) {
      fields.push_back("x");
      r = client->Call(op.op, fields);
      ASSERT_TRUE(r) << op.op;
      EXPECT_EQ(r->ErrorText().rfind("invalid: " + op.op + " takes ", 0), 0u)
          << op.op << ": " << r->ErrorText();
    }
  }
  EXPECT_GE(seen, 10u);
  auto r = client->Call("fs.chmod", {"a"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->ErrorText(), "invalid: unknown operation fs.chmod");
}

}  // namespace
}  // namespace gateway_fs_test
}  // namespace anvil::testing
