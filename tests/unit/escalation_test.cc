// Escalation (src/agent/escalation.h): which one widening a list of refusal facts earns, table
// by table. The refused subject is chosen by the sandboxed command, so every row that tries to
// talk the user into a wide or dangerous widening (/, $HOME, an ancestor of the workspace,
// Anvil's own rules, a credential, a system root, a symlink, a hostile host name) sits next to
// the ordinary one that must keep being offered.
#include "agent/escalation.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "policy/host_autorun.h"

namespace anvil::agent {
namespace escalation_test {
namespace {

using Kind = RefusalFact::Kind;

EscalationContext Context() {
  EscalationContext c;
  c.policy = PolicyKind::kWorkspaceWrite;
  c.network = NetworkMode::kProxy;
  c.workspace = "/home/u/proj";
  c.home = "/home/u";
  c.writable_roots = {"/home/u/proj"};
  c.allowed_hosts = {"example.org"};
  c.never_writable = ProtectedAnvilPaths(nullptr, nullptr, "/home/u");
  c.host_autorun = HostAutorunPaths({"/home/u", "", "", "", "", ""});
  c.user_base_dirs = UserBaseDirs("/xdg/config", "/xdg/data", "/xdg/state", "/xdg/cache");
  c.holds_repositories = [](const std::string& dir) { return dir == "/home/u/src"; };
  return c;
}

// The directories that exist in these tables (no symlinks among them).
const std::set<std::string> kDirs = {"/",
                                     "/home",
                                     "/home/u",
                                     "/home/u/proj",
                                     "/home/u/.cache",
                                     "/home/u/.cache/pip",
                                     "/home/u/.cargo",
                                     "/home/u/.cargo/registry",
                                     "/home/u/.config",
                                     "/home/u/.config/anvil",
                                     "/home/u/.config/anvil/rules",
                                     "/home/u/.local",
                                     "/home/u/.local/bin",
                                     "/home/u/.local/lib",
                                     "/home/u/.config/systemd",
                                     "/home/u/.config/systemd/user",
                                     "/home/u/.local/state",
                                     "/home/u/.local/state/anvil",
                                     "/var",
                                     "/var/tmp",
                                     "/usr",
                                     "/usr/lib",
                                     "/run",
                                     "/run/user",
                                     "/opt",
                                     "/opt/tool",
                                     "/opt/tool/lib",
                                     "/home/u/src",
                                     "/home/u/src/lib",
                                     "/home/u/src/lib/build",
                                     "/home/u/notes",
                                     "/xdg",
                                     "/xdg/config",
                                     "/xdg/config/tool",
                                     "/xdg/other"};
bool FakeIsDir(const std::string& p) { return kDirs.contains(p); }

RefusalFact Write(std::string path, std::string area, std::string root = "") {
  return {Kind::kWrite, std::move(path), "openat", std::move(area), std::move(root)};
}

RefusalFact Proxy(std::string target, std::string reason) {
  return {Kind::kProxy, std::move(target), std::move(reason), "", ""};
}

struct Row {
  const char* name;
  RefusalFact fact;
  std::optional<Widening> expected;
};

TEST(Escalation, EachRefusalEarnsAtMostTheNarrowestWidening) {
  const Widening git{WideningKind::kWritableGit, ""};
  auto root = [](std::string d) { return Widening{WideningKind::kWritableRoot, std::move(d)}; };
  auto host = [](std::string h) { return Widening{WideningKind::kAllowHost, std::move(h)}; };
  const std::vector<Row> rows = {
      // Benign: the ordinary ones.
      {"git metadata", Write("/home/u/proj/.git/index.lock", "git", "/home/u/proj/.git"), git},
      {"a readable toolchain", Write("/opt/tool/lib/f", "readable_root", "/opt/tool"),
       root("/opt/tool/lib")},
      {"var tmp", Write("/var/tmp/build.log", "outside"), root("/var/tmp")},
      {"a new directory in var tmp", Write("/var/tmp/new", "outside"), root("/var/tmp")},
      {"a build directory of another project", Write("/home/u/src/lib/build/o", "outside"),
       root("/home/u/src/lib/build")},
      {"a directory of the home that is not hidden", Write("/home/u/notes/a.md", "outside"),
       root("/home/u/notes")},
      {"host not on the list",
       Proxy("registry.npmjs.org:443", "denied: host not allowed: registry.npmjs.org:443"),
       host("registry.npmjs.org:443")},
      // Attacks: the command picks the path to earn a wide or dangerous offer.
      {"a file in /", Write("/x", "outside"), std::nullopt},
      {"a file directly in $HOME", Write("/home/u/.bashrc", "outside"), std::nullopt},
      {"a file in /home", Write("/home/x", "outside"), std::nullopt},
      {"Anvil's rules", Write("/home/u/.config/anvil/rules/approved.toml", "outside"),
       std::nullopt},
      {"Anvil's config dir", Write("/home/u/.config/anvil/x", "outside"), std::nullopt},
      {"above Anvil's config (~/.config)", Write("/home/u/.config/x", "outside"), std::nullopt},
      {"Anvil's audit log", Write("/home/u/.local/state/anvil/audit/x.jsonl", "outside"),
       std::nullopt},
      {"above the workspace", Write("/home/u/other", "outside"), std::nullopt},
      {"a system root", Write("/usr/lib/x", "outside"), std::nullopt},
      {"a system root by area", Write("/usr/lib/x", "system", "/usr"), std::nullopt},
      {"/run (host sockets)", Write("/run/user/x", "outside"), std::nullopt},
      {"a credential", Write("/home/u/.ssh/id_rsa", "credential", "/home/u/.ssh"), std::nullopt},
      {".anvil", Write("/home/u/proj/.anvil/rules.toml", "anvil", "/home/u/proj/.anvil"),
       std::nullopt},
      {"a read-only subpath", Write("/home/u/proj/vendor/x", "read_only_subpath"), std::nullopt},
      // What the host runs: a command in ~/.local/bin, a user unit, a startup file.
      {"~/.local/bin, shown read-only",
       Write("/home/u/.local/bin/ls", "readable_root", "/home/u/.local/bin"), std::nullopt},
      {"a user unit", Write("/home/u/.config/systemd/user/x.service", "outside"), std::nullopt},
      {"a startup file the sandbox kept",
       Write("/home/u/.bashrc", "host_autorun", "/home/u/.bashrc"), std::nullopt},
      {"the user site every python3 loads (~/.local/lib)",
       Write("/home/u/.local/lib/x.py", "readable_root", "/home/u/.local/lib"), std::nullopt},
      {"a directory the sandbox kept",
       Write("/home/u/.local/bin/ls", "host_autorun", "/home/u/.local/bin"), std::nullopt},
      // What the host's builds trust (caches and the crates they compile), shown read-only or
      // not at all: the real one made writable would be planted for the next build outside.
      {"a cache outside", Write("/home/u/.cache/pip/x.whl", "outside"), std::nullopt},
      {"a new level under a cache", Write("/home/u/.cache/pip/new/deeper/f", "outside"),
       std::nullopt},
      {"cargo's registry", Write("/home/u/.cargo/registry/f", "readable_root", "/home/u/.cargo"),
       std::nullopt},
      // A write below directories that do not exist: the nearest existing one above may hold
      // every project of the user (~/src), not only what the write needed.
      {"levels to make below a tree of projects", Write("/home/u/src/new/a/b", "outside"),
       std::nullopt},
      {"levels to make below var tmp", Write("/var/tmp/new/f", "outside"), std::nullopt},
      {"a new directory beside other repositories", Write("/home/u/src/new", "outside"),
       std::nullopt},
      {"a path with ..", Write("/home/u/.cache/pip/../../../etc/x", "outside"), std::nullopt},
      {"a relative path", Write("home/u/.cache/pip/x", "outside"), std::nullopt},
      {"a control character", Write("/home/u/.cache/pip/\n/x", "outside"), std::nullopt},
      {"a directory that does not exist anywhere", Write("/nope/a/b", "outside"), std::nullopt},
      {"a readable root's write that climbs out of it",
       Write("/home/u/.cargo/../.cache/pip/x", "readable_root", "/home/u/.cargo"), std::nullopt},
      {"host with a flag in it", Proxy("--writable-root=/:443", "denied: host not allowed"),
       std::nullopt},
      {"host with a space", Proxy("a b:443", "denied: host not allowed"), std::nullopt},
      {"host already allowed", Proxy("example.org", "denied: host not allowed"), std::nullopt},
      {"a private address", Proxy("10.0.0.1:80", "denied: 10.0.0.1 resolves to private"),
       std::nullopt},
      {"a direct connection", {Kind::kNetwork, "1.2.3.4:443", "direct", "", ""}, std::nullopt},
  };
  const EscalationContext context = Context();
  for (const auto& row : rows) {
    EXPECT_EQ(ProposeWidening({row.fact}, context, FakeIsDir), row.expected) << row.name;
    if (!row.expected) {
      EXPECT_FALSE(NoWideningReason(row.fact, context, FakeIsDir).empty()) << row.name;
    }
  }
}

TEST(Escalation, SymlinkedDirectoriesAreNotOffered) {
  // is_directory is lstat-based in the front ends: a link is not a directory, and the walk goes
  // up to the first real one, which must pass the same checks.
  const EscalationContext context = Context();
  auto no_links = [](const std::string& p) { return p == "/home/u" || p == "/"; };
  EXPECT_EQ(ProposeWidening({Write("/home/u/link/x", "outside")}, context, no_links), std::nullopt);
}

TEST(Escalation, WideningsDependOnThePolicyAndWhatIsAlreadyWide) {
  EscalationContext context = Context();
  const RefusalFact git = Write("/home/u/proj/.git/config", "git", "/home/u/proj/.git");
  context.writable_git = true;
  EXPECT_EQ(ProposeWidening({git}, context, FakeIsDir), std::nullopt);
  context = Context();
  context.policy = PolicyKind::kReadOnly;
  EXPECT_EQ(ProposeWidening({git}, context, FakeIsDir), std::nullopt);
  EXPECT_EQ(ProposeWidening({Write("/var/tmp/x", "outside")}, context, FakeIsDir), std::nullopt);
  context = Context();
  context.writable_roots.push_back("/var/tmp");
  EXPECT_EQ(ProposeWidening({Write("/var/tmp/x", "outside")}, context, FakeIsDir), std::nullopt);
  context = Context();
  context.network = NetworkMode::kNone;
  EXPECT_EQ(ProposeWidening({Proxy("a.org:443", "denied: host not allowed")}, context, FakeIsDir),
            std::nullopt);
}

TEST(Escalation, TheFirstRefusalWithAWideningIsOffered) {
  const EscalationContext context = Context();
  auto w = ProposeWidening(
      {Write("/home/u/.ssh/k", "credential", "/home/u/.ssh"),
       Write("/home/u/proj/.git/HEAD", "git", "/home/u/proj/.git"), Write("/var/tmp/x", "outside")},
      context, FakeIsDir);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->kind, WideningKind::kWritableGit);
  EXPECT_EQ(w->Flags(), std::vector<std::string>{"--writable-git"});
}

// The reason a place of policy/host_autorun.h gets no widening names what the table holds,
// not only a login and PATH.
TEST(Escalation, HostAutorunReasonNamesWhatTheTableHolds) {
  const EscalationContext context = Context();
  auto any_dir = [](const std::string&) { return true; };
  struct Case {
    const char* dir;
    const char* named;
  };
  const Case cases[] = {
      {"/home/u/.local/share/bash-completion", "completions"},
      {"/home/u/.local/lib", "the Python user site"},
      {"/home/u/.cargo/bin", "toolchain bins"},
      {"/home/u/.config/nvim", "editors'"},
      {"/home/u/.kube", "credentials"},
      {"/home/u/.config/systemd/user", "user units"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.dir);
    auto w = ParseWidening(std::string("writable-root=") + c.dir);
    ASSERT_TRUE(w);
    auto checked = CheckWidening(*w, context, any_dir);
    ASSERT_FALSE(checked);
    EXPECT_NE(checked.error().message.find(c.named), std::string::npos) << checked.error().message;
    const std::string why =
        NoWideningReason(Write(std::string(c.dir) + "/x", "host_autorun", c.dir), context, any_dir);
    EXPECT_NE(why.find(c.named), std::string::npos) << why;
  }
  // The benign neighbour: a directory outside the home's hidden places is still offered.
  EXPECT_TRUE(CheckWidening(*ParseWidening("writable-root=/var/tmp"), context, any_dir));
}

// A widening is chosen by the sandboxed side, so what it may name is an allowlist, not a list of
// known dangerous places: no hidden entry of a home nor anything in one (every editor's, tool's
// and agent's configuration lives there, known to kHostAutorun or not), no XDG base directory
// nor anything in or above one. The red team's repro: `--widen writable-root=~/.config/Cursor/User`
// let a command write Cursor's terminal profile.
TEST(Escalation, HiddenPlacesOfTheHomeAndTheXdgDirectoriesAreNeverOffered) {
  EscalationContext context = Context();
  context.more_homes = {"/var/lib/u"};  // the user database's home, when it differs
  auto any_dir = [](const std::string&) { return true; };
  for (const char* dir :
       {"/home/u/.config/Cursor/User", "/home/u/.config/Code - Insiders/User",
        "/home/u/.vscode-insiders", "/home/u/.vscode-server-insiders",
        "/home/u/.config/Windsurf/User", "/home/u/.windsurf", "/home/u/.windsurf-server",
        "/home/u/.config/sublime-text/Packages/User", "/home/u/.config/zed", "/home/u/.config/yazi",
        "/home/u/.config/Positron/User", "/home/u/.kiro", "/home/u/.trae",
        "/home/u/.config/Trae/User", "/home/u/.config/Kiro/User",
        // Tools no table knows yet, and the hidden entries themselves.
        "/home/u/.config/some-new-editor", "/home/u/.some-new-agent/hooks", "/home/u/.config",
        "/home/u/.local", "/home/u/.local/share/some-app", "/home/u/.cache/pip",
        "/home/u/.cargo/registry",
        // The user database's home.
        "/var/lib/u/.config/Cursor/User",
        // $XDG_CONFIG_HOME and the others, outside the home: in them, them, above them.
        "/xdg/config/tool", "/xdg/config", "/xdg", "/xdg/data/x", "/xdg/state/x", "/xdg/cache/x"}) {
    SCOPED_TRACE(dir);
    auto w = ParseWidening(std::string("writable-root=") + dir);
    ASSERT_TRUE(w);
    auto checked = CheckWidening(*w, context, any_dir);
    ASSERT_FALSE(checked);
    EXPECT_EQ(checked.error().code, "denied");
    EXPECT_NE(checked.error().message.find("never offered"), std::string::npos)
        << checked.error().message;
    // Above Anvil's own configuration and state, that reason is given instead (no flag opens
    // those); everywhere else the user is told how to name the place.
    if (checked.error().message.find("Anvil's own") == std::string::npos) {
      EXPECT_NE(checked.error().message.find("anvil sandbox --writable-root"), std::string::npos)
          << checked.error().message;
    }
    const RefusalFact write = Write(std::string(dir) + "/settings.json", "outside");
    EXPECT_EQ(ProposeWidening({write}, context, any_dir), std::nullopt);
    EXPECT_FALSE(NoWideningReason(write, context, any_dir).empty());
  }
  // Benign neighbours: a hidden directory that is not a top-level entry of a home, a directory
  // beside the XDG ones, the home's ordinary directories, a hidden name outside any home.
  for (const char* dir : {"/home/u/src/lib/.venv", "/home/u/notes", "/xdg/other", "/opt/.cache/x",
                          "/var/lib/other/.config"}) {
    SCOPED_TRACE(dir);
    EXPECT_TRUE(
        CheckWidening(*ParseWidening(std::string("writable-root=") + dir), context, any_dir));
    EXPECT_EQ(ProposeWidening({Write(std::string(dir) + "/f", "outside")}, context, any_dir),
              (Widening{WideningKind::kWritableRoot, dir}));
  }
}

// The directory offered is the one written in, never a wider one in its place: a write below
// directories that do not exist yet (~/src/new/a/b) once offered the nearest existing one
// (~/src, every project of the user). A directory that holds other repositories is not offered
// either, asked for or not.
TEST(Escalation, NoWiderDirectoryThanTheWriteAndNoTreeOfProjects) {
  const EscalationContext context = Context();
  const RefusalFact deep = Write("/home/u/src/new/a/b", "outside");
  EXPECT_EQ(ProposeWidening({deep}, context, FakeIsDir), std::nullopt);
  EXPECT_NE(NoWideningReason(deep, context, FakeIsDir).find("/home/u/src/new/a"), std::string::npos)
      << NoWideningReason(deep, context, FakeIsDir);
  const RefusalFact made = Write("/home/u/src/new", "outside");
  EXPECT_EQ(ProposeWidening({made}, context, FakeIsDir), std::nullopt);
  EXPECT_NE(NoWideningReason(made, context, FakeIsDir).find("repositor"), std::string::npos)
      << NoWideningReason(made, context, FakeIsDir);
  auto asked = CheckWidening(*ParseWidening("writable-root=/home/u/src"), context, FakeIsDir);
  ASSERT_FALSE(asked);
  EXPECT_NE(asked.error().message.find("repositor"), std::string::npos) << asked.error().message;
  // Benign: a directory inside one of those projects, and the same write where the directory
  // exists.
  EXPECT_TRUE(
      CheckWidening(*ParseWidening("writable-root=/home/u/src/lib/build"), context, FakeIsDir));
  EXPECT_EQ(ProposeWidening({Write("/home/u/src/lib/build/new", "outside")}, context, FakeIsDir),
            (Widening{WideningKind::kWritableRoot, "/home/u/src/lib/build"}));
  // Without the fact (no caller told), no directory holds repositories.
  EscalationContext unknown = Context();
  unknown.holds_repositories = nullptr;
  EXPECT_TRUE(CheckWidening(*ParseWidening("writable-root=/home/u/src"), unknown, FakeIsDir));
}

TEST(Escalation, UserBaseDirsTakesOnlyAbsoluteValues) {
  EXPECT_EQ(UserBaseDirs("/a//b/", "rel", nullptr, "/c/../d"), std::vector<std::string>{"/a/b"});
  EXPECT_EQ(UserBaseDirs("/a", "/b", "/c", "/d"),
            (std::vector<std::string>{"/a", "/b", "/c", "/d"}));
}

TEST(Escalation, AgentRequestsAreCheckedLikeOffers) {
  const EscalationContext context = Context();
  auto parsed = ParseWidening("writable-root=/var/tmp");
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(CheckWidening(*parsed, context, FakeIsDir));
  for (const char* bad :
       {"writable-root=/", "writable-root=/home/u", "writable-root=/home",
        "writable-root=/home/u/.config", "writable-root=/usr",
        "writable-root=/home/u/.config/anvil/rules", "allow-host=a b", "allow-host=x;y"}) {
    auto w = ParseWidening(bad);
    ASSERT_TRUE(w) << bad;
    EXPECT_FALSE(CheckWidening(*w, context, FakeIsDir)) << bad;
  }
  for (const char* bad :
       {"", "unsandboxed", "writable-root", "allow-host=", "danger-full-access"}) {
    EXPECT_FALSE(ParseWidening(bad)) << bad;
  }
  EXPECT_TRUE(ParseWidening("writable-git"));
  EXPECT_TRUE(CheckWidening(*ParseWidening("allow-host=pypi.org"), context, FakeIsDir));
}

TEST(Escalation, PlainHosts) {
  for (const char* good : {"a.org", "a.org:443", "x-y.example.com:8080", "localhost"}) {
    EXPECT_TRUE(IsPlainHost(good)) << good;
  }
  for (const char* bad : {"", ":443", "a.org:", "a.org:0", "a.org:70000", "-a.org", "a..org",
                          "a.org.", "a_b.org", "[::1]:443", "a.org:443:1", "a/b"}) {
    EXPECT_FALSE(IsPlainHost(bad)) << bad;
  }
}

TEST(Escalation, AuditLineIsOneJsonLine) {
  EscalationAudit audit{"s", "agent", "/w", "on-failure", 7, {"git", "commit", "-m", "a\nb"}};
  const Widening w{WideningKind::kWritableGit, ""};
  const std::string line = EscalationAuditLine(audit, &w, "approved", "ok", 1.5);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["op"], "command.escalation");
  EXPECT_EQ(j["verdict"], "allow");
  EXPECT_EQ(j["widening"]["kind"], "writable-git");
  EXPECT_EQ(nlohmann::json::parse(EscalationAuditLine(audit, &w, "refused", "no", 1))["verdict"],
            "deny");
  EXPECT_EQ(nlohmann::json::parse(EscalationAuditLine(audit, &w, "offered", "?", 1))["verdict"],
            "ask");
}

}  // namespace
}  // namespace escalation_test
}  // namespace anvil::agent
