// T8: grants are stored per user, keyed by (workspace, plugin id, manifest hash). A changed
// manifest never finds the old grant; an update that adds a permission needs consent again, one
// that only removes does not. The store file is private (0700 dir, 0600 file), written
// atomically, and a torn, foreign-owned, group-writable or symlinked store is refused.
#include "policy/grant_store.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>

#include "policy/consent.h"
#include "policy/manifest.h"
#include "session/plugin_catalog.h"

namespace anvil {
namespace grant_store_test {
namespace {

const std::string kShaA(64, 'a');
const std::string kShaB(64, 'b');

Grant ReadSrc() {
  Grant g;
  g.fs_read = {"src/**"};
  g.exec = {"rg"};
  return g;
}

// Restores an environment variable when the test ends.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class GrantStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/anvil-grants-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    state_dir_ = root_ + "/state/anvil";
    path_ = state_dir_ + "/grants.json";
    workspace_ = root_ + "/ws";
    ASSERT_EQ(::mkdir(workspace_.c_str(), 0755), 0);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  GrantStore Open() {
    auto store = GrantStore::Open(path_);
    EXPECT_TRUE(store) << store.error().ToString();
    return std::move(*store);
  }
  void WriteStore(const std::string& text, mode_t mode = 0600) {
    std::filesystem::create_directories(state_dir_);
    ::chmod(state_dir_.c_str(), 0700);
    std::ofstream(path_, std::ios::binary | std::ios::trunc) << text;
    ::chmod(path_.c_str(), mode);
  }
  static mode_t Mode(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  }

  std::string root_, state_dir_, path_, workspace_;
};

TEST_F(GrantStoreTest, CreatesAPrivateDirectoryAndFile) {
  GrantStore store = Open();
  EXPECT_EQ(Mode(state_dir_), 0700u);
  EXPECT_EQ(Mode(root_ + "/state"), 0700u);
  ASSERT_TRUE(store.Approve(workspace_, "example.todo", kShaA, ReadSrc()));
  EXPECT_EQ(Mode(path_), 0600u);
  // Atomic write: nothing but the store itself is left in the directory.
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(state_dir_)) {
    names.insert(e.path().filename());
  }
  EXPECT_EQ(names, std::set<std::string>{"grants.json"});
}

TEST_F(GrantStoreTest, FindsOnlyTheExactKey) {
  GrantStore store = Open();
  ASSERT_TRUE(store.Approve(workspace_, "example.todo", kShaA, ReadSrc()));
  EXPECT_EQ(store.Find(workspace_, "example.todo", kShaA), ReadSrc());
  EXPECT_EQ(store.Find(workspace_, "example.todo", kShaB), std::nullopt);
  EXPECT_EQ(store.Find(workspace_, "example.other", kShaA), std::nullopt);
  EXPECT_EQ(store.Find(root_, "example.todo", kShaA), std::nullopt);
  EXPECT_EQ(store.Find(workspace_ + "/", "example.todo", kShaA), std::nullopt);
  EXPECT_EQ(store.Find(workspace_, "example.todo", std::string(64, 'A')), std::nullopt);
}

// A grant is for one copy of a plugin: its directory (edited in place), or identical code
// elsewhere. Another directory with other code, a directory made again at the approved path
// with other code, and an entry that never recorded a copy, get no grant from FindForCopy.
TEST_F(GrantStoreTest, AGrantAppliesToTheApprovedCopyOnly) {
  const std::string kDirId = "ino:12,btime:1700000000.5,gen:99";
  const PluginCopy approved{"/home/u/plugins/todo", std::string(64, 'c'), kDirId};
  GrantStore store = Open();
  ASSERT_TRUE(store.Approve(workspace_, "example.todo", kShaA, ReadSrc(), approved));
  struct Case {
    PluginCopy copy;
    bool granted;
  };
  const Case cases[] = {
      {approved, true},
      {{"/home/u/plugins/todo", std::string(64, 'd'), kDirId}, true},        // edited in place
      {{"/tmp/elsewhere/todo", std::string(64, 'c'), "ino:5,gen:1"}, true},  // identical code
      {{"/tmp/elsewhere/todo", std::string(64, 'd'), kDirId}, false},        // a copy, other code
      {{"/home/u/plugins/todo2", std::string(64, 'e'), kDirId}, false},      // a sibling directory
      // Removed and made again at the same path (the inode number reused, born later).
      {{"/home/u/plugins/todo", std::string(64, 'd'), "ino:12,btime:1700000009.1,gen:7"}, false},
      {{"/home/u/plugins/todo", std::string(64, 'c'), "ino:12,btime:1700000009.1,gen:7"}, true},
      // Which directory is unknown: only identical code.
      {{"/home/u/plugins/todo", std::string(64, 'd'), ""}, false},
      {{"/home/u/plugins/todo", std::string(64, 'c'), ""}, true},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(store.FindForCopy(workspace_, "example.todo", kShaA, c.copy).has_value(), c.granted)
        << c.copy.dir << " " << c.copy.code_sha256;
  }
  // Still keyed by the manifest hash too.
  EXPECT_FALSE(store.FindForCopy(workspace_, "example.todo", kShaB, approved));
  // Recorded on disk and read back.
  GrantStore again = Open();
  auto latest = again.FindLatest(workspace_, "example.todo");
  ASSERT_TRUE(latest && latest->copy);
  EXPECT_EQ(*latest->copy, approved);
  // Written as version 3; a version 1 file (no copies) is still read.
  {
    std::ifstream in(path_);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("\"version\": 3"), std::string::npos) << text;
    EXPECT_NE(text.find("\"plugin_dir_id\": \"" + kDirId + "\""), std::string::npos) << text;
  }
  // An entry without a copy (written before copies were recorded) grants no copy.
  ASSERT_TRUE(again.Approve(workspace_, "example.legacy", kShaA, ReadSrc()));
  EXPECT_TRUE(again.Find(workspace_, "example.legacy", kShaA));
  EXPECT_FALSE(again.FindForCopy(workspace_, "example.legacy", kShaA, approved));
  // Malformed copies are refused, as malformed keys are.
  EXPECT_FALSE(again.Approve(workspace_, "example.todo", kShaA, ReadSrc(),
                             PluginCopy{"relative/dir", std::string(64, 'c'), ""}));
  EXPECT_FALSE(again.Approve(workspace_, "example.todo", kShaA, ReadSrc(),
                             PluginCopy{"/abs/dir", "not-a-hash", ""}));
  EXPECT_FALSE(again.Approve(workspace_, "example.todo", kShaA, ReadSrc(),
                             PluginCopy{"/abs/dir", std::string(64, 'c'), "ino:1\n"}));
  // A version 2 entry (a copy, no directory identity) is read: identical code only.
  WriteStore(R"({"version": 2, "grants": [{"workspace": ")" + workspace_ +
             R"(", "plugin": "example.todo", "manifest_sha256": ")" + kShaA +
             R"(", "granted_at": 1, "plugin_dir": "/home/u/plugins/todo", "code_sha256": ")" +
             std::string(64, 'c') + R"(", "grant": {}}]})");
  auto v2 = GrantStore::Open(path_);
  ASSERT_TRUE(v2) << v2.error().ToString();
  EXPECT_TRUE(v2->FindForCopy(workspace_, "example.todo", kShaA, approved));
  EXPECT_FALSE(v2->FindForCopy(workspace_, "example.todo", kShaA,
                               {"/home/u/plugins/todo", std::string(64, 'd'), kDirId}));
  // A directory identity without its directory is damage.
  WriteStore(R"({"version": 3, "grants": [{"workspace": ")" + workspace_ +
             R"(", "plugin": "example.todo", "manifest_sha256": ")" + kShaA +
             R"(", "granted_at": 1, "plugin_dir_id": "ino:1,gen:2", "grant": {}}]})");
  EXPECT_FALSE(GrantStore::Open(path_));
  // A hand-edited entry with half a copy is damage, not a grant for any copy.
  WriteStore(R"({"version": 1, "grants": [{"workspace": ")" + workspace_ +
             R"(", "plugin": "example.todo", "manifest_sha256": ")" + kShaA +
             R"(", "granted_at": 1, "plugin_dir": "/p", "grant": {}}]})");
  auto damaged = GrantStore::Open(path_);
  ASSERT_FALSE(damaged);
  EXPECT_NE(damaged.error().message.find("only one of plugin_dir and code_sha256"),
            std::string::npos);
}

// The session's lookup: hashes the plugin's code, finds the grant only for the approved copy,
// says in the consent text why a copy is asked about, and never narrows a grant onto another
// copy.
TEST_F(GrantStoreTest, LookupAsksAboutAnotherCopyAndSaysWhy) {
  auto make_plugin = [&](const std::string& dir, const std::string& permissions,
                         const std::string& code) {
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/anvil-plugin.toml")
        << "id = \"example.todo\"\nversion = \"1.0.0\"\nruntime = \"lua\"\nentry = "
           "\"main.lua\"\n\n[permissions]\n"
        << permissions;
    std::ofstream(dir + "/main.lua") << code;
    auto manifest = LoadManifest(dir);
    EXPECT_TRUE(manifest) << manifest.error().ToString();
    return *manifest;
  };
  const std::string a = root_ + "/plugins/a", b = root_ + "/plugins/b";
  Manifest ma = make_plugin(a, "fs.read = [\"**\"]\nfs.write = [\"notes/**\"]\n", "-- v1\n");
  GrantStore store = Open();
  auto first = session::LookupGrant(store, workspace_, ma, a);
  ASSERT_TRUE(first) << first.error().ToString();
  EXPECT_FALSE(first->grant);
  EXPECT_FALSE(first->other_copy);
  EXPECT_EQ(first->files.count("main.lua"), 1u);
  ASSERT_TRUE(store.Approve(workspace_, ma.id, ma.sha256, ma.requested, first->copy));
  EXPECT_TRUE(session::LookupGrant(store, workspace_, ma, a)->grant);
  // Same id, same manifest bytes, other code, other directory.
  Manifest mb = make_plugin(b, "fs.read = [\"**\"]\nfs.write = [\"notes/**\"]\n", "-- evil\n");
  ASSERT_EQ(mb.sha256, ma.sha256);
  auto other = session::LookupGrant(store, workspace_, mb, b);
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->grant);
  ASSERT_TRUE(other->other_copy);
  EXPECT_EQ(*other->other_copy, a);
  const std::string text =
      session::ConsentText(workspace_, mb, other->previous, "", other->other_copy);
  EXPECT_NE(text.find("This is not the copy you approved: that one is in " + a), std::string::npos)
      << text;
  // A narrower manifest does not re-approve itself for another copy either.
  Manifest narrower = make_plugin(b, "fs.read = [\"**\"]\n", "-- evil\n");
  auto narrowed = session::LookupGrant(store, workspace_, narrower, b);
  ASSERT_TRUE(narrowed);
  EXPECT_FALSE(narrowed->grant);
  // ... while for the approved copy it does (consent.h: removals need no consent).
  Manifest narrower_a = make_plugin(a, "fs.read = [\"**\"]\n", "-- v2\n");
  auto same = session::LookupGrant(store, workspace_, narrower_a, a);
  ASSERT_TRUE(same);
  EXPECT_TRUE(same->grant);
  EXPECT_FALSE(same->copy.dir_identity.empty()) << "this file system keeps no birth time";

  // The approved directory removed and made again at its path, same manifest, other code: not
  // the approved directory, and the consent text says so.
  std::filesystem::remove_all(a);
  Manifest remade = make_plugin(a, "fs.read = [\"**\"]\n", "-- someone else's\n");
  ASSERT_EQ(remade.sha256, narrower_a.sha256);
  auto again = session::LookupGrant(store, workspace_, remade, a);
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->grant);
  ASSERT_TRUE(again->other_copy);
  EXPECT_EQ(*again->other_copy, a);
  const std::string remade_text =
      session::ConsentText(workspace_, remade, again->previous, "", again->other_copy, a);
  EXPECT_NE(remade_text.find("This is not the directory you approved"), std::string::npos)
      << remade_text;
  // Made again with the approved code (a reinstall): granted, and from then on its edits too.
  std::filesystem::remove_all(a);
  Manifest reinstalled = make_plugin(a, "fs.read = [\"**\"]\n", "-- v2\n");
  auto back = session::LookupGrant(store, workspace_, reinstalled, a);
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->grant);
  Manifest edited = make_plugin(a, "fs.read = [\"**\"]\n", "-- v3, edited\n");
  auto after_edit = session::LookupGrant(store, workspace_, edited, a);
  ASSERT_TRUE(after_edit);
  EXPECT_TRUE(after_edit->grant);
}

// Red team: a repository vendors a byte-identical copy of an approved plugin and changes its
// manifest cosmetically (or narrows it). That copy runs with the narrower grant, unasked — but
// only for that run: the approval stays with the user's copy, so a later change of the vendored
// code (a pull, a sandboxed command writing the workspace) is asked about, and the user's own
// copy keeps its grant unasked.
TEST_F(GrantStoreTest, AnIdenticalCopyWithAnotherManifestNeverTakesOverTheApproval) {
  auto make_plugin = [&](const std::string& dir, const std::string& manifest_tail,
                         const std::string& code) {
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/anvil-plugin.toml")
        << "id = \"example.todo\"\nversion = \"1.0.0\"\nruntime = \"lua\"\nentry = "
           "\"main.lua\"\n\n[permissions]\nfs.read = [\"src/**\"]\n"
        << manifest_tail;
    std::ofstream(dir + "/main.lua") << code;
    auto manifest = LoadManifest(dir);
    EXPECT_TRUE(manifest) << manifest.error().ToString();
    return *manifest;
  };
  const std::string installed = root_ + "/installed/x", vendored = root_ + "/ws-vendor/x";
  Manifest mi = make_plugin(installed, "exec = [\"rg\"]\n", "-- benign\n");
  GrantStore store = Open();
  auto first = session::LookupGrant(store, workspace_, mi, installed);
  ASSERT_TRUE(first);
  ASSERT_TRUE(store.Approve(workspace_, mi.id, mi.sha256, mi.requested, first->copy));
  for (const std::string tail : {"exec = [\"rg\"]\n# vendored\n", ""}) {
    SCOPED_TRACE(tail.empty() ? "a narrower manifest" : "a cosmetic change");
    // Identical code, a manifest of other bytes.
    Manifest mv = make_plugin(vendored, tail, "-- benign\n");
    ASSERT_NE(mv.sha256, mi.sha256);
    auto run = session::LookupGrant(store, workspace_, mv, vendored);
    ASSERT_TRUE(run);
    ASSERT_TRUE(run->grant);  // this run: what it asks for, no more than approved
    EXPECT_EQ(*run->grant, mv.requested);
    auto latest = store.FindLatest(workspace_, mi.id);
    ASSERT_TRUE(latest && latest->copy);
    EXPECT_EQ(latest->copy->dir, installed);
    EXPECT_EQ(latest->manifest_sha256, mi.sha256);
    // The vendored code changed afterwards: another plugin as far as consent goes.
    std::ofstream(vendored + "/main.lua") << "-- reads src/key.txt\n";
    Manifest changed = *LoadManifest(vendored);
    auto later = session::LookupGrant(store, workspace_, changed, vendored);
    ASSERT_TRUE(later);
    EXPECT_FALSE(later->grant);
    ASSERT_TRUE(later->other_copy);
    EXPECT_EQ(*later->other_copy, installed);
    // The user's own copy: granted as approved, unasked.
    auto own = session::LookupGrant(store, workspace_, mi, installed);
    ASSERT_TRUE(own);
    ASSERT_TRUE(own->grant);
    EXPECT_EQ(*own->grant, mi.requested);
    std::filesystem::remove_all(vendored);
  }
  // A wider manifest on the identical copy is asked about, and the question says it is a copy
  // of the approved one and that approving it moves the approval.
  Manifest wider =
      make_plugin(vendored, "exec = [\"rg\"]\nfs.write = [\"notes/**\"]\n", "-- benign\n");
  auto asked = session::LookupGrant(store, workspace_, wider, vendored);
  ASSERT_TRUE(asked);
  EXPECT_FALSE(asked->grant);
  ASSERT_TRUE(asked->copy_of);
  EXPECT_EQ(*asked->copy_of, installed);
  const std::string text = session::ConsentText(workspace_, wider, asked->previous, "",
                                                asked->other_copy, vendored, asked->copy_of);
  EXPECT_NE(text.find("This is a copy of the plugin you approved in " + installed),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Approving it makes this directory the approved copy"), std::string::npos);
  // The approved directory's own wider manifest says nothing of copies.
  Manifest own_wider =
      make_plugin(installed, "exec = [\"rg\"]\nfs.write = [\"notes/**\"]\n", "-- benign\n");
  auto own_asked = session::LookupGrant(store, workspace_, own_wider, installed);
  ASSERT_TRUE(own_asked);
  EXPECT_FALSE(own_asked->grant);
  EXPECT_FALSE(own_asked->copy_of);
}

TEST_F(GrantStoreTest, PersistsAcrossOpens) {
  {
    GrantStore store = Open();
    ASSERT_TRUE(store.Approve(workspace_, "example.todo", kShaA, ReadSrc()));
  }
  GrantStore again = Open();
  EXPECT_EQ(again.Find(workspace_, "example.todo", kShaA), ReadSrc());
  auto latest = again.FindLatest(workspace_, "example.todo");
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->manifest_sha256, kShaA);
  EXPECT_LE(std::abs(latest->granted_at - static_cast<std::int64_t>(std::time(nullptr))), 60);
}

TEST_F(GrantStoreTest, AGrantNeverCarriesOverToANewHash) {
  GrantStore store = Open();
  ASSERT_TRUE(store.Approve(workspace_, "example.todo", kShaA, ReadSrc()));
  // Same permissions, different manifest bytes: still not found.
  EXPECT_EQ(store.Find(workspace_, "example.todo", kShaB), std::nullopt);
  // Approving the new hash replaces the old entry; the old hash is no longer granted either.
  Grant narrower;
  narrower.fs_read = {"src/**"};
  ASSERT_TRUE(store.Approve(workspace_, "example.todo", kShaB, narrower));
  EXPECT_EQ(store.Find(workspace_, "example.todo", kShaB), narrower);
  EXPECT_EQ(store.Find(workspace_, "example.todo", kShaA), std::nullopt);
  EXPECT_EQ(store.List(workspace_).size(), 1u);
}

TEST_F(GrantStoreTest, WorkspacesAreSeparate) {
  const std::string other = root_ + "/other";
  ASSERT_EQ(::mkdir(other.c_str(), 0755), 0);
  GrantStore store = Open();
  ASSERT_TRUE(store.Approve(workspace_, "example.todo", kShaA, ReadSrc()));
  EXPECT_EQ(store.Find(other, "example.todo", kShaA), std::nullopt);
  EXPECT_EQ(store.FindLatest(other, "example.todo"), std::nullopt);
}

// The whole T8 update flow, with real manifests.
TEST_F(GrantStoreTest, UpdateThatAddsAPermissionNeedsConsentAgain) {
  const std::string v1 = R"(id = "example.todo"
version = "1.0.0"
runtime = "lua"
entry = "main.lua"
[permissions]
fs.read = ["src/**"]
exec = ["rg"]
)";
  const std::string v2 = v1 + "net.hosts = [\"evil.example\"]\n";
  const std::string v3 = R"(id = "example.todo"
version = "1.0.2"
runtime = "lua"
entry = "main.lua"
[permissions]
fs.read = ["src/**"]
)";
  auto m1 = ParseManifest(v1, "v1"), m2 = ParseManifest(v2, "v2"), m3 = ParseManifest(v3, "v3");
  ASSERT_TRUE(m1 && m2 && m3);
  GrantStore store = Open();

  // First load: nothing stored, consent needed; the user approves exactly the request.
  EXPECT_EQ(store.Find(workspace_, m1->id, m1->sha256), std::nullopt);
  EXPECT_TRUE(NeedsConsent(std::nullopt, m1->requested));
  ASSERT_TRUE(store.Approve(workspace_, m1->id, m1->sha256, m1->requested));
  EXPECT_EQ(store.Find(workspace_, m1->id, m1->sha256), m1->requested);

  // Update adds a host: the new hash has no grant, and the diff against v1 asks again.
  EXPECT_EQ(store.Find(workspace_, m2->id, m2->sha256), std::nullopt);
  auto previous = store.FindLatest(workspace_, m2->id);
  ASSERT_TRUE(previous);
  EXPECT_TRUE(NeedsConsent(previous->grant, m2->requested));

  // Update only removes (v3 drops exec): no prompt; the narrower grant is stored for v3.
  EXPECT_FALSE(NeedsConsent(previous->grant, m3->requested));
  ASSERT_TRUE(store.Approve(workspace_, m3->id, m3->sha256, m3->requested));
  EXPECT_EQ(store.Find(workspace_, m3->id, m3->sha256), m3->requested);
  // Going back to v1 (which re-adds exec) now asks again: v1's old approval is gone.
  EXPECT_EQ(store.Find(workspace_, m1->id, m1->sha256), std::nullopt);
  EXPECT_TRUE(NeedsConsent(store.FindLatest(workspace_, m1->id)->grant, m1->requested));
}

TEST_F(GrantStoreTest, RevokeRemovesTheEntry) {
  GrantStore store = Open();
  ASSERT_TRUE(store.Approve(workspace_, "example.todo", kShaA, ReadSrc()));
  ASSERT_TRUE(store.Approve(workspace_, "example.fmt", kShaB, Grant{}));
  auto revoked = store.Revoke(workspace_, "example.todo");
  ASSERT_TRUE(revoked);
  // What was revoked comes back, for `anvil plugin revoke` to show.
  ASSERT_EQ(revoked->size(), 1u);
  EXPECT_EQ((*revoked)[0].plugin_id, "example.todo");
  EXPECT_EQ((*revoked)[0].manifest_sha256, kShaA);
  EXPECT_EQ((*revoked)[0].grant, ReadSrc());
  EXPECT_EQ(store.Find(workspace_, "example.todo", kShaA), std::nullopt);
  EXPECT_TRUE(store.Find(workspace_, "example.fmt", kShaB));
  auto again = store.Revoke(workspace_, "example.todo");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, "not_found");
  EXPECT_EQ(Open().Find(workspace_, "example.todo", kShaA), std::nullopt);
}

TEST_F(GrantStoreTest, ListFiltersByWorkspaceAndSorts) {
  const std::string other = root_ + "/other";
  GrantStore store = Open();
  ASSERT_TRUE(store.Approve(workspace_, "zeta", kShaA, Grant{}));
  ASSERT_TRUE(store.Approve(workspace_, "alpha", kShaB, ReadSrc()));
  ASSERT_TRUE(store.Approve(other, "alpha", kShaA, Grant{}));
  auto list = store.List(workspace_);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].plugin_id, "alpha");
  EXPECT_EQ(list[0].grant, ReadSrc());
  EXPECT_EQ(list[1].plugin_id, "zeta");
  EXPECT_EQ(store.List("").size(), 3u);
  EXPECT_TRUE(store.List("/nowhere").empty());
}

TEST_F(GrantStoreTest, ConcurrentWritersDoNotLoseUpdates) {
  GrantStore a = Open();
  GrantStore b = Open();  // opened before a writes: its memory is stale
  ASSERT_TRUE(a.Approve(workspace_, "one", kShaA, Grant{}));
  ASSERT_TRUE(b.Approve(workspace_, "two", kShaB, Grant{}));  // re-reads under the lock
  GrantStore c = Open();
  EXPECT_TRUE(c.Find(workspace_, "one", kShaA));
  EXPECT_TRUE(c.Find(workspace_, "two", kShaB));
}

TEST_F(GrantStoreTest, ApproveRefusesMalformedKeys) {
  GrantStore store = Open();
  for (const std::string& ws :
       {std::string("relative/ws"), workspace_ + "/", workspace_ + "/.", workspace_ + "/../ws",
        root_ + "//ws", std::string(""), workspace_ + "\xff"}) {
    auto s = store.Approve(ws, "example.todo", kShaA, Grant{});
    ASSERT_FALSE(s) << ws;
    EXPECT_EQ(s.error().code, "invalid");
  }
  EXPECT_FALSE(store.Approve(workspace_, "Bad/Id", kShaA, Grant{}));
  EXPECT_FALSE(store.Approve(workspace_, "example.todo", std::string(64, 'A'), Grant{}));
  EXPECT_FALSE(store.Approve(workspace_, "example.todo", "abc", Grant{}));
  EXPECT_TRUE(store.List("").empty());
}

TEST_F(GrantStoreTest, CanonicalWorkspacePathResolvesSpellings) {
  const std::string link = root_ + "/link";
  ASSERT_EQ(::symlink(workspace_.c_str(), link.c_str()), 0);
  char real[PATH_MAX];
  ASSERT_NE(::realpath(workspace_.c_str(), real), nullptr);
  for (const std::string& spelling : {workspace_, workspace_ + "/", link, workspace_ + "/./"}) {
    auto canonical = CanonicalWorkspacePath(spelling);
    ASSERT_TRUE(canonical) << spelling;
    EXPECT_EQ(*canonical, real);
  }
  auto missing = CanonicalWorkspacePath(root_ + "/missing");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, "not_found");
}

TEST_F(GrantStoreTest, TornFileIsRefused) {
  GrantStore store = Open();
  ASSERT_TRUE(store.Approve(workspace_, "example.todo", kShaA, ReadSrc()));
  std::ifstream in(path_);
  std::string full((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (std::size_t cut : {std::size_t{0}, std::size_t{1}, full.size() / 2, full.size() - 3}) {
    WriteStore(full.substr(0, cut));
    auto reopened = GrantStore::Open(path_);
    ASSERT_FALSE(reopened) << "cut at " << cut;
    EXPECT_EQ(reopened.error().code, "invalid");
    EXPECT_NE(reopened.error().message.find("is damaged"), std::string::npos);
    EXPECT_NE(reopened.error().message.find("fix: move the file aside"), std::string::npos);
  }
}

TEST_F(GrantStoreTest, HandEditedOrForeignFormatsAreRefused) {
  const std::string ws = workspace_;
  const std::string entry = R"({"workspace":")" + ws + R"(","plugin":"p","manifest_sha256":")" +
                            kShaA + R"(","granted_at":1,"grant":{}})";
  const std::string bad[] = {
      "[]",
      R"({"version":4,"grants":[]})",
      R"({"grants":[]})",
      R"({"version":1,"grants":{}})",
      R"({"version":1,"grants":[],"extra":1})",
      R"({"version":1,"grants":[)" + entry + "," + entry + "]}",  // duplicate key
      R"({"version":1,"grants":[{"workspace":"rel","plugin":"p","manifest_sha256":")" + kShaA +
          R"(","granted_at":1,"grant":{}}]})",
      R"({"version":1,"grants":[{"workspace":")" + ws +
          R"(","plugin":"p","manifest_sha256":"xyz","granted_at":1,"grant":{}}]})",
      R"({"version":1,"grants":[{"workspace":")" + ws + R"(","plugin":"p","manifest_sha256":")" +
          kShaA + R"(","granted_at":"now","grant":{}}]})",
      R"({"version":1,"grants":[{"workspace":")" + ws + R"(","plugin":"p","manifest_sha256":")" +
          kShaA + R"(","granted_at":1,"grant":{"fs.everything":true}}]})",
      R"({"version":1,"grants":[{"workspace":")" + ws + R"(","plugin":"p","manifest_sha256":")" +
          kShaA + R"(","granted_at":1,"grant":{},"admin":true}]})",
  };
  for (const std::string& text : bad) {
    WriteStore(text);
    auto store = GrantStore::Open(path_);
    ASSERT_FALSE(store) << text;
    EXPECT_EQ(store.error().code, "invalid") << text;
  }
  WriteStore(R"({"version":1,"grants":[)" + entry + "]}");
  EXPECT_TRUE(GrantStore::Open(path_)) << "the well-formed variant loads";
}

TEST_F(GrantStoreTest, GroupOrWorldWritableFileIsRefused) {
  WriteStore(R"({"version":1,"grants":[]})", 0620);
  auto store = GrantStore::Open(path_);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, "denied");
  EXPECT_NE(store.error().message.find("writable by other users"), std::string::npos);
  ::chmod(path_.c_str(), 0602);
  EXPECT_FALSE(GrantStore::Open(path_));
}

TEST_F(GrantStoreTest, WritableDirectoryIsRefused) {
  std::filesystem::create_directories(state_dir_);
  ASSERT_EQ(::chmod(state_dir_.c_str(), 0777), 0);
  auto store = GrantStore::Open(path_);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, "denied");
}

TEST_F(GrantStoreTest, SymlinkedFileOrDirectoryIsRefused) {
  // A symlink in place of grants.json would let whoever controls its target decide the grants.
  std::filesystem::create_directories(state_dir_);
  ::chmod(state_dir_.c_str(), 0700);
  const std::string decoy = root_ + "/decoy.json";
  std::ofstream(decoy) << R"({"version":1,"grants":[]})";
  ASSERT_EQ(::symlink(decoy.c_str(), path_.c_str()), 0);
  auto store = GrantStore::Open(path_);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, "denied");
  EXPECT_NE(store.error().message.find("symbolic link"), std::string::npos);

  const std::string real_dir = root_ + "/real";
  ASSERT_EQ(::mkdir(real_dir.c_str(), 0700), 0);
  const std::string link_dir = root_ + "/linked";
  ASSERT_EQ(::symlink(real_dir.c_str(), link_dir.c_str()), 0);
  auto through_link = GrantStore::Open(link_dir + "/grants.json");
  ASSERT_FALSE(through_link);
  EXPECT_EQ(through_link.error().code, "denied");
}

TEST_F(GrantStoreTest, ForeignOwnedFileIsRefused) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "SKIPPED (needs root to create a file owned by another uid)";
  }
  WriteStore(R"({"version":1,"grants":[]})");
  ASSERT_EQ(::chown(path_.c_str(), 12345, 12345), 0);
  auto store = GrantStore::Open(path_);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, "denied");
  EXPECT_NE(store.error().message.find("owned by uid 12345"), std::string::npos)
      << store.error().message;

  ASSERT_EQ(::chown(path_.c_str(), 0, 0), 0);
  ASSERT_EQ(::chown(state_dir_.c_str(), 12345, 12345), 0);
  auto dir_store = GrantStore::Open(path_);
  ASSERT_FALSE(dir_store);
  EXPECT_EQ(dir_store.error().code, "denied");
}

TEST_F(GrantStoreTest, DefaultPathFollowsXdg) {
  {
    ScopedEnv xdg("XDG_STATE_HOME", (root_ + "/xdg").c_str());
    auto path = GrantStore::DefaultPath();
    ASSERT_TRUE(path);
    EXPECT_EQ(*path, root_ + "/xdg/anvil/grants.json");
    auto store = GrantStore::Open();
    ASSERT_TRUE(store) << store.error().ToString();
    EXPECT_EQ(store->path(), root_ + "/xdg/anvil/grants.json");
    EXPECT_EQ(Mode(root_ + "/xdg/anvil"), 0700u);
  }
  {
    // A relative XDG_STATE_HOME is ignored (XDG spec): it would resolve inside whatever
    // directory Anvil runs in, possibly a hostile repository.
    ScopedEnv xdg("XDG_STATE_HOME", "relative/state");
    ScopedEnv home("HOME", (root_ + "/home").c_str());
    auto path = GrantStore::DefaultPath();
    ASSERT_TRUE(path);
    EXPECT_EQ(*path, root_ + "/home/.local/state/anvil/grants.json");
  }
  {
    ScopedEnv xdg("XDG_STATE_HOME", nullptr);
    ScopedEnv home("HOME", (root_ + "/home").c_str());
    EXPECT_EQ(*GrantStore::DefaultPath(), root_ + "/home/.local/state/anvil/grants.json");
  }
}

}  // namespace
}  // namespace grant_store_test
}  // namespace anvil
