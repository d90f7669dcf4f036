// T1 through the gateway's fs.mkdir, fs.remove, fs.rename and fs.write {parents}: what
// sys.fs.mkdir, sys.fs.remove, sys.fs.rename and sys.fs.write(path, data, {parents = true})
// become. A plugin that may write part of the workspace must not reach a protected name (.git —
// a directory, a nested repository's, a gitdir `.git` file —, .anvil, anvil.lock, Anvil.toml)
// by making, moving or removing a directory, must not leave the workspace or its grant through
// a symlinked directory, and must not make directories its grant does not cover. Each attack
// sits next to its benign neighbour, which works.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gateway_fixture.h"

namespace anvil::testing {
namespace t1_gateway_fs_mutations_test {
namespace {

class T1GatewayFsMutations : public GatewayTest {
 protected:
  void SetUp() override {
    GatewayTest::SetUp();
    outside_ = std::make_unique<TempDir>();
    Mkdirs("notes");
    Mkdirs("src");
    Mkdirs(".git/hooks");
    WriteFile(*ws_ / "Anvil.toml", "");
    WriteFile(*outside_ / "secret.txt", "keep");
  }
  // A plugin that may write notes/** and moved/** (or `write`).
  void Start(std::vector<std::string> write = {"notes/**", "moved/**"}) {
    StartGateway();
    Grant grant;
    grant.fs_read = {"**"};
    grant.fs_write = std::move(write);
    client_ = Client(RegisterPlugin("t1.fs", grant), "t1.fs");
  }
  // "ok" or the error as the plugin sees it.
  std::string Do(const std::string& op, const std::vector<std::string>& args) {
    auto r = client_->Call(op, args);
    if (!r) return "transport: " + r.error().ToString();
    return r->ok ? "ok" : r->ErrorText();
  }
  void Mkdirs(const std::string& rel) { ASSERT_EQ(Shell("mkdir -p '" + *ws_ / rel + "'"), 0); }
  void Link(const std::string& target, const std::string& rel) {
    ASSERT_EQ(Shell("ln -s '" + target + "' '" + *ws_ / rel + "'"), 0);
  }
  bool IsDir(const std::string& rel) {
    struct stat st {};
    return lstat((*ws_ / rel).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }
  static bool StartsWith(const std::string& s, const std::string& prefix) {
    return s.rfind(prefix, 0) == 0;
  }
  std::unique_ptr<TempDir> outside_;
  std::unique_ptr<ipc::GatewayClient> client_;
};

TEST_F(T1GatewayFsMutations, NoDirectoryIsMadeOfOrIntoAProtectedName) {
  Mkdirs("notes/vendor/.git/hooks");
  Start();
  for (const auto& [path, recursive] : std::vector<std::pair<std::string, std::string>>{
           {".git/hooks/x", "0"},
           {".git/hooks/x", "1"},
           {"notes/.git", "0"},
           {"notes/sub/.git", "1"},
           {"notes/sub/.git/hooks", "1"},
           {"notes/.GIT", "0"},
           {"notes/.git.", "0"},
           {"notes/.anvil", "0"},
           {"notes/anvil.lock", "0"},
           {"notes/Anvil.toml", "1"},
           {"notes/vendor/.git/hooks/x", "0"},
       }) {
    const std::string out = Do("fs.mkdir", {path, recursive});
    EXPECT_TRUE(StartsWith(out, "denied: fs.write outside the grant: " + path))
        << path << ": " << out;
  }
  EXPECT_FALSE(Exists(*ws_ / ".git/hooks/x"));
  EXPECT_FALSE(Exists(*ws_ / "notes/sub"));
  EXPECT_FALSE(Exists(*ws_ / "notes/vendor/.git/hooks/x"));
  // The message says why a wildcard did not cover it.
  EXPECT_NE(Do("fs.mkdir", {"notes/.git", "0"}).find("(a protected path"), std::string::npos);

  // Benign: names that merely resemble protected ones, nested directories, an existing one.
  EXPECT_EQ(Do("fs.mkdir", {"notes/.github", "0"}), "ok");
  EXPECT_EQ(Do("fs.mkdir", {"notes/git", "0"}), "ok");
  EXPECT_EQ(Do("fs.mkdir", {"notes/a/b/c", "1"}), "ok");
  EXPECT_TRUE(IsDir("notes/a/b/c"));
  EXPECT_EQ(Do("fs.mkdir", {"notes/a/b/c", "1"}), "ok");  // exists: fine with recursive
  EXPECT_EQ(Do("fs.mkdir", {"notes/a", "0"}),
            "invalid: already exists: notes/a (pass recursive to accept an existing directory)");
  EXPECT_EQ(Do("fs.mkdir", {"notes/x/y", "0"}),
            "not_found: notes/x/y (a parent directory is missing; fix: pass recursive to "
            "create it too)");
  EXPECT_EQ(Do("fs.mkdir", {"notes/plain"}), "ok");  // the flag may be left out
}

TEST_F(T1GatewayFsMutations, AGitdirFileIsProtectedLikeAGitDirectory) {
  // A linked worktree or submodule: `.git` is a file naming the git directory elsewhere.
  Mkdirs("notes/wt");
  WriteFile(*ws_ / "notes/wt/.git", "gitdir: ../../.git/worktrees/wt\n");
  WriteFile(*ws_ / "notes/wt/readme", "x");
  Mkdirs("notes/evil/hooks");
  Start();
  EXPECT_TRUE(StartsWith(Do("fs.write", {"notes/wt/.git", "gitdir: ../evil\n"}), "denied: "));
  EXPECT_TRUE(StartsWith(Do("fs.remove", {"notes/wt/.git"}), "denied: "));
  EXPECT_TRUE(StartsWith(Do("fs.rename", {"notes/wt/.git", "notes/wt/old"}), "denied: "));
  EXPECT_TRUE(StartsWith(Do("fs.rename", {"notes/evil", "notes/wt/.git"}), "denied: "));
  EXPECT_TRUE(StartsWith(Do("fs.rename", {"notes/wt", "moved"}),
                         "denied: fs.write: directory holds protected .git: notes/wt"));
  EXPECT_TRUE(StartsWith(Do("fs.remove", {"notes/wt", "1"}),
                         "denied: fs.write: directory holds protected .git: notes/wt"));
  EXPECT_EQ(ReadFile(*ws_ / "notes/wt/.git"), "gitdir: ../../.git/worktrees/wt\n");
  EXPECT_TRUE(Exists(*ws_ / "notes/wt/readme"));
  // Benign: the worktree's own files.
  EXPECT_EQ(Do("fs.rename", {"notes/wt/readme", "notes/wt/README"}), "ok");
  EXPECT_EQ(Do("fs.remove", {"notes/wt/README"}), "ok");
  EXPECT_EQ(Do("fs.write", {"notes/wt/src/main.c", "int x;\n", "1"}), "ok");
}

TEST_F(T1GatewayFsMutations, RecursiveRemoveOfATreeHoldingAProtectedNameRemovesNothing) {
  Mkdirs("notes/vendor/lib/deep/.git/hooks");
  WriteFile(*ws_ / "notes/vendor/lib/deep/.git/hooks/pre-commit", "#!/bin/sh\n");
  WriteFile(*ws_ / "notes/vendor/a.txt", "x");
  Mkdirs("notes/cfg/x");
  WriteFile(*ws_ / "notes/cfg/x/ANVIL.TOML", "");
  Start({"**"});  // even a grant of everything
  std::string out = Do("fs.remove", {"notes/vendor", "1"});
  EXPECT_EQ(out, "denied: fs.write: directory holds protected lib/deep/.git: notes/vendor");
  EXPECT_TRUE(Exists(*ws_ / "notes/vendor/a.txt")) << "nothing is removed before the refusal";
  EXPECT_TRUE(Exists(*ws_ / "notes/vendor/lib/deep/.git/hooks/pre-commit"));
  EXPECT_TRUE(StartsWith(Do("fs.remove", {"notes/cfg", "1"}), "denied: fs.write: directory holds"));
  // The protected names themselves, under a grant of everything.
  for (const char* path : {".git", ".git/hooks", "Anvil.toml", "notes/vendor/lib/deep/.git"}) {
    EXPECT_TRUE(StartsWith(Do("fs.remove", {path, "1"}), "denied: fs.write outside the grant: "))
        << path;
  }
  EXPECT_TRUE(IsDir(".git/hooks"));
  EXPECT_TRUE(Exists(*ws_ / "Anvil.toml"));
  // The refusals are audited with their reason.
  bool audited = false;
  for (const auto& l : AuditLines()) {
    audited |= l["op"] == "fs.remove" && l["verdict"] == "deny" && l["target"] == "notes/vendor" &&
               l["reason"].get<std::string>().find("lib/deep/.git") != std::string::npos;
  }
  EXPECT_TRUE(audited);

  // Benign: a tree of files, directories and a symlink to a directory outside goes; what the
  // symlink points to stays.
  Mkdirs("notes/build/obj/deep");
  WriteFile(*ws_ / "notes/build/obj/deep/a.o", "x");
  WriteFile(*ws_ / "notes/build/.gitignore", "*\n");
  Link(outside_->path(), "notes/build/out");
  EXPECT_EQ(Do("fs.remove", {"notes/build"}),
            "invalid: directory not empty: notes/build (pass recursive to remove it with "
            "everything in it)");
  EXPECT_EQ(Do("fs.remove", {"notes/build", "1"}), "ok");
  EXPECT_FALSE(Exists(*ws_ / "notes/build"));
  EXPECT_EQ(ReadFile(*outside_ / "secret.txt"), "keep");
}

TEST_F(T1GatewayFsMutations, ASymlinkedDirectoryIsNeverFollowedByAMutation) {
  Link(outside_->path(), "notes/out");  // leads outside the workspace
  Link("../src", "notes/in");           // leads inside, to a directory not granted
  WriteFile(*ws_ / "src/a.c", "int a;\n");
  Start();
  const std::vector<std::pair<std::string, std::vector<std::string>>> attacks = {
      {"fs.mkdir", {"notes/out/x", "0"}},
      {"fs.mkdir", {"notes/out/x/y", "1"}},
      {"fs.mkdir", {"notes/in/x", "1"}},
      {"fs.write", {"notes/out/new/f.txt", "x", "1"}},
      {"fs.write", {"notes/out/f.txt", "x", "0"}},
      {"fs.write", {"notes/in/b.c", "x", "1"}},
      {"fs.remove", {"notes/out/secret.txt", "0"}},
      {"fs.remove", {"notes/in/a.c", "1"}},
      {"fs.rename", {"notes/out/secret.txt", "notes/stolen.txt"}},
      {"fs.rename", {"notes/in/a.c", "notes/a.c"}},
  };
  for (const auto& [op, args] : attacks) {
    const std::string out = Do(op, args);
    EXPECT_TRUE(StartsWith(out, "denied: path goes through a symlink"))
        << op << " " << args[0] << ": " << out;
  }
  EXPECT_FALSE(Exists(*outside_ / "x"));
  EXPECT_FALSE(Exists(*outside_ / "new"));
  EXPECT_FALSE(Exists(*outside_ / "f.txt"));
  EXPECT_EQ(ReadFile(*outside_ / "secret.txt"), "keep");
  EXPECT_EQ(ReadFile(*ws_ / "src/a.c"), "int a;\n");
  EXPECT_FALSE(Exists(*ws_ / "src/x"));
  // A symlink as the last component is the link itself: renamed or removed as such.
  EXPECT_EQ(Do("fs.rename", {"notes/out", "notes/out2"}), "ok");
  EXPECT_EQ(Do("fs.remove", {"notes/out2", "1"}), "ok");
  EXPECT_EQ(ReadFile(*outside_ / "secret.txt"), "keep");
  // mkdir over a symlink to a directory: it exists, and is not a directory of ours.
  EXPECT_TRUE(StartsWith(Do("fs.mkdir", {"notes/in", "1"}), "denied: path goes through a symlink"));
  // Benign: the same calls on real directories.
  EXPECT_EQ(Do("fs.write", {"notes/real/new/f.txt", "x", "1"}), "ok");
  EXPECT_EQ(ReadFile(*ws_ / "notes/real/new/f.txt"), "x");
}

TEST_F(T1GatewayFsMutations, RenameNeverLandsOnOrCarriesAProtectedName) {
  Mkdirs("notes/prepared/.git/hooks");
  WriteFile(*ws_ / "notes/prepared/.git/hooks/post-checkout", "#!/bin/sh\n");
  Mkdirs("notes/hooks");
  WriteFile(*ws_ / "notes/hooks/pre-commit", "#!/bin/sh\n");
  WriteFile(*ws_ / "notes/cfg.toml", "");
  Start({"**"});
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"notes/hooks", ".git/hooks2"},
           {"notes/hooks/pre-commit", ".git/hooks/pre-commit"},
           {"notes/hooks", "notes/sub/.git"},
           {"notes/cfg.toml", "Anvil.toml"},
           {"notes/cfg.toml", "notes/anvil.lock"},
           {"notes/hooks", ".anvil"},
           {".git/hooks", "notes/hooks2"},
           {"Anvil.toml", "notes/Anvil.toml.bak"},
       }) {
    EXPECT_TRUE(StartsWith(Do("fs.rename", {from, to}), "denied: fs.write outside the grant: "))
        << from << " -> " << to;
  }
  // A prepared repository moved into place: refused for what it holds.
  EXPECT_EQ(Do("fs.rename", {"notes/prepared", "src/lib"}),
            "denied: fs.write: directory holds protected .git: notes/prepared");
  EXPECT_FALSE(Exists(*ws_ / ".git/hooks/pre-commit"));
  EXPECT_FALSE(Exists(*ws_ / "src/lib"));
  // Benign, and an existing destination is never replaced.
  EXPECT_EQ(Do("fs.rename", {"notes/hooks", "notes/scripts"}), "ok");
  WriteFile(*ws_ / "notes/other.toml", "");
  EXPECT_EQ(Do("fs.rename", {"notes/cfg.toml", "notes/other.toml"}),
            "invalid: destination exists: notes/cfg.toml -> notes/other.toml (sys.fs.rename "
            "never replaces; fix: remove the destination first)");
}

TEST_F(T1GatewayFsMutations, OnlyWhatTheGrantCoversIsMadeMovedOrRemoved) {
  WriteFile(*ws_ / "src/a.c", "int a;\n");
  WriteFile(*ws_ / "notes/n.md", "x");
  Start({"notes/**", "docs/*.md"});
  EXPECT_EQ(Do("fs.mkdir", {"src/new", "0"}), "denied: fs.write outside the grant: src/new");
  EXPECT_EQ(Do("fs.remove", {"src/a.c", "0"}), "denied: fs.write outside the grant: src/a.c");
  EXPECT_EQ(Do("fs.rename", {"notes/n.md", "src/n.md"}),
            "denied: fs.write outside the grant: src/n.md");
  EXPECT_EQ(Do("fs.rename", {"src/a.c", "notes/a.c"}),
            "denied: fs.write outside the grant: src/a.c");
  EXPECT_TRUE(StartsWith(Do("fs.mkdir", {"/tmp/x", "1"}), "invalid: "));
  EXPECT_TRUE(StartsWith(Do("fs.write", {"notes/../src/b.c", "x", "1"}), "invalid: "));
  // parents: each directory made is a write of its own. "docs/*.md" covers docs/a.md, not the
  // directory docs.
  EXPECT_EQ(Do("fs.write", {"docs/a.md", "x", "1"}),
            "denied: fs.write outside the grant: docs (a directory sys.fs.write {parents} would "
            "create; fix: add it to fs.write in the manifest, or create the directories first)");
  EXPECT_FALSE(Exists(*ws_ / "docs"));
  EXPECT_EQ(Do("fs.write", {"docs/a.md", "x", "0"}),
            "not_found: docs/a.md (a parent directory is missing; fix: create it first, or pass "
            "parents)");
  EXPECT_TRUE(StartsWith(Do("fs.write", {"notes/n.md/x.txt", "x", "1"}),
                         "invalid: already exists and is not a directory: notes/n.md"));
  EXPECT_TRUE(StartsWith(Do("fs.write", {"notes/a.txt", "x", "yes"}),
                         "invalid: fs.write parents must be 1 or 0"));
  // Benign: within the grant.
  Mkdirs("docs");
  EXPECT_EQ(Do("fs.write", {"docs/a.md", "x", "1"}), "ok");
  EXPECT_EQ(Do("fs.write", {"notes/deep/er/b.md", "y", "1"}), "ok");
  EXPECT_EQ(ReadFile(*ws_ / "notes/deep/er/b.md"), "y");
  EXPECT_EQ(Do("fs.rename", {"notes/deep", "notes/shallow"}), "ok");
  EXPECT_EQ(Do("fs.remove", {"notes/shallow", "1"}), "ok");
  EXPECT_FALSE(Exists(*ws_ / "notes/shallow"));
  // Each decision is one audit line naming its target.
  bool mkdir_denied = false, rename_allowed = false;
  for (const auto& l : AuditLines()) {
    mkdir_denied |= l["op"] == "fs.mkdir" && l["verdict"] == "deny" && l["target"] == "src/new";
    rename_allowed |= l["op"] == "fs.rename" && l["verdict"] == "allow" &&
                      l["target"] == "notes/deep -> notes/shallow";
  }
  EXPECT_TRUE(mkdir_denied);
  EXPECT_TRUE(rename_allowed);
}

// Removing or moving a directory takes everything beneath it along: each entry there must be one
// the plugin could write (remove, move) by itself, where it is and where it would land.
TEST_F(T1GatewayFsMutations, ADirectoryIsRemovedOrMovedOnlyWhenTheGrantCoversAllOfIt) {
  Mkdirs("docs/api/deep");
  WriteFile(*ws_ / "docs/api/keep.md", "keep");
  WriteFile(*ws_ / "docs/api/deep/a.md", "a");
  Start({"docs/*", "notes/**"});
  EXPECT_EQ(Do("fs.remove", {"docs/api/keep.md", "0"}),
            "denied: fs.write outside the grant: docs/api/keep.md");
  const std::string removed = Do("fs.remove", {"docs/api", "1"});
  EXPECT_TRUE(StartsWith(removed, "denied: fs.write outside the grant: "));
  EXPECT_NE(removed.find("beneath docs/api, which fs.remove would remove with it"),
            std::string::npos)
      << removed;
  const std::string moved = Do("fs.rename", {"docs/api", "docs/moved"});
  EXPECT_TRUE(StartsWith(moved, "denied: fs.write outside the grant: ")) << moved;
  // Into a place the grant covers is not enough: the entries must be movable where they are.
  EXPECT_TRUE(StartsWith(Do("fs.rename", {"docs/api", "notes/api"}),
                         "denied: fs.write outside the grant: "));
  EXPECT_EQ(ReadFile(*ws_ / "docs/api/keep.md"), "keep");
  EXPECT_EQ(ReadFile(*ws_ / "docs/api/deep/a.md"), "a");
  EXPECT_FALSE(Exists(*ws_ / "docs/moved"));
  EXPECT_FALSE(Exists(*ws_ / "notes/api"));
  // From a covered place to one that does not cover what is inside: refused too.
  Mkdirs("notes/tree/sub");
  WriteFile(*ws_ / "notes/tree/sub/x.md", "x");
  EXPECT_TRUE(StartsWith(Do("fs.rename", {"notes/tree", "docs/tree"}),
                         "denied: fs.write outside the grant: "));
  EXPECT_TRUE(Exists(*ws_ / "notes/tree/sub/x.md"));
  // Benign: an empty directory the grant names, and a tree the grant covers entirely.
  Mkdirs("docs/empty");
  EXPECT_EQ(Do("fs.remove", {"docs/empty", "1"}), "ok");
  EXPECT_EQ(Do("fs.rename", {"notes/tree", "notes/moved"}), "ok");
  EXPECT_EQ(Do("fs.remove", {"notes/moved", "1"}), "ok");
  EXPECT_FALSE(Exists(*ws_ / "notes/moved"));
}

// A mount point inside the workspace (a bind mount of another directory) is not the workspace's:
// a recursive remove or a rename that would reach into it is refused before anything is removed.
TEST_F(T1GatewayFsMutations, ARecursiveRemoveNeverReachesIntoAMount) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a bind mount";
  Mkdirs("notes/m");
  Mkdirs("notes/holder/m2");
  ASSERT_EQ(Shell("mkdir -p '" + *outside_ / "sub" + "' && echo keep > '" +
                  *outside_ / "sub/f.txt" + "'"),
            0);
  ASSERT_EQ(Shell("mount --bind '" + outside_->path() + "' '" + *ws_ / "notes/m" + "'"), 0);
  ASSERT_EQ(Shell("mount --bind '" + outside_->path() + "' '" + *ws_ / "notes/holder/m2" + "'"), 0);
  Start();
  const std::string top = Do("fs.remove", {"notes/m", "1"});
  const std::string nested = Do("fs.remove", {"notes/holder", "1"});
  const std::string moved = Do("fs.rename", {"notes/holder", "notes/elsewhere"});
  EXPECT_EQ(Shell("umount '" + *ws_ / "notes/holder/m2" + "'"), 0);
  EXPECT_EQ(Shell("umount '" + *ws_ / "notes/m" + "'"), 0);
  EXPECT_TRUE(StartsWith(top, "denied: is a mount point: notes/m")) << top;
  EXPECT_TRUE(StartsWith(nested, "denied: is a mount point: notes/holder/m2")) << nested;
  EXPECT_TRUE(StartsWith(moved, "denied: is a mount point: notes/holder/m2")) << moved;
  EXPECT_EQ(ReadFile(*outside_ / "sub/f.txt"), "keep\n");
  EXPECT_TRUE(IsDir("notes/holder/m2"));
  // Benign: once nothing is mounted there, the same tree goes.
  EXPECT_EQ(Do("fs.remove", {"notes/holder", "1"}), "ok");
  EXPECT_FALSE(Exists(*ws_ / "notes/holder"));
}

}  // namespace
}  // namespace t1_gateway_fs_mutations_test
}  // namespace anvil::testing
