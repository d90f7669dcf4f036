// The plugin API, described once: every function and value a plugin sees under `anvil`, `sys`
// and `editor`, and the globals Anvil adds or replaces (`print`, `require`, `console`, Lua's
// `warn` and `os`). Each entry names its parameters and result in one small type vocabulary,
// the manifest permission it needs, a one-line doc, and — for a call that leaves the plugin
// host — the request it becomes: the channel, the op, the request fields and the reply fields
// (docs/protocol.md, "Operations").
//
// Who reads it:
//  - `anvil plugin new` / `anvil plugin types` generate the editor-support files from it
//    (anvil.d.ts for TypeScript/JS, the LuaLS ---@meta file; policy/plugin_api_stubs.h).
//  - tests/host/plugin_api_test.cc walks the live globals of both runtimes and fails when a
//    runtime binds something the description does not name, or the description names something
//    a runtime lacks; it calls every wire-bound function and checks the op, the number of
//    request fields and the shape of the result against this table.
// The runtimes (host/lua_runtime.cc, host/js_runtime.cc) still bind the API by hand and the
// gateway dispatches by hand (gateway/dispatch.cc); the table carries what a table-driven
// dispatch and binding would need (name, arguments, grant, reply encoding), so it can become
// that table without changing shape.
//
// Type expressions (ApiParam::type, ApiField::type, ApiFunction::result, ApiValue::type):
//   string  integer  number  boolean  any (JSON data)  nil (a result: returns nothing)
//   Name               a record (ApiRecord) or an alias (ApiAlias) of this description
//   T[]                a list (Lua: a sequence table; JS: an array)
//   map<T>             string keys to T (Lua: table<string, T>; JS: Record<string, T>)
//   "text"             a string literal
//   A|B                either
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace anvil {

enum class ApiRuntimes { kLua, kJs, kBoth };
bool InRuntime(ApiRuntimes runtimes, bool js);

// Where a call goes: nowhere (answered inside the VM), the gateway (the plugin channel), or the
// trusted side (the session channel: editor.*).
enum class ApiChannel { kLocal, kGateway, kEditor };

struct ApiParam {
  std::string name;
  std::string type;
  bool optional = false;
  bool variadic = false;  // any number of values (print, console.log)
  std::string doc;
};

struct ApiField {
  std::string name;
  std::string type;
  // An input record's field may be left out (nil/undefined/null); an output record's field may
  // be absent (Lua: nil) or null (JS).
  bool optional = false;
  std::string doc;
};

struct ApiRecord {
  std::string name;    // "FsEntry": LuaLS class anvil.FsEntry, TypeScript Anvil.FsEntry
  bool input = false;  // built by the plugin (an options table) rather than returned to it
  std::string doc;
  std::vector<ApiField> fields;
};

// A named type: a type expression, or (a function type, recursive JSON data) text spelled per
// language.
struct ApiAlias {
  std::string name;
  std::string type;        // a type expression; empty when spelled per language below
  std::string lua;         // LuaLS type text
  std::string typescript;  // TypeScript type text
  std::string doc;
};

// One field of a request or reply frame; `example` is a well-formed value (tests feed it to the
// bindings as the reply).
struct ApiWireField {
  std::string name;
  std::string example;
};

struct ApiFunction {
  std::string path;  // "sys.fs.read"; a top-level global has no dot ("print")
  ApiRuntimes runtimes = ApiRuntimes::kBoth;
  std::vector<ApiParam> params;
  std::string result = "nil";
  std::string doc;
  // The manifest permission the call is checked against ([permissions] key), "" for none.
  std::string grant;
  ApiChannel channel = ApiChannel::kLocal;
  std::string op;  // the frame's op ("fs.read", "editor.buffer.get"); empty for kLocal
  std::vector<std::string> request;  // request fields, in order
  std::vector<ApiWireField> reply;   // reply fields, in order
  std::vector<std::string> errors;   // codes a call may raise besides limit/timeout/cancelled
};

// A table of the API (`sys.fs`): every proper prefix of a function's or value's path is one.
struct ApiNamespace {
  std::string path;
  ApiRuntimes runtimes = ApiRuntimes::kBoth;
  std::string doc;
};

// A member that is data, not a function (anvil.settings).
struct ApiValue {
  std::string path;
  ApiRuntimes runtimes = ApiRuntimes::kBoth;
  std::string type;
  std::string doc;
};

struct PluginApiDescription {
  std::vector<ApiAlias> aliases;
  std::vector<ApiRecord> records;
  std::vector<ApiNamespace> namespaces;
  std::vector<ApiFunction> functions;
  std::vector<ApiValue> values;
};

// The description (built once; the same object on every call).
const PluginApiDescription& PluginApi();

// A parsed type expression (the grammar above).
struct ApiType {
  enum class Kind { kName, kLiteral, kList, kMap, kUnion };
  Kind kind = Kind::kName;
  std::string text;               // kName: the name; kLiteral: the literal's text
  std::vector<ApiType> children;  // kList/kMap: one element type; kUnion: the alternatives
};
// "invalid" with the position when `expression` does not parse.
Result<ApiType> ParseApiType(std::string_view expression);

// Every problem of the description itself: a type that does not parse or names nothing, a path
// given twice for one runtime, a wire-bound function without an op, an unknown grant. Empty
// when it is consistent (a unit test asserts that).
std::vector<std::string> CheckPluginApiDescription(const PluginApiDescription& api);

}  // namespace anvil
