// The budget of one conversion of a plugin value into host data (JSON), which happens outside
// the VM's metered allocator: a command's result, sys.exec args, sys.net.fetch headers,
// editor.buffer.edit edits. The VM can hold a value cheaply that is huge as data (a table
// referenced many times is copied once per reference; one that doubles at each level expands
// exponentially), so the conversion is charged node by node AS it builds, and stops at the
// first node over either bound:
//  - its size as JSON text: at most one message to Anvil (ipc::kMaxFrameBytes); a value over
//    it could not be sent anyway. Counted low (escapes and number digits are not), so a value
//    that fits in a message always converts;
//  - the host memory the converted tree takes, estimated per node on the high side: at most
//    the VM's memory budget.
// Pure: the runtimes raise "limit: <Why()>" when a Charge fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace anvil::host {

class ConvertBudget {
 public:
  // Per-node estimates of the host memory a json tree takes (a json is 16 bytes; a string or
  // an object member is a separate allocation; a vector may hold twice its size).
  static constexpr uint64_t kScalarHostBytes = 32;
  static constexpr uint64_t kStringHostBytes = 64;
  static constexpr uint64_t kKeyHostBytes = 96;
  static constexpr uint64_t kContainerHostBytes = 64;

  ConvertBudget(uint64_t text_cap, uint64_t host_cap) : text_cap_(text_cap), host_cap_(host_cap) {}

  // null, a boolean or a number.
  bool Scalar() { return Charge(2, kScalarHostBytes); }
  // A string value of `len` bytes: quotes and a separator as JSON.
  bool String(size_t len) { return Charge(uint64_t{len} + 3, kStringHostBytes + len); }
  // An object member's key (its value is charged on its own): quotes and a colon.
  bool Key(size_t len) { return Charge(uint64_t{len} + 3, kKeyHostBytes + len); }
  // An array or an object: brackets and a separator.
  bool Container() { return Charge(3, kContainerHostBytes); }

  bool spent() const { return over_text_ || over_host_; }
  uint64_t text_bytes() const { return text_; }
  uint64_t host_bytes() const { return host_; }

  // Why a Charge failed, for "limit: ...": `what` names the value ("the command's result").
  std::string Why(std::string_view what) const {
    std::string out(what);
    if (over_text_) {
      out += " is over the cap of " + std::to_string(text_cap_) +
             " bytes for one message to Anvil (counted as JSON while converting it; a table "
             "referenced many times counts once per reference)";
    } else {
      out += " takes more than " + std::to_string(host_cap_) +
             " bytes of host memory to convert (the VM's memory budget; a table referenced many "
             "times is copied once per reference)";
    }
    return out;
  }

 private:
  bool Charge(uint64_t text, uint64_t host) {
    if (spent()) return false;
    text_ += text;
    host_ += host;
    over_text_ = text_ > text_cap_;
    over_host_ = !over_text_ && host_ > host_cap_;
    return !spent();
  }

  uint64_t text_cap_;
  uint64_t host_cap_;
  uint64_t text_ = 0;
  uint64_t host_ = 0;
  bool over_text_ = false;
  bool over_host_ = false;
};

}  // namespace anvil::host
