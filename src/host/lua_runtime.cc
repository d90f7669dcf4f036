// Lua 5.4 plugin runtime. Only an explicit allowlist of the standard library is opened:
// base (no dofile/loadfile; load is text-only; rawset refuses Anvil's tables; print/warn go to
// the plugin log), string (no dump), table, math, utf8, coroutine, and os.time/os.clock.
// Budgets: instructions via a count hook, memory via the allocator, wall clock in the hook.
// Once one is spent the whole VM is spent for the rest of the command (one flag per VM, not
// per thread), and every way plugin code could go on is closed:
//  - the hook is per thread in Lua 5.4 (a coroutine copies its creator's at creation): every
//    hook call raises once spent, and a thread that sees it switches to a hook on every
//    instruction; coroutine.resume/wrap/close give a thread that lacks the hook one first;
//  - pcall, xpcall, coroutine.resume/wrap/close and load (whose reader runs protected) are
//    wrapped: they refuse to start once spent and re-raise when spent on return, so no Lua
//    error boundary can catch the budget (a wrapped pcall keeps Lua's yield-across-pcall);
//  - xpcall's message handler runs inside the hook that raised, where Lua runs no hook at all:
//    once spent the plugin's handler is not called;
//  - every binding that reaches the host (sys.*, editor.*, print, warn) refuses once spent,
//    and outside a command: a C function can be called with no Lua instruction in between
//    (a __close or __index metamethod, a message handler);
//  - __gc is refused at setmetatable: finalizers run with hooks off, at any allocation and at
//    lua_close, i.e. outside every budget.
//
// Lua is compiled as C++ (cmake/ThirdParty.cmake): lua_error unwinds with an exception, so the
// destructors of the C++ objects in these bindings run when a plugin error crosses them.
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "fs/workspace_path.h"
#include "host/api_codec.h"
#include "host/runtime.h"
#include "ipc/plugin_trace.h"
#include "policy/plugin_api.h"

namespace anvil::host {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr int kHookEvery = 1000;  // instructions between count-hook calls
constexpr int kMaxJsonDepth = 64;
const char kCommandsKey[] = "anvil.commands";
const char kModulesKey[] = "anvil.modules";  // name -> source (not yet loaded)
const char kLoadedKey[] = "anvil.loaded";    // name -> value returned by the module
const char kProtectedKey[] = "anvil.protected";

class LuaRuntime;
LuaRuntime* Self(lua_State* L);

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
  // Gives a thread about to run the hook it must have (one made outside a budget has none).
  void PrepareThread(lua_State* co);
  // The message handler of every protected run: records where the error was raised and the
  // stack above it (bounded; allocates nothing in the VM and runs no plugin code).
  void CaptureTrace(lua_State* L);
  // The plugin file a chunk name ("@lib/util.lua") stands for, or nullptr.
  const std::string* PluginFile(std::string_view chunk_source) const;

 private:
  void StartBudget();
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
  Clock::time_point deadline_;
  int messages_[kMessageCount] = {LUA_NOREF, LUA_NOREF, LUA_NOREF};  // registry refs
  std::vector<std::string> commands_;
  std::map<std::string, std::string, std::less<>> files_;  // plugin file -> its code
  ipc::PluginTrace trace_;  // of the error being raised (CaptureTrace)
};

LuaRuntime* Self(lua_State* L) {
  void* ud = nullptr;
  lua_getallocf(L, &ud);
  return static_cast<LuaRuntime*>(ud);
}

void* LuaRuntime::Alloc(void* ud, void* ptr, size_t osize, size_t nsize) {
  auto* self = static_cast<LuaRuntime*>(ud);
  size_t old = ptr ? osize : 0;
  if (nsize == 0) {
    std::free(ptr);
    self->used_ -= old;
    return nullptr;
  }
  // Lua requires shrinking to succeed; growth past the budget fails, and keeps failing.
  if (nsize > old &&
      (self->memory_spent_ || self->used_ - old + nsize > self->limits_.memory_bytes)) {
    self->memory_spent_ = true;
    return nullptr;
  }
  void* p = std::realloc(ptr, nsize);
  if (!p) return nullptr;
  self->used_ = self->used_ - old + nsize;
  return p;
}

void LuaRuntime::Hook(lua_State* L, lua_Debug*) {
  LuaRuntime* self = Self(L);
  if (!self->budget_active_) {
    // A thread that kept its hook from an earlier command, running outside any: cannot happen
    // (no plugin code runs between commands), and must not count against the next budget.
    lua_sethook(L, nullptr, 0, 0);
    return;
  }
  if (!self->Spent()) {
    // The hook count is per thread: one left at 1 by an earlier spent command is charged 1 and
    // put back to the normal interval.
    const int count = lua_gethookcount(L);
    self->instructions_left_ -= count;
    if (self->instructions_left_ <= 0) self->instructions_spent_ = true;
    if (Clock::now() >= self->deadline_) self->deadline_passed_ = true;
    if (!self->Spent()) {
      if (count != kHookEvery) lua_sethook(L, Hook, LUA_MASKCOUNT, kHookEvery);
      return;
    }
  }
  self->RaiseSpent(L, /*in_hook=*/true);
}

void LuaRuntime::RaiseSpent(lua_State* L, bool in_hook) {
  // From now on every instruction of this thread fails, so not even the unwinding runs one.
  lua_sethook(L, Hook, LUA_MASKCOUNT, 1);
  // A slot for the message without growing the stack: Lua gives a hook LUA_MINSTACK free
  // slots; a C function may have used all of its own, and drops them (the error unwinds its
  // frame anyway).
  if (!in_hook) lua_settop(L, 0);
  Message m = instructions_spent_ ? kInstructionsMessage
              : deadline_passed_  ? kDeadlineMessage
                                  : kMemoryMessage;
  lua_rawgeti(L, LUA_REGISTRYINDEX, messages_[m]);
  lua_error(L);
  std::abort();  // lua_error does not return
}

void LuaRuntime::Admit(lua_State* L) {
  if (budget_active_ && !Spent() && Clock::now() >= deadline_) deadline_passed_ = true;
  if (Spent()) RaiseSpent(L);
  if (!budget_active_) {
    lua_settop(L, 0);
    lua_pushliteral(L, "denied: the plugin API is not available outside a command");
    lua_error(L);
  }
}

void LuaRuntime::PrepareThread(lua_State* co) {
  if (co != nullptr && lua_gethook(co) != Hook) lua_sethook(co, Hook, LUA_MASKCOUNT, kHookEvery);
}

void LuaRuntime::StartBudget() {
  instructions_left_ = static_cast<int64_t>(limits_.instructions);
  instructions_spent_ = false;
  deadline_passed_ = false;
  deadline_ = Clock::now() + limits_.deadline;
  lua_sethook(L_, Hook, LUA_MASKCOUNT, kHookEvery);
  if (memory_spent_) {
    memory_spent_ = false;
    lua_gc(L_, LUA_GCCOLLECT);
  }
}

Error LuaRuntime::ErrorFromLua(int status) {
  if (instructions_spent_) return Error{"limit", "instruction budget exhausted", 0};
  if (deadline_passed_) return Error{"timeout", "command passed its deadline", 0};
  if (memory_spent_ || status == LUA_ERRMEM) return Error{"limit", "memory budget exhausted", 0};
  std::string message = DescribeErrorValue();
  lua_pop(L_, 1);
  // The position Lua put in front of the message ("lib/util.lua:3: ...": a syntax error, or
  // error(msg, level)) is the one the runtime gives: it wins over the first frame of the stack.
  if (const auto colon = message.find(':'); colon != std::string::npos && colon > 0) {
    const std::string* file = PluginFile("@" + message.substr(0, colon));
    size_t end = colon + 1;
    int line = 0;
    while (end < message.size() && end < colon + 10 && message[end] >= '0' && message[end] <= '9') {
      line = line * 10 + (message[end++] - '0');
    }
    if (file && line > 0 && end < message.size() && message[end] == ':') {
      trace_.file = *file;
      trace_.line = line;
      trace_.note.clear();
    }
  }
  std::string trace;
  if (!trace_.file.empty()) {
    trace_.source = ipc::SourceLine(files_.find(trace_.file)->second, trace_.line);
  }
  trace = ipc::EncodePluginTrace(trace_);
  // Keep an Anvil code the plugin re-raised ("denied: ..."), else it is a plugin error.
  static constexpr const char* kCodes[] = {"denied",    "invalid", "not_found", "limit", "timeout",
                                           "cancelled", "stale",   "busy",      "io"};
  for (const char* code : kCodes) {
    std::string prefix = std::string(code) + ": ";
    auto at = message.find(prefix);
    // luaL_error prefixes "chunk:line: "; the code follows it.
    if (at != std::string::npos &&
        (at == 0 || (at >= 2 && message.compare(at - 2, 2, ": ") == 0))) {
      return Error{code, message.substr(at + prefix.size()), 0, trace};
    }
  }
  return Error{"error", message, 0, trace};
}

std::string LuaRuntime::DescribeErrorValue() {
  const int type = lua_type(L_, -1);
  if (type == LUA_TSTRING || type == LUA_TNUMBER) {
    // A number is converted in place; the value is popped right after.
    size_t len = 0;
    const char* s = lua_tolstring(L_, -1, &len);
    return s ? std::string(s, len) : std::string();
  }
  if (type == LUA_TNIL) return "error object is nil";
  if (type != LUA_TTABLE) return std::string("error object is a ") + luaL_typename(L_, -1);
  std::string out = "error object is a table: {";
  if (!lua_checkstack(L_, 3)) return out + "...}";
  const int table = lua_absindex(L_, -1);
  int shown = 0;
  lua_pushnil(L_);
  while (lua_next(L_, table) != 0) {
    if (shown == 8 || out.size() > 200) {
      lua_pop(L_, 2);
      out += ", ...";
      break;
    }
    out += shown++ == 0 ? "" : ", ";
    // Keys and values read without converting them (lua_tolstring on a key would break
    // lua_next, and on a table would need a metamethod).
    for (int idx : {-2, -1}) {
      switch (lua_type(L_, idx)) {
        case LUA_TSTRING: {
          size_t len = 0;
          const char* s = lua_tolstring(L_, idx, &len);
          std::string text(s, std::min<size_t>(len, 64));
          out += idx == -2 ? text : "\"" + text + (len > 64 ? "...\"" : "\"");
          break;
        }
        case LUA_TNUMBER:
          out += lua_isinteger(L_, idx) ? std::to_string(lua_tointeger(L_, idx))
                                        : std::to_string(lua_tonumber(L_, idx));
          break;
        case LUA_TBOOLEAN:
          out += lua_toboolean(L_, idx) ? "true" : "false";
          break;
        default:
          out += std::string("<") + luaL_typename(L_, idx) + ">";
      }
      if (idx == -2) out += " = ";
    }
    lua_pop(L_, 1);
  }
  return out + "}";
}

const std::string* LuaRuntime::PluginFile(std::string_view chunk_source) const {
  if (!chunk_source.starts_with("@")) return nullptr;
  auto it = files_.find(chunk_source.substr(1));
  return it == files_.end() ? nullptr : &it->first;
}

void LuaRuntime::CaptureTrace(lua_State* L) {
  lua_Debug ar;
  for (int level = 1; lua_getstack(L, level, &ar); ++level) {
    if (level > 64) break;  // a deep recursion: the innermost frames are the ones shown
    if (lua_getinfo(L, "Slnt", &ar) == 0) break;
    const bool is_c = ar.what != nullptr && std::strcmp(ar.what, "C") == 0;
    if (is_c && ar.name == nullptr) continue;
    if (trace_.stack.size() == ipc::kMaxTraceFrames) {
      trace_.stack_truncated = true;
      break;
    }
    std::string frame = is_c ? std::string("[C]") : std::string(ar.short_src);
    if (!is_c && ar.currentline > 0) frame += ":" + std::to_string(ar.currentline);
    frame += ": in ";
    if (ar.what != nullptr && std::strcmp(ar.what, "main") == 0) {
      frame += "main chunk";
    } else if (ar.name != nullptr) {
      frame += std::string(ar.namewhat != nullptr && *ar.namewhat ? ar.namewhat : "function") +
               " '" + ipc::CapUtf8(ar.name, 64) + "'";
    } else {
      frame +=
          "function <" + std::string(ar.short_src) + ":" + std::to_string(ar.linedefined) + ">";
    }
    trace_.stack.push_back(ipc::CapUtf8(frame, ipc::kMaxTraceFrameBytes));
    // As Lua's own traceback: a tail call replaced the frames in between.
    if (ar.istailcall && trace_.stack.size() < ipc::kMaxTraceFrames) {
      trace_.stack.push_back("(...tail calls...)");
    }
    if (trace_.file.empty() && !is_c && ar.currentline > 0) {
      if (const std::string* file = PluginFile(ar.source)) {
        trace_.file = *file;
        trace_.line = ar.currentline;
      }
    }
  }
}

// lua_pcall's message handler: the stack of the error is only there while it runs.
int TraceHandler(lua_State* L) {
  LuaRuntime* self = Self(L);
  // A spent budget reports its code without a trace (and must not allocate: memory may be
  // the budget that is spent).
  if (!self->Spent()) self->CaptureTrace(L);
  return 1;
}

Status LuaRuntime::RunProtected(int nargs, int nresults) {
  trace_ = {};
  // The handler goes below the function; lua_pcall leaves it there.
  const int handler = lua_gettop(L_) - nargs;
  lua_pushcfunction(L_, TraceHandler);
  lua_insert(L_, handler);
  budget_active_ = true;
  int status = lua_pcall(L_, nargs, nresults, handler);
  budget_active_ = false;
  lua_sethook(L_, nullptr, 0, 0);
  lua_remove(L_, handler);
  if (status != LUA_OK) {
    Error e = ErrorFromLua(status);
    lua_settop(L_, 0);
    return tl::unexpected(e);
  }
  // Spent without an error reaching here (Lua itself absorbs some failed allocations, e.g. a
  // string table that could not grow): the budget is still what the call reports.
  if (Spent()) return tl::unexpected(ErrorFromLua(status));
  return Ok();
}

// ---- errors raised into the plugin --------------------------------------------------------

// Raises "code: text" exactly: no "chunk:line:" position in front (luaL_error would add the
// caller's), so `err:match("^(%w+):")` finds the code as the API documents.
[[noreturn]] void Raise(lua_State* L, std::string_view code, std::string_view text) {
  std::string message;
  message.append(code).append(": ").append(text);
  lua_pushlstring(L, message.data(), message.size());
  message.clear();
  message.shrink_to_fit();
  lua_error(L);
  std::abort();  // lua_error does not return
}

// "invalid: ... is not valid UTF-8 (at byte N)" when `text` is not, for strings that must be
// text: a name (path, program, URL, header) is refused rather than changed.
void RequireUtf8(lua_State* L, std::string_view text, std::string_view what) {
  if (auto bad = FirstInvalidUtf8Byte(text)) {
    Raise(L, "invalid",
          std::string(what) + " is not valid UTF-8 (at byte " + std::to_string(*bad) + ")");
  }
}

// ---- JSON <-> Lua ---------------------------------------------------------------------

void PushJson(lua_State* L, const json& v, int depth) {
  if (depth > kMaxJsonDepth) Raise(L, "invalid", "value nested too deeply");
  luaL_checkstack(L, 3, "json");
  switch (v.type()) {
    case json::value_t::null:
      lua_pushnil(L);
      break;
    case json::value_t::boolean:
      lua_pushboolean(L, v.get<bool>());
      break;
    case json::value_t::number_integer:
      lua_pushinteger(L, v.get<int64_t>());
      break;
    case json::value_t::number_unsigned:
      lua_pushinteger(L, static_cast<lua_Integer>(v.get<uint64_t>()));
      break;
    case json::value_t::number_float:
      lua_pushnumber(L, v.get<double>());
      break;
    case json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      lua_pushlstring(L, s.data(), s.size());
      break;
    }
    case json::value_t::array: {
      lua_createtable(L, static_cast<int>(v.size()), 0);
      lua_Integer i = 1;
      for (const auto& item : v) {
        PushJson(L, item, depth + 1);
        lua_rawseti(L, -2, i++);
      }
      break;
    }
    case json::value_t::object: {
      lua_createtable(L, 0, static_cast<int>(v.size()));
      for (auto it = v.begin(); it != v.end(); ++it) {
        lua_pushlstring(L, it.key().data(), it.key().size());
        PushJson(L, it.value(), depth + 1);
        lua_rawset(L, -3);
      }
      break;
    }
    default:
      lua_pushnil(L);
      break;
  }
}

json ToJson(lua_State* L, int index, int depth) {
  index = lua_absindex(L, index);
  if (depth > kMaxJsonDepth) Raise(L, "invalid", "value nested too deeply (or a cycle)");
  switch (lua_type(L, index)) {
    case LUA_TNIL:
      return nullptr;
    case LUA_TBOOLEAN:
      return static_cast<bool>(lua_toboolean(L, index));
    case LUA_TNUMBER:
      if (lua_isinteger(L, index)) return static_cast<int64_t>(lua_tointeger(L, index));
      {
        double d = lua_tonumber(L, index);
        if (!std::isfinite(d)) Raise(L, "invalid", "non-finite number cannot be returned");
        return d;
      }
    case LUA_TSTRING: {
      // JSON carries Unicode text only: bytes that are not UTF-8 would be replaced on the way,
      // and what arrives would not be what the plugin gave.
      size_t len;
      const char* s = lua_tolstring(L, index, &len);
      RequireUtf8(L, std::string_view(s, len), "a string in the data");
      return std::string(s, len);
    }
    case LUA_TTABLE: {
      luaL_checkstack(L, 4, "json");
      lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, index));
      size_t count = 0;
      lua_pushnil(L);
      while (lua_next(L, index)) {
        ++count;
        lua_pop(L, 1);
      }
      if (n > 0 && static_cast<size_t>(n) == count) {
        json arr = json::array();
        for (lua_Integer i = 1; i <= n; ++i) {
          lua_rawgeti(L, index, i);
          arr.push_back(ToJson(L, -1, depth + 1));
          lua_pop(L, 1);
        }
        return arr;
      }
      json obj = json::object();
      lua_pushnil(L);
      while (lua_next(L, index)) {
        if (lua_type(L, -2) != LUA_TSTRING)
          Raise(L, "invalid", "table keys must be strings or a 1..n sequence");
        size_t len;
        const char* k = lua_tolstring(L, -2, &len);
        RequireUtf8(L, std::string_view(k, len), "a table key in the data");
        obj[std::string(k, len)] = ToJson(L, -1, depth + 1);
        lua_pop(L, 1);
      }
      return obj;
    }
    default:
      Raise(L, "invalid", std::string("cannot convert a ") + luaL_typename(L, index) + " to data");
  }
}

std::string DumpJson(const json& v) {
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

// ---- helpers for the API functions ----------------------------------------------------

// Argument `arg` of `fn` as bytes: a string (or a number, as Lua converts it). Anything else
// is "invalid: <fn>: <what> must be a string (got <type>)".
std::string ArgBytes(lua_State* L, int arg, const char* fn, const char* what) {
  const int type = lua_type(L, arg);
  if (type != LUA_TSTRING && type != LUA_TNUMBER) {
    Raise(L, "invalid",
          std::string(fn) + ": " + what + " must be a string (got " +
              (type == LUA_TNONE ? "nothing" : lua_typename(L, type)) + ")");
  }
  size_t len;
  const char* s = lua_tolstring(L, arg, &len);
  return std::string(s, len);
}

// The same for a name (a path, a URI): it must also be UTF-8 text.
std::string ArgText(lua_State* L, int arg, const char* fn, const char* what) {
  std::string s = ArgBytes(L, arg, fn, what);
  RequireUtf8(L, s, std::string(fn) + ": " + what);
  return s;
}

void ArgTable(lua_State* L, int arg, const char* fn) {
  if (lua_type(L, arg) != LUA_TTABLE) {
    Raise(L, "invalid",
          std::string(fn) + " expects an options table (got " + luaL_typename(L, arg) + ")");
  }
}

[[noreturn]] void RaiseError(lua_State* L, const Error& e) { Raise(L, e.code, e.message); }

std::vector<std::string> CallGateway(lua_State* L, const std::string& op,
                                     std::vector<std::string> args) {
  Self(L)->Admit(L);
  auto r = Self(L)->api().Gateway(op, std::move(args));
  if (!r) RaiseError(L, r.error());
  return std::move(*r);
}

std::vector<std::string> CallEditor(lua_State* L, const std::string& op,
                                    std::vector<std::string> args) {
  Self(L)->Admit(L);
  auto r = Self(L)->api().Editor(op, std::move(args));
  if (!r) RaiseError(L, r.error());
  return std::move(*r);
}

// A string field of the table at `index`, or `fallback` when absent. `text`: it names something
// (a URL, a program) and must be UTF-8; otherwise it is data and any bytes go.
std::string OptStringField(lua_State* L, int index, const char* key, const std::string& fallback,
                           bool text = true) {
  lua_getfield(L, index, key);
  std::string out = fallback;
  if (!lua_isnil(L, -1)) {
    if (lua_type(L, -1) != LUA_TSTRING) {
      Raise(L, "invalid",
            std::string("field '") + key + "' must be a string (got " + luaL_typename(L, -1) + ")");
    }
    size_t len;
    const char* s = lua_tolstring(L, -1, &len);
    out.assign(s, len);
    if (text) RequireUtf8(L, out, std::string("field '") + key + "'");
  }
  lua_pop(L, 1);
  return out;
}

// ---- the plugin API ----------------------------------------------------------------------

int AnvilCommand(lua_State* L) {
  std::string name = ArgBytes(L, 1, "anvil.command", "name");
  if (lua_type(L, 2) != LUA_TFUNCTION) {
    Raise(L, "invalid", "anvil.command: handler must be a function");
  }
  if (name.empty() || name.size() > 128) Raise(L, "invalid", "bad command name");
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      Raise(L, "invalid", "command names use [A-Za-z0-9._-]");
    }
  }
  lua_getfield(L, LUA_REGISTRYINDEX, kCommandsKey);
  // A second registration of a name is a mistake (two handlers, one silently lost), never a
  // replacement: the plugin fails to load and says which name.
  if (lua_getfield(L, -1, name.c_str()) != LUA_TNIL) {
    Raise(L, "invalid",
          "anvil.command: '" + name +
              "' is already registered (fix: give each command its own name)");
  }
  lua_pop(L, 1);
  lua_pushvalue(L, 2);
  lua_setfield(L, -2, name.c_str());
  Self(L)->AddCommand(name);
  return 0;
}

// An options record (policy/plugin_api.h OptionsRecord) as request fields: nil (or nothing)
// for the defaults, else a table whose keys are the record's fields, each a boolean; "1"/"0".
// A key it does not know is refused, naming the ones it knows: a misspelt option is a mistake,
// never silently the default.
void OptionsFields(lua_State* L, int arg, const std::string& fn, const ApiRecord& record,
                   std::vector<std::string>& fields) {
  std::vector<bool> values(record.fields.size(), false);
  const int type = lua_type(L, arg);
  if (type != LUA_TNONE && type != LUA_TNIL) {
    if (type != LUA_TTABLE) {
      Raise(L, "invalid", fn + ": options must be a table (got " + lua_typename(L, type) + ")");
    }
    std::string known;
    for (const auto& f : record.fields) known += (known.empty() ? "" : ", ") + f.name;
    lua_pushnil(L);
    while (lua_next(L, arg) != 0) {
      if (lua_type(L, -2) != LUA_TSTRING) {
        Raise(L, "invalid", fn + ": options are named (known: " + known + ")");
      }
      size_t len;
      const char* k = lua_tolstring(L, -2, &len);
      const std::string key(k, len);
      size_t i = 0;
      while (i < record.fields.size() && record.fields[i].name != key) ++i;
      if (i == record.fields.size()) {
        Raise(L, "invalid",
              fn + ": unknown option '" + QuotePathForMessage(key) + "' (known: " + known + ")");
      }
      if (lua_type(L, -1) != LUA_TBOOLEAN) {
        Raise(L, "invalid",
              fn + ": option '" + key + "' must be a boolean (got " + luaL_typename(L, -1) + ")");
      }
      values[i] = lua_toboolean(L, -1) != 0;
      lua_pop(L, 1);
    }
  }
  for (bool v : values) fields.push_back(v ? "1" : "0");
}

// A function that leaves the host, bound from its description alone (GenericBinding):
// upvalue 1 is its ApiFunction. Strings are names (UTF-8 text) unless the description says
// bytes; the reply is nothing or one string.
int GenericCall(lua_State* L) {
  const auto& f = *static_cast<const ApiFunction*>(lua_touserdata(L, lua_upvalueindex(1)));
  Self(L)->Admit(L);
  std::vector<std::string> fields;
  int arg = 1;
  for (const auto& p : f.params) {
    if (const ApiRecord* record = OptionsRecord(PluginApi(), p)) {
      OptionsFields(L, arg, f.path, *record, fields);
    } else if (p.bytes) {
      fields.push_back(ArgBytes(L, arg, f.path.c_str(), p.name.c_str()));
    } else {
      fields.push_back(ArgText(L, arg, f.path.c_str(), p.name.c_str()));
    }
    ++arg;
  }
  auto reply = f.channel == ApiChannel::kEditor ? CallEditor(L, f.op, std::move(fields))
                                                : CallGateway(L, f.op, std::move(fields));
  if (OpOf(PluginApi(), f)->encoding == ApiReply::kNothing) return 0;
  if (reply.size() != 1) Raise(L, "io", "malformed " + f.op + " reply");
  lua_pushlstring(L, reply[0].data(), reply[0].size());
  return 1;
}

// sys.fs.list(dir) -> entries, omitted: `omitted` counts the entries left out because their
// names are not valid workspace path components (not UTF-8, control characters), so a listing
// never silently looks complete.
int FsList(lua_State* L) {
  auto fields = CallGateway(L, "fs.list", {ArgText(L, 1, "sys.fs.list", "dir")});
  auto listing = DecodeListing(fields);
  if (!listing) RaiseError(L, listing.error());
  lua_createtable(L, static_cast<int>(listing->entries.size()), 0);
  lua_Integer i = 1;
  for (const auto& e : listing->entries) {
    lua_createtable(L, 0, 2);
    lua_pushlstring(L, e.name.data(), e.name.size());
    lua_setfield(L, -2, "name");
    lua_pushlstring(L, e.type.data(), e.type.size());
    lua_setfield(L, -2, "type");
    lua_rawseti(L, -2, i++);
  }
  lua_pushinteger(L, static_cast<lua_Integer>(listing->omitted));
  return 2;
}

int FsStat(lua_State* L) {
  auto st = DecodeStat(CallGateway(L, "fs.stat", {ArgText(L, 1, "sys.fs.stat", "path")}));
  if (!st) RaiseError(L, st.error());
  lua_createtable(L, 0, 3);
  lua_pushlstring(L, st->type.data(), st->type.size());
  lua_setfield(L, -2, "type");
  lua_pushinteger(L, static_cast<lua_Integer>(st->size));
  lua_setfield(L, -2, "size");
  lua_pushnumber(L, st->mtime);
  lua_setfield(L, -2, "mtime");
  return 1;
}

int NetFetch(lua_State* L) {
  ArgTable(L, 1, "sys.net.fetch");
  std::string url = OptStringField(L, 1, "url", "");
  if (url.empty()) Raise(L, "invalid", "fetch needs url");
  std::string method = OptStringField(L, 1, "method", "GET");
  std::string body = OptStringField(L, 1, "body", "", /*text=*/false);
  lua_getfield(L, 1, "headers");
  json headers = lua_isnil(L, -1) ? json::object() : ToJson(L, -1, 0);
  lua_pop(L, 1);
  if (headers.is_array() && headers.empty()) headers = json::object();
  if (!headers.is_object()) Raise(L, "invalid", "headers must be a table of strings");
  auto f = CallGateway(L, "net.fetch", {url, method, DumpJson(headers), body});
  if (f.size() != 3) Raise(L, "io", "malformed fetch reply");
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, std::strtoll(f[0].c_str(), nullptr, 10));
  lua_setfield(L, -2, "status");
  PushJson(L, json::parse(f[1], nullptr, false), 0);
  lua_setfield(L, -2, "headers");
  lua_pushlstring(L, f[2].data(), f[2].size());
  lua_setfield(L, -2, "body");
  return 1;
}

int Exec(lua_State* L) {
  ArgTable(L, 1, "sys.exec");
  std::string program = OptStringField(L, 1, "program", "");
  if (program.empty()) Raise(L, "invalid", "exec needs program");
  std::string stdin_data = OptStringField(L, 1, "stdin", "", /*text=*/false);
  lua_getfield(L, 1, "args");
  json args = lua_isnil(L, -1) ? json::array() : ToJson(L, -1, 0);
  lua_pop(L, 1);
  if (args.is_object() && args.empty()) args = json::array();
  if (!args.is_array()) Raise(L, "invalid", "args must be a list of strings");
  for (const auto& a : args) {
    if (!a.is_string()) Raise(L, "invalid", "args must be a list of strings");
  }
  auto f = CallGateway(L, "exec", {program, DumpJson(args), stdin_data});
  // [code, stdout, stderr, stdout_truncated, stderr_truncated, limit]
  if (f.size() != 6) Raise(L, "io", "malformed exec reply");
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, std::strtoll(f[0].c_str(), nullptr, 10));
  lua_setfield(L, -2, "code");
  lua_pushlstring(L, f[1].data(), f[1].size());
  lua_setfield(L, -2, "stdout");
  lua_pushlstring(L, f[2].data(), f[2].size());
  lua_setfield(L, -2, "stderr");
  lua_pushboolean(L, f[3] == "1" || f[4] == "1");
  lua_setfield(L, -2, "truncated");
  if (!f[5].empty()) {
    lua_pushlstring(L, f[5].data(), f[5].size());
    lua_setfield(L, -2, "limit");
  }
  return 1;
}

int BufferGet(lua_State* L) {
  auto b =
      DecodeBuffer(CallEditor(L, "editor.buffer.get", {ArgText(L, 1, "editor.buffer.get", "uri")}));
  if (!b) RaiseError(L, b.error());
  lua_createtable(L, 0, 3);
  lua_pushlstring(L, b->uri.data(), b->uri.size());
  lua_setfield(L, -2, "uri");
  lua_pushinteger(L, b->version);
  lua_setfield(L, -2, "version");
  lua_pushlstring(L, b->text.data(), b->text.size());
  lua_setfield(L, -2, "text");
  return 1;
}

int BufferEdit(lua_State* L) {
  std::string uri = ArgText(L, 1, "editor.buffer.edit", "uri");
  if (!lua_isinteger(L, 2)) Raise(L, "invalid", "editor.buffer.edit: version must be an integer");
  lua_Integer version = lua_tointeger(L, 2);
  if (lua_type(L, 3) != LUA_TTABLE) {
    Raise(L, "invalid", "editor.buffer.edit: edits must be a table");
  }
  json edits = ToJson(L, 3, 0);
  CallEditor(L, "editor.buffer.edit", {uri, std::to_string(version), DumpJson(edits)});
  lua_pushboolean(L, 1);
  return 1;
}

std::string JoinArgs(lua_State* L) {
  std::string out;
  int n = lua_gettop(L);
  for (int i = 1; i <= n; ++i) {
    size_t len;
    const char* s = luaL_tolstring(L, i, &len);
    if (i > 1) out += '\t';
    out.append(s, len);
    lua_pop(L, 1);
  }
  return out;
}

// Every binding that reaches the host: refused once the budget is spent or outside a command.
template <lua_CFunction F>
int Api(lua_State* L) {
  Self(L)->Admit(L);
  return F(L);
}

int Print(lua_State* L) {
  Self(L)->api().Log("info", JoinArgs(L));
  return 0;
}

int Warn(lua_State* L) {
  Self(L)->api().Log("warn", JoinArgs(L));
  return 0;
}

// load() forced to text: a binary chunk (precompiled bytecode) can corrupt the VM. A reader
// function runs protected inside load, so load is an error boundary too (GuardedCall's checks).
int LoadText(lua_State* L) {
  LuaRuntime* self = Self(L);
  self->Admit(L);
  lua_settop(L, 4);
  if (!lua_isnil(L, 3)) {
    const char* mode = luaL_checkstring(L, 3);
    if (std::strcmp(mode, "t") != 0) {
      // As load() reports any failure: nil plus a message.
      lua_pushnil(L);
      lua_pushliteral(L, "denied: only text chunks can be loaded (no binary chunks)");
      return 2;
    }
  }
  lua_pushliteral(L, "t");
  lua_replace(L, 3);
  // Call the original load (upvalue 1) with mode forced to "t".
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, 4, LUA_MULTRET);
  if (self->Spent()) self->RaiseSpent(L);
  return lua_gettop(L);
}

// ---- error boundaries that a spent budget crosses ----------------------------------------
// Lua's pcall, xpcall, coroutine.resume/wrap/close and load catch errors; these wrappers make
// the budget's error pass through them (see the top of the file).

// Lua's finishpcall, plus: a spent budget is re-raised instead of returned as (false, err).
int FinishGuardedPcall(lua_State* L, int status, lua_KContext extra) {
  LuaRuntime* self = Self(L);
  if (self->Spent()) self->RaiseSpent(L);
  if (status != LUA_OK && status != LUA_YIELD) {
    lua_pushboolean(L, 0);
    lua_pushvalue(L, -2);
    return 2;
  }
  return lua_gettop(L) - static_cast<int>(extra);
}

int GuardedPcall(lua_State* L) {
  Self(L)->Admit(L);
  luaL_checkany(L, 1);
  lua_pushboolean(L, 1);
  lua_insert(L, 1);
  // lua_pcallk with a continuation, as Lua's own pcall: a coroutine may yield inside it.
  int status = lua_pcallk(L, lua_gettop(L) - 2, LUA_MULTRET, 0, 0, FinishGuardedPcall);
  return FinishGuardedPcall(L, status, 0);
}

// xpcall's message handler, in front of the plugin's (upvalue 1). A budget error is raised
// inside the count hook, where Lua calls the handler with every hook off: the plugin's handler
// must not run then, nor ever once the budget is spent.
int GuardedMessageHandler(lua_State* L) {
  if (Self(L)->Spent()) {
    lua_settop(L, 1);
    return 1;
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

int GuardedXpcall(lua_State* L) {
  Self(L)->Admit(L);
  int n = lua_gettop(L);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_pushvalue(L, 2);
  lua_pushcclosure(L, GuardedMessageHandler, 1);
  lua_replace(L, 2);
  lua_pushboolean(L, 1);
  lua_pushvalue(L, 1);
  lua_rotate(L, 3, 2);
  int status = lua_pcallk(L, n - 2, LUA_MULTRET, 2, 2, FinishGuardedPcall);
  return FinishGuardedPcall(L, status, 2);
}

// coroutine.resume, coroutine.close, a coroutine.wrap function, load: the original function is
// upvalue 1; the coroutine it runs is upvalue 2 (wrap) or argument 1 (resume, close).
int GuardedCall(lua_State* L) {
  LuaRuntime* self = Self(L);
  self->Admit(L);
  lua_State* co = lua_tothread(L, lua_upvalueindex(2));
  if (co == nullptr) co = lua_tothread(L, 1);
  self->PrepareThread(co);
  const int n = lua_gettop(L);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, n, LUA_MULTRET);
  if (self->Spent()) self->RaiseSpent(L);
  return lua_gettop(L);
}

int GuardedWrap(lua_State* L) {
  Self(L)->Admit(L);
  const int n = lua_gettop(L);
  lua_pushvalue(L, lua_upvalueindex(1));  // the original coroutine.wrap
  lua_insert(L, 1);
  lua_call(L, n, 1);
  // Lua's wrap function keeps its coroutine as its only upvalue.
  if (lua_getupvalue(L, -1, 1) == nullptr || !lua_isthread(L, -1)) {
    return luaL_error(L, "internal: unexpected coroutine.wrap");
  }
  lua_pushcclosure(L, GuardedCall, 2);
  return 1;
}

// Replaces table[name] (table on top of the stack) with `fn` closed over the original.
void GuardField(lua_State* L, const char* name, lua_CFunction fn) {
  lua_getfield(L, -1, name);
  lua_pushcclosure(L, fn, 1);
  lua_setfield(L, -2, name);
}

// A finalizer runs with Lua's hooks off, at whatever allocation triggers a collection and at
// lua_close: outside every budget. An object is marked for finalization only when its
// metatable holds a non-nil __gc at setmetatable time, so refusing that is enough.
int SetMetatableGuarded(lua_State* L) {
  if (lua_type(L, 2) == LUA_TTABLE) {
    lua_pushliteral(L, "__gc");
    if (lua_rawget(L, 2) != LUA_TNIL) {
      lua_pushliteral(L,
                      "denied: __gc metamethods are not available to plugins (a finalizer would "
                      "run outside the command's budget)");
      return lua_error(L);
    }
    lua_pop(L, 1);
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

int RawSetGuarded(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, LUA_REGISTRYINDEX, kProtectedKey);
  lua_pushvalue(L, 1);
  lua_rawget(L, -2);
  if (lua_toboolean(L, -1)) Raise(L, "denied", "Anvil's tables are read-only");
  lua_pop(L, 2);
  luaL_checkany(L, 2);
  luaL_checkany(L, 3);
  lua_settop(L, 3);
  lua_rawset(L, 1);
  return 1;
}

int CollectGarbage(lua_State* L) {
  static const char* const kAllowed[] = {"collect", "count", "step", "isrunning", nullptr};
  int option = luaL_checkoption(L, 1, "collect", kAllowed);
  switch (option) {
    case 1: {
      int kb = lua_gc(L, LUA_GCCOUNT);
      int b = lua_gc(L, LUA_GCCOUNTB);
      lua_pushnumber(L, static_cast<lua_Number>(kb) + static_cast<lua_Number>(b) / 1024);
      return 1;
    }
    case 2:
      lua_pushboolean(L, lua_gc(L, LUA_GCSTEP, 0));
      return 1;
    case 3:
      lua_pushboolean(L, lua_gc(L, LUA_GCISRUNNING));
      return 1;
    default:
      lua_gc(L, LUA_GCCOLLECT);
      lua_pushinteger(L, 0);
      return 1;
  }
}

int OsTime(lua_State* L) {
  if (!lua_isnoneornil(L, 1)) Raise(L, "invalid", "os.time takes no arguments here");
  lua_pushinteger(L, static_cast<lua_Integer>(std::time(nullptr)));
  return 1;
}

int OsClock(lua_State* L) {
  lua_pushnumber(L, static_cast<lua_Number>(std::clock()) / CLOCKS_PER_SEC);
  return 1;
}

// "lib.util" -> "lib/util.lua": the file a module name was read from (host/plugin_host.cc).
std::string ModuleFile(std::string name) {
  for (char& c : name) {
    if (c == '.') c = '/';
  }
  return name + ".lua";
}

int Require(lua_State* L) {
  std::string name = ArgBytes(L, 1, "require", "module name");
  lua_getfield(L, LUA_REGISTRYINDEX, kLoadedKey);
  lua_getfield(L, -1, name.c_str());
  if (!lua_isnil(L, -1)) return 1;
  lua_pop(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, kModulesKey);
  lua_getfield(L, -1, name.c_str());
  if (lua_isnil(L, -1)) Raise(L, "not_found", "no module '" + name + "' in this plugin");
  size_t len;
  const char* code = lua_tolstring(L, -1, &len);
  // Named after its file, so that messages and stacks say where ("lib/util.lua:3:").
  std::string chunk = "@" + ModuleFile(name);
  if (luaL_loadbufferx(L, code, len, chunk.c_str(), "t") != LUA_OK) lua_error(L);
  lua_pushstring(L, name.c_str());
  lua_call(L, 1, 1);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushboolean(L, 1);
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, -5, name.c_str());  // loaded[name] = value
  return 1;
}

// pairs() and # on a read-only proxy, answered from the real table. The iterator closes over
// the real table instead of returning it as the generic-for state: handing a plugin the real
// table would let it write there with a plain assignment.
int LockedNext(lua_State* L) {
  lua_settop(L, 2);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushvalue(L, 2);
  if (lua_next(L, 3) == 0) {
    lua_pushnil(L);
    return 1;
  }
  return 2;
}
int LockedPairs(lua_State* L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushcclosure(L, LockedNext, 1);
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}
int LockedLen(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(lua_rawlen(L, lua_upvalueindex(1))));
  return 1;
}

// Wraps the table on top of the stack in a read-only proxy and records both as protected.
// `iterable`: pairs() and # see the real table's contents: data tables such as anvil.settings,
// and the API's own tables (`for name in pairs(sys.fs)` lists its functions; every value it
// yields is a function or another proxy, never a real table).
void LockTable(lua_State* L, bool iterable = true) {
  int real = lua_gettop(L);
  lua_newtable(L);           // proxy
  lua_createtable(L, 0, 5);  // metatable
  lua_pushvalue(L, real);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(
      L, [](lua_State* S) -> int { Raise(S, "denied", "Anvil's tables are read-only"); });
  lua_setfield(L, -2, "__newindex");
  if (iterable) {
    lua_pushvalue(L, real);
    lua_pushcclosure(L, LockedPairs, 1);
    lua_setfield(L, -2, "__pairs");
    lua_pushvalue(L, real);
    lua_pushcclosure(L, LockedLen, 1);
    lua_setfield(L, -2, "__len");
  }
  lua_pushliteral(L, "locked");
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  lua_getfield(L, LUA_REGISTRYINDEX, kProtectedKey);
  lua_pushvalue(L, -2);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pushvalue(L, real);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  lua_replace(L, real);  // proxy replaces the real table on the stack
}

void SetFunctions(lua_State* L, const luaL_Reg* fns) { luaL_setfuncs(L, fns, 0); }

// anvil.settings: the workspace's settings for this plugin (Anvil.toml, untrusted data), as
// read-only tables all the way down: a plugin (or a module it loads) cannot change what another
// part of it reads, and nothing here is ever consulted for a permission.
void PushSettings(lua_State* L, const json& v, int depth) {
  if (depth > kMaxJsonDepth) luaL_error(L, "invalid: settings nested too deeply");
  luaL_checkstack(L, 4, "settings");
  if (!v.is_array() && !v.is_object()) return PushJson(L, v, depth);
  lua_createtable(L, v.is_array() ? static_cast<int>(v.size()) : 0,
                  v.is_object() ? static_cast<int>(v.size()) : 0);
  lua_Integer i = 1;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (v.is_object()) {
      lua_pushlstring(L, it.key().data(), it.key().size());
      PushSettings(L, it.value(), depth + 1);
      lua_rawset(L, -3);
    } else {
      PushSettings(L, *it, depth + 1);
      lua_rawseti(L, -2, i++);
    }
  }
  LockTable(L, /*iterable=*/true);
}

int PushSettingsProtected(lua_State* L) {
  PushSettings(L, *static_cast<const json*>(lua_touserdata(L, 1)), 0);
  return 1;
}

// The functions that leave the host but need a binding of their own (their reply is more than
// one string, or a parameter is a record): every other one is GenericCall.
const std::map<std::string, lua_CFunction, std::less<>>& CustomBindings() {
  static const std::map<std::string, lua_CFunction, std::less<>> kCustom = {
      {"sys.fs.list", Api<FsList>},          {"sys.fs.stat", Api<FsStat>},
      {"sys.net.fetch", Api<NetFetch>},      {"sys.exec", Api<Exec>},
      {"editor.buffer.get", Api<BufferGet>}, {"editor.buffer.edit", Api<BufferEdit>},
  };
  return kCustom;
}

// Builds the global tables that hold only functions leaving the host (sys, editor) from the
// description: each namespace a read-only proxy, each function bound generically or by its
// own binding. A function with neither, or a binding the description does not name, stops the
// runtime from starting.
Status InstallWired(lua_State* L, int g) {
  const PluginApiDescription& api = PluginApi();
  auto in_lua = [](ApiRuntimes r) { return InRuntime(r, /*js=*/false); };
  // A top-level namespace is built here when every member beneath it leaves the host.
  std::set<std::string> roots;
  for (const auto& n : api.namespaces) {
    if (in_lua(n.runtimes) && n.path.find('.') == std::string::npos) roots.insert(n.path);
  }
  for (const auto& f : api.functions) {
    if (in_lua(f.runtimes) && f.channel == ApiChannel::kLocal)
      roots.erase(f.path.substr(0, f.path.find('.')));
  }
  for (const auto& v : api.values) roots.erase(v.path.substr(0, v.path.find('.')));
  std::set<std::string> bound;
  std::function<Status(const std::string&)> build = [&](const std::string& prefix) -> Status {
    lua_newtable(L);
    for (const auto& n : api.namespaces) {
      if (!in_lua(n.runtimes) || ApiParentPath(n.path) != prefix) continue;
      if (auto s = build(n.path); !s) return s;
      lua_setfield(L, -2, ApiLeafName(n.path).c_str());
    }
    for (const auto& f : api.functions) {
      if (!in_lua(f.runtimes) || ApiParentPath(f.path) != prefix) continue;
      if (auto it = CustomBindings().find(f.path); it != CustomBindings().end()) {
        lua_pushcfunction(L, it->second);
      } else if (GenericBinding(api, f)) {
        lua_pushlightuserdata(L, const_cast<ApiFunction*>(&f));
        lua_pushcclosure(L, GenericCall, 1);
      } else {
        return Fail("internal", "no Lua binding for " + f.path);
      }
      bound.insert(f.path);
      lua_setfield(L, -2, ApiLeafName(f.path).c_str());
    }
    LockTable(L);
    return Ok();
  };
  for (const auto& root : roots) {
    if (auto s = build(root); !s) return s;
    lua_setfield(L, g, root.c_str());
  }
  for (const auto& [path, binding] : CustomBindings()) {
    if (!bound.contains(path))
      return Fail("internal", "a Lua binding for " + path + ", which is not described");
  }
  return Ok();
}

Status LuaRuntime::Init() {
  L_ = lua_newstate(&LuaRuntime::Alloc, this);
  if (!L_) return Fail("limit", "cannot create the Lua state within the memory budget");
  lua_newtable(L_);
  lua_setfield(L_, LUA_REGISTRYINDEX, kCommandsKey);
  lua_newtable(L_);
  lua_setfield(L_, LUA_REGISTRYINDEX, kModulesKey);
  lua_newtable(L_);
  lua_setfield(L_, LUA_REGISTRYINDEX, kLoadedKey);
  lua_newtable(L_);
  lua_setfield(L_, LUA_REGISTRYINDEX, kProtectedKey);
  // The spent budgets' messages, made now: raising one must not need an allocation (the memory
  // budget may be the one that is spent).
  const char* const messages[kMessageCount] = {"limit: instruction budget exhausted",
                                               "timeout: command passed its deadline",
                                               "limit: memory budget exhausted"};
  for (int i = 0; i < kMessageCount; ++i) {
    lua_pushstring(L_, messages[i]);
    messages_[i] = luaL_ref(L_, LUA_REGISTRYINDEX);
    if (messages_[i] == LUA_REFNIL || messages_[i] == LUA_NOREF) {
      return Fail("limit", "cannot set up the Lua state within the memory budget");
    }
  }

  // The allowlist. Nothing else of the standard library is linked into the host at all
  // (cmake builds Lua without liolib, loslib, loadlib, ldblib, linit).
  const luaL_Reg libs[] = {{LUA_GNAME, luaopen_base},       {LUA_COLIBNAME, luaopen_coroutine},
                           {LUA_TABLIBNAME, luaopen_table}, {LUA_STRLIBNAME, luaopen_string},
                           {LUA_MATHLIBNAME, luaopen_math}, {LUA_UTF8LIBNAME, luaopen_utf8}};
  for (const auto& lib : libs) {
    luaL_requiref(L_, lib.name, lib.func, 1);
    lua_pop(L_, 1);
  }
  lua_pushglobaltable(L_);
  int g = lua_gettop(L_);
  for (const char* name : {"dofile", "loadfile"}) {
    lua_pushnil(L_);
    lua_setfield(L_, g, name);
  }
  lua_getfield(L_, g, "load");
  lua_pushcclosure(L_, LoadText, 1);
  lua_setfield(L_, g, "load");
  // The error boundaries a spent budget must cross, and setmetatable without __gc.
  lua_pushcfunction(L_, GuardedPcall);
  lua_setfield(L_, g, "pcall");
  lua_pushcfunction(L_, GuardedXpcall);
  lua_setfield(L_, g, "xpcall");
  GuardField(L_, "setmetatable", SetMetatableGuarded);
  lua_getfield(L_, g, "coroutine");
  GuardField(L_, "resume", GuardedCall);
  GuardField(L_, "close", GuardedCall);
  GuardField(L_, "wrap", GuardedWrap);
  lua_pop(L_, 1);
  const luaL_Reg base[] = {{"print", Api<Print>},     {"warn", Api<Warn>},
                           {"rawset", RawSetGuarded}, {"collectgarbage", CollectGarbage},
                           {"require", Require},      {nullptr, nullptr}};
  SetFunctions(L_, base);
  lua_getfield(L_, g, "string");
  lua_pushnil(L_);
  lua_setfield(L_, -2, "dump");
  lua_pop(L_, 1);
  lua_createtable(L_, 0, 2);
  const luaL_Reg os[] = {{"time", OsTime}, {"clock", OsClock}, {nullptr, nullptr}};
  SetFunctions(L_, os);
  lua_setfield(L_, g, "os");

  // anvil, sys, editor: read-only proxies (a plugin cannot swap sys.fs.read under a module).
  lua_newtable(L_);
  const luaL_Reg anvil_fns[] = {{"command", AnvilCommand}, {nullptr, nullptr}};
  SetFunctions(L_, anvil_fns);
  {
    const json settings = json::parse(settings_json_, nullptr, false);
    if (!settings.is_object()) return Fail("invalid", "plugin settings are not a JSON object");
    lua_pushcfunction(L_, PushSettingsProtected);
    lua_pushlightuserdata(L_, const_cast<json*>(&settings));
    if (lua_pcall(L_, 1, 1, 0) != LUA_OK) {
      return Fail("limit", "cannot build anvil.settings within the VM's budget");
    }
    lua_setfield(L_, -2, "settings");
  }
  LockTable(L_);
  lua_setfield(L_, g, "anvil");

  // sys and editor: every function that leaves the host, from the description.
  if (auto s = InstallWired(L_, g); !s) return s;
  lua_pop(L_, 1);  // globals
  return Ok();
}

Status LuaRuntime::Load(const PluginSource& source) {
  lua_getfield(L_, LUA_REGISTRYINDEX, kModulesKey);
  for (const auto& [name, code] : source.modules) {
    lua_pushlstring(L_, code.data(), code.size());
    lua_setfield(L_, -2, name.c_str());
    files_.emplace(ModuleFile(name), code);
  }
  lua_pop(L_, 1);
  files_.emplace(source.entry_name, source.entry_code);
  trace_ = {};
  std::string chunk = "@" + source.entry_name;
  // Mode "t": a precompiled (binary) entry is refused outright.
  int status =
      luaL_loadbufferx(L_, source.entry_code.data(), source.entry_code.size(), chunk.c_str(), "t");
  if (status != LUA_OK) return tl::unexpected(ErrorFromLua(status));
  StartBudget();
  return RunProtected(0, 0);
}

Result<std::string> LuaRuntime::RunCommand(const std::string& name, const std::string& args_json) {
  json args = json::parse(args_json, nullptr, false);
  if (args.is_discarded()) return Fail("invalid", "command arguments are not JSON");
  lua_settop(L_, 0);
  lua_getfield(L_, LUA_REGISTRYINDEX, kCommandsKey);
  lua_getfield(L_, -1, name.c_str());
  if (!lua_isfunction(L_, -1)) {
    lua_settop(L_, 0);
    return Fail("not_found", "no command '" + name + "'");
  }
  lua_remove(L_, 1);
  StartBudget();
  // Converting arguments runs under the budget too (and may itself run out of memory).
  struct PushArgs {
    static int Run(lua_State* L) {
      auto* a = static_cast<json*>(lua_touserdata(L, 1));
      PushJson(L, *a, 0);
      return 1;
    }
  };
  lua_pushcfunction(L_, PushArgs::Run);
  lua_pushlightuserdata(L_, &args);
  if (auto s = RunProtected(1, 1); !s) {
    lua_settop(L_, 0);
    return tl::unexpected(s.error());
  }
  StartBudget();
  if (auto s = RunProtected(1, 1); !s) {
    lua_settop(L_, 0);
    return tl::unexpected(s.error());
  }
  // Result to JSON, protected as well (a cyclic table must not crash the host).
  struct ToText {
    static int Run(lua_State* L) {
      auto* out = static_cast<std::string*>(lua_touserdata(L, 2));
      *out = DumpJson(ToJson(L, 1, 0));
      return 0;
    }
  };
  std::string text;
  lua_pushcfunction(L_, ToText::Run);
  lua_insert(L_, -2);
  lua_pushlightuserdata(L_, &text);
  StartBudget();
  if (auto s = RunProtected(2, 0); !s) {
    lua_settop(L_, 0);
    return tl::unexpected(s.error());
  }
  lua_settop(L_, 0);
  return text;
}

}  // namespace

std::unique_ptr<Runtime> MakeLuaRuntime(HostApi& api, const RuntimeLimits& limits,
                                        const std::string& settings_json) {
  auto runtime = std::make_unique<LuaRuntime>(api, limits, settings_json);
  if (!runtime->Init()) return nullptr;
  return runtime;
}

}  // namespace anvil::host
