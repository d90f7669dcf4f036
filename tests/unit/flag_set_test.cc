// The flag set every front end parses with (src/common/flag_set.h): each kind of value with its
// bounds, a missing value, an unknown flag, a repeated flag, the layouts of the commands'
// operands, the words of the errors and --help.
#include "common/flag_set.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "policy/display_text.h"

namespace anvil {
namespace flag_set_test {
namespace {

struct Seen {
  bool json = false;
  std::string dir;
  double seconds = 0;
  int fd = -1;
  uint64_t count = 0;
  uint64_t size = 0;
  std::vector<std::string> hosts;
  std::string last;
};

CommandSpec Spec(Seen& s, ParseStyle style) {
  CommandSpec spec;
  spec.name = "test";
  spec.program = "anvil test";
  spec.flags = {
      Switch("--json", "JSON", [&s] { s.json = true; }),
      Text("--dir", "DIR", "a directory",
           [&s](const std::string& v) {
             s.dir = v;
             return Ok();
           })
          .Expects("a directory")
          .Completes(Completion::kDirectory),
      Number("--timeout", "SECONDS", "a deadline", Above(0, 100), [&s](double v) { s.seconds = v; })
          .Expects("a positive number of seconds"),
      Descriptor("--fd", "N", "a descriptor", Between(3, 1000),
                 [&s](int fd) {
                   s.fd = fd;
                   return Ok();
                 })
          .Expects("a descriptor number >= 3"),
      Count("--count", "N", "a count", Between(1, 1000), [&s](uint64_t n) { s.count = n; })
          .Expects("a number from 1 to 1000"),
      ByteSize("--size", "BYTES", "a size", UpTo<uint32_t>(), [&s](uint64_t n) { s.size = n; })
          .Expects("a number of bytes"),
      Text("--last", "WORD", "one value: the last one given wins",
           [&s](const std::string& v) {
             s.last = v;
             return Ok();
           }),
      Text("--allow-host", "HOST", "repeatable",
           [&s](const std::string& v) -> Status {
             if (v.empty()) return Fail("invalid", "--allow-host: empty host");
             s.hosts.push_back(v);
             return Ok();
           })
          .Repeatable(),
      Switch("--secret", "", [] {}).Hidden(),
  };
  spec.style = style;
  return spec;
}

ParseStyle Style(ParseStyle::Operands operands,
                 ParseStyle::Wording wording = ParseStyle::Wording::kNeeds) {
  ParseStyle s;
  s.operands = operands;
  s.wording = wording;
  return s;
}

using Operands = ParseStyle::Operands;
using Wording = ParseStyle::Wording;
using Args = std::vector<std::string>;

TEST(ParseFlags, EachKindOfValueWithItsBounds) {
  Seen s;
  auto spec = Spec(s, Style(Operands::kNone));
  auto r = ParseFlags(spec, {"--json", "--dir", "/x", "--timeout", "2.5", "--fd", "7", "--count",
                             "1000", "--size", "3G", "--allow-host", "a", "--allow-host", "b"});
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_TRUE(s.json);
  EXPECT_EQ(s.dir, "/x");
  EXPECT_EQ(s.seconds, 2.5);
  EXPECT_EQ(s.fd, 7);
  EXPECT_EQ(s.count, 1000u);
  EXPECT_EQ(s.size, 3ull << 30);
  EXPECT_EQ(s.hosts, (Args{"a", "b"}));
  struct Row {
    Args args;
    const char* needs;    // Wording::kNeeds
    const char* expects;  // Wording::kExpectsGot
  };
  const Row rows[] = {
      {{"--timeout", "0"},
       "--timeout needs a positive number of seconds",
       "--timeout expects a positive number of seconds, got 0"},
      {{"--timeout", "101"},
       "--timeout needs a positive number of seconds",
       "--timeout expects a positive number of seconds, got 101"},
      {{"--timeout", "1x"},
       "--timeout needs a positive number of seconds",
       "--timeout expects a positive number of seconds, got 1x"},
      {{"--timeout", "nan"},
       "--timeout needs a positive number of seconds",
       "--timeout expects a positive number of seconds, got nan"},
      {{"--timeout", "inf"},
       "--timeout needs a positive number of seconds",
       "--timeout expects a positive number of seconds, got inf"},
      {{"--fd", "2"},
       "--fd needs a descriptor number >= 3",
       "--fd expects a descriptor number >= 3, got 2"},
      {{"--fd", "3.5"},
       "--fd needs a descriptor number >= 3",
       "--fd expects a descriptor number >= 3, got 3.5"},
      {{"--fd", "99999999999999999999"},
       "--fd needs a descriptor number >= 3",
       "--fd expects a descriptor number >= 3, got 99999999999999999999"},
      {{"--count", "0"},
       "--count needs a number from 1 to 1000",
       "--count expects a number from 1 to 1000, got 0"},
      {{"--count", "1001"},
       "--count needs a number from 1 to 1000",
       "--count expects a number from 1 to 1000, got 1001"},
      {{"--count", "-1"},
       "--count needs a number from 1 to 1000",
       "--count expects a number from 1 to 1000, got -1"},
      {{"--count", "2k"},
       "--count needs a number from 1 to 1000",
       "--count expects a number from 1 to 1000, got 2k"},
      {{"--size", "4G1"},
       "--size needs a number of bytes",
       "--size expects a number of bytes, got 4G1"},
      {{"--size", "4097M"},
       "--size needs a number of bytes",
       "--size expects a number of bytes, got 4097M"},
      {{"--size", "1.5M"},
       "--size needs a number of bytes",
       "--size expects a number of bytes, got 1.5M"},
      {{"--timeout"}, "--timeout needs a positive number of seconds", "--timeout needs a value"},
      {{"--count"}, "--count needs a number from 1 to 1000", "--count needs a value"},
      {{"--size"}, "--size needs a number of bytes", "--size needs a value"},
      {{"--fd"}, "--fd needs a descriptor number >= 3", "--fd needs a value"},
      {{"--dir"}, "--dir needs a directory", "--dir needs a value"},
      {{"--allow-host", ""}, "--allow-host: empty host", "--allow-host: empty host"},
  };
  for (const Row& row : rows) {
    for (Wording w : {Wording::kNeeds, Wording::kExpectsGot}) {
      Seen t;
      auto bad = ParseFlags(Spec(t, Style(Operands::kNone, w)), row.args);
      ASSERT_FALSE(bad) << row.args[0];
      EXPECT_EQ(bad.error().code, "invalid");
      EXPECT_EQ(bad.error().message, w == Wording::kNeeds ? row.needs : row.expects);
    }
  }
}

TEST(ParseFlags, OperandsAsEachCommandAlwaysLaidThemOut) {
  {  // sandbox: the first non-flag, or `--`, starts the command; --flag=value works.
    Seen s;
    ParseStyle style = Style(Operands::kFirstEndsFlags, Wording::kExpectsGot);
    style.equals_value = true;
    auto spec = Spec(s, style);
    auto r = ParseFlags(spec, {"--dir=/w", "make", "--json", "-h"});
    ASSERT_TRUE(r);
    EXPECT_EQ(s.dir, "/w");
    EXPECT_FALSE(s.json);
    EXPECT_EQ(r->operands, (Args{"make", "--json", "-h"}));
    r = ParseFlags(spec, {"--json", "--", "--dir", "x"});
    ASSERT_TRUE(r);
    EXPECT_TRUE(s.json);
    EXPECT_EQ(r->operands, (Args{"--dir", "x"}));
    r = ParseFlags(spec, {"", "x"});  // an empty argument is the command, as before
    ASSERT_TRUE(r);
    EXPECT_EQ(r->operands, (Args{"", "x"}));
  }
  {  // run: after the first operand everything is the plugin's; `--` before it is skipped.
    Seen s;
    ParseStyle style = Style(Operands::kFirstThenAll);
    style.dash_dash_ends = false;
    auto spec = Spec(s, style);
    auto r = ParseFlags(spec, {"--", "--json", "plugin", "cmd", "--dir", "-h"});
    ASSERT_TRUE(r);
    EXPECT_TRUE(s.json);
    EXPECT_TRUE(s.dir.empty());
    EXPECT_EQ(r->operands, (Args{"plugin", "cmd", "--dir", "-h"}));
    EXPECT_FALSE(ParseFlags(spec, {"--nope", "plugin"}));
  }
  {  // plugin: flags and operands mixed; an unknown dash word is an operand.
    Seen s;
    ParseStyle style = Style(Operands::kAnywhere);
    style.dash_is_operand = true;
    auto r = ParseFlags(Spec(s, style), {"inspect", "--dir", "/w", "-x", "p"});
    ASSERT_TRUE(r);
    EXPECT_EQ(s.dir, "/w");
    EXPECT_EQ(r->operands, (Args{"inspect", "-x", "p"}));
  }
  {  // serve, doctor, audit: no operands at all, `--` included.
    Seen s;
    auto spec = Spec(s, Style(Operands::kNone));
    for (const Args& args : {Args{"stray"}, Args{"--"}, Args{"--json", "--", "x"}}) {
      auto r = ParseFlags(spec, args);
      ASSERT_FALSE(r) << args[0];
      EXPECT_EQ(r.error().message.rfind("unknown option ", 0), 0u) << r.error().message;
    }
  }
}

TEST(ParseFlags, HelpHiddenGatedAndExtraFlags) {
  Seen s;
  auto spec = Spec(s, Style(Operands::kNone));
  auto r = ParseFlags(spec, {"--json", "-h", "--nope"});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->help);
  EXPECT_TRUE(ParseFlags(spec, {"--secret"}));  // hidden: parsed, never shown
  bool gate = false;
  spec.flags.push_back(Switch("--fault", "", [] {}).Hidden().EnabledWhen([&gate] { return gate; }));
  EXPECT_FALSE(ParseFlags(spec, {"--fault"}));
  gate = true;
  EXPECT_TRUE(ParseFlags(spec, {"--fault"}));
  std::string taken;
  spec.extra = [&taken](const Args& args, size_t& i, std::string& error) {
    if (args[i] != "--extra") return false;
    if (i + 1 >= args.size()) {
      error = "invalid: --extra needs a value";
      return true;
    }
    taken = args[++i];
    return true;
  };
  EXPECT_TRUE(ParseFlags(spec, {"--extra", "v", "--json"}));
  EXPECT_EQ(taken, "v");
  auto bad = ParseFlags(spec, {"--extra"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().ToString(), "invalid: --extra needs a value");
}

// The caller's own bytes come back in an error (an unknown option, a bad value, an extra
// option's complaint): shown sanitized, so a pasted escape sequence cannot act on the terminal.
TEST(ParseFlags, EchoedArgumentsCannotDriveTheTerminal) {
  Seen s;
  auto spec = Spec(s, Style(Operands::kNone, Wording::kExpectsGot));
  spec.echo = SanitizeFlagArgument;
  auto unknown = ParseFlags(spec, {"--x\x1b[2J\x9b"});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message, "unknown option --x\\u{1b}[2J\\x{9b} (see anvil test --help)");
  auto value = ParseFlags(spec, {"--timeout", "\x1b]52;c;eA==\x07"});
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error().message,
            "--timeout expects a positive number of seconds, got \\u{1b}]52;c;eA==\\u{7}");
  spec.extra = [](const Args& args, size_t& i, std::string& error) {
    if (args[i].rfind("--extra=", 0) != 0) return false;
    error = "invalid: bad address " + args[i].substr(8);
    return true;
  };
  auto extra = ParseFlags(spec, {"--extra=\x1b[31m\u202e"});
  ASSERT_FALSE(extra);
  EXPECT_EQ(extra.error().message, "bad address \\u{1b}[31m\\u{202e}");
  // Benign: printable text comes back as it was given.
  auto plain = ParseFlags(spec, {"--jsno"});
  ASSERT_FALSE(plain);
  EXPECT_EQ(plain.error().message,
            "unknown option --jsno (see anvil test --help); did you mean --json?");
}

TEST(FlagSuggest, ATypoOrAUniquePrefixGetsTheRealName) {
  const std::vector<std::string> flags = {"--json", "--policy", "--cwd", "--network", "--help"};
  EXPECT_EQ(Suggest("--jsno", flags), "--json");
  EXPECT_EQ(Suggest("--polcy", flags), "--policy");
  EXPECT_EQ(Suggest("--pol", flags), "--policy");
  EXPECT_EQ(Suggest("--netwrk", flags), "--network");
  EXPECT_EQ(Suggest("--frobnicate", flags), std::nullopt);
  EXPECT_EQ(Suggest("--x", flags), std::nullopt);
  EXPECT_EQ(Suggest("", flags), std::nullopt);
  const std::vector<std::string> commands = {"sandbox", "run",    "serve", "plugin",
                                             "audit",   "doctor", "help"};
  EXPECT_EQ(Suggest("sandbx", commands), "sandbox");
  EXPECT_EQ(Suggest("docter", commands), "doctor");
  EXPECT_EQ(Suggest("plugins", commands), "plugin");
  EXPECT_EQ(Suggest("frob", commands), std::nullopt);
  Seen s;
  auto spec = Spec(s, Style(Operands::kNone));
  EXPECT_EQ(UnknownOption(spec, "--jsno"),
            "unknown option --jsno (see anvil test --help); did you mean --json?");
  // Hidden flags are never suggested.
  EXPECT_EQ(UnknownOption(spec, "--secre"), "unknown option --secre (see anvil test --help)");
}

// One parser per kind of value, and each accepts every spelling the front ends accepted before
// they shared it: the C library's (leading blanks, a '+'), and K, M, G in either case.
TEST(FlagValues, EachParserAcceptsWhatTheFrontEndsAccepted) {
  EXPECT_EQ(ParseDecimal("2.5"), 2.5);
  EXPECT_EQ(ParseDecimal("1e3"), 1000);
  EXPECT_EQ(ParseDecimal(" +0.5"), 0.5);
  for (const char* bad : {"", "x", "1x", "1 ", "nan", "inf", "-inf", "1e999"}) {
    EXPECT_EQ(ParseDecimal(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(ParseCount("0"), 0u);
  EXPECT_EQ(ParseCount("42"), 42u);
  EXPECT_EQ(ParseCount("+7"), 7u);
  EXPECT_EQ(ParseCount(" 7"), 7u);
  EXPECT_EQ(ParseCount("18446744073709551615"), UINT64_MAX);
  for (const char* bad :
       {"", " ", "-1", " -1", "-0", "1.5", "1k", "0x10", "7 ", "18446744073709551616"}) {
    EXPECT_EQ(ParseCount(bad), std::nullopt) << bad;
  }
  struct Size {
    const char* text;
    uint64_t bytes;
  };
  for (const Size& s :
       {Size{"0", 0}, Size{"512", 512}, Size{"1k", 1024}, Size{"1K", 1024}, Size{"8m", 8u << 20},
        Size{"8M", 8u << 20}, Size{"2g", 2ull << 30}, Size{"2G", 2ull << 30}, Size{"+3K", 3072},
        Size{"17179869183G", 17179869183ull << 30}}) {
    auto n = ParseByteSize(s.text);
    ASSERT_TRUE(n) << s.text << ": " << n.error().message;
    EXPECT_EQ(*n, s.bytes) << s.text;
  }
  EXPECT_EQ(ParseInteger("3"), 3);
  EXPECT_EQ(ParseInteger("-1"), -1);  // a descriptor's bounds refuse it, with the flag's words
  EXPECT_EQ(ParseInteger("+9"), 9);
  for (const char* bad : {"", "x", "3.5", "3 ", "99999999999999999999"}) {
    EXPECT_EQ(ParseInteger(bad), std::nullopt) << bad;
  }
}

TEST(FlagValues, AByteSizeThatIsNotOneSaysWhy) {
  struct Row {
    const char* text;
    const char* message;
  };
  for (const Row& row :
       {Row{"", "empty value"}, Row{"x", "not a number: x"}, Row{"-1", "not a number: -1"},
        Row{"K", "not a number: K"}, Row{"1KB", "bad unit in 1KB (use K, M or G)"},
        Row{"1.5M", "bad unit in 1.5M (use K, M or G)"},
        Row{"1T", "bad unit in 1T (use K, M or G)"}, Row{"17179869184G", "too large: 17179869184G"},
        Row{"18446744073709551616", "too large: 18446744073709551616"}}) {
    auto n = ParseByteSize(row.text);
    ASSERT_FALSE(n) << row.text;
    EXPECT_EQ(n.error().code, "invalid");
    EXPECT_EQ(n.error().message, row.message) << row.text;
  }
}

// A whole number is held to its bounds exactly, up to the last value its field can hold.
TEST(FlagValues, WholeNumberBoundsAreExact) {
  struct Row {
    Bounds bounds;
    const char* value;
    bool ok;
  };
  const Row rows[] = {
      {UpTo<uint64_t>(), "18446744073709551615", true},
      {UpTo<uint64_t>(), "18446744073709551616", false},
      {UpTo<uint32_t>(), "4294967295", true},
      {UpTo<uint32_t>(), "4294967296", false},
      {UpTo<uint32_t>(), "0", true},
      {Above(0), "0", false},
      {Above(0), "1", true},
      {Between(1, 1ull << 40), "1099511627776", true},
      {Between(1, 1ull << 40), "1099511627777", false},
      {AtLeast(1 << 20), "1048575", false},
      {AtLeast(1 << 20), "1048576", true},
      {AtLeast(1 << 20), "18446744073709551615", true},
  };
  for (const Row& row : rows) {
    uint64_t got = 0;
    CommandSpec spec;
    spec.program = "t";
    spec.flags = {Count("--n", "N", "", row.bounds, [&got](uint64_t n) { got = n; })};
    auto r = ParseFlags(spec, {"--n", row.value});
    EXPECT_EQ(static_cast<bool>(r), row.ok) << row.value;
    if (r) {
      EXPECT_EQ(std::to_string(got), row.value);
    }
  }
}

// An unknown flag is named, with where the real ones are and the closest one; a front end whose
// every argument is a flag refuses a stray word and `--` the same way.
TEST(ParseFlags, AnUnknownFlagIsNamedWithTheFix) {
  Seen s;
  auto spec = Spec(s, Style(Operands::kNone, Wording::kExpectsGot));
  spec.program = "anvil-gateway";
  struct Row {
    Args args;
    const char* message;
  };
  for (const Row& row : {
           Row{{"--bogus"}, "unknown option --bogus (see anvil-gateway --help)"},
           Row{{"--bogus", "1"}, "unknown option --bogus (see anvil-gateway --help)"},
           Row{{"--tmeout", "1"},
               "unknown option --tmeout (see anvil-gateway --help); did you mean --timeout?"},
           Row{{"--json", "stray"}, "unknown option stray (see anvil-gateway --help)"},
           Row{{"--"}, "unknown option -- (see anvil-gateway --help)"},
           Row{{"--secret-"}, "unknown option --secret- (see anvil-gateway --help)"},
       }) {
    auto r = ParseFlags(spec, row.args);
    ASSERT_FALSE(r) << row.args[0];
    EXPECT_EQ(r.error().code, "invalid");
    EXPECT_EQ(r.error().message, row.message);
  }
  spec.style.see_help_hint = false;
  EXPECT_EQ(ParseFlags(spec, {"--bogus"}).error().message, "unknown option --bogus");
}

// A flag given twice runs its handler twice, in order: one value keeps the last, a repeatable
// one collects them (and a switch stays set).
TEST(ParseFlags, ARepeatedFlagRunsItsHandlerAgain) {
  Seen s;
  auto spec = Spec(s, Style(Operands::kNone));
  auto r = ParseFlags(spec, {"--last", "a", "--allow-host", "x", "--json", "--last", "b", "--json",
                             "--allow-host", "y", "--count", "5", "--count", "6"});
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(s.last, "b");
  EXPECT_EQ(s.hosts, (Args{"x", "y"}));
  EXPECT_TRUE(s.json);
  EXPECT_EQ(s.count, 6u);
  // The first bad occurrence stops the parse, whatever came before.
  Seen t;
  auto bad = ParseFlags(Spec(t, Style(Operands::kNone)), {"--count", "5", "--count", "0"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "--count needs a number from 1 to 1000");
  EXPECT_EQ(t.count, 5u);
}

// Without the display sanitizer (a front end below policy/), an argument's odd bytes are still
// never echoed raw: each is shown by value.
TEST(ParseFlags, WithoutAnEchoOddBytesAreShownByValue) {
  Seen s;
  auto spec = Spec(s, Style(Operands::kNone, Wording::kExpectsGot));
  auto unknown = ParseFlags(spec, {"--x\x1b[2J\x9b"});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message, "unknown option --x\\x{1b}[2J\\x{9b} (see anvil test --help)");
  auto value = ParseFlags(spec, {"--count", "\x07" + std::string(200, 'a')});
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error().message,
            "--count expects a number from 1 to 1000, got \\x{7}" + std::string(99, 'a') + "...");
}

// --help: the usage line, the description, every visible flag (hidden ones never) in one column
// across the groups, each group under its heading, then the sections and the examples.
TEST(FlagHelp, ListsTheVisibleFlagsUnderTheirHeadings) {
  CommandSpec spec;
  spec.program = "anvil-test";
  spec.synopsis = "--in N [options]";
  spec.description = "Tests.";
  spec.flags = {
      Descriptor("--in", "N", "where requests arrive", Between(0, 10), [](int) { return Ok(); }),
      Switch("--no-harden", "skip it", [] {}),
      Count("--exec-max", "N", "calls at once\n(default 4)", AtLeast(1), [](uint64_t) {})
          .Heading("sys.exec"),
      Switch("--unsafe-test-hook", "", [] {}).Hidden(),
      ByteSize("--a-rather-long-flag-name", "BYTES", "its own line", UpTo<uint64_t>(),
               [](uint64_t) {}),
  };
  spec.sections = {{"Exit status", "0 ok", false}};
  spec.examples = {"anvil-test --in 3"};
  EXPECT_EQ(RenderHelp(spec),
            "usage: anvil-test --in N [options]\n"
            "\n"
            "Tests.\n"
            "\n"
            "Options:\n"
            "  --in N        where requests arrive\n"
            "  --no-harden   skip it\n"
            "\n"
            "sys.exec:\n"
            "  --exec-max N  calls at once\n"
            "                (default 4)\n"
            "  --a-rather-long-flag-name BYTES\n"
            "                its own line\n"
            "\n"
            "Exit status:\n"
            "0 ok\n"
            "\n"
            "Examples:\n"
            "  anvil-test --in 3\n");
  EXPECT_EQ(RenderFlagColumns(spec.flags).find("--unsafe-test-hook"), std::string::npos);
}

// Front ends that hand options on to another parser (`anvil exec` and `anvil mcp` give theirs
// to `anvil sandbox`'s): an option the table does not hold is kept as given, with its value
// when it takes one; the table's own flags are applied as usual.
TEST(ParseFlags, ForwardedOptionsKeepTheirValues) {
  struct Row {
    Args args;
    Args forwarded;
    Args operands;
    const char* error;  // null: parsed
  };
  const Row rows[] = {
      {{"--network", "proxy", "--json", "--", "cmd"}, {"--network", "proxy"}, {"cmd"}, nullptr},
      {{"--network=proxy", "cmd", "--x"}, {"--network=proxy"}, {"cmd", "--x"}, nullptr},
      {{"--ro", "--dir", "/w", "-", "--", "cmd"}, {"--ro", "-"}, {"cmd"}, nullptr},
      {{"--dir=/w", "--network", "--json", "c"}, {"--network", "--json"}, {"c"}, nullptr},
      {{"--network"}, {}, {}, "--network needs a value (see --help)"},
      {{"--dir"}, {}, {}, "--dir needs a value (see --help)"},
      {{"--count", "x"}, {}, {}, "--count expects a number from 1 to 1000, got x"},
  };
  for (const Row& row : rows) {
    Seen s;
    ParseStyle style = Style(Operands::kFirstEndsFlags, Wording::kExpectsGot);
    style.equals_value = true;
    style.forward_unknown = true;
    auto spec = Spec(s, style);
    spec.forwarded_value = [](std::string_view name) { return name == "--network"; };
    spec.messages.missing_value = [](const std::string& flag) {
      return flag + " needs a value (see --help)";
    };
    auto r = ParseFlags(spec, row.args);
    if (row.error != nullptr) {
      ASSERT_FALSE(r) << row.args[0];
      EXPECT_EQ(r.error().message, row.error);
      continue;
    }
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->forwarded, row.forwarded) << row.args[0];
    EXPECT_EQ(r->operands, row.operands) << row.args[0];
    EXPECT_EQ(s.dir, row.args[0] == "--dir=/w" || row.args[1] == "--dir" ? "/w" : "");
  }
  // Benign: without forwarding, the same option is refused as unknown, as before.
  Seen s;
  auto plain = ParseFlags(Spec(s, Style(Operands::kFirstEndsFlags)), {"--network", "proxy"});
  ASSERT_FALSE(plain);
  EXPECT_EQ(plain.error().message.rfind("unknown option --network", 0), 0u);
  // --help is still the command's own.
  ParseStyle style = Style(Operands::kFirstEndsFlags);
  style.forward_unknown = true;
  auto help = ParseFlags(Spec(s, style), {"--x", "--help"});
  ASSERT_TRUE(help);
  EXPECT_TRUE(help->help);
}

// A front end's own words for its argument errors: the fix after an unknown option, the text of
// a missing value, what a word is where only options are taken; each with the echoed argument.
TEST(ParseFlags, AFrontEndNamesItsOwnFix) {
  struct Row {
    Operands operands;
    bool dash_alone_is_operand;
    Args args;
    const char* message;
  };
  const Row rows[] = {
      {Operands::kFirstEndsFlags,
       false,
       {"--strict", "x"},
       "unknown option --strict (fix: put the command after --: anvil test -- --strict)"},
      {Operands::kFirstEndsFlags,
       false,
       {"--jsno"},
       "unknown option --jsno (fix: put the command after --: anvil test -- --jsno); did you mean "
       "--json?"},
      {Operands::kFirstEndsFlags,
       false,
       {"--\x1b[2J"},
       "unknown option --\\u{1b}[2J (fix: put the command after --: anvil test -- --\\u{1b}[2J)"},
      {Operands::kFirstEndsFlags, false, {"--dir"}, "--dir: give it a value"},
      {Operands::kNone, true, {"stray"}, "unexpected argument 'stray' (options only)"},
      {Operands::kNone, true, {"--json", "--"}, "unexpected argument '--' (options only)"},
      {Operands::kNone, true, {"-"}, "unexpected argument '-' (options only)"},
      {Operands::kNone,
       false,
       {"-"},
       "unknown option - (fix: put the command after --: anvil test -- -)"},
      {Operands::kNone,
       true,
       {"--bogus"},
       "unknown option --bogus (fix: put the command after --: anvil test -- --bogus)"},
  };
  for (const Row& row : rows) {
    Seen s;
    ParseStyle style = Style(row.operands);
    style.dash_alone_is_operand = row.dash_alone_is_operand;
    auto spec = Spec(s, style);
    spec.echo = [](std::string_view text, size_t max) { return SanitizeForDisplay(text, max); };
    spec.messages.unknown_fix = [](const std::string& shown) {
      return "put the command after --: anvil test -- " + shown;
    };
    spec.messages.missing_value = [](const std::string& flag) {
      return flag + ": give it a value";
    };
    spec.messages.unexpected_operand = [](const std::string& shown) {
      return "unexpected argument '" + shown + "' (options only)";
    };
    auto r = ParseFlags(spec, row.args);
    ASSERT_FALSE(r) << row.args[0];
    EXPECT_EQ(r.error().code, "invalid");
    EXPECT_EQ(r.error().message, row.message);
  }
  // Benign: "-" alone as an operand where operands are taken, and flags still parse.
  Seen s;
  ParseStyle style = Style(Operands::kAnywhere);
  style.dash_alone_is_operand = true;
  auto r = ParseFlags(Spec(s, style), {"-", "--json", "x"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->operands, (Args{"-", "x"}));
  EXPECT_TRUE(s.json);
}

// The layout a command always printed: no "Options:" title, no subcommand list, a fixed column
// (a wider flag's help on the next line).
TEST(FlagHelp, AFixedColumnWithoutTitles) {
  CommandSpec spec;
  spec.program = "anvil rules";
  spec.synopsis = "check [--json] [--] COMMAND...";
  spec.description = "Judge COMMAND.";
  spec.subcommands = {{"check", "COMMAND...", "judge it", {}, false}};
  spec.flags = {
      Switch("--json", "JSON\n(one object)", [] {}),
      Switch("--rules-workspace-dir", "its own line", [] {}),
  };
  spec.sections = {{"", "Exit: 0.", false}};
  spec.help.options_title = false;
  spec.help.list_subcommands = false;
  spec.help.column = 21;
  EXPECT_EQ(RenderHelp(spec),
            "usage: anvil rules check [--json] [--] COMMAND...\n"
            "\n"
            "Judge COMMAND.\n"
            "\n"
            "  --json             JSON\n"
            "                     (one object)\n"
            "  --rules-workspace-dir\n"
            "                     its own line\n"
            "\n"
            "Exit: 0.\n");
}

}  // namespace
}  // namespace flag_set_test
}  // namespace anvil
