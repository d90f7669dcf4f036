#include "policy/exec_rules.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace anvil {
namespace exec_rules_test {
namespace {

using Args = std::vector<std::string>;

bool AllExist(const std::string&) { return true; }

const ExecRule& Rg() { return *FindExecRule("rg"); }
const ExecRule& Fd() { return *FindExecRule("fd"); }

Result<CheckedArgv> Check(const ExecRule& rule, const Args& args) {
  return CheckExecArgv(rule, args, AllExist);
}

// "code: message" of a refusal, or a marker when the argv was accepted.
std::string Verdict(const ExecRule& rule, const Args& args) {
  auto r = Check(rule, args);
  return r ? std::string("accepted") : r.error().ToString();
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

::testing::AssertionResult RefusedWith(const ExecRule& rule, const Args& args,
                                       const std::string& prefix) {
  std::string verdict = Verdict(rule, args);
  if (StartsWith(verdict, prefix)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "verdict \"" << verdict << "\", expected \"" << prefix << "...\"";
}

// Streams extra context like any EXPECT_*.
#define EXPECT_REFUSED(rule, args, prefix) EXPECT_TRUE(RefusedWith(rule, args, prefix))

Args ArgvOf(const ExecRule& rule, const Args& args) {
  auto r = Check(rule, args);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().ToString());
  return r ? r->argv : Args{};
}

// ---- The table itself ----------------------------------------------------------------------

TEST(ExecRules, TableHasRgAndFdWithFixedAbsoluteCandidates) {
  ASSERT_NE(FindExecRule("rg"), nullptr);
  ASSERT_NE(FindExecRule("fd"), nullptr);
  EXPECT_EQ(Rg().candidate_paths, Args{"/usr/bin/rg"});
  EXPECT_EQ(Fd().candidate_paths, (Args{"/usr/bin/fdfind", "/usr/bin/fd"}));
  for (const auto& rule : ExecPolicyTable()) {
    ASSERT_FALSE(rule.candidate_paths.empty()) << rule.name;
    for (const auto& path : rule.candidate_paths) {
      EXPECT_EQ(path[0], '/') << path;
      EXPECT_EQ(path.find(".."), std::string::npos) << path;
    }
  }
}

TEST(ExecRules, TableIsConsistent) {
  for (const auto& rule : ExecPolicyTable()) {
    std::set<std::string> longs;
    std::set<char> shorts;
    for (const auto& flag : rule.allowed_flags) {
      EXPECT_TRUE(!flag.long_name.empty() || flag.short_name != 0) << rule.name;
      // The canonical spelling of a flag with an operand is --long=VALUE.
      if (flag.operand != OperandKind::kNone) {
        EXPECT_FALSE(flag.long_name.empty()) << rule.name;
      }
      if (!flag.long_name.empty()) {
        EXPECT_TRUE(longs.insert(flag.long_name).second) << flag.long_name;
      }
      if (flag.short_name != 0) {
        EXPECT_TRUE(shorts.insert(flag.short_name).second) << flag.short_name;
      }
    }
    // No flag is both allowed and refused.
    for (const auto& refused : rule.refused_flags) {
      EXPECT_FALSE(refused.reason.empty());
      if (!refused.long_name.empty()) {
        EXPECT_EQ(longs.count(refused.long_name), 0u) << refused.long_name;
      }
      if (refused.short_name != 0) {
        EXPECT_EQ(shorts.count(refused.short_name), 0u) << refused.short_name;
      }
    }
  }
}

TEST(ExecRules, LookupIsExactAndRefusesShellStrings) {
  EXPECT_EQ(*LookupExecRule("rg"), FindExecRule("rg"));
  for (const char* program : {"sh", "bash", "/bin/sh", "/usr/bin/rg", "rg -n TODO", "rg ", " rg",
                              "RG", "fdfind", "./rg", "rg;sh", "sh -c 'rg x'", ""}) {
    auto r = LookupExecRule(program);
    ASSERT_FALSE(r.has_value()) << program;
    EXPECT_EQ(r.error().code, "denied") << program;
    EXPECT_EQ(FindExecRule(program), nullptr) << program;
  }
  EXPECT_EQ(LookupExecRule("sh").error().ToString(),
            "denied: executable not in the policy table: sh");
}

TEST(ExecRules, ProgramPathIsFirstExistingCandidate) {
  auto only_fd = [](const std::string& p) { return p == "/usr/bin/fd"; };
  auto r = CheckExecArgv(Fd(), {"main"}, only_fd);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->program_path, "/usr/bin/fd");
  auto both = CheckExecArgv(Fd(), {"main"}, AllExist);
  EXPECT_EQ(both->program_path, "/usr/bin/fdfind");
  EXPECT_EQ(both->argv[0], "fd");

  auto none = CheckExecArgv(Rg(), {"x"}, [](const std::string&) { return false; });
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code, "not_found");
}

// ---- Benign controls -----------------------------------------------------------------------

TEST(ExecRules, RgBenignSearchesAreAcceptedAndCanonical) {
  EXPECT_EQ(ArgvOf(Rg(), {"-n", "TODO", "src"}),
            (Args{"rg", "--no-config", "--line-number", "--", "TODO", "src"}));
  EXPECT_EQ(ArgvOf(Rg(), {"-e", "foo", "-e", "bar", "."}),
            (Args{"rg", "--no-config", "--regexp=foo", "--regexp=bar", "--", "."}));
  EXPECT_EQ(ArgvOf(Rg(), {"-ic", "x"}),
            (Args{"rg", "--no-config", "--ignore-case", "--count", "--", "x"}));
  EXPECT_EQ(ArgvOf(Rg(), {"-nA3", "x"}),
            (Args{"rg", "--no-config", "--line-number", "--after-context=3", "--", "x"}));
  EXPECT_EQ(ArgvOf(Rg(), {"-A=3", "-g", "*.cc", "--type=cpp", "x", "src/a", "b"}),
            (Args{"rg", "--no-config", "--after-context=3", "--glob=*.cc", "--type=cpp", "--", "x",
                  "src/a", "b"}));
  EXPECT_EQ(ArgvOf(Rg(), {"--files", "src"}), (Args{"rg", "--no-config", "--files", "--", "src"}));
  EXPECT_EQ(ArgvOf(Rg(), {"--json", "-uu", "--hidden", "x"}),
            (Args{"rg", "--no-config", "--json", "--unrestricted", "--unrestricted", "--hidden",
                  "--", "x"}));
  EXPECT_EQ(ArgvOf(Rg(), {"--no-config", "x"}),
            (Args{"rg", "--no-config", "--no-config", "--", "x"}));
  EXPECT_EQ(ArgvOf(Rg(), {}), (Args{"rg", "--no-config"}));
}

TEST(ExecRules, FdBenignSearchesAreAcceptedAndCanonical) {
  EXPECT_EQ(ArgvOf(Fd(), {"-t", "f", "main"}), (Args{"fd", "--type=f", "--", "main"}));
  EXPECT_EQ(ArgvOf(Fd(), {"-e", "c", ".", "src"}), (Args{"fd", "--extension=c", "--", ".", "src"}));
  EXPECT_EQ(ArgvOf(Fd(), {"-HI1", "x"}), (Args{"fd", "--hidden", "--no-ignore", "-1", "--", "x"}));
  EXPECT_EQ(ArgvOf(Fd(), {"--search-path", "src", "--search-path=.", "x"}),
            (Args{"fd", "--search-path=src", "--search-path=.", "--", "x"}));
  EXPECT_EQ(ArgvOf(Fd(), {}), (Args{"fd"}));
  EXPECT_EQ(ArgvOf(Fd(), {"-0", "-d", "2", "--and", "-x", "."}),
            (Args{"fd", "--print0", "--max-depth=2", "--and=-x", "--", "."}));
}

// ---- Flags that spawn commands or load configuration ---------------------------------------

TEST(ExecRules, RgPreIsRefusedInEverySpelling) {
  for (const Args& args : std::vector<Args>{
           {"--pre=sh", "x"}, {"--pre", "sh", "x"}, {"x", "--pre", "sh"}, {"--pre="}, {"--pre"}}) {
    EXPECT_REFUSED(Rg(), args, "denied: rg flag not allowed: --pre");
  }
  EXPECT_REFUSED(Rg(), (Args{"--pre-glob", "*", "x"}), "denied: rg flag not allowed: --pre-glob");
  EXPECT_REFUSED(Rg(), (Args{"--pre-glob=*", "x"}), "denied: rg flag not allowed: --pre-glob");
}

TEST(ExecRules, RgSearchZipIsRefusedInEverySpelling) {
  for (const Args& args : std::vector<Args>{
           {"-z", "x"}, {"-uz", "x"}, {"-uuz", "x"}, {"-zn", "x"}, {"-nz", "x"}, {"x", "-z"}}) {
    EXPECT_REFUSED(Rg(), args, "denied: rg flag not allowed: -z");
  }
  EXPECT_REFUSED(Rg(), (Args{"--search-zip", "x"}), "denied: rg flag not allowed: --search-zip");
}

TEST(ExecRules, RgFollowAndHostnameBinAreRefused) {
  EXPECT_REFUSED(Rg(), (Args{"-L", "x"}), "denied: rg flag not allowed: -L");
  EXPECT_REFUSED(Rg(), (Args{"-nL", "x"}), "denied: rg flag not allowed: -L");
  EXPECT_REFUSED(Rg(), (Args{"--follow", "x"}), "denied: rg flag not allowed: --follow");
  EXPECT_REFUSED(Rg(), (Args{"--hostname-bin=/bin/sh", "x"}),
                 "denied: rg flag not allowed: --hostname-bin");
}

TEST(ExecRules, FdExecFlagsAreRefusedInEverySpelling) {
  for (const Args& args : std::vector<Args>{{"-x", "sh", "-c", "id"},
                                            {"-x=sh"},
                                            {"-xsh"},
                                            {"-Hx", "sh"},
                                            {"main", "-x", "rm"},
                                            {"-e", "c", "-x", "sh"}}) {
    EXPECT_REFUSED(Fd(), args, "denied: fd flag not allowed: -x");
  }
  for (const Args& args : std::vector<Args>{{"-X", "sh"}, {"-X=sh"}, {"-HX", "sh"}}) {
    EXPECT_REFUSED(Fd(), args, "denied: fd flag not allowed: -X");
  }
  EXPECT_REFUSED(Fd(), (Args{"--exec", "sh"}), "denied: fd flag not allowed: --exec");
  EXPECT_REFUSED(Fd(), (Args{"--exec=sh"}), "denied: fd flag not allowed: --exec");
  EXPECT_REFUSED(Fd(), (Args{"--exec-batch", "sh"}), "denied: fd flag not allowed: --exec-batch");
  EXPECT_REFUSED(Fd(), (Args{"--exec-batch=sh"}), "denied: fd flag not allowed: --exec-batch");
  // -l is an alias for --exec-batch ls -l.
  EXPECT_REFUSED(Fd(), (Args{"-l"}), "denied: fd flag not allowed: -l");
  EXPECT_REFUSED(Fd(), (Args{"--list-details"}), "denied: fd flag not allowed: --list-details");
  EXPECT_REFUSED(Fd(), (Args{"--batch-size=1"}), "denied: fd flag not allowed: --batch-size");
}

TEST(ExecRules, FdBaseDirectoryFollowAndAbsolutePathAreRefused) {
  EXPECT_REFUSED(Fd(), (Args{"--base-directory", "src"}),
                 "denied: fd flag not allowed: --base-directory");
  EXPECT_REFUSED(Fd(), (Args{"--base-directory=/"}),
                 "denied: fd flag not allowed: --base-directory");
  EXPECT_REFUSED(Fd(), (Args{"-L"}), "denied: fd flag not allowed: -L");
  EXPECT_REFUSED(Fd(), (Args{"--follow"}), "denied: fd flag not allowed: --follow");
  EXPECT_REFUSED(Fd(), (Args{"-a"}), "denied: fd flag not allowed: -a");
  EXPECT_REFUSED(Fd(), (Args{"--absolute-path"}), "denied: fd flag not allowed: --absolute-path");
}

TEST(ExecRules, RefusalsSayWhy) {
  auto r = Check(Rg(), {"--pre", "sh"});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("runs a command"), std::string::npos) << r.error().message;
  auto f = Check(Fd(), {"--exec", "sh"});
  ASSERT_FALSE(f.has_value());
  EXPECT_NE(f.error().message.find("runs a command"), std::string::npos) << f.error().message;
}

// ---- Allowlist: anything unknown is refused ------------------------------------------------

TEST(ExecRules, UnknownFlagsAreRefused) {
  EXPECT_EQ(Verdict(Rg(), {"--foo"}), "denied: rg flag not allowed: --foo");
  EXPECT_EQ(Verdict(Rg(), {"--foo=bar"}), "denied: rg flag not allowed: --foo");
  EXPECT_EQ(Verdict(Rg(), {"-nQ", "x"}), "denied: rg flag not allowed: -Q");
  EXPECT_EQ(Verdict(Fd(), {"--foo"}), "denied: fd flag not allowed: --foo");
  // Abbreviations are not flags (neither tool accepts them; neither does the table).
  EXPECT_REFUSED(Rg(), (Args{"--line-num", "x"}), "denied: rg flag not allowed: --line-num");
  EXPECT_REFUSED(Fd(), (Args{"--exe", "sh"}), "denied: fd flag not allowed: --exe");
  // Flags of the other tool, or of a newer version, are not in this tool's allowlist.
  EXPECT_REFUSED(Rg(), (Args{"--search-path", "src"}), "denied: rg flag not allowed:");
  EXPECT_REFUSED(Fd(), (Args{"--regexp", "x"}), "denied: fd flag not allowed:");
  EXPECT_REFUSED(Rg(), (Args{"--debug", "x"}), "denied: rg flag not allowed: --debug");
  EXPECT_REFUSED(Rg(), (Args{"--=x"}), "denied: rg flag not allowed:");
}

TEST(ExecRules, UntrustedFlagNamesAreQuotedInMessages) {
  auto r = Check(Rg(), {"--\x1b]0;pwned\x07"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.error().message.find('\x07'), std::string::npos);
}

TEST(ExecRules, MalformedFlagsAreInvalid) {
  EXPECT_REFUSED(Rg(), (Args{"--hidden=yes", "x"}), "invalid: rg flag --hidden takes no value");
  EXPECT_REFUSED(Rg(), (Args{"x", "-g"}), "invalid: rg flag -g needs a value");
  EXPECT_REFUSED(Rg(), (Args{"x", "--glob"}), "invalid: rg flag --glob needs a value");
  EXPECT_REFUSED(Fd(), (Args{"-e"}), "invalid: fd flag -e needs a value");
}

// ---- Values and patterns are data ----------------------------------------------------------

TEST(ExecRules, AFlagLookingValueStaysAValue) {
  // getopt and clap both take the next argument as the value; the canonical --glob=--pre form
  // makes sure rg can read it no other way.
  EXPECT_EQ(ArgvOf(Rg(), {"-g", "--pre", "x"}),
            (Args{"rg", "--no-config", "--glob=--pre", "--", "x"}));
  EXPECT_EQ(ArgvOf(Rg(), {"-e", "--pre"}), (Args{"rg", "--no-config", "--regexp=--pre"}));
  EXPECT_EQ(ArgvOf(Rg(), {"--regexp", "-z", "src"}),
            (Args{"rg", "--no-config", "--regexp=-z", "--", "src"}));
  EXPECT_EQ(ArgvOf(Fd(), {"-E", "--exec"}), (Args{"fd", "--exclude=--exec"}));
  // A value may contain '=' and anything else but NUL.
  EXPECT_EQ(ArgvOf(Rg(), {"--glob=a=b", "x"}),
            (Args{"rg", "--no-config", "--glob=a=b", "--", "x"}));
  EXPECT_EQ(ArgvOf(Rg(), {"-e", "$(rm -rf /); `id` | sh"}),
            (Args{"rg", "--no-config", "--regexp=$(rm -rf /); `id` | sh"}));
}

TEST(ExecRules, DoubleDashEndsOptions) {
  EXPECT_EQ(ArgvOf(Rg(), {"--", "--pre"}), (Args{"rg", "--no-config", "--", "--pre"}));
  EXPECT_EQ(ArgvOf(Rg(), {"--", "-z", "src"}), (Args{"rg", "--no-config", "--", "-z", "src"}));
  EXPECT_EQ(ArgvOf(Fd(), {"--", "--exec"}), (Args{"fd", "--", "--exec"}));
  EXPECT_EQ(ArgvOf(Fd(), {"-H", "--", "-x", "src"}), (Args{"fd", "--hidden", "--", "-x", "src"}));
  // After "--" even "--" is a positional: here a path, so it must pass the path check.
  EXPECT_EQ(ArgvOf(Rg(), {"--", "x", "--"}), (Args{"rg", "--no-config", "--", "x", "--"}));
  // ...but what follows "--" in path position is still checked as a path.
  EXPECT_REFUSED(Rg(), (Args{"--", "--pre", "/etc"}), "invalid: rg path operand");
  EXPECT_REFUSED(Rg(), (Args{"--", "x", "../y"}), "invalid: rg path operand");
}

TEST(ExecRules, PatternMayContainAnythingButNul) {
  EXPECT_TRUE(Check(Rg(), {"/etc/passwd"}).has_value());  // a pattern, not a path
  EXPECT_TRUE(Check(Rg(), {"../.."}).has_value());
  EXPECT_TRUE(Check(Fd(), {"/etc"}).has_value());
  EXPECT_TRUE(Check(Rg(), {""}).has_value());
  EXPECT_TRUE(Check(Rg(), {"\xff\xfe"}).has_value());
  EXPECT_REFUSED(Rg(), (Args{std::string("a\0b", 3)}), "invalid: rg: argument 1 contains a NUL");
  EXPECT_REFUSED(Rg(), (Args{"-e", std::string("a\0b", 3)}),
                 "invalid: rg: argument 2 contains a NUL");
  EXPECT_REFUSED(Fd(), (Args{"x", std::string("src\0/etc", 8)}), "invalid: fd: argument 2");
}

// ---- Path operands -------------------------------------------------------------------------

TEST(ExecRules, RgPathOperandsMustStayInTheWorkspace) {
  for (const char* bad : {"/", "/etc", "/etc/passwd", "..", "../x", "src/../../x", "src/..", "a//b",
                          "src/", "./src"}) {
    EXPECT_REFUSED(Rg(), (Args{"x", bad}), "invalid: rg path operand") << bad;
    EXPECT_REFUSED(Rg(), (Args{"-e", "x", bad}), "invalid: rg path operand") << bad;
    EXPECT_REFUSED(Rg(), (Args{"--files", bad}), "invalid: rg path operand") << bad;
  }
  EXPECT_REFUSED(Rg(), (Args{"x", ""}), "invalid: rg path operand: empty path");
  EXPECT_TRUE(Check(Rg(), {"x", ".", "src", "src/a.cc", "-"}).has_value());
}

TEST(ExecRules, RgPatternReplacingFlagsTurnEveryPositionalIntoAPath) {
  // With -e / -f / --files the first positional is a path, wherever the flag appears.
  EXPECT_REFUSED(Rg(), (Args{"/etc", "-e", "x"}), "invalid: rg path operand");
  EXPECT_REFUSED(Rg(), (Args{"/etc", "-f", "pats"}), "invalid: rg path operand");
  EXPECT_REFUSED(Rg(), (Args{"--files", "/etc"}), "invalid: rg path operand");
  EXPECT_REFUSED(Rg(), (Args{"--type-list", "/etc"}), "invalid: rg path operand");
  EXPECT_REFUSED(Rg(), (Args{"-V", "/etc"}), "invalid: rg path operand");
}

TEST(ExecRules, FileOperandsAreCheckedLikePaths) {
  EXPECT_EQ(ArgvOf(Rg(), {"-f", "patterns.txt", "src"}),
            (Args{"rg", "--no-config", "--file=patterns.txt", "--", "src"}));
  EXPECT_EQ(ArgvOf(Rg(), {"--ignore-file", "conf/ignore", "x"}),
            (Args{"rg", "--no-config", "--ignore-file=conf/ignore", "--", "x"}));
  EXPECT_EQ(ArgvOf(Fd(), {"--ignore-file=.fdignore", "x"}),
            (Args{"fd", "--ignore-file=.fdignore", "--", "x"}));
  for (const char* bad : {"/etc/passwd", "../secret", "a/../../b", ".", ""}) {
    EXPECT_REFUSED(Rg(), (Args{"-f", bad}), "invalid: rg --file operand") << bad;
    if (*bad != '\0') {
      EXPECT_REFUSED(Rg(), (Args{std::string("-f") + bad}), "invalid: rg --file operand") << bad;
    }
    EXPECT_REFUSED(Rg(), (Args{std::string("--file=") + bad}), "invalid: rg --file operand") << bad;
    EXPECT_REFUSED(Rg(), (Args{"--ignore-file", bad, "x"}), "invalid: rg --ignore-file operand")
        << bad;
    EXPECT_REFUSED(Fd(), (Args{std::string("--ignore-file=") + bad}),
                   "invalid: fd --ignore-file operand")
        << bad;
  }
}

TEST(ExecRules, FdPathOperandsMustStayInTheWorkspace) {
  for (const char* bad : {"/", "/etc", "..", "../x", "src/../..", "~/x/../.."}) {
    EXPECT_REFUSED(Fd(), (Args{"x", bad}), "invalid: fd path operand") << bad;
    EXPECT_REFUSED(Fd(), (Args{"x", "src", bad}), "invalid: fd path operand") << bad;
    EXPECT_REFUSED(Fd(), (Args{"--search-path", bad}), "invalid: fd --search-path operand") << bad;
    EXPECT_REFUSED(Fd(), (Args{std::string("--search-path=") + bad}),
                   "invalid: fd --search-path operand")
        << bad;
  }
  // "~" is a plain name to fd (no shell expands it).
  EXPECT_TRUE(Check(Fd(), {"x", "~"}).has_value());
}

// ---- Caps ----------------------------------------------------------------------------------

TEST(ExecRules, ArgumentCountAndSizeAreCapped) {
  Args at_cap(kMaxExecArgs, "-n");
  EXPECT_TRUE(Check(Rg(), at_cap).has_value());
  Args over_cap(kMaxExecArgs + 1, "-n");
  EXPECT_REFUSED(Rg(), over_cap, "invalid: rg: 257 arguments, at most 256");

  std::string longest(kMaxExecArgBytes, 'a');
  EXPECT_TRUE(Check(Rg(), {longest}).has_value());
  EXPECT_REFUSED(Rg(), (Args{"x", longest + "a"}), "invalid: rg: argument 2 is over 4096 bytes");
  EXPECT_REFUSED(Fd(), (Args{"--glob", "-e", longest + "a"}), "invalid: fd: argument 3 is over");
}

// Found by tests/fuzz/exec_argv_fuzzer: the caps bound what the tool receives, so combined short
// flags that expand past them are refused, and the canonical argv always re-checks to itself.
TEST(ExecRules, CapsHoldForTheCanonicalSpellingToo) {
  const std::string combined =
      "-" + std::string(kMaxExecArgs + 10, 'n');  // one arg: 266 flags, "--", "x"
  EXPECT_REFUSED(Rg(), (Args{combined, "x"}),
                 "invalid: rg: 268 arguments, at most 256 once written in canonical form");
  const std::string fits = "-" + std::string(kMaxExecArgs - 2, 'n');
  auto ok = Check(Rg(), {fits, "x"});
  ASSERT_TRUE(ok) << ok.error().ToString();
  const Args canonical(ok->argv.begin() + 1 + static_cast<long>(Rg().forced_args.size()),
                       ok->argv.end());
  auto again = Check(Rg(), canonical);
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->argv, ok->argv);

  // `-gVALUE` becomes `--glob=VALUE`, five bytes longer.
  const std::string value(kMaxExecArgBytes - 2, 'g');
  EXPECT_REFUSED(Rg(), (Args{"-g" + value, "x"}), "invalid: rg: argument 1 is over 4096 bytes");
  EXPECT_TRUE(Check(Rg(), {"-g" + value.substr(5), "x"}).has_value());
}

// Values that make a tool allocate (regex sizes, threads, context lines) are numbers spelled the
// way the tool parses them, and at most their cap: a raised limit is a way to exhaust memory.
TEST(ExecRules, AllocatingValuesAreCappedInEverySpelling) {
  struct Case {
    const ExecRule* rule;
    Args args;
    std::string verdict;  // "accepted" or the refusal's prefix
  };
  const Case cases[] = {
      {&Rg(),
       {"--regex-size-limit=100G", "x"},
       "limit: rg --regex-size-limit=100G: over the cap of 256M"},
      {&Rg(), {"--regex-size-limit", "257M", "x"}, "limit: rg --regex-size-limit=257M"},
      {&Rg(), {"--regex-size-limit=268435457", "x"}, "limit: "},
      {&Rg(), {"--regex-size-limit=268435456", "x"}, "accepted"},
      {&Rg(), {"--regex-size-limit=256M", "x"}, "accepted"},
      {&Rg(), {"--regex-size-limit=262144K", "x"}, "accepted"},
      {&Rg(), {"--regex-size-limit=0000000000000000000000001M", "x"}, "accepted"},
      {&Rg(), {"--regex-size-limit=99999999999999999999999", "x"}, "limit: "},
      {&Rg(), {"--dfa-size-limit=1G", "x"}, "limit: rg --dfa-size-limit=1G"},
      {&Rg(), {"--dfa-size-limit=10M", "x"}, "accepted"},
      {&Rg(),
       {"--regex-size-limit=10T", "x"},
       "invalid: rg --regex-size-limit=10T: expects a size"},
      {&Rg(), {"--regex-size-limit=10m", "x"}, "invalid: "},  // ripgrep takes K, M, G only
      {&Rg(), {"--regex-size-limit=", "x"}, "invalid: "},
      {&Rg(), {"--regex-size-limit=-1", "x"}, "invalid: "},
      {&Rg(), {"--regex-size-limit= 1M", "x"}, "invalid: "},
      {&Rg(), {"-j", "16", "x"}, "accepted"},
      {&Rg(), {"-j0", "x"}, "accepted"},  // ripgrep's own choice (at most 12)
      {&Rg(), {"-j17", "x"}, "limit: rg --threads=17: over the cap of 16"},
      {&Rg(), {"-j=1000", "x"}, "limit: rg --threads=1000"},
      {&Rg(), {"--threads", "4M", "x"}, "invalid: rg --threads=4M: expects a number"},
      {&Rg(), {"-nj", "99", "x"}, "limit: "},
      {&Rg(), {"-C", "10000", "x"}, "accepted"},
      {&Rg(), {"-C", "10001", "x"}, "limit: rg --context=10001"},
      {&Rg(), {"-A100001", "x"}, "limit: rg --after-context=100001"},
      {&Rg(), {"--before-context=99999999", "x"}, "limit: "},
      {&Fd(), {"-j", "16"}, "accepted"},
      {&Fd(), {"-j", "64"}, "limit: fd --threads=64: over the cap of 16"},
      {&Fd(), {"--threads=x"}, "invalid: fd --threads=x"},
      // Values that only narrow the work stay uncapped (the tool checks them).
      {&Rg(), {"--max-filesize=100G", "x"}, "accepted"},
      {&Rg(), {"-m", "99999999999", "x"}, "accepted"},
      {&Fd(), {"--max-results=99999999999"}, "accepted"},
  };
  for (const auto& c : cases) {
    std::string verdict = Verdict(*c.rule, c.args);
    if (c.verdict == "accepted") {
      EXPECT_EQ(verdict, "accepted") << c.args[0];
    } else {
      EXPECT_TRUE(StartsWith(verdict, c.verdict)) << c.args[0] << ": " << verdict;
    }
  }
}

// Every path the tool opens by name is reported, so that the gateway can resolve each beneath the
// workspace: positionals in path position and every path-valued flag, whatever the spelling.
TEST(ExecRules, EveryPathOperandIsReported) {
  struct Case {
    const ExecRule* rule;
    Args args;
    Args paths;
  };
  const Case cases[] = {
      {&Rg(), {"TODO"}, {}},
      {&Rg(), {"TODO", "src", "docs/a.md"}, {"src", "docs/a.md"}},
      {&Rg(), {"-e", "TODO", "src"}, {"src"}},
      {&Rg(), {"-f", "pats.txt", "src"}, {"pats.txt", "src"}},
      // With -f there is no positional pattern: every positional is a path.
      {&Rg(), {"--file=pats.txt", "--ignore-file", "ign", "x", "."}, {"pats.txt", "ign", "x", "."}},
      {&Rg(), {"--files", "a", "b"}, {"a", "b"}},
      {&Rg(), {"x", "-"}, {"-"}},
      {&Rg(), {"--", "-f", "a"}, {"a"}},  // after "--", "-f" is the pattern
      {&Fd(), {"x", "src"}, {"src"}},
      {&Fd(), {"--search-path", "src", "--search-path=docs", "x"}, {"src", "docs"}},
      {&Fd(), {"--ignore-file", "ign"}, {"ign"}},
  };
  for (const auto& c : cases) {
    auto r = Check(*c.rule, c.args);
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->path_operands, c.paths) << c.args[0];
  }
}

}  // namespace
}  // namespace exec_rules_test
}  // namespace anvil
