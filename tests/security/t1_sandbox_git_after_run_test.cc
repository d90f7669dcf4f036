// T1 for the command sandbox, git metadata the command leaves behind: what git on the host
// takes for a repository must be what the check after the run takes for one, the check must
// act on what it found whatever the command did to its bounds, and a repository the command
// made or changed may carry only the config keys `git init`, `git clone` and friends write.
// Each attack is followed by the real git run on the host (the fixture's marker), each sits
// next to its benign neighbour, which is left alone.
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "git_sandbox_fixture.h"

namespace anvil::testing {
namespace t1_sandbox_git_after_run_test {
namespace {

class T1SandboxGitAfterRun : public GitSandboxTest {
 protected:
  // Shell for the sandbox: a directory DIR that is a git dir to git only by the execute bits of
  // its `objects` and `refs` files, with a config whose fsmonitor is the marker script.
  std::string ExecFileGitDir(const std::string& dir) const {
    return "mkdir " + dir + " && printf 'ref: refs/heads/main\\n' > " + dir +
           "/HEAD && printf '#!/bin/sh\\n' > " + dir + "/objects && cp " + dir + "/objects " + dir +
           "/refs && chmod +x " + dir + "/objects " + dir + "/refs && " + Config(dir);
  }
  std::string Config(const std::string& dir) const {
    return "printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = "
           ".\\n\\tfsmonitor = " +
           marker_ + "-fsm.sh\\n' > " + dir + "/config";
  }
};

// A `.git` file the command leaves that leads outside the writable roots, to a git dir that is
// not there yet (red team s5 rtcmd5): the check after the run found nothing to judge, and git
// on the host follows it whenever it runs — once the place is filled (by another workspace's
// run in its sandbox home, which no check walks, or by anyone in /tmp; here: made on the host)
// the user's `git status` there ran its hook. Moved aside. Benign neighbour: a linked worktree
// of the workspace's repository made in the run is left alone and works.
TEST_P(T1SandboxGitAfterRun, APointerOutOfTheRootsToAGitDirMadeLaterIsQuarantined) {
  const std::string later = outside_ / "later.git";
  auto attack = Sh("mkdir sub && printf 'gitdir: " + later + "\n' > sub/.git && ln -s " +
                   outside_ / "nothing" + " link && mkdir lnk && ln -s " + later + " lnk/.git");
  EXPECT_EQ(attack.status, 0) << attack.err;
  EXPECT_FALSE(Exists(ws_ + "/sub/.git")) << attack.err;
  EXPECT_TRUE(Exists(ws_ + "/sub/.git.anvil-quarantine")) << attack.err;
  EXPECT_NE(attack.err.find("outside the writable roots"), std::string::npos) << attack.err;
  EXPECT_FALSE(Exists(ws_ + "/lnk/.git")) << attack.err;
  // What fills the place later: a git dir with a hook, made outside any sandbox.
  GitOk(outside_.path(), {"init", "-q", "--bare", later});
  Write(later + "/hooks/pre-commit", HookText(), 0755);
  Write(later + "/hooks/post-commit", HookText(), 0755);
  caller_.Give(later);
  UseGitOnTheHost(ws_ + "/sub");
  UseGitOnTheHost(ws_ + "/lnk");
  EXPECT_FALSE(Exists(marker_)) << "git on the host followed the command's pointer to a hook";

  // Benign: a linked worktree of a repository made in the workspace, and a separate git dir
  // inside it.
  auto benign =
      Sh("git init -q nested && git -C nested commit -q --allow-empty -m x && "
         "git -C nested worktree add -q ../wt && git init -q --separate-git-dir=gd sep");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Quarantined(benign).empty()) << benign.err;
  for (const char* dir : {"/wt", "/sep"}) {
    EXPECT_TRUE(Exists(ws_ + dir + "/.git")) << dir;
    EXPECT_EQ(Git(ws_ + dir, {"status", "--short"}).status, 0) << dir;
  }
}

// git's is_git_directory asks only that objects and refs pass access(X_OK): an executable
// file does, as a directory or a symlink does.
TEST_P(T1SandboxGitAfterRun, AGitDirWhoseObjectsAndRefsAreExecutableFilesIsQuarantined) {
  Write(marker_ + "-fsm.sh", HookText(), 0755);
  auto attack = Sh(ExecFileGitDir("src") + " && " + ExecFileGitDir("lib") +
                   " && mv lib/objects lib/o && ln -s o lib/objects");
  EXPECT_EQ(attack.status, 0) << attack.err;
  for (const char* dir : {"/src", "/lib"}) {
    EXPECT_FALSE(Exists(ws_ + dir + "/HEAD")) << dir << ": " << attack.err;
    EXPECT_TRUE(Exists(ws_ + dir + ".anvil-quarantine/HEAD.anvil-quarantine")) << dir;
    EXPECT_NE(attack.err.find("quarantined " + ws_ + dir), std::string::npos) << attack.err;
  }
  UseGitOnTheHost(ws_ + "/src");
  UseGitOnTheHost(ws_ + "/src.anvil-quarantine");
  UseGitOnTheHost(ws_ + "/lib.anvil-quarantine");
  EXPECT_FALSE(Exists(marker_)) << "git on the host ran the fsmonitor of a git dir whose "
                                   "objects and refs are executable files";

  // Benign: the same names as plain files are no git dir to git, and are left alone.
  auto benign =
      Sh("mkdir docs && echo 'ref: refs/heads/main' > docs/HEAD && echo notes > docs/objects && "
         "echo notes > docs/refs && " +
         Config("docs"));
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Quarantined(benign).empty()) << benign.err;
  EXPECT_TRUE(Exists(ws_ + "/docs/HEAD"));
  UseGitOnTheHost(ws_ + "/docs");
  EXPECT_FALSE(Exists(marker_)) << "git took plain files for a git dir: the benign half is wrong";
}

// A `.git` file's path is the rest of the file, blanks included: a reading that trims them
// would judge the decoy beside the git dir git really opens (hidden in a plain repository's
// git dir, which no walk enters, and which is not closed then).
TEST_P(T1SandboxGitAfterRun, AGitFileIsJudgedByThePathGitOpens) {
  Write(marker_ + "-fsm.sh", HookText(), 0755);
  auto attack = Sh(
      "git init -q plain && mkdir -p 'plain/.git/x /objects' 'plain/.git/x /refs' plain/.git/x && "
      "echo 'ref: refs/heads/main' > 'plain/.git/x /HEAD' && " +
      Config("'plain/.git/x '") +
      " && mkdir src && printf 'gitdir: ../plain/.git/x \\n' > src/.git");
  EXPECT_EQ(attack.status, 0) << attack.err;
  EXPECT_FALSE(Exists(ws_ + "/src/.git")) << attack.err;
  // The plain repository's git dir holds more than git writes there (the decoy's git dirs): it
  // is moved aside too (policy/git_dir_closed.h).
  EXPECT_FALSE(Exists(ws_ + "/plain/.git")) << attack.err;
  UseGitOnTheHost(ws_ + "/src");
  EXPECT_FALSE(Exists(marker_)) << "git on the host used a git dir the check did not judge";
}

// The bounds of the walk after the run are the command's to push: past one the check goes on
// with everything else, acts on what it found, names what it did not walk, and the run fails.
TEST_P(T1SandboxGitAfterRun, PastABoundTheCheckStillActsAndTheRunFails) {
  Write(marker_ + "-fsm.sh", HookText(), 0755);
  const std::string configured =
      "git init -q sub && git -C sub config core.fsmonitor " + marker_ + "-fsm.sh && ";
  auto deep = Sh(configured + "d=deep; for i in $(seq 135); do d=$d/x; done; mkdir -p $d");
  EXPECT_EQ(deep.status, 125) << deep.err;
  EXPECT_NE(deep.err.find("quarantined " + ws_ + "/sub/.git"), std::string::npos) << deep.err;
  EXPECT_FALSE(Exists(ws_ + "/sub/.git"));
  EXPECT_NE(deep.err.find("did not walk"), std::string::npos) << deep.err;
  EXPECT_NE(deep.err.find(ws_ + "/deep/x/x/x"), std::string::npos) << deep.err;
  EXPECT_NE(deep.err.find("'depth' bound (128)"), std::string::npos) << deep.err;
  EXPECT_EQ(deep.err.find("did not start"), std::string::npos) << deep.err;
  auto report = JsonReport(deep);
  ASSERT_FALSE(report.is_discarded()) << deep.err;
  EXPECT_EQ(report["exit_code"], 125);
  EXPECT_EQ(report["command_exit_code"], 0);
  EXPECT_EQ(report["git"]["check_complete"], false);
  EXPECT_GE(report["git"]["unwalked_total"].get<int>(), 1);
  UseGitOnTheHost(ws_ + "/sub");
  EXPECT_FALSE(Exists(marker_)) << "git ran the fsmonitor of a repository made beside a deep tree";
  // The next run there does not start until the tree is within the bound.
  EXPECT_EQ(Sh("true").status, 125);
  ASSERT_EQ(Shell("rm -rf " + ws_ + "/deep " + ws_ + "/sub*"), 0);

  // The entries bound, pushed by the command's own directories: the directory that passes the
  // bound is still looked through, what lies beneath it is not; the run fails, naming it.
  auto many = Sh(configured + "mkdir many && cd many && for i in $(seq 300); do mkdir d$i; done",
                 {"--git-scan-limit", "entries=200"});
  EXPECT_EQ(many.status, 125) << many.err;
  EXPECT_NE(many.err.find("'entries' bound (200)"), std::string::npos) << many.err;
  ASSERT_EQ(Shell("rm -rf " + ws_ + "/many " + ws_ + "/sub*"), 0);

  // Benign: a plain init and a tree within the bounds; the command's own status is the run's.
  auto benign = Sh("git init -q plain && mkdir -p a/b/c/d/e && exit 3");
  EXPECT_EQ(benign.status, 3) << benign.err;
  EXPECT_TRUE(Quarantined(benign).empty()) << benign.err;
  auto ok = JsonReport(benign);
  ASSERT_FALSE(ok.is_discarded()) << benign.err;
  EXPECT_EQ(ok["git"]["check_complete"], true);
  EXPECT_FALSE(ok["git"].contains("unwalked"));
  EXPECT_EQ(benign.err.find("ERROR"), std::string::npos) << benign.err;
}

// A repository the command made may hold only the keys git init, clone and friends write: the
// keys that run code are more than any list of them (an alias that is not `!cmd`, an archive
// filter, a URL transport), and a repository's own config overrides the user's.
TEST_P(T1SandboxGitAfterRun, ANewRepositoryWithAnyKeyBeyondInitAndCloneIsQuarantined) {
  const std::string fsm = marker_ + "-fsm.sh";
  Write(fsm, HookText(), 0755);
  auto attack = Sh("git init -q r1 && git -C r1 config alias.st '-c core.fsmonitor=" + fsm +
                   " status' && git init -q r2 && git -C r2 commit -q --allow-empty -m x && "
                   "git -C r2 config tar.tgz.command '" +
                   fsm +
                   "; gzip -cn' && git init -q r3 && git -C r3 config protocol.ext.allow always && "
                   "git -C r3 remote add origin 'ext::" +
                   fsm + "' && git init -q r4 && git -C r4 remote add origin 'ext::" + fsm + "'");
  EXPECT_EQ(attack.status, 0) << attack.err;
  for (const char* repo : {"/r1", "/r2", "/r3", "/r4"}) {
    EXPECT_FALSE(Exists(ws_ + repo + "/.git")) << repo << ": " << attack.err;
    EXPECT_NE(attack.err.find("quarantined " + ws_ + repo + "/.git"), std::string::npos)
        << attack.err;
  }
  EXPECT_NE(attack.err.find("alias.st"), std::string::npos) << attack.err;
  EXPECT_NE(attack.err.find("ext::"), std::string::npos) << attack.err;
  Git(ws_ + "/r1", {"st"});
  Git(ws_ + "/r2", {"archive", "-o", ws_ + "/x.tgz", "HEAD"});
  Git(ws_ + "/r3", {"fetch", "-q", "origin"});
  Git(ws_ + "/r4", {"-c", "protocol.ext.allow=always", "fetch", "-q", "origin"});
  EXPECT_FALSE(Exists(marker_)) << "git on the host ran a key of a repository the command made";

  // Benign: what git init, clone, remote add, config user.*, branch tracking, submodule add,
  // worktree add and commit write is left alone.
  auto benign =
      Sh("git init -q b && git -C b config user.name me && git -C b config user.email me@x.invalid "
         "&& git -C b commit -q --allow-empty -m one && git -C b remote add up "
         "https://example.invalid/b.git && git -C b config branch.main.remote up && "
         "git -C b config branch.main.merge refs/heads/main && git clone -q b c && "
         "git -C b -c protocol.file.allow=always submodule add -q \"$PWD/c\" sub && "
         "git -C b commit -q -m sub && git -C b worktree add -q ../bw && git -C c log --oneline");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Quarantined(benign).empty()) << benign.err;
  EXPECT_TRUE(Exists(ws_ + "/b/.git/HEAD"));
  EXPECT_TRUE(Exists(ws_ + "/c/.git/HEAD"));
  EXPECT_TRUE(Exists(ws_ + "/b/sub/.git"));
  EXPECT_TRUE(Exists(ws_ + "/bw/.git"));
}

// The command runs as the caller, so it may chmod the caller's own directories: a repository
// planted in one it then made unlistable (search kept, or nothing at all: the user can chmod it
// back) is what git on the host finds there all the same. The check opens such a directory for
// its own look, judges and moves aside what it holds, and puts the directory's mode back.
TEST_P(T1SandboxGitAfterRun, ARepositoryInADirectoryTheCommandMadeUnlistableIsQuarantined) {
  const std::string fsm = marker_ + "-fsm.sh";
  Write(fsm, HookText(), 0755);
  auto attack = Sh("mkdir -p d e/f && git init -q d/r && git -C d/r config core.fsmonitor " + fsm +
                   " && git init -q e/f/r && git -C e/f/r config core.fsmonitor " + fsm +
                   " && git init -q g && git -C g config core.fsmonitor " + fsm +
                   " && chmod 000 g/.git/config && chmod 111 d && chmod 000 e/f e");
  EXPECT_EQ(attack.status, 0) << attack.err;
  struct stat st {};
  ASSERT_EQ(stat((ws_ + "/d").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0111u) << "the directory's mode was not put back";
  ASSERT_EQ(stat((ws_ + "/e").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0u) << "the directory's mode was not put back";
  UseGitOnTheHost(ws_ + "/d/r");
  ASSERT_EQ(Shell("chmod 755 " + ws_ + "/e " + ws_ + "/e/f"), 0);
  UseGitOnTheHost(ws_ + "/e/f/r");
  // A config the command made unreadable: git reads it once the user opens it again.
  EXPECT_FALSE(Exists(ws_ + "/g/.git")) << attack.err;
  ASSERT_EQ(Shell("chmod -f 644 " + ws_ + "/g/.git*/config; true"), 0);
  UseGitOnTheHost(ws_ + "/g");
  EXPECT_FALSE(Exists(ws_ + "/d/r/.git")) << attack.err;
  EXPECT_FALSE(Exists(ws_ + "/e/f/r/.git")) << attack.err;
  EXPECT_FALSE(Exists(marker_)) << "git on the host ran the fsmonitor of a repository planted in "
                                   "a directory the command made unlistable";
  ASSERT_EQ(Shell("chmod 755 " + ws_ + "/d && rm -rf " + ws_ + "/d " + ws_ + "/e"), 0);

  // Benign: a test tree that leaves unlistable directories (files, a plain init) is walked and
  // left as it was, modes and all; the run keeps the command's status.
  auto benign =
      Sh("mkdir -p t/locked t/search && echo x > t/locked/f && git init -q t/locked/p && "
         "echo y > t/search/g && chmod 000 t/locked && chmod 111 t/search");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Quarantined(benign).empty()) << benign.err;
  ASSERT_EQ(stat((ws_ + "/t/locked").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0u);
  ASSERT_EQ(stat((ws_ + "/t/search").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0111u);
  EXPECT_TRUE(Exists(ws_ + "/t/locked/p/.git/HEAD"));
  auto ok = JsonReport(benign);
  ASSERT_FALSE(ok.is_discarded()) << benign.err;
  EXPECT_EQ(ok["git"]["check_complete"], true);
  ASSERT_EQ(Shell("chmod -R u+rwx " + ws_ + "/t"), 0);
}

// A submodule's git dir lives in the superproject's, under modules/NAME, where no walk looks:
// `git submodule update` on the host takes an existing one as it is (its hooks, its config)
// and checks the submodule out with it.
TEST_P(T1SandboxGitAfterRun, ASubmoduleGitDirInANewRepositoryIsJudgedWithIt) {
  auto attack =
      Sh("git init -q lib && git -C lib commit -q --allow-empty -m l && git init -q sup && "
         "git -C sup -c protocol.file.allow=always submodule add -q \"$PWD/lib\" lib && "
         "git -C sup commit -q -m add && rm -rf sup/lib && mkdir sup/lib && " +
         Plant("sup/.git/modules/lib/hooks/post-checkout") +
         " && git init -q cfg && git -C cfg -c protocol.file.allow=always submodule add -q "
         "\"$PWD/lib\" lib && git -C cfg commit -q -m add && rm -rf cfg/lib && mkdir cfg/lib && "
         "git config -f cfg/.git/modules/lib/config core.fsmonitor " +
         marker_ + "-fsm.sh");
  Write(marker_ + "-fsm.sh", HookText(), 0755);
  EXPECT_EQ(attack.status, 0) << attack.err;
  EXPECT_FALSE(Exists(ws_ + "/sup/.git")) << attack.err;
  EXPECT_FALSE(Exists(ws_ + "/cfg/.git")) << attack.err;
  EXPECT_NE(attack.err.find("modules/lib"), std::string::npos) << attack.err;
  for (const char* repo : {"/sup", "/cfg"}) {
    Git(ws_ + repo, {"-c", "protocol.file.allow=always", "submodule", "update", "--init"});
    Git(ws_ + repo + "/lib", {"status"});
  }
  EXPECT_FALSE(Exists(marker_)) << "git submodule update on the host ran what the command put "
                                   "in a submodule's git dir";

  // Benign: a superproject with its submodules (nested too), as git submodule add makes it.
  auto benign =
      Sh("git init -q lib2 && git -C lib2 commit -q --allow-empty -m l && git init -q mid && "
         "git -C mid -c protocol.file.allow=always submodule add -q \"$PWD/lib2\" lib2 && "
         "git -C mid commit -q -m m && git init -q top && git -C top -c protocol.file.allow=always "
         "submodule add -q \"$PWD/mid\" mid && git -C top commit -q -m t && "
         "git -C top -c protocol.file.allow=always submodule update -q --init --recursive");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Quarantined(benign).empty()) << benign.err;
  EXPECT_TRUE(Exists(ws_ + "/top/.git/modules/mid/HEAD"));
  EXPECT_TRUE(Exists(ws_ + "/top/.git/modules/mid/modules/lib2/HEAD"));
}

// A writable root without a .git of its own (git's placeholder is gone after the run) is a
// directory the command can make into a git dir itself: git run there on the host takes it
// for one, with its config (a pager, an alias). It cannot be renamed away as a nested one is:
// its HEAD is.
TEST_P(T1SandboxGitAfterRun, AWritableRootMadeIntoAGitDirIsQuarantined) {
  const std::string fsm = marker_ + "-fsm.sh";
  Write(fsm, HookText(), 0755);
  const std::string plain = outside_ / "plain";
  ASSERT_EQ(mkdir(plain.c_str(), 0755), 0);
  caller_.Give(plain);
  auto attack = SandboxSh(plain,
                          "printf 'ref: refs/heads/main\\n' > HEAD && mkdir objects refs && "
                          "printf '[core]\\n\\tpager = " +
                              fsm + "\\n[alias]\\n\\tst = !" + fsm + "\\n' > config",
                          {"--json"}, Env());
  EXPECT_EQ(attack.status, 0) << attack.err;
  EXPECT_FALSE(Exists(plain + "/HEAD")) << attack.err;
  EXPECT_NE(attack.err.find("quarantined " + plain + "/HEAD"), std::string::npos) << attack.err;
  Git(plain, {"st"});
  Git(plain, {"-p", "log"});
  EXPECT_FALSE(Exists(marker_)) << "git on the host took the writable root for a git dir";

  // Benign: files named like a git dir's that make none (no objects/), and a plain init below.
  const std::string notes = outside_ / "notes";
  ASSERT_EQ(mkdir(notes.c_str(), 0755), 0);
  caller_.Give(notes);
  auto benign =
      SandboxSh(notes, "echo draft > HEAD && mkdir refs && git init -q sub", {"--json"}, Env());
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Quarantined(benign).empty()) << benign.err;
  EXPECT_TRUE(Exists(notes + "/HEAD"));
}

// A same-user command can take the owner's permissions off the directory that holds what it
// planted (`chmod 111 sub`: git still works in it, but the walk cannot list it; `chmod 0`): the
// check after the run must still find it, and the mode the command set stays.
TEST_P(T1SandboxGitAfterRun, ARepositoryHiddenByTheModeOfItsDirectoryIsStillQuarantined) {
  for (const char* mode : {"111", "0"}) {
    SCOPED_TRACE(mode);
    const std::string dir = std::string("hid") + mode;
    auto attack = Sh("mkdir " + dir + " && cd " + dir + " && git init -q && " +
                     Plant(".git/hooks/pre-commit") + " && cd .. && chmod " + mode + " " + dir);
    EXPECT_EQ(attack.status, 0) << attack.err;
    struct stat st {};
    ASSERT_EQ(stat((ws_ + "/" + dir).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, static_cast<mode_t>(std::stoi(mode, nullptr, 8)));
    ASSERT_EQ(Shell("chmod 755 " + ShellQuote(ws_ + "/" + dir)), 0);
    EXPECT_FALSE(Exists(ws_ + "/" + dir + "/.git/HEAD")) << attack.err;
    EXPECT_NE(attack.err.find("quarantined " + ws_ + "/" + dir), std::string::npos) << attack.err;
    caller_.Give(ws_);
    UseGitOnTheHost(ws_ + "/" + dir);
    EXPECT_FALSE(Exists(marker_)) << "git on the host ran a hook planted beneath chmod " << mode;
  }
  // Benign: a directory of the workspace the command makes unreadable and leaves, with nothing
  // of git in it, is left as it is.
  auto benign = Sh("mkdir private && echo x > private/f && chmod 0 private && echo BENIGN");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Quarantined(benign).empty()) << benign.err;
  struct stat st {};
  ASSERT_EQ(stat((ws_ + "/private").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0u);
  ASSERT_EQ(Shell("chmod 755 " + ShellQuote(ws_ + "/private")), 0);
  EXPECT_EQ(ReadFile(ws_ + "/private/f"), "x\n");
}

// A read-only bind keeps a name, not an inode (red team s7 review1 #2): a repository the
// command makes may hard-link its config out of `.git` (`ln sub/.git/config sub/notes.txt`),
// and any later command would write git's config through that name. The check after the run
// moves such a repository aside; a repository of the user's whose config already has another
// name gets that name kept read-only for the run. Benign neighbour: a plain `git init` stays.
TEST_P(T1SandboxGitAfterRun, AConfigWithAnotherHardLinkIsNoWayIntoGit) {
  auto made =
      Sh("git init -q plain && git init -q linked && ln linked/.git/config linked/notes.txt");
  EXPECT_TRUE(Exists(ws_ + "/plain/.git/HEAD")) << made.err;
  EXPECT_FALSE(Exists(ws_ + "/linked/.git")) << made.err;
  EXPECT_TRUE(Exists(ws_ + "/linked/.git.anvil-quarantine")) << made.err;
  EXPECT_NE(made.err.find("another hard link"), std::string::npos) << made.err;

  // The user's own, linked on the host: the other name is read-only for the run.
  GitOk(ws_, {"init", "-q", "mine"});
  ASSERT_EQ(::link((ws_ + "/mine/.git/config").c_str(), (ws_ + "/mine/cfg-link").c_str()), 0);
  caller_.Give(ws_);
  auto attack = Sh("printf '[core]\\n\\tfsmonitor = \"" + marker_ +
                   "-fsm\"\\n' >> mine/cfg-link; echo x > mine/ok.txt");
  EXPECT_EQ(ReadFile(ws_ + "/mine/cfg-link").find("fsmonitor"), std::string::npos) << attack.err;
  EXPECT_EQ(ReadFile(ws_ + "/mine/ok.txt"), "x\n");
  Write(marker_ + "-fsm", HookText(), 0755);
  UseGitOnTheHost(ws_ + "/mine");
  EXPECT_FALSE(Exists(marker_)) << "git ran what a command wrote into the user's config";
}

// Red team s13: a new repository's git dir holding what git reads but the check did not:
// its config a symlink into the sandbox home (inert when judged, filled by a later run), its
// config a FIFO (taken for missing; git reads what a later run writes into it), a legacy
// `remotes/` or `branches/` file naming a repository in the home (git push ran its hook), a
// `rebase-merge` todo with an `exec` line (git rebase --continue, which git status suggests,
// ran it), a submodule's config a symlink. A git dir the check judges must hold only what git
// writes there, each file regular and each directory real: anything else is moved aside.
TEST_P(T1SandboxGitAfterRun, ANewGitDirHoldsOnlyWhatGitWritesThere) {
  const std::string fsm = marker_ + "-fsm.sh";
  Write(fsm, HookText(), 0755);
  auto first = Sh("true");
  ASSERT_EQ(first.status, 0) << first.err;
  const std::string home = JsonReport(first)["home"].value("sandbox_home", "");
  ASSERT_FALSE(home.empty()) << first.err;
  auto attack =
      Sh("set -e; git init -q cl && cp cl/.git/config ~/cfg && rm cl/.git/config && ln -s " +
         ShellQuote(home + "/cfg") +
         " cl/.git/config\n"
         "git init -q ff && rm ff/.git/config && mkfifo ff/.git/config\n"
         "git init -q --bare ~/evil.git\n" +
         Plant("~/evil.git/hooks/pre-receive") +
         "\ngit init -q lr && git -C lr commit -q --allow-empty -m x && mkdir lr/.git/remotes && "
         "printf 'URL: " +
         home +
         "/evil.git\\nPush: refs/heads/*:refs/heads/*\\n' > lr/.git/remotes/origin && "
         "git -C lr config branch.$(git -C lr symbolic-ref --short HEAD).remote origin\n"
         "git init -q lb && git -C lb commit -q --allow-empty -m x && mkdir -p lb/.git/branches && "
         "printf '" +
         home +
         "/evil.git\\n' > lb/.git/branches/up\n"
         "git init -q rb && git -C rb commit -q --allow-empty -m a && git -C rb commit -q "
         "--allow-empty -m b\n"
         "(cd rb && GIT_SEQUENCE_EDITOR='sed -i \"1i break\"' git rebase -q -i HEAD~1 >/dev/null "
         "2>&1 || true)\n"
         "printf 'exec " +
         fsm +
         "\\n' >> rb/.git/rebase-merge/git-rebase-todo\n"
         "git init -q lib && git -C lib commit -q --allow-empty -m l && git init -q sm && "
         "git -C sm -c protocol.file.allow=always submodule add -q \"$PWD/lib\" lib && "
         "git -C sm commit -q -m add && cp sm/.git/modules/lib/config ~/smcfg && "
         "rm sm/.git/modules/lib/config && ln -s " +
         ShellQuote(home + "/smcfg") + " sm/.git/modules/lib/config");
  EXPECT_EQ(attack.status, 0) << attack.err;
  for (const char* repo : {"/cl", "/ff", "/lr", "/lb", "/rb", "/sm"}) {
    EXPECT_FALSE(Exists(ws_ + repo + "/.git")) << repo << ": " << attack.err;
    EXPECT_NE(attack.err.find("quarantined " + ws_ + repo + "/.git"), std::string::npos)
        << repo << ": " << attack.err;
  }
  // A later run fills what the links lead to.
  auto later = Sh("printf '[core]\\n\\tfsmonitor = " + fsm +
                  "\\n' >> ~/cfg && printf "
                  "'[core]\\n\\tfsmonitor = " +
                  fsm + "\\n' >> ~/smcfg");
  EXPECT_EQ(later.status, 0) << later.err;
  for (const char* repo : {"/cl", "/ff", "/sm", "/sm/lib"}) UseGitOnTheHost(ws_ + repo);
  Git(ws_ + "/lr", {"push", "-q"});
  Git(ws_ + "/lr", {"push", "-q", "origin"});
  Git(ws_ + "/lb", {"push", "-q", "up", "HEAD"});
  Git(ws_ + "/rb", {"rebase", "--continue"});
  EXPECT_FALSE(Exists(marker_)) << "git on the host ran what a new git dir held beyond what git "
                                   "writes there";

  // Benign: what git init, commit, clone, fetch, stash, a merge in progress and submodule add
  // leave in a git dir is left alone.
  auto benign = Sh(
      "set -e; git init -q b && git -C b commit -q --allow-empty -m one && echo a > b/f && "
      "git -C b add f && git -C b commit -q -m f && git clone -q b c && git -C c fetch -q && "
      "echo x >> c/f && git -C c stash -q && git -C b checkout -q -b side && echo s > b/f && "
      "git -C b commit -q -am s && git -C b checkout -q - && echo m > b/f && git -C b commit -q "
      "-am m && (git -C b merge -q side >/dev/null 2>&1 || true) && test -f b/.git/MERGE_HEAD && "
      "git init -q lib2 && git -C lib2 commit -q --allow-empty -m l && git init -q d && "
      "git -C d -c protocol.file.allow=always submodule add -q \"$PWD/lib2\" lib2 && "
      "git -C d commit -q -m d && git init -q --bare e.git && git -C c gc -q");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Quarantined(benign).empty()) << benign.err;
  for (const char* dotgit : {"/b/.git/MERGE_HEAD", "/c/.git/HEAD", "/d/.git/modules/lib2/HEAD",
                             "/e.git/HEAD", "/c/.git/logs/refs/stash"}) {
    EXPECT_TRUE(Exists(ws_ + dotgit)) << dotgit;
  }
}

// Review: git's is_git_directory takes `objects` (or `refs`) by access(X_OK), which an
// executable FIFO passes; the walk counted no FIFO, so a directory with HEAD, refs/, such a FIFO
// and a config with core.fsmonitor and core.worktree was no repository to it, and `git status`
// there on the host ran the command's program. Benign neighbour: a FIFO beside a real
// repository's files, where git reads nothing, stays.
TEST_P(T1SandboxGitAfterRun, AGitDirWhoseObjectsIsAFifoIsStillFound) {
  const std::string fsm = marker_ + "-fsm.sh";
  Write(fsm, HookText(), 0755);
  auto attack =
      Sh("set -e; mkdir -p tools/refs && cd tools && printf 'ref: refs/heads/main\\n' > HEAD && "
         "mkfifo -m 755 objects && printf '[core]\\n\\trepositoryformatversion = 0\\n"
         "\\tbare = false\\n\\tworktree = .\\n\\tfsmonitor = " +
         fsm + "\\n' > config && cd .. && git init -q ok && mkfifo ok/pipe");
  EXPECT_EQ(attack.status, 0) << attack.err;
  EXPECT_NE(attack.err.find("quarantined " + ws_ + "/tools"), std::string::npos) << attack.err;
  if (Exists(ws_ + "/tools/HEAD") && Exists(ws_ + "/tools/config")) UseGitOnTheHost(ws_ + "/tools");
  EXPECT_FALSE(Exists(marker_)) << "git on the host ran the config of a git dir with a FIFO";
  EXPECT_TRUE(Exists(ws_ + "/ok/.git/HEAD")) << attack.err;
}

// Everyday work in a repository the command made must outlive the run: a bisect under way, a
// rebase (merge or apply backend), cherry-pick or revert stopped on a conflict, a sparse
// checkout, per-worktree config, rerere, maintenance. Each is left alone and the user's git
// on the host carries it on.
TEST_P(T1SandboxGitAfterRun, AStoppedRebaseBisectOrSparseCheckoutOutlivesTheRun) {
  auto run =
      Sh("set -e; mk() { git init -q -b main $1 && for i in 1 2 3 4; do echo $i > $1/f && "
         "git -C $1 add f && git -C $1 commit -qm c$i; done; }\n"
         "side() { git -C $1 checkout -q -b side HEAD~2 && echo s > $1/f && git -C $1 commit -qam "
         "s; }\n"
         "mk bis && git -C bis bisect start HEAD HEAD~3 >/dev/null\n"
         "mk rb && side rb && ! git -C rb rebase -q main >/dev/null 2>&1 && test -d "
         "rb/.git/rebase-merge\n"
         "mk au && side au && echo g > au/g && git -C au add g && git -C au commit -qm g && "
         "echo dirty >> au/g && ! git -C au rebase -q --autostash main >/dev/null 2>&1 && "
         "test -f au/.git/rebase-merge/autostash\n"
         "mk ra && side ra && ! git -C ra rebase --apply -q main >/dev/null 2>&1 && "
         "test -d ra/.git/rebase-apply\n"
         "mk cp && side cp && ! git -C cp cherry-pick main~1 main >/dev/null 2>&1 && "
         "test -f cp/.git/sequencer/todo\n"
         "mk rv && ! git -C rv revert --no-edit HEAD~2 HEAD~1 >/dev/null 2>&1 && "
         "test -f rv/.git/sequencer/opts\n"
         "mk sp && mkdir sp/d && echo x > sp/d/y && git -C sp add d && git -C sp commit -qm d && "
         "git -C sp sparse-checkout set d\n"
         "mk wc && git -C wc config extensions.worktreeConfig true && "
         "git -C wc config --worktree user.name wt\n"
         "mk rr && git -C rr config rerere.enabled true && side rr && "
         "! git -C rr merge -q main >/dev/null 2>&1 && git -C rr merge --abort && "
         "test -d rr/.git/rr-cache\n"
         "mk mt && git -C mt maintenance register\n");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(Quarantined(run).empty()) << run.err;
  for (const char* dotgit : {"/bis/.git/BISECT_START", "/rb/.git/rebase-merge/git-rebase-todo",
                             "/ra/.git/rebase-apply/next", "/cp/.git/sequencer/todo",
                             "/rv/.git/sequencer/opts", "/sp/.git/info/sparse-checkout",
                             "/wc/.git/config.worktree", "/rr/.git/rr-cache", "/mt/.git/HEAD"}) {
    EXPECT_TRUE(Exists(ws_ + dotgit)) << dotgit;
  }
  // The user's git carries each on.
  auto bisect = Git(ws_ + "/bis", {"bisect", "good"});
  EXPECT_EQ(bisect.status, 0) << bisect.err;
  EXPECT_TRUE(bisect.out.find("Bisecting") != std::string::npos ||
              bisect.out.find("first bad commit") != std::string::npos)
      << bisect.out << bisect.err;
  for (const char* repo : {"/rb", "/ra", "/au"}) {
    Write(ws_ + repo + "/f", "s\n");
    GitOk(ws_ + repo, {"add", "f"});
    auto cont = Git(ws_ + repo, {"-c", "core.editor=true", "rebase", "--continue"});
    EXPECT_EQ(cont.status, 0) << repo << ": " << cont.err;
  }
  EXPECT_FALSE(Exists(ws_ + "/rb/.git/rebase-merge"));
  EXPECT_FALSE(Exists(ws_ + "/ra/.git/rebase-apply"));
  EXPECT_EQ(ReadFile(ws_ + "/au/g"), "g\ndirty\n") << "the autostash was not applied";
  for (const char* repo : {"/cp", "/rv"}) {
    Write(ws_ + repo + "/f", "3\n");
    GitOk(ws_ + repo, {"add", "f"});
    auto cont =
        Git(ws_ + repo, {"-c", "core.editor=true",
                         repo == std::string("/cp") ? "cherry-pick" : "revert", "--continue"});
    EXPECT_EQ(cont.status, 0) << repo << ": " << cont.err;
    EXPECT_FALSE(Exists(ws_ + repo + "/.git/sequencer")) << repo;
  }
  EXPECT_EQ(Git(ws_ + "/sp", {"sparse-checkout", "list"}).out, "d\n");
  EXPECT_EQ(Git(ws_ + "/wc", {"config", "user.name"}).out, "wt\n");
  for (const char* repo : {"/rr", "/mt"}) EXPECT_EQ(Git(ws_ + repo, {"status"}).status, 0) << repo;
}

// Its attack neighbour: state that makes the host's git run a command stays refused — a todo
// with an `exec` (or `x`) line, from `git rebase --exec` or written in; a merge strategy git
// does not ship (git runs git-merge-NAME from PATH), in rebase-merge/strategy or a
// cherry-pick's sequencer/opts; and config.worktree, read when extensions.worktreeConfig is on,
// is judged as the config is.
TEST_P(T1SandboxGitAfterRun, AStoppedRebaseThatWouldRunACommandIsQuarantined) {
  const std::string fsm = marker_ + "-fsm.sh";
  Write(fsm, HookText(), 0755);
  auto attack =
      Sh("set -e; mk() { git init -q -b main $1 && for i in 1 2 3 4; do echo $i > $1/f && "
         "git -C $1 add f && git -C $1 commit -qm c$i; done; }\n"
         "side() { git -C $1 checkout -q -b side HEAD~2 && echo s > $1/f && git -C $1 commit -qam "
         "s; }\n"
         "mk rx && side rx && ! git -C rx rebase -q --exec " +
         fsm +
         " main >/dev/null 2>&1 && test -d rx/.git/rebase-merge\n"
         "mk cx && side cx && ! git -C cx cherry-pick main~1 main >/dev/null 2>&1 && "
         "printf 'x " +
         fsm +
         "\\n' >> cx/.git/sequencer/todo\n"
         "mk rs && side rs && ! git -C rs rebase -q main >/dev/null 2>&1 && "
         "echo pwn > rs/.git/rebase-merge/strategy\n"
         "mk vs && ! git -C vs revert --no-edit HEAD~2 HEAD~1 >/dev/null 2>&1 && "
         "printf '\\tstrategy = pwn\\n' >> vs/.git/sequencer/opts\n"
         "mk wf && git -C wf config extensions.worktreeConfig true && "
         "git -C wf config --worktree core.fsmonitor " +
         fsm + "\n");
  ASSERT_EQ(attack.status, 0) << attack.err;
  for (const char* repo : {"/rx", "/cx", "/rs", "/vs", "/wf"}) {
    EXPECT_FALSE(Exists(ws_ + repo + "/.git")) << repo << ": " << attack.err;
    EXPECT_NE(attack.err.find("quarantined " + ws_ + repo + "/.git"), std::string::npos)
        << repo << ": " << attack.err;
  }
  EXPECT_NE(attack.err.find("`exec` line"), std::string::npos) << attack.err;
  EXPECT_NE(attack.err.find("`x` line"), std::string::npos) << attack.err;
  EXPECT_NE(attack.err.find("'pwn'"), std::string::npos) << attack.err;
  EXPECT_NE(attack.err.find("options.strategy"), std::string::npos) << attack.err;
  EXPECT_NE(attack.err.find("config.worktree"), std::string::npos) << attack.err;
  for (const char* repo : {"/rx", "/cx"}) {
    Write(ws_ + repo + "/f", "3\n");
    Git(ws_ + repo, {"add", "f"});
  }
  Git(ws_ + "/rx", {"-c", "core.editor=true", "rebase", "--continue"});
  Git(ws_ + "/cx", {"-c", "core.editor=true", "cherry-pick", "--continue"});
  UseGitOnTheHost(ws_ + "/wf");
  EXPECT_FALSE(Exists(marker_)) << "git on the host ran a command a stopped rebase named";
}

// Review F5: a new git dir's data directories (objects/, refs/, logs/, lfs/) take any names, and
// the walk does not enter a `.git`: a whole repository could hide there — a `.git` under lfs/,
// or a directory of git dir shape in objects/ — and git run inside it on the host ran its
// config. Benign neighbour: a clone with packed objects and LFS-like objects is left alone.
TEST_P(T1SandboxGitAfterRun, ARepositoryHiddenInANewGitDirsDataIsQuarantined) {
  const std::string fsm = marker_ + "-fsm.sh";
  Write(fsm, HookText(), 0755);
  auto attack =
      Sh("set -e; git init -q h1 && mkdir -p h1/.git/lfs/x && git init -q h1/.git/lfs/x && "
         "git -C h1/.git/lfs/x config core.fsmonitor " +
         fsm +
         "\ngit init -q h2 && mkdir -p h2/.git/objects/y/objects h2/.git/objects/y/refs && "
         "printf 'ref: refs/heads/main\\n' > h2/.git/objects/y/HEAD && " +
         Config("h2/.git/objects/y") + "\n");
  ASSERT_EQ(attack.status, 0) << attack.err;
  for (const char* repo : {"/h1", "/h2"}) {
    EXPECT_FALSE(Exists(ws_ + repo + "/.git")) << repo << ": " << attack.err;
    EXPECT_NE(attack.err.find("quarantined " + ws_ + repo + "/.git"), std::string::npos)
        << repo << ": " << attack.err;
  }
  EXPECT_NE(attack.err.find("hidden in git's data"), std::string::npos) << attack.err;
  Git(ws_ + "/h1/.git/lfs/x", {"status"});
  Git(ws_ + "/h2/.git/objects/y", {"status"});
  EXPECT_FALSE(Exists(marker_)) << "git on the host ran the config of a repository hidden in a "
                                   "new git dir's data";

  // Benign: a clone, packed, with LFS's object store beside git's.
  auto benign = Sh(
      "set -e; git init -q b && echo a > b/f && git -C b add f && git -C b commit -qm a && "
      "git clone -q b c && git -C c gc -q && mkdir -p c/.git/lfs/objects/ab/cd c/.git/lfs/tmp && "
      "echo data > c/.git/lfs/objects/ab/cd/abcd0123 && git -C c log --oneline >/dev/null");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Quarantined(benign).empty()) << benign.err;
  EXPECT_TRUE(Exists(ws_ + "/c/.git/lfs/objects/ab/cd/abcd0123"));
  EXPECT_EQ(Git(ws_ + "/c", {"status", "--short"}).status, 0);
}

// A shell prefix that makes a repository `name` with one commit and leaves the shell in it.
std::string Repo(const std::string& name) {
  return "git init -q " + name + " && cd " + name +
         " && git config user.email a@b && git config user.name a && "
         "echo hi > README && git add README && git commit -qm one && ";
}

// Review s14: a new git dir's index and rerere's MERGE_RR name paths git writes. An index entry
// `../.git/hooks/pre-commit` (git checks no path when it reads an index) made `git restore .` on
// the host write a hook into the workspace's repository; a MERGE_RR line `ID.-1<TAB>../.git/config`
// made `git commit` write rr-cache's "resolution" there. Both now leave the git dir not closed;
// a rebase strategy `ort ` (git strips one newline only, then runs git-merge-'ort ') too.
// Benign neighbour: an index of version 4, one holding a resolved conflict's resolve-undo list,
// and rerere enabled with nothing pending are left alone.
TEST_P(T1SandboxGitAfterRun, ANewGitDirsIndexAndRerereNameNoPathOutside) {
  auto attack =
      Sh("set -e; (" + Repo("idx") +
         "blob=$(echo x | git hash-object -w --stdin) && "
         "git update-index --add --cacheinfo 100755,$blob,aa/aaaa/aaaaa/pre-commit && "
         "python3 -c \"import hashlib;d=open('.git/index','rb').read()[:-20];"
         "d=d.replace(b'aa/aaaa/aaaaa/pre-commit',b'../.git/hooks/pre-commit');"
         "open('.git/index','wb').write(d+hashlib.sha1(d).digest())\")\n(" +
         Repo("rr") + "printf 'abc.-1\\t../.git/config\\0' > .git/MERGE_RR)\n(" + Repo("st") +
         "mkdir .git/rebase-merge && printf 'ort \\n' > .git/rebase-merge/strategy && "
         "for f in head-name onto orig-head; do echo x > .git/rebase-merge/$f; done)\n");
  ASSERT_EQ(attack.status, 0) << attack.err;
  for (const char* repo : {"/idx", "/rr", "/st"}) {
    EXPECT_FALSE(Exists(ws_ + repo + "/.git")) << repo << ": " << attack.err;
    EXPECT_NE(attack.err.find("quarantined " + ws_ + repo + "/.git"), std::string::npos)
        << repo << ": " << attack.err;
  }
  EXPECT_NE(attack.err.find("outside its working tree"), std::string::npos) << attack.err;
  EXPECT_NE(attack.err.find("conflicted paths for rerere"), std::string::npos) << attack.err;

  auto benign =
      Sh("set -e; (" + Repo("v4") +
         "mkdir -p a/b && echo y > a/b/c && git add a && git commit -qm two && "
         "git update-index --index-version 4 && git status --short)\n(" +
         Repo("re") +
         "git config rerere.enabled true && git checkout -qb side && echo side > README && "
         "git commit -qam side && git checkout -q - && echo main > README && git commit -qam main "
         "&& (git merge -q side || true) && echo both > README && git add README && "
         "git commit -qm merged)\n");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Quarantined(benign).empty()) << benign.err;
  EXPECT_EQ(Git(ws_ + "/v4", {"status", "--short"}).status, 0);
  EXPECT_EQ(Git(ws_ + "/re", {"log", "--oneline"}).status, 0);
}

// Review s15b: files of a new git dir that host git takes as paths or programs. A linked
// worktree's commondir naming another directory (git took `innocent/`, whose config nothing
// judged, for the repository: `git worktree repair` then `git status` ran its fsmonitor), its
// gitdir naming a `.git` outside (repair overwrote it), a multi-pack-index naming a pack
// `../../.git/objects/pack/...` (`git multi-pack-index expire` unlinked the workspace's
// pack), a `foo://` remote (`git fetch` ran git-remote-foo from PATH), a MERGE_AUTOSTASH that
// is no object id, and an index hiding an end-of-index entry in a cache tree's bytes.
TEST_P(T1SandboxGitAfterRun, ANewGitDirsWorktreesPacksAndRemotesNameNothingOutside) {
  auto attack = Sh("set -e; (" + Repo("wtc") +
                   "git worktree add -q ../wtc-wt && echo ../../../../innocent > "
                   ".git/worktrees/wtc-wt/commondir)"
                   "\n(" +
                   Repo("wtg") + "git worktree add -q ../wtg-wt && echo /tmp/elsewhere/.git > " +
                   ".git/worktrees/wtg-wt/gitdir)\n(" + Repo("midx") +
                   "echo MIDX > .git/objects/pack/multi-pack-index)\n(" + Repo("rem") +
                   "git remote add origin foo://attacker/x)\n(" + Repo("mas") +
                   "echo --index > .git/MERGE_AUTOSTASH)\n(" + Repo("eoie") +
                   "python3 -c \"import hashlib;d=open('.git/index','rb').read()[:-20];"
                   "t=b'EOIE'+(24).to_bytes(4,'big')+(12).to_bytes(4,'big')+bytes(20);"
                   "d=d+b'TREE'+len(t).to_bytes(4,'big')+t;"
                   "open('.git/index','wb').write(d+hashlib.sha1(d).digest())\")\n");
  ASSERT_EQ(attack.status, 0) << attack.err;
  for (const char* repo : {"/wtc", "/wtg", "/midx", "/rem", "/mas", "/eoie"}) {
    EXPECT_FALSE(Exists(ws_ + repo + "/.git")) << repo << ": " << attack.err;
    EXPECT_NE(attack.err.find("quarantined " + ws_ + repo + "/.git"), std::string::npos)
        << repo << ": " << attack.err;
  }
  EXPECT_NE(attack.err.find("another common dir"), std::string::npos) << attack.err;
  EXPECT_NE(attack.err.find("git-remote-foo"), std::string::npos) << attack.err;

  auto benign = Sh("set -e; (" + Repo("wt") + "git worktree add -q ../wt-wt && git gc -q && " +
                   "git remote add up https://example.com/x.git && git status --short)\n");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Quarantined(benign).empty()) << benign.err;
  EXPECT_EQ(Git(ws_ + "/wt-wt", {"status", "--short"}).status, 0);
}

INSTANTIATE_TEST_SUITE_P(Callers, T1SandboxGitAfterRun, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t1_sandbox_git_after_run_test
}  // namespace anvil::testing
