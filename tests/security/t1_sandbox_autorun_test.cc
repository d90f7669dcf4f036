// T1 for what the host runs from the home (policy/host_autorun.h, linux/autorun_shield.h): with
// a workspace of $HOME, a sandboxed command must not plant code that runs later outside any
// sandbox — a shell's startup or logout file, a command first on PATH (~/.local/bin/ls, ~/bin),
// a systemd user unit, an autostart entry, an installed Anvil plugin — not by writing it, not
// by making it where it is missing, not by moving a directory or a link aside and making it
// anew. Missing places are held by placeholders for the run only: nothing is left in the home.
// Next to each attack: everything else in the same home stays writable (notes, a git
// repository, a project's installs). Root and unprivileged callers.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t1_sandbox_autorun_test {
namespace {

// Each write a command could try, as `shell-command` pairs with what it plants.
const char kAttacks[] =
    "try() { if sh -c \"$2\" 2>/dev/null; then echo \"WROTE $1\"; fi; }; "
    "try bashrc 'echo evil >> .bashrc'; "
    "try profile 'echo evil >> .profile'; "
    "try profile-sed 'sed -i s/mine/evil/ .profile'; "
    "try bashrc-replaced 'echo evil > x && mv -f x .bashrc'; "
    "try bash_profile 'echo evil > .bash_profile'; "
    "try bash_login 'echo evil > .bash_login'; "
    "try bash_logout 'echo evil > .bash_logout'; "
    "try zshenv 'echo evil > .zshenv'; "
    "try zshrc 'ln -s x .zshrc'; "
    "try local-bin 'mkdir -p .local/bin && echo evil > .local/bin/ls'; "
    "try bin 'mkdir -p bin && echo evil > bin/ls'; "
    "try unit 'mkdir -p .config/systemd/user && echo evil > .config/systemd/user/x.service'; "
    "try autostart 'mkdir -p .config/autostart && echo evil > .config/autostart/x.desktop'; "
    "try fish 'mkdir -p .config/fish && echo evil > .config/fish/config.fish'; "
    "try environment 'mkdir -p .config/environment.d && echo PATH=x > "
    ".config/environment.d/x.conf'; "
    "try plugin 'mkdir -p .local/share/anvil/plugins/p && echo evil > "
    ".local/share/anvil/plugins/p/main.lua'; "
    "try pam 'echo PATH=x > .pam_environment'; "
    "try xprofile 'echo evil > .xprofile'; "
    "try moved-config 'mv .config .config.old && mkdir -p .config/autostart'; "
    "try moved-local 'mv .local .local.old && mkdir -p .local/bin'; "
    "try removed-placeholder 'rm -f .zshrc && echo evil > .zshrc'; ";

// The red team's second round (F4): places the first table missed, which the host reads or runs
// without being asked, and credential locations that did not exist yet (a new ~/.kube/config
// with an exec credential plugin runs on the next kubectl).
const char kMoreAttacks[] =
    "try() { if sh -c \"$2\" 2>/dev/null; then echo \"WROTE $1\"; fi; }; "
    "try bash_completion 'echo evil > .bash_completion'; "
    "try completions 'mkdir -p .local/share/bash-completion/completions && echo evil > "
    ".local/share/bash-completion/completions/git'; "
    "try pth 'mkdir -p .local/lib/python3.11/site-packages && echo evil > "
    ".local/lib/python3.11/site-packages/zz.pth'; "
    "try desktop 'mkdir -p .local/share/applications && echo evil > "
    ".local/share/applications/firefox.desktop'; "
    "try nvim-site 'mkdir -p .local/share/nvim/site/plugin && echo evil > "
    ".local/share/nvim/site/plugin/x.lua'; "
    "try nvim 'mkdir -p .config/nvim && echo evil > .config/nvim/init.lua'; "
    "try vimrc 'echo evil > .vimrc'; "
    "try emacs 'mkdir -p .emacs.d && echo evil > .emacs.d/init.el'; "
    "try ipython 'mkdir -p .ipython/profile_default/startup && echo evil > "
    ".ipython/profile_default/startup/x.py'; "
    "try vscode 'mkdir -p .vscode/extensions/x && echo evil > .vscode/extensions/x/a.js'; "
    "try gdbinit 'echo evil > .gdbinit'; "
    "try tmux 'echo evil > .tmux.conf'; "
    "try direnv 'mkdir -p .config/direnv && echo evil > .config/direnv/direnv.toml'; "
    "try gitk 'mkdir -p .config/git && echo evil > .config/git/gitk'; "
    "try cargo 'mkdir -p .cargo && echo evil > .cargo/config.toml'; "
    "try cargo-bin 'mkdir -p .cargo/bin && echo evil > .cargo/bin/ls'; "
    "try npmrc 'echo evil > .npmrc'; "
    "try pip 'mkdir -p .config/pip && echo evil > .config/pip/pip.conf'; "
    "try kube 'mkdir -p .kube && echo evil > .kube/config'; "
    "try aws 'mkdir -p .aws && echo evil > .aws/config'; "
    "try ssh 'mkdir -p .ssh && echo evil > .ssh/config'; "
    "try ssh-rc 'mkdir -p .ssh && echo evil > .ssh/rc'; "
    "try gpg-agent 'mkdir -p .gnupg && echo evil > .gnupg/gpg-agent.conf'; "
    "try docker 'mkdir -p .docker && echo evil > .docker/config.json'; "
    "try go-env 'mkdir -p .config/go && echo GOFLAGS=-toolexec=evil > .config/go/env'; "
    "try gradle 'mkdir -p .gradle/init.d && echo evil > .gradle/init.d/x.gradle'; "
    "try inputrc 'echo evil > .inputrc'; ";

// Red team s3 (rthome): places the tables still missed. systemd-tmpfiles --user applies
// user-tmpfiles.d at every login (an `L+ ~/.bashrc` line replaces the startup file); zsh and
// bash frameworks and prompts the usual startup files source when present (powerlevel10k's
// .p10k.zsh, fzf's .fzf.bash, RVM, bash-it, zinit, ...); version managers on PATH (rye, pixi,
// proto, juliaup, dart's pub cache, foundry); debuggers' and database shells' startup files
// that run commands (.pdbrc, .psqlrc, .sqliterc); npm init's .npm-init.js.
const char kThirdRoundAttacks[] =
    "try() { if sh -c \"$2\" 2>/dev/null; then echo \"WROTE $1\"; fi; }; "
    "try tmpfiles 'mkdir -p .config/user-tmpfiles.d && echo evil > "
    ".config/user-tmpfiles.d/x.conf'; "
    "try tmpfiles-data 'mkdir -p .local/share/user-tmpfiles.d && echo evil > "
    ".local/share/user-tmpfiles.d/x.conf'; "
    "try p10k 'echo evil > .p10k.zsh'; "
    "try fzf 'echo evil > .fzf.bash'; "
    "try fzf-zsh 'echo evil > .fzf.zsh'; "
    "try rvm 'mkdir -p .rvm/scripts && echo evil > .rvm/scripts/rvm'; "
    "try bash-it 'mkdir -p .bash_it && echo evil > .bash_it/bash_it.sh'; "
    "try zinit 'mkdir -p .local/share/zinit && echo evil > .local/share/zinit/zinit.zsh'; "
    "try rye 'mkdir -p .rye/shims && echo evil > .rye/shims/python'; "
    "try pixi 'mkdir -p .pixi/bin && echo evil > .pixi/bin/ls'; "
    "try pub-cache 'mkdir -p .pub-cache/bin && echo evil > .pub-cache/bin/ls'; "
    "try pdbrc 'echo evil > .pdbrc'; "
    "try psqlrc 'echo evil > .psqlrc'; "
    "try sqliterc 'echo evil > .sqliterc'; "
    "try npm-init 'echo evil > .npm-init.js'; ";

// Programs that run a command their configuration names: Debian's sensible-editor sources
// ~/.selected_editor as shell; lazygit's custom commands, jj's ui.pager (and its aliases), tig's
// bindings and lf's lfrc run what they say.
const char kVcsAndEditorAttacks[] =
    "try() { if sh -c \"$2\" 2>/dev/null; then echo \"WROTE $1\"; fi; }; "
    "try selected-editor 'echo \"SELECTED_EDITOR=\\\"/tmp/evil\\\"\" > .selected_editor'; "
    "try lazygit 'mkdir -p .config/lazygit && echo evil > .config/lazygit/config.yml'; "
    "try jj 'mkdir -p .config/jj && echo evil > .config/jj/config.toml'; "
    "try jjconfig 'echo evil > .jjconfig.toml'; "
    "try tigrc 'echo evil > .tigrc'; "
    "try tig 'mkdir -p .config/tig && echo evil > .config/tig/config'; "
    "try lf 'mkdir -p .config/lf && echo evil > .config/lf/lfrc'; ";

// The ordinary work beside them, in the same home.
const char kBenign[] =
    "echo ok > notes.txt && mkdir -p .cache/pip && echo ok > .cache/pip/x && "
    "mkdir -p .config/myapp && echo ok > .config/myapp/settings.json && "
    "mkdir -p proj && cd proj && git init -q && echo x > f && git add f && "
    "git -c user.email=a@b.c -c user.name=n commit -qm m && "
    "mkdir -p node_modules/.bin .venv/bin && echo x > node_modules/.bin/tool && "
    "echo x > .venv/bin/tool && cd .. && echo BENIGN";

class T1SandboxHostAutorun : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    home_ = base_ / "home";
    ASSERT_EQ(mkdir(home_.c_str(), 0755), 0);
    WriteFile(home_ + "/.bashrc", "# mine\n");
    WriteFile(home_ + "/.profile", "# mine\n");
    caller_.Give(home_);
  }
  RunResult Sh(const std::string& workspace, const std::string& script,
               const std::vector<std::string>& env_extra = {},
               const std::vector<std::string>& flags = {}) {
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=" + home_};
    o.env.insert(o.env.end(), env_extra.begin(), env_extra.end());
    return SandboxSh(workspace, script, flags, Opts(o));
  }
  // Every path beneath the home that is a symbolic link (placeholders among them).
  std::string LinksInHome() {
    RunResult r = ::anvil::testing::Run({"/usr/bin/find", home_, "-type", "l"});
    return r.out;
  }
  TempDir base_{"anvil-autorun", "/var/tmp"};
  std::string home_;
};

TEST_P(T1SandboxHostAutorun, AWorkspaceOfHomeCannotPlantWhatTheHostRuns) {
  auto r = Sh(home_, std::string(kAttacks) + kBenign);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(ReadFile(home_ + "/.bashrc"), "# mine\n");
  EXPECT_EQ(ReadFile(home_ + "/.profile"), "# mine\n");
  // Nothing planted, and nothing of the run's own left behind.
  struct stat st {};
  for (const char* p :
       {".bash_profile", ".bash_login", ".bash_logout", ".zshenv", ".zshrc", ".local/bin", "bin",
        ".config/systemd", ".config/autostart", ".config/fish", ".config/environment.d",
        ".local/share", ".pam_environment", ".xprofile", ".config.old", ".local.old", ".git"}) {
    EXPECT_NE(lstat((home_ + "/" + p).c_str(), &st), 0) << p << " exists after the run";
  }
  EXPECT_EQ(LinksInHome(), "");
  // The benign work is there.
  EXPECT_EQ(ReadFile(home_ + "/.config/myapp/settings.json"), "ok\n");
  EXPECT_TRUE(Exists(home_ + "/proj/.git/HEAD"));
  EXPECT_TRUE(Exists(home_ + "/proj/node_modules/.bin/tool"));
}

// F4: the places and credential locations the first table missed, beside the same ordinary
// work: a project, notes, a cache and an application's own settings stay writable, and the run
// leaves nothing of its own in the home.
TEST_P(T1SandboxHostAutorun, ShellCompletionsEditorsAndMissingCredentialsCannotBePlanted) {
  auto r = Sh(home_, std::string(kMoreAttacks) + kBenign +
                         " && mkdir -p project && echo x > project/x && echo PROJECT");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("PROJECT"), std::string::npos) << r.out << r.err;
  struct stat st {};
  for (const char* p :
       {".bash_completion", ".local/lib",  ".local/share", ".vimrc",       ".emacs.d",
        ".ipython",         ".vscode",     ".gdbinit",     ".tmux.conf",   ".cargo",
        ".npmrc",           ".kube",       ".aws",         ".ssh",         ".gnupg",
        ".docker",          ".gradle",     ".inputrc",     ".config/nvim", ".config/direnv",
        ".config/git",      ".config/pip", ".config/go"}) {
    EXPECT_NE(lstat((home_ + "/" + p).c_str(), &st), 0) << p << " exists after the run";
  }
  EXPECT_EQ(LinksInHome(), "");
  EXPECT_EQ(ReadFile(home_ + "/project/x"), "x\n");
  EXPECT_EQ(ReadFile(home_ + "/notes.txt"), "ok\n");
  // The cache write worked inside, in the sandbox home's cache, not the host's.
  EXPECT_FALSE(Exists(home_ + "/.cache"));
  EXPECT_EQ(ReadFile(home_ + "/.config/myapp/settings.json"), "ok\n");
}

TEST_P(T1SandboxHostAutorun, TheThirdRoundsPlacesCannotBePlanted) {
  auto r = Sh(home_, std::string(kThirdRoundAttacks) + kBenign);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
  struct stat st {};
  for (const char* p :
       {".config/user-tmpfiles.d", ".local/share", ".p10k.zsh", ".fzf.bash", ".rvm", ".bash_it",
        ".rye", ".pixi", ".pub-cache", ".pdbrc", ".psqlrc", ".sqliterc", ".npm-init.js"}) {
    EXPECT_NE(lstat((home_ + "/" + p).c_str(), &st), 0) << p << " exists after the run";
  }
  EXPECT_EQ(LinksInHome(), "");
}

TEST_P(T1SandboxHostAutorun, EditorChoicesAndVcsToolsConfigCannotBePlanted) {
  auto r = Sh(home_, std::string(kVcsAndEditorAttacks) + kBenign +
                         " && mkdir -p .config/lazygit-notes && echo x > .config/lazygit-notes/a"
                         " && echo x > .editorconfig && echo MORE");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("MORE"), std::string::npos) << r.out << r.err;
  struct stat st {};
  for (const char* p : {".selected_editor", ".config/lazygit", ".config/jj", ".jjconfig.toml",
                        ".tigrc", ".config/tig", ".config/lf"}) {
    EXPECT_NE(lstat((home_ + "/" + p).c_str(), &st), 0) << p << " exists after the run";
  }
  EXPECT_EQ(LinksInHome(), "");
  EXPECT_EQ(ReadFile(home_ + "/.config/lazygit-notes/a"), "x\n");
  EXPECT_EQ(ReadFile(home_ + "/.editorconfig"), "x\n");
}

// While a run lasts, a missing credential location is a dangling link that every reader on the
// host sees as missing; one that exists stays the user's, untouched, and the command sees it
// covered.
TEST_P(T1SandboxHostAutorun, CredentialLocationsAreHeldWhetherTheyExistOrNot) {
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(home_ + "/.aws") + " && echo secret > " +
                  ShellQuote(home_ + "/.aws/credentials")),
            0);
  caller_.Give(home_);
  auto r = Sh(home_,
              "try() { if sh -c \"$2\" 2>/dev/null; then echo \"WROTE $1\"; fi; }; "
              "try aws-config 'echo evil > .aws/config'; "
              "try aws-moved 'mv .aws .aws2 && mkdir .aws && echo evil > .aws/config'; "
              "try kube-dir 'rm -f .kube && mkdir .kube && echo evil > .kube/config'; "
              "cat .aws/credentials 2>/dev/null; echo ok > notes && echo BENIGN");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("secret"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(ReadFile(home_ + "/.aws/credentials"), "secret\n");
  EXPECT_FALSE(Exists(home_ + "/.aws/config"));
  EXPECT_FALSE(Exists(home_ + "/.aws2"));
  EXPECT_EQ(LinksInHome(), "");
}

TEST_P(T1SandboxHostAutorun, ADirectoryAboveTheHomeIsNoWayAroundIt) {
  caller_.Give(base_.path());
  auto r = Sh(base_.path(),
              "cd home && echo evil >> .bashrc 2>/dev/null && echo WROTE; "
              "echo evil > .zshrc 2>/dev/null && echo WROTE; mv ../home ../h2 2>/dev/null && "
              "echo WROTE; echo ok > ../beside && echo BENIGN",
              {}, {});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(ReadFile(home_ + "/.bashrc"), "# mine\n");
  EXPECT_EQ(LinksInHome(), "");
}

TEST_P(T1SandboxHostAutorun, LinkedDotfilesAndWhatTheyLeadToStayAsTheyAre) {
  ASSERT_EQ(Shell("cd " + ShellQuote(home_) +
                  " && rm .bashrc && mkdir -p dotfiles tools/bin && echo '# mine' > "
                  "dotfiles/bashrc && ln -s dotfiles/bashrc .bashrc && ln -s tools/bin bin"),
            0);
  caller_.Give(home_);
  auto r = Sh(home_,
              "try() { if sh -c \"$2\" 2>/dev/null; then echo \"WROTE $1\"; fi; }; "
              "try through-link 'echo evil >> .bashrc'; "
              "try target 'echo evil >> dotfiles/bashrc'; "
              "try relinked 'ln -sf evil .bashrc'; "
              "try removed-link 'rm .bashrc && echo evil > .bashrc'; "
              "try moved-dir 'mv dotfiles d2 && mkdir dotfiles && echo evil > dotfiles/bashrc'; "
              "try bin-through-link 'echo evil > bin/ls'; "
              "try bin-moved 'mv tools t2 && mkdir -p tools/bin && echo evil > tools/bin/ls'; "
              "echo ok > dotfiles/README && echo ok > tools/README && echo BENIGN");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(ReadFile(home_ + "/dotfiles/bashrc"), "# mine\n");
  EXPECT_FALSE(Exists(home_ + "/tools/bin/ls"));
  // The user's own links are theirs; only they remain.
  auto links = Lines(LinksInHome());
  std::sort(links.begin(), links.end());
  EXPECT_EQ(links, (std::vector<std::string>{home_ + "/.bashrc", home_ + "/bin"}));
}

TEST_P(T1SandboxHostAutorun, ADotfilesRepositoryAsWorkspaceKeepsTheFileTheHomeLinksTo) {
  ASSERT_EQ(Shell("cd " + ShellQuote(home_) +
                  " && rm .bashrc && mkdir dotfiles && echo '# mine' > dotfiles/bashrc && "
                  "ln -s dotfiles/bashrc .bashrc"),
            0);
  caller_.Give(home_);
  auto r = Sh(home_ + "/dotfiles",
              "echo evil >> bashrc 2>/dev/null && echo WROTE; "
              "mv bashrc b2 2>/dev/null && echo WROTE; echo ok > vimrc && echo BENIGN");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(ReadFile(home_ + "/dotfiles/bashrc"), "# mine\n");
}

TEST_P(T1SandboxHostAutorun, ZdotdirAndXdgPlacesAreKeptToo) {
  auto r = Sh(home_,
              "try() { if sh -c \"$2\" 2>/dev/null; then echo \"WROTE $1\"; fi; }; "
              "try zdotdir 'mkdir -p zdot && echo evil > zdot/.zshrc'; "
              "try xdg-config 'mkdir -p xdg/cfg/autostart && echo evil > xdg/cfg/autostart/x'; "
              "try xdg-data 'mkdir -p xdg/data/anvil/plugins/p && echo evil > "
              "xdg/data/anvil/plugins/p/main.lua'; "
              "echo ok > xdg/notes && echo BENIGN",
              {"ZDOTDIR=" + home_ + "/zdot", "XDG_CONFIG_HOME=" + home_ + "/xdg/cfg",
               "XDG_DATA_HOME=" + home_ + "/xdg/data"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(LinksInHome(), "");
  EXPECT_FALSE(Exists(home_ + "/zdot"));
}

TEST_P(T1SandboxHostAutorun, NamingThePlaceAsAWritableRootAllowsIt) {
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(home_ + "/.local/bin")), 0);
  caller_.Give(home_);
  auto r = Sh(home_,
              "echo '#!/bin/sh' > .local/bin/mytool && echo ALLOWED; "
              "echo evil > bin/ls 2>/dev/null && echo WROTE; "
              "echo evil >> .bashrc 2>/dev/null && echo WROTE; true",
              {}, {"--writable-root", home_ + "/.local/bin"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("ALLOWED"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << r.out;
  EXPECT_TRUE(Exists(home_ + "/.local/bin/mytool"));
  // Without it the same write is refused, and the summary says how to allow it.
  r = Sh(home_, "echo x > .local/bin/other");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("allow with --writable-root .local/bin"), std::string::npos) << r.err;
}

// Concurrent runs share the placeholders: one that ends first must not remove them (that would
// take them out of the other's view), and the last one leaves nothing. (The signal file is not
// `go`: ~/go/bin is a place, so ~/go is a directory while a run lasts.)
TEST_P(T1SandboxHostAutorun, ARunThatEndsFirstLeavesTheOthersPlaceholdersInPlace) {
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=" + home_};
  const std::string script =
      "touch started; i=0; while [ ! -e proceed ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); "
      "done; "
      "w=REFUSED; echo evil > .zshrc 2>/dev/null && w=WROTE; "
      "{ mkdir -p .local/bin && echo evil > .local/bin/ls; } 2>/dev/null && w=WROTE; "
      "echo $w > result";
  Spawned first({AnvilBin(), "sandbox", "--cwd", home_, "--", "sh", "-c", script}, Opts(o));
  ASSERT_TRUE(WaitUntil([&] { return Exists(home_ + "/started"); }, std::chrono::seconds(30)));
  // The first run's placeholders are on the host while it runs.
  EXPECT_NE(LinksInHome().find(home_ + "/.zshrc"), std::string::npos) << LinksInHome();
  auto second = Sh(home_, "echo second > second.txt");
  EXPECT_EQ(second.status, 0) << second.err;
  EXPECT_NE(LinksInHome().find(home_ + "/.zshrc"), std::string::npos)
      << "the second run removed the first one's placeholder";
  WriteFile(home_ + "/proceed", "");
  auto status = first.Wait(std::chrono::seconds(60));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(*status, 0);
  EXPECT_EQ(ReadFile(home_ + "/result"), "REFUSED\n");
  EXPECT_EQ(LinksInHome(), "");
  EXPECT_FALSE(Exists(home_ + "/.local/bin"));
}

// An `anvil` killed with SIGKILL removes nothing: its placeholder links and the directories it
// made (the caches it shadows among them: ~/.yarn, ~/.gem, ~/.m2/repository ...) stay, marked.
// The next run takes every one of them over and removes it, so that nothing is left in the home
// for good (and `mkdir ~/.yarn` outside works again). The user's own empty directory, and one
// of the killed run's that the user has put something in since, stay.
TEST_P(T1SandboxHostAutorun, WhatAKilledRunLeftIsRemovedByTheNextRun) {
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(home_ + "/.ivy2")), 0);  // the user's own, empty
  caller_.Give(home_);
  // Everything in the home but Anvil's own state there (the sandbox home the runs keep).
  auto listing = [&] {
    return ::anvil::testing::Run({"/usr/bin/find", home_, "-path", home_ + "/.local/state/anvil",
                                  "-prune", "-o", "-path", home_ + "/.config/anvil", "-prune", "-o",
                                  "-print"})
        .out;
  };
  ASSERT_EQ(Sh(home_, "true").status, 0);  // the state made once
  const std::string before = listing();
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=" + home_};
  Spawned killed(
      {AnvilBin(), "sandbox", "--cwd", home_, "--", "sh", "-c", "touch started; sleep 60"},
      Opts(o));
  ASSERT_TRUE(WaitUntil([&] { return Exists(home_ + "/started"); }, std::chrono::seconds(60)));
  ASSERT_EQ(kill(killed.pid(), SIGKILL), 0);
  killed.Wait(std::chrono::seconds(30));
  ASSERT_EQ(unlink((home_ + "/started").c_str()), 0);
  ASSERT_NE(LinksInHome(), "") << "nothing was left to clean up";
  ASSERT_TRUE(Exists(home_ + "/.yarn")) << "the killed run made no cache placeholder";
  // Something of the user's, put into one of them since.
  ASSERT_EQ(Shell("echo mine > " + ShellQuote(home_ + "/.gem/specs")), 0);
  caller_.Give(home_);

  auto r = Sh(home_, "echo ok > notes.txt && echo BENIGN");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(LinksInHome(), "");
  EXPECT_EQ(ReadFile(home_ + "/.gem/specs"), "mine\n");
  ASSERT_EQ(unlink((home_ + "/.gem/specs").c_str()), 0);
  ASSERT_EQ(rmdir((home_ + "/.gem").c_str()), 0);
  ASSERT_EQ(unlink((home_ + "/notes.txt").c_str()), 0);
  EXPECT_EQ(listing(), before) << "left in the home";
  EXPECT_TRUE(Exists(home_ + "/.ivy2"));
}

// A workspace below the home, the usual case: nothing is made in the home at all.
TEST_P(T1SandboxHostAutorun, AWorkspaceBelowTheHomeLeavesTheHomeAlone) {
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(home_ + "/proj")), 0);
  caller_.Give(home_);
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=" + home_};
  Spawned run({AnvilBin(), "sandbox", "--cwd", home_ + "/proj", "--", "sh", "-c",
               "touch started; i=0; while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.05; "
               "i=$((i+1)); done"},
              Opts(o));
  ASSERT_TRUE(WaitUntil([&] { return Exists(home_ + "/proj/started"); }, std::chrono::seconds(30)));
  EXPECT_EQ(LinksInHome(), "");
  WriteFile(home_ + "/proj/go", "");
  auto status = run.Wait(std::chrono::seconds(60));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(*status, 0);
}

// The caches the host's builds trust and run (cargo's unpacked sources, Go's module and build
// caches, pip's wheels, Maven's and Gradle's repositories, npm's cache, pre-commit's hook
// environments): a workspace of $HOME must not plant code in them for the next build outside
// the sandbox. Yet the tools inside need a cache that works and lasts: it is the sandbox home's.
TEST_P(T1SandboxHostAutorun, TrustedCachesOfAHomeWorkspaceAreTheSandboxHomes) {
  ASSERT_EQ(Shell("cd " + ShellQuote(home_) +
                  " && mkdir -p .cargo/registry/src/x go/pkg/mod .cache/pip/wheels && "
                  "echo mine > .cargo/registry/src/x/build.rs"),
            0);
  caller_.Give(home_);
  const char kPlant[] =
      "try() { if sh -c \"$2\" 2>/dev/null; then echo \"WROTE $1\"; fi; }; "
      "try cargo-src 'mkdir -p .cargo/registry/src/x && echo evil > "
      ".cargo/registry/src/x/build.rs'; "
      "try cargo-git 'mkdir -p .cargo/git/checkouts && echo evil > .cargo/git/checkouts/x'; "
      "try gomod 'echo evil > go/pkg/mod/x'; "
      "try pipwheel 'echo evil > .cache/pip/wheels/x.whl'; "
      "try gobuild 'mkdir -p .cache/go-build && echo evil > .cache/go-build/x'; "
      "try m2 'mkdir -p .m2/repository && echo evil > .m2/repository/x.jar'; "
      "try npm 'mkdir -p .npm/_cacache && echo evil > .npm/_cacache/x'; "
      "try gradle 'mkdir -p .gradle/caches && echo evil > .gradle/caches/x'; "
      "try precommit 'mkdir -p .cache/pre-commit && echo evil > .cache/pre-commit/x'; "
      "try moved 'mv .cache .cache2 && mkdir -p .cache/pip && echo evil > .cache/pip/y'; "
      "try cargo-moved 'mv .cargo .cargo2 && mkdir -p .cargo/registry && echo evil > "
      ".cargo/registry/y'; "
      "echo ok > notes.txt && echo BENIGN";
  auto r = Sh(home_, kPlant);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
  // The writes worked inside (a cache a tool can use) ...
  EXPECT_NE(r.out.find("WROTE cargo-src"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("WROTE gobuild"), std::string::npos) << r.out;
  // ... and none of them reached the host's caches.
  EXPECT_EQ(ReadFile(home_ + "/.cargo/registry/src/x/build.rs"), "mine\n");
  struct stat st {};
  for (const char* p : {".cargo/git", "go/pkg/mod/x", ".cache/pip/wheels/x.whl", ".cache/go-build",
                        ".m2", ".npm", ".gradle", ".cache/pre-commit", ".cache2", ".cargo2",
                        ".cache/pip/y", ".cargo/registry/y"}) {
    EXPECT_NE(lstat((home_ + "/" + p).c_str(), &st), 0) << p << " exists after the run";
  }
  EXPECT_EQ(ReadFile(home_ + "/notes.txt"), "ok\n");
  EXPECT_EQ(LinksInHome(), "");
  // The next run of the same workspace finds its own cache again.
  r = Sh(home_, "cat .cache/go-build/x .npm/_cacache/x");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "evil\nevil\n");
}

// A profile opens a real cache on purpose (docs/policy.md, "Profiles"): the user's choice,
// inside the home workspace too.
TEST_P(T1SandboxHostAutorun, AProfileStillOpensItsRealCacheInAHomeWorkspace) {
  auto r = Sh(home_, "mkdir -p .cache/pip && echo ok > .cache/pip/x && echo ALLOWED", {},
              {"--profile", "python", "--network", "none"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("ALLOWED"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(ReadFile(home_ + "/.cache/pip/x"), "ok\n");
}

// A startup file with a second name: where that name is outside every writable root the run
// goes ahead; where it is inside one, that name is kept read-only too.
TEST_P(T1SandboxHostAutorun, AHardLinkedStartupFileIsKeptUnderEveryName) {
  ASSERT_EQ(link((home_ + "/.bashrc").c_str(), (base_ / "bashrc.bak").c_str()), 0);
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(home_ + "/dotfiles")), 0);
  ASSERT_EQ(link((home_ + "/.profile").c_str(), (home_ + "/dotfiles/profile").c_str()), 0);
  caller_.Give(home_);
  auto r = Sh(home_,
              "try() { if sh -c \"$2\" 2>/dev/null; then echo \"WROTE $1\"; fi; }; "
              "try bashrc 'echo evil >> .bashrc'; "
              "try other-name 'echo evil >> dotfiles/profile'; "
              "try other-name-replaced 'echo evil > x && mv -f x dotfiles/profile'; "
              "try linked-again 'ln dotfiles/profile p2 && echo evil >> p2'; "
              "echo ok > dotfiles/README && echo BENIGN");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(ReadFile(home_ + "/.bashrc"), "# mine\n");
  EXPECT_EQ(ReadFile(home_ + "/.profile"), "# mine\n");
  EXPECT_EQ(ReadFile(home_ + "/dotfiles/README"), "ok\n");
}

// A command that takes the owner's write permission off the home (a same-user command can
// chmod it) must not leave the run's placeholders behind in it for good.
TEST_P(T1SandboxHostAutorun, ARunLeavesNoPlaceholderWhenTheCommandLocksTheHome) {
  auto r = Sh(home_, "echo ok > notes.txt && chmod 555 . .local 2>/dev/null; echo BENIGN");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
  struct stat st {};
  ASSERT_EQ(stat(home_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0555u);  // what the command set stays
  ASSERT_EQ(Shell("chmod 755 " + ShellQuote(home_)), 0);
  EXPECT_EQ(LinksInHome(), "");
  for (const char* p : {".local/share", ".local/bin", ".cache", ".config/systemd", ".git"}) {
    EXPECT_FALSE(Exists(home_ + "/" + p)) << p;
  }
  EXPECT_EQ(ReadFile(home_ + "/notes.txt"), "ok\n");
}

INSTANTIATE_TEST_SUITE_P(Callers, T1SandboxHostAutorun, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t1_sandbox_autorun_test
}  // namespace anvil::testing
