// The plugin API, described once: every function and value a plugin sees under `anvil`, `sys`
// and `editor`, the globals Anvil adds or replaces (`print`, `require`, `console`, Lua's `warn`
// and `os`), and every operation a call becomes when it leaves the plugin host (OpSpec: the
// channel, the request and reply fields, the grant, how its paths are checked, whether the
// gateway may answer it inline, the audit target, how the reply becomes the plugin's value;
// docs/protocol.md, "Operations").
//
// Who reads it:
//  - gateway/dispatch.cc checks every request against its OpSpec (field count, paths normalized
//    and checked against the op's grant, the audit target) before the op's handler runs, and
//    the gateway answers an op inline only when its OpSpec says so.
//  - host/lua_bindings.cc and host/js_bindings.cc bind every function that leaves the host from
//    this table: a function whose parameters are strings and options records and whose reply
//    is nothing or one string needs no code of its own in either runtime (GenericBinding); the
//    others (a listing, a record built from several fields) name a hand-written binding, and a
//    runtime refuses to start when one is missing.
//  - `anvil plugin new` / `anvil plugin types` generate the editor-support files from it
//    (anvil.d.ts for TypeScript/JS, the LuaLS ---@meta file; policy/plugin_api_stubs.h).
//  - tests/host/plugin_api_test.cc walks the live globals of both runtimes and fails when a
//    runtime binds something the description does not name, or the description names something
//    a runtime lacks, or an op has no function in Lua and in JS; it calls every wire-bound
//    function and checks the op, the request fields and the shape of the result against this
//    table. tests/unit/plugin_api_test.cc fails when docs/plugin-api.md or docs/protocol.md
//    does not name a function or an op.
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
#include <string_view>
#include <vector>

#include "common/result.h"

namespace anvil {

enum class ApiRuntimes { kLua, kJs, kBoth };
bool InRuntime(ApiRuntimes runtimes, bool js);

// A dotted API path's parent ("sys.fs.read" -> "sys.fs"; "" for a top-level name) and last name
// ("read").
std::string ApiParentPath(const std::string& path);
std::string ApiLeafName(const std::string& path);

// Where a call goes: nowhere (answered inside the VM), the gateway (the plugin channel), or the
// trusted side (the session channel: editor.*).
enum class ApiChannel { kLocal, kGateway, kEditor };

struct ApiParam {
  std::string name;
  std::string type;
  bool optional = false;
  bool variadic = false;  // any number of values (print, console.log)
  std::string doc;
  // A string of any bytes (file contents, shown text) rather than a name, which must be UTF-8
  // text (Lua) / valid Unicode (JS) and is refused otherwise.
  bool bytes = false;
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
  // Request fields only: may be left out by a client (only trailing fields). A binding sends
  // every field.
  bool optional = false;
  // Request fields only: a workspace path, normalized and checked against the op's grant
  // before the op runs.
  bool path = false;
};

// How the reply's fields become the value the plugin gets.
enum class ApiReply {
  kNothing,  // no fields; the call returns nothing
  kString,   // one field, returned as it is (bytes)
  kCustom,   // decoded by the function's own binding in each runtime
};

// One operation of the wire protocol (docs/protocol.md, "Operations").
struct OpSpec {
  std::string op;  // "fs.read"
  ApiChannel channel = ApiChannel::kGateway;
  // The manifest permission it is checked against ([permissions] key), "" for none. Path fields
  // are checked against the fs.read or fs.write globs; the other ops check theirs in their
  // handlers (net.hosts, exec) or on the trusted side (editor.*).
  std::string grant;
  bool root_allowed = false;  // a path field may name the workspace root (".")
  // Read-only and short: the gateway may answer it on its event loop instead of a worker.
  bool runs_inline = false;
  // No plugin function: a transport round trip (ping).
  bool internal = false;
  std::vector<ApiWireField> request;
  std::vector<ApiWireField> reply;
  // The audit line's target: text with {field} replaced by that request field ("{from} ->
  // {to}"); a handler may refine it (exec adds the checked args).
  std::string audit_target;
  ApiReply encoding = ApiReply::kNothing;
  std::string doc;  // one line: what the reply holds, for docs/protocol.md
};

struct ApiFunction {
  std::string path;  // "sys.fs.read"; a top-level global has no dot ("print")
  ApiRuntimes runtimes = ApiRuntimes::kBoth;
  std::vector<ApiParam> params;
  std::string result = "nil";
  std::string doc;
  ApiChannel channel = ApiChannel::kLocal;
  std::string op;                   // the OpSpec it becomes; empty for kLocal
  std::vector<std::string> errors;  // codes a call may raise besides limit/timeout/cancelled
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
  std::vector<OpSpec> ops;
};

// The op table, one OpSpec per wire op (plugin_api_ops.cc): PluginApi().ops.
std::vector<OpSpec> PluginApiOps();

// The description (built once; the same object on every call).
const PluginApiDescription& PluginApi();

// The op named `op` of PluginApi(), or null.
const OpSpec* FindOp(std::string_view op);
// The op of `api` a function becomes, or null (a local function, or an unknown op).
const OpSpec* OpOf(const PluginApiDescription& api, const ApiFunction& function);
// The manifest permission a function's call is checked against, "" for none.
std::string GrantOf(const PluginApiDescription& api, const ApiFunction& function);
// The record a parameter's type names when it is an options record (an input record of
// optional boolean fields: each field is one request field, "1" or "0"), or null.
const ApiRecord* OptionsRecord(const PluginApiDescription& api, const ApiParam& param);
// True when a runtime binds `function` from the table alone: it leaves the host, its reply is
// nothing or one string, and every parameter is a string or an options record. Its request
// fields are then its parameters in order, each options record spread into its fields.
bool GenericBinding(const PluginApiDescription& api, const ApiFunction& function);

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
// given twice for one runtime, a wire-bound function without an op or with another channel's,
// an op no function uses in Lua and in JS, a generic binding whose parameters do not make the
// op's request fields, an unknown grant. Empty when it is consistent (a unit test asserts that).
std::vector<std::string> CheckPluginApiDescription(const PluginApiDescription& api);

}  // namespace anvil
