// T1/T8, pure layer: grant globs match normalized workspace paths exactly as documented, and
// protected names (.git, .anvil, anvil.lock, Anvil.toml) are never writable through a wildcard.
#include "fs/path_glob.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fs/workspace_path.h"

namespace anvil {
namespace path_glob_test {
namespace {

using namespace std::string_view_literals;

bool M(std::string_view glob, std::string_view path) { return GlobMatches(glob, path); }

TEST(GlobValidate, AcceptsDocumentedSyntax) {
  for (std::string_view g : {"**", "*", "?", "src/**", "**/*.c", "a/**/b", "**/**", "a?c/*.txt",
                             ".git/config", "notes/**", "caf\xc3\xa9/*", "*.*", "a*b*c"}) {
    EXPECT_TRUE(ValidateGlob(g)) << g << ": " << ValidateGlob(g).error().ToString();
  }
}

TEST(GlobValidate, RejectsWhatCouldNotBeAPath) {
  for (std::string_view g :
       {"", "/", "/etc/**", "../**", "**/..", "a/../b", "./a", "a/.", ".", "a//b", "a/", "**/",
        "a**", "**b", "a/**b/c", "***", "a\nb", "\xff*", "\xc0\xae\xc0\xae/x"}) {
    auto ok = ValidateGlob(g);
    EXPECT_FALSE(ok) << QuotePathForMessage(g);
    if (!ok) {
      EXPECT_EQ(ok.error().code, "invalid");
    }
  }
  EXPECT_FALSE(ValidateGlob("a\0b"sv));  // NUL would truncate the glob in C
  EXPECT_EQ(ValidateGlob("a**").error().ToString(),
            "invalid: glob: '**' must be a whole path segment: a**");
  EXPECT_EQ(ValidateGlob("/etc/**").error().ToString(), "invalid: glob: absolute path: /etc/**");
}

TEST(GlobValidate, InvalidGlobsMatchNothing) {
  for (std::string_view g : {"", "/**", "../**", "a**", "**/../**"}) {
    for (std::string_view p : {"a", "a/b", ".", "x/y/z"}) EXPECT_FALSE(M(g, p)) << g << " " << p;
  }
}

TEST(GlobLiteral, OnlyWildcardFreeValidGlobs) {
  EXPECT_TRUE(IsLiteralGlob("a"));
  EXPECT_TRUE(IsLiteralGlob(".git/hooks/pre-commit"));
  EXPECT_FALSE(IsLiteralGlob("*"));
  EXPECT_FALSE(IsLiteralGlob("a?"));
  EXPECT_FALSE(IsLiteralGlob("**"));
  EXPECT_FALSE(IsLiteralGlob(".git/hooks/*"));
  EXPECT_FALSE(IsLiteralGlob("/abs"));
  EXPECT_FALSE(IsLiteralGlob(""));
}

TEST(GlobMatch, LiteralSegmentsAreExactAndCaseSensitive) {
  EXPECT_TRUE(M("a/b", "a/b"));
  EXPECT_FALSE(M("a/b", "a/b/c"));
  EXPECT_FALSE(M("a/b", "a"));
  EXPECT_FALSE(M("a/b", "A/b"));
  EXPECT_FALSE(M("a/b", "a/bb"));
  EXPECT_FALSE(M("a/b", "aa/b"));
  EXPECT_FALSE(M("src", "src/x"));  // a literal directory grants only itself
}

TEST(GlobMatch, StarStaysInsideOneComponent) {
  EXPECT_TRUE(M("*", "a"));
  EXPECT_TRUE(M("*", ".env"));  // wildcards match dot names (documented)
  EXPECT_FALSE(M("*", "a/b"));
  EXPECT_FALSE(M("*", "."));
  EXPECT_TRUE(M("*.c", "main.c"));
  EXPECT_TRUE(M("*.c", ".c"));  // '*' may be empty
  EXPECT_FALSE(M("*.c", "src/main.c"));
  EXPECT_FALSE(M("*.c", "main.cc"));
  EXPECT_TRUE(M("src/*.c", "src/main.c"));
  EXPECT_FALSE(M("src/*.c", "src/sub/main.c"));
  EXPECT_TRUE(M("src/*/x", "src/a/x"));
  EXPECT_FALSE(
      M("src/*/x", "src/x"));  // '*' is a whole component here, and components are non-empty
  EXPECT_FALSE(M("src/*/x", "src/a/b/x"));
  EXPECT_TRUE(M("a*b*c", "abc"));
  EXPECT_TRUE(M("a*b*c", "aXbYc"));
  EXPECT_TRUE(M("a*b*c", "abbbcbc"));
  EXPECT_FALSE(M("a*b*c", "abcx"));
  EXPECT_TRUE(M("*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"));
  EXPECT_FALSE(
      M("*a*a*a*a*a*b", std::string(250, 'a')));  // fails fast, no exponential backtracking
  EXPECT_TRUE(M("**", "a/b"));
}

TEST(GlobMatch, QuestionMarkIsOneCodePoint) {
  EXPECT_TRUE(M("?", "a"));
  EXPECT_FALSE(M("?", "ab"));
  EXPECT_FALSE(M("?", "a/b"));
  EXPECT_TRUE(M("a?c", "abc"));
  EXPECT_FALSE(M("a?c", "ac"));
  EXPECT_TRUE(M("caf?", "caf\xc3\xa9"));  // é (NFC) is one code point, two bytes
  EXPECT_FALSE(M("caf??", "caf\xc3\xa9"));
  EXPECT_TRUE(M("?", "\xf0\x9f\x98\x80"));  // one 4-byte emoji
  EXPECT_FALSE(M("??", "\xf0\x9f\x98\x80"));
  EXPECT_TRUE(M("?.txt", "\xe6\x97\xa5.txt"));
  // Decomposed é (NFD: e + U+0301) is two code points: no Unicode normalization, bytes are names.
  EXPECT_FALSE(M("caf?", "cafe\xcc\x81"));
  EXPECT_TRUE(M("caf??", "cafe\xcc\x81"));
  EXPECT_FALSE(M("caf\xc3\xa9", "cafe\xcc\x81"));
  EXPECT_TRUE(M("*\xc3\xa9", "caf\xc3\xa9"));
  EXPECT_TRUE(M("?*?", "\xc3\xa9\xc3\xa9"));
  EXPECT_FALSE(M("?*?", "\xc3\xa9"));
}

TEST(GlobMatch, DoubleStarIsZeroOrMoreComponents) {
  EXPECT_TRUE(M("**", "."));  // zero components: the root itself (list ".")
  EXPECT_TRUE(M("**", "a"));
  EXPECT_TRUE(M("**", "a/b/c"));
  EXPECT_TRUE(M("**", ".git/config"));  // reading: protected names are readable through **
  EXPECT_TRUE(M("src/**", "src"));
  EXPECT_TRUE(M("src/**", "src/a"));
  EXPECT_TRUE(M("src/**", "src/a/b/c"));
  EXPECT_FALSE(M("src/**", "srcx"));
  EXPECT_FALSE(M("src/**", "srcx/a"));
  EXPECT_FALSE(M("src/**", "other/src/a"));
  EXPECT_FALSE(M("src/**", "."));
  EXPECT_TRUE(M("**/*.c", "a.c"));
  EXPECT_TRUE(M("**/*.c", "x/y/a.c"));
  EXPECT_FALSE(M("**/*.c", "x/y/a.h"));
  EXPECT_FALSE(M("**/*.c", "a.c/x"));
  EXPECT_TRUE(M("a/**/b", "a/b"));
  EXPECT_TRUE(M("a/**/b", "a/x/b"));
  EXPECT_TRUE(M("a/**/b", "a/x/y/b"));
  EXPECT_FALSE(M("a/**/b", "a/x/y/bc"));
  EXPECT_FALSE(M("a/**/b", "a/b/c"));
  EXPECT_TRUE(M("a/**/b/**", "a/q/b/r/s"));
  EXPECT_TRUE(M("**/**", "."));
  EXPECT_TRUE(M("**/**", "x/y"));
  EXPECT_TRUE(M("**/b/**/b", "b/b"));
  EXPECT_TRUE(M("**/b/**/b", "x/b/y/z/b"));
  EXPECT_FALSE(M("**/b/**/b", "x/b"));
  EXPECT_FALSE(M("*", "."));
  EXPECT_FALSE(M("a/**", "."));
}

TEST(GlobMatch, ManyDoubleStarsStayCheap) {
  std::string glob;
  for (int i = 0; i < 200; ++i) glob += "**/";
  glob += "z";
  std::string path;
  for (int i = 0; i < 1000; ++i) path += "a/";
  EXPECT_FALSE(M(glob, path + "y"));
  EXPECT_TRUE(M(glob, path + "z"));
}

TEST(GlobMatch, InvalidPathsNeverMatch) {
  for (std::string_view p : {"", "/a", "../a", "a/../b", "a//b", "a/", "./a", "\xff", "a\nb"}) {
    EXPECT_FALSE(M("**", p)) << QuotePathForMessage(p);
    EXPECT_FALSE(GrantAllows({"**"}, p, Access::kRead)) << QuotePathForMessage(p);
  }
}

TEST(GlobMatch, WildcardCharactersInNamesAreJustCharacters) {
  // A file literally named "*" is matched by "*" (and by anything else that matches it).
  EXPECT_TRUE(M("*", "*"));
  EXPECT_TRUE(M("a?", "a?"));
  EXPECT_TRUE(M("a?", "ab"));
}

TEST(GlobProtectedPath, AtTheRootAndAtAnyDepth) {
  for (std::string_view p :
       {".git", ".git/config", ".git/hooks/pre-commit", "sub/.git",
        "vendor/lib/.git/hooks/post-checkout", ".anvil", ".anvil/state", "x/.anvil/y", "anvil.lock",
        "Anvil.toml", "pkg/Anvil.toml", "pkg/anvil.lock"}) {
    EXPECT_TRUE(IsProtectedPath(p)) << p;
  }
}

TEST(GlobProtectedPath, CaseVariantsAreProtected) {
  // A case-folding filesystem maps these to the same directory entry.
  for (std::string_view p : {".GIT/config", ".Git/hooks/x", ".ANVIL", "ANVIL.LOCK", "anvil.toml",
                             "ANVIL.TOML", "a/.gIt"}) {
    EXPECT_TRUE(IsProtectedPath(p)) << p;
  }
}

TEST(GlobProtectedPath, NamesThatCaseFoldingOrIgnoringFileSystemsMapToProtectedOnes) {
  // ext4/f2fs casefold: KELVIN SIGN folds to k, LONG S to s. HFS+: ignorable code points are
  // dropped. NTFS/SMB: trailing dots and spaces are dropped.
  for (std::string_view n : {"anvil.loc\xE2\x84\xAA", "ANVIL.LOC\xE2\x84\xAA", ".g\xE2\x80\x8Cit",
                             ".gi\xE2\x80\x8Dt", "\xEF\xBB\xBF.git", ".git\xE2\x81\xAA", ".git.",
                             ".git ", ".GIT. .", "Anvil.toml.", ".anvil\xE2\x80\x8E"}) {
    EXPECT_TRUE(IsProtectedName(n)) << n;
    EXPECT_TRUE(IsProtectedPath("sub/" + std::string(n) + "/x")) << n;
  }
  // Raw names of a directory walk need not be UTF-8.
  for (std::string_view n : {".g\xFFit", ".git\xC3", "\xE2\x84", ".gi\xC5\xBF", "\xC4\xB1"}) {
    EXPECT_FALSE(IsProtectedName(n)) << n;
  }
}

TEST(GlobProtectedPath, SimilarNamesAreNot) {
  for (std::string_view p :
       {".", "git", ".gitignore", ".github/workflows/ci.yml", ".git2", "x.git", ".gitmodules",
        ".anvilrc", "anvil.lock.bak", "Anvil.toml~", "my.anvil", "src/main.c", "anvil", "Anvil"}) {
    EXPECT_FALSE(IsProtectedPath(p)) << p;
  }
}

TEST(GlobGrantAllows, ReadsFollowTheGlobs) {
  const std::vector<std::string> read = {"src/**", "README.md"};
  EXPECT_TRUE(GrantAllows(read, "src/a.c", Access::kRead));
  EXPECT_TRUE(GrantAllows(read, "src", Access::kRead));
  EXPECT_TRUE(GrantAllows(read, "README.md", Access::kRead));
  EXPECT_FALSE(GrantAllows(read, "README.md.bak", Access::kRead));
  EXPECT_FALSE(GrantAllows(read, ".", Access::kRead));
  EXPECT_FALSE(GrantAllows(read, ".env", Access::kRead));
  EXPECT_FALSE(GrantAllows({}, "src/a.c", Access::kRead));
}

TEST(GlobGrantAllows, ProtectedNamesAreReadableThroughWildcards) {
  EXPECT_TRUE(GrantAllows({"**"}, ".git/config", Access::kRead));
  EXPECT_TRUE(GrantAllows({"**"}, "Anvil.toml", Access::kRead));
}

TEST(GlobGrantAllows, WildcardsNeverWriteProtectedNames) {
  const std::vector<std::string> everything = {"**"};
  EXPECT_TRUE(GrantAllows(everything, "src/a.c", Access::kWrite));  // benign control
  for (std::string_view p :
       {".git", ".git/config", ".git/hooks/pre-commit", "sub/.git/config", ".anvil/grants",
        "anvil.lock", "Anvil.toml", "pkg/Anvil.toml", ".GIT/hooks/pre-commit", "ANVIL.LOCK"}) {
    EXPECT_FALSE(GrantAllows(everything, p, Access::kWrite)) << p;
  }
  EXPECT_FALSE(GrantAllows({"*"}, "Anvil.toml", Access::kWrite));
  EXPECT_FALSE(GrantAllows({"*.toml"}, "Anvil.toml", Access::kWrite));
  EXPECT_FALSE(GrantAllows({"Anvil.tom?"}, "Anvil.toml", Access::kWrite));
  EXPECT_FALSE(GrantAllows({"*.lock"}, "anvil.lock", Access::kWrite));
  // Even a wildcard that spells the protected component out literally is not enough.
  EXPECT_FALSE(GrantAllows({".git/**"}, ".git/config", Access::kWrite));
  EXPECT_FALSE(GrantAllows({".git/hooks/*"}, ".git/hooks/pre-commit", Access::kWrite));
  EXPECT_FALSE(GrantAllows({"**/.git/**"}, "sub/.git/config", Access::kWrite));
  EXPECT_FALSE(GrantAllows({"sub/**"}, "sub/.git/config", Access::kWrite));
}

TEST(GlobGrantAllows, OnlyAnExactLiteralGrantWritesAProtectedName) {
  EXPECT_TRUE(GrantAllows({"Anvil.toml"}, "Anvil.toml", Access::kWrite));
  EXPECT_TRUE(
      GrantAllows({"**", ".git/hooks/pre-commit"}, ".git/hooks/pre-commit", Access::kWrite));
  // A literal grant names exactly one path: not its subtree, not a case variant.
  EXPECT_FALSE(GrantAllows({".git"}, ".git/config", Access::kWrite));
  EXPECT_FALSE(GrantAllows({".git/hooks/pre-commit"}, ".git/hooks/post-commit", Access::kWrite));
  EXPECT_FALSE(GrantAllows({"anvil.toml"}, "Anvil.toml", Access::kWrite));
  EXPECT_TRUE(GrantAllows({".git"}, ".git", Access::kWrite));
}

TEST(GlobGrantAllows, InvalidGlobsInAGrantAreIgnoredNotFatal) {
  const std::vector<std::string> grant = {"/etc/**", "../**", "a**", "notes/**"};
  EXPECT_TRUE(GrantAllows(grant, "notes/today.md", Access::kWrite));
  EXPECT_FALSE(GrantAllows(grant, "src/a.c", Access::kWrite));
}

TEST(GlobGrantAllows, RootMatchesOnlyAllDoubleStarGrants) {
  EXPECT_TRUE(GrantAllows({"**"}, ".", Access::kRead));
  EXPECT_FALSE(GrantAllows({"*"}, ".", Access::kRead));
  EXPECT_FALSE(GrantAllows({"src/**"}, ".", Access::kRead));
}

// The two questions a view of "exactly what the grant reads" asks of each directory (sys.exec,
// fs/read_plan.h): must the walk look inside it, and may it be shown whole.
TEST(GrantReachesAndCovers, ADirectoryIsEnteredOnlyWhereAGlobCanStillMatch) {
  struct Case {
    std::vector<std::string> grant;
    std::string dir;
    bool reaches, covers;
  };
  const Case cases[] = {
      {{"**"}, ".", true, true},
      {{"**"}, "a/b", true, true},
      {{"src/**"}, ".", true, false},
      {{"src/**"}, "src", true, true},
      {{"src/**"}, "src/deep/er", true, true},
      {{"src/**"}, "docs", false, false},
      {{"src/**"}, "src2", false, false},
      {{"*.md"}, ".", true, false},
      {{"*.md"}, "docs", false, false},  // a directory named "x.md" would match: see below
      {{"*.md"}, "x.md", true, false},   // matches the name itself, nothing beneath
      {{"**/*.md"}, ".", true, false},
      {{"**/*.md"}, "a/b", true, false},
      {{"docs/*.md"}, "docs", true, false},
      {{"docs/*.md"}, "docs/sub", false, false},
      {{"**/*"}, ".", true, true},
      {{"*/**"}, ".", true, true},
      {{"*/*/**"}, ".", true, false},
      {{"*/*/**"}, "a", true, true},
      {{"**/test/**"}, ".", true, false},
      {{"**/test/**"}, "a/test", true, true},
      {{"src/**/*.c"}, "src/x", true, false},
      {{"README.md"}, ".", true, false},
      {{"README.md"}, "src", false, false},
      {{"src/?"}, "src", true, false},
      {{"src/**/?/**"}, "src", true, false},
      {{}, ".", false, false},
      {{"/etc/**", "../**", "a**"}, ".", false, false},  // invalid globs reach nothing
      {{"*.md", "src/**"}, "src", true, true},
  };
  for (const auto& c : cases) {
    std::string name;
    for (const auto& g : c.grant) name += g + " ";
    EXPECT_EQ(GrantReaches(c.grant, c.dir), c.reaches) << name << "| " << c.dir;
    EXPECT_EQ(GrantCoversSubtree(c.grant, c.dir), c.covers) << name << "| " << c.dir;
  }
}

TEST(GrantReachesAndCovers, CoveringMeansEveryPathBeneathIsGranted) {
  // Whatever a covering grant says, GrantAllows agrees for every descendant tried.
  const std::vector<std::vector<std::string>> grants = {
      {"**"}, {"src/**"}, {"**/*"}, {"*/**"}, {"*/*/**"}, {"**/*.md"}, {"docs/*"}, {"a/**/b/**"}};
  const std::vector<std::string> dirs = {".", "src", "a", "a/b", "docs", "a/x/b"};
  const std::vector<std::string> below = {"x", "x.md", ".env", ".git/config", "b/c/d", "?"};
  for (const auto& grant : grants) {
    for (const auto& dir : dirs) {
      if (!GrantCoversSubtree(grant, dir)) continue;
      for (const auto& rest : below) {
        std::string path = dir == "." ? rest : dir + "/" + rest;
        EXPECT_TRUE(GrantAllows(grant, path, Access::kRead)) << grant[0] << " covers " << dir;
      }
    }
  }
  EXPECT_FALSE(GrantReaches({"**"}, "../x"));
  EXPECT_FALSE(GrantCoversSubtree({"**"}, "/etc"));
}

}  // namespace
}  // namespace path_glob_test
}  // namespace anvil
