// T8: the admission of a plugin (session/plugin_admission.h), the one place where `anvil run`,
// `anvil serve` and `anvil mcp` decide whether a plugin may start. Its order is the property
// under test: files that are not what they claim to be (entry file, anvil.lock, signature) are
// refused before anyone is asked, and before a stored grant can admit them.
#include "session/plugin_admission.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "policy/display_text.h"
#include "policy/lockfile.h"
#include "policy/unchecked_subtrees.h"

namespace anvil::session {
namespace plugin_admission_test {
namespace {

class PluginAdmissionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/anvil-admission-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    workspace_ = root_ + "/ws";
    plugin_ = root_ + "/plugins/todo";
    std::filesystem::create_directories(workspace_);
    std::filesystem::create_directories(plugin_);
    // Trusted keys are read from the user's config directory: an empty one here.
    const char* old = std::getenv("XDG_CONFIG_HOME");
    if (old != nullptr) old_config_ = old;
    ::setenv("XDG_CONFIG_HOME", (root_ + "/config").c_str(), 1);
    // The records of unchecked subtrees are read from the user's state directory: one here.
    const char* old_state = std::getenv("XDG_STATE_HOME");
    if (old_state != nullptr) old_state_ = old_state;
    ::setenv("XDG_STATE_HOME", (root_ + "/state").c_str(), 1);
    std::ofstream(plugin_ + "/anvil-plugin.toml")
        << "id = \"example.todo\"\nversion = \"1.0.0\"\nruntime = \"lua\"\n"
           "entry = \"main.lua\"\n\n[permissions]\nfs.read = [\"**\"]\n";
    std::ofstream(plugin_ + "/main.lua") << "-- v1\n";
    auto store = GrantStore::Open(root_ + "/state/grants.json");
    ASSERT_TRUE(store) << store.error().ToString();
    store_.emplace(std::move(*store));
  }
  void TearDown() override {
    if (old_config_) {
      ::setenv("XDG_CONFIG_HOME", old_config_->c_str(), 1);
    } else {
      ::unsetenv("XDG_CONFIG_HOME");
    }
    if (old_state_) {
      ::setenv("XDG_STATE_HOME", old_state_->c_str(), 1);
    } else {
      ::unsetenv("XDG_STATE_HOME");
    }
    std::filesystem::remove_all(root_);
  }

  Manifest Load() {
    auto m = LoadManifest(plugin_);
    EXPECT_TRUE(m) << m.error().ToString();
    return *m;
  }
  AdmissionRequest Request(bool require_signed = false) const {
    return {workspace_, plugin_, require_signed, /*entry_checked=*/false};
  }
  // Approves the manifest as it is now, the way a person's yes does.
  void Approve() {
    const Manifest m = Load();
    Admission a = AdmitPlugin(Request(), m, *store_);
    ASSERT_EQ(a.verdict, AdmissionVerdict::kNeedsConsent);
    ASSERT_TRUE(ApproveAdmission(Request(), m, *store_, a));
    ASSERT_EQ(a.verdict, AdmissionVerdict::kAdmitted);
  }
  void PinInLock() {
    const Manifest m = Load();
    auto hashes = HashPluginDir(plugin_, m);
    ASSERT_TRUE(hashes) << hashes.error().ToString();
    Lockfile lock;
    lock.plugins[m.id] = *hashes;
    ASSERT_TRUE(WriteLockfile(workspace_, lock));
  }

  std::string root_, workspace_, plugin_;
  std::optional<std::string> old_config_, old_state_;
  std::optional<GrantStore> store_;
};

TEST_F(PluginAdmissionTest, UnapprovedNeedsConsentThenAYesAdmits) {
  const Manifest m = Load();
  Admission a = AdmitPlugin(Request(), m, *store_);
  ASSERT_EQ(a.verdict, AdmissionVerdict::kNeedsConsent);
  EXPECT_FALSE(a.grant);
  EXPECT_FALSE(a.error);
  EXPECT_EQ(a.pinned_files.count("main.lua"), 1u) << "the host runs the copy that was looked up";
  ASSERT_TRUE(ApproveAdmission(Request(), m, *store_, a));
  EXPECT_EQ(a.verdict, AdmissionVerdict::kAdmitted);
  ASSERT_TRUE(a.grant);
  EXPECT_EQ(*a.grant, m.requested);
  // The next run finds the grant without asking.
  Admission again = AdmitPlugin(Request(), m, *store_);
  EXPECT_EQ(again.verdict, AdmissionVerdict::kAdmitted);
}

TEST_F(PluginAdmissionTest, ABadSignatureIsRefusedBeforeConsentIsAsked) {
  std::ofstream(plugin_ + "/anvil-plugin.toml.sig") << "not a signature\n";
  Admission a = AdmitPlugin(Request(), Load(), *store_);
  EXPECT_EQ(a.verdict, AdmissionVerdict::kRefused);
  ASSERT_TRUE(a.error);
  EXPECT_NE(a.error->message.find("anvil-plugin.toml.sig"), std::string::npos)
      << a.error->ToString();
  // ApproveAdmission never turns a refusal into a grant.
  const Manifest m = Load();
  EXPECT_TRUE(ApproveAdmission(Request(), m, *store_, a));
  EXPECT_EQ(a.verdict, AdmissionVerdict::kRefused);
  EXPECT_FALSE(a.grant);
}

TEST_F(PluginAdmissionTest, ABadSignatureIsRefusedEvenWithAStoredGrant) {
  Approve();
  std::ofstream(plugin_ + "/anvil-plugin.toml.sig") << "not a signature\n";
  EXPECT_EQ(AdmitPlugin(Request(), Load(), *store_).verdict, AdmissionVerdict::kRefused);
  std::filesystem::remove(plugin_ + "/anvil-plugin.toml.sig");  // benign neighbour
  EXPECT_EQ(AdmitPlugin(Request(), Load(), *store_).verdict, AdmissionVerdict::kAdmitted);
}

TEST_F(PluginAdmissionTest, RequiredSignatureRefusesAnUnsignedPlugin) {
  Approve();
  Admission a = AdmitPlugin(Request(/*require_signed=*/true), Load(), *store_);
  EXPECT_EQ(a.verdict, AdmissionVerdict::kRefused);
  EXPECT_EQ(AdmitPlugin(Request(), Load(), *store_).verdict, AdmissionVerdict::kAdmitted);
}

TEST_F(PluginAdmissionTest, ALockMismatchIsRefusedEvenWithAStoredGrant) {
  PinInLock();
  Approve();
  Admission pinned = AdmitPlugin(Request(), Load(), *store_);
  ASSERT_EQ(pinned.verdict, AdmissionVerdict::kAdmitted);
  EXPECT_EQ(pinned.pinned_files.count("main.lua"), 1u) << "anvil.lock's files go to the host";
  std::ofstream(plugin_ + "/main.lua") << "-- changed after the lock\n";
  Admission a = AdmitPlugin(Request(), Load(), *store_);
  EXPECT_EQ(a.verdict, AdmissionVerdict::kRefused);
  EXPECT_EQ(a.stopped_at, AdmissionStep::kLock);
  ASSERT_TRUE(a.error);
  EXPECT_NE(a.error->message.find("main.lua"), std::string::npos) << a.error->ToString();
}

TEST_F(PluginAdmissionTest, AnEntryThatIsASymlinkOutsideIsRefused) {
  std::ofstream(root_ + "/elsewhere.lua") << "-- outside the plugin\n";
  std::filesystem::remove(plugin_ + "/main.lua");
  std::filesystem::create_symlink(root_ + "/elsewhere.lua", plugin_ + "/main.lua");
  Admission a = AdmitPlugin(Request(), Load(), *store_);
  EXPECT_EQ(a.verdict, AdmissionVerdict::kRefused);
}

TEST_F(PluginAdmissionTest, ASymlinkedModuleIsRefusedNotJustFailed) {
  Approve();
  std::filesystem::create_directories(plugin_ + "/lib");
  std::ofstream(root_ + "/util.lua") << "return {}\n";
  std::filesystem::create_symlink(root_ + "/util.lua", plugin_ + "/lib/util.lua");
  Admission a = AdmitPlugin(Request(), Load(), *store_);
  EXPECT_EQ(a.verdict, AdmissionVerdict::kRefused);
  ASSERT_TRUE(a.error);
  EXPECT_NE(a.error->message.find("lib/util.lua"), std::string::npos) << a.error->ToString();
}

// Step 0 comes before the stored grant: a sandboxed command's run that left the workspace (a
// subtree in it, or the plugin's directory) unchecked keeps the plugin out even when it was
// approved (red team s5 rtcmd5: its Anvil.toml there was read). Benign neighbours: a record of
// another place admits it, and once a later run resolves the record it is admitted again.
TEST_F(PluginAdmissionTest, NothingRunsWhereASandboxRunLeftSomethingUnchecked) {
  Approve();
  const std::string dir = UncheckedRecordsDir();
  ASSERT_EQ(dir, root_ + "/state/anvil/unchecked");
  ASSERT_TRUE(SaveUncheckedRecord(dir, {{root_}, {{root_ + "/other", "not walked: x"}}}));
  EXPECT_EQ(AdmitPlugin(Request(), Load(), *store_).verdict, AdmissionVerdict::kAdmitted);

  for (const std::string& subtree : {workspace_ + "/sub", workspace_, plugin_}) {
    SCOPED_TRACE(subtree);
    const UncheckedRecord record{{root_}, {{subtree, "not walked: past the 'depth' bound (3)"}}};
    ASSERT_TRUE(SaveUncheckedRecord(dir, record));
    Admission a = AdmitPlugin(Request(), Load(), *store_);
    EXPECT_EQ(a.verdict, AdmissionVerdict::kRefused);
    ASSERT_TRUE(a.error);
    EXPECT_EQ(a.error->code, "denied");
    EXPECT_NE(a.error->message.find(subtree), std::string::npos) << a.error->message;
    EXPECT_FALSE(a.grant);
    auto loaded = LoadUncheckedRecords(dir);
    ASSERT_TRUE(loaded);
    for (const auto& l : *loaded) ASSERT_TRUE(ResolveUncheckedRecord(dir, l, {root_}));
    EXPECT_EQ(AdmitPlugin(Request(), Load(), *store_).verdict, AdmissionVerdict::kAdmitted);
  }
}

// Why a plugin that ran is not admitted any more, in words naming the check and the fix: a lock
// or signature refusal is never called a revoked grant, a revoked grant never "not granted yet",
// code the grant was not approved for never "revoked".
TEST(AdmissionLossTable, NamesTheRealReasonAndTheFix) {
  auto admission = [](AdmissionVerdict v, AdmissionStep step, std::string message) {
    Admission a;
    a.verdict = v;
    a.stopped_at = step;
    if (!message.empty()) a.error = Error{"denied", std::move(message), 0};
    return a;
  };
  Admission revoked = admission(AdmissionVerdict::kNeedsConsent, AdmissionStep::kGrant, "");
  Admission other_copy = revoked;
  other_copy.lookup.other_copy = "/p/old";
  Admission asks_more = revoked;
  asks_more.lookup.previous = Grant{};
  struct Row {
    const char* name;
    Admission now;
    bool ran;
    std::string code;
    std::vector<std::string> says;
    std::vector<std::string> never;
  };
  const std::vector<Row> rows = {
      {"revoked",
       revoked,
       true,
       "consent_required",
       {"test.p", "revoked", "anvil/requestConsent", "anvil plugin approve"},
       {"yet", "anvil.lock"}},
      {"never granted",
       revoked,
       false,
       "consent_required",
       {"not granted in this workspace yet", "anvil/requestConsent"},
       {"revoked"}},
      {"other code",
       other_copy,
       true,
       "consent_required",
       {"code", "/p/old", "not approved", "anvil/requestConsent"},
       {"revoked"}},
      {"manifest asks for more",
       asks_more,
       true,
       "consent_required",
       {"manifest", "asks for more", "anvil/requestConsent"},
       {"revoked"}},
      {"lock",
       admission(AdmissionVerdict::kRefused, AdmissionStep::kLock,
                 "anvil.lock: \"main.lua\" changed (expected a, found b); review the "
                 "plugin, then run `anvil plugin lock` to accept the change"),
       true,
       "unavailable",
       {"anvil.lock", "anvil plugin lock", "refused"},
       {"grant", "revoked"}},
      {"signature",
       admission(AdmissionVerdict::kRefused, AdmissionStep::kSignature,
                 "anvil-plugin.toml.sig: signed by a key you do not trust"),
       true,
       "unavailable",
       {"signature", "anvil-plugin.toml.sig", "trusted key"},
       {"grant", "revoked"}},
      {"unchecked",
       admission(AdmissionVerdict::kRefused, AdmissionStep::kUnchecked,
                 "a sandboxed command's run left \"/w\" unchecked; ... then run `anvil "
                 "sandbox --cwd /w -- true` once"),
       true,
       "unavailable",
       {"unchecked", "anvil sandbox"},
       {"grant", "revoked"}},
      {"store",
       admission(AdmissionVerdict::kFailed, AdmissionStep::kGrant, "grants.json does not parse"),
       true,
       "unavailable",
       {"grant store", "grants.json does not parse"},
       {"revoked"}},
  };
  for (const Row& row : rows) {
    const AdmissionLoss loss = DescribeAdmissionLoss("test.p", "/p/new", row.now, row.ran);
    EXPECT_EQ(loss.code, row.code) << row.name;
    EXPECT_FALSE(loss.reason.empty()) << row.name;
    for (const auto& s : row.says) {
      EXPECT_NE(loss.message.find(s), std::string::npos) << row.name << ": " << loss.message;
    }
    for (const auto& s : row.never) {
      EXPECT_EQ(loss.message.find(s), std::string::npos) << row.name << ": " << loss.message;
      EXPECT_EQ(loss.reason.find(s), std::string::npos) << row.name << ": " << loss.reason;
    }
  }
  // The command it suggests is pasted into a shell: the directory is one quoted word there.
  const AdmissionLoss hostile =
      DescribeAdmissionLoss("test.p", "/p/x$(touch /tmp/p);y", revoked, true);
  EXPECT_NE(hostile.message.find("anvil plugin approve '/p/x$(touch /tmp/p);y'"), std::string::npos)
      << hostile.message;
}

// What bash makes of `word` as the one argument of a command: the bytes it passes.
std::string BashReadsBack(const std::string& word) {
  char tmpl[] = "/tmp/anvil-paste-XXXXXX";
  const int fd = ::mkstemp(tmpl);
  if (fd < 0) return "<no temp file>";
  ::close(fd);
  const std::string script = std::string(tmpl) + ".sh";
  std::ofstream(script) << "printf %s " << word << " > " << tmpl << "\n";
  const int status = std::system(("/bin/bash " + script).c_str());
  std::ifstream in(tmpl, std::ios::binary);
  std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ::unlink(tmpl);
  ::unlink(script.c_str());
  return status == 0 ? out : "<bash failed>";
}

// Review s12: the suggested `anvil plugin approve DIR` was the shell word escaped again for
// display (backslashes doubled, control bytes as \xHH, cut past 200 bytes): pasted, it named
// another directory. It is now one word bash reads back as the directory itself, and shows
// nothing a terminal acts on.
TEST(DescribeAdmissionLoss, TheApproveCommandShownIsTheOneThatApprovesThisDirectory) {
  Admission revoked;
  revoked.verdict = AdmissionVerdict::kNeedsConsent;
  revoked.stopped_at = AdmissionStep::kGrant;
  struct Row {
    const char* what;
    std::string dir;
  };
  const Row rows[] = {
      {"plain", "/p/todo"},
      {"backslash", "/p/a\\b\\x1b"},
      {"newline", "/p/a\nb"},
      {"escape sequence", "/p/\x1b]0;t\x07x\r"},
      {"command substitution", "/p/$(x)`y`;z"},
      {"quote", "/p/it's"},
      {"long", "/p/" + std::string(300, 'd') + "/" + std::string(200, 'e')},
  };
  for (const Row& r : rows) {
    const AdmissionLoss loss = DescribeAdmissionLoss("test.p", r.dir, revoked, true);
    const std::string word = PasteableShellWord(r.dir);
    EXPECT_NE(loss.message.find("`anvil plugin approve " + word + "`"), std::string::npos)
        << r.what << ": " << loss.message;
    EXPECT_EQ(BashReadsBack(word), r.dir) << r.what << ": " << word;
    for (char c : word) {
      const auto b = static_cast<unsigned char>(c);
      EXPECT_TRUE(b >= 0x20 && b != 0x7f) << r.what << ": a control byte shown: " << word;
    }
  }
}

}  // namespace
}  // namespace plugin_admission_test
}  // namespace anvil::session
