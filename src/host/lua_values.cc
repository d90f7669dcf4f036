// The Lua runtime's value glue (lua_internal.h): JSON in and out of the VM (command arguments
// and results, request fields, replies), errors raised into the plugin as "code: text", and the
// read-only tables that hold Anvil's API and the plugin's settings.
#include <lauxlib.h>
#include <lua.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "fs/workspace_path.h"
#include "host/convert_budget.h"
#include "host/lua_internal.h"
#include "ipc/frame.h"

namespace anvil::host::lua {

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

namespace {

// One conversion's walk: every node is charged to `budget` before it is built (convert_budget.h).
json ToJsonCharged(lua_State* L, int index, int depth, ConvertBudget& budget,
                   std::string_view what) {
  index = lua_absindex(L, index);
  if (depth > kMaxJsonDepth) Raise(L, "invalid", "value nested too deeply (or a cycle)");
  auto charge = [&](bool ok) {
    if (!ok) Raise(L, "limit", budget.Why(what));
  };
  switch (lua_type(L, index)) {
    case LUA_TNIL:
      charge(budget.Scalar());
      return nullptr;
    case LUA_TBOOLEAN:
      charge(budget.Scalar());
      return static_cast<bool>(lua_toboolean(L, index));
    case LUA_TNUMBER:
      charge(budget.Scalar());
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
      charge(budget.String(len));
      RequireUtf8(L, std::string_view(s, len), "a string in the data");
      return std::string(s, len);
    }
    case LUA_TTABLE: {
      charge(budget.Container());
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
          arr.push_back(ToJsonCharged(L, -1, depth + 1, budget, what));
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
        charge(budget.Key(len));
        RequireUtf8(L, std::string_view(k, len), "a table key in the data");
        obj[std::string(k, len)] = ToJsonCharged(L, -1, depth + 1, budget, what);
        lua_pop(L, 1);
      }
      return obj;
    }
    default:
      Raise(L, "invalid", std::string("cannot convert a ") + luaL_typename(L, index) + " to data");
  }
}

}  // namespace

json ToJson(lua_State* L, int index, std::string_view what) {
  ConvertBudget budget(ipc::kMaxFrameBytes, Self(L)->memory_budget());
  return ToJsonCharged(L, index, 0, budget, what);
}

std::string DumpJson(const json& v) {
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

// ---- read-only tables ------------------------------------------------------------------

namespace {

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

}  // namespace

// Wraps the table on top of the stack in a read-only proxy and records both as protected.
// `iterable`: pairs() and # see the real table's contents: data tables such as anvil.settings,
// and the API's own tables (`for name in pairs(sys.fs)` lists its functions; every value it
// yields is a function or another proxy, never a real table).
void LockTable(lua_State* L, bool iterable) {
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

int PushSettingsProtected(lua_State* L) {
  PushSettings(L, *static_cast<const json*>(lua_touserdata(L, 1)), 0);
  return 1;
}

}  // namespace anvil::host::lua
