// config.toml (the user's, trusted) and Anvil.toml's [sandbox] (a repository's, untrusted: it
// may only narrow). policy/user_config.h.
#include "policy/user_config.h"

#include <gtest/gtest.h>

#include "policy/workspace_config.h"

namespace anvil {
namespace user_config_test {
namespace {

TEST(UserConfig, FullShapeParses) {
  auto c = ParseUserConfig(R"(
[sandbox]
policy = "read-only"
network = "proxy"
read_access = "full"
home = "tmp"
writable_roots = ["~/scratch", "/data/x"]
readable_roots = ["~/.elan"]
allow_hosts = ["github.com", "example.org:8443"]
profiles = ["python", "java"]

[profiles.java]
writable_roots = ["~/.m2/repository"]
allow_hosts = ["repo.maven.apache.org"]
)",
                           "config.toml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->policy, PolicyKind::kReadOnly);
  EXPECT_EQ(c->network, NetworkMode::kProxy);
  EXPECT_EQ(c->read_access, ReadAccess::kFull);
  EXPECT_EQ(c->home, HomeMode::kTmp);
  EXPECT_EQ(c->writable_roots, (std::vector<std::string>{"~/scratch", "/data/x"}));
  EXPECT_EQ(c->readable_roots, std::vector<std::string>{"~/.elan"});
  EXPECT_EQ(c->allow_hosts.size(), 2u);
  EXPECT_EQ(c->profiles, (std::vector<std::string>{"python", "java"}));
  ASSERT_EQ(c->profile_defs.count("java"), 1u);
  EXPECT_EQ(c->profile_defs["java"].allow_hosts, std::vector<std::string>{"repo.maven.apache.org"});
  EXPECT_TRUE(ParseUserConfig("", "config.toml"));
}

TEST(UserConfig, MistakesNameLineColumnAndFix) {
  struct Case {
    const char* text;
    const char* where;
    const char* what;
  };
  const Case cases[] = {
      {"[sandbox]\npolicy = \"yolo\"\n", "config.toml:2:1", "unknown policy 'yolo'"},
      {"[sandbox]\nnetwork = 3\n", "config.toml:2:1", "network must be a string"},
      {"[sandbox]\nwritable_roots = \"~/x\"\n", "config.toml:2:1", "must be an array"},
      {"[sandbox]\nwritable_roots = [\"relative/dir\"]\n", "config.toml:2:", "must be absolute"},
      {"[sandbox]\nallow_hosts = [\"evil host\"]\n", "config.toml:2:", "not a host name"},
      {"[sandbox]\nprofiles = [\"nope\"]\n", "config.toml:2:1", "unknown profile 'nope'"},
      {"[sandbox]\ncolour = 1\n", "config.toml:2:1", "unknown key 'colour'"},
      {"[profiles.Bad]\n", "config.toml:1:", "not a profile name"},
      {"[profiles.x]\nwritable = []\n", "config.toml:2:1", "unknown key 'writable'"},
      {"sandbox = 1\n", "config.toml:1:1", "sandbox must be a table"},
      {"[sandbox\n", "config.toml:1:", ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto r = ParseUserConfig(c.text, "config.toml");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, "invalid");
    EXPECT_EQ(r.error().message.rfind(c.where, 0), 0u) << r.error().message;
    EXPECT_NE(r.error().message.find(c.what), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("(fix: "), std::string::npos) << r.error().message;
  }
}

TEST(UserConfig, PathFollowsXdg) {
  EXPECT_EQ(UserConfigPath({"HOME=/home/u"}), "/home/u/.config/anvil/config.toml");
  EXPECT_EQ(UserConfigPath({"HOME=/home/u", "XDG_CONFIG_HOME=/cfg"}), "/cfg/anvil/config.toml");
  EXPECT_EQ(UserConfigPath({"HOME=/home/u", "XDG_CONFIG_HOME=relative"}),
            "/home/u/.config/anvil/config.toml");
  EXPECT_EQ(UserConfigPath({}), "");
}

TEST(BuiltinProfiles, EachOpensItsCachesAndRegistriesOnly) {
  const auto& p = BuiltinProfiles();
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p.at("node").allow_hosts,
            (std::vector<std::string>{"registry.npmjs.org", "registry.yarnpkg.com"}));
  EXPECT_EQ(p.at("python").allow_hosts,
            (std::vector<std::string>{"pypi.org", "files.pythonhosted.org"}));
  EXPECT_EQ(p.at("rust").writable_roots,
            (std::vector<std::string>{"~/.cargo/registry", "~/.cargo/git"}));
  EXPECT_EQ(p.at("go").writable_roots,
            (std::vector<std::string>{"~/go/pkg/mod", "~/.cache/go-build"}));
  for (const auto& [name, profile] : p) {
    for (const auto& w : profile.writable_roots) {
      EXPECT_EQ(w.rfind("~/", 0), 0u) << name << " " << w;  // caches in the home only
    }
  }
}

// ---- Anvil.toml: a cloned repository must not be able to grant itself anything ----

TEST(WorkspaceSandbox, NarrowingKeysParse) {
  auto c = ParseWorkspaceConfig(
      "[sandbox]\npolicy = \"read-only\"\nnetwork = \"none\"\nread_only_subpaths = [\"vendor\", "
      "\"third_party/x\"]\n");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->sandbox.policy, PolicyKind::kReadOnly);
  EXPECT_EQ(c->sandbox.network, NetworkMode::kNone);
  EXPECT_EQ(c->sandbox.read_only_subpaths, (std::vector<std::string>{"vendor", "third_party/x"}));
}

TEST(WorkspaceSandbox, AnythingThatWouldWidenIsRefusedByName) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"[sandbox]\nwritable_roots = [\"/\"]\n", "a workspace cannot make anything writable"},
      {"[sandbox]\nwritable_git = true\n", "a workspace cannot make anything writable"},
      {"[sandbox]\nreadable_roots = [\"~/.ssh\"]\n", "a workspace cannot make anything readable"},
      {"[sandbox]\nread_access = \"full\"\n", "a workspace cannot make anything readable"},
      {"[sandbox]\nallow_hosts = [\"evil.example\"]\n", "a workspace cannot allow a host"},
      {"[sandbox]\nallow-host = \"evil.example\"\n", "a workspace cannot allow a host"},
      {"[sandbox]\nprofiles = [\"node\"]\n", "a workspace cannot turn a profile on"},
      {"[sandbox]\nprofile = \"node\"\n", "a workspace cannot turn a profile on"},
      {"[sandbox]\nhome = \"none\"\n", "cannot choose the home"},
      {"[sandbox]\npolicy = \"danger-full-access\"\n", "can only narrow"},
      {"[sandbox]\npolicy = \"external-sandbox\"\n", "can only narrow"},
      {"[sandbox]\nnetwork = \"full\"\n", "can only narrow"},
      {"[sandbox]\nread_only_subpaths = [\"../outside\"]\n", "must be a path inside"},
      {"[sandbox]\nread_only_subpaths = [\"/etc\"]\n", "must be a path inside"},
      {"[sandbox]\n[sandbox.profiles.node]\nallow_hosts = [\"x\"]\n", "cannot turn a profile on"},
      {"[sandbox]\nunsafe_test_resolver = \"1.2.3.4:53\"\n", "can only narrow"},
      {"sandbox = \"danger-full-access\"\n", "sandbox must be a table"},
      {"[plugins]\nsandbox = false\n", "cannot change sandbox settings"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto r = ParseWorkspaceConfig(c.text);
    ASSERT_FALSE(r) << "accepted";
    EXPECT_EQ(r.error().code, "invalid");
    EXPECT_EQ(r.error().message.rfind("Anvil.toml:", 0), 0u) << r.error().message;
    EXPECT_NE(r.error().message.find(c.message), std::string::npos) << r.error().message;
  }
}

TEST(WorkspaceSandbox, NarrowsButNeverWidensTheUsersSettings) {
  WorkspaceSandboxConfig w;
  w.policy = PolicyKind::kReadOnly;
  w.network = NetworkMode::kNone;
  w.policy_where = "Anvil.toml:2";
  w.network_where = "Anvil.toml:3";
  PolicyKind policy = PolicyKind::kWorkspaceWrite;
  NetworkMode network = NetworkMode::kProxy;
  ASSERT_TRUE(NarrowByWorkspace(w, policy, network));
  EXPECT_EQ(policy, PolicyKind::kReadOnly);
  EXPECT_EQ(network, NetworkMode::kNone);

  // The user runs read-only without network: the repository cannot ask for more.
  w.policy = PolicyKind::kWorkspaceWrite;
  w.network.reset();
  policy = PolicyKind::kReadOnly;
  auto s = NarrowByWorkspace(w, policy, network);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("Anvil.toml:2: sandbox.policy 'workspace-write' would widen"),
            std::string::npos)
      << s.error().message;
  EXPECT_NE(s.error().message.find("fix: "), std::string::npos);
  EXPECT_EQ(policy, PolicyKind::kReadOnly);

  w.policy.reset();
  w.network = NetworkMode::kProxy;
  network = NetworkMode::kNone;
  s = NarrowByWorkspace(w, policy, network);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("would widen the network 'none'"), std::string::npos);
  EXPECT_EQ(network, NetworkMode::kNone);

  // A narrower policy beside a wider network (the fuzzer's input): refused whole, nothing of it
  // applied — not even the policy that alone would have narrowed.
  w.policy = PolicyKind::kWorkspaceWrite;
  w.network = NetworkMode::kProxy;
  policy = PolicyKind::kDangerFullAccess;
  network = NetworkMode::kNone;
  s = NarrowByWorkspace(w, policy, network);
  ASSERT_FALSE(s);
  EXPECT_EQ(policy, PolicyKind::kDangerFullAccess);
  EXPECT_EQ(network, NetworkMode::kNone);
}

TEST(WorkspaceSandbox, WidthOrder) {
  EXPECT_LT(PolicyWidth(PolicyKind::kReadOnly), PolicyWidth(PolicyKind::kWorkspaceWrite));
  EXPECT_LT(PolicyWidth(PolicyKind::kWorkspaceWrite), PolicyWidth(PolicyKind::kExternalSandbox));
  EXPECT_LT(PolicyWidth(PolicyKind::kExternalSandbox), PolicyWidth(PolicyKind::kDangerFullAccess));
  EXPECT_LT(NetworkWidth(NetworkMode::kNone), NetworkWidth(NetworkMode::kProxy));
  EXPECT_LT(NetworkWidth(NetworkMode::kProxy), NetworkWidth(NetworkMode::kFull));
}

}  // namespace
}  // namespace user_config_test
}  // namespace anvil
