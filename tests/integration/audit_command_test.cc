// `anvil audit`: times on every line, housekeeping hidden unless --all, --plugin/--since/
// --denied, and bad filter values refused with `fix:`.
#include "plugin_debug.h"

namespace anvil::testing {
namespace audit_command_test {
namespace {

using namespace std::chrono_literals;

// ---- anvil audit ----------------------------------------------------------------------------

class Audit : public PluginDebug {
 protected:
  void SetUp() override {
    PluginDebug::SetUp();
    log_ = out_ / "audit.jsonl";
    WriteFile(
        log_,
        R"({"time":1777636800.5,"plugin":"a.one","op":"register","target":"pid 1","verdict":"allow"})"
        "\n"
        R"({"time":1777636801.25,"plugin":"a.one","op":"hello","verdict":"allow"})"
        "\n"
        R"({"time":1777636802,"plugin":"a.one","op":"fs.read","target":"src/a.c","verdict":"allow"})"
        "\n"
        R"({"time":1777636803,"plugin":"a.one","op":"fs.read","target":"../x","verdict":"deny","reason":"outside the grant"})"
        "\n"
        R"({"time":1777640400,"plugin":"b.two","op":"fs.write","target":"n\u001b[2J","verdict":"deny","reason":"r"})"
        "\n"
        R"({"time":1777640401,"plugin":"a.one","op":"revoke","verdict":"allow","reason":"host exited"})"
        "\n");
  }
  RunResult AuditRun(std::vector<std::string> args) {
    args.insert(args.begin(), {AnvilBin(), "audit", "--file", log_});
    return testing::Run(args, Env(state_.path()));
  }
  std::string log_;
};

TEST_F(Audit, LinesHaveTimesAndHousekeepingIsHiddenUnlessAll) {
  auto r = AuditRun({});
  EXPECT_EQ(r.status, 0) << r.err;
  auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0], "2026-05-01T12:00:02.000Z  allow\ta.one\tfs.read\tsrc/a.c");
  EXPECT_EQ(lines[1], "2026-05-01T12:00:03.000Z  deny\ta.one\tfs.read\t../x\toutside the grant");
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);  // plugin text is sanitized
  r = AuditRun({"--all"});
  EXPECT_EQ(Lines(r.out).size(), 6u) << r.out;
  EXPECT_NE(r.out.find("revoke\t\thost exited"), std::string::npos) << r.out;
}

TEST_F(Audit, FiltersByPluginDenialAndTime) {
  auto r = AuditRun({"--plugin", "b.two"});
  EXPECT_EQ(Lines(r.out).size(), 1u) << r.out;
  r = AuditRun({"--denied"});
  EXPECT_EQ(Lines(r.out).size(), 2u) << r.out;
  r = AuditRun({"--denied", "--plugin", "a.one"});
  EXPECT_EQ(Lines(r.out).size(), 1u) << r.out;
  r = AuditRun({"--since", "2026-05-01T13:00:00Z"});
  EXPECT_EQ(Lines(r.out).size(), 1u) << r.out;
  r = AuditRun({"--since", "2026-05-01T14:00:00+02:00", "--all"});  // = 12:00Z
  EXPECT_EQ(Lines(r.out).size(), 6u) << r.out;
  r = AuditRun({"--since", "10m"});  // all of it is older
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.out.empty()) << r.out;
  r = AuditRun({"--json", "--denied"});
  EXPECT_EQ(Lines(r.out).size(), 2u) << r.out;
}

TEST_F(Audit, BadFilterValuesSayWhatAndFix) {
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--since", "yesterday"},
                                              {"--since", "2026-13-01T00:00:00Z"},
                                              {"--since", "2026-05-01T12:00:00"},
                                              {"--since"},
                                              {"--plugin"},
                                              {"--since", "-5m"}}) {
    auto r = AuditRun(bad);
    EXPECT_EQ(r.status, 2) << bad[0];
    EXPECT_NE(r.err.find("invalid: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("fix:"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace audit_command_test
}  // namespace anvil::testing
