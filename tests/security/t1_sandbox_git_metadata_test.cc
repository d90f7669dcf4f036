// T1 for the command sandbox, git metadata: a command under workspace-write must not plant
// anything that git later executes or follows on the host — in a repository nested anywhere in
// the workspace (hooks, config), through a submodule's `.git` file, through a path a
// repository's config (or what it includes, or the user's own config) names, nor in a
// repository it creates. Each attack is followed by the real git (/usr/bin/git) run outside the
// sandbox, as the caller: a planted hook or fsmonitor would write a marker file outside the
// workspace (which the sandbox itself cannot write), so the marker's absence shows that git
// ran nothing planted. Each sits next to its benign neighbour: the nested repository's working
// tree stays writable, git status/diff/log work inside, a plain `git init` is left alone.
#include <sys/stat.h>
#include <unistd.h>

#include <random>
#include <regex>
#include <string>
#include <vector>

#include "git_sandbox_fixture.h"
#include "policy/git_config.h"

namespace anvil::testing {
namespace t1_sandbox_git_metadata_test {
namespace {

class T1SandboxGitMetadata : public GitSandboxTest {};

TEST_P(T1SandboxGitMetadata, NestedRepositoryMetadataIsReadOnlyItsWorkingTreeIsNot) {
  const std::string lib = ws_ + "/vendor/lib";
  ASSERT_EQ(Shell("mkdir -p " + lib), 0);
  caller_.Give(ws_);
  GitOk(lib, {"init", "-q"});
  const std::string config_before = ReadFile(lib + "/.git/config");

  auto benign =
      Sh("echo 'int x;' > vendor/lib/src.c && git -C vendor/lib status --short && "
         "echo more >> README");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(ReadFile(lib + "/src.c"), "int x;\n");
  EXPECT_NE(benign.out.find("src.c"), std::string::npos) << benign.out;

  auto attack = Sh(Plant("vendor/lib/.git/hooks/pre-commit") + "; " +
                   "printf '[core]\\n\\tfsmonitor = " + marker_ +
                   "\\n' >> vendor/lib/.git/config; "
                   "git -C vendor/lib config core.hooksPath /tmp; "
                   "mv vendor/lib/.git vendor/lib/.git-old; rm -rf vendor/lib/.git; "
                   "mkdir -p vendor/lib/.GIT 2>/dev/null; "
                   // A new repository between the top and the nested one: quarantined after.
                   "mkdir -p vendor/.git/hooks vendor/.git/objects vendor/.git/refs && "
                   "echo 'ref: refs/heads/main' > vendor/.git/HEAD && " +
                   Plant("vendor/.git/hooks/pre-commit") + "; true");
  EXPECT_FALSE(Exists(lib + "/.git/hooks/pre-commit"));
  EXPECT_FALSE(Exists(ws_ + "/vendor/.git")) << attack.err;
  EXPECT_TRUE(Exists(ws_ + "/vendor/.git.anvil-quarantine/hooks/pre-commit")) << attack.err;
  EXPECT_EQ(ReadFile(lib + "/.git/config"), config_before);
  EXPECT_FALSE(Exists(lib + "/.git-old"));
  UseGitOnTheHost(lib);
  UseGitOnTheHost(ws_ + "/vendor");
  EXPECT_FALSE(Exists(marker_)) << "git on the host ran code planted in a nested repository";
}

TEST_P(T1SandboxGitMetadata, RenamingANestedRepositoryAwayToMakeANewOneIsQuarantined) {
  const std::string lib = ws_ + "/vendor/lib";
  ASSERT_EQ(Shell("mkdir -p " + lib), 0);
  caller_.Give(ws_);
  GitOk(lib, {"init", "-q"});
  // The parent of a protected .git can be renamed (only the mount point itself cannot): the
  // command puts a fresh repository with a hook where the old one was.
  auto attack =
      Sh("mv vendor/lib vendor/lib.old && mkdir vendor/lib && git init -q vendor/lib && " +
         Plant("vendor/lib/.git/hooks/pre-commit"));
  EXPECT_EQ(attack.status, 0) << attack.err;
  EXPECT_NE(attack.err.find("quarantined " + lib + "/.git"), std::string::npos) << attack.err;
  EXPECT_NE(attack.err.find("to restore"), std::string::npos);
  EXPECT_EQ(Quarantined(attack).size(), 1u) << attack.err;
  EXPECT_FALSE(Exists(lib + "/.git"));
  EXPECT_TRUE(Exists(lib + "/.git.anvil-quarantine/hooks/pre-commit"));
  // The original, moved along by the rename, is the user's and stays a repository.
  EXPECT_TRUE(Exists(ws_ + "/vendor/lib.old/.git/HEAD"));
  UseGitOnTheHost(lib);
  EXPECT_FALSE(Exists(marker_)) << "git on the host ran a hook of a repository made in the run";
}

TEST_P(T1SandboxGitMetadata, SubmoduleGitFileCannotBeRepointedAndStatusRunsNothingPlanted) {
  const std::string src = outside_ / "subsrc";
  ASSERT_EQ(mkdir(src.c_str(), 0755), 0);
  caller_.Give(src);
  GitOk(src, {"init", "-q"});
  Write(src + "/lib.c", "int lib;\n");
  GitOk(src, {"add", "lib.c"});
  GitOk(src, {"commit", "-q", "-m", "lib"});
  GitOk(ws_, {"-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "sub"});
  GitOk(ws_, {"commit", "-q", "-m", "submodule"});
  const std::string pointer = ReadFile(ws_ + "/sub/.git");
  ASSERT_EQ(pointer.rfind("gitdir: ", 0), 0u) << pointer;

  auto benign = Sh("echo 'int more;' >> sub/lib.c && git status --short");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(ReadFile(ws_ + "/sub/lib.c"), "int lib;\nint more;\n");

  // A planted git dir with an fsmonitor; the submodule's .git pointed at it, in place.
  const std::string evil =
      "mkdir -p evil/objects evil/refs && echo 'ref: refs/heads/main' > "
      "evil/HEAD && printf '[core]\\n\\tfsmonitor = " +
      marker_ + "-fsm.sh\\n' > evil/config; ";
  auto attack = Sh(evil +
                   "printf 'gitdir: ../evil\\n' > sub/.git; "
                   "rm -f sub/.git; mv sub/.git sub/.git.x; true");
  EXPECT_EQ(ReadFile(ws_ + "/sub/.git"), pointer);
  Write(marker_ + "-fsm.sh", HookText(), 0755);  // what the planted fsmonitor would run
  UseGitOnTheHost(ws_);
  EXPECT_FALSE(Exists(marker_)) << "git status in the superproject ran a planted fsmonitor";

  // The planted git dir itself is a repository that runs code: moved aside after the run.
  EXPECT_FALSE(Exists(ws_ + "/evil")) << attack.err;

  // The same by renaming the submodule's directory away and making a new one: repaired after.
  auto renamed = Sh("mv sub sub.moved && mkdir sub && printf 'gitdir: ../evil2\\n' > sub/.git && " +
                    std::regex_replace(evil, std::regex("evil"), "evil2"));
  EXPECT_EQ(renamed.status, 0) << renamed.err;
  EXPECT_FALSE(Exists(ws_ + "/sub/.git")) << renamed.err;
  EXPECT_TRUE(Exists(ws_ + "/sub/.git.anvil-quarantine")) << renamed.err;
  EXPECT_FALSE(Exists(ws_ + "/evil2")) << "the planted git dir is not disarmed";
  UseGitOnTheHost(ws_);
  UseGitOnTheHost(ws_ + "/sub");
  EXPECT_FALSE(Exists(marker_)) << "git ran the fsmonitor of a gitdir planted during the run";
}

TEST_P(T1SandboxGitMetadata, PathsTheConfigNamesInTheWorkspaceAreReadOnly) {
  Write(ws_ + "/team.gitconfig", "[user]\n\tname = team\n");
  ASSERT_EQ(Shell("mkdir -p " + ws_ + "/.husky " + ws_ + "/tools"), 0);
  Write(ws_ + "/.husky/pre-commit", "#!/bin/sh\nexit 0\n", 0755);
  Write(ws_ + "/fsm.sh", "#!/bin/sh\nexit 0\n", 0755);
  Write(ws_ + "/tools/pdf2txt", "#!/bin/sh\ncat \"$1\"\n", 0755);
  Write(ws_ + "/tools/other.sh", "#!/bin/sh\n", 0755);
  caller_.Give(ws_);
  GitOk(ws_, {"config", "include.path", "../team.gitconfig"});
  GitOk(ws_, {"config", "core.hooksPath", ".husky"});
  GitOk(ws_, {"config", "core.fsmonitor", "./fsm.sh"});
  GitOk(ws_, {"config", "diff.pdf.textconv", "tools/pdf2txt"});
  Write(ws_ + "/.gitattributes", "*.pdf diff=pdf\n");
  Write(ws_ + "/doc.pdf", "v1\n");
  GitOk(ws_, {"add", ".gitattributes", "doc.pdf"});
  GitOk(ws_, {"commit", "-q", "-m", "docs"});
  Write(ws_ + "/doc.pdf", "v2\n");

  // Benign: the rest of the workspace, tools/ included, stays writable; git works inside.
  auto benign =
      Sh("echo x >> tools/other.sh && echo y > tools/new.sh && git status --short && "
         "git diff --stat");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Exists(ws_ + "/tools/new.sh"));

  auto attack =
      Sh("printf '[core]\\n\\tpager = " + marker_ + "\\n' >> team.gitconfig; " +
         Plant(".husky/pre-commit") + "; " + Plant(".husky/post-commit") + "; " + Plant("fsm.sh") +
         "; " + Plant("tools/pdf2txt") + "; rm -rf .husky; mv fsm.sh fsm.old; true");
  EXPECT_EQ(ReadFile(ws_ + "/team.gitconfig"), "[user]\n\tname = team\n");
  EXPECT_EQ(ReadFile(ws_ + "/.husky/pre-commit"), "#!/bin/sh\nexit 0\n");
  EXPECT_FALSE(Exists(ws_ + "/.husky/post-commit"));
  EXPECT_EQ(ReadFile(ws_ + "/fsm.sh"), "#!/bin/sh\nexit 0\n");
  EXPECT_EQ(ReadFile(ws_ + "/tools/pdf2txt"), "#!/bin/sh\ncat \"$1\"\n");
  UseGitOnTheHost(ws_);
  Git(ws_, {"-c", "core.pager=cat", "log", "-p", "-1"});
  EXPECT_FALSE(Exists(marker_)) << "git ran a config-named path the command changed";
}

// What git runs as a hook is protected where it really lies: a hook that is a symlink into the
// working tree (the usual `ln -s ../../scripts/pre-commit .git/hooks/`), a hooks directory that
// is a symlink, a link inside core.hooksPath, a dangling hook link, and a hook hard-linked to a
// working-tree file. The rest of scripts/ stays writable.
TEST_P(T1SandboxGitMetadata, HooksThatLeadIntoTheWorkingTreeAreReadOnlyThere) {
  const std::string hook = "#!/bin/sh\nexit 0\n";
  for (const char* d : {"/scripts", "/githooks", "/sub"}) {
    ASSERT_EQ(mkdir((ws_ + d).c_str(), 0755), 0);
    caller_.Give(ws_ + d);
  }
  Write(ws_ + "/scripts/pre-commit", hook, 0755);
  Write(ws_ + "/scripts/post-commit", hook, 0755);
  Write(ws_ + "/scripts/other.sh", hook, 0755);
  Write(ws_ + "/githooks/pre-commit", hook, 0755);
  ASSERT_EQ(symlink("../../scripts/pre-commit", (ws_ + "/.git/hooks/pre-commit").c_str()), 0);
  ASSERT_EQ(symlink("../../scripts/post-checkout", (ws_ + "/.git/hooks/post-checkout").c_str()), 0);
  ASSERT_EQ(link((ws_ + "/scripts/post-commit").c_str(), (ws_ + "/.git/hooks/post-commit").c_str()),
            0);
  // A second repository whose hooks directory is a symlink into its working tree.
  GitOk(ws_ + "/sub", {"init", "-q"});
  ASSERT_EQ(Shell("rm -rf " + ws_ + "/sub/.git/hooks"), 0);
  ASSERT_EQ(mkdir((ws_ + "/sub/hooks").c_str(), 0755), 0);
  caller_.Give(ws_ + "/sub/hooks");
  Write(ws_ + "/sub/hooks/pre-commit", hook, 0755);
  ASSERT_EQ(symlink("../hooks", (ws_ + "/sub/.git/hooks").c_str()), 0);
  caller_.Give(ws_ + "/.git/hooks/pre-commit");
  caller_.Give(ws_ + "/.git/hooks/post-checkout");
  caller_.Give(ws_ + "/sub/.git/hooks");

  // Benign: the rest of scripts/ and sub/ is the command's to change.
  auto benign = Sh("echo '# more' >> scripts/other.sh && echo x > sub/file && echo y > scripts/n");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Exists(ws_ + "/scripts/n"));

  auto attack = Sh(Plant("scripts/pre-commit") + "; " + Plant("scripts/post-commit") + "; " +
                   Plant("scripts/post-checkout") + "; " + Plant("sub/hooks/pre-commit") + "; " +
                   Plant("sub/hooks/post-commit") +
                   "; rm -f scripts/pre-commit; mv scripts scripts.old; mv sub/hooks sub/h.old;"
                   " true");
  EXPECT_EQ(ReadFile(ws_ + "/scripts/pre-commit"), hook);
  EXPECT_EQ(ReadFile(ws_ + "/scripts/post-commit"), hook);
  EXPECT_FALSE(Exists(ws_ + "/scripts/post-checkout"));
  EXPECT_EQ(ReadFile(ws_ + "/sub/hooks/pre-commit"), hook);
  EXPECT_FALSE(Exists(ws_ + "/sub/hooks/post-commit"));
  EXPECT_FALSE(Exists(ws_ + "/scripts.old"));
  EXPECT_TRUE(Quarantined(attack).empty()) << attack.err;
  UseGitOnTheHost(ws_);
  Git(ws_, {"checkout", "-q", "-B", "other"});
  UseGitOnTheHost(ws_ + "/sub");
  EXPECT_FALSE(Exists(marker_)) << "git ran a hook the command rewrote through a link";
}

// A linked worktree as the workspace (the way agents work in parallel): its git dir and the
// common dir lie in the main repository, outside the workspace. Shown read-only, git's read
// commands work and a write there is refused, naming --writable-git; with --writable-git a
// commit works. Without --writable-git the main repository's hooks stay out of reach.
TEST_P(T1SandboxGitMetadata, ALinkedWorktreeAsTheWorkspaceCanBeReadAndWithWritableGitCommitted) {
  const std::string wt = outside_ / "wt";
  GitOk(ws_, {"worktree", "add", "-q", wt, "-b", "feat"});
  caller_.Give(wt);
  auto read = SandboxSh(wt,
                        "git status --short && git log --oneline | head -1 && echo x > f && "
                        "git diff --stat && echo read-ok",
                        {"--json"}, Env());
  EXPECT_EQ(read.status, 0) << read.err;
  EXPECT_NE(read.out.find("first"), std::string::npos) << read.out;
  EXPECT_NE(read.out.find("read-ok"), std::string::npos) << read.out;
  auto add = SandboxSh(wt, Plant(ws_ + "/.git/hooks/pre-commit") + "; git add f", {}, Env());
  EXPECT_NE(add.status, 0);
  EXPECT_NE(add.err.find("--writable-git"), std::string::npos) << add.err;
  EXPECT_FALSE(Exists(ws_ + "/.git/hooks/pre-commit"));
  auto commit = SandboxSh(wt, "git add f && git commit -qm 'in the worktree' && echo committed",
                          {"--writable-git"}, Env());
  EXPECT_EQ(commit.status, 0) << commit.err;
  EXPECT_NE(commit.out.find("committed"), std::string::npos) << commit.out << commit.err;
  auto log = Git(wt, {"log", "--oneline", "-1"});
  EXPECT_NE(log.out.find("in the worktree"), std::string::npos) << log.out;
  // A .git file that only claims a git dir (planted in an unpacked project, or rewritten by an
  // earlier --writable-git run) shows nothing: not another repository, not with the flag.
  const std::string planted = outside_ / "planted";
  ASSERT_EQ(mkdir(planted.c_str(), 0755), 0);
  Write(planted + "/.git", "gitdir: " + ws_ + "/.git/worktrees/wt\n");
  caller_.Give(planted);
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{}, std::vector<std::string>{"--writable-git"}}) {
    auto peek = SandboxSh(planted,
                          "cat " + ShellQuote(ws_ + "/.git/config") + " || echo unseen; " +
                              Plant(ws_ + "/.git/hooks/post-commit") + " || true",
                          flags, Env());
    EXPECT_NE(peek.out.find("unseen"), std::string::npos) << peek.out << peek.err;
  }
  EXPECT_FALSE(Exists(ws_ + "/.git/hooks/post-commit"));
  UseGitOnTheHost(ws_);
  EXPECT_FALSE(Exists(marker_));
}

TEST_P(T1SandboxGitMetadata, ConfigNamedPathsThatDoNotExistCannotBeCreated) {
  GitOk(ws_, {"config", "core.hooksPath", ".husky"});
  GitOk(ws_, {"config", "core.fsmonitor", "./fsm.sh"});
  GitOk(ws_, {"config", "include.path", "../local.gitconfig"});

  // Inside, they are there as empty, read-only placeholders.
  auto seen = Sh("ls -A; test -d .husky && test -f fsm.sh && test ! -s fsm.sh && echo placeheld");
  EXPECT_EQ(seen.status, 0) << seen.err;
  EXPECT_NE(seen.out.find("placeheld"), std::string::npos) << seen.out;

  auto attack = Sh("mkdir -p .husky; " + Plant(".husky/pre-commit") + "; " + Plant("fsm.sh") +
                   "; printf '[core]\\n\\tfsmonitor = " + marker_ +
                   "\\n' > local.gitconfig; rm -rf .husky fsm.sh; true");
  // Removed after the run: nothing of them is left on the host.
  EXPECT_FALSE(Exists(ws_ + "/.husky"));
  EXPECT_FALSE(Exists(ws_ + "/fsm.sh"));
  EXPECT_FALSE(Exists(ws_ + "/local.gitconfig"));
  UseGitOnTheHost(ws_);
  EXPECT_FALSE(Exists(marker_)) << "a config-named path that did not exist was created";

  // Whose parent does not exist either: the directories on the way are made for the run
  // (writable, but they cannot be renamed away), the named path is the placeholder.
  GitOk(ws_, {"config", "core.hooksPath", "tools/git/hooks"});
  auto deep = Sh("mkdir -p tools/git/hooks; " + Plant("tools/git/hooks/pre-commit") +
                 "; mv tools tools.old; mv tools/git tools/git.old; "
                 "echo kept > tools/notes.txt && echo wrote");
  EXPECT_EQ(deep.status, 0) << deep.err;
  EXPECT_NE(deep.out.find("wrote"), std::string::npos) << deep.err;
  EXPECT_FALSE(Exists(ws_ + "/tools/git/hooks/pre-commit"));
  EXPECT_FALSE(Exists(ws_ + "/tools.old"));
  EXPECT_FALSE(Exists(ws_ + "/tools/git")) << "an empty directory on the way stayed behind";
  EXPECT_EQ(ReadFile(ws_ + "/tools/notes.txt"), "kept\n");
  EXPECT_TRUE(Quarantined(deep).empty()) << deep.err;
  UseGitOnTheHost(ws_);
  EXPECT_FALSE(Exists(marker_)) << "git ran a hook in a hooksPath made during the run";
}

// The user's own config in a workspace that holds it (the sandbox run in $HOME), where
// ~/.config/git does not exist: git on the host reads ~/.config/git/config as soon as it is
// there. The missing directory is made for the run and the config is an empty, read-only
// placeholder in it; the rest of ~/.config stays writable.
TEST_P(T1SandboxGitMetadata, TheUsersConfigWhoseDirectoryIsMissingCannotBeMade) {
  const std::string config = home_ + "/.config/git/config";
  ASSERT_FALSE(Exists(home_ + "/.config/git"));
  Write(marker_ + "-fsm.sh", HookText(), 0755);
  const std::string evil = "printf '[core]\\n\\tfsmonitor = " + marker_ + "-fsm.sh\\n'";

  auto attack =
      SandboxSh(home_,
                "mkdir -p .config/git && " + evil +
                    " > .config/git/config; "
                    "mv .config/git .config/git.old; mv .config .config.old; "
                    "rm -rf .config/git; "
                    "mkdir -p .config.new/git && " +
                    evil + " > .config.new/git/config && mv .config.new/git .config/git; true",
                {"--json"}, Env());
  EXPECT_EQ(attack.status, 0) << attack.err;
  EXPECT_FALSE(Exists(config) && ReadFile(config).find("fsmonitor") != std::string::npos)
      << attack.err;
  UseGitOnTheHost(ws_);
  EXPECT_FALSE(Exists(marker_)) << "git ran the fsmonitor of a user config made during the run";

  // Benign: the rest of the home workspace, ~/.config included, stays writable; git works.
  GitOk(home_, {"init", "-q", "proj"});
  auto benign = SandboxSh(home_,
                          "mkdir -p .config/myapp && echo set > .config/myapp/settings && "
                          "echo '*.o' > .config/git/ignore && echo notes > notes.txt && "
                          "echo x > proj/x.c && git -C proj status --short",
                          {"--json"}, Env());
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(ReadFile(home_ + "/.config/myapp/settings"), "set\n");
  EXPECT_EQ(ReadFile(home_ + "/.config/git/ignore"), "*.o\n");
  EXPECT_EQ(ReadFile(home_ + "/notes.txt"), "notes\n");
  EXPECT_FALSE(Exists(config));
  EXPECT_TRUE(Quarantined(benign).empty()) << benign.err;
}

// An include whose directory does not exist (`include.path = ../conf.d/extra.inc`): the same,
// in an ordinary workspace.
TEST_P(T1SandboxGitMetadata, AnIncludeWhoseDirectoryIsMissingCannotBeMade) {
  GitOk(ws_, {"config", "include.path", "../conf.d/extra.inc"});
  Write(marker_ + "-fsm.sh", HookText(), 0755);
  const std::string evil =
      "printf '[core]\\n\\tfsmonitor = " + marker_ + "-fsm.sh\\n' > conf.d/extra.inc";

  // As it was reported, then past a failing mkdir, then by renaming the directory away.
  for (const std::string& script :
       {"mkdir conf.d && " + evil, "mkdir -p conf.d; " + evil + "; true",
        "mv conf.d conf.old; rm -rf conf.d; mkdir -p conf.d; " + evil + "; true"}) {
    auto attack = Sh(script);
    EXPECT_FALSE(Exists(ws_ + "/conf.d/extra.inc")) << script << ": " << attack.err;
    UseGitOnTheHost(ws_);
    EXPECT_FALSE(Exists(marker_)) << script << ": git ran an include made during the run";
  }

  // Benign: the directory made for the run is writable; what the command puts there stays.
  auto benign = Sh("echo notes > conf.d/README && echo more >> README && git status --short");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(ReadFile(ws_ + "/conf.d/README"), "notes\n");
  EXPECT_EQ(ReadFile(ws_ + "/README"), "hello\nmore\n");
  EXPECT_TRUE(Quarantined(benign).empty()) << benign.err;
  UseGitOnTheHost(ws_);
  EXPECT_FALSE(Exists(marker_));
}

// What no mount can keep in place during the run — a symlink on the way to a config file — is
// caught after it: every config file git reads is compared with what it was at the start,
// existing or not, and one the command made or swapped in is moved aside and reported.
TEST_P(T1SandboxGitMetadata, AConfigFileMadePastTheMountsIsQuarantinedAfterTheRun) {
  Write(marker_ + "-fsm.sh", HookText(), 0755);
  // An include whose directory is a symlink in the workspace.
  ASSERT_EQ(Shell("mkdir -p " + ws_ + "/real.d && ln -s real.d " + ws_ + "/conf.d"), 0);
  caller_.Give(ws_);
  GitOk(ws_, {"config", "include.path", "../conf.d/extra.inc"});
  auto attack = Sh("rm conf.d && mkdir conf.d && printf '[core]\\n\\tfsmonitor = " + marker_ +
                   "-fsm.sh\\n' > conf.d/extra.inc");
  EXPECT_EQ(attack.status, 0) << attack.err;
  EXPECT_NE(attack.err.find("quarantined " + ws_ + "/conf.d/extra.inc"), std::string::npos)
      << attack.err;
  auto q = Quarantined(attack);
  EXPECT_EQ(q.size(), 1u) << attack.err;
  if (q.size() == 1) {
    EXPECT_EQ(q[0]["path"], ws_ + "/conf.d/extra.inc");
    EXPECT_NE(q[0]["reason"].get<std::string>().find("include in"), std::string::npos);
  }
  EXPECT_FALSE(Exists(ws_ + "/conf.d/extra.inc"));
  UseGitOnTheHost(ws_);
  EXPECT_FALSE(Exists(marker_)) << "git ran an include made past the mounts";

  // The user's config in a home workspace, ~/.gitconfig a symlink into a dotfiles directory:
  // the link replaced by a file of the command's. The host-autorun shield holds ~/.gitconfig (a
  // credential location) before the run, so the replacement is refused up front and nothing is
  // left to quarantine.
  ASSERT_EQ(Shell("mkdir -p " + home_ + "/dotfiles && printf '[user]\\n\\tname = u\\n' > " + home_ +
                  "/dotfiles/gitconfig && ln -s dotfiles/gitconfig " + home_ + "/.gitconfig"),
            0);
  caller_.Give(home_);
  auto home = SandboxSh(
      home_,
      "rm .gitconfig && printf '[core]\\n\\tfsmonitor = " + marker_ + "-fsm.sh\\n' > .gitconfig",
      {"--json"}, Env());
  EXPECT_NE(home.status, 0) << home.err;
  EXPECT_TRUE(Quarantined(home).empty()) << home.err;
  EXPECT_EQ(ReadFile(home_ + "/dotfiles/gitconfig"), "[user]\n\tname = u\n");
  UseGitOnTheHost(ws_);
  EXPECT_FALSE(Exists(marker_)) << "git ran a user config made past the mounts";

  // Benign: an existing include the command does not touch, nothing moved.
  auto benign = Sh("echo more >> README && ls conf.d");
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Quarantined(benign).empty()) << benign.err;
}

TEST_P(T1SandboxGitMetadata, TheUsersOwnGitConfigCountsToo) {
  // ~/.gitconfig names a hooks directory relative to every repository.
  Write(home_ + "/.gitconfig", "[core]\n\thooksPath = .githooks\n");
  ASSERT_EQ(Shell("mkdir -p " + ws_ + "/.githooks " + ws_ + "/vendor/lib"), 0);
  Write(ws_ + "/.githooks/pre-commit", "#!/bin/sh\nexit 0\n", 0755);
  caller_.Give(ws_);
  GitOk(ws_ + "/vendor/lib", {"init", "-q"});

  auto attack = Sh(Plant(".githooks/pre-commit") + "; mkdir -p vendor/lib/.githooks; " +
                   Plant("vendor/lib/.githooks/pre-commit") + "; true");
  EXPECT_EQ(ReadFile(ws_ + "/.githooks/pre-commit"), "#!/bin/sh\nexit 0\n");
  EXPECT_FALSE(Exists(ws_ + "/vendor/lib/.githooks"));
  UseGitOnTheHost(ws_);
  UseGitOnTheHost(ws_ + "/vendor/lib");
  EXPECT_FALSE(Exists(marker_)) << "git ran a hook named by the user's own config";
}

TEST_P(T1SandboxGitMetadata, TheRepositoryAboveTheWorkspaceCountsToo) {
  // A monorepo keeps its hooks in tools/hooks, and the sandbox runs in tools/ only: the
  // workspace has no .git, git in it uses the monorepo, whose config names tools/hooks.
  const std::string mono = outside_ / "mono";
  ASSERT_EQ(Shell("mkdir -p " + mono + "/tools/hooks " + mono + "/tools/src"), 0);
  Write(mono + "/tools/hooks/pre-commit", "#!/bin/sh\nexit 0\n", 0755);
  caller_.Give(mono);
  GitOk(mono, {"init", "-q"});
  GitOk(mono, {"config", "core.hooksPath", "tools/hooks"});
  GitOk(mono, {"config", "core.fsmonitor", "tools/fsm.sh"});
  auto run = SandboxSh(mono + "/tools",
                       "echo 'int x;' > src/x.c && " + Plant("hooks/pre-commit") + "; " +
                           Plant("hooks/post-commit") + "; " + Plant("fsm.sh") + "; true",
                       {"--json"}, Env());
  EXPECT_EQ(ReadFile(mono + "/tools/src/x.c"), "int x;\n") << run.err;
  EXPECT_EQ(ReadFile(mono + "/tools/hooks/pre-commit"), "#!/bin/sh\nexit 0\n");
  EXPECT_FALSE(Exists(mono + "/tools/hooks/post-commit"));
  EXPECT_FALSE(Exists(mono + "/tools/fsm.sh"));
  UseGitOnTheHost(mono);
  EXPECT_FALSE(Exists(marker_)) << "git ran a hook the enclosing repository's config names";
}

TEST_P(T1SandboxGitMetadata, ANewRepositoryThatRunsCodeIsQuarantinedAPlainInitIsLeftAlone) {
  auto run =
      Sh("git init -q plain && echo code > plain/main.c && "
         "git init -q hooked && " +
         Plant("hooked/.git/hooks/pre-commit") +
         " && git init -q configured && git -C configured config core.fsmonitor " + marker_ +
         "-fsm.sh && git init -q --bare bare.git && " + Plant("bare.git/hooks/pre-receive") +
         "; true");
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(Exists(ws_ + "/plain/.git/HEAD")) << "a plain git init was touched: " << run.err;
  EXPECT_TRUE(Exists(ws_ + "/plain/main.c"));
  for (const char* moved : {"/hooked/.git", "/configured/.git", "/bare.git"}) {
    EXPECT_FALSE(Exists(ws_ + moved)) << moved << ": " << run.err;
    EXPECT_TRUE(Exists(ws_ + moved + ".anvil-quarantine")) << moved;
    EXPECT_NE(run.err.find(std::string("quarantined ") + ws_ + moved), std::string::npos)
        << run.err;
  }
  auto q = Quarantined(run);
  ASSERT_EQ(q.size(), 3u) << run.err;
  for (const auto& item : q) {
    EXPECT_TRUE(item.contains("restore"));
    EXPECT_TRUE(item.contains("reason"));
  }
  Write(marker_ + "-fsm.sh", HookText(), 0755);
  UseGitOnTheHost(ws_ + "/hooked");
  UseGitOnTheHost(ws_ + "/configured");
  Git(ws_, {"push", "-q", ws_ + "/bare.git", "HEAD:refs/heads/x"});
  EXPECT_FALSE(Exists(marker_)) << "git ran code of a repository the command created";

  // The restore command printed puts it back as it was.
  const std::string restore = q[0]["restore"];
  ASSERT_EQ(Shell(restore), 0) << restore;
  EXPECT_TRUE(Exists(q[0]["path"].get<std::string>() + "/HEAD"));
}

TEST_P(T1SandboxGitMetadata, ANewGitFileIntoTheProtectedRepositoryIsQuarantined) {
  // The top repository's hooksPath is relative: a .git file in src/ pointing at the top's git
  // dir makes src/.husky its hooks for whoever runs git in src/.
  ASSERT_EQ(Shell("mkdir -p " + ws_ + "/.husky"), 0);
  caller_.Give(ws_);
  GitOk(ws_, {"config", "core.hooksPath", ".husky"});
  auto run = Sh("mkdir -p src/.husky && printf 'gitdir: ../.git\\n' > src/.git && " +
                Plant("src/.husky/pre-commit"));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_FALSE(Exists(ws_ + "/src/.git")) << run.err;
  UseGitOnTheHost(ws_ + "/src");
  EXPECT_FALSE(Exists(marker_)) << "git ran a hook through a .git file made during the run";
}

TEST_P(T1SandboxGitMetadata, RealGitCommandsWorkInsideTheSandbox) {
  Write(ws_ + "/a.c", "int a;\n");
  GitOk(ws_, {"add", "a.c"});
  GitOk(ws_, {"commit", "-q", "-m", "a"});
  ASSERT_EQ(Shell("mkdir -p " + ws_ + "/vendor/lib"), 0);
  caller_.Give(ws_);
  GitOk(ws_ + "/vendor/lib", {"init", "-q"});
  Write(ws_ + "/a.c", "int a, b;\n");
  auto run =
      Sh("git status --short && git diff && git log --oneline && git show --stat HEAD && "
         "git -C vendor/lib status --short && git rev-parse --show-toplevel");
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("M a.c"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("+int a, b;"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(" a\n"), std::string::npos) << run.out;
  EXPECT_TRUE(Quarantined(run).empty());
  auto report = JsonReport(run);
  ASSERT_FALSE(report.is_discarded()) << run.err;
  EXPECT_EQ(report["git"]["repositories"], 2);
  // What cannot work by design: git writing the protected metadata says so.
  auto commit = Sh("git commit -q -am b");
  EXPECT_NE(commit.status, 0);
}

TEST_P(T1SandboxGitMetadata, PastAScanBoundTheSandboxDoesNotStart) {
  ASSERT_EQ(Shell("mkdir -p " + ws_ + "/a/b/c/d/e && for i in $(seq 1 100); do : > " + ws_ +
                  "/f$i; done"),
            0);
  caller_.Give(ws_);
  GitOk(ws_ + "/a", {"init", "-q"});  // two repositories: two read-only paths
  struct Case {
    std::string flag, message;
  } cases[] = {{"entries=50", "'entries' bound is 50"},
               {"depth=3", "'depth' bound is 3"},
               {"paths=1", "'paths' bound is 1"}};
  for (const auto& c : cases) {
    auto r = Sh("echo ran > ran.txt", {"--git-scan-limit", c.flag});
    EXPECT_EQ(r.status, 125) << c.flag;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--git-scan-limit"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--writable-git"), std::string::npos) << r.err;
    EXPECT_FALSE(Exists(ws_ + "/ran.txt")) << c.flag << ": the command ran";
  }
  // Benign: within the bounds, or raised, or without the protection.
  EXPECT_EQ(Sh("true", {"--git-scan-limit", "entries=1000"}).status, 0);
  auto writable = Sh("echo ran > ran.txt", {"--git-scan-limit", "entries=1", "--writable-git"});
  EXPECT_EQ(writable.status, 0) << writable.err;
  EXPECT_TRUE(Exists(ws_ + "/ran.txt"));
  EXPECT_EQ(Sh("true", {"--git-scan-limit", "bogus=1"}).status, 125);
}

TEST_P(T1SandboxGitMetadata, WritableGitLeavesEveryRepositoryWritableAndUnchecked) {
  ASSERT_EQ(Shell("mkdir -p " + ws_ + "/vendor/lib"), 0);
  caller_.Give(ws_);
  GitOk(ws_ + "/vendor/lib", {"init", "-q"});
  auto run =
      Sh("printf '#!/bin/sh\\n' > vendor/lib/.git/hooks/pre-commit && "
         "git init -q fresh && printf '#!/bin/sh\\n' > fresh/.git/hooks/pre-push && "
         "git commit -q --allow-empty -m by-the-agent",
         {"--writable-git"});
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(Exists(ws_ + "/vendor/lib/.git/hooks/pre-commit"));
  EXPECT_TRUE(Exists(ws_ + "/fresh/.git/hooks/pre-push"));
  EXPECT_EQ(run.err.find("quarantined"), std::string::npos) << run.err;
}

INSTANTIATE_TEST_SUITE_P(Callers, T1SandboxGitMetadata, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

// The parser that finds what a config names reads configs as git does: a few thousand random
// configs from fragments (sections, subsections, quotes, escapes, continuations, comments, CRLF,
// byte order marks, errors) parse to the same keys and values as `git config --list`, or both
// refuse them.
TEST(GitConfigParser, AgreesWithGit) {
  if (access(kGit, X_OK) != 0) GTEST_SKIP() << "SKIPPED: no " << kGit;
  const std::vector<std::string> frags = {"[core]",
                                          "[Core]",
                                          "[a.B]",
                                          "[x \"Y\"]",
                                          "[x \"a\\\"b\"]",
                                          "[x \"a\\qb\"]",
                                          "[s \"t\" ]",
                                          "[]",
                                          "[s",
                                          "[s \"x",
                                          "[a.b \"c\"]",
                                          "k",
                                          "K = v",
                                          "key=value",
                                          "k = \"a b\"",
                                          "k = a\"b c\"d",
                                          "k = x ; c",
                                          "k = x # c",
                                          "k=\\",
                                          "k = a\\\nb",
                                          "k = \"a\\\nb\"",
                                          "k = \\t\\n\\b\\\\\\\"",
                                          "k = \\q",
                                          "k = \"unterminated",
                                          "k ;c",
                                          "1k=2",
                                          "k_x=1",
                                          "k-x = 1",
                                          "  k  =  v  ",
                                          "# comment",
                                          "; c",
                                          "hookspath = .husky",
                                          "k = \"#not\"",
                                          "k = a  b",
                                          "[s]k=1",
                                          "[s] k = v # c",
                                          "k=",
                                          "k =\"\"",
                                          "\""};
  const std::vector<std::string> seps = {"\n", "\n", "\r\n", " ", ""};
  std::mt19937 rng(20261204);
  TempDir dir("anvil-gitcfg");
  const std::string file = dir / "config";
  int compared = 0;
  for (int i = 0; i < 400; ++i) {
    std::string text;
    int n = 1 + static_cast<int>(rng() % 6);
    for (int j = 0; j < n; ++j) text += frags[rng() % frags.size()] + seps[rng() % seps.size()];
    if (rng() % 10 == 0) text = (rng() % 2 ? "\xef\xbb\xbf" : "\xef\xbb") + text;
    WriteFile(file, text);
    auto git = ::anvil::testing::Run({kGit, "config", "-f", file, "--list", "-z"});
    std::string want = git.status == 0 ? git.out : "ERROR";
    std::string got;
    auto parsed = ParseGitConfig(text);
    if (!parsed) {
      got = "ERROR";
    } else {
      for (const auto& e : *parsed) {
        got += e.section.empty()  ? e.key
               : e.has_subsection ? e.section + "." + e.subsection + "." + e.key
                                  : e.section + "." + e.key;
        if (e.value) got += "\n" + *e.value;
        got.push_back('\0');
      }
    }
    // Older git turns each blank inside an unquoted value into a space; newer git keeps it as
    // it is (as this parser does): compare with blanks made equal.
    for (auto* s : {&want, &got}) {
      for (char& c : *s) {
        if (c == '\r' || c == '\t') c = ' ';
      }
    }
    EXPECT_EQ(got, want) << "config: " << ::testing::PrintToString(text);
    ++compared;
  }
  EXPECT_EQ(compared, 400);
}

}  // namespace
}  // namespace t1_sandbox_git_metadata_test
}  // namespace anvil::testing
