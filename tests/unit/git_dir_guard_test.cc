// The git-dir predicate shared by the command sandbox's walk and the gateway's plugin guard, and
// the guard's decision: table-tested, no files.
#include "fs/git_dir_guard.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace anvil {
namespace git_dir_guard_test {
namespace {

using K = GitDirEntryKind;

TEST(GitDirShape, FollowsGitsIsGitDirectory) {
  struct Case {
    GitDirNames names;
    bool git_dir;
  };
  const std::vector<Case> cases = {
      {{K::kFile, K::kDir, K::kDir, K::kMissing}, true},
      {{K::kSymlink, K::kSymlink, K::kSymlink, K::kMissing}, true},
      {{K::kFile, K::kExecFile, K::kDir, K::kMissing}, true},  // access(X_OK) takes it
      {{K::kFile, K::kFile, K::kDir, K::kMissing}, false},     // ... not without an x bit
      {{K::kFile, K::kDir, K::kFile, K::kMissing}, false},
      {{K::kDir, K::kDir, K::kDir, K::kMissing}, false},  // a directory HEAD is not a ref
      // A FIFO, socket or device (review: an executable FIFO as objects passes access(X_OK) and
      // hid a repository from the walk): counted wherever it stands, over-matching only judges.
      {{K::kOther, K::kDir, K::kDir, K::kMissing}, true},
      {{K::kFile, K::kOther, K::kDir, K::kMissing}, true},
      {{K::kFile, K::kDir, K::kOther, K::kMissing}, true},
      {{K::kFile, K::kMissing, K::kMissing, K::kOther}, true},
      {{K::kMissing, K::kDir, K::kDir, K::kMissing}, false},
      {{K::kFile, K::kDir, K::kMissing, K::kMissing}, false},
      {{K::kFile, K::kMissing, K::kDir, K::kMissing}, false},
      // commondir: objects and refs are looked for where it points, which may be anywhere.
      {{K::kFile, K::kMissing, K::kMissing, K::kFile}, true},
      {{K::kFile, K::kMissing, K::kMissing, K::kSymlink}, true},
      {{K::kMissing, K::kMissing, K::kMissing, K::kFile}, false},
      {{K::kFile, K::kMissing, K::kMissing, K::kDir}, false},
      {{}, false},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(IsGitDirShape(cases[i].names), cases[i].git_dir) << "case " << i;
  }
}

TEST(GitDirShape, NamesAreComparedAsTheDirectoryLooksThemUp) {
  EXPECT_EQ(ClassifyGitDirName("HEAD", false), GitDirName::kHead);
  EXPECT_EQ(ClassifyGitDirName("head", false), GitDirName::kNone);  // git on Linux: exact
  EXPECT_EQ(ClassifyGitDirName("Objects", false), GitDirName::kNone);
  EXPECT_EQ(ClassifyGitDirName("objects", false), GitDirName::kObjects);
  EXPECT_EQ(ClassifyGitDirName("refs", false), GitDirName::kRefs);
  EXPECT_EQ(ClassifyGitDirName("commondir", false), GitDirName::kCommonDir);
  EXPECT_EQ(ClassifyGitDirName("HEAD.lock", false), GitDirName::kNone);
  EXPECT_EQ(ClassifyGitDirName("ORIG_HEAD", false), GitDirName::kNone);
  // A case-folding directory finds HEAD under any spelling it folds to it.
  EXPECT_EQ(ClassifyGitDirName("head", true), GitDirName::kHead);
  EXPECT_EQ(ClassifyGitDirName("OBJECTS", true), GitDirName::kObjects);
  EXPECT_EQ(ClassifyGitDirName("ref\xC5\xBF", true), GitDirName::kRefs);  // U+017F LONG S
  EXPECT_EQ(ClassifyGitDirName("CommonDir", true), GitDirName::kCommonDir);
  EXPECT_EQ(ClassifyGitDirName("headx", true), GitDirName::kNone);
  // Padded past 64 bytes with code points such a directory ignores (U+200C): still HEAD there;
  // on an exact-lookup directory a different name.
  std::string padded = "HEAD";
  for (int i = 0; i < 21; ++i) padded += "\xE2\x80\x8C";
  ASSERT_GT(padded.size(), 64u);
  EXPECT_EQ(ClassifyGitDirName(padded, true), GitDirName::kHead);
  EXPECT_EQ(ClassifyGitDirName(padded, false), GitDirName::kNone);

  const GitDirNames half{K::kMissing, K::kDir, K::kDir, K::kMissing};
  EXPECT_TRUE(IsGitDirShape(WithEntry(half, "HEAD", K::kFile, false)));
  EXPECT_FALSE(IsGitDirShape(WithEntry(half, "head", K::kFile, false)));
  EXPECT_TRUE(IsGitDirShape(WithEntry(half, "head", K::kFile, true)));
  EXPECT_FALSE(IsGitDirShape(WithEntry(half, "notes", K::kFile, true)));
}

// A walk over a listing: several entries may fold to one of git's names, and the one that git
// would accept is never undone by another listed after it.
TEST(GitDirShape, ListedEntriesOnlyEverAddToTheShape) {
  struct Case {
    std::vector<std::pair<std::string, K>> entries;
    bool git_dir;
  };
  const std::vector<Case> cases = {
      {{{"HEAD", K::kFile}, {"objects", K::kDir}, {"refs", K::kDir}}, true},
      {{{"HEAD", K::kFile}, {"objects", K::kDir}, {"OBJECTS", K::kFile}, {"refs", K::kDir}}, true},
      {{{"HEAD", K::kFile}, {"objects", K::kFile}, {"Objects", K::kDir}, {"refs", K::kDir}}, true},
      {{{"HEAD", K::kFile}, {"head", K::kDir}, {"objects", K::kDir}, {"refs", K::kDir}}, true},
      {{{"head", K::kDir}, {"HEAD", K::kFile}, {"commondir", K::kFile}}, true},
      {{{"HEAD", K::kFile}, {"objects", K::kFile}, {"refs", K::kDir}}, false},
      {{{"HEAD", K::kDir}, {"objects", K::kDir}, {"refs", K::kDir}}, false},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    GitDirNames names;
    for (const auto& [name, kind] : cases[i].entries) {
      names = WithListedEntry(names, name, kind, true);
    }
    EXPECT_EQ(IsGitDirShape(names), cases[i].git_dir) << "case " << i;
  }
}

GitDirProbe Probe(std::string dir, GitDirNames names, bool folds = false) {
  return GitDirProbe{std::move(dir), names, folds};
}

TEST(GitDirGuard, DecidesEachOpBeforeItRuns) {
  const GitDirNames plain{};
  const GitDirNames half{K::kMissing, K::kDir, K::kDir, K::kMissing};  // objects/ + refs/
  const GitDirNames head_only{K::kFile, K::kMissing, K::kMissing, K::kMissing};
  const GitDirNames head_refs{K::kFile, K::kMissing, K::kDir, K::kMissing};
  const GitDirNames bare{K::kFile, K::kDir, K::kDir, K::kMissing};
  struct Case {
    std::vector<GitDirProbe> dirs;
    std::string name;
    K kind;
    bool made_in_last;
    bool denied;
  };
  const std::vector<Case> cases = {
      // Completing the layout: HEAD, objects, refs or commondir as the missing piece.
      {{Probe(".", plain), Probe("d", half)}, "HEAD", K::kFile, true, true},
      {{Probe(".", plain), Probe("d", half)}, "HEAD", K::kSymlink, true, true},
      {{Probe(".", plain), Probe("d", head_refs)}, "objects", K::kDir, true, true},
      {{Probe(".", plain), Probe("d", head_refs)}, "objects", K::kExecFile, true, true},
      {{Probe(".", plain), Probe("d", head_only)}, "commondir", K::kFile, true, true},
      {{Probe(".", plain), Probe("d", half, true)}, "Head", K::kFile, true, true},
      // Benign neighbours: the name alone, a case variant where case matters, a file where a
      // directory would be needed, the entry going into a directory still to be made.
      {{Probe(".", plain), Probe("d", plain)}, "HEAD", K::kFile, true, false},
      {{Probe(".", plain), Probe("d", plain)}, "objects", K::kDir, true, false},
      {{Probe(".", plain), Probe("d", half)}, "refs", K::kDir, true, false},
      {{Probe(".", plain), Probe("d", half)}, "Head", K::kFile, true, false},
      {{Probe(".", plain), Probe("d", half)}, "README", K::kFile, true, false},
      {{Probe(".", plain), Probe("d", head_refs)}, "objects", K::kFile, true, false},
      {{Probe(".", plain), Probe("d", half)}, "HEAD", K::kFile, false, false},
      {{Probe(".", plain), Probe("d", half)}, "", K::kMissing, true, false},
      // Anything beneath an existing git dir, whatever the name and op.
      {{Probe(".", plain), Probe("m.git", bare)}, "config", K::kFile, true, true},
      {{Probe(".", plain), Probe("m.git", bare), Probe("m.git/hooks", plain)},
       "pre-commit",
       K::kFile,
       true,
       true},
      {{Probe(".", plain), Probe("m.git", bare)}, "", K::kMissing, true, true},
      {{Probe(".", bare), Probe("src", plain)}, "a.c", K::kFile, true, true},
      {{Probe(".", plain), Probe("m.git", bare), Probe("m.git/info", plain)},
       "x",
       K::kFile,
       false,
       true},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    GitDirMutation m;
    m.op = "fs.write";
    m.dirs = cases[i].dirs;
    m.name = cases[i].name;
    m.kind = cases[i].kind;
    m.made_in_last = cases[i].made_in_last;
    auto s = DecideGitDirMutation(m);
    EXPECT_EQ(!s, cases[i].denied) << "case " << i << ": " << (s ? "ok" : s.error().message);
    if (!s) {
      EXPECT_EQ(s.error().code, "denied") << "case " << i;
    }
  }
}

TEST(GitDirGuard, MessagesNameTheDirectoryTheReasonAndTheFix) {
  GitDirMutation m;
  m.op = "fs.write";
  m.dirs = {Probe(".", {}), Probe("docs", {K::kMissing, K::kDir, K::kDir, K::kMissing})};
  m.name = "HEAD";
  m.kind = K::kFile;
  auto s = DecideGitDirMutation(m);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message,
            "fs.write would make docs a git directory (HEAD, objects/, refs/): git run there "
            "would use its config and hooks, which is code run on the host; fix: use another "
            "name or another directory (HEAD beside objects/ and refs/, or HEAD beside "
            "commondir, is what git looks for)");
  m.dirs[1].names.head = K::kFile;
  m.name = "config";
  s = DecideGitDirMutation(m);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message.rfind("fs.write: docs is a git directory (HEAD, objects/, refs/): "
                                    "git run there would use its config and hooks",
                                    0),
            0u)
      << s.error().message;
  EXPECT_NE(s.error().message.find("fix: "), std::string::npos);
  const Error tree = GitDirInTreeError("fs.rename", "notes/prep", "a/b");
  EXPECT_EQ(tree.code, "denied");
  EXPECT_EQ(tree.message.rfind("fs.rename: notes/prep holds a git directory notes/prep/a/b "
                               "(HEAD, objects/, refs/)",
                               0),
            0u)
      << tree.message;
}

}  // namespace
}  // namespace git_dir_guard_test
}  // namespace anvil
