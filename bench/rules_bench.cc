// Command rules decision time (src/policy/command_rules.h): one command judged against a
// 1,000-rule file, target under 50 µs per command. Two files: 1,000 rules spread over 250
// programs (a large real set), and 1,000 rules that all start with `git` (the index by program
// cannot help: every rule is a candidate). Each command is also judged against no rules at all
// in the same run: that baseline is the fixed cost of taking the command apart (the shell parser
// for a script, the wrappers) and of the harmless-set lookup, so "x baseline" is what the rules
// themselves add. Loading each file (TOML parse, examples checked, index) is timed too.
// Prints medians of ROUNDS rounds; asserts nothing.
//
//   build/release/bench/rules_bench [ROUNDS] [ITERATIONS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "policy/command_rules.h"

using Clock = std::chrono::steady_clock;

namespace {

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

std::string Rule(const std::string& pattern, const char* decision, const std::string& example) {
  return "[[rule]]\npattern = " + pattern + "\ndecision = \"" + decision +
         "\"\njustification = \"generated for the bench\"\nmatch = [\"" + example + "\"]\n\n";
}

const char* DecisionFor(int i) {
  return i % 7 == 0 ? "forbidden" : i % 3 == 0 ? "prompt" : "allow";
}

// 1,000 rules over 250 programs, four each: a subcommand, alternatives, a three-word prefix.
std::string SpreadFile() {
  std::string text;
  for (int p = 0; p < 250; ++p) {
    const std::string tool = "tool" + std::to_string(p);
    text += Rule("[\"" + tool + "\", \"run\"]", DecisionFor(p * 4), tool + " run");
    text += Rule("[\"" + tool + "\", [\"build\", \"test\", \"check\"]]", DecisionFor(p * 4 + 1),
                 tool + " test");
    text += Rule("[\"" + tool + "\", \"deploy\", [\"--prod\", \"-p\"]]", DecisionFor(p * 4 + 2),
                 tool + " deploy -p");
    text += Rule("[[\"" + tool + "\", \"/opt/bin/" + tool + "\"], \"clean\"]",
                 DecisionFor(p * 4 + 3), tool + " clean");
  }
  return text;
}

// 1,000 rules that all start with git.
std::string SameProgramFile() {
  std::string text;
  for (int i = 0; i < 1000; ++i) {
    const std::string sub = "sub" + std::to_string(i);
    text +=
        Rule("[\"git\", \"" + sub + "\", [\"-a\", \"-b\"]]", DecisionFor(i), "git " + sub + " -a");
  }
  return text;
}

struct Command {
  const char* name;
  std::vector<std::string> argv;
};

anvil::CommandRules Load(const std::string& text, int rounds, double& load_ms) {
  std::vector<double> times;
  anvil::CommandRules rules;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    auto parsed = anvil::ParseRulesFile(text, "bench.toml", anvil::RuleLayer::kUser);
    if (!parsed) {
      std::fprintf(stderr, "bench file does not load: %s\n", parsed.error().ToString().c_str());
      std::exit(1);
    }
    anvil::CommandRules loaded;
    loaded.Add(std::move(*parsed));
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    rules = std::move(loaded);
  }
  load_ms = Median(times);
  return rules;
}

// Median ns per EvaluateCommand over `rounds` rounds of `iterations` calls.
double NsPerCommand(const anvil::CommandRules& rules, const std::vector<std::string>& argv,
                    int rounds, int iterations) {
  std::vector<double> per_call;
  std::size_t sink = 0;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    for (int i = 0; i < iterations; ++i) {
      const anvil::CommandVerdict verdict = anvil::EvaluateCommand(rules, argv);
      sink += static_cast<std::size_t>(verdict.outcome) + verdict.segments.size();
    }
    per_call.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() /
                       iterations);
  }
  if (sink == 0) std::fprintf(stderr, " ");  // keep the calls
  return Median(per_call);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  const int iterations = argc > 2 ? std::max(1, std::atoi(argv[2])) : 20000;
  const std::vector<Command> commands = {
      {"rule hit", {"tool17", "deploy", "--prod", "eu-west"}},
      {"rule hit by path", {"/opt/bin/tool3", "clean"}},
      {"no rule", {"unknown-program", "a", "b"}},
      {"harmless (git status)", {"git", "status", "--short"}},
      {"bash -lc, 4 commands",
       {"bash", "-lc", "tool1 build && tool2 test --all && ls -la | wc -l"}},
      {"env + timeout wrapper", {"env", "A=1", "timeout", "5", "tool3", "run", "x"}},
      {"git, 1,000 git rules", {"git", "sub999", "-b", "x"}},
  };
  double spread_load = 0, same_load = 0;
  const anvil::CommandRules spread = Load(SpreadFile(), rounds, spread_load);
  const anvil::CommandRules same = Load(SameProgramFile(), rounds, same_load);
  const anvil::CommandRules none;
  std::printf("rules_bench: %d rounds x %d calls per row, median of rounds\n\n", rounds,
              iterations);
  std::printf(
      "load a 1,000-rule file (parse, check examples, index): %.2f ms spread over 250 "
      "programs, %.2f ms all `git`\n\n",
      spread_load, same_load);
  std::printf("| command | 250 programs | all `git` | no rules (baseline) | x baseline |\n");
  std::printf("|---|---:|---:|---:|---:|\n");
  double worst = 0;
  for (const auto& command : commands) {
    const double a = NsPerCommand(spread, command.argv, rounds, iterations);
    const double b = NsPerCommand(same, command.argv, rounds, iterations);
    const double base = NsPerCommand(none, command.argv, rounds, iterations);
    worst = std::max({worst, a, b});
    std::printf("| %s | %.2f µs | %.2f µs | %.2f µs | %.2f |\n", command.name, a / 1000, b / 1000,
                base / 1000, std::max(a, b) / base);
  }
  std::printf("\nslowest row: %.2f µs per command (target: under 50 µs)\n", worst / 1000);
  return 0;
}
