// The QuickJS runtime's bindings (js_internal.h): the globals a plugin sees. sys and editor are
// built from the plugin API description and its op table (policy/plugin_api): each function is
// bound generically (GenericCall, by its index in the description) unless it has a binding of
// its own (kCustom in InstallApi); anvil holds command registration and the settings; console
// and print go to the plugin log; require loads the plugin's own modules. Every object and
// function of the API is deep-frozen and bound to non-writable, non-configurable globals.
#include <quickjs.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fs/workspace_path.h"
#include "host/api_codec.h"
#include "host/js_internal.h"
#include "policy/plugin_api.h"

namespace anvil::host::js {
namespace {

constexpr size_t kMaxCommandName = 128;

bool ValidCommandName(std::string_view name) {
  if (name.empty() || name.size() > kMaxCommandName) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

// opts[key] when present (not undefined or null) must be a string.
bool OptionalStringField(JSContext* ctx, JSValueConst opts, const char* key, std::string_view what,
                         std::string* out, bool strict = true) {
  Value v(ctx, JS_GetPropertyStr(ctx, opts, key));
  if (v.exception()) return false;
  if (JS_IsUndefined(v.get()) || JS_IsNull(v.get())) return true;
  return StringArg(ctx, v.get(), what, out, strict);
}

bool OptionsArg(JSContext* ctx, JSValueConst v, std::string_view fn) {
  if (JS_IsObject(v) && !JS_IsFunction(ctx, v)) return true;
  ThrowCode(ctx, "invalid", std::string(fn) + " expects an options object");
  return false;
}

// ---- the plugin API -----------------------------------------------------------------------------

JSValue AnvilCommand(JsRuntime& self, JSContext* ctx, int argc, JSValueConst* argv) {
  std::string name;
  if (!StringArg(ctx, Arg(argc, argv, 0), "anvil.command: name", &name)) return JS_EXCEPTION;
  if (!ValidCommandName(name)) {
    return ThrowText(ctx, "invalid: command names are 1-128 characters of [A-Za-z0-9._-]");
  }
  JSValueConst fn = Arg(argc, argv, 1);
  if (!JS_IsFunction(ctx, fn)) {
    return ThrowText(ctx, "invalid: anvil.command: handler must be a function");
  }
  // A second registration of a name is a mistake (two handlers, one silently lost), never a
  // replacement: the plugin fails to load and says which name.
  if (!self.RegisterCommand(name, fn)) {
    return ThrowText(ctx, "invalid: anvil.command: '" + name +
                              "' is already registered (fix: give each command its own name)");
  }
  return JS_UNDEFINED;
}

// An options record (policy/plugin_api.h OptionsRecord) as request fields: undefined or null
// for the defaults, else an object whose own keys are the record's fields, each a boolean (or
// undefined); "1"/"0". A key it does not know is refused, naming the ones it knows: a misspelt
// option is a mistake, never silently the default.
bool OptionsFields(JSContext* ctx, JSValueConst v, const std::string& fn, const ApiRecord& record,
                   std::vector<std::string>& fields) {
  std::vector<bool> values(record.fields.size(), false);
  if (!JS_IsUndefined(v) && !JS_IsNull(v)) {
    const int is_array = JS_IsArray(ctx, v);
    if (is_array < 0) return false;
    if (!JS_IsObject(v) || JS_IsFunction(ctx, v) || is_array == 1) {
      ThrowCode(ctx, "invalid", fn + ": options must be an object");
      return false;
    }
    std::string known;
    for (const auto& f : record.fields) known += (known.empty() ? "" : ", ") + f.name;
    JSPropertyEnum* tab = nullptr;
    uint32_t len = 0;
    if (JS_GetOwnPropertyNames(ctx, &tab, &len, v, JS_GPN_STRING_MASK | JS_GPN_ENUM_ONLY) < 0) {
      return false;
    }
    std::vector<std::string> keys;
    bool ok = true;
    for (uint32_t i = 0; i < len; ++i) {
      const char* key = JS_AtomToCString(ctx, tab[i].atom);
      if (key == nullptr) {
        ok = false;
      } else {
        keys.emplace_back(key);
        JS_FreeCString(ctx, key);
      }
      JS_FreeAtom(ctx, tab[i].atom);
    }
    js_free(ctx, tab);
    if (!ok) return false;
    for (const std::string& key : keys) {
      size_t i = 0;
      while (i < record.fields.size() && record.fields[i].name != key) ++i;
      if (i == record.fields.size()) {
        ThrowCode(
            ctx, "invalid",
            fn + ": unknown option '" + QuotePathForMessage(key) + "' (known: " + known + ")");
        return false;
      }
      Value value(ctx, JS_GetPropertyStr(ctx, v, key.c_str()));
      if (value.exception()) return false;
      if (JS_IsUndefined(value.get())) continue;
      if (!JS_IsBool(value.get())) {
        ThrowCode(ctx, "invalid", fn + ": option '" + key + "' must be a boolean");
        return false;
      }
      values[i] = JS_ToBool(ctx, value.get()) == 1;
    }
  }
  for (bool b : values) fields.push_back(b ? "1" : "0");
  return true;
}

// What GenericCall needs of one described function, worked out once (the description is
// fixed for the life of the process): each parameter's options record, its name in error
// messages ("sys.fs.read: path"), and whether the reply is nothing.
struct GenericPlan {
  std::vector<const ApiRecord*> records;
  std::vector<std::string> what;
  bool replies_nothing = false;
};

const GenericPlan& PlanOf(size_t index) {
  static const std::vector<GenericPlan> plans = [] {
    const PluginApiDescription& api = PluginApi();
    std::vector<GenericPlan> out(api.functions.size());
    for (size_t i = 0; i < api.functions.size(); ++i) {
      const ApiFunction& f = api.functions[i];
      for (const ApiParam& p : f.params) {
        out[i].records.push_back(OptionsRecord(api, p));
        out[i].what.push_back(f.path + ": " + p.name);
      }
      const OpSpec* op = OpOf(api, f);
      out[i].replies_nothing = op != nullptr && op->encoding == ApiReply::kNothing;
    }
    return out;
  }();
  return plans.at(index);
}

// A function that leaves the host, bound from its description alone (GenericBinding); `magic`
// is its index in the description's functions. Strings are names (valid Unicode) unless the
// description says bytes; the reply is nothing or one string.
JSValue GenericCall(JsRuntime& self, JSContext* ctx, int argc, JSValueConst* argv,
                    const ApiFunction& f, const GenericPlan& plan) {
  std::vector<std::string> fields;
  fields.reserve(f.params.size());
  for (size_t i = 0; i < f.params.size(); ++i) {
    const ApiParam& p = f.params[i];
    JSValueConst v = Arg(argc, argv, static_cast<int>(i));
    if (const ApiRecord* record = plan.records[i]) {
      if (!OptionsFields(ctx, v, f.path, *record, fields)) return JS_EXCEPTION;
      continue;
    }
    std::string text;
    if (!StringArg(ctx, v, plan.what[i], &text, /*strict=*/!p.bytes)) return JS_EXCEPTION;
    fields.push_back(std::move(text));
  }
  auto reply = f.channel == ApiChannel::kEditor ? self.api().Editor(f.op, std::move(fields))
                                                : self.api().Gateway(f.op, std::move(fields));
  if (!reply) return ThrowError(ctx, reply.error());
  if (plan.replies_nothing) return JS_UNDEFINED;
  if (reply->size() != 1) return ThrowText(ctx, "io: malformed " + f.op + " reply");
  return NewString(ctx, (*reply)[0]);
}

// The same for a function bound from the description: `magic` is its index there.
JSValue BindGeneric(JSContext* ctx, JSValueConst /*this_val*/, int argc, JSValueConst* argv,
                    int magic) {
  try {
    JsRuntime& self = Self(ctx);
    if (!self.Admit(ctx)) return JS_EXCEPTION;
    const auto index = static_cast<size_t>(magic);
    return GenericCall(self, ctx, argc, argv, PluginApi().functions.at(index), PlanOf(index));
  } catch (const std::bad_alloc&) {
    return ThrowText(ctx, "limit: host memory exhausted");
  } catch (const std::exception&) {
    return ThrowText(ctx, "internal: unexpected host failure");
  }
}

JSValue FsList(JsRuntime& self, JSContext* ctx, int argc, JSValueConst* argv) {
  std::string dir;
  if (!StringArg(ctx, Arg(argc, argv, 0), "sys.fs.list: dir", &dir)) return JS_EXCEPTION;
  auto reply = self.api().Gateway("fs.list", {dir});
  if (!reply) return ThrowError(ctx, reply.error());
  auto listing = DecodeListing(*reply);
  if (!listing) return ThrowError(ctx, listing.error());
  Value list(ctx, JS_NewArray(ctx));
  if (list.exception()) return JS_EXCEPTION;
  uint32_t i = 0;
  for (const auto& e : listing->entries) {
    JSValue item = ObjectBuilder(ctx)
                       .Set("name", NewString(ctx, e.name))
                       .Set("type", NewString(ctx, e.type))
                       .Take();
    if (JS_IsException(item) ||
        JS_DefinePropertyValueUint32(ctx, list.get(), i++, item, JS_PROP_C_W_E) < 0) {
      return JS_EXCEPTION;
    }
  }
  // entries.omitted: how many entries were left out because their names are not valid
  // workspace path components (not UTF-8, control characters). Not enumerable, so JSON and
  // for-in see the entries only.
  if (JS_DefinePropertyValueStr(ctx, list.get(), "omitted",
                                JS_NewFloat64(ctx, static_cast<double>(listing->omitted)),
                                JS_PROP_CONFIGURABLE | JS_PROP_WRITABLE) < 0) {
    return JS_EXCEPTION;
  }
  return list.release();
}

JSValue FsStat(JsRuntime& self, JSContext* ctx, int argc, JSValueConst* argv) {
  std::string path;
  if (!StringArg(ctx, Arg(argc, argv, 0), "sys.fs.stat: path", &path)) return JS_EXCEPTION;
  auto reply = self.api().Gateway("fs.stat", {path});
  if (!reply) return ThrowError(ctx, reply.error());
  auto st = DecodeStat(*reply);
  if (!st) return ThrowError(ctx, st.error());
  return ObjectBuilder(ctx)
      .Set("type", NewString(ctx, st->type))
      .Set("size", JS_NewFloat64(ctx, static_cast<double>(st->size)))
      .Set("mtime", JS_NewFloat64(ctx, st->mtime))
      .Take();
}

// sys.net.fetch({url, method = "GET", headers = {}, body = null}) -> {status, headers, body}.
// Gateway fields: [url, method, JSON object of headers, body or ""] -> [status, JSON, body].
JSValue NetFetch(JsRuntime& self, JSContext* ctx, int argc, JSValueConst* argv) {
  JSValueConst opts = Arg(argc, argv, 0);
  if (!OptionsArg(ctx, opts, "sys.net.fetch")) return JS_EXCEPTION;
  std::string url, method = "GET", headers = "{}", body;
  if (!OptionalStringField(ctx, opts, "url", "sys.net.fetch: url", &url) ||
      !OptionalStringField(ctx, opts, "method", "sys.net.fetch: method", &method) ||
      !OptionalStringField(ctx, opts, "body", "sys.net.fetch: body", &body, /*strict=*/false)) {
    return JS_EXCEPTION;
  }
  if (url.empty()) return ThrowText(ctx, "invalid: sys.net.fetch needs a url");
  {
    Value h(ctx, JS_GetPropertyStr(ctx, opts, "headers"));
    if (h.exception()) return JS_EXCEPTION;
    if (!JS_IsUndefined(h.get()) && !JS_IsNull(h.get()) &&
        !StringsJson(self, ctx, h.get(), false,
                     "sys.net.fetch: headers must be an object of strings", &headers)) {
      return JS_EXCEPTION;
    }
  }
  auto reply = self.api().Gateway("net.fetch", {url, method, headers, body});
  if (!reply) return ThrowError(ctx, reply.error());
  if (reply->size() != 3) return ThrowText(ctx, "io: malformed net.fetch reply");
  const std::string& reply_headers = (*reply)[1];
  Value parsed(ctx, JS_ParseJSON(ctx, reply_headers.c_str(), reply_headers.size(), "<headers>"));
  if (parsed.exception()) {
    if (!DropOrdinaryException(self, ctx)) return JS_EXCEPTION;
    return ThrowText(ctx, "io: malformed net.fetch reply");
  }
  if (!JS_IsObject(parsed.get())) return ThrowText(ctx, "io: malformed net.fetch reply");
  return ObjectBuilder(ctx)
      .Set("status", JS_NewInt64(ctx, std::strtoll((*reply)[0].c_str(), nullptr, 10)))
      .Set("headers", parsed.release())
      .Set("body", NewString(ctx, (*reply)[2]))
      .Take();
}

// sys.exec({program, args = [], stdin = null}) -> {code, stdout, stderr, truncated, limit}.
// Gateway fields: [program, JSON array of args, stdin or ""] ->
// [code, stdout, stderr, stdout_truncated, stderr_truncated, limit].
JSValue Exec(JsRuntime& self, JSContext* ctx, int argc, JSValueConst* argv) {
  JSValueConst opts = Arg(argc, argv, 0);
  if (!OptionsArg(ctx, opts, "sys.exec")) return JS_EXCEPTION;
  std::string program, args = "[]", stdin_data;
  if (!OptionalStringField(ctx, opts, "program", "sys.exec: program", &program) ||
      !OptionalStringField(ctx, opts, "stdin", "sys.exec: stdin", &stdin_data,
                           /*strict=*/false)) {
    return JS_EXCEPTION;
  }
  if (program.empty()) return ThrowText(ctx, "invalid: sys.exec needs a program");
  {
    Value a(ctx, JS_GetPropertyStr(ctx, opts, "args"));
    if (a.exception()) return JS_EXCEPTION;
    if (!JS_IsUndefined(a.get()) && !JS_IsNull(a.get()) &&
        !StringsJson(self, ctx, a.get(), true, "sys.exec: args must be an array of strings",
                     &args)) {
      return JS_EXCEPTION;
    }
  }
  auto reply = self.api().Gateway("exec", {program, args, stdin_data});
  if (!reply) return ThrowError(ctx, reply.error());
  // [code, stdout, stderr, stdout_truncated, stderr_truncated, limit]
  if (reply->size() != 6) return ThrowText(ctx, "io: malformed exec reply");
  const auto& f = *reply;
  return ObjectBuilder(ctx)
      .Set("code", JS_NewInt64(ctx, std::strtoll(f[0].c_str(), nullptr, 10)))
      .Set("stdout", NewString(ctx, f[1]))
      .Set("stderr", NewString(ctx, f[2]))
      .Set("truncated", JS_NewBool(ctx, f[3] == "1" || f[4] == "1"))
      .Set("limit", f[5].empty() ? JS_NULL : NewString(ctx, f[5]))
      .Take();
}

JSValue BufferGet(JsRuntime& self, JSContext* ctx, int argc, JSValueConst* argv) {
  std::string uri;
  if (!StringArg(ctx, Arg(argc, argv, 0), "editor.buffer.get: uri", &uri)) return JS_EXCEPTION;
  auto reply = self.api().Editor("editor.buffer.get", {uri});
  if (!reply) return ThrowError(ctx, reply.error());
  auto buffer = DecodeBuffer(*reply);
  if (!buffer) return ThrowError(ctx, buffer.error());
  return ObjectBuilder(ctx)
      .Set("uri", NewString(ctx, buffer->uri))
      .Set("version", JS_NewInt64(ctx, buffer->version))
      .Set("text", NewString(ctx, buffer->text))
      .Take();
}

// editor.buffer.edit(uri, version, edits) -> true; the trusted side answers "stale: ..." when
// `version` is not the buffer's current one (invariant 8), and that is what is thrown.
JSValue BufferEdit(JsRuntime& self, JSContext* ctx, int argc, JSValueConst* argv) {
  std::string uri;
  if (!StringArg(ctx, Arg(argc, argv, 0), "editor.buffer.edit: uri", &uri)) return JS_EXCEPTION;
  JSValueConst version_v = Arg(argc, argv, 1);
  double version = 0;
  if (!JS_IsNumber(version_v) || JS_ToFloat64(ctx, &version, version_v) < 0 ||
      !std::isfinite(version) || std::trunc(version) != version || std::fabs(version) > 9.0e15) {
    return ThrowText(ctx, "invalid: editor.buffer.edit: version must be an integer");
  }
  JSValueConst edits_v = Arg(argc, argv, 2);
  std::string edits;
  bool ok = JS_IsObject(edits_v) && !JS_IsFunction(ctx, edits_v);
  if (ok && !JsonText(ctx, edits_v, &edits)) {
    if (!DropOrdinaryException(self, ctx)) return JS_EXCEPTION;
    ok = false;
  }
  if (!ok || edits.empty()) {
    return ThrowText(ctx,
                     "invalid: editor.buffer.edit: edits must be JSON data (an array or object)");
  }
  auto reply = self.api().Editor("editor.buffer.edit",
                                 {uri, std::to_string(static_cast<int64_t>(version)), edits});
  if (!reply) return ThrowError(ctx, reply.error());
  return JS_TRUE;
}

constexpr const char* kLogLevels[] = {"info", "warn", "error", "debug"};

template <int Level>
JSValue Log(JsRuntime& self, JSContext* ctx, int argc, JSValueConst* argv) {
  std::string line, item;
  for (int i = 0; i < argc; ++i) {
    if (!DisplayText(self, ctx, argv[i], &item)) return JS_EXCEPTION;
    if (i > 0) line += ' ';
    line += item;
  }
  self.api().Log(kLogLevels[Level], line);
  return JS_UNDEFINED;
}

JSValue Require(JsRuntime& self, JSContext* ctx, int argc, JSValueConst* argv) {
  std::string name;
  if (!StringArg(ctx, Arg(argc, argv, 0), "require: module name", &name)) return JS_EXCEPTION;
  return self.RequireModule(name);
}

}  // namespace

Status JsRuntime::InstallApi() {
  Value global(ctx_, JS_GetGlobalObject(ctx_));
  Value object_ctor(ctx_, JS_GetPropertyStr(ctx_, global.get(), "Object"));
  Value freeze(ctx_, JS_GetPropertyStr(ctx_, object_ctor.get(), "freeze"));
  bool ok = !object_ctor.exception() && !freeze.exception();
  std::vector<Value> made;  // every object and function of the API, to freeze

  auto fn = [&](const char* name, JSCFunction* f, int length) {
    JSValue v = JS_NewCFunction2(ctx_, f, name, length, JS_CFUNC_generic, 0);
    if (JS_IsException(v)) ok = false;
    made.emplace_back(ctx_, JS_DupValue(ctx_, v));
    return v;
  };
  auto obj = [&]() {
    JSValue v = JS_NewObject(ctx_);
    if (JS_IsException(v)) ok = false;
    made.emplace_back(ctx_, JS_DupValue(ctx_, v));
    return v;
  };
  auto put = [&](JSValueConst target, const char* key, JSValue v) {
    if (JS_IsException(v) || JS_DefinePropertyValueStr(ctx_, target, key, v, JS_PROP_C_W_E) < 0) {
      ok = false;
    }
  };

  Value anvil(ctx_, obj());
  put(anvil.get(), "command", fn("command", &Bind<AnvilCommand>, 2));
  {
    const json settings = json::parse(settings_json_, nullptr, false);
    if (!settings.is_object()) return Fail("invalid", "plugin settings are not a JSON object");
    put(anvil.get(), "settings", SettingsValue(ctx_, settings, 0, made, &ok));
  }

  // sys and editor: every function that leaves the host, from the description (plugin_api.h).
  // A top-level namespace is built here when every member beneath it leaves the host; each
  // function is bound generically or by its own binding, and one with neither (or a binding the
  // description does not name) stops the runtime from starting.
  struct Custom {
    JSCFunction* f;
    int length;
  };
  static const std::map<std::string, Custom, std::less<>> kCustom = {
      {"sys.fs.list", {&Bind<FsList>, 1}},          {"sys.fs.stat", {&Bind<FsStat>, 1}},
      {"sys.net.fetch", {&Bind<NetFetch>, 1}},      {"sys.exec", {&Bind<Exec>, 1}},
      {"editor.buffer.get", {&Bind<BufferGet>, 1}}, {"editor.buffer.edit", {&Bind<BufferEdit>, 3}},
  };
  const PluginApiDescription& api = PluginApi();
  auto in_js = [](ApiRuntimes r) { return InRuntime(r, /*js=*/true); };
  std::set<std::string> roots;
  for (const auto& n : api.namespaces) {
    if (in_js(n.runtimes) && n.path.find('.') == std::string::npos) roots.insert(n.path);
  }
  for (const auto& f : api.functions) {
    if (in_js(f.runtimes) && f.channel == ApiChannel::kLocal) {
      roots.erase(f.path.substr(0, f.path.find('.')));
    }
  }
  for (const auto& v : api.values) roots.erase(v.path.substr(0, v.path.find('.')));
  std::set<std::string> bound;
  std::string unbound;
  std::function<JSValue(const std::string&)> build = [&](const std::string& prefix) -> JSValue {
    JSValue ns = obj();
    for (const auto& n : api.namespaces) {
      if (in_js(n.runtimes) && ApiParentPath(n.path) == prefix) {
        put(ns, ApiLeafName(n.path).c_str(), build(n.path));
      }
    }
    for (size_t i = 0; i < api.functions.size(); ++i) {
      const ApiFunction& f = api.functions[i];
      if (!in_js(f.runtimes) || ApiParentPath(f.path) != prefix) continue;
      const std::string name = ApiLeafName(f.path);
      const int length = static_cast<int>(f.params.size());
      if (auto it = kCustom.find(f.path); it != kCustom.end()) {
        put(ns, name.c_str(), fn(name.c_str(), it->second.f, it->second.length));
      } else if (GenericBinding(api, f)) {
        JSValue v = JS_NewCFunctionMagic(ctx_, &BindGeneric, name.c_str(), length,
                                         JS_CFUNC_generic_magic, static_cast<int>(i));
        if (JS_IsException(v)) ok = false;
        made.emplace_back(ctx_, JS_DupValue(ctx_, v));
        put(ns, name.c_str(), v);
      } else {
        unbound = f.path;
        continue;
      }
      bound.insert(f.path);
    }
    return ns;
  };
  std::vector<std::pair<std::string, Value>> wired;
  for (const auto& root : roots) wired.emplace_back(root, Value(ctx_, build(root)));
  if (!unbound.empty()) return Fail("internal", "no JS binding for " + unbound);
  for (const auto& [path, binding] : kCustom) {
    if (!bound.contains(path)) {
      return Fail("internal", "a JS binding for " + path + ", which is not described");
    }
  }

  Value console(ctx_, obj());
  put(console.get(), "log", fn("log", &Bind<Log<0>>, 0));
  put(console.get(), "info", fn("info", &Bind<Log<0>>, 0));
  put(console.get(), "warn", fn("warn", &Bind<Log<1>>, 0));
  put(console.get(), "error", fn("error", &Bind<Log<2>>, 0));
  put(console.get(), "debug", fn("debug", &Bind<Log<3>>, 0));

  Value print(ctx_, fn("print", &Bind<Log<0>>, 0));
  Value require(ctx_, fn("require", &Bind<Require>, 1));
  if (!ok) {
    ClearException();
    return Fail("limit", "cannot create the plugin API");
  }

  // Deep-frozen (Object.freeze, taken before any plugin code ran, on every object and function
  // of the API) and bound to non-writable, non-configurable globals: no plugin code, in the
  // entry or in a module, can swap sys.fs.read for the code that runs after it.
  for (const Value& v : made) {
    JSValueConst arg[] = {v.get()};
    Value r(ctx_, JS_Call(ctx_, freeze.get(), object_ctor.get(), 1, arg));
    if (r.exception()) ok = false;
  }
  std::vector<std::pair<std::string, Value*>> globals = {
      {"anvil", &anvil}, {"console", &console}, {"print", &print}, {"require", &require}};
  for (auto& [name, value] : wired) globals.emplace_back(name, &value);
  for (const auto& [name, value] : globals) {
    if (JS_DefinePropertyValueStr(ctx_, global.get(), name.c_str(), value->release(), 0) < 0) {
      ok = false;
    }
  }
  if (!ok) {
    ClearException();
    return Fail("limit", "cannot lock the plugin API");
  }
  return Ok();
}

}  // namespace anvil::host::js
