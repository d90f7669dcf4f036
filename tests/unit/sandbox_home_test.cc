// The command's home (policy/sandbox_home.h): the plan from a fake host, how it lands in the
// file view (binds, masks over credentials wherever a bind would show one), and the sanitized
// copy of ~/.gitconfig. Table tests; the end-to-end ones are
// tests/security/t1_sandbox_home_test.cc.
#include "policy/sandbox_home.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>

#include "policy/command_segments.h"
#include "policy/git_global_files.h"
#include "policy/git_include_if.h"
#include "policy/refusals.h"

namespace anvil {
namespace sandbox_home_test {
namespace {

using Kind = HomeHost::Kind;

// A fake host: path -> kind; `links` map a symlink to its (canonical) target.
struct FakeHome {
  std::map<std::string, Kind> entries;
  std::map<std::string, std::string> links;

  HomeHost Host() const {
    HomeHost h;
    auto entries_copy = entries;
    auto links_copy = links;
    h.lstat_kind = [entries_copy, links_copy](const std::string& p) {
      if (links_copy.count(p)) return Kind::kSymlink;
      auto it = entries_copy.find(p);
      if (it != entries_copy.end()) return it->second;
      // A directory above an entry or a link exists (/home above /home/u).
      const std::string dir = p == "/" ? "/" : p + "/";
      for (const auto& [e, kind] : entries_copy) {
        if (e.rfind(dir, 0) == 0) return Kind::kDirectory;
      }
      for (const auto& [l, target] : links_copy) {
        if (l.rfind(dir, 0) == 0) return Kind::kDirectory;
      }
      return Kind::kMissing;
    };
    h.resolve = [entries_copy, links_copy](const std::string& p) -> std::optional<std::string> {
      // Resolve the longest linked prefix, then require existence.
      std::string path = p;
      for (const auto& [from, to] : links_copy) {
        if (PathIsWithin(path, from)) path = to + path.substr(from.size());
      }
      if (entries_copy.count(path)) return path;
      return std::nullopt;
    };
    h.readlink = [links_copy](const std::string& p) -> std::optional<std::string> {
      auto it = links_copy.find(p);
      if (it == links_copy.end()) return std::nullopt;
      return it->second;
    };
    h.list_dir = [entries_copy, links_copy](const std::string& dir) {
      std::vector<std::string> names;
      auto add = [&](const std::string& p) {
        if (p.size() > dir.size() + 1 && p.compare(0, dir.size() + 1, dir + "/") == 0 &&
            p.find('/', dir.size() + 1) == std::string::npos) {
          names.push_back(p.substr(dir.size() + 1));
        }
      };
      for (const auto& [p, k] : entries_copy) add(p);
      for (const auto& [p, target] : links_copy) add(p);
      return names;
    };
    return h;
  }
};

FakeHome LivedInHome() {
  FakeHome f;
  for (const char* d :
       {"/home/u", "/home/u/.pyenv", "/home/u/.local", "/home/u/.local/bin", "/home/u/.local/lib",
        "/home/u/.local/lib/python3.11", "/home/u/.local/lib/python3.11/site-packages",
        "/home/u/.ssh", "/home/u/.config", "/home/u/.config/gh", "/home/u/.aws", "/home/u/.cargo",
        "/home/u/.cargo/bin", "/home/u/proj", "/home/u/Documents"}) {
    f.entries[d] = Kind::kDirectory;
  }
  for (const char* file :
       {"/home/u/.netrc", "/home/u/.bash_history", "/home/u/.gitconfig",
        "/home/u/.config/git/ignore", "/home/u/.npmrc", "/home/u/.cargo/credentials.toml"}) {
    f.entries[file] = Kind::kFile;
  }
  f.entries["/home/u/.config/git"] = Kind::kDirectory;
  return f;
}

HomePlanInput Input(HomeMode mode = HomeMode::kPersistent) {
  HomePlanInput in;
  in.mode = mode;
  in.home = "/home/u";
  in.sandbox_home = "/home/u/.local/state/anvil/homes/proj-0123/home";
  in.gitconfig = "[user]\n\tname = \"U\"\n";
  return in;
}

bool Has(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

TEST(PlanHomeView, AllowlistOfToolchainsAndNothingElseOfTheRealHome) {
  auto plan = PlanHomeView(Input(), LivedInHome().Host());
  ASSERT_TRUE(plan) << plan.error().ToString();
  EXPECT_EQ(plan->kind, HomeKind::kPersistent);
  EXPECT_EQ(plan->target, "/home/u");
  EXPECT_EQ(plan->home.source, "/home/u/.local/state/anvil/homes/proj-0123/home");
  EXPECT_TRUE(plan->home.writable);
  for (const char* shown :
       {"/home/u/.pyenv", "/home/u/.local/bin", "/home/u/.local/lib/python3.11/site-packages",
        "/home/u/.cargo/bin", "/home/u/.config/git/ignore"}) {
    EXPECT_TRUE(Has(plan->read_roots, shown)) << shown;
  }
  // Not listed: never shown, credentials or not.
  for (const char* hidden : {"/home/u/Documents", "/home/u/.ssh", "/home/u/.config",
                             "/home/u/.cargo", "/home/u/proj", "/home/u/.local"}) {
    EXPECT_FALSE(Has(plan->read_roots, hidden)) << hidden;
  }
  EXPECT_TRUE(plan->binds.empty());
  EXPECT_EQ(plan->gitconfig, "[user]\n\tname = \"U\"\n");
}

TEST(PlanHomeView, CredentialsOfTheHomeAreListedForMasking) {
  auto plan = PlanHomeView(Input(), LivedInHome().Host());
  ASSERT_TRUE(plan);
  std::set<std::string> creds;
  for (const auto& c : plan->credentials) creds.insert(c.path);
  for (const char* c : {"/home/u/.ssh", "/home/u/.aws", "/home/u/.config/gh", "/home/u/.netrc",
                        "/home/u/.bash_history", "/home/u/.npmrc", "/home/u/.gitconfig",
                        "/home/u/.cargo/credentials.toml"}) {
    EXPECT_TRUE(creds.count(c)) << c;
  }
}

// A toolchain that is a link is bound from its target at its home path, where the target is a
// place the view shows by its own name: here /opt/pyenv, a readable root named. Without it, a
// link out of the home (which a run with the whole home writable could have re-pointed at a
// place no run sees) shows nothing.
TEST(PlanHomeView, SymlinkedToolchainIsMappedToItsHomePath) {
  FakeHome f = LivedInHome();
  f.entries.erase("/home/u/.pyenv");
  f.entries["/opt/pyenv"] = Kind::kDirectory;
  f.links["/home/u/.pyenv"] = "/opt/pyenv";
  auto unnamed = PlanHomeView(Input(), f.Host());
  ASSERT_TRUE(unnamed);
  for (const auto& b : unnamed->binds) EXPECT_NE(b.target, "/home/u/.pyenv");
  HomePlanInput in = Input();
  in.readable_roots = {"/opt/pyenv"};
  auto plan = PlanHomeView(in, f.Host());
  ASSERT_TRUE(plan);
  EXPECT_FALSE(Has(plan->read_roots, "/home/u/.pyenv"));
  auto it = std::find_if(plan->binds.begin(), plan->binds.end(),
                         [](const MappedBind& b) { return b.target == "/home/u/.pyenv"; });
  ASSERT_NE(it, plan->binds.end());
  EXPECT_EQ(it->source, "/opt/pyenv");
  EXPECT_FALSE(it->writable);
}

TEST(PlanHomeView, ToolchainLinkIntoACredentialLocationIsSkipped) {
  FakeHome f = LivedInHome();
  f.entries.erase("/home/u/.cargo/bin");
  f.entries["/home/u/.ssh/bin"] = Kind::kDirectory;
  f.links["/home/u/.cargo/bin"] = "/home/u/.ssh/bin";
  auto plan = PlanHomeView(Input(), f.Host());
  ASSERT_TRUE(plan);
  for (const auto& b : plan->binds) EXPECT_FALSE(PathIsWithin(b.source, "/home/u/.ssh"));
  for (const auto& r : plan->read_roots) EXPECT_FALSE(PathIsWithin(r, "/home/u/.ssh"));
}

TEST(PlanHomeView, UserReadableRootInsideACredentialLocationIsRefused) {
  HomePlanInput in = Input();
  for (const char* root : {"~/.ssh", "~/.ssh/keys", "/home/u/.config/gh", "~/.aws/../.aws"}) {
    SCOPED_TRACE(root);
    FakeHome f = LivedInHome();
    f.entries["/home/u/.ssh/keys"] = Kind::kDirectory;
    in.readable_roots = {root};
    auto plan = PlanHomeView(in, f.Host());
    ASSERT_FALSE(plan);
    EXPECT_EQ(plan.error().code, "invalid");
    EXPECT_NE(plan.error().message.find("credentials"), std::string::npos);
  }
}

// ~/.gitconfig named as a readable root was refused as "inside ~/.gitconfig, where credentials
// live ... (fix: name the directory the command needs, outside it)", a fix that does not fit a
// file. It stays refused (it may hold a credential helper or a token in url.*.insteadOf), now
// saying what it is and that the sandbox's ~/.gitconfig is a sanitized copy; the directory that
// holds ~/.config/git/config is still shown, the file covered.
TEST(PlanHomeView, UserReadableRootAtTheGitConfigIsRefusedNamingTheCopy) {
  for (const char* root : {"~/.gitconfig", "/home/u/.gitconfig", "~/.config/git/config"}) {
    SCOPED_TRACE(root);
    FakeHome f = LivedInHome();
    f.entries["/home/u/.config/git"] = Kind::kDirectory;
    f.entries["/home/u/.config/git/config"] = Kind::kFile;
    HomePlanInput in = Input();
    in.readable_roots = {root};
    auto plan = PlanHomeView(in, f.Host());
    ASSERT_FALSE(plan);
    EXPECT_EQ(plan.error().code, "invalid");
    EXPECT_NE(plan.error().message.find(" is your git configuration, which may hold credentials"),
              std::string::npos)
        << plan.error().message;
    EXPECT_NE(plan.error().message.find("sanitized copy"), std::string::npos);
  }
  FakeHome f = LivedInHome();
  f.entries["/home/u/.config/git"] = Kind::kDirectory;
  f.entries["/home/u/.config/git/config"] = Kind::kFile;
  HomePlanInput in = Input();
  in.readable_roots = {"~/.config/git"};
  EXPECT_TRUE(PlanHomeView(in, f.Host()));
}

TEST(PlanHomeView, UserReadableRootCoveringTheHomeIsRefusedWhileTheSandboxHasOne) {
  HomePlanInput in = Input();
  in.readable_roots = {"~"};
  auto plan = PlanHomeView(in, LivedInHome().Host());
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().message.find("would cover the home"), std::string::npos);
  in.mode = HomeMode::kNone;  // --home none: the user's choice, credentials still masked
  EXPECT_TRUE(PlanHomeView(in, LivedInHome().Host()));
}

TEST(PlanHomeView, ModesAndUnusableHomes) {
  HomePlanInput in = Input(HomeMode::kTmp);
  auto tmp = PlanHomeView(in, LivedInHome().Host());
  ASSERT_TRUE(tmp);
  EXPECT_EQ(tmp->kind, HomeKind::kTmpfs);
  in = Input();
  in.sandbox_home.clear();  // could not be prepared
  EXPECT_EQ(PlanHomeView(in, LivedInHome().Host())->kind, HomeKind::kTmpfs);
  in = Input(HomeMode::kNone);
  auto none = PlanHomeView(in, LivedInHome().Host());
  EXPECT_EQ(none->kind, HomeKind::kNone);
  EXPECT_TRUE(none->read_roots.empty());
  EXPECT_FALSE(none->credentials.empty());
  for (const char* bad : {"", "relative", "/", "/tmp", "/proc/self", "/usr/local/home", "/etc"}) {
    SCOPED_TRACE(bad);
    in = Input();
    in.home = bad;
    auto plan = PlanHomeView(in, LivedInHome().Host());
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->kind, HomeKind::kNone);
  }
}

FileView ViewWith(const HomeView& home, std::vector<std::string> writable = {"/home/u/proj"},
                  bool full_read = false) {
  FileView view;
  view.full_read = full_read;
  view.read_roots = {"/usr", "/etc"};
  for (const auto& w : writable) view.writable_roots.push_back({w, {}});
  HostFs host;
  host.resolve = [](const std::string& p) -> std::optional<std::string> { return p; };
  EXPECT_TRUE(ApplyHomeView(home, host, view));
  return view;
}

TEST(ApplyHomeView, HomeBoundWithToolchainsAndNoCredentialShown) {
  auto plan = PlanHomeView(Input(), LivedInHome().Host());
  ASSERT_TRUE(plan);
  FileView view = ViewWith(*plan);
  EXPECT_EQ(view.home_base, "/home/u");
  EXPECT_EQ(view.home_gitconfig, "[user]\n\tname = \"U\"\n");
  ASSERT_GE(view.mapped_binds.size(), 2u);
  EXPECT_EQ(view.mapped_binds[0].target, "/home/u");
  EXPECT_TRUE(view.mapped_binds[0].writable);
  // A toolchain is a read-only bind at its own path (not a read root: root's sandbox would
  // idmap those).
  EXPECT_TRUE(
      std::any_of(view.mapped_binds.begin(), view.mapped_binds.end(), [](const MappedBind& m) {
        return m.source == "/home/u/.pyenv" && m.target == "/home/u/.pyenv" && !m.writable;
      }));
  EXPECT_FALSE(Has(view.read_roots, "/home/u/.pyenv"));
  // Nothing of the view shows a credential, so nothing needs covering.
  EXPECT_TRUE(view.masked_dirs.empty());
  EXPECT_TRUE(view.credential_masks.empty());
  EXPECT_EQ(ViewSource(view, "/home/u/.ssh/id_ed25519"),
            "/home/u/.local/state/anvil/homes/proj-0123/home/.ssh/id_ed25519");
  EXPECT_EQ(ViewSource(view, "/home/u/.pyenv/shims/python"), "/home/u/.pyenv/shims/python");
  EXPECT_EQ(ViewSource(view, "/home/u/proj/x"), "/home/u/proj/x");
  EXPECT_EQ(ViewSource(view, "/tmp/x"), std::nullopt);
}

// pip --user writes ~/.local/lib and ~/.local/bin together: while the host's ~/.local/bin is
// shown, the sandbox home's ~/.local/lib is sealed (an empty read-only directory of the view's
// own, the host's user sites bound beneath it), so nothing is half-installed; where the host
// has no ~/.local/bin, or the user shows ~/.local/lib (or above) themselves, it is not.
TEST(ApplyHomeView, TheUserSiteIsSealedBesideTheHostsLocalBin) {
  struct Case {
    std::string name;
    bool host_bin;
    std::vector<std::string> writable;
    std::vector<std::string> readable;
    bool sealed;
  };
  const std::vector<Case> cases = {
      {"the host's ~/.local/bin shown read-only", true, {"/home/u/proj"}, {}, true},
      {"no ~/.local/bin on the host: pip --user works in the sandbox home",
       false,
       {"/home/u/proj"},
       {},
       false},
      {"--writable-root ~/.local/bin alone: still sealed (no host command without its package)",
       true,
       {"/home/u/proj", "/home/u/.local/bin"},
       {},
       true},
      {"both halves named: the host's own",
       true,
       {"/home/u/proj", "/home/u/.local/bin", "/home/u/.local/lib"},
       {},
       false},
      {"a readable root of ~/.local shows the host's",
       true,
       {"/home/u/proj"},
       {"/home/u/.local"},
       false},
      {"a workspace in ~/.local/lib is the user's", true, {"/home/u/.local/lib/proj"}, {}, false},
      {"the workspace is the home: the real home, no sandbox home", true, {"/home/u"}, {}, false},
  };
  for (const auto& c : cases) {
    FakeHome host = LivedInHome();
    if (!c.host_bin) host.entries.erase("/home/u/.local/bin");
    auto in = Input();
    in.readable_roots = c.readable;
    auto plan = PlanHomeView(in, host.Host());
    ASSERT_TRUE(plan) << c.name;
    FileView view = ViewWith(*plan, c.writable);
    EXPECT_EQ(Has(view.sealed_home_dirs, "/home/u/.local/lib"), c.sealed) << c.name;
    EXPECT_EQ(UserSiteSealed(view).has_value(), c.sealed) << c.name;
    if (!c.sealed) continue;
    // The host's user site stays shown read-only beneath it; nothing else of it is the home's.
    EXPECT_EQ(ViewSource(view, "/home/u/.local/lib/python3.11/site-packages/x.py"),
              "/home/u/.local/lib/python3.11/site-packages/x.py")
        << c.name;
    // A write there is a toolchain's refusal, not "beside the workspace".
    SandboxPolicy policy;
    policy.kind = PolicyKind::kWorkspaceWrite;
    policy.workspace = "/home/u/proj";
    const auto area = ClassifyWrite(view, policy, "/home/u/.local/lib/python3.12/x.py");
    EXPECT_EQ(area.area, WriteArea::kReadable) << c.name;
    EXPECT_EQ(area.root, "/home/u/.local/lib") << c.name;
  }
}

TEST(ApplyHomeView, CredentialInsideAReadableRootIsCovered) {
  HomePlanInput in = Input();
  in.readable_roots = {"~/.config"};  // holds ~/.config/gh and ~/.config/git/ignore
  auto plan = PlanHomeView(in, LivedInHome().Host());
  ASSERT_TRUE(plan) << plan.error().ToString();
  FileView view = ViewWith(*plan);
  EXPECT_TRUE(Has(view.masked_dirs, "/home/u/.config/gh"));
  EXPECT_TRUE(Has(view.credential_masks, "/home/u/.config/gh"));
}

TEST(ApplyHomeView, WorkspaceThatIsTheHomeShowsItWithCredentialsCovered) {
  auto plan = PlanHomeView(Input(), LivedInHome().Host());
  ASSERT_TRUE(plan);
  FileView view = ViewWith(*plan, {"/home/u"});
  EXPECT_TRUE(view.home_base.empty());  // no sandbox home over the workspace
  for (const char* dir : {"/home/u/.ssh", "/home/u/.aws", "/home/u/.config/gh"}) {
    EXPECT_TRUE(Has(view.masked_dirs, dir)) << dir;
  }
  for (const char* file :
       {"/home/u/.netrc", "/home/u/.bash_history", "/home/u/.npmrc", "/home/u/.gitconfig"}) {
    EXPECT_TRUE(Has(view.masked_files, file)) << file;
  }
}

// The home as the workspace has no sandbox home for the sanitized copy: the mask over the real
// ~/.gitconfig holds it (the identity, never the file's credentials), and only that mask.
TEST(ApplyHomeView, WorkspaceThatIsTheHomeShowsTheSanitizedGitConfigInItsMask) {
  auto plan = PlanHomeView(Input(), LivedInHome().Host());
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->gitconfig_credential, "/home/u/.gitconfig");
  FileView view = ViewWith(*plan, {"/home/u"});
  EXPECT_EQ(view.gitconfig_mask, "/home/u/.gitconfig");
  EXPECT_EQ(view.home_gitconfig, "[user]\n\tname = \"U\"\n");
  EXPECT_TRUE(Has(view.masked_files, "/home/u/.gitconfig"));
  EXPECT_TRUE(Has(view.credential_masks, "/home/u/.gitconfig"));
  // Only ~/.config/git/config: its mask holds the copy.
  FakeHome xdg = LivedInHome();
  xdg.entries.erase("/home/u/.gitconfig");
  xdg.entries["/home/u/.config/git/config"] = Kind::kFile;
  auto xdg_plan = PlanHomeView(Input(), xdg.Host());
  ASSERT_TRUE(xdg_plan);
  EXPECT_EQ(ViewWith(*xdg_plan, {"/home/u"}).gitconfig_mask, "/home/u/.config/git/config");
  // Both: ~/.gitconfig's, whichever the table lists first.
  FakeHome both = LivedInHome();
  both.entries["/home/u/.config/git/config"] = Kind::kFile;
  auto both_plan = PlanHomeView(Input(), both.Host());
  ASSERT_TRUE(both_plan);
  EXPECT_EQ(both_plan->gitconfig_credential, "/home/u/.gitconfig");
  // Neither: every mask stays empty.
  FakeHome none = LivedInHome();
  none.entries.erase("/home/u/.gitconfig");
  auto none_plan = PlanHomeView(Input(), none.Host());
  ASSERT_TRUE(none_plan);
  EXPECT_TRUE(ViewWith(*none_plan, {"/home/u"}).gitconfig_mask.empty());
  // Nothing to show (the sanitized text is empty): no mask holds anything.
  HomePlanInput empty = Input();
  empty.gitconfig.clear();
  auto empty_plan = PlanHomeView(empty, LivedInHome().Host());
  ASSERT_TRUE(empty_plan);
  EXPECT_TRUE(ViewWith(*empty_plan, {"/home/u"}).gitconfig_mask.empty());
  // With a sandbox home, the copy is a file of that home, never a mask.
  FileView project = ViewWith(*plan);
  EXPECT_TRUE(project.gitconfig_mask.empty());
  EXPECT_EQ(project.home_base, "/home/u");
}

TEST(ApplyHomeView, FullReadWithoutAHomeCoversCredentials) {
  HomePlanInput in = Input(HomeMode::kNone);
  auto plan = PlanHomeView(in, LivedInHome().Host());
  ASSERT_TRUE(plan);
  FileView view = ViewWith(*plan, {"/ws"}, /*full_read=*/true);
  EXPECT_TRUE(Has(view.masked_dirs, "/home/u/.ssh"));
  EXPECT_TRUE(Has(view.masked_files, "/home/u/.netrc"));
  // With the sandbox home instead, full read shows the sandbox's own home there.
  auto with_home = PlanHomeView(Input(), LivedInHome().Host());
  FileView view2 = ViewWith(*with_home, {"/ws"}, /*full_read=*/true);
  EXPECT_FALSE(Has(view2.masked_dirs, "/home/u/.ssh"));
  EXPECT_EQ(ViewSource(view2, "/home/u/.ssh"),
            "/home/u/.local/state/anvil/homes/proj-0123/home/.ssh");
}

TEST(MaskSocketsInMappedBinds, SocketsInMappedSourcesAreCoveredAtTheirViewPath) {
  FakeHome f = LivedInHome();
  f.entries.erase("/home/u/.pyenv");
  f.entries["/opt/pyenv"] = Kind::kDirectory;
  f.links["/home/u/.pyenv"] = "/opt/pyenv";
  HomePlanInput in = Input();
  in.readable_roots = {"/opt/pyenv"};
  auto plan = PlanHomeView(in, f.Host());
  ASSERT_TRUE(plan);
  FileView view = ViewWith(*plan);
  MaskSocketsInMappedBinds(
      view, {"/opt/pyenv/daemon.sock", "/home/u/.local/state/anvil/homes/proj-0123/home/x.sock",
             "/elsewhere/y.sock"});
  EXPECT_TRUE(Has(view.masked_files, "/home/u/.pyenv/daemon.sock"));
  EXPECT_TRUE(Has(view.masked_files, "/home/u/x.sock"));
  EXPECT_FALSE(Has(view.masked_files, "/elsewhere/y.sock"));
}

TEST(SandboxHomeDirName, StableReadableAndNeverHidden) {
  EXPECT_EQ(SandboxHomeDirName("/home/u/proj"), SandboxHomeDirName("/home/u/proj"));
  EXPECT_NE(SandboxHomeDirName("/home/u/proj"), SandboxHomeDirName("/home/v/proj"));
  EXPECT_EQ(SandboxHomeDirName("/home/u/proj").rfind("proj-", 0), 0u);
  EXPECT_EQ(SandboxHomeDirName("/x/.hidden")[0], '_');
  EXPECT_EQ(SandboxHomeDirName("/").rfind("root-", 0), 0u);
  EXPECT_EQ(SandboxHomeDirName("/a/we ird/..x").find('/'), std::string::npos);
  EXPECT_EQ(SandboxHomeDirName("/a/b c").substr(0, 4), "b_c-");
}

TEST(NormalizeAbsolute, Lexical) {
  EXPECT_EQ(NormalizeAbsolute("/a//b/./c/"), "/a/b/c");
  EXPECT_EQ(NormalizeAbsolute("/a/../../b"), "/b");
  EXPECT_EQ(NormalizeAbsolute("/"), "/");
  EXPECT_EQ(NormalizeAbsolute("a"), std::nullopt);
  EXPECT_EQ(NormalizeAbsolute(""), std::nullopt);
}

TEST(GitConfig, IdentityAliasesAndIgnoresKeptCredentialsDropped) {
  const std::string text = R"([user]
	name = Ada Lovelace
	email = ada@example.org
	signingkey = ABCDEF
[core]
	excludesFile = ~/.config/git/ignore
	sshCommand = ssh -i ~/.ssh/deploy
	hooksPath = ~/.githooks
	fsmonitor = true
[init]
	defaultBranch = main
[alias]
	st = status -sb
	lg = "log --oneline --graph"
	leak = !git push https://ada:ghp_SECRET@github.com/x/y
[url "https://ghp_TOKEN@github.com/"]
	insteadOf = https://github.com/
[http]
	extraHeader = Authorization: Bearer SECRET2
[http "https://corp.example"]
	extraHeader = X-Token: SECRET3
[credential]
	helper = store
[credential "https://github.com"]
	username = ada
[include]
	path = ~/.gitconfig.local
[includeIf "gitdir:~/work/"]
	path = ~/.gitconfig.work
[commit]
	gpgsign = true
	template = ~/.gitmessage
[github]
	token = SECRET4
[sendemail]
	smtppass = SECRET5
[filter "lfs"]
	process = git-lfs filter-process
[color "diff"]
	meta = yellow bold
[safe]
	directory = /home/ada/proj
; a comment
# another
[pull] rebase = true
)";
  auto parsed = ParseGitConfig(text);
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  std::string out = RenderSanitizedGitConfig(*parsed);
  out = out.substr(out.find("\n[") + 1);  // past the header comment
  for (const char* kept :
       {"name = \"Ada Lovelace\"", "email = \"ada@example.org\"",
        "excludesfile = \"~/.config/git/ignore\"", "defaultbranch = \"main\"",
        "st = \"status -sb\"", "lg = \"log --oneline --graph\"", "[color \"diff\"]",
        "meta = \"yellow bold\"", "directory = \"/home/ada/proj\"", "rebase = \"true\""}) {
    EXPECT_NE(out.find(kept), std::string::npos) << kept << "\n" << out;
  }
  for (const char* dropped :
       {"SECRET", "ghp_", "signingkey", "sshcommand", "hookspath", "fsmonitor", "insteadof",
        "extraheader", "helper", "credential", "include", "gpgsign", "template", "github",
        "smtppass", "lfs", "deploy", "leak"}) {
    EXPECT_EQ(out.find(dropped), std::string::npos) << dropped << "\n" << out;
  }
}

// includeIf conditions: those that only choose by the repository's path, branch or remotes
// are kept (a pattern relative to the including file made absolute), every other is dropped.
TEST(GitIncludeConditionKept, PathBranchAndRemoteConditionsOnly) {
  struct Case {
    std::string condition;
    std::optional<std::string> kept;
  };
  const Case cases[] = {
      {"gitdir:~/work/", "gitdir:~/work/"},
      {"gitdir:/srv/work/**", "gitdir:/srv/work/**"},
      {"gitdir/i:~/Work/", "gitdir/i:~/Work/"},
      {"gitdir:work/", "gitdir:work/"},  // git's own `**/work/`
      {"gitdir:./work/", "gitdir:/home/u/.config/git/work/"},
      {"gitdir/i:./W/", "gitdir/i:/home/u/.config/git/W/"},
      {"onbranch:main", "onbranch:main"},
      {"onbranch:feature/**", "onbranch:feature/**"},
      {"hasconfig:remote.*.url:https://github.com/corp/**",
       "hasconfig:remote.*.url:https://github.com/corp/**"},
      {"gitdir:", std::nullopt},
      {"onbranch:", std::nullopt},
      {"hasconfig:remote.*.url:", std::nullopt},
      {"hasconfig:core.editor:vim", std::nullopt},
      {"hasconfig:remote.origin.url:x", std::nullopt},
      {"unknown:x", std::nullopt},
      {"", std::nullopt},
      {"GITDIR:~/work/", std::nullopt},
      // A control character could end the header the copy writes.
      {"gitdir:~/work/\n[core]\n\tfsmonitor = x", std::nullopt},
      {std::string("onbranch:a") + '\x01' + "b", std::nullopt},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.condition);
    EXPECT_EQ(GitIncludeConditionKept(c.condition, "/home/u/.config/git"), c.kept);
  }
  EXPECT_EQ(GitIncludeConditionKept("gitdir:./w/", ""), std::nullopt);
  EXPECT_EQ(GitIncludeConditionKept("gitdir:./w/", "/"), "gitdir:/w/");
}

// The copy with its includes: each where it stood (so what follows it still wins, as in git),
// its condition quoted as a subsection, its file a name of the sandbox home; one whose
// condition or file is not Anvil's is left out. git reads it back the same way.
TEST(GitConfig, TheCopyKeepsItsConditionalIncludesWhereTheyStood) {
  auto entries =
      ParseGitConfig("[user]\n\tname = U\n\temail = home@example.org\n[alias]\n\tst = status\n");
  ASSERT_TRUE(entries);
  const std::vector<GitConditionalInclude> includes = {
      {2, "gitdir:~/work \"quoted\"\\/", ".gitconfig-include-1"},
      {3, "onbranch:main", ".gitconfig-include-2"},
      {3, "unknown:x", ".gitconfig-include-3"},
      {3, "gitdir:~/w/", "/home/u/.ssh/config"},
      {3, "gitdir:~/w/", ".gitconfig-include-"},
      {3, "gitdir:~/w/", ".gitconfig-include-1/../x"},
      {99, "hasconfig:remote.*.url:https://corp.example/**", ".gitconfig-include-4"},
  };
  const std::string out = RenderGitConfigCopy(*entries, includes);
  auto back = ParseGitConfig(out);
  ASSERT_TRUE(back) << out;
  std::vector<std::string> got;
  for (const auto& e : *back) {
    got.push_back(e.section + "|" + e.subsection + "|" + e.key + "=" + e.value.value_or(""));
  }
  const std::vector<std::string> want = {
      "user||name=U",
      "user||email=home@example.org",
      "includeif|gitdir:~/work \"quoted\"\\/|path=.gitconfig-include-1",
      "alias||st=status",
      "includeif|onbranch:main|path=.gitconfig-include-2",
      "includeif|hasconfig:remote.*.url:https://corp.example/**|path=.gitconfig-include-4",
  };
  EXPECT_EQ(got, want) << out;
  // Without includes, the copy is what it always was.
  EXPECT_EQ(RenderGitConfigCopy(*entries, {}), RenderSanitizedGitConfig(*entries));
  // An includeIf of the user's own file is never carried as an entry.
  auto own = ParseGitConfig("[includeIf \"gitdir:~/w/\"]\n\tpath = ~/w.gc\n[user]\n\tname = U\n");
  ASSERT_TRUE(own);
  EXPECT_EQ(RenderSanitizedGitConfig(*own).find("include"), std::string::npos);
}

TEST(GitConfig, TheCopyReadsBackAsGitReadsTheOriginal) {
  // git's syntax corners (legacy subsections, continuations, escapes, a key alone, a key on
  // its header's line): the copy holds the same allowed entries with the same values.
  auto entries = ParseGitConfig(
      "[Color.Diff]\n meta = yellow \"bold  x\" ; comment\n"
      "[user]\n  name = one \\\n two\n  email = \"x\\ty\"\n"
      "[alias] st = status -sb\n[color \"with \\\"quote\"]\n ui = auto\n[pull]\n rebase\n");
  ASSERT_TRUE(entries) << entries.error().ToString();
  const std::string out = RenderSanitizedGitConfig(*entries);
  auto back = ParseGitConfig(out);
  ASSERT_TRUE(back) << out;
  std::map<std::string, std::string> got;
  for (const auto& e : *back) {
    got[e.section + "|" + e.subsection + "|" + e.key] = e.value ? *e.value : "<true>";
  }
  EXPECT_EQ(got["color|diff|meta"], "yellow bold  x") << out;
  EXPECT_EQ(got["user||name"], "one  two") << out;
  EXPECT_EQ(got["user||email"], "x\ty") << out;
  EXPECT_EQ(got["alias||st"], "status -sb") << out;
  EXPECT_EQ(got["color|with \"quote|ui"], "auto") << out;
  EXPECT_EQ(got["pull||rebase"], "<true>") << out;
  EXPECT_EQ(got.size(), 6u) << out;
}

TEST(GitConfig, ACredentialSplitByControlCharactersStaysOut) {
  // Found by git_config_fuzzer: the copy drops control characters, which made
  // "https:\v//token@host" whole again after the userinfo check had passed it.
  auto parsed = ParseGitConfig(
      "[alias]\n lg = \"log\"\x01[url https:\x0b\x0b//ghp_TOKEN@github.com/]\n"
      " ok = \"status\x0b -sb\"\n");
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  const std::string out = RenderSanitizedGitConfig(*parsed);
  EXPECT_EQ(out.find("ghp_TOKEN"), std::string::npos) << out;
  // The benign neighbour: a value with a stray control character is kept, without it.
  auto back = ParseGitConfig(out);
  ASSERT_TRUE(back) << out;
  ASSERT_EQ(back->size(), 1u) << out;
  EXPECT_EQ((*back)[0].key, "ok");
  EXPECT_EQ((*back)[0].value, "status -sb");
}

TEST(GitConfig, HostileInputNeverEscapesItsQuotes) {
  // A value with a newline and a quote stays one value in the copy.
  auto parsed = ParseGitConfig("[alias]\n x = \"a\\n[credential]\\n\\thelper = evil \\\" q\"\n");
  ASSERT_TRUE(parsed);
  auto out = RenderSanitizedGitConfig(*parsed);
  EXPECT_EQ(out.find("\n[credential]"), std::string::npos) << out;
  auto back = ParseGitConfig(out);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].value, "a\n[credential]\n\thelper = evil \" q");
}

}  // namespace
}  // namespace sandbox_home_test
}  // namespace anvil

namespace anvil {
namespace sandbox_home_test {
namespace {

TEST(RenderHomeProfile, SetsThePathBackQuotedForTheShell) {
  EXPECT_EQ(RenderHomeProfile(""), "");
  const std::string p = RenderHomeProfile("/h/.cargo/bin:/usr/bin");
  EXPECT_NE(p.find("\nPATH='/h/.cargo/bin:/usr/bin'\nexport PATH\n"), std::string::npos) << p;
  // A quote, $, ` and a newline in a directory name stay data.
  const std::string q = RenderHomeProfile("/h/it's $(x) `y`\n:/bin");
  EXPECT_NE(q.find("PATH='/h/it'\\''s $(x) `y`\n:/bin'\nexport PATH\n"), std::string::npos) << q;
}

// Every shell the rules know (RecognisedShells) has the start-up files it reads from $HOME
// listed, so that Anvil writes them into the sandbox home at every start: a shell added to the
// rules' list later without its files fails here. Each row: the shell and what it reads on its
// own (non-interactive -c, login -l, interactive), by its manual.
TEST(HomeStartupFiles, EveryRecognisedShellHasItsStartupFilesOwned) {
  const std::map<std::string, std::vector<std::string>> reads = {
      {"sh", {".profile"}},
      {"dash", {".profile"}},
      {"ash", {".profile"}},
      {"posh", {".profile"}},
      {"bash", {".profile", ".bash_profile", ".bash_login", ".bashrc", ".bash_logout", ".inputrc"}},
      {"rbash",
       {".profile", ".bash_profile", ".bash_login", ".bashrc", ".bash_logout", ".inputrc"}},
      {"zsh",
       {".zshenv", ".zprofile", ".zshrc", ".zlogin", ".zlogout", ".zshenv.zwc", ".zprofile.zwc",
        ".zshrc.zwc", ".zlogin.zwc", ".zlogout.zwc"}},
      {"rzsh", {".zshenv", ".zprofile", ".zshrc", ".zlogin", ".zlogout", ".zshenv.zwc"}},
      {"ksh", {".profile", ".kshrc"}},
      {"ksh93", {".profile", ".kshrc"}},
      {"rksh", {".profile", ".kshrc"}},
      {"rksh93", {".profile", ".kshrc"}},
      {"pdksh", {".profile", ".kshrc"}},
      {"mksh", {".profile", ".mkshrc"}},
      {"rmksh", {".profile", ".mkshrc"}},
      {"lksh", {".profile", ".mkshrc"}},
      {"yash", {".profile", ".yash_profile", ".yashrc"}},
      {"csh", {".cshrc", ".login", ".logout"}},
      {"bsd-csh", {".cshrc", ".login", ".logout"}},
      {"tcsh", {".tcshrc", ".cshrc", ".login", ".logout"}},
      {"fish", {".config/fish", ".local/share/fish"}},
  };
  auto owned_for = [](std::string_view shell) {
    std::set<std::string> out;
    auto names = [shell](std::string_view list) {
      std::string padded = " " + std::string(list) + " ";
      return padded.find(" " + std::string(shell) + " ") != std::string::npos;
    };
    for (const auto& f : kHomeStartupFiles) {
      if (names(f.shells)) out.emplace(f.path);
    }
    for (const auto& d : kHomeStartupDirs) {
      if (names(d.shells)) out.emplace(d.path);
    }
    return out;
  };
  // Shells the rules do not read, which a command may run all the same (a later run's
  // `pwsh -c`, an interactive `nu`): what they read from the home on their own is Anvil's too.
  const std::map<std::string, std::vector<std::string>> others = {
      {"pwsh", {".config/powershell", ".local/share/powershell"}},
      {"nu", {".config/nushell", ".local/share/nushell"}},
      {"xonsh", {".xonshrc", ".config/xonsh"}},
      {"elvish", {".config/elvish"}},
  };
  for (const auto& [shell, files] : others) {
    const std::set<std::string> owned = owned_for(shell);
    for (const std::string& file : files) {
      EXPECT_TRUE(owned.count(file)) << shell << " reads ~/" << file << ", which is not Anvil's";
    }
  }
  for (std::string_view shell : RecognisedShells()) {
    const auto row = reads.find(std::string(shell));
    ASSERT_NE(row, reads.end()) << shell
                                << " is a shell the rules know: list the start-up files "
                                   "it reads here and in kHomeStartupFiles";
    const std::set<std::string> owned = owned_for(shell);
    for (const std::string& file : row->second) {
      EXPECT_TRUE(owned.count(file))
          << shell << " reads ~/" << file << ", which kHomeStartupFiles does not name for it";
    }
  }
  // Every file written is a plain name of the home (WriteHomeFile writes no deeper).
  for (const auto& f : kHomeStartupFiles) {
    EXPECT_EQ(std::string_view(f.path).find('/'), std::string_view::npos) << f.path;
  }
}

TEST(HomeStartupFiles, LoginFilesPutThePathBackAndTheOthersAreEmpty) {
  const auto files = RenderHomeStartupFiles("/h/.cargo/bin:/usr/bin");
  std::map<std::string, std::string> by_name;
  for (const auto& f : files) by_name[f.path] = f.content;
  EXPECT_EQ(files.size(), std::size(kHomeStartupFiles));
  for (const char* login :
       {".profile", ".bash_profile", ".bash_login", ".zprofile", ".yash_profile"}) {
    EXPECT_EQ(by_name[login], RenderHomeProfile("/h/.cargo/bin:/usr/bin")) << login;
  }
  EXPECT_NE(by_name[".login"].find("\nsetenv PATH '/h/.cargo/bin:/usr/bin'\n"), std::string::npos)
      << by_name[".login"];
  // Readline reads /etc/inputrc only where ~/.inputrc is missing: Anvil's includes it.
  EXPECT_NE(by_name[".inputrc"].find("\n$include /etc/inputrc\n"), std::string::npos)
      << by_name[".inputrc"];
  for (const char* empty :
       {".bashrc", ".bash_logout", ".zshenv", ".zshrc", ".zlogin", ".zlogout", ".zshenv.zwc",
        ".cshrc", ".tcshrc", ".logout", ".kshrc", ".mkshrc", ".yashrc", ".xonshrc"}) {
    ASSERT_TRUE(by_name.count(empty)) << empty;
    EXPECT_EQ(by_name[empty], "") << empty;
  }
  // csh cannot quote everything: such a PATH is left out of .login, and sh's files quote it.
  for (const auto& f : RenderHomeStartupFiles("/h/it's!:/bin")) {
    if (f.path == ".login") {
      EXPECT_EQ(f.content, "");
    }
  }
  // No PATH: every file but .inputrc (no PATH in it) is written, empty.
  for (const auto& f : RenderHomeStartupFiles("")) {
    if (f.path != ".inputrc") {
      EXPECT_EQ(f.content, "") << f.path;
    }
  }
}

// A workspace below a repository's top sees the repository: git's own upward search, stopped
// at a file system's edge, never `/`, the home or above it, never through a pointer file.
TEST(EnclosingRepositoryTop, TheNearestGitDirectoryAboveAsGitFindsIt) {
  using RK = RepoTopFacts::Kind;
  struct Row {
    const char* name;
    std::map<std::string, RepoTopFacts> tree;
    const char* workspace;
    std::optional<std::string> top;
  };
  const RepoTopFacts dir{RK::kDirectory, 1, 1000, S_IFDIR | 0755};
  const RepoTopFacts head{RK::kFile, 1, 1000, S_IFREG | 0644};
  const RepoTopFacts file{RK::kFile, 1, 1000, S_IFREG | 0644};
  const RepoTopFacts other_fs{RK::kDirectory, 2, 1000, S_IFDIR | 0755};
  const RepoTopFacts others{RK::kDirectory, 1, 1001, S_IFDIR | 0755};
  const RepoTopFacts sticky{RK::kDirectory, 1, 1000, S_IFDIR | 01777};
  std::map<std::string, RepoTopFacts> mono = {{"/", dir},
                                              {"/srv", dir},
                                              {"/srv/mono", dir},
                                              {"/srv/mono/.git", dir},
                                              {"/srv/mono/.git/HEAD", head},
                                              {"/srv/mono/pkg", dir},
                                              {"/srv/mono/pkg/a", dir}};
  auto with = [&](std::map<std::string, RepoTopFacts> t,
                  std::initializer_list<std::pair<const std::string, RepoTopFacts>> more) {
    for (const auto& [k, v] : more) t[k] = v;
    return t;
  };
  const std::vector<Row> rows = {
      {"a package of a monorepo", mono, "/srv/mono/pkg", "/srv/mono"},
      {"deeper", mono, "/srv/mono/pkg/a", "/srv/mono"},
      {"the top itself has its own", mono, "/srv/mono", std::nullopt},
      {"a nearer repository wins",
       with(mono, {{"/srv/mono/pkg/.git", dir}, {"/srv/mono/pkg/.git/HEAD", head}}),
       "/srv/mono/pkg/a", "/srv/mono/pkg"},
      {"the workspace's own .git file (a submodule): the repository above, as for any directory",
       with(mono, {{"/srv/mono/pkg/.git", file}}), "/srv/mono/pkg", "/srv/mono"},
      {"the workspace's own .git directory", with(mono, {{"/srv/mono/pkg/.git", dir}}),
       "/srv/mono/pkg", std::nullopt},
      {"the workspace's own .git of another kind",
       with(mono, {{"/srv/mono/pkg/.git", {RK::kOther, 1, 1000, S_IFLNK | 0777}}}), "/srv/mono/pkg",
       std::nullopt},
      {"a pointer file above", with(mono, {{"/srv/mono/.git", file}}), "/srv/mono/pkg",
       std::nullopt},
      {"a .git that is no git dir (no HEAD)", with(mono, {{"/srv/mono/.git/HEAD", {}}}),
       "/srv/mono/pkg", std::nullopt},
      {"another user's directory", with(mono, {{"/srv/mono", others}}), "/srv/mono/pkg",
       std::nullopt},
      {"another user's .git (mkdir /var/tmp/.git)", with(mono, {{"/srv/mono/.git", others}}),
       "/srv/mono/pkg", std::nullopt},
      {"a directory anyone may write", with(mono, {{"/srv/mono", sticky}}), "/srv/mono/pkg",
       std::nullopt},
      {"another file system on the way",
       with(mono, {{"/srv/mono/pkg", other_fs}, {"/srv/mono/pkg/a", other_fs}}), "/srv/mono/pkg/a",
       std::nullopt},
      {"no repository", {{"/", dir}, {"/srv", dir}, {"/srv/x", dir}}, "/srv/x", std::nullopt},
      {"a dotfiles repository at the home",
       {{"/", dir},
        {"/home", dir},
        {"/home/u", dir},
        {"/home/u/.git", dir},
        {"/home/u/.git/HEAD", head},
        {"/home/u/p", dir}},
       "/home/u/p",
       std::nullopt},
      {"a repository above the home",
       {{"/", dir},
        {"/home", dir},
        {"/home/.git", dir},
        {"/home/.git/HEAD", head},
        {"/home/u", dir},
        {"/home/u/p", dir}},
       "/home/u/p",
       std::nullopt},
      {"a repository at /",
       {{"/", dir}, {"/.git", dir}, {"/.git/HEAD", head}, {"/srv", dir}},
       "/srv",
       std::nullopt},
      {"one below the home",
       with(mono, {{"/home", dir},
                   {"/home/u", dir},
                   {"/home/u/code", dir},
                   {"/home/u/code/.git", dir},
                   {"/home/u/code/.git/HEAD", head},
                   {"/home/u/code/p", dir}}),
       "/home/u/code/p", "/home/u/code"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    auto tree = row.tree;
    RepoTopLstat lstat = [tree](const std::string& p) {
      auto it = tree.find(p);
      return it == tree.end() ? RepoTopFacts{} : it->second;
    };
    EXPECT_EQ(EnclosingRepositoryTop(row.workspace, {"/home/u"}, 1000, lstat), row.top);
  }
  // No home known (HOME unset): nothing is shown; the user database's home counts as one too
  // (a symlinked $HOME resolves to it).
  RepoTopLstat in_home = [](const std::string& p) {
    std::map<std::string, RepoTopFacts> t = {
        {"/", {RK::kDirectory, 1, 1000, S_IFDIR | 0755}},
        {"/var", {RK::kDirectory, 1, 1000, S_IFDIR | 0755}},
        {"/var/home", {RK::kDirectory, 1, 1000, S_IFDIR | 0755}},
        {"/var/home/u", {RK::kDirectory, 1, 1000, S_IFDIR | 0755}},
        {"/var/home/u/.git", {RK::kDirectory, 1, 1000, S_IFDIR | 0755}},
        {"/var/home/u/.git/HEAD", {RK::kFile, 1, 1000, S_IFREG | 0644}},
        {"/var/home/u/notes", {RK::kDirectory, 1, 1000, S_IFDIR | 0755}}};
    auto it = t.find(p);
    return it == t.end() ? RepoTopFacts{} : it->second;
  };
  EXPECT_EQ(EnclosingRepositoryTop("/var/home/u/notes", {}, 1000, in_home), std::nullopt);
  EXPECT_EQ(EnclosingRepositoryTop("/var/home/u/notes", {"/home/u", "/var/home/u"}, 1000, in_home),
            std::nullopt);
  EXPECT_EQ(EnclosingRepositoryTop("/var/home/u/notes", {"/elsewhere"}, 1000, in_home),
            "/var/home/u");
}

// The implied root is shown like a named one, and skipped (never an error) where a named one
// would be refused.
TEST(PlanHomeView, AnImpliedReadableRootIsShownOrSkippedNeverRefused) {
  HomePlanInput in = Input();
  FakeHome f = LivedInHome();
  f.entries["/srv/mono"] = Kind::kDirectory;
  in.implied_readable_roots = {"/srv/mono"};
  auto plan = PlanHomeView(in, f.Host());
  ASSERT_TRUE(plan) << plan.error().ToString();
  EXPECT_TRUE(Has(plan->read_roots, "/srv/mono"));
  for (const char* root : {"/home/u/.ssh", "/home/u", "/home"}) {
    SCOPED_TRACE(root);
    in.implied_readable_roots = {root};
    plan = PlanHomeView(in, f.Host());
    ASSERT_TRUE(plan) << plan.error().ToString();
    EXPECT_FALSE(Has(plan->read_roots, root));
  }
}

// git's global ignore and attributes files as the configuration names them: the last value
// of each, `~/` expanded, never one git would take relative to the current directory or
// another user's home.
TEST(GitNamedFiles, TheLastValueOfEachExpandedAgainstTheHome) {
  auto entry = [](std::string key, std::optional<std::string> value, std::string sub = "") {
    GitConfigEntry e;
    e.section = "core";
    e.key = std::move(key);
    e.value = std::move(value);
    e.has_subsection = !sub.empty();
    e.subsection = std::move(sub);
    return e;
  };
  struct Case {
    std::vector<GitConfigEntry> entries;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      {{entry("excludesfile", "~/.gitignore_global")}, {"/home/u/.gitignore_global"}},
      {{entry("excludesfile", "~/a"), entry("excludesfile", "~/b")}, {"/home/u/b"}},
      {{entry("excludesfile", "~/x"), entry("attributesfile", "/home/u/.gitattributes")},
       {"/home/u/x", "/home/u/.gitattributes"}},
      {{entry("excludesfile", "~/x"), entry("attributesfile", "~/x")}, {"/home/u/x"}},
      {{entry("excludesfile", ".gitignore_global")}, {}},  // relative to the current directory
      {{entry("excludesfile", "~other/.gitignore")}, {}},  // another user's home
      {{entry("excludesfile", "")}, {}},
      {{entry("excludesfile", std::nullopt)}, {}},
      {{entry("excludesfile", "~/x", "sub")}, {}},
      {{entry("fsmonitor", "/home/u/x")}, {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.entries.back().key + "=" + c.entries.back().value.value_or("(none)"));
    EXPECT_EQ(GitNamedFiles(c.entries, "/home/u"), c.want);
  }
  EXPECT_TRUE(GitNamedFiles({entry("excludesfile", "~/x")}, "").empty());
}

TEST(GitNamedFileShown, ARegularFileOfTheHomeOrTheSystemOnly) {
  using K = HomeHost::Kind;
  struct Case {
    std::string lexical;
    std::vector<std::string> links;  // the walk's
    std::optional<std::string> end;
    K kind;
    bool shown;
  };
  const Case cases[] = {
      {"/home/u/.gitignore_global", {}, "/home/u/.gitignore_global", K::kFile, true},
      {"/home/u/.config/git/attributes", {}, "/home/u/.config/git/attributes", K::kFile, true},
      // A link at the home's top (stow's ~/.gitignore_global -> dotfiles/gitignore): only a run
      // with the whole home writable could have made it, and that run sees the home anyway.
      {"/home/u/.gitignore_global",
       {"/home/u/.gitignore_global"},
       "/home/u/dotfiles/gitignore",
       K::kFile,
       true},
      // A link deeper in the home: an earlier run of a workspace holding it (~/dotfiles,
      // ~/.config) could have pointed it at a file this run hides.
      {"/home/u/dotfiles/gitignore",
       {"/home/u/dotfiles/gitignore"},
       "/home/u/Documents/secret.txt",
       K::kFile,
       false},
      {"/home/u/.config/git/ignore",
       {"/home/u/.config/git/ignore"},
       "/home/u/dotfiles/gi",
       K::kFile,
       false},
      // The top link's target re-pointed by a run in ~/dotfiles: a second, deeper link.
      {"/home/u/.gitignore_global",
       {"/home/u/.gitignore_global", "/home/u/dotfiles/gitignore"},
       "/home/u/secret.txt",
       K::kFile,
       false},
      // A deep link that leads back to the file's own path, or a directory on the way that is.
      {"/home/u/.config/git/ignore",
       {"/home/u/.config/git"},
       "/home/u/dotfiles/git/ignore",
       K::kFile,
       false},
      {"/home/u/.config/git/ignore", {}, "/home/u/.config/git/ignore", K::kFile, true},
      // Into the system's trees (home-manager's store, /etc): shows nothing the view hides.
      {"/home/u/.gitignore_global",
       {"/home/u/.gitignore_global"},
       "/nix/store/abc-gitignore",
       K::kFile,
       true},
      {"/home/u/.config/git/ignore",
       {"/home/u/.config/git/ignore"},
       "/etc/gitignore",
       K::kFile,
       true},
      // Not a regular file: a FIFO or a socket would be a channel, a directory is no ignore file.
      {"/home/u/.gitignore_global", {}, "/home/u/.gitignore_global", K::kOther, false},
      {"/home/u/.gitignore_global", {}, "/home/u/.gitignore_global", K::kDirectory, false},
      {"/home/u/.gitignore_global", {}, "/home/u/.gitignore_global", K::kSymlink, false},
      {"/home/u/.gitignore_global", {}, std::nullopt, K::kMissing, false},
      // Outside the home, or leaving it and the system even by the home's own link: not shown.
      {"/srv/shared/gitignore", {}, "/srv/shared/gitignore", K::kFile, false},
      {"/tmp/gitignore", {}, "/tmp/gitignore", K::kFile, false},
      {"/home/u/.gitignore_global",
       {"/home/u/.gitignore_global"},
       "/tmp/gitignore",
       K::kFile,
       false},
      {"/home/u/.gitignore_global",
       {"/home/u/.gitignore_global"},
       "/proc/1/environ",
       K::kFile,
       false},
      {"/home/u/.gitignore_global",
       {"/home/u/.gitignore_global"},
       "/home/other/.gitignore",
       K::kFile,
       false},
      {"/home/u", {}, "/home/u", K::kFile, false},
      // The shells' start-up files stay Anvil's.
      {"/home/u/.bashrc", {}, "/home/u/.bashrc", K::kFile, false},
      {"/home/u/.config/fish/ignore", {}, "/home/u/.config/fish/ignore", K::kFile, false},
      {"/home/u/../u/x", {}, "/home/u/x", K::kFile, false},
      {"/home/u/x", {"/home/u/x"}, "/home/u/../../proc/1/environ", K::kFile, false},
      // In a writable root of the run, or through a link there: shown there as it is.
      {"/home/u/proj/.gitignore", {}, "/home/u/proj/.gitignore", K::kFile, false},
      {"/home/u/.gitignore_global",
       {"/home/u/.gitignore_global"},
       "/home/u/proj/gitignore",
       K::kFile,
       false},
      {"/home/u/.gitignore_global",
       {"/home/u/.gitignore_global", "/home/u/proj/link"},
       "/etc/gitignore",
       K::kFile,
       false},
      {"/home/u/proj2/.gitignore", {}, "/home/u/proj2/.gitignore", K::kFile, true},
  };
  const std::vector<std::string> writable = {"/home/u/proj"};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.lexical + " -> " + c.end.value_or("(missing)"));
    const PathWalk walk{c.links, c.end};
    EXPECT_EQ(GitNamedFileShown(c.lexical, walk, c.kind, "/home/u", "/home/u", writable), c.shown);
  }
  EXPECT_FALSE(GitNamedFileShown("/x/y", PathWalk{{}, "/x/y"}, K::kFile, "/", "/", {}));
  // The home reached through a link: the file resolves into its canonical path.
  EXPECT_TRUE(GitNamedFileShown("/home/u/.gitignore_global",
                                PathWalk{{"/home"}, "/var/home/u/.gitignore_global"}, K::kFile,
                                "/home/u", "/var/home/u", {}));
}

// The walk of a path records every link it follows, where it lies (its directory resolved), as
// the kernel resolves them: relative to the link's directory, from the root when absolute.
TEST(WalkPath, EveryLinkFollowedAndWhereItEnds) {
  FakeHome f;
  for (const char* d : {"/home", "/home/u", "/home/u/.config", "/home/u/.config/git",
                        "/home/u/dotfiles", "/home/u/dotfiles/git", "/usr", "/usr/bin"}) {
    f.entries[d] = Kind::kDirectory;
  }
  for (const char* file : {"/home/u/dotfiles/gi", "/home/u/secret.txt", "/usr/bin/sh"}) {
    f.entries[file] = Kind::kFile;
  }
  f.links["/home/u/.gitignore_global"] = "dotfiles/gi";
  f.links["/home/u/.config/git/ignore"] = "../../dotfiles/gi";
  f.links["/home/u/dotfiles/chain"] = "/home/u/.config/git/ignore";
  f.links["/home/u/.cargo"] = "dotfiles";
  f.links["/home/u/loop"] = "loop";
  f.links["/home/u/dangling"] = "nowhere";
  f.links["/home/u/bin"] = "/usr/bin";
  const HomeHost host = f.Host();
  struct Case {
    std::string path;
    std::vector<std::string> links;
    std::optional<std::string> end;
  };
  const Case cases[] = {
      {"/home/u/dotfiles/gi", {}, "/home/u/dotfiles/gi"},
      {"/home/u/.gitignore_global", {"/home/u/.gitignore_global"}, "/home/u/dotfiles/gi"},
      {"/home/u/.config/git/ignore", {"/home/u/.config/git/ignore"}, "/home/u/dotfiles/gi"},
      {"/home/u/dotfiles/chain",
       {"/home/u/dotfiles/chain", "/home/u/.config/git/ignore"},
       "/home/u/dotfiles/gi"},
      {"/home/u/.cargo/git/../gi", {"/home/u/.cargo"}, "/home/u/dotfiles/gi"},
      {"/home/u/bin/sh", {"/home/u/bin"}, "/usr/bin/sh"},
      {"/home/u/loop", {}, std::nullopt},
      {"/home/u/dangling", {}, std::nullopt},
      {"/home/u/secret.txt/x", {}, std::nullopt},  // a file is no directory
      {"/home/u/missing", {}, std::nullopt},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.path);
    const PathWalk walk = WalkPath(c.path, host);
    EXPECT_EQ(walk.end, c.end);
    if (c.end) {
      EXPECT_EQ(walk.links, c.links);
    }
  }
  EXPECT_FALSE(WalkPath("relative/path", host).end);
}

// What a walk may end at: the system's trees, a place the view shows by its own name (a
// toolchain of the table, a place the caller names), or, through the home's own links only
// (at its top, or on the way to the home itself), anywhere in the home.
TEST(HomeWalkAllowed, TheTablesPlacesOrTheHomesOwnLinksOnly) {
  struct Case {
    std::vector<std::string> links;
    std::optional<std::string> end;
    bool allowed;
  };
  const Case cases[] = {
      {{}, "/var/home/u/.cargo/bin", true},
      {{"/var/home/u/.cargo"}, "/var/home/u/tools/cargo/bin", true},  // the home's top
      {{"/home"}, "/var/home/u/tools", true},  // on the way to the home itself
      {{"/var/home/u/.cargo/bin"}, "/var/home/u/dotfiles/cargo-bin", false},
      {{"/var/home/u/.cargo/bin"}, "/var/home/u/.rustup/toolchains/x/bin", true},
      {{"/var/home/u/go/bin"}, "/var/home/u/.local/bin", true},
      {{"/var/home/u/x/y"}, "/var/home/u/.local/lib/python3.12/site-packages/z", true},
      {{"/var/home/u/x/y"}, "/var/home/u/.local/lib/.python3/site-packages", false},
      {{"/var/home/u/x/y"}, "/var/home/u/.local/lib/python3.12", false},
      {{"/var/home/u/.cargo/bin"}, "/usr/local/bin", true},
      {{"/var/home/u/.cargo/bin"}, "/opt/cargo/bin", false},
      {{"/var/home/u/.cargo"}, "/opt/cargo", false},  // leaving the home and the system
      {{"/var/home/u/.cargo"}, "/proc/self/environ", false},
      {{"/var/home/u/.cargo", "/var/home/u/tools/cargo"}, "/var/home/u/Documents", false},
      {{"/var/home/u/.cargo/bin"}, "/var/home/u/named/dir/x", true},  // a place the caller named
      {{"/var/home/u/.cargo/bin"}, "/var/home/u/named", true},
      {{"/var/home/u/.cargo/bin"}, "/var/home/u/namedx", false},
      {{"/var/home/u/.cargo/bin"}, "/var/home/u", false},
      {{}, std::nullopt, false},
      {{}, "/var/home/u/../u/x", false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.end.value_or("(nowhere)"));
    EXPECT_EQ(
        HomeWalkAllowed(PathWalk{c.links, c.end}, "/home/u", "/var/home/u", {"/var/home/u/named"}),
        c.allowed);
  }
  // No home known: only the system's trees and the places named.
  EXPECT_FALSE(HomeWalkAllowed(PathWalk{{}, "/home/u/x"}, "", "", {}));
  EXPECT_TRUE(HomeWalkAllowed(PathWalk{{"/home/u/x"}, "/usr/bin"}, "", "", {}));
  EXPECT_TRUE(InHomeToolchainPlace("/h/.config/git/ignore", "/h"));
  EXPECT_FALSE(InHomeToolchainPlace("/h/.config/git", "/h"));
  EXPECT_FALSE(InHomeToolchainPlace("/h", "/h"));
  EXPECT_FALSE(InHomeToolchainPlace("/other/.cargo/bin", "/h"));
  EXPECT_TRUE(HomeLinkTrusted("/h/.cargo", "/home/u", "/h"));
  EXPECT_FALSE(HomeLinkTrusted("/h/.cargo/bin", "/home/u", "/h"));
  EXPECT_TRUE(HomeLinkTrusted("/home", "/home/u", "/h"));
  EXPECT_TRUE(HomeLinkTrusted("/home/u", "/home/u", "/h"));
  EXPECT_FALSE(HomeLinkTrusted("/h/.cargo", "/home/u", "/"));
}

// A toolchain of the table found through a link deeper in the home (a run in ~/dotfiles could
// have re-pointed it): shown only where it leads to a place the view shows by its own name; the
// home's own links at its top lead anywhere in the home. Each bind and read root carries the
// identity judged (init binds only that object).
TEST(PlanHomeView, ToolchainLinksAreJudgedAtEveryHopAndBoundAsJudged) {
  FakeHome f = LivedInHome();
  f.entries.erase("/home/u/.cargo/bin");
  f.entries["/home/u/dotfiles"] = Kind::kDirectory;
  f.entries["/home/u/dotfiles/cargo-bin"] = Kind::kDirectory;
  f.entries["/home/u/Documents/secret.txt"] = Kind::kFile;
  f.entries["/home/u/.rustup"] = Kind::kDirectory;
  f.entries["/home/u/.rustup/bin"] = Kind::kDirectory;
  f.entries["/home/u/tools"] = Kind::kDirectory;
  f.entries["/home/u/tools/nvm"] = Kind::kDirectory;
  f.entries["/home/u/dotfiles/gi"] = Kind::kFile;
  f.entries.erase("/home/u/.config/git/ignore");
  f.links["/home/u/.config/git/ignore"] = "/home/u/dotfiles/gi";  // stow, deep
  f.links["/home/u/.nvm"] = "/home/u/tools/nvm";                  // the home's top
  f.links["/home/u/.local/share/uv/python"] = "/home/u/Documents";
  f.entries["/home/u/.local/share"] = Kind::kDirectory;
  f.entries["/home/u/.local/share/uv"] = Kind::kDirectory;
  HomeHost host;
  auto source_of = [](const HomeView& plan, const std::string& target) -> std::string {
    for (const auto& b : plan.binds) {
      if (b.target == target) return b.source;
    }
    return "";
  };
  for (const char* to : {"/home/u/dotfiles/cargo-bin", "/home/u/.rustup/bin"}) {
    SCOPED_TRACE(to);
    f.links["/home/u/.cargo/bin"] = to;
    host = f.Host();
    std::map<std::string, uint64_t> inodes;
    host.identify =
        [&inodes, base = host.lstat_kind](const std::string& p) -> std::optional<HomeHost::Node> {
      const auto kind = base(p);
      if (kind == Kind::kMissing || kind == Kind::kSymlink) return std::nullopt;
      if (!inodes.count(p)) inodes[p] = inodes.size() + 100;
      return HomeHost::Node{kind, 7, inodes[p]};
    };
    auto plan = PlanHomeView(Input(), host);
    ASSERT_TRUE(plan) << plan.error().ToString();
    const bool own_place = std::string(to) == "/home/u/.rustup/bin";
    EXPECT_EQ(source_of(*plan, "/home/u/.cargo/bin"), own_place ? to : "");
    EXPECT_EQ(source_of(*plan, "/home/u/.nvm"), "/home/u/tools/nvm");
    EXPECT_EQ(source_of(*plan, "/home/u/.config/git/ignore"), "");
    EXPECT_EQ(source_of(*plan, "/home/u/.local/share/uv/python"), "");
    for (const auto& b : plan->binds) {
      EXPECT_EQ(b.expect_dev, 7u) << b.target;
      EXPECT_EQ(b.expect_ino, inodes[b.source]) << b.target;
    }
    for (const auto& r : plan->read_roots) {
      ASSERT_TRUE(plan->identities.count(r)) << r;
      EXPECT_EQ(plan->identities.at(r).second, inodes[r]) << r;
    }
    FileView view;
    view.writable_roots = {{"/home/u/proj", {}}};
    ASSERT_TRUE(ApplyHomeView(*plan, HostFs{}, view));
    for (const auto& m : view.mapped_binds) {
      if (m.source == "/home/u/.pyenv") {
        EXPECT_EQ(m.expect_ino, inodes["/home/u/.pyenv"]);
      }
    }
  }
  // A root you name in the home is judged the same way: one that leads elsewhere through a link
  // deeper in the home is refused, naming where it leads, until that place is named too.
  {
    f.links["/home/u/.config/nvim"] = "/home/u/dotfiles/nvim";
    f.entries["/home/u/dotfiles/nvim"] = Kind::kDirectory;
    HomePlanInput named = Input();
    named.readable_roots = {"~/.config/nvim"};
    auto refused = PlanHomeView(named, f.Host());
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().ToString().find("leads to /home/u/dotfiles/nvim"), std::string::npos)
        << refused.error().ToString();
    named.readable_roots = {"~/.config/nvim", "~/dotfiles/nvim"};
    auto both = PlanHomeView(named, f.Host());
    ASSERT_TRUE(both) << both.error().ToString();
    EXPECT_EQ(source_of(*both, "/home/u/.config/nvim"), "/home/u/dotfiles/nvim");
    // At the home's top, a link of the home's own: shown as before.
    f.links["/home/u/notes"] = "/home/u/dotfiles/nvim";
    named.readable_roots = {"~/notes"};
    auto top = PlanHomeView(named, f.Host());
    ASSERT_TRUE(top) << top.error().ToString();
    EXPECT_EQ(source_of(*top, "/home/u/notes"), "/home/u/dotfiles/nvim");
  }
  // A place the user names (no link on the way) is shown by its own name: a deep link to it is
  // followed too.
  f.links["/home/u/.cargo/bin"] = "/home/u/dotfiles/cargo-bin";
  HomePlanInput in = Input();
  in.readable_roots = {"~/dotfiles"};
  auto plan = PlanHomeView(in, f.Host());
  ASSERT_TRUE(plan) << plan.error().ToString();
  EXPECT_EQ(source_of(*plan, "/home/u/.cargo/bin"), "/home/u/dotfiles/cargo-bin");
}

// A named file GitNamedFileShown allows is a root the run implies: shown read-only at its path
// (mapped where it is a link), and skipped, never an error, inside a credential location, by
// path or once resolved.
TEST(PlanHomeView, TheGlobalIgnoreFileTheConfigurationNamesIsShownOutsideCredentials) {
  FakeHome f = LivedInHome();
  f.entries["/home/u/.gitignore_global"] = Kind::kFile;
  HomePlanInput in = Input();
  in.git_named_files = {"/home/u/.gitignore_global"};
  auto plan = PlanHomeView(in, f.Host());
  ASSERT_TRUE(plan) << plan.error().ToString();
  EXPECT_TRUE(Has(plan->read_roots, "/home/u/.gitignore_global"));

  f.entries.erase("/home/u/.gitignore_global");
  f.entries["/home/u/dotfiles"] = Kind::kDirectory;
  f.entries["/home/u/dotfiles/gitignore"] = Kind::kFile;
  f.links["/home/u/.gitignore_global"] = "/home/u/dotfiles/gitignore";
  plan = PlanHomeView(in, f.Host());
  ASSERT_TRUE(plan) << plan.error().ToString();
  ASSERT_EQ(plan->binds.size(), 1u);
  EXPECT_EQ(plan->binds[0].source, "/home/u/dotfiles/gitignore");
  EXPECT_EQ(plan->binds[0].target, "/home/u/.gitignore_global");
  EXPECT_FALSE(plan->binds[0].writable);
  EXPECT_FALSE(Has(plan->read_roots, "/home/u/dotfiles"));
  // The file the link at the home's top leads to, re-pointed by a run in ~/dotfiles (a link
  // deeper in the home): not shown.
  f.entries["/home/u/secret.txt"] = Kind::kFile;
  f.links["/home/u/dotfiles/gitignore"] = "/home/u/secret.txt";
  plan = PlanHomeView(in, f.Host());
  ASSERT_TRUE(plan) << plan.error().ToString();
  EXPECT_TRUE(plan->binds.empty());
  EXPECT_FALSE(Has(plan->read_roots, "/home/u/secret.txt"));
  f.links.erase("/home/u/dotfiles/gitignore");

  f.entries["/home/u/.ssh/config"] = Kind::kFile;
  f.entries["/home/u/.ssh/ignore"] = Kind::kFile;
  f.links["/home/u/.gitignore_global"] = "/home/u/.ssh/config";
  for (const char* named :
       {"/home/u/.gitignore_global", "/home/u/.ssh/ignore", "/home/u/.netrc", "/home/u/.npmrc"}) {
    SCOPED_TRACE(named);
    in.git_named_files = {named};
    plan = PlanHomeView(in, f.Host());
    ASSERT_TRUE(plan) << plan.error().ToString();
    EXPECT_TRUE(plan->binds.empty());
    for (const auto& r : plan->read_roots) {
      EXPECT_FALSE(PathIsWithin(r, "/home/u/.ssh")) << r;
      EXPECT_NE(r, named);
    }
  }
}

// The workspace's kept /tmp comes with a persistent home only, and is bound unless a root the
// user named shows the host's /tmp.
TEST(ApplyHomeView, TheKeptTmpUnlessANamedRootShowsTheHostsTmp) {
  HomePlanInput in = Input();
  in.sandbox_tmp = "/home/u/.local/state/anvil/homes/proj-0123/tmp";
  auto plan = PlanHomeView(in, LivedInHome().Host());
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->tmp.target, "/tmp");
  EXPECT_TRUE(plan->tmp.writable);
  FileView view;
  view.writable_roots = {{"/home/u/proj", {}}};
  ASSERT_TRUE(ApplyHomeView(*plan, HostFs{}, view));
  ASSERT_TRUE(view.tmp_bind);
  EXPECT_EQ(view.mapped_binds[*view.tmp_bind].source, in.sandbox_tmp);
  for (const char* root : {"/tmp", "/"}) {
    SCOPED_TRACE(root);
    FileView shown;
    shown.writable_roots = {{"/home/u/proj", {}}, {root, {}}};
    ASSERT_TRUE(ApplyHomeView(*plan, HostFs{}, shown));
    EXPECT_FALSE(shown.tmp_bind);
  }
  HomePlanInput tmp_home = Input(HomeMode::kTmp);
  tmp_home.sandbox_tmp = in.sandbox_tmp;
  plan = PlanHomeView(tmp_home, LivedInHome().Host());
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->tmp.source.empty());
}

// The sandbox home and the kept /tmp are keyed by the repository top the workspace lies in
// (EnclosingRepositoryTop's answer), so every directory of one repository shares them; other
// workspaces, and other repositories, keep their own.
TEST(SandboxHomeKey, TheRepositoryTopForEveryDirectoryOfOneRepository) {
  EXPECT_EQ(SandboxHomeKey("/home/u/proj", std::nullopt), "/home/u/proj");
  EXPECT_EQ(SandboxHomeKey("/home/u/proj/sub", std::string("/home/u/proj")), "/home/u/proj");
  EXPECT_EQ(SandboxHomeKey("/home/u/proj/a/b", std::string("/home/u/proj")), "/home/u/proj");
  // A top that does not hold the workspace is no answer for it.
  EXPECT_EQ(SandboxHomeKey("/home/u/other", std::string("/home/u/proj")), "/home/u/other");
  EXPECT_EQ(SandboxHomeKey("/home/u/proj2", std::string("/home/u/proj")), "/home/u/proj2");
  EXPECT_EQ(SandboxHomeDirName(SandboxHomeKey("/home/u/proj/sub", std::string("/home/u/proj"))),
            SandboxHomeDirName("/home/u/proj"));
  EXPECT_NE(SandboxHomeDirName(SandboxHomeKey("/home/u/proj2/sub", std::string("/home/u/proj2"))),
            SandboxHomeDirName("/home/u/proj"));
}

// An activated virtualenv ($VIRTUAL_ENV, pyvenv.cfg) or conda environment ($CONDA_PREFIX,
// conda-meta/) outside the workspace is shown read-only when it is really one, the caller's
// (or root's), writable by no one else, and holds neither a home nor a writable root.
TEST(ActivatedEnvironmentShown, ARealEnvironmentOfTheCallersThatHoldsNothingElse) {
  using RK = RepoTopFacts::Kind;
  const RepoTopFacts dir{RK::kDirectory, 1, 1000, S_IFDIR | 0755};
  const RepoTopFacts root_dir{RK::kDirectory, 1, 0, S_IFDIR | 0755};
  const RepoTopFacts cfg{RK::kFile, 1, 1000, S_IFREG | 0644};
  std::map<std::string, RepoTopFacts> tree = {
      {"/home/u/v2", dir},
      {"/home/u/v2/pyvenv.cfg", cfg},
      {"/opt/conda/envs/ml", root_dir},
      {"/opt/conda/envs/ml/conda-meta", root_dir},
      {"/home/u/plain", dir},
      {"/home/u/cfgdir", dir},
      {"/home/u/cfgdir/pyvenv.cfg", dir},
      {"/home/u/theirs", {RK::kDirectory, 1, 1001, S_IFDIR | 0755}},
      {"/home/u/theirs/pyvenv.cfg", {RK::kFile, 1, 1001, S_IFREG | 0644}},
      {"/home/u/open", {RK::kDirectory, 1, 1000, S_IFDIR | 0777}},
      {"/home/u/open/pyvenv.cfg", cfg},
      {"/home/u/planted", dir},
      {"/home/u/planted/pyvenv.cfg", {RK::kFile, 1, 1001, S_IFREG | 0644}},
      {"/home/u/work", dir},
      {"/home/u/work/pyvenv.cfg", cfg},
      {"/home/u", dir},
      {"/home/u/pyvenv.cfg", cfg},
      {"/srv/cache", dir},
      {"/srv/cache/pyvenv.cfg", cfg},
  };
  RepoTopLstat lstat = [&](const std::string& p) {
    auto it = tree.find(p);
    return it == tree.end() ? RepoTopFacts{} : it->second;
  };
  const std::vector<std::string> homes = {"/home/u"};
  const std::vector<std::string> writable = {"/home/u/work/proj", "/srv/cache/pip"};
  struct Row {
    const char* name;
    const char* dir;
    size_t which;  // 0: VIRTUAL_ENV, 1: CONDA_PREFIX
    bool shown;
  };
  const Row rows[] = {
      {"a virtualenv of the caller's", "/home/u/v2", 0, true},
      {"a conda environment of root's", "/opt/conda/envs/ml", 1, true},
      {"a virtualenv named as a conda environment", "/home/u/v2", 1, false},
      {"no pyvenv.cfg", "/home/u/plain", 0, false},
      {"pyvenv.cfg is no file", "/home/u/cfgdir", 0, false},
      {"another user's", "/home/u/theirs", 0, false},
      {"writable by others", "/home/u/open", 0, false},
      {"a pyvenv.cfg another user planted", "/home/u/planted", 0, false},
      {"holds the workspace", "/home/u/work", 0, false},
      {"holds a writable root", "/srv/cache", 0, false},
      {"the home", "/home/u", 0, false},
      {"inside the workspace: shown already", "/home/u/work/proj/.venv", 0, false},
      {"a runtime root: shown already", "/usr", 0, false},
      {"missing", "/home/u/gone", 0, false},
      {"the root", "/", 0, false},
      {"relative", "v2", 0, false},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(ActivatedEnvironmentShown(row.dir, kActivatedEnvironments[row.which], 1000, homes,
                                        writable, lstat),
              row.shown)
        << row.name;
  }
  // No home known: nothing is shown (as for the repository above).
  EXPECT_FALSE(ActivatedEnvironmentShown("/home/u/v2", kActivatedEnvironments[0], 1000, {},
                                         writable, lstat));
}

}  // namespace
}  // namespace sandbox_home_test
}  // namespace anvil
