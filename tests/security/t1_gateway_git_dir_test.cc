// T1 through the gateway's fs ops: a plugin must not make a directory that git takes for a git
// directory without a `.git` name — HEAD beside objects/ and refs/ (a bare repository), or HEAD
// beside commondir — nor write into one that is already there. git run in or beneath such a
// directory reads its config (core.hooksPath, core.fsmonitor, aliases) and runs its hooks: code
// on the host. Every route is tried (mkdir + write, completing a half layout the project already
// has, fs.write {parents}, fs.mkdir {recursive}, renaming a prepared tree or an entry into
// place), each beside its benign neighbour; /usr/bin/git run in the directory afterwards shows
// whether git takes it for a repository.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gateway_fixture.h"

namespace anvil::testing {
namespace t1_gateway_git_dir_test {
namespace {

constexpr char kGit[] = "/usr/bin/git";

class T1GatewayGitDir : public GatewayTest {
 protected:
  void SetUp() override {
    GatewayTest::SetUp();
    if (::access(kGit, X_OK) != 0) GTEST_SKIP() << kGit << " is not installed";
    Mkdirs("notes");
  }
  void Start(std::vector<std::string> write = {"**"}) {
    StartGateway();
    Grant grant;
    grant.fs_read = {"**"};
    grant.fs_write = std::move(write);
    client_ = Client(RegisterPlugin("t1.gitdir", grant), "t1.gitdir");
  }
  std::string Do(const std::string& op, const std::vector<std::string>& args) {
    auto r = client_->Call(op, args);
    if (!r) return "transport: " + r.error().ToString();
    return r->ok ? "ok" : r->ErrorText();
  }
  void Mkdirs(const std::string& rel) { ASSERT_EQ(Shell("mkdir -p '" + *ws_ / rel + "'"), 0); }
  // The git dir git uses when started in `rel` ("" when it finds none), never looking above the
  // workspace, with no user or system config.
  std::string GitDirOf(const std::string& rel) {
    const std::string cmd = "cd " + ShellQuote(*ws_ / rel) +
                            " && HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1 "
                            "GIT_CEILING_DIRECTORIES=" +
                            ShellQuote(Parent(*ws_ / "x")) + " " + kGit +
                            " rev-parse --absolute-git-dir 2>/dev/null";
    std::string out;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      char buf[512];
      while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
      ::pclose(p);
    }
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }
  static std::string Parent(const std::string& path) {
    const std::string dir = path.substr(0, path.rfind('/'));
    return dir.substr(0, dir.rfind('/'));
  }
  static bool StartsWith(const std::string& s, const std::string& prefix) {
    return s.rfind(prefix, 0) == 0;
  }
  static std::string WouldMake(const std::string& op, const std::string& dir) {
    return "denied: " + op + " would make " + dir + " a git directory (HEAD, objects/, refs/): " +
           "git run there would use its config and hooks, which is code run on the host; fix: ";
  }
  static std::string IsGitDir(const std::string& op, const std::string& dir) {
    return "denied: " + op + ": " + dir + " is a git directory (HEAD, objects/, refs/): ";
  }
  std::unique_ptr<ipc::GatewayClient> client_;
};

TEST_F(T1GatewayGitDir, TheProbeSeesALayoutBuiltOutsideThePlugin) {
  // The control: built by the test itself, the layout is a repository to git — so a probe that
  // finds none after a refused op means the op made none.
  Mkdirs("control/objects");
  Mkdirs("control/refs");
  WriteFile(*ws_ / "control/HEAD", "ref: refs/heads/main\n");
  Mkdirs("control/sub");
  EXPECT_EQ(GitDirOf("control"), *ws_ / "control");
  EXPECT_EQ(GitDirOf("control/sub"), *ws_ / "control");
  EXPECT_EQ(GitDirOf("notes"), "");
}

TEST_F(T1GatewayGitDir, MkdirAndWriteNeverAssembleHeadObjectsRefs) {
  Start();
  // Every order of the three pieces: the third is refused, whichever it is.
  EXPECT_EQ(Do("fs.mkdir", {"notes/a", "0"}), "ok");
  EXPECT_EQ(Do("fs.mkdir", {"notes/a/objects", "0"}), "ok");
  EXPECT_EQ(Do("fs.mkdir", {"notes/a/refs", "0"}), "ok");
  EXPECT_TRUE(StartsWith(Do("fs.write", {"notes/a/HEAD", "ref: refs/heads/main\n"}),
                         WouldMake("fs.write", "notes/a")));
  EXPECT_EQ(Do("fs.write", {"notes/b/HEAD", "ref: refs/heads/main\n", "1"}), "ok");
  EXPECT_EQ(Do("fs.mkdir", {"notes/b/refs/heads", "1"}), "ok");
  EXPECT_TRUE(
      StartsWith(Do("fs.mkdir", {"notes/b/objects", "0"}), WouldMake("fs.mkdir", "notes/b")));
  EXPECT_TRUE(
      StartsWith(Do("fs.mkdir", {"notes/b/objects/pack", "1"}), WouldMake("fs.mkdir", "notes/b")));
  EXPECT_TRUE(StartsWith(Do("fs.write", {"notes/b/objects/info/alternates", "x", "1"}),
                         WouldMake("fs.write", "notes/b")));
  // HEAD beside commondir is a git dir whose objects and refs are elsewhere.
  EXPECT_EQ(Do("fs.write", {"notes/c/HEAD", "ref: refs/heads/main\n", "1"}), "ok");
  EXPECT_TRUE(StartsWith(Do("fs.write", {"notes/c/commondir", "../../.git\n"}),
                         WouldMake("fs.write", "notes/c")));
  for (const char* dir : {"notes/a", "notes/b", "notes/c"}) {
    EXPECT_EQ(GitDirOf(dir), "") << dir;
  }
  EXPECT_FALSE(Exists(*ws_ / "notes/a/HEAD"));
  EXPECT_FALSE(Exists(*ws_ / "notes/b/objects"));
  EXPECT_FALSE(Exists(*ws_ / "notes/c/commondir"));
  // Benign: each piece alone, next to ordinary files, and config where no git dir is.
  EXPECT_EQ(Do("fs.write", {"notes/a/config", "[core]\n", "0"}), "ok");
  EXPECT_EQ(Do("fs.write", {"notes/a/README", "objects and refs of a model\n"}), "ok");
  EXPECT_EQ(Do("fs.mkdir", {"notes/d/objects", "1"}), "ok");
  EXPECT_EQ(Do("fs.write", {"notes/e/HEAD", "x", "1"}), "ok");
  EXPECT_EQ(GitDirOf("notes/a"), "");
}

TEST_F(T1GatewayGitDir, AHalfLayoutTheProjectHasIsNotCompleted) {
  // A project with docs/objects/ and docs/refs/ (say, an API reference): sys.fs.write without
  // any option completed it before this guard.
  Mkdirs("docs/objects");
  Mkdirs("docs/refs/api");
  Mkdirs("wt");
  WriteFile(*ws_ / "wt/HEAD", "ref: refs/heads/main\n");
  Start();
  EXPECT_TRUE(StartsWith(Do("fs.write", {"docs/HEAD", "ref: refs/heads/main\n"}),
                         WouldMake("fs.write", "docs")));
  EXPECT_TRUE(StartsWith(Do("fs.write", {"wt/commondir", "..\n"}), WouldMake("fs.write", "wt")));
  EXPECT_EQ(GitDirOf("docs"), "");
  EXPECT_EQ(GitDirOf("docs/refs/api"), "");
  EXPECT_EQ(GitDirOf("wt"), "");
  // Benign: the docs folder keeps working, and git on Linux is case-sensitive — "Head" is not
  // HEAD to it, so a file of that name is left alone (and git still finds no repository).
  EXPECT_EQ(Do("fs.write", {"docs/refs/api/index.md", "# API\n", "1"}), "ok");
  EXPECT_EQ(Do("fs.mkdir", {"docs/objects/shapes", "0"}), "ok");
  EXPECT_EQ(Do("fs.write", {"docs/Head", "not git's\n"}), "ok");
  EXPECT_EQ(Do("fs.write", {"docs/head.md", "# Head\n"}), "ok");
  EXPECT_EQ(Do("fs.rename", {"docs/objects/shapes", "docs/objects/forms"}), "ok");
  EXPECT_EQ(GitDirOf("docs"), "");
}

TEST_F(T1GatewayGitDir, NothingIsWrittenIntoAGitDirThatIsThere) {
  // A bare repository kept in the workspace (or one a command made): its config and hooks are
  // what git runs there.
  Mkdirs("vendor");
  ASSERT_EQ(Shell(std::string(kGit) + " init -q --bare " + ShellQuote(*ws_ / "vendor/mirror.git")),
            0);
  ASSERT_EQ(GitDirOf("vendor/mirror.git"), *ws_ / "vendor/mirror.git");
  const std::string config = ReadFile(*ws_ / "vendor/mirror.git/config");
  Start();
  const std::string g = IsGitDir("fs.write", "vendor/mirror.git");
  EXPECT_TRUE(
      StartsWith(Do("fs.write", {"vendor/mirror.git/config", "[core]\nhooksPath=/tmp\n"}), g));
  EXPECT_TRUE(
      StartsWith(Do("fs.write", {"vendor/mirror.git/hooks/pre-receive", "#!/bin/sh\n"}), g));
  EXPECT_TRUE(StartsWith(Do("fs.write", {"vendor/mirror.git/info/attributes", "*\n", "1"}), g));
  EXPECT_TRUE(StartsWith(Do("fs.mkdir", {"vendor/mirror.git/hooks2", "0"}),
                         IsGitDir("fs.mkdir", "vendor/mirror.git")));
  EXPECT_TRUE(StartsWith(Do("fs.remove", {"vendor/mirror.git/description", "0"}),
                         IsGitDir("fs.remove", "vendor/mirror.git")));
  EXPECT_TRUE(StartsWith(Do("fs.rename", {"vendor/mirror.git/HEAD", "vendor/HEAD.old"}),
                         IsGitDir("fs.rename", "vendor/mirror.git")));
  EXPECT_TRUE(StartsWith(Do("fs.rename", {"notes", "vendor/mirror.git/notes"}),
                         IsGitDir("fs.rename", "vendor/mirror.git")));
  EXPECT_TRUE(StartsWith(Do("fs.remove", {"vendor/mirror.git", "1"}),
                         "denied: fs.remove: vendor/mirror.git is a git directory (HEAD, objects/, "
                         "refs/)"));
  EXPECT_TRUE(StartsWith(Do("fs.remove", {"vendor", "1"}),
                         "denied: fs.remove: vendor holds a git directory vendor/mirror.git "));
  EXPECT_EQ(ReadFile(*ws_ / "vendor/mirror.git/config"), config);
  EXPECT_FALSE(Exists(*ws_ / "vendor/mirror.git/hooks/pre-receive"));
  EXPECT_TRUE(Exists(*ws_ / "vendor/mirror.git/description"));
  EXPECT_EQ(GitDirOf("vendor/mirror.git"), *ws_ / "vendor/mirror.git");
  // Benign: beside it.
  EXPECT_EQ(Do("fs.write", {"vendor/README", "mirror of upstream\n"}), "ok");
  EXPECT_EQ(Do("fs.mkdir", {"vendor/patches", "0"}), "ok");
  EXPECT_EQ(Do("fs.remove", {"vendor/patches", "0"}), "ok");
}

TEST_F(T1GatewayGitDir, RenameNeitherCarriesNorCompletesAGitDir) {
  // A prepared tree (left by a command, unpacked from an archive): moving it anywhere is refused,
  // at any depth.
  Mkdirs("notes/prep/objects");
  Mkdirs("notes/prep/refs");
  Mkdirs("notes/prep/hooks");
  WriteFile(*ws_ / "notes/prep/HEAD", "ref: refs/heads/main\n");
  WriteFile(*ws_ / "notes/prep/hooks/post-checkout", "#!/bin/sh\n");
  Mkdirs("notes/outer/deep");
  ASSERT_EQ(Shell("cp -a '" + *ws_ / "notes/prep" + "' '" + *ws_ / "notes/outer/deep/x" + "'"), 0);
  // Half layouts a rename could complete.
  Mkdirs("t1/objects");
  Mkdirs("t1/refs");
  Mkdirs("t2/refs");
  WriteFile(*ws_ / "t2/HEAD", "ref: refs/heads/main\n");
  Mkdirs("t3/refs");
  WriteFile(*ws_ / "t3/HEAD", "ref: refs/heads/main\n");
  WriteFile(*ws_ / "notes/head.txt", "ref: refs/heads/main\n");
  Mkdirs("notes/o");
  WriteFile(*ws_ / "notes/build.sh", "#!/bin/sh\n");
  ASSERT_EQ(::chmod((*ws_ / "notes/build.sh").c_str(), 0755), 0);
  WriteFile(*ws_ / "notes/plain.txt", "x\n");
  ASSERT_EQ(::chmod((*ws_ / "notes/plain.txt").c_str(), 0644), 0);
  Start();
  EXPECT_TRUE(
      StartsWith(Do("fs.rename", {"notes/prep", "src"}),
                 "denied: fs.rename: notes/prep is a git directory (HEAD, objects/, refs/)"));
  EXPECT_TRUE(StartsWith(Do("fs.rename", {"notes/outer", "lib"}),
                         "denied: fs.rename: notes/outer holds a git directory "
                         "notes/outer/deep/x (HEAD, objects/, refs/)"));
  EXPECT_TRUE(
      StartsWith(Do("fs.rename", {"notes/head.txt", "t1/HEAD"}), WouldMake("fs.rename", "t1")));
  EXPECT_TRUE(StartsWith(Do("fs.rename", {"notes/o", "t2/objects"}), WouldMake("fs.rename", "t2")));
  // An executable file passes git's access(X_OK) as objects.
  EXPECT_TRUE(
      StartsWith(Do("fs.rename", {"notes/build.sh", "t3/objects"}), WouldMake("fs.rename", "t3")));
  EXPECT_FALSE(Exists(*ws_ / "src"));
  EXPECT_FALSE(Exists(*ws_ / "lib"));
  for (const char* dir : {"t1", "t2", "t3"}) EXPECT_EQ(GitDirOf(dir), "") << dir;
  // Benign: a plain file named objects is not one git accepts (no execute bit) — moved, and git
  // still finds no repository; ordinary moves next to the half layouts.
  EXPECT_EQ(Do("fs.rename", {"notes/plain.txt", "t3/objects"}), "ok");
  EXPECT_EQ(GitDirOf("t3"), "");
  EXPECT_EQ(Do("fs.rename", {"notes/head.txt", "t1/head.txt"}), "ok");
  EXPECT_EQ(Do("fs.rename", {"notes/o", "t2/other"}), "ok");
  EXPECT_EQ(GitDirOf("t2"), "");
}

}  // namespace
}  // namespace t1_gateway_git_dir_test
}  // namespace anvil::testing
