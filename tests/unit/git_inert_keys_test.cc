// The keys a repository the command made may hold (policy/git_inert_keys.h): what git init,
// clone, remote add, config user.*, branch tracking, submodule add and worktree add write is
// inert; every other key is not, the ones no list of commands names included.
#include "policy/git_inert_keys.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "policy/git_metadata.h"

namespace anvil {
namespace git_inert_keys_test {
namespace {

GitConfigEntry Entry(const std::string& section, const std::string& sub, const std::string& key,
                     std::optional<std::string> value) {
  GitConfigEntry e;
  e.section = section;
  e.subsection = sub;
  e.has_subsection = !sub.empty();
  e.key = key;
  e.value = std::move(value);
  return e;
}

TEST(GitInertKeys, OnlyWhatInitCloneAndFriendsWrite) {
  struct Case {
    GitConfigEntry entry;
    bool inert;
  };
  const std::vector<Case> cases = {
      // git init
      {Entry("core", "", "repositoryformatversion", "0"), true},
      {Entry("core", "", "filemode", "true"), true},
      {Entry("core", "", "bare", "false"), true},
      {Entry("core", "", "logallrefupdates", "true"), true},
      {Entry("core", "", "ignorecase", "true"), true},
      {Entry("core", "", "precomposeunicode", "true"), true},
      {Entry("core", "", "symlinks", "false"), true},
      {Entry("extensions", "", "objectformat", "sha256"), true},
      {Entry("extensions", "", "refstorage", "reftable"), true},
      {Entry("extensions", "", "worktreeconfig", "true"), true},
      // git clone, remote add, branch --set-upstream-to, config user.*, submodule add
      {Entry("remote", "origin", "url", "https://example.org/x.git"), true},
      {Entry("remote", "origin", "url", "git@example.org:x.git"), true},
      {Entry("remote", "origin", "url", "/srv/git/x.git"), true},
      {Entry("remote", "origin", "url", "ssh://h/x::y"), true},  // "::" past a '/': a path
      {Entry("remote", "origin", "pushurl", "https://example.org/x.git"), true},
      {Entry("remote", "origin", "fetch", "+refs/heads/*:refs/remotes/origin/*"), true},
      {Entry("branch", "main", "remote", "origin"), true},
      {Entry("branch", "main", "merge", "refs/heads/main"), true},
      {Entry("user", "", "name", "me"), true},
      {Entry("user", "", "email", "me@example.org"), true},
      {Entry("submodule", "lib", "url", "../lib.git"), true},
      {Entry("submodule", "lib", "active", "true"), true},
      {Entry("init", "", "defaultbranch", "main"), true},
      // git sparse-checkout set, git config rerere.*, git maintenance register
      {Entry("core", "", "sparsecheckout", "true"), true},
      {Entry("core", "", "sparsecheckoutcone", "false"), true},
      {Entry("index", "", "sparse", "true"), true},
      {Entry("rerere", "", "enabled", "true"), true},
      {Entry("rerere", "", "autoupdate", "true"), true},
      {Entry("maintenance", "", "auto", "false"), true},
      {Entry("maintenance", "", "strategy", "incremental"), true},
      // Their neighbours that name programs or files stay out.
      {Entry("maintenance", "gc", "schedule", "hourly"), false},
      {Entry("maintenance", "", "repo", "/elsewhere"), false},
      // What runs code, listed anywhere or not.
      {Entry("remote", "origin", "url", "ext::sh -c touch% /tmp/x"), false},
      {Entry("remote", "origin", "url", "fd::7"), false},
      {Entry("remote", "origin", "pushurl", "ext::sh"), false},
      {Entry("remote", "origin", "url", "foo://attacker/x"), false},
      {Entry("remote", "origin", "url", "0foo://attacker/x"), false},
      {Entry("branch", "main", "remote", "foo://attacker/x"), false},
      {Entry("branch", "main", "pushremote", "ext::sh"), false},
      {Entry("branch", "main", "remote", "origin"), true},
      {Entry("remote", "origin", "url", "HTTPS://example.com/x"), false},
      {Entry("submodule", "lib", "url", "pwn://h/x"), false},
      {Entry("remote", "origin", "url", "https://example.com/x.git"), true},
      {Entry("remote", "origin", "url", "ssh://git@example.com/x.git"), true},
      {Entry("remote", "origin", "url", "git+ssh://example.com/x.git"), true},
      {Entry("remote", "origin", "url", "file:///srv/x.git"), true},
      {Entry("remote", "origin", "url", "git@example.com:x/y.git"), true},
      {Entry("remote", "origin", "url", "../sibling"), true},
      {Entry("remote", "origin", "url", "-uhelp"), false},
      {Entry("submodule", "lib", "url", "ext::sh"), false},
      {Entry("remote", "origin", "uploadpack", "/tmp/x"), false},
      {Entry("remote", "origin", "receivepack", "/tmp/x"), false},
      {Entry("alias", "", "st", "-c core.fsmonitor=/tmp/x status"), false},
      {Entry("alias", "", "st", "status -s"), false},
      {Entry("tar", "tgz", "command", "/tmp/x; gzip -cn"), false},
      {Entry("protocol", "ext", "allow", "always"), false},
      {Entry("protocol", "", "allow", "always"), false},
      {Entry("url", "ext::sh", "insteadof", "https://"), false},
      {Entry("core", "", "fsmonitor", "/tmp/x"), false},
      {Entry("core", "", "hookspath", ".h"), false},
      {Entry("core", "", "sshcommand", "x"), false},
      {Entry("core", "", "editor", "x"), false},
      {Entry("core", "", "pager", "x"), false},
      {Entry("credential", "", "helper", "x"), false},
      {Entry("diff", "x", "textconv", "x"), false},
      {Entry("merge", "x", "driver", "x"), false},
      {Entry("filter", "x", "smudge", "x"), false},
      {Entry("gpg", "", "program", "x"), false},
      {Entry("sequence", "", "editor", "x"), false},
      {Entry("uploadpack", "", "packobjectshook", "x"), false},
      {Entry("include", "", "path", "x"), false},
      {Entry("includeif", "gitdir:/", "path", "x"), false},
      {Entry("submodule", "lib", "update", "!sh"), false},
      {Entry("remote", "", "url", "https://x"), false},  // [remote] without a name: not git's
      {Entry("user", "x", "name", "me"), false},
  };
  for (const auto& c : cases) {
    const auto why = GitKeyNotInert(c.entry, false);
    EXPECT_EQ(!why.has_value(), c.inert)
        << c.entry.section << "." << c.entry.subsection << "." << c.entry.key << " = "
        << c.entry.value.value_or("(none)") << ": " << why.value_or("inert");
  }
}

TEST(GitInertKeys, CoreWorktreeOnlyWhereSubmoduleAddPutsIt) {
  const auto wt = Entry("core", "", "worktree", "../../../sub");
  EXPECT_FALSE(GitKeyNotInert(wt, true).has_value());
  EXPECT_TRUE(GitKeyNotInert(wt, false).has_value());

  // Judged against the repository: a submodule's git dir leading back to its own working tree
  // is left alone; one leading elsewhere, or a bare directory's, is not.
  GitRepo sub;
  sub.kind = GitMarkerKind::kGitFile;
  sub.marker = "/w/a/sub/.git";
  sub.top = "/w/a/sub";
  sub.gitdir = "/w/a/sub/../.git/modules/sub";
  GitConfigFile config;
  config.path = sub.gitdir + "/config";
  config.exists = true;
  config.entries = {Entry("core", "", "repositoryformatversion", "0"),
                    Entry("core", "", "worktree", "../../../sub")};
  sub.configs = {config};
  EXPECT_EQ(GitRepoRunsCode(sub), std::nullopt);
  sub.configs[0].entries[1].value = "../../../elsewhere";
  EXPECT_TRUE(GitRepoRunsCode(sub).has_value());
  GitRepo bare;
  bare.kind = GitMarkerKind::kBareDir;
  bare.marker = bare.gitdir = "/w/src";
  config.entries = {Entry("core", "", "worktree", ".")};
  bare.configs = {config};
  EXPECT_TRUE(GitRepoRunsCode(bare).has_value());
}

// The submodules' git dirs in a new repository's modules/, which `git submodule update` takes
// as they are: a hook or a key beyond the allowlist there is the repository's; core.worktree
// may name a directory of the superproject's working tree (the main one's, from a linked
// worktree), nothing outside it.
TEST(GitInertKeys, SubmoduleGitDirsAreJudgedWithTheirSuperproject) {
  GitRepo sup;
  sup.marker = "/w/sup/.git";
  sup.top = "/w/sup";
  sup.gitdir = sup.commondir = "/w/sup/.git";
  GitRepo::Module lib;
  lib.gitdir = "/w/sup/.git/modules/lib";
  GitConfigFile config;
  config.path = lib.gitdir + "/config";
  config.exists = true;
  config.entries = {Entry("core", "", "bare", "false"),
                    Entry("core", "", "worktree", "../../../lib"),
                    Entry("remote", "origin", "url", "/w/lib")};
  lib.configs = {config};
  sup.modules = {lib};
  EXPECT_EQ(GitRepoRunsCode(sup), std::nullopt);
  GitRepo wt = sup;  // a linked worktree of it
  wt.marker = "/w/wt/.git";
  wt.top = "/w/wt";
  wt.gitdir = "/w/sup/.git/worktrees/wt";
  EXPECT_EQ(GitRepoRunsCode(wt), std::nullopt);

  auto with = [&](auto change) {
    GitRepo r = sup;
    change(r.modules[0]);
    return GitRepoRunsCode(r);
  };
  EXPECT_TRUE(with([](GitRepo::Module& m) { m.hooks = {"post-checkout"}; }).has_value());
  EXPECT_TRUE(with([](GitRepo::Module& m) { m.hooks_unknown = true; }).has_value());
  EXPECT_TRUE(with([](GitRepo::Module& m) {
                m.configs[0].entries.push_back(Entry("core", "", "fsmonitor", "/x"));
              }).has_value());
  EXPECT_TRUE(with([](GitRepo::Module& m) {
                m.configs[0].entries[1].value = "../../../../elsewhere";
              }).has_value());
  GitRepo unread = sup;
  unread.modules_unread = "/w/sup/.git/modules/x: a symlink";
  EXPECT_TRUE(GitRepoRunsCode(unread).has_value());
}

}  // namespace
}  // namespace git_inert_keys_test
}  // namespace anvil
