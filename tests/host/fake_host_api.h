// A HostApi that records calls and answers from a script: for testing runtimes without
// processes.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "host/runtime.h"

namespace anvil::host::testing {

class FakeHostApi : public HostApi {
 public:
  struct Call {
    std::string op;
    std::vector<std::string> args;
  };
  std::vector<Call> calls;
  std::vector<std::pair<std::string, std::string>> logs;
  // op -> handler; default: ok with no fields.
  std::map<std::string,
           std::function<Result<std::vector<std::string>>(const std::vector<std::string>&)>>
      handlers;

  Result<std::vector<std::string>> Gateway(const std::string& op,
                                           std::vector<std::string> args) override {
    return Handle(op, std::move(args));
  }
  Result<std::vector<std::string>> Editor(const std::string& op,
                                          std::vector<std::string> args) override {
    return Handle(op, std::move(args));
  }
  void Log(std::string_view level, std::string_view text) override {
    logs.emplace_back(std::string(level), std::string(text));
  }

 private:
  Result<std::vector<std::string>> Handle(const std::string& op, std::vector<std::string> args) {
    calls.push_back({op, args});
    if (auto it = handlers.find(op); it != handlers.end()) return it->second(args);
    return std::vector<std::string>{};
  }
};

}  // namespace anvil::host::testing
