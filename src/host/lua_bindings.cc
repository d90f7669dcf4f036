// The Lua runtime's bindings (lua_internal.h): the globals a plugin sees. sys and editor are
// built from the plugin API description and its op table (policy/plugin_api): each function is
// bound generically (GenericCall) unless it has a binding of its own (CustomBindings); anvil
// holds command registration and the settings; the base library keeps print/warn (the plugin
// log), a rawset that refuses Anvil's tables, a reduced collectgarbage, require (the plugin's
// own modules) and os.time/os.clock.
//
// Lua is compiled as C++ (cmake/ThirdParty.cmake): lua_error unwinds with an exception, so the
// destructors of the C++ objects in these bindings run when a plugin error crosses them.
#include <lauxlib.h>
#include <lua.h>

#include <cctype>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <set>

#include "fs/workspace_path.h"
#include "host/api_codec.h"
#include "host/lua_internal.h"
#include "policy/plugin_api.h"

namespace anvil::host::lua {
namespace {

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
  json headers =
      lua_isnil(L, -1) ? json::object() : ToJson(L, -1, "sys.net.fetch: the headers table");
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
  json args = lua_isnil(L, -1) ? json::array() : ToJson(L, -1, "sys.exec: the args table");
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
  json edits = ToJson(L, 3, "editor.buffer.edit: the edits table");
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

int Print(lua_State* L) {
  Self(L)->api().Log("info", JoinArgs(L));
  return 0;
}

int Warn(lua_State* L) {
  Self(L)->api().Log("warn", JoinArgs(L));
  return 0;
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

void SetFunctions(lua_State* L, const luaL_Reg* fns) { luaL_setfuncs(L, fns, 0); }

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
      ANVIL_RETURN_IF_ERROR(build(n.path));
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
    ANVIL_RETURN_IF_ERROR(build(root));
    lua_setfield(L, g, root.c_str());
  }
  for (const auto& [path, binding] : CustomBindings()) {
    if (!bound.contains(path))
      return Fail("internal", "a Lua binding for " + path + ", which is not described");
  }
  return Ok();
}

}  // namespace

std::string ModuleFile(std::string name) {
  for (char& c : name) {
    if (c == '.') c = '/';
  }
  return name + ".lua";
}

Status InstallPluginApi(lua_State* L, int g, const std::string& settings_json) {
  const luaL_Reg base[] = {{"print", Api<Print>},     {"warn", Api<Warn>},
                           {"rawset", RawSetGuarded}, {"collectgarbage", CollectGarbage},
                           {"require", Require},      {nullptr, nullptr}};
  SetFunctions(L, base);
  lua_getfield(L, g, "string");
  lua_pushnil(L);
  lua_setfield(L, -2, "dump");
  lua_pop(L, 1);
  lua_createtable(L, 0, 2);
  const luaL_Reg os[] = {{"time", OsTime}, {"clock", OsClock}, {nullptr, nullptr}};
  SetFunctions(L, os);
  lua_setfield(L, g, "os");

  // anvil, sys, editor: read-only proxies (a plugin cannot swap sys.fs.read under a module).
  lua_newtable(L);
  const luaL_Reg anvil_fns[] = {{"command", AnvilCommand}, {nullptr, nullptr}};
  SetFunctions(L, anvil_fns);
  {
    const json settings = json::parse(settings_json, nullptr, false);
    if (!settings.is_object()) return Fail("invalid", "plugin settings are not a JSON object");
    lua_pushcfunction(L, PushSettingsProtected);
    lua_pushlightuserdata(L, const_cast<json*>(&settings));
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
      return Fail("limit", "cannot build anvil.settings within the VM's budget");
    }
    lua_setfield(L, -2, "settings");
  }
  LockTable(L);
  lua_setfield(L, g, "anvil");

  // sys and editor: every function that leaves the host, from the description.
  return InstallWired(L, g);
}

}  // namespace anvil::host::lua
