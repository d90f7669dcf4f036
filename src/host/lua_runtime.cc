// Lua 5.4 plugin runtime: its lifecycle (the other parts are listed in lua_internal.h). Only an
// explicit allowlist of the standard library is opened: base (no dofile/loadfile; load is
// text-only; rawset refuses Anvil's tables; print/warn go to the plugin log), string (no dump),
// table, math, utf8, coroutine, and os.time/os.clock. Budgets: instructions via a count hook,
// memory via the allocator, wall clock in the hook; once one is spent, no error boundary of
// the plugin can catch it (lua_budget.cc says how).
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include <algorithm>
#include <cstring>

#include "host/lua_internal.h"
#include "host/runtime.h"
#include "ipc/plugin_trace.h"

namespace anvil::host {
namespace lua {
namespace {

// lua_pcall's message handler: the stack of the error is only there while it runs.
int TraceHandler(lua_State* L) {
  LuaRuntime* self = Self(L);
  // A spent budget reports its code without a trace (and must not allocate: memory may be
  // the budget that is spent).
  if (!self->Spent()) self->CaptureTrace(L);
  return 1;
}

}  // namespace

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
  for (Code known : kPluginCodes) {
    const std::string prefix = std::string(WireName(known)) + ": ";
    auto at = message.find(prefix);
    // luaL_error prefixes "chunk:line: "; the code follows it.
    if (at != std::string::npos &&
        (at == 0 || (at >= 2 && message.compare(at - 2, 2, ": ") == 0))) {
      return Error{known, message.substr(at + prefix.size()), 0, trace};
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

Status LuaRuntime::Init() {
  L_ = lua_newstate(&LuaRuntime::Alloc, this);
  if (!L_) return Fail("limit", "cannot create the Lua state within the memory budget");
  // Uninitialized by Lua; every new thread copies it: "paid in no budget" (lua_budget.cc).
  std::memset(lua_getextraspace(L_), 0, LUA_EXTRASPACE);
  lua_newtable(L_);
  lua_setfield(L_, LUA_REGISTRYINDEX, kCommandsKey);
  lua_newtable(L_);
  lua_setfield(L_, LUA_REGISTRYINDEX, kModulesKey);
  lua_newtable(L_);
  lua_setfield(L_, LUA_REGISTRYINDEX, kLoadedKey);
  lua_newtable(L_);
  lua_setfield(L_, LUA_REGISTRYINDEX, kProtectedKey);
  ANVIL_RETURN_IF_ERROR(MakeSpentMessages());

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
  // The error boundaries a spent budget must cross (lua_budget.cc), then the plugin API.
  InstallBudgetGuards(L_, g);
  ANVIL_RETURN_IF_ERROR(InstallPluginApi(L_, g, settings_json_));
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
      *out = DumpJson(ToJson(L, 1, "the command's result"));
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

}  // namespace lua

std::unique_ptr<Runtime> MakeLuaRuntime(HostApi& api, const RuntimeLimits& limits,
                                        const std::string& settings_json) {
  auto runtime = std::make_unique<lua::LuaRuntime>(api, limits, settings_json);
  if (!runtime->Init()) return nullptr;
  return runtime;
}

}  // namespace anvil::host
