// T1/T8 for the command sandbox: a directory git takes for a git dir (HEAD beside objects/ and
// refs/, or HEAD beside commondir: fs/git_dir_guard.h) hides nothing below it from the check
// after the run. The walk used to record such a directory as a bare repository and go no
// further, so whatever the command put below it escaped both judgements: Anvil's protected
// names (an Anvil.toml or anvil.lock the user's next `anvil run` there reads) and the
// repositories git finds when started below it (a `.git` with a hook, another git dir). Each
// attack sits beside its benign neighbour: a real bare repository and a `git clone --bare`
// made during the run are judged as before, and left alone. Root and unprivileged callers.
#include <sys/stat.h>

#include <set>
#include <string>
#include <vector>

#include "git_sandbox_fixture.h"

namespace anvil::testing {
namespace t1_sandbox_git_dir_subtree_test {
namespace {

class T1SandboxGitDirSubtree : public GitSandboxTest {
 protected:
  // Shell for the sandbox: `dir` made into a git dir by HEAD, objects/ and refs/.
  static std::string BareShape(const std::string& dir) {
    return "mkdir -p " + dir + "/objects " + dir + "/refs && printf 'ref: refs/heads/main\\n' > " +
           dir + "/HEAD";
  }
  // Whether `path` was moved aside as a protected name: gone, NAME.anvil-quarantine there, the
  // line on stderr and the entry in --json's protected_names_quarantined.
  void ExpectMovedAside(const RunResult& r, const std::string& path) {
    SCOPED_TRACE(path);
    struct stat st {};
    EXPECT_NE(lstat(path.c_str(), &st), 0) << "still there after the run\n" << r.err;
    const std::string to = path + ".anvil-quarantine";
    EXPECT_EQ(lstat(to.c_str(), &st), 0) << to;
    EXPECT_NE(r.err.find("anvil sandbox: moved " + path + " aside to " + to +
                         ": it did not exist when the sandboxed command started"),
              std::string::npos)
        << r.err;
    auto report = JsonReport(r);
    ASSERT_FALSE(report.is_discarded()) << r.out;
    ASSERT_TRUE(report.contains("protected_names_quarantined")) << r.out;
    bool listed = false;
    for (const auto& e : report["protected_names_quarantined"]) {
      if (e.value("path", "") != path) continue;
      listed = true;
      EXPECT_EQ(e.value("moved_to", ""), to);
      EXPECT_EQ(e.value("reason", ""), "it did not exist when the sandboxed command started");
      EXPECT_EQ(e.value("restore", ""), "mv -n " + to + " " + path);
      EXPECT_FALSE(e.contains("failure"));
    }
    EXPECT_TRUE(listed) << r.out;
  }
  std::set<std::string> QuarantinedPaths(const RunResult& r) {
    std::set<std::string> out;
    for (const auto& q : Quarantined(r)) out.insert(q.value("path", ""));
    return out;
  }
};

// Anvil's protected names made inside a directory the command shaped like a git dir (either
// shape), directly or deeper below it, are moved aside like anywhere else.
TEST_P(T1SandboxGitDirSubtree, ProtectedNamesBelowAGitDirShapeAreMovedAside) {
  auto r =
      Sh(BareShape("sub") +
         " && echo '[plugins]' > sub/Anvil.toml && mkdir sub/.anvil && echo x > "
         "sub/.anvil/rules.toml && mkdir wt && printf 'ref: refs/heads/main\\n' > wt/HEAD && "
         "echo ../.git > wt/commondir && : > wt/anvil.lock && " +
         BareShape("deep") + " && mkdir -p deep/a/b && echo '[plugins]' > deep/a/b/Anvil.toml" +
         " && echo kept > sub/notes.txt && echo MADE");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("MADE"), std::string::npos) << r.out << r.err;
  for (const char* p :
       {"/sub/Anvil.toml", "/sub/.anvil", "/wt/anvil.lock", "/deep/a/b/Anvil.toml"}) {
    ExpectMovedAside(r, ws_ + p);
  }
  EXPECT_EQ(ReadFile(ws_ + "/sub/.anvil.anvil-quarantine/rules.toml"), "x\n");
  // The shapes themselves run nothing: judged, and left where they are.
  EXPECT_TRUE(Quarantined(r).empty()) << r.err;
  EXPECT_TRUE(Exists(ws_ + "/sub/HEAD"));
  EXPECT_EQ(ReadFile(ws_ + "/sub/notes.txt"), "kept\n");
}

// End to end: the user's next `anvil run` in the directory the command shaped like a git dir
// hands the plugin none of the command's settings (before the fix it read them).
TEST_P(T1SandboxGitDirSubtree, TheNextRunThereReadsNoneOfThePlantedSettings) {
  const std::string sub = ws_ + "/sub";
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(sub + "/cfg")), 0);
  Write(sub + "/cfg/anvil-plugin.toml",
        "id = \"test.cfg\"\nversion = \"1.0.0\"\nruntime = \"lua\"\nentry = \"main.lua\"\n");
  Write(sub + "/cfg/main.lua",
        "anvil.command('go', function() return anvil.settings.who or 'none' end)\n");
  caller_.Give(ws_);
  auto anvil = [&](std::vector<std::string> args) {
    args.insert(args.begin(), AnvilBin());
    RunOptions o = Env();
    o.cwd = sub;
    return ::anvil::testing::Run(args, o);
  };
  auto approved = anvil({"run", "--approve", "--workspace", sub, "cfg", "go"});
  ASSERT_EQ(approved.status, 0) << approved.err;
  ASSERT_EQ(approved.out, "none\n");
  auto r = Sh(BareShape("sub") +
              " && printf '[plugins.settings.\"test.cfg\"]\\nwho = \"agent\"\\n' > sub/Anvil.toml");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  ExpectMovedAside(r, sub + "/Anvil.toml");
  auto next = anvil({"run", "--workspace", sub, "cfg", "go"});
  EXPECT_EQ(next.status, 0) << next.err;
  EXPECT_EQ(next.out, "none\n") << "the user's next run read the command's settings";
}

// The top of a workspace without a .git of its own made into a git dir: the .anvil and
// anvil.lock made beside its HEAD (and an Anvil.toml deeper) are moved aside too.
TEST_P(T1SandboxGitDirSubtree, ProtectedNamesInATopMadeIntoAGitDirAreMovedAside) {
  const std::string plain = outside_ / "plain";
  ASSERT_EQ(mkdir(plain.c_str(), 0755), 0);
  caller_.Give(plain);
  auto r = SandboxSh(plain,
                     "printf 'ref: refs/heads/main\\n' > HEAD && mkdir objects refs .anvil && "
                     ": > anvil.lock && mkdir sub && echo '[plugins]' > sub/Anvil.toml",
                     {"--json"}, Env());
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  for (const char* p : {"/.anvil", "/anvil.lock", "/sub/Anvil.toml"})
    ExpectMovedAside(r, plain + p);
}

// git started below a directory shaped like a git dir finds the `.git` (or the git dir) nearest
// to where it starts: one the command made there with a hook, or a git dir with an fsmonitor,
// is judged and moved aside, and so is one inside a git dir that runs code itself (the inner
// one first: both are moved, neither is a failure), with an Anvil.toml it holds.
TEST_P(T1SandboxGitDirSubtree, RepositoriesBelowAGitDirShapeAreQuarantined) {
  const std::string fsm = marker_ + "-fsm.sh";
  Write(fsm, HookText(), 0755);
  auto r = Sh(BareShape("sub") + " && git init -q sub/a && " +
              Plant("sub/a/.git/hooks/pre-commit") + " && " + BareShape("sub/b") +
              " && printf '[core]\\n\\tfsmonitor = " + fsm + "\\n' > sub/b/config && " +
              BareShape("hk") + " && mkdir hk/hooks && " + Plant("hk/hooks/post-checkout") +
              " && git init -q hk/in && " + Plant("hk/in/.git/hooks/pre-commit") +
              " && echo '[plugins]' > hk/Anvil.toml && echo MADE");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("MADE"), std::string::npos) << r.out << r.err;
  const std::set<std::string> moved = QuarantinedPaths(r);
  for (const std::string& p :
       {ws_ + "/sub/a/.git", ws_ + "/sub/b", ws_ + "/hk", ws_ + "/hk/in/.git"}) {
    EXPECT_EQ(moved.count(p), 1u) << p << "\n" << r.err;
  }
  EXPECT_EQ(moved.count(ws_ + "/sub"), 0u) << r.err;  // the shape alone runs nothing
  EXPECT_EQ(r.err.find("could not be moved"), std::string::npos) << r.err;
  EXPECT_FALSE(Exists(ws_ + "/sub/a/.git"));
  EXPECT_FALSE(Exists(ws_ + "/sub/b/HEAD"));
  EXPECT_TRUE(Exists(ws_ + "/hk.anvil-quarantine/in/.git.anvil-quarantine"));
  // An Anvil.toml in the repository moved aside: moved aside where it lies then.
  ExpectMovedAside(r, ws_ + "/hk.anvil-quarantine/Anvil.toml");
  caller_.Give(ws_);
  UseGitOnTheHost(ws_ + "/sub/a");
  UseGitOnTheHost(ws_ + "/sub/b");
  UseGitOnTheHost(ws_ + "/hk.anvil-quarantine/in");
  Git(ws_ + "/sub/a", {"commit", "--allow-empty", "-q", "-m", "x"});
  EXPECT_FALSE(Exists(marker_)) << "git on the host ran what the command planted below a git dir";
}

// Another spelling of `.git` (`.GIT`) is an ordinary directory on a file system that does not
// fold case: git started in `.GIT/w` uses `.GIT/w/.git`, Anvil started in `.GIT` reads its
// Anvil.toml. The walk recorded it as a repository and went no further (red team s4
// rtreview), so a hook and an Anvil.toml planted below it stayed. Benign neighbour: the user's
// own `.git` and an ordinary run beside it.
TEST_P(T1SandboxGitDirSubtree, NothingBelowAnotherSpellingOfDotGitIsHidden) {
  auto r = Sh("mkdir .GIT && git init -q .GIT/w && " + Plant(".GIT/w/.git/hooks/pre-commit") +
              " && echo '[plugins]' > .GIT/Anvil.toml && echo kept > .GIT/notes.txt && echo MADE");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("MADE"), std::string::npos) << r.out << r.err;
  const std::set<std::string> moved = QuarantinedPaths(r);
  EXPECT_EQ(moved.count(ws_ + "/.GIT/w/.git"), 1u) << r.err;
  EXPECT_EQ(r.err.find("could not be moved"), std::string::npos) << r.err;
  ExpectMovedAside(r, ws_ + "/.GIT/Anvil.toml");
  EXPECT_EQ(ReadFile(ws_ + "/.GIT/notes.txt"), "kept\n");
  caller_.Give(ws_);
  UseGitOnTheHost(ws_ + "/.GIT/w");
  Git(ws_ + "/.GIT/w", {"commit", "--allow-empty", "-q", "-m", "x"});
  EXPECT_FALSE(Exists(marker_)) << "git on the host ran what the command planted below .GIT";
  auto ordinary = Sh("echo y > out.txt && echo DONE");
  EXPECT_EQ(ordinary.status, 0) << ordinary.err;
  EXPECT_TRUE(Quarantined(ordinary).empty()) << ordinary.err;
  EXPECT_EQ(ordinary.err.find("moved"), std::string::npos) << ordinary.err;
}

// Benign: a real bare repository of the user's, and a `git clone --bare` of it made during the
// run, are judged as before and left alone; so is an ordinary run beside them.
TEST_P(T1SandboxGitDirSubtree, RealBareRepositoriesAreLeftAlone) {
  GitOk(ws_, {"init", "-q", "--bare", "vendor/mirror.git"});
  GitOk(ws_ + "/vendor/mirror.git", {"symbolic-ref", "HEAD", "refs/heads/main"});
  GitOk(ws_, {"push", "-q", ws_ + "/vendor/mirror.git", "HEAD:refs/heads/main"});
  caller_.Give(ws_);
  auto r =
      Sh("git clone -q --bare vendor/mirror.git clone.git && git -C clone.git log --oneline && "
         "mkdir -p build && echo x > build/out && echo DONE");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("first"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("DONE"), std::string::npos) << r.out << r.err;
  EXPECT_TRUE(Quarantined(r).empty()) << r.err;
  EXPECT_EQ(r.err.find("moved"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("not walk"), std::string::npos) << r.err;
  EXPECT_TRUE(Exists(ws_ + "/clone.git/HEAD"));
  EXPECT_TRUE(Exists(ws_ + "/vendor/mirror.git/HEAD"));
  // The user's bare repository stays read-only to the command, as before.
  auto write = Sh("echo x > vendor/mirror.git/hooks/post-update 2>/dev/null || echo REFUSED");
  EXPECT_NE(write.out.find("REFUSED"), std::string::npos) << write.out << write.err;
  EXPECT_FALSE(Exists(ws_ + "/vendor/mirror.git/hooks/post-update"));
  auto ordinary = Sh("echo y > build/out && echo DONE");
  EXPECT_EQ(ordinary.status, 0) << ordinary.err;
  EXPECT_TRUE(Quarantined(ordinary).empty()) << ordinary.err;
  EXPECT_EQ(ordinary.err.find("moved"), std::string::npos) << ordinary.err;
  auto log = Git(ws_ + "/clone.git", {"log", "--oneline"});
  EXPECT_EQ(log.status, 0) << log.err;
}

INSTANTIATE_TEST_SUITE_P(Callers, T1SandboxGitDirSubtree, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t1_sandbox_git_dir_subtree_test
}  // namespace anvil::testing
