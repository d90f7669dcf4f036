// T3 through the gateway: what a tool run by sys.exec (rg, fd) can read is exactly what
// sys.fs.read allows the same grant. Path operands and path-valued flags that a symlink takes out
// of the workspace (to /etc, /proc, /usr, another workspace) are refused; the tool's view holds
// its own executable and libraries and the files the grant reads, nothing of /etc or /usr as a
// whole; a glob grant ("*.md") shows only the matching files, not everything under its literal
// prefix; hard-linked files are neither read nor listed by content; values that make the tool
// allocate are capped and its memory is bounded. Each attack sits next to the benign call that
// must keep working.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <set>
#include <thread>

#include "common/unique_fd.h"
#include "gateway_fixture.h"

namespace anvil::testing {
namespace t3_gateway_exec_view_test {
namespace {

using namespace std::chrono_literals;

Grant ToolGrant(std::vector<std::string> read) {
  Grant g;
  g.fs_read = std::move(read);
  g.exec = {"rg", "fd"};
  return g;
}

std::set<std::string> LinesOf(const std::string& text) {
  std::set<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.insert(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// Holds every open(2) of a workspace file until released (a write lease), so that a tool stays
// inside its sandbox while the test looks at its view from outside.
class HeldFile {
 public:
  HeldFile(const std::string& path, const std::string& content) {
    signal(SIGIO, SIG_IGN);
    WriteFile(path, content);
    fd_ = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    EXPECT_EQ(::fcntl(fd_.Get(), F_SETLEASE, F_WRLCK), 0) << std::strerror(errno);
  }
  ~HeldFile() { Release(); }
  void Release() {
    if (fd_) ::fcntl(fd_.Get(), F_SETLEASE, F_UNLCK);
    fd_.Reset();
  }

 private:
  UniqueFd fd_;
};

// Every path of the tree at `root` (not following symlinks), relative, with a type letter:
// "d /usr", "f /usr/bin/rg", "l /lib -> usr/lib". Mount points of other file systems are entered.
void Tree(const std::string& root, const std::string& rel, std::set<std::string>& out,
          int depth = 0) {
  if (depth > 40) return;
  DIR* d = ::opendir((root + rel).c_str());
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = rel + "/" + name;
    struct stat st {};
    if (::lstat((root + path).c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      out.insert("d " + path);
      Tree(root, path, out, depth + 1);
    } else if (S_ISLNK(st.st_mode)) {
      char target[4096];
      ssize_t n = ::readlink((root + path).c_str(), target, sizeof(target) - 1);
      out.insert("l " + path + " -> " + std::string(target, n > 0 ? static_cast<size_t>(n) : 0));
    } else {
      out.insert("f " + path);
    }
  }
  ::closedir(d);
}

class ExecView : public GatewayTest {
 protected:
  struct Outcome {
    bool ok = false;
    std::string error;
    int code = -1;
    std::string out, err;
  };
  Outcome Exec(ipc::GatewayClient& client, const std::string& program,
               const std::vector<std::string>& args) {
    Outcome o;
    auto r = client.Call("exec", {program, nlohmann::json(args).dump(), ""});
    EXPECT_TRUE(r) << r.error().ToString();
    if (!r) return o;
    if (!r->ok) {
      o.error = r->ErrorText();
      return o;
    }
    if (r->fields.size() != 6) return o;
    o.ok = true;
    o.code = std::atoi(r->fields[0].c_str());
    o.out = r->fields[1];
    o.err = r->fields[2];
    return o;
  }
  std::unique_ptr<ipc::GatewayClient> Plugin(const std::vector<std::string>& read,
                                             const std::string& id = "example.view") {
    auto token = RegisterPlugin(id, ToolGrant(read));
    return Client(token, id);
  }
  std::string FsRead(ipc::GatewayClient& client, const std::string& path) {
    auto r = client.Call("fs.read", {path});
    if (!r) return "io: " + r.error().ToString();
    return r->ok ? "ok" : r->ErrorText();
  }
  void Mkdir(const std::string& rel) { Shell("mkdir -p '" + ws_->path() + "/" + rel + "'"); }
  void Link(const std::string& target, const std::string& rel) {
    ASSERT_EQ(::symlink(target.c_str(), (ws_->path() + "/" + rel).c_str()), 0) << rel;
  }
};

// Section 5 of the issue: a plugin granted "src/**" names links in src that lead to /etc, /proc,
// /usr, another workspace or above the workspace, as positionals and through every path-valued
// flag. Each is refused before anything runs; links that stay inside the grant still work.
TEST_F(ExecView, OperandLinksThatLeaveTheWorkspaceAreRefusedInEveryPosition) {
  TempDir other("anvil-other-ws");
  const std::string secret = UniqueToken("OTHER-WORKSPACE-SECRET");
  WriteFile(other / "notes.txt", secret + "\n");
  Mkdir("src/real");
  WriteFile(*ws_ / "src/real/code.c", "int TODO;\n");
  WriteFile(*ws_ / "src/patterns", "TODO\n");
  Link("/etc", "src/etc-link");
  Link("/etc/passwd", "src/passwd-link");
  Link("/proc", "src/proc-link");
  Link("/proc/self/environ", "src/environ-link");
  Link("/usr", "src/usr-link");
  Link(other.path(), "src/other-ws");
  Link(other / "notes.txt", "src/other-file");
  Link("../..", "src/up");
  Link("../../../../../../../../etc/passwd", "src/up-passwd");
  Link("real", "src/ok-dir");          // benign: stays in the grant
  Link("real/code.c", "src/ok-file");  // benign
  StartGateway();
  auto client = Plugin({"src/**"});
  const std::vector<std::string> dirs = {"src/etc-link", "src/proc-link", "src/usr-link",
                                         "src/other-ws", "src/up"};
  const std::vector<std::string> files = {"src/passwd-link", "src/environ-link", "src/other-file",
                                          "src/up-passwd"};
  std::vector<std::pair<std::string, std::vector<std::string>>> attacks;
  for (const auto& d : dirs) {
    attacks.push_back({"rg", {"-uu", "root", d}});
    attacks.push_back({"rg", {"--files", d}});
    attacks.push_back({"fd", {".", d}});
    attacks.push_back({"fd", {"--search-path", d}});
    attacks.push_back({"fd", {"--search-path=" + d, "x"}});
  }
  for (const auto& f : files) {
    attacks.push_back({"rg", {"root", f}});
    attacks.push_back({"rg", {"-f", f, "src/real"}});
    attacks.push_back({"rg", {"--file=" + f, "src/real"}});
    attacks.push_back({"rg", {"--ignore-file", f, "TODO", "src/real"}});
    attacks.push_back({"fd", {"--ignore-file", f, "code"}});
  }
  for (const auto& [program, args] : attacks) {
    auto r = Exec(*client, program, args);
    EXPECT_FALSE(r.ok) << program << " " << nlohmann::json(args).dump() << " ran: " << r.out;
    EXPECT_EQ(r.error.rfind("denied: " + program + " path operand", 0), 0u)
        << program << " " << nlohmann::json(args).dump() << " -> " << r.error;
    EXPECT_EQ(r.out.find(secret), std::string::npos);
  }
  // `..` spelled out, absolute paths: invalid before any lookup.
  for (const std::string operand : {"src/../..", "../x", "/etc", "src/real/../../.."}) {
    auto r = Exec(*client, "rg", {"x", operand});
    EXPECT_EQ(r.error.rfind("invalid: ", 0), 0u) << operand << " -> " << r.error;
  }
  // The benign neighbours: links that stay inside the grant, and the granted tree itself.
  auto r = Exec(*client, "rg", {"-n", "TODO", "src/ok-dir", "src/ok-file"});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(LinesOf(r.out),
            (std::set<std::string>{"src/ok-dir/code.c:1:int TODO;", "src/ok-file:1:int TODO;"}))
      << r.out << r.err;
  r = Exec(*client, "rg", {"-f", "src/patterns", "src/real"});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.out, "src/real/code.c:int TODO;\n");
  r = Exec(*client, "fd", {"--search-path", "src/ok-dir", "code"});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.out, "src/ok-dir/code.c\n");
  r = Exec(*client, "rg", {"-l", "TODO"});  // no operand: the granted tree is searched
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(LinesOf(r.out), (std::set<std::string>{"src/patterns", "src/real/code.c"})) << r.err;
}

// Whatever the operands, the tool's view holds no system file but its own: /etc/passwd, /etc as a
// whole, /usr as a whole and /proc are not there to be reached, by a link flipped after the
// gateway's check or any other way. Looked at from outside while rg is held in its sandbox.
TEST_F(ExecView, TheToolsViewHoldsItsOwnFilesAndTheGrantOnly) {
  Mkdir("src");
  Mkdir("private");
  WriteFile(*ws_ / "src/a.c", "int x;\n");
  WriteFile(*ws_ / "private/key", "secret\n");
  WriteFile(*ws_ / "README.md", "readme\n");
  const std::string held_name = UniqueToken("held") + ".c";
  StartGateway();
  auto client = Plugin({"src/**"});
  for (const std::string program : {"rg", "fd"}) {
    // Each tool opens the held file (rg to search it, fd to read it as an ignore file) and waits.
    const std::vector<std::string> args =
        program == "rg" ? std::vector<std::string>{"x", "src/" + held_name}
                        : std::vector<std::string>{"--ignore-file", "src/" + held_name, "a"};
    HeldFile held(ws_->path() + "/src/" + held_name, "x\n");
    auto id = client->Send("exec", {program, nlohmann::json(args).dump(), ""});
    ASSERT_TRUE(id);
    std::vector<pid_t> pids;
    ASSERT_TRUE(WaitUntil([&] { return !(pids = ProcessesWithMarker(held_name)).empty(); }))
        << "the tool never started";
    std::set<std::string> tree;
    Tree("/proc/" + std::to_string(pids[0]) + "/root", "", tree);
    held.Release();
    auto r = client->Receive();
    ASSERT_TRUE(r && r->ok) << (r ? r->ErrorText() : r.error().ToString());
    // The executables as the view holds them: the file a symlink such as Debian's
    // /usr/bin/fdfind -> ../lib/cargo/bin/fd leads to.
    auto real = [](const char* path) {
      char buf[PATH_MAX];
      return std::string("f ") + (::realpath(path, buf) ? buf : path);
    };
    const std::string self = real(program == "rg" ? "/usr/bin/rg" : "/usr/bin/fdfind");
    const std::string other = real(program == "rg" ? "/usr/bin/fdfind" : "/usr/bin/rg");
    std::string shown;
    for (const auto& t : tree) shown += t + "\n";
    // /etc: the loader's cache only (and, for fd, the time zone link).
    for (const auto& t : tree) {
      if (t.rfind("f /etc/", 0) == 0 || t.rfind("l /etc/", 0) == 0 || t.rfind("d /etc/", 0) == 0) {
        EXPECT_TRUE(t == "f /etc/ld.so.cache" ||
                    (program == "fd" && t.rfind("l /etc/localtime -> ", 0) == 0))
            << t << "\n"
            << shown;
      }
      // /usr: the tool, the loader and the libraries it needs (fd: its time zone), nothing else.
      if (t.rfind("f /usr/", 0) == 0) {
        const bool own = t == self || t.find("/ld-linux") != std::string::npos ||
                         t.find(".so") != std::string::npos ||
                         (program == "fd" && t.rfind("f /usr/share/zoneinfo/", 0) == 0);
        EXPECT_TRUE(own) << t << "\n" << shown;
      }
      EXPECT_EQ(t.rfind("d /proc", 0), std::string::npos) << shown;
      EXPECT_EQ(t.find("/sbin/"), std::string::npos) << shown;
    }
    EXPECT_EQ(tree.count("f /etc/passwd"), 0u) << shown;
    EXPECT_EQ(tree.count("f /etc/shadow"), 0u) << shown;
    EXPECT_EQ(tree.count(self), 1u) << shown;
    EXPECT_EQ(tree.count(other), 0u) << "another tool's executable\n" << shown;
    // The workspace: src and what is in it; not private/, not README.md.
    const std::string ws = workspace_;
    EXPECT_EQ(tree.count("f " + ws + "/src/a.c"), 1u) << shown;
    EXPECT_EQ(tree.count("d " + ws + "/private"), 0u) << shown;
    EXPECT_EQ(tree.count("f " + ws + "/README.md"), 0u) << shown;
  }
}

// Issue 19, section 2: "*.md" plus exec = ["rg"] used to let rg read the whole workspace (the
// glob's literal prefix is "."). The tool now reads and lists exactly the files sys.fs.read
// allows: not .env, not config/prod.ini, not .git/config, not docs/guide.md (not matched by
// "*.md"), and their names are not in its view either.
TEST_F(ExecView, AGlobGrantShowsTheToolExactlyTheFilesSysFsReadAllows) {
  const std::string key = UniqueToken("KEY");
  Mkdir("config");
  Mkdir(".git");
  Mkdir("docs");
  WriteFile(*ws_ / "README.md", key + " in readme\n");
  WriteFile(*ws_ / "NOTES.md", key + " in notes\n");
  WriteFile(*ws_ / ".env", key + "=in-env\n");
  WriteFile(*ws_ / "config/prod.ini", "password=" + key + "\n");
  WriteFile(*ws_ / ".git/config", "[remote]\n  url = https://" + key + "@example.com\n");
  WriteFile(*ws_ / "docs/guide.md", key + " in docs\n");
  StartGateway();
  struct Case {
    std::vector<std::string> grant;
    std::set<std::string> rg, fd;
  };
  const Case cases[] = {
      {{"*.md"},
       {"NOTES.md:" + key + " in notes", "README.md:" + key + " in readme"},
       {"NOTES.md", "README.md"}},
      {{"docs/*.md"}, {"docs/guide.md:" + key + " in docs"}, {"docs/", "docs/guide.md"}},
      {{"**/*.md"},
       {"NOTES.md:" + key + " in notes", "README.md:" + key + " in readme",
        "docs/guide.md:" + key + " in docs"},
       {"NOTES.md", "README.md", "docs/", "docs/guide.md"}},
      {{"config/**"}, {"config/prod.ini:password=" + key}, {"config/", "config/prod.ini"}},
  };
  int n = 0;
  for (const auto& c : cases) {
    auto client = Plugin(c.grant, "example.glob" + std::to_string(n++));
    // Hidden and ignored files included, no operand: everything the view holds.
    auto r = Exec(*client, "rg", {"-uu", "--no-heading", key});
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(LinesOf(r.out), c.rg) << c.grant[0] << ":\n" << r.out << r.err;
    auto f = Exec(*client, "fd", {"-H", "-I", "--strip-cwd-prefix"});
    ASSERT_TRUE(f.ok) << f.error;
    EXPECT_EQ(LinesOf(f.out), c.fd) << c.grant[0] << ":\n" << f.out << f.err;
    // The same answers as sys.fs.read's, file by file.
    for (const std::string path :
         {".env", "config/prod.ini", ".git/config", "docs/guide.md", "README.md"}) {
      bool tool_read = r.out.find(path + ":") != std::string::npos;
      bool plugin_read = FsRead(*client, path) == "ok";
      EXPECT_EQ(tool_read, plugin_read) << c.grant[0] << " " << path;
      auto named = Exec(*client, "rg", {key, path});
      EXPECT_EQ(named.ok, plugin_read) << c.grant[0] << " " << path << " -> " << named.error;
      if (!plugin_read) {
        EXPECT_EQ(named.error, "denied: rg path operand outside the grant: " + path);
      }
    }
  }
}

// Issue 19, section 2: a hard link planted in the workspace to a file outside it (the user's SSH
// key). sys.fs.read refuses it (two links); so does the tool, whether the grant covers the whole
// tree (the file is masked: an empty file) or picks files (it is absent), and when the link
// appears between two calls (the walk's cache notices the directory changed).
TEST_F(ExecView, AHardLinkToAFileOutsideIsNeitherReadNorSearched) {
  // Same file system as the workspace, as a hard link needs.
  TempDir home("anvil-home", "/tmp");
  const std::string secret = UniqueToken("SSH-PRIVATE-KEY");
  WriteFile(home / "id_ed25519", secret + "\n", 0600);
  Mkdir("src");
  WriteFile(*ws_ / "src/normal.txt", "ordinary " + secret.substr(0, 3) + "\n");
  ASSERT_EQ(::link((home / "id_ed25519").c_str(), (ws_->path() + "/src/key.txt").c_str()), 0);
  StartGateway();
  for (const std::vector<std::string>& grant :
       {std::vector<std::string>{"**"}, {"src/**"}, {"src/*.txt"}}) {
    auto client = Plugin(grant, "example.hl-" + std::to_string(grant[0].size()));
    auto r = Exec(*client, "rg", {"-uu", "-e", secret, "-e", "ordinary"});
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.out.find(secret), std::string::npos) << grant[0] << ": read the key: " << r.out;
    EXPECT_NE(r.out.find("src/normal.txt:ordinary"), std::string::npos) << grant[0] << r.out;
    EXPECT_EQ(FsRead(*client, "src/key.txt").rfind("denied: file has 2 hard links", 0), 0u);
    auto named = Exec(*client, "rg", {secret, "src/key.txt"});
    EXPECT_EQ(named.error.rfind("denied: rg path operand has 2 hard links", 0), 0u) << named.error;
  }
  // Planted between two calls of the same session, in a directory the walk had cached.
  Mkdir("lib");
  WriteFile(*ws_ / "lib/old.txt", "old content\n");
  ::unlink((ws_->path() + "/src/key.txt").c_str());
  auto client = Plugin({"**"}, "example.hl-late");
  // Let the directories' change times age past the cache's trust margin, then cache them.
  std::this_thread::sleep_for(2500ms);
  auto r = Exec(*client, "rg", {"-uu", "content"});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.out, "lib/old.txt:old content\n");
  ASSERT_EQ(::link((home / "id_ed25519").c_str(), (ws_->path() + "/lib/late.txt").c_str()), 0);
  r = Exec(*client, "rg", {"-uu", "-e", secret, "-e", "content"});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.out, "lib/old.txt:old content\n") << "the late hard link was read";
}

TEST_F(ExecView, AHardLinkBeyondPathMaxIsNotReachedThroughALinkOperand) {
  // src/s -> a directory 16 levels of 250-byte names down; one level further, past PATH_MAX of
  // workspace path, a hard link to a secret outside. No sys.fs path spells it, but `rg src/s`
  // walks there with short relative paths.
  TempDir home("anvil-home", "/tmp");
  const std::string secret = UniqueToken("DEEP-SECRET");
  WriteFile(home / "id_ed25519", secret + "\n", 0600);
  Mkdir("src");
  WriteFile(*ws_ / "src/normal.txt", "ordinary\n");
  const std::string a(250, 'a');
  std::string link_text;
  UniqueFd dir(::open((ws_->path() + "/src").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(dir);
  for (int i = 0; i < 17; ++i) {
    ASSERT_EQ(::mkdirat(dir.Get(), a.c_str(), 0755), 0) << i;
    dir = UniqueFd(::openat(dir.Get(), a.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(dir);
    if (i < 16) link_text += (i ? "/" : "") + a;
    if (i == 15) {
      const int fd = ::openat(dir.Get(), "shallow.txt", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      ASSERT_GE(fd, 0);
      ASSERT_EQ(::write(fd, "ordinary deep\n", 14), 14);
      ::close(fd);
    }
  }
  UniqueFd home_fd(::open(home.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_EQ(::linkat(home_fd.Get(), "id_ed25519", dir.Get(), "key.txt", 0), 0) << strerror(errno);
  ASSERT_EQ(::symlink(link_text.c_str(), (ws_->path() + "/src/s").c_str()), 0) << strerror(errno);
  StartGateway();
  auto client = Plugin({"src/**"}, "example.deep");
  auto r = Exec(*client, "rg", {"-uu", "-e", secret, "-e", "ordinary", "src/s"});
  EXPECT_EQ(r.out.find(secret), std::string::npos) << "read the deep hard link: " << r.out;
  // Benign: the rest of src is searched as before.
  auto rest = Exec(*client, "rg", {"-uu", "ordinary", "src/normal.txt"});
  ASSERT_TRUE(rest.ok) << rest.error;
  EXPECT_EQ(rest.out, "ordinary\n");
}

// FIFOs and sockets are not regular files: sys.fs.read refuses them, and so does the gateway as
// an operand. In the tool's view they are absent where the grant picks files, and beneath a fully
// granted directory they are masked (an empty read-only file: nothing to block on, nothing to
// connect to; a directory listing still shows the name and its old type). Hard-linked files are
// masked the same way. Looked at from outside while rg is held in its sandbox.
TEST_F(ExecView, FifosSocketsAndHardLinksAreMaskedOrAbsentInTheToolsView) {
  TempDir home("anvil-home", "/tmp");
  WriteFile(home / "id_ed25519", "KEY\n", 0600);
  Mkdir("src");
  WriteFile(*ws_ / "src/a.txt", "text\n");
  ASSERT_EQ(::mkfifo((ws_->path() + "/src/pipe").c_str(), 0644), 0);
  ASSERT_EQ(::link((home / "id_ed25519").c_str(), (ws_->path() + "/src/key.txt").c_str()), 0);
  UniqueFd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string sock_path = ws_->path() + "/src/daemon.sock";
  ASSERT_LT(sock_path.size(), sizeof(addr.sun_path));
  std::strcpy(addr.sun_path, sock_path.c_str());
  ASSERT_EQ(::bind(sock.Get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  StartGateway();
  const std::string held_name = UniqueToken("held") + ".txt";
  for (const std::vector<std::string>& grant : {std::vector<std::string>{"src/**"}, {"src/*"}}) {
    const bool covered = grant[0] == "src/**";
    auto client = Plugin(grant, "example.fifo-" + std::to_string(grant[0].size()));
    auto r = Exec(*client, "rg", {"x", "src/pipe"});
    EXPECT_EQ(r.error, "invalid: rg path operand is not a regular file or directory: src/pipe");
    r = Exec(*client, "rg", {"x", "src/daemon.sock"});
    EXPECT_EQ(r.error.rfind("invalid: rg path operand is not a regular file", 0), 0u) << r.error;
    {
      HeldFile held(ws_->path() + "/src/" + held_name, "x\n");
      auto id = client->Send(
          "exec",
          {"rg", nlohmann::json(std::vector<std::string>{"x", "src/" + held_name}).dump(), ""});
      ASSERT_TRUE(id);
      std::vector<pid_t> pids;
      ASSERT_TRUE(WaitUntil([&] { return !(pids = ProcessesWithMarker(held_name)).empty(); }));
      const std::string src = "/proc/" + std::to_string(pids[0]) + "/root" + workspace_ + "/src/";
      for (const std::string name : {"pipe", "daemon.sock", "key.txt"}) {
        struct stat st {};
        int rc = ::stat((src + name).c_str(), &st);
        if (covered) {
          ASSERT_EQ(rc, 0) << name;
          EXPECT_TRUE(S_ISREG(st.st_mode)) << name << " is not masked";
          EXPECT_EQ(st.st_size, 0) << name;
        } else {
          EXPECT_NE(rc, 0) << name << " is in the view";
        }
      }
      struct stat st {};
      EXPECT_EQ(::stat((src + "a.txt").c_str(), &st), 0);  // the benign neighbour
      EXPECT_EQ(st.st_size, 5);
      held.Release();
      auto answer = client->Receive();
      ASSERT_TRUE(answer && answer->ok);
    }
    auto f = Exec(*client, "fd", {"-t", "p", "-t", "s", "--search-path", "src"});
    ASSERT_TRUE(f.ok) << f.error;
    if (!covered) {
      EXPECT_EQ(f.out, "") << grant[0];
    }
    // The benign neighbour: the regular file.
    auto ok = Exec(*client, "rg", {"-uu", "text", "src"});
    ASSERT_TRUE(ok.ok) << ok.error;
    EXPECT_EQ(ok.out, "src/a.txt:text\n");
  }
}

// Issue 18, section 6: values that make the tool allocate are capped in the table, and the
// tool's memory is bounded whatever it is asked: a pathological pattern under the largest
// accepted size limit ends with an allocation failure, not a runner grown past gigabytes.
TEST_F(ExecView, AllocatingFlagValuesAreCappedAndTheToolsMemoryIsBounded) {
  WriteFile(*ws_ / "small.txt", "hello world\n");
  StartGateway();
  auto client = Plugin({"**"});
  const std::vector<std::pair<std::string, std::vector<std::string>>> over = {
      {"rg", {"--regex-size-limit=100G", "x"}},
      {"rg", {"--regex-size-limit", "257M", "x"}},
      {"rg", {"--dfa-size-limit=1G", "x"}},
      {"rg", {"-j", "1000", "x"}},
      {"rg", {"--threads=17", "x"}},
      {"rg", {"-C", "100000000", "x"}},
      {"rg", {"-A100001", "x"}},
      {"fd", {"-j", "64"}},
      {"rg", {"--regex-size-limit=99999999999999999999", "x"}},
  };
  for (const auto& [program, args] : over) {
    auto r = Exec(*client, program, args);
    EXPECT_EQ(r.error.rfind("limit: " + program + " --", 0), 0u)
        << nlohmann::json(args).dump() << " -> " << r.error;
  }
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--threads=x", "x"}, {"--regex-size-limit=10T", "x"}, {"-j", "-1", "x"}}) {
    auto r = Exec(*client, "rg", args);
    EXPECT_EQ(r.error.rfind("invalid: rg --", 0), 0u) << nlohmann::json(args).dump() << r.error;
  }
  // The benign neighbours: values within the caps, under the default memory limit.
  auto r = Exec(*client, "rg",
                {"--regex-size-limit=64M", "--dfa-size-limit", "20M", "-j", "16", "-C", "2",
                 "hello", "small.txt"});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.out, "hello world\n") << r.err;
  auto f = Exec(*client, "fd", {"-j", "16", "small"});
  ASSERT_TRUE(f.ok) << f.error;
  EXPECT_EQ(f.out, "small.txt\n") << f.err;
  client.reset();
  ASSERT_TRUE(gateway_->Stop());
  gateway_.reset();

  // A pattern whose compilation grows without end under the largest accepted limit: stopped at
  // the memory bound (rg aborts on the failed allocation) long before it grows to gigabytes.
  StartGateway({"--exec-max-memory", std::to_string(128u << 20)});
  client = Plugin({"**"}, "example.memory");
  auto start = std::chrono::steady_clock::now();
  r = Exec(*client, "rg", {"--regex-size-limit=256M", "\\w{1000}{50}", "small.txt"});
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(r.code == 128 + SIGABRT || r.err.find("memory allocation") != std::string::npos)
      << r.code << " " << r.err;
  EXPECT_LT(elapsed, 25s) << "not stopped by a memory bound";
  // The benign neighbour under the same bound.
  r = Exec(*client, "rg", {"hello", "small.txt"});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.out, "hello world\n");
}

}  // namespace
}  // namespace t3_gateway_exec_view_test
}  // namespace anvil::testing
