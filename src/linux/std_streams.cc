#include "linux/std_streams.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

namespace anvil {
namespace {

bool Readable(const StdStreamFacts& f) { return f.access != O_WRONLY; }
bool Writable(const StdStreamFacts& f) { return f.access != O_RDONLY; }

}  // namespace

int ViewDeviceIndex(dev_t rdev) {
  for (size_t i = 0; i < std::size(kViewDevices); ++i) {
    if (major(rdev) == kViewDevices[i].major && minor(rdev) == kViewDevices[i].minor) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

bool StdStreamPlan::UsesTerminal() const {
  for (auto a : action) {
    if (a == StdStreamAction::kTerminal) return true;
  }
  return false;
}

bool StdStreamPlan::AllPass() const {
  for (auto a : action) {
    if (a != StdStreamAction::kPass && a != StdStreamAction::kClosed) return false;
  }
  return true;
}

StdStreamPlan PlanStdStreams(const std::array<StdStreamFacts, 3>& facts, bool confine) {
  StdStreamPlan plan;
  for (int fd = 0; fd < 3; ++fd) {
    const StdStreamFacts& f = facts[fd];
    StdStreamAction& action = plan.action[fd];
    if (!f.open) {
      action = StdStreamAction::kClosed;
    } else if (!confine) {
      action = StdStreamAction::kPass;
    } else if (f.terminal) {
      action = StdStreamAction::kTerminal;
    } else if (f.type == S_IFSOCK || (f.type == S_IFIFO && f.anonymous)) {
      // The inode is the pipe's or socket's own (pipefs, sockfs): no path names it, and only a
      // holder's descriptor or ptrace rights over a holder reach it.
      action = StdStreamAction::kPass;
    } else if (f.type == S_IFCHR && ViewDeviceIndex(f.rdev) >= 0) {
      action = StdStreamAction::kViewDevice;
      plan.index[fd] = ViewDeviceIndex(f.rdev);
    } else {
      const bool input = fd == 0;
      if (input ? !Readable(f) : !Writable(f)) {
        // Used against its direction (`1<file`): the same failures the command would have met
        // (EBADF), from the view's /dev/null opened with the same access, and no relay.
        action = StdStreamAction::kViewDevice;
        plan.index[fd] = 0;
        continue;
      }
      action = input ? StdStreamAction::kRelayIn : StdStreamAction::kRelayOut;
      if (f.same_as >= 0 && f.same_as < fd && plan.action[f.same_as] == action) {
        plan.index[fd] = plan.index[f.same_as];
      } else {
        plan.index[fd] = static_cast<int>(plan.relays.size());
        plan.relays.push_back({fd, input});
      }
    }
  }
  if (plan.UsesTerminal()) {
    if (plan.action[0] == StdStreamAction::kTerminal && Readable(facts[0])) plan.terminal_in = 0;
    for (int fd : {1, 2, 0}) {
      if (plan.action[fd] == StdStreamAction::kTerminal && Writable(facts[fd])) {
        plan.terminal_out = fd;
        break;
      }
    }
  }
  return plan;
}

std::string_view ToString(StdStreamAction action) {
  switch (action) {
    case StdStreamAction::kClosed:
      return "closed";
    case StdStreamAction::kPass:
      return "pass";
    case StdStreamAction::kTerminal:
      return "terminal";
    case StdStreamAction::kViewDevice:
      return "view-device";
    case StdStreamAction::kRelayIn:
      return "relay-in";
    case StdStreamAction::kRelayOut:
      return "relay-out";
  }
  return "?";
}

}  // namespace anvil
