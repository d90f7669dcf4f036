// PlanStdStreams: what the sandboxed command gets as descriptors 0-2 for every kind of caller
// descriptor (std_streams.h). Table tests; the syscalls that carry the plan out are tested
// against the kernel in tests/security (t1_sandbox_std_streams_test.cc,
// t4_sandbox_terminal_test.cc).
#include "linux/std_streams.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <string>

namespace anvil {
namespace std_streams_test {
namespace {

using A = StdStreamAction;

StdStreamFacts Closed() { return {}; }
StdStreamFacts Of(mode_t type, int access, dev_t rdev = 0) {
  StdStreamFacts f;
  f.open = true;
  f.type = type;
  f.access = access;
  f.rdev = rdev;
  return f;
}
StdStreamFacts Terminal(int access = O_RDWR) {
  auto f = Of(S_IFCHR, access, makedev(136, 3));
  f.terminal = true;
  return f;
}
StdStreamFacts Pipe(int access) {
  auto f = Of(S_IFIFO, access);
  f.anonymous = true;
  return f;
}
StdStreamFacts NamedFifo(int access) { return Of(S_IFIFO, access); }
StdStreamFacts Socket() { return Of(S_IFSOCK, O_RDWR); }
StdStreamFacts File(int access) { return Of(S_IFREG, access); }
StdStreamFacts Device(unsigned maj, unsigned min, int access) {
  return Of(S_IFCHR, access, makedev(maj, min));
}
StdStreamFacts SameAs(StdStreamFacts f, int fd) {
  f.same_as = fd;
  return f;
}

struct Row {
  std::string name;
  std::array<StdStreamFacts, 3> facts;
  std::array<A, 3> actions;
};

// Under a confining policy: every kind of descriptor a shell can hand over.
TEST(StdStreams, EachKindOfDescriptorGetsItsAction) {
  const Row rows[] = {
      {"pipes and sockets pass (cmd | less, socket activation)",
       {Pipe(O_RDONLY), Pipe(O_WRONLY), Socket()},
       {A::kPass, A::kPass, A::kPass}},
      {"an interactive terminal: all three become the pseudo-terminal",
       {Terminal(), Terminal(), Terminal()},
       {A::kTerminal, A::kTerminal, A::kTerminal}},
      {"cmd | less: stdout a pipe, stdin and stderr the terminal",
       {Terminal(), Pipe(O_WRONLY), Terminal()},
       {A::kTerminal, A::kPass, A::kTerminal}},
      {"redirections to and from files are relayed",
       {File(O_RDONLY), File(O_WRONLY), File(O_WRONLY)},
       {A::kRelayIn, A::kRelayOut, A::kRelayOut}},
      {"/dev/null, /dev/zero, /dev/full: the view's own nodes",
       {Device(1, 3, O_RDONLY), Device(1, 5, O_WRONLY), Device(1, 7, O_WRONLY)},
       {A::kViewDevice, A::kViewDevice, A::kViewDevice}},
      {"/dev/random and /dev/urandom: the view's own nodes",
       {Device(1, 8, O_RDONLY), Device(1, 9, O_RDONLY), Closed()},
       {A::kViewDevice, A::kViewDevice, A::kClosed}},
      {"a host device the view does not have (a serial port, /dev/kmsg) is relayed",
       {Device(1, 11, O_RDONLY), Device(1, 11, O_WRONLY), Of(S_IFBLK, O_WRONLY, makedev(8, 0))},
       {A::kRelayIn, A::kRelayOut, A::kRelayOut}},
      {"a named FIFO is a file-system node: relayed, not passed",
       {NamedFifo(O_RDONLY), NamedFifo(O_WRONLY), Pipe(O_WRONLY)},
       {A::kRelayIn, A::kRelayOut, A::kPass}},
      {"a directory, or an inode of no file type (an anon inode), is relayed; a directory as "
       "stderr is read-only: /dev/null read-only (writes fail with EBADF, as they did)",
       {Of(S_IFDIR, O_RDONLY), Of(0, O_WRONLY), Of(S_IFDIR, O_RDONLY)},
       {A::kRelayIn, A::kRelayOut, A::kViewDevice}},
      {"closed descriptors stay closed",
       {Closed(), Closed(), Closed()},
       {A::kClosed, A::kClosed, A::kClosed}},
  };
  for (const auto& row : rows) {
    auto plan = PlanStdStreams(row.facts, /*confine=*/true);
    for (int fd = 0; fd < 3; ++fd) {
      EXPECT_EQ(plan.action[fd], row.actions[fd])
          << row.name << ": fd " << fd << " got " << ToString(plan.action[fd]);
    }
  }
}

// A character device numbered like a terminal that is not one (isatty false) is not a terminal;
// one that is (a serial port) is, whatever its number.
TEST(StdStreams, TerminalIsWhatIsattySaysNotTheDeviceNumber) {
  auto serial = Device(4, 64, O_RDWR);
  serial.terminal = true;
  auto plan = PlanStdStreams({serial, Device(136, 3, O_WRONLY), Closed()}, true);
  EXPECT_EQ(plan.action[0], A::kTerminal);
  EXPECT_EQ(plan.action[1], A::kRelayOut);
}

TEST(StdStreams, ViewDevicesAreOpenedWithTheCallersAccess) {
  auto plan =
      PlanStdStreams({Device(1, 3, O_RDONLY), Device(1, 9, O_RDWR), Device(1, 7, O_WRONLY)}, true);
  EXPECT_EQ(plan.index[0], 0);
  EXPECT_STREQ(kViewDevices[plan.index[0]].path, "/dev/null");
  EXPECT_STREQ(kViewDevices[plan.index[1]].path, "/dev/urandom");
  EXPECT_STREQ(kViewDevices[plan.index[2]].path, "/dev/full");
  EXPECT_TRUE(plan.relays.empty());
  EXPECT_FALSE(plan.UsesTerminal());
}

// Without a confining policy (danger-full-access, external-sandbox) the command can reach every
// host object by its path: the caller's descriptors pass as they are, terminals included.
TEST(StdStreams, WithoutConfinementEverythingPasses) {
  auto plan = PlanStdStreams({Terminal(), File(O_WRONLY), Device(1, 3, O_WRONLY)}, false);
  EXPECT_EQ(plan.action, (std::array<A, 3>{A::kPass, A::kPass, A::kPass}));
  EXPECT_TRUE(plan.AllPass());
  EXPECT_FALSE(plan.UsesTerminal());
  auto closed = PlanStdStreams({Closed(), File(O_WRONLY), Closed()}, false);
  EXPECT_EQ(closed.action[0], A::kClosed);
  EXPECT_TRUE(closed.AllPass());
}

// The bench and CI run with /dev/null and pipes: nothing is relayed for them.
TEST(StdStreams, NullAndPipesNeedNoRelay) {
  auto plan = PlanStdStreams({Device(1, 3, O_RDONLY), Pipe(O_WRONLY), Pipe(O_WRONLY)}, true);
  EXPECT_TRUE(plan.relays.empty());
  EXPECT_FALSE(plan.UsesTerminal());
  EXPECT_FALSE(plan.AllPass());  // /dev/null still becomes the view's own node
  auto pipes = PlanStdStreams({Pipe(O_RDONLY), Pipe(O_WRONLY), Socket()}, true);
  EXPECT_TRUE(pipes.AllPass());
}

// `> file 2>&1`: one open file description, one relay, so the order of the writes is kept.
// `> a 2> b` (or `>f 2>f`, two descriptions): two relays.
TEST(StdStreams, DuplicatesOfOneDescriptionShareOneRelay) {
  auto shared = PlanStdStreams({Pipe(O_RDONLY), File(O_WRONLY), SameAs(File(O_WRONLY), 1)}, true);
  ASSERT_EQ(shared.relays.size(), 1u);
  EXPECT_EQ(shared.index[1], shared.index[2]);
  EXPECT_EQ(shared.relays[0].caller_fd, 1);
  EXPECT_FALSE(shared.relays[0].input);

  auto separate = PlanStdStreams({Pipe(O_RDONLY), File(O_WRONLY), File(O_WRONLY)}, true);
  ASSERT_EQ(separate.relays.size(), 2u);
  EXPECT_NE(separate.index[1], separate.index[2]);
  EXPECT_EQ(separate.relays[1].caller_fd, 2);

  // `<>file 2>&0`: one description used in two directions: two relays, one each way.
  auto both = PlanStdStreams({File(O_RDWR), Pipe(O_WRONLY), SameAs(File(O_RDWR), 0)}, true);
  ASSERT_EQ(both.relays.size(), 2u);
  EXPECT_TRUE(both.relays[both.index[0]].input);
  EXPECT_FALSE(both.relays[both.index[2]].input);
}

// A descriptor used against its direction (`1<file`, `0>file`) gets the failures it would have
// met (EBADF on write/read) from /dev/null opened the same way, not a relay.
TEST(StdStreams, ADescriptorAgainstItsDirectionGetsNullWithTheSameAccess) {
  auto plan = PlanStdStreams({File(O_WRONLY), File(O_RDONLY), File(O_RDWR)}, true);
  EXPECT_EQ(plan.action[0], A::kViewDevice);
  EXPECT_EQ(plan.action[1], A::kViewDevice);
  EXPECT_EQ(plan.index[0], 0);
  EXPECT_EQ(plan.index[1], 0);
  EXPECT_EQ(plan.action[2], A::kRelayOut);
  ASSERT_EQ(plan.relays.size(), 1u);
  EXPECT_EQ(plan.relays[0].caller_fd, 2);
}

// Which of the caller's descriptors the user types on and the pseudo-terminal's output goes to.
TEST(StdStreams, TerminalInputAndOutputDescriptors) {
  struct Case {
    std::string name;
    std::array<StdStreamFacts, 3> facts;
    int in, out;
  };
  const Case cases[] = {
      {"all three", {Terminal(), Terminal(), Terminal()}, 0, 1},
      {"cmd | less", {Terminal(), Pipe(O_WRONLY), Terminal()}, 0, 2},
      {"cmd > out 2> err: the echo of typed input goes back to the terminal on 0",
       {Terminal(O_RDWR), File(O_WRONLY), File(O_WRONLY)},
       0,
       0},
      {"a read-only terminal on 0 and nothing else: typed input, no output",
       {Terminal(O_RDONLY), Pipe(O_WRONLY), Pipe(O_WRONLY)},
       0,
       -1},
      {"echo x | cmd: output only", {Pipe(O_RDONLY), Terminal(), Terminal()}, -1, 1},
      {"a write-only terminal on 0 is not typed on",
       {Terminal(O_WRONLY), Pipe(O_WRONLY), Closed()},
       -1,
       0},
  };
  for (const auto& c : cases) {
    auto plan = PlanStdStreams(c.facts, true);
    EXPECT_TRUE(plan.UsesTerminal()) << c.name;
    EXPECT_EQ(plan.terminal_in, c.in) << c.name;
    EXPECT_EQ(plan.terminal_out, c.out) << c.name;
  }
  auto none = PlanStdStreams({Pipe(O_RDONLY), File(O_WRONLY), Closed()}, true);
  EXPECT_EQ(none.terminal_in, -1);
  EXPECT_EQ(none.terminal_out, -1);
}

TEST(StdStreams, ViewDeviceIndexKnowsOnlyTheViewsMemoryDevices) {
  EXPECT_EQ(ViewDeviceIndex(makedev(1, 3)), 0);
  EXPECT_EQ(ViewDeviceIndex(makedev(1, 9)), 4);
  for (auto other : {makedev(1, 1) /* mem */, makedev(1, 4) /* port */, makedev(1, 11) /* kmsg */,
                     makedev(5, 0) /* tty */, makedev(5, 2) /* ptmx */, makedev(136, 0)}) {
    EXPECT_EQ(ViewDeviceIndex(other), -1) << major(other) << ":" << minor(other);
  }
}

}  // namespace
}  // namespace std_streams_test
}  // namespace anvil
