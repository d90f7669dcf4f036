// The warm call's wire format (sandbox_launch.h, LaunchSpec::call_channel and SendWarmCall):
// what the caller sends a warm sandbox's init, and the checks init makes of what it reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/result.h"

namespace anvil::launch {

// The wire form of a WarmCall: a fixed header (carrying the two descriptors), then the strings,
// each NUL-terminated: argv, then the readable paths.
struct WarmCallHeader {
  uint32_t magic;
  uint32_t argc;
  uint32_t plan_strings;  // two per read plan op (EncodeReadPlan)
  uint32_t runtime_files;
  uint32_t body_bytes;
};
constexpr uint32_t kWarmCallMagic = 0x414e5644;  // "ANVD"
constexpr uint32_t kMaxWarmCallBody = 16u << 20;

// Reads exactly `n` bytes of the call: an error when the call is cut short.
Status ReadExactly(int fd, char* into, size_t n);
// A runtime file named by the call: an absolute, plain path (the view shows it at that path).
Status ValidateRuntimeFile(const std::string& path);

}  // namespace anvil::launch
