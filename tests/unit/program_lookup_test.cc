// A bare program name is judged by the PATH it is looked up on (policy/program_lookup.h): the
// built-in harmless set, allow rules and the system's shell speak only for the program that
// lookup can find, not for one the workspace may put first. Each attack beside its benign twin.
#include "policy/program_lookup.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "policy/approval.h"
#include "policy/command_rules.h"
#include "policy/shell_words.h"

namespace anvil {
namespace program_lookup_test {
namespace {

using Argv = std::vector<std::string>;

constexpr const char* kWs = "/home/u/ws";

// A file system: which directory holds which programs, and the links among directories.
struct FakeDirs {
  std::map<std::string, std::set<std::string>> programs = {
      {"/usr/bin", {"ls", "cat", "git", "sh", "bash", "rg", "printf", "make", "env", "timeout"}},
      {"/bin", {"ls", "cat", "sh", "bash"}},
  };
  std::map<std::string, std::string> links;  // an entry's canonical form, when not itself

  ProgramDirFacts Facts() const {
    return {[this](const std::string& dir, const std::string& name) {
              auto it = programs.find(dir);
              return it != programs.end() && it->second.count(name) > 0;
            },
            [this](const std::string& dir) {
              auto it = links.find(dir);
              return it == links.end() ? dir : it->second;
            }};
  }
};

ProgramSearch Search(const FakeDirs& dirs, const std::string& path) {
  ProgramSearch s;
  s.paths = {LookupPath{path, {kWs}, {}}};
  s.facts = dirs.Facts();
  return s;
}

BareNameSource Source(const FakeDirs& dirs, const std::string& name, const std::string& path) {
  return JudgeSystemProgram(name, Search(dirs, path)).source;
}

TEST(ProgramLookup, OnlyANameFoundThroughSystemDirectoriesAloneIsTheSystems) {
  FakeDirs dirs;
  dirs.programs["/home/u/ws/.venv/bin"] = {"ls", "python"};
  dirs.programs["/home/u/.local/bin"] = {"pipx"};
  dirs.programs["/home/u/.cargo/bin"] = {"ls"};  // the user's own ls (lsd, eza) first
  dirs.links["/home/u/link"] = "/home/u/ws/bin";
  struct Row {
    std::string name, path;
    BareNameSource expected;
  };
  const std::vector<Row> rows = {
      // Benign: the system's directories, in any order, with a trailing slash, or anything
      // after the one that holds the name.
      {"ls", "/usr/local/bin:/usr/bin:/bin", BareNameSource::kSystem},
      {"ls", "/bin/:/usr/bin", BareNameSource::kSystem},
      {"ls", "/usr/bin:/home/u/ws/.venv/bin", BareNameSource::kSystem},
      {"ls", "/usr/bin:.:", BareNameSource::kSystem},
      {"git", "/sbin:/usr/bin:/home/u/ws/bin", BareNameSource::kSystem},
      // Attack: a directory of the workspace first, holding the name or not (yet).
      {"ls", "/home/u/ws/.venv/bin:/usr/bin:/bin", BareNameSource::kShadowable},
      {"cat", "/home/u/ws/.venv/bin:/usr/bin:/bin", BareNameSource::kShadowable},
      {"ls", "/home/u/ws/node_modules/.bin:/usr/bin", BareNameSource::kShadowable},
      // Relative and empty entries are the working directory, wherever they stand.
      {"ls", ".:/usr/bin", BareNameSource::kShadowable},
      {"ls", "bin:/usr/bin", BareNameSource::kShadowable},
      {"ls", ":/usr/bin", BareNameSource::kShadowable},
      {"ls", "/usr/local/bin::/usr/bin", BareNameSource::kShadowable},
      {"ls", "", BareNameSource::kShadowable},
      // Another directory first that the sandboxed command cannot write (the user's
      // ~/.local/bin, ~/.cargo/bin, a version manager's shims; a spelling of a system one that
      // is not its name): passed while it does not hold the name, as rustup and pyenv put them
      // first; when it does, that program runs, not the system's.
      {"ls", "/home/u/.local/bin:/usr/bin", BareNameSource::kSystem},
      {"ls", "/usr/bin/../../opt/x:/usr/bin", BareNameSource::kSystem},
      {"ls", "//usr/bin:/usr/bin", BareNameSource::kSystem},
      {"pipx", "/home/u/.local/bin:/usr/bin", BareNameSource::kOther},
      {"ls", "/home/u/.cargo/bin:/usr/bin", BareNameSource::kOther},
      // One inside a writable root by its links: /home/u/link -> /home/u/ws/bin.
      {"ls", "/home/u/link:/usr/bin", BareNameSource::kShadowable},
      // A system directory that does not hold it, then another directory.
      {"rg", "/bin:/home/u/ws/.venv/bin:/usr/bin", BareNameSource::kShadowable},
      // In no system directory: not the system's (it fails, or runs what is put there later).
      {"pipx", "/usr/bin:/bin", BareNameSource::kNotFound},
      {"cd", "/usr/local/bin:/usr/bin:/bin", BareNameSource::kNotFound},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(Source(dirs, row.name, row.path), row.expected) << row.name << " PATH=" << row.path;
  }
}

// A system directory the sandbox may write is the command's to fill, not the system's: a
// `--writable-root /usr/local` (or one that a link of /usr/local/bin leads into) lets a command
// put an `ls` there that a later harmless-looking `ls` would run. Unconfined (`/`), the system's
// directories stay the system's: no sandboxed command wrote them.
TEST(ProgramLookup, ASystemDirectoryTheSandboxMayWriteIsNotTheSystems) {
  FakeDirs dirs;
  dirs.programs["/usr/local/bin"] = {"tool"};
  auto judge = [&](const std::string& name, const std::string& path,
                   std::vector<std::string> roots) {
    ProgramSearch s = Search(dirs, path);
    s.paths[0].writable_roots = std::move(roots);
    return JudgeSystemProgram(name, s);
  };
  const std::string path = "/usr/local/bin:/usr/bin:/bin";
  // Attack: /usr/local a writable root, the name missing there now or present.
  BareNameJudgement judged = judge("ls", path, {kWs, "/usr/local"});
  EXPECT_EQ(judged.source, BareNameSource::kShadowable);
  EXPECT_EQ(judged.entry, "/usr/local/bin");
  EXPECT_NE(judged.Why("ls").find("/usr/local/bin"), std::string::npos) << judged.Why("ls");
  EXPECT_EQ(judge("tool", path, {"/usr/local/bin"}).source, BareNameSource::kShadowable);
  EXPECT_EQ(judge("ls", "/usr/local/bin/:/usr/bin", {"/usr/local/bin"}).source,
            BareNameSource::kShadowable);
  // ... and by its links: /usr/local/bin leading into the workspace.
  dirs.links["/usr/local/bin"] = "/home/u/ws/bin";
  EXPECT_EQ(judge("ls", path, {kWs}).source, BareNameSource::kShadowable);
  dirs.links.clear();
  // An allow rule does not speak for it either.
  ProgramSearch s = Search(dirs, path);
  s.paths[0].writable_roots = {kWs, "/usr/local"};
  EXPECT_NE(AllowRuleBlocked("make", s), "");
  // Benign twins: the same PATH with only the workspace writable; a writable /usr/local after
  // the directory that holds the name; unconfined.
  EXPECT_EQ(judge("ls", path, {kWs}).source, BareNameSource::kSystem);
  EXPECT_EQ(judge("tool", path, {kWs}).source, BareNameSource::kSystem);
  EXPECT_EQ(judge("ls", "/usr/bin:/usr/local/bin", {kWs, "/usr/local"}).source,
            BareNameSource::kSystem);
  EXPECT_EQ(judge("ls", path, {"/"}).source, BareNameSource::kSystem);
  s.paths[0].writable_roots = {kWs};
  EXPECT_EQ(AllowRuleBlocked("make", s), "");
}

TEST(ProgramLookup, EveryPathTheCommandMayBeLookedUpOnMustAgree) {
  FakeDirs dirs;
  ProgramSearch s;
  s.facts = dirs.Facts();
  s.paths = {LookupPath{"/usr/bin:/bin", {kWs}, {}},
             LookupPath{"/home/u/ws/.venv/bin:/usr/bin", {kWs}, {}}};
  const BareNameJudgement judged = JudgeSystemProgram("ls", s);
  EXPECT_EQ(judged.source, BareNameSource::kShadowable);
  EXPECT_EQ(judged.entry, "/home/u/ws/.venv/bin");
  const std::string why = judged.Why("ls");
  EXPECT_NE(why.find("/home/u/ws/.venv/bin"), std::string::npos) << why;
  EXPECT_NE(why.find("fix:"), std::string::npos) << why;
  // Benign: both the system's.
  s.paths[1].value = "/usr/local/bin:/usr/bin";
  EXPECT_EQ(JudgeSystemProgram("ls", s).source, BareNameSource::kSystem);
  EXPECT_EQ(JudgeSystemProgram("ls", s).Why("ls"), "");
  // No facts: no directory holds anything, so nothing is the system's.
  s.facts = {};
  EXPECT_EQ(JudgeSystemProgram("ls", s).source, BareNameSource::kNotFound);
}

TEST(ProgramLookup, AnAllowRuleSpeaksOnlyForWhatTheSandboxCannotPutFirst) {
  FakeDirs dirs;
  dirs.programs["/home/u/.cargo/bin"] = {"cargo"};
  dirs.programs["/home/u/ws/.venv/bin"] = {"pytest"};
  dirs.links["/home/u/proj"] = "/home/u/ws";  // a link to the workspace
  dirs.links["/home/u/proj/.venv/bin"] = "/home/u/ws/.venv/bin";
  struct Row {
    std::string name, path;
    bool blocked;
  };
  const std::vector<Row> rows = {
      // Benign: the user's own directories outside the writable roots, and the system's.
      {"cargo", "/home/u/.cargo/bin:/usr/bin", false},
      {"make", "/home/u/.cargo/bin:/usr/bin", false},
      {"make", "/usr/bin:/home/u/ws/.venv/bin", false},
      {"nosuch", "/usr/bin:/home/u/.cargo/bin", false},
      // Attack: a directory the sandboxed command may write, before the name is found.
      {"make", "/home/u/ws/.venv/bin:/usr/bin", true},
      {"pytest", "/home/u/ws/.venv/bin:/usr/bin", true},
      {"make", "/home/u/proj/.venv/bin:/usr/bin", true},  // through a link
      {"make", ".:/usr/bin", true},
      {"make", ":/usr/bin", true},
      {"make", "node_modules/.bin:/usr/bin", true},
      {"nosuch", "/usr/bin:/home/u/ws/bin", true},  // found nowhere: it may be put there
  };
  for (const Row& row : rows) {
    const std::string why = AllowRuleBlocked(row.name, Search(dirs, row.path));
    EXPECT_EQ(!why.empty(), row.blocked) << row.name << " PATH=" << row.path << ": " << why;
  }
  // Inside the sandbox its home is writable, but for what the view binds read-only there.
  ProgramSearch inside = Search(dirs, "/home/u/.cargo/bin:/home/u/bin:/usr/bin");
  inside.paths[0].writable_roots.push_back("/home/u");
  inside.paths[0].read_only = {"/home/u/.cargo/bin"};
  EXPECT_EQ(AllowRuleBlocked("cargo", inside), "");
  EXPECT_NE(AllowRuleBlocked("make", inside), "");  // ~/bin is the sandbox home's
  // Not confined: everything but the system's directories is writable.
  ProgramSearch open = Search(dirs, "/home/u/.cargo/bin:/usr/bin");
  open.paths[0].writable_roots = {"/"};
  EXPECT_NE(AllowRuleBlocked("make", open), "");
  open.paths[0].value = "/usr/bin:/home/u/.cargo/bin";
  EXPECT_EQ(AllowRuleBlocked("make", open), "");
}

// The rules' verdict with a search, as `anvil exec` makes it.
CommandRules Rules(const std::string& text) {
  auto parsed = ParseRulesFile(text, "rules.toml", RuleLayer::kUser);
  EXPECT_TRUE(parsed) << parsed.error().ToString();
  CommandRules rules;
  if (parsed) rules.Add(std::move(*parsed));
  return rules;
}

struct Case {
  Argv argv;
  RulesOutcome expected;
};

void ExpectOutcomes(const CommandRules& rules, const ProgramSearch& search,
                    const std::vector<Case>& cases) {
  for (const auto& c : cases) {
    const CommandVerdict verdict = EvaluateCommand(rules, c.argv, &search);
    EXPECT_EQ(verdict.outcome, c.expected)
        << JoinShellWords(c.argv) << " PATH=" << search.paths[0].value << ": got "
        << ToString(verdict.outcome) << " (" << verdict.reason << ")";
  }
}

const std::string kVenvPath = "/home/u/ws/.venv/bin:/usr/bin:/bin";
const std::string kSystemPath = "/usr/local/bin:/usr/bin:/bin";

TEST(ProgramLookup, AHarmlessNameOnAWorkspacePathIsNotHarmless) {
  const FakeDirs dirs;
  const CommandRules none;
  // Benign: the system's PATH, and a workspace directory after the system's.
  for (const std::string& path : {kSystemPath, std::string("/usr/bin:/bin:/home/u/ws/.venv/bin")}) {
    ExpectOutcomes(
        none, Search(dirs, path),
        {
            {{"ls", "-la"}, RulesOutcome::kHarmless},
            {{"git", "status"}, RulesOutcome::kHarmless},
            {{"sh", "-c", "ls | cat"}, RulesOutcome::kHarmless},
            {{"bash", "-c", "cd src && echo hi && printf x && ls"}, RulesOutcome::kHarmless},
        });
  }
  // Attack: .venv/bin first (holding ls or not yet), `.`, an empty entry.
  for (const std::string& path : {kVenvPath, std::string(".:/usr/bin"), std::string(":/usr/bin")}) {
    ExpectOutcomes(none, Search(dirs, path),
                   {
                       {{"ls", "-la"}, RulesOutcome::kNoRule},
                       {{"cat", "README.md"}, RulesOutcome::kNoRule},
                       {{"git", "status"}, RulesOutcome::kNoRule},
                       // Through a shell: its commands, and a shell that may not be the system's.
                       {{"sh", "-c", "ls | cat"}, RulesOutcome::kNoRule},
                       {{"bash", "-c", "echo hi"}, RulesOutcome::kNoRule},
                       {{"/bin/sh", "-c", "ls"}, RulesOutcome::kNoRule},
                       // Wrappers were never harmless; still not.
                       {{"env", "ls"}, RulesOutcome::kNoRule},
                       {{"timeout", "5", "ls"}, RulesOutcome::kNoRule},
                       {{"xargs", "ls"}, RulesOutcome::kNoRule},
                   });
  }
  // The shell's own builtins are never looked up: with the system's sh, `echo` and `cd` stay
  // harmless on any PATH; printf is a program in some shells.
  ProgramSearch two;
  two.facts = dirs.Facts();
  two.paths = {LookupPath{kSystemPath, {kWs}, {}}, LookupPath{kVenvPath, {kWs}, {}}};
  ProgramSearch outside_only = Search(dirs, kSystemPath);
  ExpectOutcomes(none, outside_only,
                 {{{"/bin/sh", "-c", "cd src && echo hi && test -f x"}, RulesOutcome::kHarmless}});
  ExpectOutcomes(none, two,
                 {
                     {{"/bin/sh", "-c", "cd src && echo hi && test -f x"}, RulesOutcome::kHarmless},
                     {{"/bin/sh", "-c", "printf x"}, RulesOutcome::kNoRule},
                     {{"/bin/sh", "-c", "ls"}, RulesOutcome::kNoRule},
                 });
}

TEST(ProgramLookup, AShellFoundOnAWorkspacePathIsJudgedItself) {
  const FakeDirs dirs;
  const CommandRules rules =
      Rules("[[rule]]\npattern = [\"cargo\"]\ndecision = \"allow\"\njustification = \"build\"\n");
  const ProgramSearch venv = Search(dirs, kVenvPath);
  // Benign: a shell only interprets; its script's commands are judged. Also one the user's own
  // directory may hold, outside what the sandboxed command can write.
  for (const std::string& path : {kSystemPath, std::string("/home/u/.local/bin:/usr/bin")}) {
    const ProgramSearch search = Search(dirs, path);
    const CommandVerdict benign = EvaluateCommand(rules, {"sh", "-c", "cargo build"}, &search);
    EXPECT_EQ(benign.outcome, RulesOutcome::kAllow) << path << ": " << benign.reason;
    EXPECT_EQ(benign.segments[0].segment.role, SegmentRole::kNarrowing) << path;
  }
  // Attack: a bare sh that the workspace's .venv/bin may hold is judged too.
  const CommandVerdict attack = EvaluateCommand(rules, {"sh", "-c", "cargo build"}, &venv);
  EXPECT_EQ(attack.outcome, RulesOutcome::kNoRule) << attack.reason;
  EXPECT_EQ(attack.segments[0].segment.role, SegmentRole::kJudged);
  EXPECT_NE(attack.reason.find("the shell is judged itself"), std::string::npos) << attack.reason;
  // A shell already reached through a wrapper stays a narrowing segment.
  const CommandVerdict wrapped = EvaluateCommand(rules, {"env", "sh", "-c", "ls"}, &venv);
  EXPECT_EQ(wrapped.segments[1].segment.role, SegmentRole::kNarrowing);
}

TEST(ProgramLookup, AnAllowRuleDoesNotSpeakForAProgramTheWorkspaceMayPutFirst) {
  FakeDirs dirs;
  dirs.programs["/home/u/.cargo/bin"] = {"cargo"};
  const CommandRules rules = Rules(
      "[[rule]]\npattern = [\"cargo\"]\ndecision = \"allow\"\njustification = \"build\"\n"
      "[[rule]]\npattern = [\"make\"]\ndecision = \"allow\"\njustification = \"build\"\n"
      "[[rule]]\npattern = [\"rm\"]\ndecision = \"forbidden\"\njustification = \"trash\"\n");
  // Benign: the user's cargo from ~/.cargo/bin, make from /usr/bin; ~/.cargo/bin first (the
  // command cannot write there) leaves the allow rules and the harmless set as they were.
  ExpectOutcomes(rules, Search(dirs, "/home/u/.cargo/bin:/usr/bin"),
                 {
                     {{"cargo", "build"}, RulesOutcome::kAllow},
                     {{"make"}, RulesOutcome::kAllow},
                     {{"bash", "-c", "make && cargo test"}, RulesOutcome::kAllow},
                     {{"bash", "-c", "ls"}, RulesOutcome::kHarmless},
                 });
  ExpectOutcomes(rules, Search(dirs, "/usr/bin:/bin:/home/u/.cargo/bin"),
                 {
                     {{"cargo", "build"}, RulesOutcome::kAllow},
                     {{"bash", "-c", "make && cargo test"}, RulesOutcome::kAllow},
                 });
  // Attack: .venv/bin first. A restriction still holds whatever PATH says.
  const ProgramSearch venv = Search(dirs, "/home/u/ws/.venv/bin:/usr/bin:/home/u/.cargo/bin");
  ExpectOutcomes(rules, venv,
                 {
                     {{"cargo", "build"}, RulesOutcome::kNoRule},
                     {{"make"}, RulesOutcome::kNoRule},
                     {{"bash", "-c", "make && cargo test"}, RulesOutcome::kNoRule},
                     {{"rm", "-rf", "x"}, RulesOutcome::kForbidden},
                 });
  const CommandVerdict verdict = EvaluateCommand(rules, {"make"}, &venv);
  EXPECT_NE(verdict.reason.find("the allow rule at rules.toml:"), std::string::npos)
      << verdict.reason;
  EXPECT_NE(verdict.reason.find("fix:"), std::string::npos) << verdict.reason;
  // "always" would write an allow rule that never applies here: not offered.
  const ApprovalDecision asked = DecideApproval(verdict, ApprovalMode::kUntrusted, true);
  EXPECT_EQ(asked.action, ApprovalAction::kAsk);
  EXPECT_TRUE(asked.always_prefixes.empty());
  // Benign: offered where it would help (a name no rule decides, on the user's own PATH).
  const ProgramSearch own = Search(dirs, "/home/u/.cargo/bin:/usr/bin");
  const CommandVerdict other = EvaluateCommand(rules, {"npm", "ci"}, &own);
  EXPECT_FALSE(DecideApproval(other, ApprovalMode::kUntrusted, true).always_prefixes.empty());
}

// The same for a program named by its path in a system directory a writable root holds: the
// shell is judged itself (not only its script), and an allow rule for it does not apply.
TEST(ProgramLookup, AProgramByPathInAWritableSystemDirectoryIsNotTheSystems) {
  FakeDirs dirs;
  // PATH without /usr/local/bin: the script's bare names stay the system's.
  ProgramSearch writable = Search(dirs, "/usr/bin:/bin");
  writable.paths[0].writable_roots = {kWs, "/usr/local"};
  const std::string why = SystemPathNotSystems("/usr/local/bin/bash", writable);
  EXPECT_NE(why.find("/usr/local/bin"), std::string::npos) << why;
  EXPECT_NE(why.find("fix:"), std::string::npos) << why;
  // Any spelling of the directory (an allow rule written as the agent spelled the path).
  for (const char* spelled :
       {"//usr/local/bin/tool", "/usr/local/bin/./tool", "/usr/local/./bin/tool",
        "/usr/local/bin/../bin/tool", "/usr//local/bin/tool"}) {
    EXPECT_NE(SystemPathNotSystems(spelled, writable), "") << spelled;
  }
  EXPECT_EQ(SystemPathNotSystems("/usr/bin/bash", writable), "");
  EXPECT_EQ(SystemPathNotSystems("/usr/local/bin/../../bin/bash", writable), "");
  EXPECT_EQ(SystemPathNotSystems("./bash", writable), "");
  EXPECT_EQ(SystemPathNotSystems("bash", writable), "");
  const CommandRules rules = Rules(
      "[[rule]]\npattern = [\"/usr/local/bin/tool\"]\ndecision = \"allow\"\n"
      "justification = \"x\"\n");
  ExpectOutcomes(rules, writable,
                 {
                     // Attack: the shell or the tool may be the command's own.
                     {{"/usr/local/bin/bash", "-c", "ls"}, RulesOutcome::kNoRule},
                     {{"/usr/local/bin/tool"}, RulesOutcome::kNoRule},
                     // Benign: the system's shell elsewhere still only interprets its script.
                     {{"/usr/bin/bash", "-c", "ls"}, RulesOutcome::kHarmless},
                     {{"/bin/sh", "-c", "cat x"}, RulesOutcome::kHarmless},
                 });
  const CommandVerdict verdict =
      EvaluateCommand(rules, {"/usr/local/bin/bash", "-c", "ls"}, &writable);
  EXPECT_NE(verdict.reason.find("/usr/local/bin"), std::string::npos) << verdict.reason;
  // Benign twins: only the workspace writable, or unconfined.
  ProgramSearch ws_only = Search(dirs, kSystemPath);
  ExpectOutcomes(rules, ws_only,
                 {
                     {{"/usr/local/bin/bash", "-c", "ls"}, RulesOutcome::kHarmless},
                     {{"/usr/local/bin/tool"}, RulesOutcome::kAllow},
                 });
  ProgramSearch open = Search(dirs, kSystemPath);
  open.paths[0].writable_roots = {"/"};
  EXPECT_EQ(SystemPathNotSystems("/usr/local/bin/bash", open), "");
}

TEST(ProgramLookup, OtherModesRunOrdinaryCommandsAsBefore) {
  const FakeDirs dirs;
  const CommandRules none;
  const ProgramSearch venv = Search(dirs, kVenvPath);
  const CommandVerdict verdict = EvaluateCommand(none, {"ls"}, &venv);
  EXPECT_EQ(verdict.outcome, RulesOutcome::kNoRule);
  EXPECT_NE(verdict.reason.find("not built-in harmless here"), std::string::npos) << verdict.reason;
  EXPECT_EQ(DecideApproval(verdict, ApprovalMode::kUntrusted, true).action, ApprovalAction::kAsk);
  EXPECT_EQ(DecideApproval(verdict, ApprovalMode::kUntrusted, false).action,
            ApprovalAction::kRefuse);
  EXPECT_EQ(DecideApproval(verdict, ApprovalMode::kOnRequest, true).action, ApprovalAction::kRun);
  EXPECT_EQ(DecideApproval(verdict, ApprovalMode::kOnFailure, true).action, ApprovalAction::kRun);
  EXPECT_EQ(DecideApproval(verdict, ApprovalMode::kNever, false).action, ApprovalAction::kRun);
}

}  // namespace
}  // namespace program_lookup_test
}  // namespace anvil
