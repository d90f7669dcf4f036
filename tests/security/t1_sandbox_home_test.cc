// T1 for the command's home (policy/sandbox_home.h), as root and as an unprivileged user with a
// lived-in home: $HOME exists and is writable, what the command writes there stays in a
// per-workspace sandbox home (kept between runs of that workspace, never seen by another, never
// the real home), the toolchains of the home run, and no credential location of the home is
// readable — one attack per location of kHomeCredentials, each tried by path, by a recursive
// search, through a readable root that contains it, with the home as the workspace and with
// --read-access full --home none. Next to each: the benign thing that must keep working.
#include <sys/socket.h>
#include <sys/un.h>

#include <string>
#include <vector>

#include "home_fixture.h"
#include "sandbox_harness.h"

namespace anvil::testing {
namespace {

class T1SandboxHome : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    home_.GiveTo(caller_);
  }
  RunOptions Options(const std::string& cwd = "") const {
    RunOptions o;
    o.cwd = cwd.empty() ? home_.workspace() : cwd;
    o.env = home_.Env();
    return Opts(o);
  }
  RunResult Sh(const std::string& script, const std::vector<std::string>& flags = {},
               const std::string& ws = "") const {
    const std::string dir = ws.empty() ? home_.workspace() : ws;
    return SandboxSh(dir, script, flags, Options(dir));
  }

  LivedInHome home_;
};

TEST_P(T1SandboxHome, HomeIsWritableAndPersistsPerWorkspaceButNeverInTheRealHome) {
  const std::string token = UniqueToken("CACHE");
  auto first = Sh("test \"$HOME\" = " + ShellQuote(home_.home()) +
                  " && mkdir -p ~/.cache/pip/http && echo " + token +
                  " > ~/.cache/pip/http/entry && echo wrote");
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_NE(first.out.find("wrote"), std::string::npos);
  EXPECT_FALSE(Exists(home_.home() + "/.cache/pip/http/entry"))
      << "the command wrote into the real home";

  auto again = Sh("cat ~/.cache/pip/http/entry");
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.out.find(token), std::string::npos) << "the cache did not survive the run";

  // Another workspace has a home of its own: one repository cannot poison another's caches.
  const std::string other = home_.home() + "/other";
  Shell("mkdir -p " + ShellQuote(other));
  caller_.Give(other);
  auto elsewhere = Sh("cat ~/.cache/pip/http/entry 2>&1; echo end", {}, other);
  EXPECT_EQ(elsewhere.out.find(token), std::string::npos) << elsewhere.out;

  // --home tmp: a fresh home that is gone after the run.
  auto tmp = Sh("cat ~/.cache/pip/http/entry 2>&1; touch ~/t && echo ok", {"--home", "tmp"});
  EXPECT_EQ(tmp.out.find(token), std::string::npos);
  EXPECT_NE(tmp.out.find("ok"), std::string::npos) << tmp.err;

  // The sandbox homes live in the user's state directory, 0700, one per workspace.
  auto report = JsonReport(SandboxSh(home_.workspace(), "true", {"--json"}, Options()));
  ASSERT_TRUE(report.is_object());
  const std::string sandbox_home = report["home"]["sandbox_home"].get<std::string>();
  EXPECT_EQ(sandbox_home.rfind(home_.home() + "/.local/state/anvil/homes/proj-", 0), 0u)
      << sandbox_home;
  struct stat st {};
  ASSERT_EQ(::stat(sandbox_home.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, caller_.uid());
  // What the command wrote there is the caller's own on the host (root's sandbox runs as an
  // unprivileged host id: its home is idmapped like the writable roots).
  for (const std::string rel : {"/.cache", "/.cache/pip/http/entry"}) {
    struct stat written {};
    ASSERT_EQ(::stat((sandbox_home + rel).c_str(), &written), 0) << rel;
    EXPECT_EQ(written.st_uid, caller_.uid()) << rel;
    EXPECT_EQ(written.st_gid, caller_.gid()) << rel;
  }
}

TEST_P(T1SandboxHome, ToolchainsOfTheHomeRunReadOnly) {
  auto r =
      Sh("python3 -c 'import sys; print(\"py\", sys.version_info[0])' && mytool a b && "
         "\"$HOME/.nvm/versions/node/v99.0.0/bin/nodeish\" && cargoish && goish && "
         "git config --global user.email && cat ~/.config/git/ignore");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  for (const char* expected : {"py 3", "mytool-ran a b", "nodeish-ran", "cargoish-ran", "goish-ran",
                               "lived@in.example", "*.swp"}) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << expected << "\n" << r.out << r.err;
  }
  // A login shell (`bash -lc`, as Codex runs commands; `sh -l`): /etc/profile may set PATH
  // afresh, and the home's own profile puts the command's back, even after an earlier run
  // wrote another one there.
  auto planted = Sh("echo 'PATH=/usr/bin:/bin' > ~/.bash_profile; echo 'PATH=/bin' > ~/.profile");
  EXPECT_EQ(planted.status, 0) << planted.err;
  auto login = Sh("bash -lc 'mytool a b && cargoish' && sh -lc 'mytool c'");
  EXPECT_EQ(login.status, 0) << login.out << login.err;
  EXPECT_NE(login.out.find("mytool-ran a b"), std::string::npos) << login.out << login.err;
  EXPECT_NE(login.out.find("cargoish-ran"), std::string::npos) << login.out << login.err;
  EXPECT_NE(login.out.find("mytool-ran c"), std::string::npos) << login.out << login.err;
  // Shown, not handed over: the toolchain cannot be changed from inside.
  auto write =
      Sh("echo x > ~/.pyenv/version; echo x > ~/.local/bin/mytool; "
         "cat ~/.pyenv/version");
  EXPECT_NE(write.out.find("3.99.0"), std::string::npos);
  EXPECT_EQ(ReadFile(home_.home() + "/.pyenv/version"), "3.99.0\n");
  EXPECT_NE(ReadFile(home_.home() + "/.local/bin/mytool").find("mytool-ran"), std::string::npos);
}

TEST_P(T1SandboxHome, GitconfigCopyKeepsTheIdentityAndDropsTheToken) {
  auto r = Sh("cat ~/.gitconfig; git config user.name");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Lived In"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(home_.gitconfig_token()), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("insteadOf"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("extraHeader"), std::string::npos) << r.out;
  // The sandbox's own copy: `git config --global` works for the run, never reaches the real
  // ~/.gitconfig, and the next run starts from the sanitized copy again.
  auto set = Sh("git config --global user.name Someone-Else && git config user.name");
  EXPECT_EQ(set.status, 0) << set.err;
  EXPECT_NE(set.out.find("Someone-Else"), std::string::npos) << set.out;
  EXPECT_EQ(ReadFile(home_.home() + "/.gitconfig").find("Someone-Else"), std::string::npos);
  auto next = Sh("git config user.name");
  EXPECT_NE(next.out.find("Lived In"), std::string::npos) << next.out << next.err;
}

// The files Anvil writes into the sandbox home (~/.gitconfig, ~/.bash_profile, ~/.profile) are
// Anvil's at every start, whatever a command left: a planted ~/.gitconfig with core.fsmonitor
// (or a ~/.bash_profile) must not run in the next run. Its temporary name was the name plus
// init's pid (1, in its pid namespace), so a directory planted there made the write fail
// silently and kept the planted file; a directory at the name itself did the same. Now the
// temporary name is random, and a file that cannot be written stops the start (125), naming it.
TEST_P(T1SandboxHome, FilesAnvilWritesIntoTheHomeAreNeverWhatACommandLeft) {
  auto plant =
      Sh("printf '[core]\\n\\tfsmonitor = \"echo PWNED-gitconfig >&2; false\"\\n' > ~/.gitconfig; "
         "echo 'echo PWNED-profile >&2' > ~/.bash_profile; "
         "for n in 1 2 3 4; do mkdir -p ~/.gitconfig.anvil-$n/x ~/.bash_profile.anvil-$n/x "
         "~/.profile.anvil-$n/x; done; echo planted");
  ASSERT_NE(plant.out.find("planted"), std::string::npos) << plant.err;
  Shell("cd " + ShellQuote(home_.workspace()) + " && git init -q 2>/dev/null");
  caller_.Give(home_.workspace());
  auto next = Sh("bash -lc 'git status --short >/dev/null; git config user.name'");
  EXPECT_EQ(next.status, 0) << next.err;
  EXPECT_EQ(next.err.find("PWNED"), std::string::npos) << next.err;
  EXPECT_NE(next.out.find("Lived In"), std::string::npos) << next.out << next.err;
  // A directory where the file goes: the start stops and says what to remove; once removed,
  // runs work again.
  auto dir = Sh("rm -f ~/.gitconfig && mkdir -p ~/.gitconfig/x && echo made");
  ASSERT_NE(dir.out.find("made"), std::string::npos) << dir.err;
  auto refused = Sh("echo ran");
  EXPECT_EQ(refused.status, 125) << refused.out << refused.err;
  EXPECT_EQ(refused.out.find("ran"), std::string::npos);
  EXPECT_NE(refused.err.find(".gitconfig"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("fix:"), std::string::npos) << refused.err;
  ASSERT_EQ(Shell("find " + ShellQuote(home_.home() + "/.local/state/anvil/homes") +
                  " -mindepth 3 -maxdepth 3 -path '*/home/.gitconfig' -type d -exec rm -rf {} +"),
            0);
  auto after = Sh("git config user.name");
  EXPECT_EQ(after.status, 0) << after.err;
  EXPECT_NE(after.out.find("Lived In"), std::string::npos) << after.out << after.err;
}

// Two ways around the written ~/.gitconfig (a review of the change that made it fail closed):
// a user with no git configuration of their own had no file written at all, so a planted one
// stayed; and git also reads $XDG_CONFIG_HOME/git/config as global configuration, a file of the
// sandbox home nothing rewrites. Now the file is written (empty) for every sandbox home, and
// the sandbox's environment points GIT_CONFIG_GLOBAL at it alone.
TEST_P(T1SandboxHome, GitReadsNoGlobalConfigurationAnEarlierRunPlanted) {
  // The user's own git configuration is gone (a CI machine, a container).
  Shell("rm -f " + ShellQuote(home_.home() + "/.gitconfig") + " " +
        ShellQuote(home_.home() + "/.config/git/config"));
  Shell("cd " + ShellQuote(home_.workspace()) + " && git init -q 2>/dev/null");
  caller_.Give(home_.workspace());
  auto plant =
      Sh("printf '[core]\\n\\tfsmonitor = \"echo PWNED-global >&2; false\"\\n' > ~/.gitconfig && "
         "mkdir -p ~/.config/git && "
         "printf '[core]\\n\\tfsmonitor = \"echo PWNED-xdg >&2; false\"\\n' > ~/.config/git/config "
         "&& echo planted");
  ASSERT_NE(plant.out.find("planted"), std::string::npos) << plant.err;
  auto next = Sh("git status --short >/dev/null && echo status-ok");
  EXPECT_EQ(next.status, 0) << next.err;
  EXPECT_NE(next.out.find("status-ok"), std::string::npos) << next.out << next.err;
  EXPECT_EQ(next.err.find("PWNED"), std::string::npos) << next.err;
  // Benign: `git config --global` works for the run, in the file git reads.
  auto set = Sh("git config --global user.name Run-Local && git config user.name");
  EXPECT_EQ(set.status, 0) << set.err;
  EXPECT_NE(set.out.find("Run-Local"), std::string::npos) << set.out << set.err;
}

// A shell start-up file planted in the sandbox home ran inside later commands the rules judged
// harmless (`zsh -c ls` ran a planted ~/.zshenv, which removed a file beside a forbidden rule
// on rm). Every start-up file a shell the rules know reads from the home on its own is now
// Anvil's at every start (empty, or the PATH for login shells), zsh's compiled .zwc too; fish's
// configuration and data directories are an empty tmpfs per run; ZDOTDIR is $HOME, BASH_ENV and
// ENV are dropped. Each shell installed here is run after the plant; the files of the others
// are checked to be written.
TEST_P(T1SandboxHome, ShellStartupFilesAnEarlierRunPlantedNeverRun) {
  const std::string evil = "touch ~/PWNED-$0; echo PWNED >&2\n";
  std::string plant =
      "mkdir -p ~/zdot ~/.config/fish/conf.d ~/.config/fish/functions "
      "~/.local/share/fish/vendor_conf.d && ";
  for (const char* file : {".zshenv",
                           ".zshrc",
                           ".zprofile",
                           ".zlogin",
                           ".bashrc",
                           ".bash_profile",
                           ".bash_login",
                           ".profile",
                           ".cshrc",
                           ".tcshrc",
                           ".login",
                           ".kshrc",
                           ".mkshrc",
                           ".yashrc",
                           ".yash_profile",
                           "zdot/.zshenv",
                           "bash_env",
                           "sh_env",
                           ".config/fish/config.fish",
                           ".config/fish/conf.d/x.fish",
                           ".local/share/fish/vendor_conf.d/x.fish"}) {
    plant += "printf '%s' " + ShellQuote(evil) + " > ~/" + file + " && ";
  }
  plant += "printf 'function ls; touch ~/PWNED-fishls; end\n' > ~/.config/fish/functions/ls.fish";
  // zsh runs a .zshenv.zwc newer than .zshenv instead of it: compiled from the planted one,
  // then .zshenv put back as Anvil wrote it (empty, so not written again) with an old time.
  if (Shell("command -v zsh >/dev/null") == 0) {
    plant += " && zsh -fc 'zcompile ~/.zshenv' && : > ~/.zshenv && touch -d 2000-01-01 ~/.zshenv";
  }
  auto planted = Sh(plant + " && echo planted");
  ASSERT_NE(planted.out.find("planted"), std::string::npos) << planted.err;

  const std::string home = home_.home();
  RunOptions o = Options();
  o.env = home_.Env({"ZDOTDIR=" + home + "/zdot", "BASH_ENV=" + home + "/bash_env",
                     "ENV=" + home + "/sh_env", "SSH_CLIENT=10.0.0.1 1 22"});
  std::string run =
      "ls >/dev/null; env -u SHLVL bash -c 'echo bash-ok'; sh -c 'echo sh-ok'; "
      "bash -lc 'mytool bash-login'; sh -lc 'mytool sh-login'; ";
  if (Shell("command -v zsh >/dev/null") == 0) {
    run +=
        "zsh -c 'ls >/dev/null; echo zsh-ok'; zsh -lc 'mytool zsh-login'; "
        "zsh -ic 'echo zsh-interactive' </dev/null; ";
  }
  if (Shell("command -v fish >/dev/null") == 0) {
    run += "fish -c 'ls >/dev/null; set -U anvil_x 1; echo fish-ok $anvil_x'; ";
  }
  for (const char* other : {"ksh", "mksh", "tcsh", "csh", "yash"}) {
    if (Shell(std::string("command -v ") + other + " >/dev/null") == 0) {
      run += std::string(other) + " -c 'echo " + other + "-ok'; ";
    }
  }
  run +=
      "ls -a ~ | grep -c PWNED; cat ~/.zshenv ~/.bashrc ~/.cshrc ~/.kshrc | wc -c; "
      "ls ~/.config/fish | wc -l";
  auto next = SandboxSh(home_.workspace(), run, {}, Opts(o));
  EXPECT_EQ(next.status, 0) << next.out << next.err;
  EXPECT_EQ(next.err.find("PWNED"), std::string::npos) << next.err;
  for (const char* ok : {"bash-ok", "sh-ok", "mytool-ran bash-login", "mytool-ran sh-login"}) {
    EXPECT_NE(next.out.find(ok), std::string::npos) << ok << "\n" << next.out << next.err;
  }
  if (Shell("command -v zsh >/dev/null") == 0) {
    for (const char* ok : {"zsh-ok", "mytool-ran zsh-login", "zsh-interactive"}) {
      EXPECT_NE(next.out.find(ok), std::string::npos) << ok << "\n" << next.out << next.err;
    }
  }
  if (Shell("command -v fish >/dev/null") == 0) {
    // Benign: fish keeps a universal variable for the run.
    EXPECT_NE(next.out.find("fish-ok 1"), std::string::npos) << next.out << next.err;
  }
  // No PWNED file; the start-up files are empty (0 bytes); nothing left in fish's directory but
  // what this run's fish wrote.
  EXPECT_NE(next.out.find("\n0\n0\n"), std::string::npos) << next.out;

  // The files of the shells not installed here are written all the same.
  const std::string sandbox_home = JsonReport(SandboxSh(home_.workspace(), "true", {"--json"},
                                                        Options()))["home"]["sandbox_home"]
                                       .get<std::string>();
  for (const char* file : {".zshenv", ".zshenv.zwc", ".zshrc", ".cshrc", ".tcshrc", ".kshrc",
                           ".mkshrc", ".yashrc", ".bashrc", ".logout"}) {
    EXPECT_EQ(ReadFile(sandbox_home + "/" + file), "") << file;
  }
  EXPECT_NE(ReadFile(sandbox_home + "/.zprofile").find("export PATH"), std::string::npos);
  EXPECT_NE(ReadFile(sandbox_home + "/.login").find("setenv PATH"), std::string::npos);
  // The user's own start-up files are never shown, nor changed.
  EXPECT_FALSE(Exists(home + "/.zshenv.zwc"));

  // A directory left where a start-up file goes stops the start, naming it.
  auto dir = Sh("rm -f ~/.zshenv && mkdir -p ~/.zshenv/x && echo made");
  ASSERT_NE(dir.out.find("made"), std::string::npos) << dir.err;
  auto refused = Sh("echo ran");
  EXPECT_EQ(refused.status, 125) << refused.out << refused.err;
  EXPECT_NE(refused.err.find(".zshenv"), std::string::npos) << refused.err;
  ASSERT_EQ(Shell("rm -rf " + ShellQuote(sandbox_home + "/.zshenv")), 0);
  // A file where fish's directory goes (inside, the directory is a mount point no command can
  // replace; a file put there between runs) stops it too.
  ASSERT_EQ(Shell("rm -rf " + ShellQuote(sandbox_home + "/.config/fish") + " && echo x > " +
                  ShellQuote(sandbox_home + "/.config/fish")),
            0);
  auto refused_fish = Sh("echo ran");
  EXPECT_EQ(refused_fish.status, 125) << refused_fish.out << refused_fish.err;
  ASSERT_EQ(Shell("rm -f " + ShellQuote(sandbox_home + "/.config/fish")), 0);
  auto after = Sh("echo ran");
  EXPECT_EQ(after.status, 0) << after.err;
}

// A root you name over one of your start-up files (`--readable-root ~/.bashrc`, for your
// aliases) shows your own file there: Anvil writes a start-up file only where the sandbox home
// itself holds the place (HomeFilesToWrite). The run used to stop with 125 (the bind's mount
// point cannot be replaced: "Device or resource busy"). The other start-up files stay Anvil's,
// and a directory an earlier run left in the sandbox home still stops the start.
TEST_P(T1SandboxHome, ARootYouNameOverAStartupFileShowsYourOwn) {
  const std::string mine = "alias ll='ls -l'  # " + UniqueToken("MINE") + "\n";
  Put(home_.home() + "/.bashrc", mine);
  home_.GiveTo(caller_);
  // An earlier run plants .zshenv and .bashrc in the sandbox home.
  auto planted = Sh("echo 'echo PWNED' > ~/.zshenv && echo 'echo PWNED' > ~/.bashrc && echo ok");
  ASSERT_NE(planted.out.find("ok"), std::string::npos) << planted.err;

  const std::vector<std::string> root = {"--readable-root", home_.home() + "/.bashrc"};
  auto run = Sh("cat ~/.bashrc; wc -c < ~/.zshenv", root);
  EXPECT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_EQ(run.out, mine + "0\n") << run.err;
  EXPECT_EQ(run.err.find("PWNED"), std::string::npos) << run.err;
  // Shown read-only, never changed.
  auto write = Sh("echo x >> ~/.bashrc 2>/dev/null && echo WROTE; echo end", root);
  EXPECT_EQ(write.out, "end\n") << write.err;
  EXPECT_EQ(ReadFile(home_.home() + "/.bashrc"), mine);

  // Without the root the sandbox home's .bashrc is Anvil's again (the planted one replaced).
  auto plain = Sh("wc -c < ~/.bashrc; grep -c alias ~/.bashrc");
  EXPECT_EQ(plain.out, "0\n0\n") << plain.err;

  // Fail-closed as before: a directory left at ~/.zshenv in the sandbox home stops the start.
  auto dir = Sh("rm -f ~/.zshenv && mkdir -p ~/.zshenv/x && echo made");
  ASSERT_NE(dir.out.find("made"), std::string::npos) << dir.err;
  auto refused = Sh("echo ran", root);
  EXPECT_EQ(refused.status, 125) << refused.out << refused.err;
  EXPECT_NE(refused.err.find(".zshenv"), std::string::npos) << refused.err;
  const std::string sandbox_home = JsonReport(SandboxSh(home_.workspace(), "true", {"--json"},
                                                        Options()))["home"]["sandbox_home"]
                                       .get<std::string>();
  ASSERT_EQ(Shell("rm -rf " + ShellQuote(sandbox_home + "/.zshenv")), 0);
  EXPECT_EQ(Sh("echo ran", root).status, 0);
}

TEST_P(T1SandboxHome, SymlinksPlantedInTheSandboxHomeNeverRedirectALaterRun) {
  // A command replaces the mount points of the next run's binds with links out of the home;
  // the next run must bind where it always does and change nothing the links point at.
  const std::string decoy = home_.home() + "/decoy";
  Shell("mkdir -p " + ShellQuote(decoy));
  caller_.Give(decoy);
  // Relative links climb out of the view's staging root into the host's tree (/oldroot while
  // the view is built); absolute ones would name the host's path.
  std::string up;
  for (char c : home_.home()) up += c == '/' ? "../" : "";
  const std::string to_host = up + "../oldroot" + decoy;
  auto plant = Sh("mv ~/.cargo ~/.cargo-old 2>/dev/null; ln -sfn " + ShellQuote(to_host) +
                  " ~/.cargo; mkdir -p ~/.local; mv ~/.local/bin ~/.local/bin-old 2>/dev/null; "
                  "ln -sfn " +
                  ShellQuote(decoy) +
                  " ~/.local/bin; mv ~/.gitconfig ~/.gc-old; "
                  "ln -sfn " +
                  ShellQuote(to_host + "/gitconfig") + " ~/.gitconfig; echo planted");
  ASSERT_NE(plant.out.find("planted"), std::string::npos) << plant.err;
  auto next = Sh("cargoish && mytool && git config user.name; echo status=$?");
  EXPECT_EQ(next.status, 0) << next.err;
  for (const char* ran : {"cargoish-ran", "mytool-ran", "Lived In"}) {
    EXPECT_NE(next.out.find(ran), std::string::npos) << ran << "\n" << next.out << next.err;
  }
  auto listing = Shell("test -z \"$(ls -A " + ShellQuote(decoy) + ")\"");
  EXPECT_EQ(listing, 0) << "a bind or mount point landed in the link's target";
}

TEST_P(T1SandboxHome, SocketInAToolchainDirectoryIsHidden) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  const std::string sock = home_.home() + "/.pyenv/agent.sock";
  Spawned listener({kPython, "-c",
                    "import socket,os,sys,time\n"
                    "s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1],"
                    "0o777); s.listen(5)\n"
                    "while True:\n c,_=s.accept(); c.sendall(b'AGENT-ANSWER'); c.close()\n",
                    sock});
  ASSERT_TRUE(WaitUntil([&] { return Exists(sock); }));
  const std::string probe = std::string(kPython) +
                            " -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); "
                            "s.connect(sys.argv[1]); print(s.recv(64))' " +
                            ShellQuote(sock);
  auto control = SandboxSh(home_.workspace(), probe, {"--policy", "danger-full-access"}, Options());
  ASSERT_NE(control.out.find("AGENT-ANSWER"), std::string::npos)
      << "control: unconfined, the socket answers; " << control.err;
  auto attack = Sh(probe + " 2>&1; ls ~/.pyenv/version");
  EXPECT_EQ(attack.out.find("AGENT-ANSWER"), std::string::npos) << attack.out;
  EXPECT_NE(attack.out.find(".pyenv/version"), std::string::npos)
      << "benign: the toolchain directory is still there; " << attack.out << attack.err;
}

TEST_P(T1SandboxHome, TableOfCredentialLocationsIsNeverReadable) {
  // Every location of kHomeCredentials at once: by path, and by searching the whole home.
  std::string script;
  for (const auto& [rel, secret] : home_.secrets()) {
    script += "cat " + ShellQuote(secret.first) + " 2>/dev/null; ";
  }
  script += "grep -rs CRED ~ 2>/dev/null; find ~ -name secret 2>/dev/null; echo searched";
  auto r = Sh(script);
  EXPECT_NE(r.out.find("searched"), std::string::npos) << r.err;
  for (const auto& [rel, secret] : home_.secrets()) {
    EXPECT_EQ(r.out.find(secret.second), std::string::npos) << rel << " was read";
  }
}

// `sudo anvil sandbox` keeping the user's HOME: root makes nothing in a home that is not its
// own (root-owned directories there would break the user's own runs); the command still gets
// a home (an empty one), and the user's next run makes and uses its own sandbox home.
TEST(T1SandboxHomeOwner, RootWithAnotherUsersHomeMakesNothingThere) {
  ANVIL_CALLER_OR_END_TEST(user, Caller::kUnprivileged);
  LivedInHome home;
  home.GiveTo(*user);
  RunOptions o;
  o.cwd = home.workspace();
  o.env = home.Env();
  auto as_root = SandboxSh(home.workspace(), "touch ~/t && echo root-ran", {"--json"}, o);
  EXPECT_EQ(as_root.status, 0) << as_root.err;
  EXPECT_NE(as_root.out.find("root-ran"), std::string::npos) << as_root.err;
  EXPECT_FALSE(Exists(home.home() + "/.local/state")) << "root made directories in the user's home";
  EXPECT_FALSE(Exists(home.home() + "/t"));
  auto as_user = SandboxSh(home.workspace(), "touch ~/t && echo user-ran", {}, user->Options(o));
  EXPECT_EQ(as_user.status, 0) << as_user.err;
  EXPECT_NE(as_user.out.find("user-ran"), std::string::npos) << as_user.err;
  struct stat st {};
  ASSERT_EQ(::stat((home.home() + "/.local/state/anvil").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, user->uid());
}

INSTANTIATE_TEST_SUITE_P(Callers, T1SandboxHome, ::testing::ValuesIn(kAllCallers), CallerParamName);

// One attack per credential location, as each caller.
class T1SandboxHomeCredential : public ::testing::TestWithParam<std::tuple<Caller, std::string>> {};

TEST_P(T1SandboxHomeCredential, SecretIsNeverReadableWhileTheToolchainRuns) {
  ANVIL_CALLER_OR_END_TEST(caller, std::get<0>(GetParam()));
  const std::string rel = std::get<1>(GetParam());
  LivedInHome home;
  home.GiveTo(*caller);
  std::string path, secret;
  if (rel == ".gitconfig") {
    path = home.home() + "/.gitconfig";
    secret = home.gitconfig_token();
  } else {
    path = home.secrets().at(rel).first;
    secret = home.secrets().at(rel).second;
  }
  const std::string location = home.home() + "/" + rel;
  auto run = [&](const std::string& cwd, const std::vector<std::string>& flags,
                 const std::string& script) {
    RunOptions o;
    o.cwd = cwd;
    o.env = home.Env();
    return SandboxSh(cwd, script, flags, caller->Options(o));
  };
  const std::string attack = "cat " + ShellQuote(path) + " 2>&1; ls -la " + ShellQuote(location) +
                             " 2>&1; grep -rs CRED ~ " + ShellQuote(location) +
                             " 2>/dev/null; cat /proc/self/root" + ShellQuote(path) +
                             " 2>&1; echo attack-done";
  // Control: unconfined, the same script reads it (so the attack below is a real one).
  auto control = run(home.workspace(), {"--policy", "danger-full-access"}, attack);
  ASSERT_NE(control.out.find(secret), std::string::npos)
      << "control must read " << path << "; " << control.err;

  // Default, workspace in the home: absent.
  auto def = run(home.workspace(), {}, attack + "; mytool ok");
  EXPECT_EQ(def.out.find(secret), std::string::npos) << def.out;
  EXPECT_NE(def.out.find("mytool-ran ok"), std::string::npos)
      << "benign: the toolchain still runs; " << def.out << def.err;

  // Through a readable root that contains it (the user adds ~/.config, ~/.local/share, ...):
  // covered. A root inside it is refused outright.
  const std::string parent = location.substr(0, location.rfind('/'));
  if (parent != home.home()) {
    auto wide = run(home.workspace(), {"--readable-root", parent}, attack);
    EXPECT_EQ(wide.out.find(secret), std::string::npos) << wide.out;
    EXPECT_NE(wide.out.find("attack-done"), std::string::npos) << wide.err;
  }
  if (CredentialDirectories().count(rel)) {
    auto inside = run(home.workspace(), {"--readable-root", location}, attack);
    EXPECT_EQ(inside.status, 125) << inside.out;
    EXPECT_EQ(inside.out.find(secret), std::string::npos);
  }

  // The home itself as the workspace: shown, with every credential location covered.
  auto in_home = run(home.home(), {}, attack + "; cat README 2>/dev/null; ls proj");
  EXPECT_EQ(in_home.out.find(secret), std::string::npos) << in_home.out;
  EXPECT_NE(in_home.out.find("README"), std::string::npos) << in_home.out << in_home.err;
  if (rel == ".gitconfig") {
    // Benign: the covered ~/.gitconfig shows the sanitized copy, so git has the identity.
    EXPECT_NE(in_home.out.find("lived@in.example"), std::string::npos) << in_home.out;
  }

  // Full read access and no sandbox home: the real home is readable, its credentials are not.
  auto full = run(home.workspace(), {"--read-access", "full", "--home", "none"},
                  attack + "; cat ~/.pyenv/version");
  EXPECT_EQ(full.out.find(secret), std::string::npos) << full.out;
  EXPECT_NE(full.out.find("3.99.0"), std::string::npos) << full.out << full.err;
}

// The locations the issue names, one test each; TableOfCredentialLocations below tries the
// whole table at once.
std::vector<std::tuple<Caller, std::string>> CredentialCases() {
  std::vector<std::tuple<Caller, std::string>> cases;
  for (Caller c : kAllCallers) {
    for (const char* rel : {".ssh",
                            ".gnupg",
                            ".aws",
                            ".azure",
                            ".config/gcloud",
                            ".kube",
                            ".docker",
                            ".netrc",
                            ".git-credentials",
                            ".config/gh",
                            ".pypirc",
                            ".npmrc",
                            ".password-store",
                            ".local/share/keyrings",
                            ".mozilla",
                            ".config/google-chrome",
                            ".config/chromium",
                            ".bash_history",
                            ".zsh_history",
                            ".gitconfig"}) {
      cases.emplace_back(c, rel);
    }
  }
  return cases;
}

std::string CredentialCaseName(
    const ::testing::TestParamInfo<std::tuple<Caller, std::string>>& info) {
  std::string name = std::string(ToString(std::get<0>(info.param))) + "_";
  for (char c : std::get<1>(info.param)) {
    name += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Locations, T1SandboxHomeCredential, ::testing::ValuesIn(CredentialCases()),
                         CredentialCaseName);

}  // namespace
}  // namespace anvil::testing
