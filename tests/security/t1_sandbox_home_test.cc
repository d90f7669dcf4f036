// T1 for the command's home (policy/sandbox_home.h), as root and as an unprivileged user with a
// lived-in home: $HOME exists and is writable, what the command writes there stays in a
// per-workspace sandbox home (kept between runs of that workspace, never seen by another, never
// the real home), the toolchains of the home run, and no credential location of the home is
// readable — one attack per location of kHomeCredentials, each tried by path, by a recursive
// search, through a readable root that contains it, with the home as the workspace and with
// --read-access full --home none. Next to each: the benign thing that must keep working.
#include <fcntl.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "home_fixture.h"
#include "sandbox_harness.h"

namespace anvil::testing {
namespace t1_sandbox_home_test {
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

// `pip install --user` of a package with a console script, while the host's ~/.local/bin is
// shown read-only (it is on the host's PATH: code written there would run outside the sandbox).
// pip writes ~/.local/lib first, then the script: it once left the package in the sandbox home,
// importable in every later run, and failed at the script, with a way past
// (--writable-root ~/.local/bin) that would have put the command on the host without its
// package. Now it fails at its first write, nothing is installed anywhere, and the summary names
// a virtualenv or both halves. Benign neighbours: the same wheel into a virtualenv of the
// workspace, and pip --user in a home with no ~/.local/bin, which installs into the sandbox home.
TEST_P(T1SandboxHome, PipUserInstallsNothingHalfAndSaysHow) {
  if (anvil::testing::Run({kPython, "-m", "pip", "--version"}).status != 0) {
    GTEST_SKIP() << "SKIPPED: " << kPython << " -m pip is missing";
  }
  const std::string wheel_py = R"py(
import base64, hashlib, zipfile
files = {"acme/__init__.py": "def main():\n    print('acme-cli-ran')\n",
         "acme-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: acme\nVersion: 1.0\n",
         "acme-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
         "acme-1.0.dist-info/entry_points.txt": "[console_scripts]\nacme-cli = acme:main\n"}
record = []
with zipfile.ZipFile("acme-1.0-py3-none-any.whl", "w") as z:
    for name, text in files.items():
        z.writestr(name, text)
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text)}")
    record.append("acme-1.0.dist-info/RECORD,,")
    z.writestr("acme-1.0.dist-info/RECORD", "\n".join(record) + "\n")
)py";
  RunOptions o;
  o.cwd = home_.workspace();
  ASSERT_EQ(anvil::testing::Run({kPython, "-c", wheel_py}, o).status, 0);
  home_.GiveTo(caller_);
  const std::string pip_user =
      std::string(kPython) +
      " -m pip install -q --user --no-index --break-system-packages --no-warn-script-location "
      "acme-1.0-py3-none-any.whl";
  auto r = Sh(pip_user);
  EXPECT_NE(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("Read-only file system"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("~/.local/lib is read-only while your real ~/.local/bin is shown"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("python3 -m venv .venv"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--writable-root ~/.local/bin --writable-root ~/.local/lib"),
            std::string::npos)
      << r.err;
  // Nothing half-installed: not importable in the next run, no command, nothing on the host.
  auto next = Sh(std::string(kPython) +
                 " -c 'import acme' 2>&1; ls ~/.local/lib 2>&1; "
                 "command -v acme-cli || echo no-cli");
  EXPECT_NE(next.out.find("No module named 'acme'"), std::string::npos) << next.out << next.err;
  EXPECT_NE(next.out.find("no-cli"), std::string::npos) << next.out;
  EXPECT_FALSE(Exists(home_.home() + "/.local/bin/acme-cli"));
  EXPECT_FALSE(Exists(home_.home() + "/.local/lib"));
  EXPECT_NE(ReadFile(home_.home() + "/.local/bin/mytool").find("mytool-ran"), std::string::npos);
  // The host's own tools still run.
  EXPECT_EQ(Sh("mytool x").out, "mytool-ran x\n");

  // Benign: a virtualenv of the workspace.
  auto venv = Sh(std::string(kPython) +
                 " -m venv .venv && .venv/bin/pip install -q --no-index "
                 "acme-1.0-py3-none-any.whl && .venv/bin/acme-cli");
  EXPECT_EQ(venv.status, 0) << venv.out << venv.err;
  EXPECT_NE(venv.out.find("acme-cli-ran"), std::string::npos) << venv.out << venv.err;

  // Benign: no ~/.local/bin on the host, so the user site is the sandbox home's, whole, and
  // lasts for the workspace's later runs.
  std::filesystem::rename(home_.home() + "/.local/bin", home_.home() + "/.local/bin.off");
  auto own = Sh(pip_user + " && ~/.local/bin/acme-cli");
  EXPECT_EQ(own.status, 0) << own.out << own.err;
  EXPECT_NE(own.out.find("acme-cli-ran"), std::string::npos) << own.out << own.err;
  EXPECT_NE(Sh("~/.local/bin/acme-cli").out.find("acme-cli-ran"), std::string::npos);
  EXPECT_FALSE(Exists(home_.home() + "/.local/bin"));
  EXPECT_FALSE(Exists(home_.home() + "/.local/lib"));
  std::filesystem::rename(home_.home() + "/.local/bin.off", home_.home() + "/.local/bin");
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

// The global ignore file ~/.gitconfig names (core.excludesFile = ~/.gitignore_global, GitHub's
// suggested name) was kept in the sandbox's copy of the configuration but not shown, so
// `git add -A` inside committed the `.env` the host's git ignores. It is shown read-only at its
// path now, and so is a named attributes file. Benign neighbours: a name inside a credential
// location, or a FIFO, is not shown (nothing of the secret, no hang) and the run still works.
TEST_P(T1SandboxHome, TheGlobalIgnoreFileTheGitconfigNamesIsShownReadOnly) {
  const std::string h = home_.home();
  auto name_files = [&](const std::string& excludes, const std::string& attributes) {
    const std::string text = ReadFile(h + "/.gitconfig");
    const std::string base = text.substr(0, text.find("\n[core]"));
    WriteFile(h + "/.gitconfig", base + "\n[core]\n\texcludesFile = " + excludes +
                                     "\n\tattributesFile = " + attributes + "\n");
    home_.GiveTo(caller_);
  };
  Put(h + "/.gitignore_global", ".env\n");
  Put(h + "/.gitattributes_global", "*.bin binary\n");
  name_files("~/.gitignore_global", "~/.gitattributes_global");
  // A repository of its own for each run: the next run keeps the last one's .git read-only.
  auto script = [](const std::string& repo) {
    return "git init -q " + repo + " && cd " + repo +
           " && touch .env keep x.bin && git status --short && git check-attr diff x.bin";
  };
  auto r = Sh(script("r1"));
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("?? keep"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(r.out.find(".env"), std::string::npos) << "the host's git ignores it\n" << r.out;
  EXPECT_NE(r.out.find("x.bin: diff: unset"), std::string::npos) << r.out << r.err;
  // Shown, not handed over.
  auto write =
      Sh("echo '!.env' >> ~/.gitignore_global; echo x > ~/.gitignore_global; "
         "rm -f ~/.gitignore_global; cat ~/.gitignore_global");
  EXPECT_NE(write.out.find(".env"), std::string::npos) << write.out << write.err;
  EXPECT_EQ(ReadFile(h + "/.gitignore_global"), ".env\n");

  // Named inside a credential location: nothing of it is shown, and git runs without it.
  const auto& [key_path, key_secret] = home_.secrets().at(".ssh");
  name_files(key_path, "~/.gitattributes_global");
  auto cred = Sh(script("r2") + "; cat " + ShellQuote(key_path));
  EXPECT_NE(cred.out.find("?? keep"), std::string::npos) << cred.out << cred.err;
  EXPECT_EQ(cred.out.find(key_secret), std::string::npos) << cred.out;
  EXPECT_EQ(cred.err.find(key_secret), std::string::npos) << cred.err;
  // A FIFO is no ignore file (shown, git would wait on it for ever): not shown, the run works.
  ASSERT_EQ(::mkfifo((h + "/.gitignore_fifo").c_str(), 0644), 0);
  name_files("~/.gitignore_fifo", "~/.gitattributes_global");
  auto fifo = Sh(script("r3") + " && test ! -e ~/.gitignore_fifo && echo no-fifo");
  EXPECT_EQ(fifo.status, 0) << fifo.out << fifo.err;
  EXPECT_NE(fifo.out.find("?? .env"), std::string::npos) << fifo.out << fifo.err;
  EXPECT_NE(fifo.out.find("no-fifo"), std::string::npos) << fifo.out << fifo.err;

  // A link within the home (review: an earlier run of a workspace holding ~/dotfiles pointed
  // ~/dotfiles/gitignore at a document the sandbox home hides): not shown, nor what it leads to.
  Put(h + "/Documents/secret.txt", "TOPSECRET-linked\n");
  std::filesystem::create_directories(h + "/dotfiles");
  ASSERT_EQ(::symlink((h + "/Documents/secret.txt").c_str(), (h + "/dotfiles/gitignore").c_str()),
            0);
  name_files("~/dotfiles/gitignore", "~/.gitattributes_global");
  auto linked = Sh(script("r4") + "; cat ~/dotfiles/gitignore ~/Documents/secret.txt");
  EXPECT_EQ(linked.out.find("TOPSECRET-linked"), std::string::npos) << linked.out;
  EXPECT_EQ(linked.err.find("TOPSECRET-linked"), std::string::npos) << linked.err;
  EXPECT_NE(linked.out.find("?? keep"), std::string::npos) << linked.out << linked.err;
}

// Links of the real home on the way to what the view shows (review): an entry is found by
// following them, and a link below the home can be re-pointed by an earlier run whose workspace
// holds it. Attack: the default ignore file (~/.config/git/ignore, stow's deep link to
// ~/dotfiles/gi), the ignore file the configuration names (~/.gitignore_global ->
// dotfiles/gitignore, a link at the home's top); a run in ~/dotfiles points what both lead to at
// documents of the home, a run in ~/.config points the deep link itself at one; a later run
// elsewhere shows none of it. Benign neighbours, before the attack: the link at the home's top
// (which only a run with the whole home writable could make, and that run sees the home anyway)
// is shown and git ignores by it; a toolchain linked deeper in the home to another toolchain's
// place (~/go/bin -> ../.local/bin) and one linked into /usr run; the deep stow links to
// ~/dotfiles (the ignore file, ~/.cargo/bin) are not shown (docs/policy.md: why,
// and the way to name the place instead). ~/dotfiles/cargo-bin itself, on the PATH, stays
// read-only to the run in ~/dotfiles (policy/host_autorun.h).
TEST_P(T1SandboxHome, HomeLinksAnEarlierRunRepointedShowNothingHidden) {
  const std::string h = home_.home();
  const std::string dots = h + "/dotfiles";
  Put(dots + "/gitignore", ".env\n");
  Put(dots + "/gi", "*.dotfiles-gi\n");
  Put(dots + "/cargo-bin/dotcargo", "#!/bin/sh\necho dotcargo-ran\n", 0755);
  Put(h + "/Documents/secret.txt", "TOPSECRET-doc\n");
  Put(h + "/secret.txt", "TOPSECRET-home\n");
  std::filesystem::remove(h + "/.config/git/ignore");
  std::filesystem::remove_all(h + "/.cargo/bin");
  std::filesystem::remove_all(h + "/go/bin");
  std::filesystem::create_directories(h + "/.deno");
  ASSERT_EQ(::symlink("dotfiles/gitignore", (h + "/.gitignore_global").c_str()), 0);
  ASSERT_EQ(::symlink("../../dotfiles/gi", (h + "/.config/git/ignore").c_str()), 0);
  ASSERT_EQ(::symlink("../dotfiles/cargo-bin", (h + "/.cargo/bin").c_str()), 0);
  ASSERT_EQ(::symlink("../.local/bin", (h + "/go/bin").c_str()), 0);
  ASSERT_EQ(::symlink("/usr/bin", (h + "/.deno/bin").c_str()), 0);
  const std::string text = ReadFile(h + "/.gitconfig");
  WriteFile(h + "/.gitconfig", text.substr(0, text.find("\n[core]")) +
                                   "\n[core]\n\texcludesFile = ~/.gitignore_global\n");
  home_.GiveTo(caller_);
  const std::string look =
      "git init -q r && cd r && touch .env keep && git status --short; cd ..; rm -rf r; "
      "cat ~/.gitignore_global ~/.config/git/ignore ~/.cargo/bin/* ~/.cargo/bin/secret.txt; "
      "ls -la ~/.cargo/bin/ ~/.config/git/; ~/go/bin/mytool go-bin; "
      "test -x ~/.deno/bin/sh && echo deno-bin-shown; cat ~/secret.txt ~/Documents/secret.txt";
  auto before = Sh(look);
  EXPECT_NE(before.out.find("?? keep"), std::string::npos) << before.out << before.err;
  EXPECT_EQ(before.out.find("?? .env"), std::string::npos)
      << "the configuration's ignore file, a link at the home's top, is shown\n"
      << before.out;
  EXPECT_NE(before.out.find("mytool-ran go-bin"), std::string::npos) << before.out << before.err;
  EXPECT_NE(before.out.find("deno-bin-shown"), std::string::npos) << before.out << before.err;
  // The deep stow links lead to what only their link names: not shown.
  EXPECT_EQ(before.out.find("*.dotfiles-gi"), std::string::npos) << before.out;
  EXPECT_EQ(before.out.find("dotcargo-ran"), std::string::npos) << before.out;
  EXPECT_EQ(before.out.find("TOPSECRET"), std::string::npos) << before.out;
  // The run failed (cat of what is not shown): the summary names what the home left out, where
  // it leads and the flag that shows it.
  EXPECT_NE(before.status, 0);
  EXPECT_NE(before.err.find("~/.cargo/bin leads to " + dots +
                            "/cargo-bin; if the command "
                            "needed it: --readable-root " +
                            dots + "/cargo-bin"),
            std::string::npos)
      << before.err;

  // The attack: a run in ~/dotfiles re-points what the links lead to, a run in ~/.config the
  // deep link itself.
  caller_.Give(dots);
  // (A toolchain's target the run's workspace holds is kept read-only, a missing one held by a
  // placeholder, policy/host_autorun.h: PlanHomeView's tests cover the toolchains' links.)
  auto plant =
      Sh("rm -f gitignore gi && ln -s " + ShellQuote(h + "/secret.txt") + " gitignore && ln -s " +
             ShellQuote(h + "/Documents/secret.txt") + " gi && echo planted",
         {}, dots);
  ASSERT_NE(plant.out.find("planted"), std::string::npos) << plant.out << plant.err;
  auto later = Sh(look);
  for (const auto* r : {&later}) {
    EXPECT_EQ(r->out.find("TOPSECRET"), std::string::npos) << r->out;
    EXPECT_EQ(r->err.find("TOPSECRET"), std::string::npos) << r->err;
    EXPECT_NE(r->out.find("?? keep"), std::string::npos) << r->out << r->err;
  }
  auto config = Sh(
      "rm -f git/ignore && ln -s " + ShellQuote(h + "/secret.txt") + " git/ignore && echo planted",
      {}, h + "/.config");
  if (config.out.find("planted") != std::string::npos) {
    auto last = Sh(look);
    EXPECT_EQ(last.out.find("TOPSECRET"), std::string::npos) << last.out;
    EXPECT_EQ(last.err.find("TOPSECRET"), std::string::npos) << last.err;
  }
}

// The check-to-bind race (review): what a link leads to was judged, then bound by its path, and
// a run in the workspace holding a directory on the way could swap that directory for a link to
// documents in between. ~/.nvm -> dotfiles/tools/nvm (a link at the home's top: shown); a thread
// exchanges ~/dotfiles/tools (a real directory) with a link to ~/Private (holding nvm/secret.txt)
// as fast as it can while runs look at ~/.nvm: a run may fail to start (the object judged was
// replaced), or show the real nvm, never the documents. Benign neighbour: with nothing swapping,
// the toolchain runs.
TEST_P(T1SandboxHome, HomeLinkSwappedBetweenCheckAndBindShowsNothingHidden) {
  const std::string h = home_.home();
  std::filesystem::remove_all(h + "/.nvm");
  Put(h + "/dotfiles/tools/nvm/nvmish", "#!/bin/sh\necho nvmish-ran\n", 0755);
  Put(h + "/Private/nvm/secret.txt", "TOPSECRET-private\n");
  Put(h + "/Private/nvm/nvmish", "#!/bin/sh\necho TOPSECRET-ran\n", 0755);
  ASSERT_EQ(::symlink("dotfiles/tools/nvm", (h + "/.nvm").c_str()), 0);
  ASSERT_EQ(::symlink((h + "/Private").c_str(), (h + "/dotfiles/tools.alt").c_str()), 0);
  home_.GiveTo(caller_);
  const std::string look = "cat ~/.nvm/secret.txt; ~/.nvm/nvmish";
  auto calm = Sh(look);
  EXPECT_EQ(calm.status, 0) << calm.out << calm.err;
  EXPECT_NE(calm.out.find("nvmish-ran"), std::string::npos) << calm.out << calm.err;

  const int dir = ::open((h + "/dotfiles").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir, 0);
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    while (!stop) {
      ::renameat2(dir, "tools", dir, "tools.alt", RENAME_EXCHANGE);
    }
  });
  int shown = 0;
  for (int i = 0; i < 12; ++i) {
    auto r = Sh(look);
    EXPECT_EQ(r.out.find("TOPSECRET"), std::string::npos) << "run " << i << "\n" << r.out;
    EXPECT_EQ(r.err.find("TOPSECRET"), std::string::npos) << "run " << i << "\n" << r.err;
    if (r.out.find("nvmish-ran") != std::string::npos) ++shown;
  }
  stop = true;
  swapper.join();
  ::close(dir);
  RecordProperty("runs_showing_the_real_toolchain", shown);
}

// `includeIf` was dropped from the sandbox's copy of ~/.gitconfig, so a work repository's commits
// inside carried the home identity. Each kept condition's target is sanitized into a file of
// the sandbox home now, included under the same condition: the work repository has the work
// identity, the other the home one, and the target's core.fsmonitor runs nowhere. Benign
// neighbour: the repository outside the condition keeps the home identity.
TEST_P(T1SandboxHome, IncludeIfTargetsAreKeptSanitizedUnderTheirCondition) {
  const std::string h = home_.home();
  const std::string ws = home_.workspace();
  Put(h + "/w.gc",
      "[user]\n\temail = work@corp.example\n[core]\n\tfsmonitor = \"echo PWNED-include >&2; "
      "false\"\n[credential]\n\thelper = store\n");
  const std::string text = ReadFile(h + "/.gitconfig");
  WriteFile(h + "/.gitconfig", text + "[includeIf \"gitdir:" + ws + "/work/\"]\n\tpath = ~/w.gc\n");
  home_.GiveTo(caller_);
  auto r =
      Sh("rm -rf work other && mkdir work other && git init -q work/r && git init -q other/r "
         "&& echo \"work=$(git -C work/r config user.email)\" && "
         "echo \"other=$(git -C other/r config user.email)\" && git -C work/r status --short "
         "&& git -C work/r config --get-all core.fsmonitor; "
         "git -C work/r config --show-origin --get-all credential.helper; echo end");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("work=work@corp.example"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("other=lived@in.example"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(r.err.find("PWNED"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("echo PWNED"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("store"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("end"), std::string::npos) << r.out << r.err;
  // A file the copy includes is Anvil's at every start, whatever a command left there.
  auto plant =
      Sh("for f in ~/.gitconfig-include-*; do "
         "printf '[core]\\n\\tfsmonitor = \"echo PWNED-planted >&2; false\"\\n' >> \"$f\"; done; "
         "echo planted");
  EXPECT_NE(plant.out.find("planted"), std::string::npos) << plant.out << plant.err;
  auto next = Sh("git -C work/r status --short && git -C work/r config user.email");
  EXPECT_EQ(next.status, 0) << next.out << next.err;
  EXPECT_EQ(next.err.find("PWNED"), std::string::npos) << next.err;
  EXPECT_NE(next.out.find("work@corp.example"), std::string::npos) << next.out << next.err;
}

// ~/.gitconfig named as a root: --readable-root was refused with a fix for directories, and
// --writable-root failed the set-up ("open writable root ...: Not a directory"). It may hold a
// token, so it is still never shown, even when named: both are refused before anything runs,
// saying what it is and that the sandbox's ~/.gitconfig is a sanitized copy. Beside it: without
// the flag the copy gives git the identity, and the token is in neither.
TEST_P(T1SandboxHome, GitconfigNamedAsARootIsRefusedNamingTheCopy) {
  const std::string gitconfig = home_.home() + "/.gitconfig";
  for (const char* flag : {"--readable-root", "--writable-root"}) {
    auto r = Sh("cat ~/.gitconfig", {flag, gitconfig});
    EXPECT_EQ(r.status, 125) << flag << r.out << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find(gitconfig + " is your git configuration, which may hold credentials"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("sanitized copy"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(home_.gitconfig_token()), std::string::npos) << r.err;
  }
  auto copy = Sh("git config user.name; cat ~/.gitconfig");
  EXPECT_EQ(copy.status, 0) << copy.err;
  EXPECT_EQ(copy.out.find("Lived In"), 0u) << copy.out;
  EXPECT_EQ(copy.out.find(home_.gitconfig_token()), std::string::npos) << copy.out;
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

// The files Anvil keeps in the sandbox home (~/.gitconfig, the shells' start-up files) are left
// alone when they already are Anvil's, so what counts as Anvil's is judged on the file itself,
// never by name: whatever an earlier command, or anything outside the view, left in the place
// of one is replaced, and what it led to is not touched. A symlink to a file of the workspace
// with the very content, a hard link to another file of the home and one to a file outside the
// sandbox home (another name could change it after the check), a FIFO (the start must not
// block on it), the content with another mode, other bytes of the same length, and (as root,
// who can make one) the right file owned by someone else.
TEST_P(T1SandboxHome, HomeFilesThatAreNotExactlyAnvilsAreReplacedWhateverTheyLeadTo) {
  const std::string sandbox_home = JsonReport(SandboxSh(home_.workspace(), "true", {"--json"},
                                                        Options()))["home"]["sandbox_home"]
                                       .get<std::string>();
  auto anvils = [&](const char* name) { return ReadFile(sandbox_home + "/" + name); };
  const std::string bashrc = anvils(".bashrc"), zshrc = anvils(".zshrc"), kshrc = anvils(".kshrc"),
                    login = anvils(".login");
  ASSERT_FALSE(login.empty());
  // What the links lead to: a file of the workspace the view shows, one outside the sandbox home.
  const std::string target = home_.workspace() + "/target";
  Put(target, bashrc);
  const std::string outside = home_.home() + "/outside-kshrc";
  Put(outside, kshrc);
  caller_.Give(target);
  caller_.Give(outside);
  struct stat target_before {
  }, outside_before{};
  ASSERT_EQ(::lstat(target.c_str(), &target_before), 0);
  ASSERT_EQ(::lstat(outside.c_str(), &outside_before), 0);

  auto planted =
      Sh("ln -sfn " + ShellQuote(target) +
         " ~/.bashrc && cp ~/.zshrc ~/keep && ln -f ~/keep ~/.zshrc && rm -f ~/.cshrc "
         "&& mkfifo ~/.cshrc && chmod 0755 ~/.profile && head -c " +
         std::to_string(login.size()) + " /dev/zero | tr '\\0' x > ~/.login && echo planted");
  ASSERT_NE(planted.out.find("planted"), std::string::npos) << planted.err;
  // Between runs, from outside the view: a hard link to a file outside the sandbox home.
  ASSERT_EQ(Shell("ln -f " + ShellQuote(outside) + " " + ShellQuote(sandbox_home + "/.kshrc")), 0);

  auto next = Sh("cat ~/.bashrc ~/.zshrc ~/.cshrc >/dev/null && echo ran");
  EXPECT_EQ(next.status, 0) << next.out << next.err;
  EXPECT_NE(next.out.find("ran"), std::string::npos) << next.out << next.err;

  for (const char* name :
       {".bashrc", ".zshrc", ".cshrc", ".profile", ".login", ".kshrc", ".gitconfig"}) {
    struct stat st {};
    ASSERT_EQ(::lstat((sandbox_home + "/" + name).c_str(), &st), 0) << name;
    EXPECT_TRUE(S_ISREG(st.st_mode)) << name;
    EXPECT_EQ(st.st_nlink, 1u) << name;
    EXPECT_EQ(st.st_mode & 07777, 0644u) << name;
    EXPECT_EQ(st.st_uid, caller_.uid()) << name;
  }
  EXPECT_EQ(anvils(".login"), login);
  EXPECT_EQ(anvils(".zshrc"), zshrc);
  // What the links led to is as it was: the same file, content, link count and times.
  for (const auto& [path, before, content] :
       {std::tuple{target, target_before, bashrc}, std::tuple{outside, outside_before, kshrc}}) {
    struct stat after {};
    ASSERT_EQ(::lstat(path.c_str(), &after), 0) << path;
    EXPECT_EQ(after.st_ino, before.st_ino) << path;
    EXPECT_EQ(after.st_nlink, 1u) << path;
    EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec) << path;
    EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec) << path;
    EXPECT_EQ(ReadFile(path), content) << path;
  }
  struct stat keep {
  }, zsh{};
  ASSERT_EQ(::lstat((sandbox_home + "/keep").c_str(), &keep), 0);
  ASSERT_EQ(::lstat((sandbox_home + "/.zshrc").c_str(), &zsh), 0);
  EXPECT_NE(keep.st_ino, zsh.st_ino);

  // Anvil's file, owned by another user (root can make one from outside): replaced. Root's
  // sandbox sees its home through an id mapping that has no id for that user, and the kernel
  // removes no file of an unmapped owner there: the start stops, naming it, until it is gone.
  if (::geteuid() != 0) return;
  const std::string tcshrc = sandbox_home + "/.tcshrc";
  ASSERT_EQ(Shell("chown 4242 " + ShellQuote(tcshrc)), 0);
  auto owned = Sh("echo ran");
  if (Unprivileged()) {
    EXPECT_EQ(owned.status, 0) << owned.err;
  } else {
    EXPECT_EQ(owned.status, 125) << owned.out << owned.err;
    EXPECT_EQ(owned.out.find("ran"), std::string::npos);
    EXPECT_NE(owned.err.find(".tcshrc"), std::string::npos) << owned.err;
    ASSERT_EQ(Shell("rm -f " + ShellQuote(tcshrc)), 0);
    owned = Sh("echo ran");
    EXPECT_EQ(owned.status, 0) << owned.err;
  }
  EXPECT_NE(owned.out.find("ran"), std::string::npos) << owned.out << owned.err;
  struct stat st {};
  ASSERT_EQ(::lstat(tcshrc.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, caller_.uid());
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

// Benign: the files Anvil keeps in the sandbox home are written once, not at every start. A
// second start finds each as the first left it (the same inode, modification and change times).
TEST_P(T1SandboxHome, HomeFilesAnvilAlreadyWroteAreNotWrittenAgain) {
  const std::string sandbox_home = JsonReport(SandboxSh(home_.workspace(), "true", {"--json"},
                                                        Options()))["home"]["sandbox_home"]
                                       .get<std::string>();
  auto facts = [&] {
    std::map<std::string, std::tuple<ino_t, long, long, long, long>> out;
    for (const auto& entry : std::filesystem::directory_iterator(sandbox_home)) {
      struct stat st {};
      if (::lstat(entry.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      out[entry.path().filename()] = {st.st_ino, st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                                      st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
    }
    return out;
  };
  const auto first = facts();
  for (const char* name : {".gitconfig", ".bashrc", ".profile", ".zshenv", ".zshenv.zwc"}) {
    EXPECT_EQ(first.count(name), 1u) << name;
  }
  auto again = Sh("echo ran");
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(facts(), first);
}

// Readline's ~/.inputrc (a key bound to a macro types a command into the next interactive
// prompt), xonsh's ~/.xonshrc, and the directories PowerShell, nushell, xonsh and elvish load
// profiles, rc files and modules from once stayed as an earlier run left them in the sandbox
// home. Now .inputrc is Anvil's (the system's bindings, included), .xonshrc empty, and each
// directory an empty tmpfs per run. Beside it: a run still writes there for itself.
TEST_P(T1SandboxHome, OtherShellsStartupFilesAnEarlierRunPlantedAreGone) {
  const char* files[] = {".inputrc",
                         ".xonshrc",
                         ".config/powershell/profile.ps1",
                         ".local/share/powershell/Modules/evil/evil.psm1",
                         ".config/nushell/config.nu",
                         ".local/share/nushell/vendor/autoload/evil.nu",
                         ".config/xonsh/rc.xsh",
                         ".config/elvish/rc.elv"};
  std::string plant;
  for (const char* file : files) {
    const std::string path = std::string("~/") + file;
    plant += "mkdir -p \"$(dirname " + path + ")\" && echo PLANTED > " + path + " && cat " + path +
             " && ";
  }
  auto planted = Sh(plant + "echo planted");
  EXPECT_EQ(planted.status, 0) << planted.err;
  EXPECT_NE(planted.out.find("PLANTED\nPLANTED\nPLANTED\nPLANTED\nPLANTED\nPLANTED\nPLANTED\n"
                             "PLANTED\nplanted"),
            std::string::npos)
      << "benign: a run writes there for itself: " << planted.out << planted.err;
  auto next =
      Sh("cat ~/.inputrc ~/.xonshrc ~/.config/powershell/profile.ps1 ~/.config/nushell/config.nu "
         "~/.config/xonsh/rc.xsh ~/.config/elvish/rc.elv 2>/dev/null; "
         "find ~/.config/powershell ~/.local/share/powershell ~/.config/nushell "
         "~/.local/share/nushell ~/.config/xonsh ~/.config/elvish -mindepth 1 | wc -l");
  EXPECT_EQ(next.out.find("PLANTED"), std::string::npos) << next.out << next.err;
  EXPECT_TRUE(next.out.ends_with("\n0\n")) << next.out << next.err;
  EXPECT_NE(next.out.find("$include /etc/inputrc\n"), std::string::npos) << next.out;
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

// A workspace beneath a directory of the home (~/code/app): the directories on the way down to it
// exist in the view only as that way, not as the host's. A write beside the workspace once
// landed in the sandbox home (exit 0, the file out of sight, `git worktree add ../feat` a
// worktree the host's repository recorded but never got); now it fails (EROFS) and the summary
// names the way past. Next to it what must keep working: the workspace, the home's own top
// (dotfiles tools write there), its caches, /tmp, and --writable-root for the host's directory.
TEST_P(T1SandboxHome, WritesBesideTheWorkspaceFailInsteadOfLandingInTheSandboxHome) {
  const std::string code = home_.home() + "/code";
  const std::string ws = code + "/app";
  Shell("mkdir -p " + ShellQuote(ws) + " " + ShellQuote(code + "/lib") + " && echo 1 > " +
        ShellQuote(code + "/lib/x"));
  caller_.Give(code);
  auto beside = Sh("echo hi > ../out.txt", {}, ws);
  EXPECT_NE(beside.status, 0) << beside.out << beside.err;
  EXPECT_NE(beside.err.find("Read-only file system"), std::string::npos) << beside.err;
  EXPECT_NE(beside.err.find("write ~/code/out.txt - ~/code is only the way to the workspace in "
                            "the sandbox"),
            std::string::npos)
      << beside.err;
  EXPECT_NE(beside.err.find("allow with --writable-root ~/code"), std::string::npos) << beside.err;
  auto sibling = Sh("mkdir ../feat || mkdir -p ../lib/new || ls -A ..", {}, ws);
  EXPECT_EQ(sibling.out, "app\n") << "only the way down is shown: " << sibling.err;
  auto report = JsonReport(SandboxSh(ws, "true", {"--json"}, Options(ws)));
  ASSERT_TRUE(report.is_object());
  const std::string sandbox_home = report["home"]["sandbox_home"].get<std::string>();
  for (const char* rel : {"/code/out.txt", "/code/feat", "/code/lib"}) {
    EXPECT_FALSE(Exists(sandbox_home + rel)) << rel << " landed in the sandbox home";
    if (std::string(rel) != "/code/lib") {
      EXPECT_FALSE(Exists(home_.home() + rel)) << rel;
    }
  }

  // The benign neighbours: the workspace, the home's top and its caches, /tmp.
  auto benign =
      Sh("echo a > inside.txt && echo b > ~/.bash_history && echo c > ~/.npmrc && "
         "mkdir -p ~/.cache/t ~/notes && echo d > ~/.cache/t/f && echo e > ~/notes/f && "
         "echo f > /tmp/f && cat inside.txt ~/.bash_history ~/.npmrc ~/.cache/t/f ~/notes/f /tmp/f",
         {}, ws);
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_EQ(benign.out, "a\nb\nc\nd\ne\nf\n") << benign.err;
  EXPECT_EQ(ReadFile(ws + "/inside.txt"), "a\n");

  // The way past: the host's directory, named.
  auto named = Sh("cat ../lib/x && echo hi > ../out.txt", {"--writable-root", code}, ws);
  EXPECT_EQ(named.status, 0) << named.err;
  EXPECT_EQ(named.out, "1\n");
  EXPECT_EQ(ReadFile(code + "/out.txt"), "hi\n");
}

// A workspace beneath a directory of /tmp (/tmp/x/app): /tmp/x is only the way down in the
// view, read-only; /tmp itself (the workspace's kept /tmp) stays writable and kept.
TEST_P(T1SandboxHome, WritesBesideAWorkspaceInTmpFailButTmpStaysWritable) {
  TempDir dir("anvil-beside", "/tmp");
  const std::string ws = dir.path() + "/app";
  Shell("mkdir -p " + ShellQuote(ws) + " " + ShellQuote(dir.path() + "/lib") + " && echo 1 > " +
        ShellQuote(dir.path() + "/lib/x"));
  caller_.Give(dir.path());
  auto beside = Sh("echo hi > ../out.txt", {}, ws);
  EXPECT_NE(beside.status, 0) << beside.out << beside.err;
  EXPECT_NE(beside.err.find("Read-only file system"), std::string::npos) << beside.err;
  EXPECT_NE(beside.err.find("allow with --writable-root " + dir.path()), std::string::npos)
      << beside.err;
  EXPECT_FALSE(Exists(dir.path() + "/out.txt"));
  const std::string token = UniqueToken("TMP");
  auto tmp = Sh("echo " + token + " > /tmp/top-" + token + " && echo wrote", {}, ws);
  EXPECT_EQ(tmp.status, 0) << tmp.err;
  auto kept = Sh("cat /tmp/top-" + token, {}, ws);
  EXPECT_EQ(kept.out, token + "\n") << kept.err;
  auto named = Sh("echo hi > ../out.txt", {"--writable-root", dir.path()}, ws);
  EXPECT_EQ(named.status, 0) << named.err;
  EXPECT_EQ(ReadFile(dir.path() + "/out.txt"), "hi\n");
}

// A workspace reached through a symlink (cwd /tmp/x/link-proj -> /tmp/x/real-proj, $PWD the link)
// was in the view only at its resolved path: absolute paths recorded through the link on the host
// (a CMake build directory configured there) named nothing inside. Now the link's path leads to
// the workspace in the view too and the command starts there ($PWD, `pwd`), as bubblewrap's
// `--bind` + `--chdir` of that path would; the link cannot be replaced, leads nowhere else, and
// writes through it are the workspace's. Beside it: the real path, and a $PWD that leads
// elsewhere (ignored, as `pwd -L` ignores it).
TEST_P(T1SandboxHome, AWorkspaceReachedThroughASymlinkIsThereByThatPathToo) {
  TempDir dir("anvil-logical", "/tmp");
  const std::string real = dir.path() + "/real-proj";
  const std::string link = dir.path() + "/link-proj";
  Shell("mkdir -p " + ShellQuote(real + "/sub") + " && echo marker > " +
        ShellQuote(real + "/marker") + " && ln -s real-proj " + ShellQuote(link) + " && echo " +
        ShellQuote(link + "/marker") + " > " + ShellQuote(real + "/recorded"));
  caller_.Give(dir.path());
  auto in = [&](const std::string& cwd, const std::string& pwd, const std::string& script,
                const std::vector<std::string>& flags = {}) {
    RunOptions o = Options();
    o.cwd = cwd;
    o.env = home_.Env({"PWD=" + pwd});
    std::vector<std::string> argv = {AnvilBin(), "sandbox"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
    return ::anvil::testing::Run(argv, Opts(o));
  };
  const std::string script =
      "pwd; echo \"$PWD\"; pwd -P; cat \"$(cat recorded)\" && echo through > " +
      ShellQuote(link + "/written") + " && cat " + ShellQuote(link + "/written");
  auto r = in(link, link, script);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, link + "\n" + link + "\n" + real + "\nmarker\nthrough\n") << r.err;
  EXPECT_EQ(ReadFile(real + "/written"), "through\n");
  // --workdir beneath it keeps the logical path too.
  auto sub = in(link, link, "pwd", {"--workdir", "sub"});
  EXPECT_EQ(sub.out, link + "/sub\n") << sub.err;

  // The link is the view's: it cannot be replaced or removed, and the host's stays as it was.
  auto replace = in(link, link,
                    "ln -sfn / " + ShellQuote(link) + "; rm -f " + ShellQuote(link) +
                        "; readlink " + ShellQuote(link));
  EXPECT_EQ(replace.out, real + "\n") << replace.err;
  EXPECT_NE(replace.err.find("Read-only file system"), std::string::npos) << replace.err;
  char target[256] = {};
  ASSERT_GT(::readlink(link.c_str(), target, sizeof(target) - 1), 0);
  EXPECT_STREQ(target, "real-proj");

  // The real path: as before. A $PWD that does not lead to the current directory: ignored.
  auto plain = in(real, real, "pwd; echo \"$PWD\"");
  EXPECT_EQ(plain.out, real + "\n" + real + "\n") << plain.err;
  auto stale = in(real, link + "-elsewhere", "pwd; test -e " + ShellQuote(link) + " || echo none");
  EXPECT_EQ(stale.out, real + "\nnone\n") << stale.err;

  // In the home: ~/links/app -> ~/code/app, the way down to each read-only.
  const std::string home_real = home_.home() + "/code/app";
  const std::string home_link = home_.home() + "/links/app";
  Shell("mkdir -p " + ShellQuote(home_real) + " " + ShellQuote(home_.home() + "/links") +
        " && ln -s ../code/app " + ShellQuote(home_link));
  caller_.Give(home_.home() + "/code");
  caller_.Give(home_.home() + "/links");
  auto home = in(home_link, home_link, "pwd; pwd -P; touch ../x || echo refused");
  EXPECT_EQ(home.out, home_link + "\n" + home_real + "\nrefused\n") << home.err;

  // At the top of the home (~/top-link -> ~/code/app) the link is a name of the sandbox home
  // itself, which is kept: it stayed there after the run, among what tools keep in the home.
  // Now the run that ends last takes it away; what a command made there itself stays.
  const std::string top_link = home_.home() + "/top-link";
  Shell("ln -s code/app " + ShellQuote(top_link));
  auto top = in(top_link, top_link,
                "pwd; cd \"$PWD\" && echo entered; ln -s /etc ~/mine; readlink ~/top-link");
  EXPECT_EQ(top.out, top_link + "\nentered\n" + home_real + "\n") << top.err;
  auto report = JsonReport(in(top_link, top_link, "true", {"--json"}));
  ASSERT_TRUE(report.is_object());
  const std::string sandbox_home = report["home"]["sandbox_home"].get<std::string>();
  EXPECT_FALSE(
      std::filesystem::is_symlink(std::filesystem::symlink_status(sandbox_home + "/top-link")))
      << "the workspace's link was left in the sandbox home";
  EXPECT_TRUE(std::filesystem::is_symlink(std::filesystem::symlink_status(sandbox_home + "/mine")))
      << "a link the command made is the command's";
  // The host's own link is untouched.
  EXPECT_TRUE(std::filesystem::is_symlink(std::filesystem::symlink_status(top_link)));
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
// An activated virtualenv outside the workspace (~/envs/v2, $VIRTUAL_ENV): its directory is
// shown read-only, so its own interpreter runs by its path and sys.prefix is the environment,
// and a script of its bin/ (pip) runs too. Without $VIRTUAL_ENV its bin/python, a link to the
// system's interpreter, is refused (126) instead of silently running /usr/bin/python3, naming
// --readable-root of the environment (the fix that runs it) and activating it; a program in a
// directory the view does not show names that directory. Neighbours: an environment variable naming
// a credential location, a directory that holds the workspace, one that is no environment, or one
// another user owns shows nothing.
TEST_P(T1SandboxHome, AnActivatedVirtualenvOutsideTheWorkspaceRunsItself) {
  if (!Exists(kPython)) GTEST_SKIP() << "SKIPPED: " << kPython << " is missing";
  const std::string home = home_.home();
  auto make_venv = [&](const std::string& dir) {
    Put(dir + "/pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = false\n");
    std::filesystem::create_directories(dir + "/bin");
    std::filesystem::create_symlink(kPython, dir + "/bin/python");
    Put(dir + "/bin/tool", "#!" + dir + "/bin/python\nimport sys\nprint('tool', sys.prefix)\n",
        0755);
    Put(dir + "/lib/marker", "in-the-venv\n");
  };
  const std::string venv = home + "/envs/v2";
  make_venv(venv);
  Put(home + "/tools/bin/plain", "#!/bin/sh\necho plain-ran\n", 0755);
  home_.GiveTo(caller_);
  auto env_with = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> env = {"PATH=" + venv + "/bin:" + home + "/tools/bin:/usr/bin:/bin",
                                    "HOME=" + home, "LANG=C.UTF-8"};
    env.insert(env.end(), extra.begin(), extra.end());
    return env;
  };
  auto run = [&](const std::vector<std::string>& command, const std::vector<std::string>& extra,
                 const std::string& ws = "") {
    RunOptions o;
    o.cwd = ws.empty() ? home_.workspace() : ws;
    o.env = env_with(extra);
    return Sandbox(o.cwd, {}, command, Opts(o));
  };
  const std::string prefix = "import sys; print(sys.prefix)";
  auto py = run({"python", "-c", prefix}, {"VIRTUAL_ENV=" + venv});
  EXPECT_EQ(py.status, 0) << py.err;
  EXPECT_EQ(py.out, venv + "\n") << py.err;
  auto tool = run({"tool"}, {"VIRTUAL_ENV=" + venv});
  EXPECT_EQ(tool.out, "tool " + venv + "\n") << tool.err;
  auto shown = run({"sh", "-c",
                    "cat \"$VIRTUAL_ENV/lib/marker\"; (echo x > \"$VIRTUAL_ENV/w\") "
                    "2>/dev/null; echo write=$?"},
                   {"VIRTUAL_ENV=" + venv});
  EXPECT_EQ(shown.out.find("in-the-venv\nwrite="), 0u) << shown.out << shown.err;
  EXPECT_EQ(shown.out.find("write=0"), std::string::npos) << shown.out;
  EXPECT_FALSE(Exists(venv + "/w"));

  // Not activated: refused, naming the directory and the fix, never the system's Python.
  auto bare = run({"python", "-c", prefix}, {});
  EXPECT_EQ(bare.status, 126) << bare.out << bare.err;
  EXPECT_EQ(bare.out, "");
  EXPECT_NE(bare.err.find("is not in the sandbox's view"), std::string::npos) << bare.err;
  // The fix names the environment, not its bin/ (shown alone, its python is the system's), and
  // the way without a flag: activating it.
  EXPECT_NE(bare.err.find("--readable-root " + venv + ", its environment"), std::string::npos)
      << bare.err;
  EXPECT_NE(bare.err.find("an activated environment is shown by itself)"), std::string::npos)
      << bare.err;
  {
    RunOptions o;
    o.cwd = home_.workspace();
    o.env = env_with({});
    auto fixed = Sandbox(o.cwd, {"--readable-root", venv}, {"python", "-c", prefix}, Opts(o));
    EXPECT_EQ(fixed.status, 0) << fixed.err;
    EXPECT_EQ(fixed.out, venv + "\n") << "the fix the message names does not run the venv's python";
  }
  // A program in a directory the view does not show: the message names it and the fix.
  auto plain = run({"plain"}, {});
  EXPECT_EQ(plain.status, 126) << plain.out << plain.err;
  EXPECT_NE(plain.err.find(home + "/tools/bin"), std::string::npos) << plain.err;
  EXPECT_NE(plain.err.find("--readable-root"), std::string::npos) << plain.err;

  // A long directory (the report's message has room for 239 bytes): the path gives way, never
  // the fix.
  std::string long_dir = home + "/tools";
  while (long_dir.size() < 220) long_dir += "/a-rather-long-directory-name";
  long_dir += "/bin";
  Put(long_dir + "/longtool", "#!/bin/sh\necho long-ran\n", 0755);
  home_.GiveTo(caller_);
  {
    RunOptions o;
    o.cwd = home_.workspace();
    o.env = {"PATH=" + long_dir + ":/usr/bin:/bin", "HOME=" + home, "LANG=C.UTF-8"};
    auto long_path = Sandbox(o.cwd, {}, {"longtool"}, Opts(o));
    EXPECT_EQ(long_path.status, 126) << long_path.out << long_path.err;
    EXPECT_NE(long_path.err.find("(fix: --readable-root " + home + "/tools/"), std::string::npos)
        << long_path.err;
    EXPECT_NE(long_path.err.find("/bin, or readable_roots in config.toml)"), std::string::npos)
        << long_path.err;
  }

  // A credential location made to look like an environment shows nothing.
  const auto& aws = home_.secrets().at(".aws");
  Put(home + "/.aws/pyvenv.cfg", "home = /usr/bin\n");
  home_.GiveTo(caller_);
  auto cred = run({"sh", "-c", "cat " + ShellQuote(aws.first) + " 2>&1; true"},
                  {"VIRTUAL_ENV=" + home + "/.aws"});
  EXPECT_EQ(cred.out.find(aws.second), std::string::npos) << cred.out;
  // A directory that holds the workspace, one that is no environment, one another user owns.
  const std::string outer = home + "/outer";
  Put(outer + "/pyvenv.cfg", "home = /usr/bin\n");
  Put(outer + "/sibling.txt", "outer-sibling\n");
  Put(outer + "/proj/README", "inner\n");
  const std::string notes = home + "/notes";
  Put(notes + "/note.txt", "just-notes\n");
  const std::string theirs = home + "/theirs";
  make_venv(theirs);
  home_.GiveTo(caller_);
  ASSERT_EQ(Shell("chown -R 65534:65534 " + ShellQuote(theirs)), 0);
  auto holds =
      run({"sh", "-c", "cat ../sibling.txt 2>&1; true"}, {"VIRTUAL_ENV=" + outer}, outer + "/proj");
  EXPECT_EQ(holds.out.find("outer-sibling"), std::string::npos) << holds.out;
  auto not_env = run({"sh", "-c", "cat " + ShellQuote(notes + "/note.txt") + " 2>&1; true"},
                     {"VIRTUAL_ENV=" + notes, "CONDA_PREFIX=" + notes});
  EXPECT_EQ(not_env.out.find("just-notes"), std::string::npos) << not_env.out;
  auto other = run({"sh", "-c", "cat " + ShellQuote(theirs + "/lib/marker") + " 2>&1; true"},
                   {"VIRTUAL_ENV=" + theirs});
  EXPECT_EQ(other.out.find("in-the-venv"), std::string::npos) << other.out;
}

// A conda environment ($CONDA_PREFIX, conda-meta/) outside the workspace is shown the same way.
TEST_P(T1SandboxHome, AnActivatedCondaEnvironmentIsShownReadOnly) {
  const std::string env = home_.home() + "/conda/envs/ml";
  Put(env + "/conda-meta/history", "==> 2024 <==\n");
  Put(env + "/bin/mlt", "#!/bin/sh\necho mlt-ran\n", 0755);
  home_.GiveTo(caller_);
  RunOptions o = Options();
  o.env = home_.Env({"CONDA_PREFIX=" + env});
  auto r = Sandbox(home_.workspace(), {}, {env + "/bin/mlt"}, o);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "mlt-ran\n") << r.err;
}

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
}  // namespace t1_sandbox_home_test
}  // namespace anvil::testing
