// Every row of the seccomp tables (linux/seccomp_rules.h) against the programs the binaries
// actually carry: a classic-BPF interpreter over seccomp_data (as sandbox2's bpf_evaluator)
// runs the baked programs for each row — arguments that meet its conditions and arguments that
// just miss them — and for every syscall number with a spread of arguments, and the answer
// must be the table's. A last test checks the lists in docs/policy.md ("The seccomp tables")
// against the rows. So the prose, the table and the programs cannot drift apart.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "linux/refusal_observer.h"
#include "linux/seccomp.h"
#include "linux/seccomp_compile.h"
#include "linux/seccomp_rules.h"

namespace anvil::seccomp {
namespace seccomp_table_test {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kNativeArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kNativeArch = AUDIT_ARCH_AARCH64;
#endif

// --- a classic-BPF interpreter over seccomp_data ------------------------------------------------

struct Data {
  int nr = 0;
  uint32_t arch = kNativeArch;
  uint64_t ip = 0;
  uint64_t args[6] = {};
};

// The program's return value for `d`; nullopt for a program the kernel would not run the way
// this reads it (a load out of seccomp_data, a jump past the end, an unknown instruction).
// `steps`, when given, counts the instructions run.
std::optional<uint32_t> Evaluate(const std::vector<sock_filter>& prog, const Data& d,
                                 size_t* steps = nullptr) {
  seccomp_data data{};
  data.nr = d.nr;
  data.arch = d.arch;
  data.instruction_pointer = d.ip;
  std::memcpy(data.args, d.args, sizeof(data.args));
  unsigned char bytes[sizeof(data)];
  std::memcpy(bytes, &data, sizeof(data));
  uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {};
  for (size_t pc = 0; pc < prog.size(); ++pc) {
    if (steps) ++*steps;
    const sock_filter& in = prog[pc];
    const uint32_t src = BPF_SRC(in.code) == BPF_X ? x : in.k;
    switch (BPF_CLASS(in.code)) {
      case BPF_LD:
        if (in.code == (BPF_LD | BPF_W | BPF_ABS)) {
          if (in.k % 4 != 0 || in.k + 4 > sizeof(bytes)) return std::nullopt;
          std::memcpy(&a, bytes + in.k, 4);
        } else if (in.code == (BPF_LD | BPF_IMM)) {
          a = in.k;
        } else if (in.code == (BPF_LD | BPF_MEM)) {
          if (in.k >= BPF_MEMWORDS) return std::nullopt;
          a = mem[in.k];
        } else if (in.code == (BPF_LD | BPF_W | BPF_LEN)) {
          a = sizeof(bytes);
        } else {
          return std::nullopt;
        }
        break;
      case BPF_LDX:
        if (in.code == (BPF_LDX | BPF_IMM)) {
          x = in.k;
        } else if (in.code == (BPF_LDX | BPF_MEM)) {
          if (in.k >= BPF_MEMWORDS) return std::nullopt;
          x = mem[in.k];
        } else if (in.code == (BPF_LDX | BPF_W | BPF_LEN)) {
          x = sizeof(bytes);
        } else {
          return std::nullopt;
        }
        break;
      case BPF_ST:
      case BPF_STX:
        if (in.k >= BPF_MEMWORDS) return std::nullopt;
        mem[in.k] = BPF_CLASS(in.code) == BPF_ST ? a : x;
        break;
      case BPF_ALU:
        switch (BPF_OP(in.code)) {
          case BPF_ADD:
            a += src;
            break;
          case BPF_SUB:
            a -= src;
            break;
          case BPF_MUL:
            a *= src;
            break;
          case BPF_DIV:
            if (src == 0) return std::nullopt;
            a /= src;
            break;
          case BPF_MOD:
            if (src == 0) return std::nullopt;
            a %= src;
            break;
          case BPF_AND:
            a &= src;
            break;
          case BPF_OR:
            a |= src;
            break;
          case BPF_XOR:
            a ^= src;
            break;
          case BPF_LSH:
            a = src < 32 ? a << src : 0;
            break;
          case BPF_RSH:
            a = src < 32 ? a >> src : 0;
            break;
          case BPF_NEG:
            a = 0 - a;
            break;
          default:
            return std::nullopt;
        }
        break;
      case BPF_JMP: {
        if (BPF_OP(in.code) == BPF_JA) {
          pc += in.k;
        } else {
          bool taken;
          switch (BPF_OP(in.code)) {
            case BPF_JEQ:
              taken = a == src;
              break;
            case BPF_JGT:
              taken = a > src;
              break;
            case BPF_JGE:
              taken = a >= src;
              break;
            case BPF_JSET:
              taken = (a & src) != 0;
              break;
            default:
              return std::nullopt;
          }
          pc += taken ? in.jt : in.jf;
        }
        if (pc + 1 >= prog.size()) return std::nullopt;  // the next one must exist
        break;
      }
      case BPF_RET:
        return BPF_RVAL(in.code) == BPF_A ? a : in.k;
      case BPF_MISC:
        if (BPF_MISCOP(in.code) == BPF_TAX) {
          x = a;
        } else {
          a = x;
        }
        break;
      default:
        return std::nullopt;
    }
  }
  return std::nullopt;  // fell off the end: the kernel's checker refuses such a program
}

uint32_t Ret(const Action& action) {
  switch (action.kind) {
    case Action::kAllow:
      return SECCOMP_RET_ALLOW;
    case Action::kErrno:
      return SECCOMP_RET_ERRNO | (static_cast<uint32_t>(action.err) & SECCOMP_RET_DATA);
    case Action::kKillProcess:
      return SECCOMP_RET_KILL_PROCESS;
    case Action::kNotify:
      return SECCOMP_RET_USER_NOTIF;
  }
  return 0;
}

std::string Show(uint32_t ret) {
  switch (ret & SECCOMP_RET_ACTION_FULL) {
    case SECCOMP_RET_ALLOW:
      return "allow";
    case SECCOMP_RET_ERRNO:
      return "errno " + std::to_string(ret & SECCOMP_RET_DATA);
    case SECCOMP_RET_KILL_PROCESS:
      return "kill process";
    case SECCOMP_RET_USER_NOTIF:
      return "notify";
    case SECCOMP_RET_KILL_THREAD:
      return "kill thread";
  }
  return "other " + std::to_string(ret);
}

// --- what the table says ------------------------------------------------------------------------

int Number(const std::string& name) { return seccomp_syscall_resolve_name(name.c_str()); }

// The kernel's precedence between the actions of several matching rules (the most restrictive).
int Severity(const Action& a) {
  switch (a.kind) {
    case Action::kKillProcess:
      return 3;
    case Action::kErrno:
      return 2;
    case Action::kNotify:
      return 1;
    case Action::kAllow:
      return 0;
  }
  return 0;
}

// The table's answer for `d` (the native arch): the matching row's action, else the default.
uint32_t Expected(const RuleTable& table, const Data& d) {
  std::optional<Action> verdict;
  for (const SyscallRule& rule : table.rules) {
    if (Number(rule.syscall) != d.nr) continue;
    bool holds = std::all_of(rule.when.begin(), rule.when.end(),
                             [&](const ArgCond& c) { return c.Holds(d.args[c.arg]); });
    if (holds && (!verdict || Severity(rule.action) > Severity(*verdict))) verdict = rule.action;
  }
  return Ret(verdict.value_or(table.default_action));
}

struct Filter {
  std::string name;
  std::vector<sock_filter> baked;
  RuleTable table;
};

std::vector<Filter> AllFilters() {
  std::vector<Filter> out;
  auto add = [&](const std::string& name, Result<Program> baked, RuleTable table) {
    EXPECT_TRUE(baked) << name;
    if (baked) out.push_back({name, baked->insns(), std::move(table)});
  };
  for (NetworkMode network : {NetworkMode::kNone, NetworkMode::kProxy, NetworkMode::kFull}) {
    const std::string n(ToString(network));
    add("command " + n, BuildCommandFilter(network, true), CommandRules(network, true));
    add("command " + n + ", tracing", BuildCommandFilter(network, true, false, true),
        CommandRules(network, true, true, false, true));
    add("external-sandbox " + n, BuildCommandFilter(network, false), CommandRules(network, false));
  }
  add("command none, own network namespace", BuildCommandFilter(NetworkMode::kNone, true, true),
      CommandRules(NetworkMode::kNone, true, true, true));
  add("command none, own network namespace, tracing",
      BuildCommandFilter(NetworkMode::kNone, true, true, true),
      CommandRules(NetworkMode::kNone, true, true, true, true));
  add("service", BuildServiceFilter(), CommandRules(NetworkMode::kFull, true, false));
  add("plugin host", BuildPluginHostFilter(), PluginHostRules());
  for (bool connect : {false, true}) {
    // Not a Program (it is loaded with its own listener flag): the baked instructions as they are.
    out.push_back({connect ? "refusal observer, connect" : "refusal observer",
                   RefusalObserverProgram(connect), RefusalObserverRules(connect)});
  }
  return out;
}

// An argument value that meets `c`, and one that just misses it (nullopt: none can).
uint64_t Meeting(const ArgCond& c) {
  switch (c.op) {
    case ArgCond::kEq:
    case ArgCond::kGe:
      return c.value;
    case ArgCond::kNe:
    case ArgCond::kGt:
      return c.value + 1;
    case ArgCond::kMaskedEq:
      return c.datum;
  }
  return 0;
}
std::optional<uint64_t> Missing(const ArgCond& c) {
  switch (c.op) {
    case ArgCond::kEq:
    case ArgCond::kNe:
    case ArgCond::kGt:
      return c.value;
    case ArgCond::kGe:
      if (c.value == 0) return std::nullopt;
      return c.value - 1;
    case ArgCond::kMaskedEq:
      if (c.value == 0) return std::nullopt;
      return c.datum ^ (c.value & (~c.value + 1));  // the lowest bit of the mask flipped
  }
  return std::nullopt;
}

void ExpectSame(const Filter& f, const Data& d, const std::string& what) {
  auto got = Evaluate(f.baked, d);
  ASSERT_TRUE(got) << f.name << ": the program does not run to a return for " << what;
  const uint32_t want = Expected(f.table, d);
  EXPECT_EQ(*got, want) << f.name << ", " << what << ": the program says " << Show(*got)
                        << ", the table " << Show(want);
}

std::string Describe(const Data& d) {
  std::ostringstream out;
  out << "nr " << d.nr << " (";
  char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, d.nr);
  out << (name ? name : "?") << ") args";
  std::free(name);
  for (uint64_t a : d.args) out << " 0x" << std::hex << a;
  return out.str();
}

TEST(SeccompTable, EveryRowIsWhatTheBakedProgramDoes) {
  for (const Filter& f : AllFilters()) {
    size_t checked = 0;
    for (const SyscallRule& rule : f.table.rules) {
      const int nr = Number(rule.syscall);
      if (nr < 0) {
        EXPECT_FALSE(rule.required) << f.name << ": " << rule.syscall << " unknown";
        continue;
      }
      Data meet;
      meet.nr = nr;
      for (const ArgCond& c : rule.when) meet.args[c.arg] = Meeting(c);
      for (const ArgCond& c : rule.when) ASSERT_TRUE(c.Holds(meet.args[c.arg]));
      // The row decides (no other row of the call answers otherwise: NoCallHasTwoDifferentAnswers).
      EXPECT_EQ(Expected(f.table, meet), Ret(rule.action)) << f.name << ": " << rule.syscall;
      ExpectSame(f, meet, rule.syscall + " meeting its conditions: " + Describe(meet));
      // Each condition just missed, the others met.
      for (size_t i = 0; i < rule.when.size(); ++i) {
        auto miss = Missing(rule.when[i]);
        if (!miss) continue;
        Data d = meet;
        d.args[rule.when[i].arg] = *miss;
        ExpectSame(f, d,
                   rule.syscall + " missing condition " + std::to_string(i) + ": " + Describe(d));
        // The same with the upper half of the argument set: the comparison is 64-bit.
        d.args[rule.when[i].arg] = *miss | (1ULL << 32);
        ExpectSame(f, d, rule.syscall + " upper half set: " + Describe(d));
      }
      ++checked;
    }
    EXPECT_GT(checked, 0u) << f.name;
  }
}

TEST(SeccompTable, EverySyscallNumberWithASpreadOfArguments) {
  // Values that the rows compare against, their neighbours, and the upper halves.
  const uint64_t interesting[] = {0,          1,         2,          3,          10,
                                  16,         17,        0x40,       0x800,      0x5412,
                                  0x541C,     0x5423,    0x20000,    0x400000,   0x10000000,
                                  0x80000000, 0x0440000, 0xffffffff, 1ULL << 32, ~0ULL};
  constexpr size_t kCount = sizeof(interesting) / sizeof(interesting[0]);
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (const Filter& f : AllFilters()) {
    for (int nr = 0; nr < 512; ++nr) {
      for (int round = 0; round < 24; ++round) {
        Data d;
        d.nr = nr;
        for (uint64_t& a : d.args) a = interesting[next() % kCount];
        ExpectSame(f, d, Describe(d));
        if (HasFatalFailure() || HasFailure()) return;
      }
    }
  }
}

// The kernel caches the verdict of a call whose answer does not depend on its arguments; the
// calls with argument rows run the program every time, so the frequent ones are tested first
// (seccomp_compile.cc) and leave it after a few instructions, not after the list of refusals.
TEST(SeccompTable, FrequentCallsWithArgumentRowsLeaveEarly) {
  struct Call {
    const char* name;
    uint64_t args[6];
  };
  const Call calls[] = {
      {"openat", {static_cast<uint64_t>(AT_FDCWD), 0x1000, O_RDONLY | O_CLOEXEC, 0, 0, 0}},
      {"openat", {3, 0x1000, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC, 0, 0, 0}},
      {"clone", {CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD, 0, 0, 0, 0, 0}},
      {"ioctl", {1, TCGETS, 0x1000, 0, 0, 0}},
  };
  for (const Filter& f : AllFilters()) {
    for (const Call& call : calls) {
      const bool has_rows = std::any_of(
          f.table.rules.begin(), f.table.rules.end(),
          [&](const SyscallRule& r) { return r.syscall == call.name && !r.when.empty(); });
      if (!has_rows) continue;
      Data d;
      d.nr = Number(call.name);
      std::memcpy(d.args, call.args, sizeof(d.args));
      size_t steps = 0;
      ASSERT_TRUE(Evaluate(f.baked, d, &steps)) << f.name << ": " << call.name;
      EXPECT_LE(steps, 40u) << f.name << ": " << Describe(d) << " runs " << steps
                            << " instructions";
    }
  }
}

TEST(SeccompTable, TheEvaluatorSeesARowMissingFromAProgram) {
  // The check above has teeth: a program compiled from the table without one of its rows
  // answers differently from the table for that row.
  const RuleTable table = CommandRules(NetworkMode::kNone, true);
  for (const std::string dropped : {"bpf", "clone", "openat", "socket"}) {
    SCOPED_TRACE(dropped);
    RuleTable without = table;
    std::erase_if(without.rules, [&](const SyscallRule& r) { return r.syscall == dropped; });
    ASSERT_LT(without.rules.size(), table.rules.size());
    auto program = CompileTable(without);
    ASSERT_TRUE(program) << program.error().ToString();
    bool differs = false;
    for (const SyscallRule& rule : table.rules) {
      if (rule.syscall != dropped) continue;
      Data d;
      d.nr = Number(rule.syscall);
      for (const ArgCond& c : rule.when) d.args[c.arg] = Meeting(c);
      auto got = Evaluate(*program, d);
      ASSERT_TRUE(got);
      differs = differs || *got != Expected(table, d);
    }
    EXPECT_TRUE(differs);
  }
}

// What the rows mean, call by call, as docs/policy.md says it.
TEST(SeccompTable, ExamplesAnswerAsTheDocsSay) {
  auto program = [](Result<Program> p) { return p ? p->insns() : std::vector<sock_filter>{}; };
  const auto none = program(BuildCommandFilter(NetworkMode::kNone));
  const auto own = program(BuildCommandFilter(NetworkMode::kNone, true, true));
  const auto proxy = program(BuildCommandFilter(NetworkMode::kProxy));
  const auto tracing = program(BuildCommandFilter(NetworkMode::kNone, true, false, true));
  const auto own_tracing = program(BuildCommandFilter(NetworkMode::kNone, true, true, true));
  const auto service = program(BuildServiceFilter());
  const auto host = program(BuildPluginHostFilter());
  auto answer = [](const std::vector<sock_filter>& prog, const char* call,
                   std::initializer_list<uint64_t> args) {
    Data d;
    d.nr = Number(call);
    size_t i = 0;
    for (uint64_t a : args) d.args[i++] = a;
    auto got = Evaluate(prog, d);
    return got ? Show(*got) : std::string("no answer");
  };
  const std::string eperm = "errno " + std::to_string(EPERM);
  const std::string enosys = "errno " + std::to_string(ENOSYS);
  EXPECT_EQ(answer(none, "ptrace", {0}), eperm);
  // anvil-exec-runner's and the services' filters refuse tracing; `anvil sandbox`'s leaves it
  // to the kernel and Landlock, and refuses the rest as before.
  for (const char* call : {"ptrace", "process_vm_readv", "process_vm_writev"}) {
    EXPECT_EQ(answer(none, call, {0}), eperm) << call;
    EXPECT_EQ(answer(service, call, {0}), eperm) << call;
    EXPECT_EQ(answer(tracing, call, {0}), "allow") << call;
    EXPECT_EQ(answer(own_tracing, call, {0}), "allow") << call;
  }
  for (const char* call : {"pidfd_getfd", "kcmp", "mount", "bpf", "perf_event_open"}) {
    EXPECT_EQ(answer(tracing, call, {0}), eperm) << call;
  }
  EXPECT_EQ(answer(tracing, "clone", {0x10000000 | 17}), eperm);              // CLONE_NEWUSER
  EXPECT_EQ(answer(none, "clone", {0x10000000 | 17}), eperm);                 // CLONE_NEWUSER
  EXPECT_EQ(answer(none, "clone", {0x01000000 | 0x00200000 | 17}), "allow");  // a thread
  EXPECT_EQ(answer(none, "clone3", {0, 88}), enosys);
  EXPECT_EQ(answer(none, "ioctl", {0, 0x5412}), eperm);           // TIOCSTI
  EXPECT_EQ(answer(none, "ioctl", {0, 0x5413}), "allow");         // TIOCGWINSZ
  EXPECT_EQ(answer(none, "personality", {0x0040000}), eperm);     // ADDR_NO_RANDOMIZE
  EXPECT_EQ(answer(none, "personality", {0xffffffff}), "allow");  // the query
  EXPECT_EQ(answer(none, "openat", {0, 0, 0100, 04755}), eperm);  // O_CREAT, setuid
  EXPECT_EQ(answer(none, "openat", {0, 0, 0100, 0755}), "allow");
  EXPECT_EQ(answer(none, "openat", {0, 0, 0, 04755}), "allow");  // no create: no mode
  EXPECT_EQ(answer(none, "fchmodat", {0, 0, 02775}), eperm);     // setgid directory
  EXPECT_EQ(answer(none, "openat2", {0, 0, 0, 24}), enosys);
  EXPECT_EQ(answer(none, "socket", {1, 1, 0}), "allow");  // AF_UNIX
  EXPECT_EQ(answer(none, "socket", {2, 1, 0}), eperm);    // AF_INET
  EXPECT_EQ(answer(own, "socket", {2, 1, 0}), "allow");
  EXPECT_EQ(answer(own, "socket", {16, 3, 0}), "allow");    // NETLINK_ROUTE
  EXPECT_EQ(answer(own, "socket", {16, 3, 9}), eperm);      // NETLINK_AUDIT
  EXPECT_EQ(answer(own, "socket", {17, 3, 0}), eperm);      // AF_PACKET
  EXPECT_EQ(answer(proxy, "socket", {10, 1, 0}), "allow");  // AF_INET6
  EXPECT_EQ(answer(proxy, "socket", {16, 3, 0}), eperm);    // netlink
  EXPECT_EQ(answer(host, "read", {0, 0, 0}), "allow");
  EXPECT_EQ(answer(host, "openat", {0, 0, 0}), eperm);
  EXPECT_EQ(answer(host, "mmap", {0, 4096, 3, 0x22}), "allow");  // PROT_READ|PROT_WRITE
  EXPECT_EQ(answer(host, "mmap", {0, 4096, 5, 0x22}), eperm);    // PROT_EXEC
  EXPECT_EQ(answer(host, "mprotect", {0, 4096, 4}), eperm);
  // The refusal observer: writes stop for init, reads and everything else do not.
  const auto observer = RefusalObserverProgram(false);
  const auto observer_connect = RefusalObserverProgram(true);
  EXPECT_EQ(answer(observer, "openat", {0, 0, 0}), "allow");      // O_RDONLY
  EXPECT_EQ(answer(observer, "openat", {0, 0, 01}), "notify");    // O_WRONLY
  EXPECT_EQ(answer(observer, "openat", {0, 0, 0102}), "notify");  // O_RDWR | O_CREAT
  EXPECT_EQ(answer(observer, "open", {0, 01000}), "notify");      // O_TRUNC
  EXPECT_EQ(answer(observer, "open", {0, 02000000}), "allow");    // O_CLOEXEC
  EXPECT_EQ(answer(observer, "mkdirat", {0, 0, 0755}), "notify");
  EXPECT_EQ(answer(observer, "read", {0, 0, 0}), "allow");
  EXPECT_EQ(answer(observer, "connect", {0, 0, 0}), "allow");
  EXPECT_EQ(answer(observer_connect, "connect", {0, 0, 0}), "notify");
}

TEST(SeccompTable, AForeignAbiKillsTheProcess) {
  for (const Filter& f : AllFilters()) {
    Data i386;
    i386.arch = AUDIT_ARCH_I386;
    i386.nr = 0;
    auto got = Evaluate(f.baked, i386);
    ASSERT_TRUE(got) << f.name;
    EXPECT_EQ(*got, Ret(f.table.foreign_arch)) << f.name << ": " << Show(*got);
    // The observer decides nothing: the command filter beside it is the one that kills.
    if (f.table.foreign_arch == kAllowAction) continue;
    EXPECT_EQ(*got, SECCOMP_RET_KILL_PROCESS) << f.name;
#if defined(__x86_64__)
    // x32: the native arch, with the x32 bit in the number.
    Data x32;
    x32.nr = 0x40000000 | 1;  // x32 write
    got = Evaluate(f.baked, x32);
    ASSERT_TRUE(got) << f.name;
    EXPECT_EQ(*got, SECCOMP_RET_KILL_PROCESS) << f.name << ": " << Show(*got);
#endif
  }
}

TEST(SeccompTable, NoCallHasTwoDifferentAnswers) {
  // Rows of one call that could both match must agree, or the kernel's precedence, not the
  // table, would decide.
  for (const Filter& f : AllFilters()) {
    std::map<std::string, std::set<uint32_t>> answers;
    for (const SyscallRule& rule : f.table.rules) answers[rule.syscall].insert(Ret(rule.action));
    for (const auto& [call, set] : answers) EXPECT_EQ(set.size(), 1u) << f.name << ": " << call;
  }
}

// --- the docs ----------------------------------------------------------------------------------

// (syscall, answer, conditional) triples.
using Entry = std::tuple<std::string, std::string, bool>;

std::string Answer(const Action& a) {
  switch (a.kind) {
    case Action::kAllow:
      return "allowed";
    case Action::kErrno:
      return a.err == EPERM ? "EPERM" : a.err == ENOSYS ? "ENOSYS" : std::to_string(a.err);
    case Action::kKillProcess:
      return "kills the process";
    case Action::kNotify:
      return "stops for init";
  }
  return "?";
}

std::set<Entry> FromTable(const RuleTable& table) {
  std::set<Entry> out;
  for (const SyscallRule& r : table.rules)
    out.insert({r.syscall, Answer(r.action), !r.when.empty()});
  return out;
}

// The rows of the markdown table after `<!-- seccomp-table: NAME -->` in docs/policy.md:
// | when | syscalls | answer |; "always" opening the first cell is unconditional. Rows whose first
// cell starts with "sanitizer builds only" are returned apart.
std::pair<std::set<Entry>, std::set<Entry>> FromDocs(const std::string& name) {
  std::ifstream in(std::string(ANVIL_SOURCE_DIR) + "/docs/policy.md");
  std::string line;
  bool inside = false;
  std::set<Entry> entries, sanitizer;
  const std::regex code("`([a-z0-9_]+)`");
  while (std::getline(in, line)) {
    if (line == "<!-- seccomp-table: " + name + " -->") {
      inside = true;
      continue;
    }
    if (!inside) continue;
    if (line.empty() || line[0] != '|') {
      if (!entries.empty()) break;
      continue;
    }
    std::vector<std::string> cells;
    std::stringstream row(line.substr(1));
    std::string cell;
    while (std::getline(row, cell, '|')) {
      cell.erase(0, cell.find_first_not_of(' '));
      cell.erase(cell.find_last_not_of(' ') + 1);
      cells.push_back(cell);
    }
    if (cells.size() < 3 || cells[0] == "when" || cells[0].rfind("---", 0) == 0) continue;
    if (cells[1] == "any") continue;  // the foreign-ABI row
    // "always ..." is a row without an argument condition, also one only some filters have
    // ("always under anvil-exec-runner ...").
    const bool always = cells[0].rfind("always", 0) == 0;
    const bool sanitizer_only = cells[0].rfind("sanitizer builds only", 0) == 0;
    // Names only, not the remarks in parentheses beside them.
    const std::string names = std::regex_replace(cells[1], std::regex("\\([^)]*\\)"), "");
    for (std::sregex_iterator it(names.begin(), names.end(), code), end; it != end; ++it) {
      if (sanitizer_only) {
        sanitizer.insert({(*it)[1], cells[2], false});
      } else {
        entries.insert({(*it)[1], cells[2], !always});
      }
    }
  }
  return {entries, sanitizer};
}

// The entries of one side that the other lacks, one per line.
std::string Lacking(const std::set<Entry>& from, const std::set<Entry>& in) {
  std::string out;
  for (const Entry& e : from) {
    if (in.count(e)) continue;
    out += "  " + std::get<0>(e) + " " + std::get<1>(e) +
           (std::get<2>(e) ? " (with a condition)\n" : " (always)\n");
  }
  return out.empty() ? "  (none)\n" : out;
}

TEST(SeccompTable, DocsListExactlyTheRows) {
  std::set<Entry> command;
  for (const auto& table :
       {CommandRules(NetworkMode::kNone, true), CommandRules(NetworkMode::kNone, true, true, true),
        CommandRules(NetworkMode::kProxy, true),
        CommandRules(NetworkMode::kNone, true, true, false, /*allow_tracing=*/true)}) {
    auto rows = FromTable(table);
    command.insert(rows.begin(), rows.end());
  }
  auto [documented, none] = FromDocs("command");
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(documented, command) << "docs/policy.md's command table lists, but no row has:\n"
                                 << Lacking(documented, command) << "rows docs/policy.md lacks:\n"
                                 << Lacking(command, documented);

  std::set<Entry> observer = FromTable(RefusalObserverRules(true));
  auto [observer_documented, no_sanitizer] = FromDocs("refusal observer");
  EXPECT_TRUE(no_sanitizer.empty());
  EXPECT_EQ(observer_documented, observer)
      << "docs/policy.md's refusal observer table lists, but no row has:\n"
      << Lacking(observer_documented, observer) << "rows docs/policy.md lacks:\n"
      << Lacking(observer, observer_documented);

  std::set<Entry> host = FromTable(PluginHostRules());
  auto [host_documented, sanitizer] = FromDocs("plugin host");
  std::set<Entry> sanitizer_rows;
  for (const char* call : PluginHostSanitizerSyscalls()) {
    sanitizer_rows.insert({call, "allowed", false});
  }
  EXPECT_EQ(sanitizer, sanitizer_rows);
  if (kSanitizerRuntimeAllowances) host_documented.insert(sanitizer.begin(), sanitizer.end());
  EXPECT_EQ(host_documented, host)
      << "docs/policy.md's plugin host table lists, but no row has:\n"
      << Lacking(host_documented, host) << "rows docs/policy.md lacks:\n"
      << Lacking(host, host_documented);
}

}  // namespace
}  // namespace seccomp_table_test
}  // namespace anvil::seccomp
