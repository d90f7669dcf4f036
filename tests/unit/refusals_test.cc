// What a refusal is called and how to get past it (policy/refusals.h): classification by the
// view's parts, the advice, the record encoding and the summary.
#include "policy/refusals.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

namespace anvil {
namespace refusals_test {
namespace {

FileView SampleView() {
  FileView v;
  v.read_roots = {"/usr", "/etc", "/home/u/.pyenv", "/opt/tools"};
  v.writable_roots.push_back(
      {"/ws",
       {"/ws/.git", "/ws/.anvil", "/ws/vendor", "/repo/.git/worktrees/w", "/ws/tools/hooks",
        "/ws/lib/bare", "/ws/anvil.lock", "/ws/sub/Anvil.toml", "/ws/sub/.anvil"}});
  // What the git check found (a config's core.hooksPath, a bare repository).
  v.git_protected = {"/ws/.git", "/ws/tools/hooks", "/ws/lib/bare"};
  v.mapped_binds.push_back({"/state/home", "/home/u", true, 0, 0});
  v.mapped_binds.push_back({"/opt/rustup", "/home/u/.rustup", false, 0, 0});
  v.home_base = "/home/u";
  v.masked_dirs = {"/home/u/.config/gh"};
  v.credential_masks = {"/home/u/.config/gh"};
  // What the host runs (policy/host_autorun.h), in a writable root that holds it.
  v.writable_roots.push_back({"/home/u/notes", {"/home/u/notes/.bashrc", "/home/u/notes/bin"}});
  v.host_autorun = {"/home/u/notes/.bashrc", "/home/u/notes/bin", "/home/u/notes/.zshrc"};
  // Credential locations the same shield holds in a home a writable root holds: a missing
  // ~/.kube and ~/.Xauthority taken by placeholders, an existing ~/.aws/config kept read-only,
  // and ~/.cargo, a link pinned on the way to ~/.cargo/credentials (not a credential itself).
  v.host_autorun.insert(v.host_autorun.end(), {"/home/u/.kube", "/home/u/.Xauthority",
                                               "/home/u/.aws/config", "/home/u/.cargo"});
  v.host_credentials = {"/home/u/.kube", "/home/u/.aws", "/home/u/.Xauthority",
                        "/home/u/.cargo/credentials"};
  // Anvil's own state in a writable root that holds it (linux/trust_shield.h): read-only like a
  // git path, and not one --writable-git opens.
  v.writable_roots.push_back({"/home/u", {"/home/u/.config/anvil", "/home/u/.local/state/anvil"}});
  v.git_protected.push_back("/home/u/.config/anvil");
  v.anvil_state = {"/home/u/.config/anvil", "/home/u/.local/state/anvil"};
  return v;
}

TEST(ClassifyWrite, EachPartOfTheView) {
  SandboxPolicy p;
  p.workspace = "/ws";
  const FileView v = SampleView();
  struct Case {
    const char* path;
    WriteArea area;
    const char* root;
  };
  const Case cases[] = {
      {"/ws/.git/index.lock", WriteArea::kGit, "/ws/.git"},
      {"/ws/.git", WriteArea::kGit, "/ws/.git"},
      {"/repo/.git/worktrees/w/HEAD.lock", WriteArea::kGit, "/repo/.git/worktrees/w"},
      {"/ws/tools/hooks/pre-commit", WriteArea::kGit, "/ws/tools/hooks"},
      {"/ws/lib/bare/config", WriteArea::kGit, "/ws/lib/bare"},
      {"/ws/.anvil/x", WriteArea::kAnvilDir, "/ws/.anvil"},
      {"/ws/anvil.lock", WriteArea::kAnvilDir, "/ws/anvil.lock"},
      {"/ws/sub/Anvil.toml", WriteArea::kAnvilDir, "/ws/sub/Anvil.toml"},
      {"/ws/sub/.anvil/rules.toml", WriteArea::kAnvilDir, "/ws/sub/.anvil"},
      {"/ws/vendor/lib.c", WriteArea::kReadOnlySubpath, "/ws/vendor"},
      {"/home/u/.config/gh/hosts.yml", WriteArea::kCredential, "/home/u/.config/gh"},
      {"/home/u/.gitconfig", WriteArea::kOutside, ""},  // the home's own: never refused
      {"/home/u/.rustup/settings.toml", WriteArea::kReadable, "/home/u/.rustup"},
      {"/home/u/.pyenv/versions/3.11/lib/x.py", WriteArea::kReadable, "/home/u/.pyenv"},
      {"/opt/tools/bin/x", WriteArea::kReadable, "/opt/tools"},
      {"/usr/lib/python3/x", WriteArea::kSystem, "/usr"},
      {"/etc/hosts", WriteArea::kSystem, "/etc"},
      {"/var/lib/x", WriteArea::kOutside, ""},
      {"/home/u/notes/.bashrc", WriteArea::kHostAutorun, "/home/u/notes/.bashrc"},
      {"/home/u/notes/bin/ls", WriteArea::kHostAutorun, "/home/u/notes/bin"},
      {"/home/u/notes/.zshrc", WriteArea::kHostAutorun, "/home/u/notes/.zshrc"},
      {"/home/u/.kube/config", WriteArea::kCredential, "/home/u/.kube"},
      {"/home/u/.kube", WriteArea::kCredential, "/home/u/.kube"},
      {"/home/u/.Xauthority", WriteArea::kCredential, "/home/u/.Xauthority"},
      {"/home/u/.aws/config", WriteArea::kCredential, "/home/u/.aws"},
      {"/home/u/.cargo", WriteArea::kHostAutorun, "/home/u/.cargo"},
      {"/home/u/.config/anvil/rules/approved.toml", WriteArea::kAnvilDir, "/home/u/.config/anvil"},
      {"/home/u/.local/state/anvil/grants.json", WriteArea::kAnvilDir,
       "/home/u/.local/state/anvil"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.path);
    WriteClass got = ClassifyWrite(v, p, c.path);
    EXPECT_EQ(got.area, c.area) << ToString(got.area);
    EXPECT_EQ(got.root, c.root);
  }
  p.kind = PolicyKind::kReadOnly;
  FileView ro;
  ro.read_roots = {"/usr", "/ws"};
  EXPECT_EQ(ClassifyWrite(ro, p, "/ws/build/out.o").area, WriteArea::kReadOnlyPolicy);
  ro.full_read = true;
  EXPECT_EQ(ClassifyWrite(ro, p, "/var/x").area, WriteArea::kSystem);
}

TEST(Advise, OneLineWayPastEachRefusal) {
  auto write = [](WriteArea area, const std::string& path, const std::string& root) {
    Refusal r;
    r.kind = Refusal::Kind::kWrite;
    r.program = "x";
    r.subject = path;
    r.detail = "openat";
    r.area = area;
    r.root = root;
    return Advise(r, "/ws", "/home/u", NetworkMode::kNone);
  };
  auto git = write(WriteArea::kGit, "/ws/.git/index.lock", "/ws/.git");
  EXPECT_EQ(git.what, "write .git/index.lock");
  EXPECT_EQ(git.allow, "--writable-git");
  auto hook = write(WriteArea::kGit, "/ws/tools/hooks/pre-commit", "/ws/tools/hooks");
  EXPECT_EQ(hook.allow, "--writable-git");
  EXPECT_NE(hook.why.find("tools/hooks is git metadata or a path a repository's git config names"),
            std::string::npos)
      << hook.why;
  EXPECT_EQ(write(WriteArea::kReadable, "/home/u/.pyenv/x", "/home/u/.pyenv").allow,
            "--writable-root ~/.pyenv");
  EXPECT_EQ(write(WriteArea::kCredential, "/home/u/.ssh/k", "/home/u/.ssh").allow, "");
  EXPECT_EQ(write(WriteArea::kAnvilDir, "/ws/.anvil/x", "/ws/.anvil").allow, "");
  auto lock = write(WriteArea::kAnvilDir, "/ws/anvil.lock", "/ws/anvil.lock");
  EXPECT_EQ(lock.allow, "");
  EXPECT_NE(lock.why.find("anvil.lock pins the plugins' code"), std::string::npos) << lock.why;
  auto config = write(WriteArea::kAnvilDir, "/ws/sub/Anvil.toml", "/ws/sub/Anvil.toml");
  EXPECT_EQ(config.allow, "");
  EXPECT_NE(config.why.find("sub/Anvil.toml says which plugins run"), std::string::npos)
      << config.why;
  auto trust =
      write(WriteArea::kAnvilDir, "/home/u/.config/anvil/config.toml", "/home/u/.config/anvil");
  EXPECT_EQ(trust.allow, "") << "no flag opens Anvil's trust state (--writable-git does not)";
  EXPECT_NE(trust.why.find("~/.config/anvil is Anvil's own state"), std::string::npos) << trust.why;
  EXPECT_EQ(write(WriteArea::kOutside, "/srv/data/x", "").allow, "--writable-root /srv/data");
  EXPECT_EQ(write(WriteArea::kOutside, "/x", "").allow, "");  // never "--writable-root /"
  // A directory the host has but the view does not show (`mkdir -p /var/tmp/cache` stops at
  // /var/tmp) is named itself, not its parent; a file, or nothing on the host, as before.
  {
    HostIsDirectory host_dir = [](const std::string& p) { return p == "/var/tmp" || p == "/"; };
    auto advise = [&](const std::string& subject) {
      Refusal r{Refusal::Kind::kWrite, "ccache", subject, "mkdir", WriteArea::kOutside, "", ""};
      return Advise(r, "/ws", "/home/u", NetworkMode::kNone, host_dir);
    };
    EXPECT_EQ(advise("/var/tmp").allow, "--writable-root /var/tmp");
    EXPECT_NE(advise("/var/tmp").why.find("the host's /var/tmp is not shown"), std::string::npos);
    EXPECT_EQ(advise("/var/lib/x").allow, "--writable-root /var/lib");
    EXPECT_EQ(advise("/").allow, "");
    Refusal r{Refusal::Kind::kWrite, "ccache", "/var/tmp", "mkdir", WriteArea::kOutside, "", ""};
    EXPECT_NE(RefusalSummary({r}, 0, "/ws", "/home/u", NetworkMode::kNone, host_dir)
                  .find("allow with --writable-root /var/tmp\n"),
              std::string::npos);
  }
  // What the command wanted there (CCACHE_DIR=/var/tmp/cc: `mkdir -p /var/tmp/cc/0/1` stops at
  // /var/tmp): the host's directory just beneath the one not shown, on the way to it, is enough;
  // the directory not shown itself when the host has nothing there yet.
  {
    HostIsDirectory host_dir = [](const std::string& p) {
      return p == "/var/tmp" || p == "/var/tmp/cc" || p == "/var/tmp/cc/0" || p == "/";
    };
    auto advise = [&](const std::string& subject, const std::string& wanted) {
      Refusal r{Refusal::Kind::kWrite, "ccache", subject, "mkdir", WriteArea::kOutside, "", ""};
      r.wanted = wanted;
      return Advise(r, "/ws", "/home/u", NetworkMode::kNone, host_dir);
    };
    EXPECT_EQ(advise("/var/tmp", "/var/tmp/cc/0/1/tmp.x").allow, "--writable-root /var/tmp/cc");
    EXPECT_EQ(advise("/var/tmp", "/var/tmp/cc").allow, "--writable-root /var/tmp/cc");
    EXPECT_EQ(advise("/var/tmp", "/var/tmp/new/0").allow, "--writable-root /var/tmp");
    EXPECT_EQ(advise("/var/tmp", "/var/tmpx/cc").allow, "--writable-root /var/tmp");
    EXPECT_EQ(advise("/var/tmp", "").allow, "--writable-root /var/tmp");
    EXPECT_EQ(advise("/var/lib/x", "/var/lib/x/y").allow, "--writable-root /var/lib");
    // It travels with the record, and an old record without it still reads.
    Refusal r{Refusal::Kind::kWrite, "ccache", "/var/tmp", "mkdir", WriteArea::kOutside, "", ""};
    r.wanted = "/var/tmp/cc/0/1";
    Refusal back;
    ASSERT_TRUE(DecodeRefusal(EncodeRefusal(r, 240), back));
    EXPECT_EQ(back.wanted, "/var/tmp/cc/0/1");
    EXPECT_EQ(back.subject, "/var/tmp");
    r.wanted = "";
    ASSERT_TRUE(DecodeRefusal(EncodeRefusal(r, 240), back));
    EXPECT_EQ(back.wanted, "");
    r.wanted = "/var/tmp/" + std::string(400, 'a');  // no room: left out, never cut
    ASSERT_TRUE(DecodeRefusal(EncodeRefusal(r, 240), back));
    EXPECT_EQ(back.wanted, "");
    EXPECT_EQ(back.subject, "/var/tmp");
  }
  EXPECT_EQ(write(WriteArea::kReadOnlyPolicy, "/ws/x", "/ws").allow, "--policy workspace-write");
  // What the host runs: a directory may be named; a file is edited outside the sandbox.
  auto bin = write(WriteArea::kHostAutorun, "/home/u/.local/bin/ls", "/home/u/.local/bin");
  EXPECT_EQ(bin.allow, "--writable-root ~/.local/bin");
  EXPECT_NE(bin.why.find("~/.local/bin is run by the host"), std::string::npos) << bin.why;
  EXPECT_EQ(write(WriteArea::kHostAutorun, "/home/u/.bashrc", "/home/u/.bashrc").allow, "");
  // pip --user writes ~/.local/lib and ~/.local/bin together: the way past names a virtualenv,
  // or both halves, never ~/.local/bin alone (a host command whose package stayed behind).
  auto pip_user = [&](const std::string& program, WriteArea area, const std::string& path,
                      const std::string& root) {
    Refusal r;
    r.kind = Refusal::Kind::kWrite;
    r.program = program;
    r.subject = path;
    r.area = area;
    r.root = root;
    return Advise(r, "/ws", "/home/u", NetworkMode::kNone);
  };
  for (const std::string program : {"python3", "python3.11", "pip", "pip3"}) {
    for (auto [area, path, root] :
         {std::tuple{WriteArea::kReadable, "/home/u/.local/bin/tool", "/home/u/.local/bin"},
          std::tuple{WriteArea::kReadable, "/home/u/.local/lib/python3.11/site-packages/x.py",
                     "/home/u/.local/lib/python3.11/site-packages"},
          std::tuple{WriteArea::kHostAutorun, "/home/u/.local/bin/tool", "/home/u/.local/bin"},
          std::tuple{WriteArea::kHostAutorun, "/home/u/.local/lib/python3.11/x.pth",
                     "/home/u/.local/lib"}}) {
      auto a = pip_user(program, area, path, root);
      SCOPED_TRACE(program + " " + path);
      EXPECT_NE(a.allow.find("python3 -m venv .venv"), std::string::npos) << a.allow;
      EXPECT_NE(a.allow.find("--writable-root ~/.local/bin --writable-root ~/.local/lib"),
                std::string::npos)
          << a.allow;
    }
  }
  // Another program writing there keeps the one-root way past.
  EXPECT_EQ(
      pip_user("cp", WriteArea::kReadable, "/home/u/.local/bin/t", "/home/u/.local/bin").allow,
      "--writable-root ~/.local/bin");
  EXPECT_EQ(pip_user("python3", WriteArea::kReadable, "/home/u/.pyenv/x", "/home/u/.pyenv").allow,
            "--writable-root ~/.pyenv");
  EXPECT_EQ(bin.why.find("credential"), std::string::npos) << bin.why;

  Refusal net{
      Refusal::Kind::kNetwork, "curl", "93.184.216.34:443", "direct", WriteArea::kOutside, "", ""};
  auto none = Advise(net, "/ws", "/home/u", NetworkMode::kNone);
  EXPECT_NE(none.allow.find("--network proxy --allow-host"), std::string::npos);
  auto proxied = Advise(net, "/ws", "/home/u", NetworkMode::kProxy);
  EXPECT_NE(proxied.why.find("proxy"), std::string::npos);
  net.detail = "dns";
  EXPECT_EQ(Advise(net, "/ws", "", NetworkMode::kNone).what.rfind("name lookup", 0), 0u);
  // A loopback port nothing of the sandbox's listens on: the host's is another namespace.
  Refusal lo{
      Refusal::Kind::kNetwork, "curl", "127.0.0.1:5432", "loopback", WriteArea::kOutside, "", ""};
  auto host_lo = Advise(lo, "/ws", "/home/u", NetworkMode::kNone);
  EXPECT_EQ(host_lo.what, "connect to 127.0.0.1:5432");
  EXPECT_NE(host_lo.why.find("nothing listens there on the sandbox's own loopback"),
            std::string::npos)
      << host_lo.why;
  EXPECT_NE(host_lo.why.find("--network none"), std::string::npos) << host_lo.why;
  EXPECT_EQ(host_lo.allow.rfind("start the server inside the same sandboxed command", 0), 0u)
      << host_lo.allow;

  // A hint a later connect proved wrong (its port bound after all) is withdrawn: only that
  // address's loopback or DNS hint, never a direct refusal or a write.
  std::vector<Refusal> all = {
      lo,
      Refusal{Refusal::Kind::kNetwork, "curl", "[::1]:5432", "loopback", WriteArea::kOutside, "",
              ""},
      Refusal{Refusal::Kind::kNetwork, "dig", "127.0.0.53:53", "dns", WriteArea::kOutside, "", ""},
      Refusal{Refusal::Kind::kNetwork, "curl", "127.0.0.1:5432", "direct", WriteArea::kOutside, "",
              ""},
      Refusal{Refusal::Kind::kWrite, "sh", "127.0.0.1:5432", "open", WriteArea::kOutside, "", ""},
  };
  WithdrawLoopbackHint(all, "127.0.0.1:5432");
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].subject, "[::1]:5432");
  EXPECT_EQ(all[2].detail, "direct");
  EXPECT_EQ(all[3].kind, Refusal::Kind::kWrite);
  WithdrawLoopbackHint(all, "127.0.0.53:53");
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1].detail, "direct");
  WithdrawLoopbackHint(all, "127.0.0.1:9999");
  EXPECT_EQ(all.size(), 3u);

  auto host = Advise(
      ProxyRefusal("example.org:443", "denied: host not allowed: example.org:443 (allowed: a:443)"),
      "/ws", "", NetworkMode::kProxy);
  EXPECT_EQ(host.why, "host not on the --allow-host list");
  EXPECT_EQ(host.allow, "--allow-host example.org");
  EXPECT_EQ(Advise(ProxyRefusal("example.org:8080", "denied: host not allowed: example.org:8080"),
                   "/ws", "", NetworkMode::kProxy)
                .allow,
            "--allow-host example.org:8080");
  auto doc = Advise(ProxyRefusal("doc.test:443",
                                 "denied: doc.test resolves to 192.0.2.1 (192.0.2.0/24 "
                                 "documentation)"),
                    "/ws", "", NetworkMode::kProxy);
  EXPECT_EQ(doc.allow, "");
  EXPECT_NE(doc.why.find("resolves to 192.0.2.1"), std::string::npos);
}

// A write beside the workspace, in a directory that is only the way down to it in the sandbox
// home or the view's /tmp (WorkspaceWays): named as such, with the host's directory as the way
// past; the home's own top and the workspace's own files are not part of it.
TEST(ClassifyWrite, BesideTheWorkspaceIsTheWayDownToIt) {
  SandboxPolicy p;
  p.workspace = "/home/u/code/app";
  FileView v;
  v.workspace = "/home/u/code/app";
  v.home_base = "/home/u";
  v.writable_roots = {{"/home/u/code/app", {"/home/u/code/app/.git"}}};
  v.mapped_binds = {{"/state/home", "/home/u", true, 0, 0},
                    {"/opt/rustup", "/home/u/.rustup", false, 0, 0}};
  EXPECT_EQ(ClassifyWrite(v, p, "/home/u/code/out.txt").area, WriteArea::kWorkspaceWay);
  EXPECT_EQ(ClassifyWrite(v, p, "/home/u/code/out.txt").root, "/home/u/code");
  EXPECT_EQ(ClassifyWrite(v, p, "/home/u/code/feat").area, WriteArea::kWorkspaceWay);
  EXPECT_EQ(ClassifyWrite(v, p, "/home/u/code/app/.git/x").area, WriteArea::kGit);
  EXPECT_EQ(ClassifyWrite(v, p, "/home/u/.bash_history").area, WriteArea::kOutside);
  EXPECT_EQ(ClassifyWrite(v, p, "/home/u/.rustup/x").area, WriteArea::kReadable);

  p.workspace = v.workspace = "/tmp/sib/app";
  v.home_base.clear();
  v.mapped_binds.clear();
  v.writable_roots = {{"/tmp/sib/app", {}}};
  EXPECT_EQ(ClassifyWrite(v, p, "/tmp/sib/out.txt").area, WriteArea::kWorkspaceWay);
  EXPECT_EQ(ClassifyWrite(v, p, "/tmp/sib/out.txt").root, "/tmp/sib");
  EXPECT_EQ(ClassifyWrite(v, p, "/var/x").area, WriteArea::kOutside);
}

TEST(Advise, BesideTheWorkspaceNamesTheHostsDirectory) {
  Refusal r;
  r.kind = Refusal::Kind::kWrite;
  r.program = "sh";
  r.subject = "/home/u/code/out.txt";
  r.detail = "openat";
  r.area = WriteArea::kWorkspaceWay;
  r.root = "/home/u/code";
  auto a = Advise(r, "/home/u/code/app", "/home/u", NetworkMode::kNone);
  EXPECT_EQ(a.what, "write ~/code/out.txt");
  EXPECT_EQ(a.why,
            "~/code is only the way to the workspace in the sandbox (nothing else of the host's "
            "~/code is shown) and stays read-only");
  EXPECT_EQ(a.allow, "--writable-root ~/code");
  r.subject = "/tmp/sib/lib";  // mkdir -p ../lib/new: the first directory refused
  r.root = "/tmp/sib";
  EXPECT_EQ(Advise(r, "/tmp/sib/app", "/home/u", NetworkMode::kNone).allow,
            "--writable-root /tmp/sib");
  EXPECT_EQ(std::string(ToString(WriteArea::kWorkspaceWay)), "beside_workspace");
}

// A credential location the host-autorun shield holds (a placeholder for a missing one) is
// classified and advised as a credential: no flag, never --writable-root ~/.kube; what the
// host runs beside it still names its directory.
TEST(Advise, ACredentialTheShieldHoldsHasNoWayPast) {
  SandboxPolicy p;
  p.workspace = "/ws";
  const FileView v = SampleView();
  struct Case {
    const char* path;
    const char* allow;
    const char* why;
  };
  const Case cases[] = {
      {"/home/u/.kube/config", "", "~/.kube is a credential location"},
      {"/home/u/.Xauthority", "", "~/.Xauthority is a credential location"},
      {"/home/u/.aws/config", "", "~/.aws is a credential location"},
      {"/home/u/notes/bin/ls", "--writable-root ~/notes/bin", "~/notes/bin is run by the host"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.path);
    const WriteClass wc = ClassifyWrite(v, p, c.path);
    Refusal r{Refusal::Kind::kWrite, "sh", c.path, "openat", wc.area, wc.root, ""};
    const RefusalAdvice a = Advise(r, "/ws", "/home/u", NetworkMode::kNone);
    EXPECT_EQ(a.allow, c.allow);
    EXPECT_NE(a.why.find(c.why), std::string::npos) << a.why;
  }
}

// The user's git config in a workspace of $HOME is covered by the sanitized copy: the advice
// says so, and still offers no way past.
TEST(Advise, TheGitConfigIsShownSanitizedAndNeverChanged) {
  for (const char* path : {"/home/u/.gitconfig", "/home/u/.config/git/config"}) {
    SCOPED_TRACE(path);
    Refusal r{Refusal::Kind::kWrite, "git", path, "rename", WriteArea::kCredential, path, ""};
    const RefusalAdvice a = Advise(r, "/home/u", "/home/u", NetworkMode::kNone);
    EXPECT_EQ(a.allow, "");
    EXPECT_NE(a.why.find("is your git config, which the sandbox shows only as a sanitized copy"),
              std::string::npos)
        << a.why;
  }
  Refusal other{Refusal::Kind::kWrite, "sh", "/home/u/.netrc", "openat", WriteArea::kCredential,
                "/home/u/.netrc",      ""};
  EXPECT_NE(Advise(other, "/home/u", "/home/u", NetworkMode::kNone).why.find("neither shows"),
            std::string::npos);
}

TEST(RefusalRecord, RoundTripsAndIsBounded) {
  Refusal r{Refusal::Kind::kWrite,
            "git",
            "/ws/.git/index.lock",
            "openat",
            WriteArea::kGit,
            "/ws/.git",
            ""};
  Refusal back;
  ASSERT_TRUE(DecodeRefusal(EncodeRefusal(r, 239), back));
  EXPECT_EQ(back.kind, r.kind);
  EXPECT_EQ(back.program, "git");
  EXPECT_EQ(back.subject, r.subject);
  EXPECT_EQ(back.detail, "openat");
  EXPECT_EQ(back.area, WriteArea::kGit);
  EXPECT_EQ(back.root, "/ws/.git");
  r.subject = "/ws/" + std::string(1000, 'a') + "\x1f\n";
  std::string encoded = EncodeRefusal(r, 239);
  EXPECT_LE(encoded.size(), 239u);
  EXPECT_TRUE(DecodeRefusal(encoded, back));
  r = {Refusal::Kind::kWrite, "sh", "/home/u/.bashrc", "openat", WriteArea::kHostAutorun,
       "/home/u/.bashrc",     ""};
  ASSERT_TRUE(DecodeRefusal(EncodeRefusal(r, 239), back));
  EXPECT_EQ(back.area, WriteArea::kHostAutorun);
  for (const char* bad : {"", "w",
                          "x\x1f"
                          "0\x1f\x1f\x1f\x1f",
                          "w\x1f"
                          "99\x1f\x1f\x1f\x1f",
                          "w\x1f"
                          "1a\x1f\x1f\x1f\x1f"}) {
    EXPECT_FALSE(DecodeRefusal(bad, back)) << bad;
  }
}

TEST(RefusalSummary, NothingRefusedPrintsNothingAndRepeatsFold) {
  EXPECT_EQ(RefusalSummary({}, 0, "/ws", "/home/u", NetworkMode::kNone), "");
  std::vector<Refusal> refusals;
  for (int i = 0; i < 3; ++i) {
    refusals.push_back({Refusal::Kind::kWrite, "git", "/ws/.git/x" + std::to_string(i), "openat",
                        WriteArea::kGit, "/ws/.git", ""});
  }
  refusals.push_back(ProxyRefusal("example.org:443", "denied: host not allowed: example.org:443"));
  std::string s = RefusalSummary(refusals, 2, "/ws", "/home/u", NetworkMode::kProxy);
  EXPECT_NE(s.find("git: write .git/x0 (and 2 more)"), std::string::npos) << s;
  EXPECT_NE(s.find("allow with --writable-git"), std::string::npos) << s;
  EXPECT_NE(s.find("example.org:443 through the proxy - host not on the --allow-host list; "
                   "allow with --allow-host example.org"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("(2 more not listed)"), std::string::npos) << s;
  EXPECT_NE(s.find("--quiet"), std::string::npos);
}

}  // namespace
}  // namespace refusals_test
}  // namespace anvil

namespace anvil {
namespace refusals_test {
namespace {

// A program that maps a full /dev/shm dies of SIGBUS with no message of its own: after status
// 135 the summary names the size and --limit shm=; any other status says nothing.
TEST(SigbusHint, Status135NamesTheShmSizeAndTheFix) {
  const std::string h = SigbusHint(135, 64ull << 20);
  EXPECT_NE(h.find("SIGBUS"), std::string::npos) << h;
  EXPECT_NE(h.find("/dev/shm is 64M"), std::string::npos) << h;
  EXPECT_NE(h.find("fix: a larger one, --limit shm=SIZE"), std::string::npos) << h;
  EXPECT_EQ(h.back(), '\n');
  EXPECT_NE(SigbusHint(135, 2ull << 30).find("/dev/shm is 2G"), std::string::npos);
  EXPECT_NE(SigbusHint(135, 0).find("/dev/shm is its size"), std::string::npos);
  for (int status : {0, 1, 2, 125, 126, 127, 134, 136, 137, 139, 143}) {
    EXPECT_EQ(SigbusHint(status, 64ull << 20), "") << status;
  }
}

// A tool installed through a link the home view left out is "not found" with nothing else said:
// after a failure the summary names each such entry, where it leads and the --readable-root that
// shows it; after a success, or with nothing left out, nothing.
TEST(HomeNotShownHint, AFailedRunNamesWhatTheHomeLeftOutAndTheFlag) {
  const std::vector<std::pair<std::string, std::string>> one = {{"/home/u/.pyenv", "/opt/pyenv"}};
  const std::string h = HomeNotShownHint(127, one, "/home/u");
  EXPECT_NE(h.find("~/.pyenv leads to /opt/pyenv"), std::string::npos) << h;
  EXPECT_NE(h.find("--readable-root /opt/pyenv\n"), std::string::npos) << h;
  EXPECT_EQ(HomeNotShownHint(0, one, "/home/u"), "");
  EXPECT_EQ(HomeNotShownHint(127, {}, "/home/u"), "");
  // A path a shell would split is quoted for pasting; a home of "/" is not shown as "~".
  const std::string q = HomeNotShownHint(1, {{"/.tool", "/opt/my tool"}}, "/");
  EXPECT_NE(q.find("/.tool leads to /opt/my tool"), std::string::npos) << q;
  EXPECT_NE(q.find("--readable-root '/opt/my tool'"), std::string::npos) << q;
  std::vector<std::pair<std::string, std::string>> many;
  for (int i = 0; i < 5; ++i) many.push_back({"/h/t" + std::to_string(i), "/opt/t"});
  const std::string m = HomeNotShownHint(1, many, "/h");
  EXPECT_NE(m.find("~/t2 leads"), std::string::npos) << m;
  EXPECT_EQ(m.find("~/t3 leads"), std::string::npos) << m;
  EXPECT_NE(m.find("(and 2 more: --json lists them)"), std::string::npos) << m;
}

// Root's sandbox writes only what is root's in its idmapped workspace: a top another user owns
// (whatever its mode: the kernel gives no write access to an unmapped owner), or a group other
// than root's, gets the warning naming the owner and the fix.
TEST(RootForeignWorkspaceWarning, RootInAnotherUsersWorkspaceIsTold) {
  struct Row {
    bool root;
    uint32_t owner, group;
    std::string name;
    std::string says;  // "" for no warning
  };
  const std::vector<Row> rows = {
      {true, 1001, 1001, "anviltest", "belongs to anviltest"},
      {true, 1001, 0, "anviltest", "belongs to anviltest"},
      {true, 4242, 4242, "", "belongs to uid 4242"},
      {true, 0, 50, "root", "has group 50"},
      {true, 0, 0, "root", ""},              // root's own: idmapped as the command's
      {false, 1001, 1001, "anviltest", ""},  // an unprivileged caller is itself
  };
  for (const auto& row : rows) {
    const std::string w = RootForeignWorkspaceWarning(row.root, "/home/anviltest/proj", row.owner,
                                                      row.name, row.group);
    if (row.says.empty()) {
      EXPECT_EQ(w, "") << row.owner << ":" << row.group;
      continue;
    }
    EXPECT_NE(w.find("the workspace /home/anviltest/proj " + row.says), std::string::npos) << w;
    EXPECT_NE(w.find("Permission denied"), std::string::npos) << w;
    EXPECT_NE(w.find("fix: "), std::string::npos) << w;
    EXPECT_EQ(w.back(), '\n');
  }
  EXPECT_NE(RootForeignWorkspaceWarning(true, "/w", 1001, "anviltest", 1001)
                .find("fix: run it as its owner, `sudo -u anviltest anvil sandbox ...`"),
            std::string::npos);
  EXPECT_NE(RootForeignWorkspaceWarning(true, "/w", 4242, "", 4242).find("sudo -u #4242"),
            std::string::npos);
  EXPECT_NE(RootForeignWorkspaceWarning(true, "/w", 0, "root", 50).find("fix: chgrp -R root"),
            std::string::npos);
}

}  // namespace
}  // namespace refusals_test
}  // namespace anvil
