// The report record: what the sandbox's init and command processes tell the supervisor
// (sandbox_launch.h), one fixed-size record per pipe write.
#pragma once

#include <limits.h>

#include <cstdint>
#include <string>

namespace anvil::launch {

// Messages from the sandbox's init and command processes to the supervisor, one pipe write
// each (smaller than PIPE_BUF, so never interleaved).
enum RecordKind : uint32_t {
  kSetupError = 1,
  kExecError = 2,
  kExitStatus = 3,
  kLayers = 4,
  kCallTaken = 5,  // warm start: init holds the call; the deadline starts now
  // With a pseudo-terminal: the command stopped (^Z), and anvil stops with it.
  kCommandStopped = 6,
  // With a pseudo-terminal: the command reached for it; anvil relays the user's keys from now on.
  kTerminalTaken = 7,
  kRefusal = 8,          // message: EncodeRefusal
  kRefusalsDropped = 9,  // value: refusals seen past the observer's cap
  // message: the address of a loopback hint (kRefusal) a later connect found bound after all
  kRefusalWithdrawn = 10,
};
struct Record {
  uint32_t kind;
  int32_t value;
  int32_t err;
  uint32_t layers;
  char message[240];
};
static_assert(sizeof(Record) <= PIPE_BUF);

enum LayerBits : uint32_t {
  kBitUserNs = 1 << 0,
  kBitPidNs = 1 << 1,
  kBitMountNs = 1 << 2,
  kBitNetNs = 1 << 3,
  kBitSeccomp = 1 << 4,
  kBitNoNewPrivs = 1 << 5,
  kBitSubreaper = 1 << 6,
  kBitLandlockNet = 1 << 7,
  kBitLandlockScoped = 1 << 8,
  kBitProcessLimit = 1 << 9,
  kBitRefusalObserver = 1 << 10,
  // bits 16..23: Landlock ABI applied
};

void SendRecord(int fd, RecordKind kind, int value, int err, const std::string& message,
                uint32_t layers = 0);

}  // namespace anvil::launch
