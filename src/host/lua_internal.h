// The Lua runtime's parts, private to src/host/: the runtime object and what its files share.
//   lua_runtime.cc   lifecycle: create the state, load the plugin, run a command, describe an
//                    error (with its trace), destroy
//   lua_budget.cc    instructions, memory and the deadline: the allocator, the count hook, and
//                    the error boundaries a spent budget must cross
//   lua_values.cc    JSON <-> Lua values, errors raised into the plugin, read-only tables
//   lua_bindings.cc  the globals a plugin sees: anvil, sys and editor (from the op table in
//                    policy/plugin_api), print, require and the reduced base library
#pragma once

#include <lauxlib.h>
#include <lua.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "host/runtime.h"
#include "ipc/plugin_trace.h"

namespace anvil::host::lua {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// The instruction budget is charged ahead, per thread (lua_budget.cc): a thread's count hook
// interval is paid for when it is set, starting at kFirstHookEvery instructions for a thread
// and doubling at each hook call up to kHookEvery.
inline constexpr int kHookEvery = 1000;     // instructions between count-hook calls, at most
inline constexpr int kFirstHookEvery = 64;  // a thread's first interval
inline constexpr int kMaxJsonDepth = 64;
inline constexpr char kCommandsKey[] = "anvil.commands";
inline constexpr char kModulesKey[] = "anvil.modules";  // name -> source (not yet loaded)
inline constexpr char kLoadedKey[] = "anvil.loaded";    // name -> value returned by the module
inline constexpr char kProtectedKey[] = "anvil.protected";

class LuaRuntime : public Runtime {
 public:
  enum Message { kInstructionsMessage, kDeadlineMessage, kMemoryMessage, kMessageCount };

  LuaRuntime(HostApi& api, const RuntimeLimits& limits, std::string settings_json)
      : api_(api), limits_(limits), settings_json_(std::move(settings_json)) {}
  ~LuaRuntime() override {
    if (L_) lua_close(L_);
  }

  Status Init();
  Status Load(const PluginSource& source) override;
  std::vector<std::string> Commands() const override { return commands_; }
  Result<std::string> RunCommand(const std::string& name, const std::string& args_json) override;

  HostApi& api() { return api_; }
  uint64_t memory_budget() const { return limits_.memory_bytes; }
  void AddCommand(const std::string& name) {
    for (const auto& c : commands_) {
      if (c == name) return;
    }
    commands_.push_back(name);
  }

  static void* Alloc(void* ud, void* ptr, size_t osize, size_t nsize);
  static void Hook(lua_State* L, lua_Debug* ar);

  bool Spent() const { return instructions_spent_ || deadline_passed_ || memory_spent_; }
  // Raises the spent budget's error in `L` (allocating nothing: the message strings were made
  // at Init), after switching L's hook to every instruction. From a C function (not the hook,
  // which runs in the frame of the Lua function it interrupted), whose stack it drops first.
  [[noreturn]] void RaiseSpent(lua_State* L, bool in_hook = false);
  // Before anything that reaches the host: raises unless a command runs within its budget.
  void Admit(lua_State* L);
  // Before a coroutine runs (resume, a wrap function, close): a thread not yet paid for in
  // this budget (a new one, or one from an earlier budget) gets the hook and its first
  // interval, paid for. May spend the budget (the caller raises).
  void PrepareThread(lua_State* co);
  // The message handler of every protected run: records where the error was raised and the
  // stack above it (bounded; allocates nothing in the VM and runs no plugin code).
  void CaptureTrace(lua_State* L);
  // The plugin file a chunk name ("@lib/util.lua") stands for, or nullptr.
  const std::string* PluginFile(std::string_view chunk_source) const;

 private:
  // The spent budgets' messages, made at Init (RaiseSpent must not allocate).
  Status MakeSpentMessages();
  void StartBudget();
  // Charges `interval` instructions ahead (fewer when less is left) and makes them L's count
  // hook interval, checking the deadline and the CPU time too; when nothing is left, or
  // another budget is spent, the budget is spent and L's hook fires at its next instruction.
  // `in_hook`: called from L's count hook, whose count Lua has just reset.
  void Prepay(lua_State* L, int interval, bool in_hook);
  // L's current interval was paid for in this budget (the main thread's at StartBudget).
  bool Prepaid(lua_State* L) const;
  Error ErrorFromLua(int status);
  Status RunProtected(int nargs, int nresults);
  // The error value on top of the stack as text: a string as is; a table as a bounded rendering
  // of its raw fields (no metamethod runs: a __tostring would be plugin code outside a budget).
  std::string DescribeErrorValue();

  HostApi& api_;
  RuntimeLimits limits_;
  std::string settings_json_;
  lua_State* L_ = nullptr;
  size_t used_ = 0;
  bool memory_spent_ = false;
  int64_t instructions_left_ = 0;
  bool instructions_spent_ = false;
  bool deadline_passed_ = false;
  bool budget_active_ = false;  // plugin code is running under a budget (RunProtected)
  // Numbers the budgets (StartBudget); a thread's Lua extra space holds the number of the
  // budget that paid its interval. 0 is none: a new thread copies the main thread's, 0.
  uintptr_t budget_number_ = 0;
  Clock::time_point deadline_;
  ipc::CpuWatch cpu_;  // the instruction budget's CPU-time equivalent (ipc/cpu_budget.h)
  int messages_[kMessageCount] = {LUA_NOREF, LUA_NOREF, LUA_NOREF};  // registry refs
  std::vector<std::string> commands_;
  std::map<std::string, std::string, std::less<>> files_;  // plugin file -> its code
  ipc::PluginTrace trace_;  // of the error being raised (CaptureTrace)
};

// The runtime of `L`: the allocator's user data.
inline LuaRuntime* Self(lua_State* L) {
  void* ud = nullptr;
  lua_getallocf(L, &ud);
  return static_cast<LuaRuntime*>(ud);
}

// ---- lua_budget.cc ----------------------------------------------------------------------

// Replaces load, pcall, xpcall, setmetatable and coroutine.resume/close/wrap in the global
// table at `g` with the versions a spent budget cannot be caught by.
void InstallBudgetGuards(lua_State* L, int g);

// Every binding that reaches the host: refused once the budget is spent or outside a command.
template <lua_CFunction F>
int Api(lua_State* L) {
  Self(L)->Admit(L);
  return F(L);
}

// ---- lua_values.cc ----------------------------------------------------------------------

// Raises "code: text" exactly: no "chunk:line:" position in front (luaL_error would add the
// caller's), so `err:match("^(%w+):")` finds the code as the API documents.
[[noreturn]] void Raise(lua_State* L, std::string_view code, std::string_view text);
// "invalid: ... is not valid UTF-8 (at byte N)" when `text` is not, for strings that must be
// text: a name (path, program, URL, header) is refused rather than changed.
void RequireUtf8(lua_State* L, std::string_view text, std::string_view what);

void PushJson(lua_State* L, const json& v, int depth);
// The value at `index` as JSON, charged to a ConvertBudget (convert_budget.h) as it is built:
// "limit: <what> is over the cap ..." when it is too large. `what` names the value.
json ToJson(lua_State* L, int index, std::string_view what);
std::string DumpJson(const json& v);

// Wraps the table on top of the stack in a read-only proxy and records both as protected.
// `iterable`: pairs() and # see the real table's contents: data tables such as anvil.settings,
// and the API's own tables (`for name in pairs(sys.fs)` lists its functions; every value it
// yields is a function or another proxy, never a real table).
void LockTable(lua_State* L, bool iterable = true);
// anvil.settings from the json (argument 1, light userdata) as read-only tables all the way
// down; run protected (it may run out of memory).
int PushSettingsProtected(lua_State* L);

// ---- lua_bindings.cc --------------------------------------------------------------------

// "lib.util" -> "lib/util.lua": the file a module name was read from (host/plugin_host.cc).
std::string ModuleFile(std::string name);

// Into the global table at `g`: print, warn, rawset, collectgarbage, require, os.time/clock,
// string without dump, and the read-only anvil (with `settings_json` as anvil.settings), sys
// and editor tables.
Status InstallPluginApi(lua_State* L, int g, const std::string& settings_json);

}  // namespace anvil::host::lua
