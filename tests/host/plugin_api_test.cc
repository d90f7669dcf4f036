// The plugin API description (policy/plugin_api.h) against the live runtimes. The editor types
// that `anvil plugin new` writes are generated from the description, so this is what keeps them
// true: each runtime binds exactly what the description names (no binding without an entry, no
// entry without a binding), and every call that leaves the host sends the described op with the
// described number of fields and gives the plugin a value of the described type.
#include "policy/plugin_api.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "fake_host_api.h"
#include "host/runtime.h"

namespace anvil::host {
namespace plugin_api_test {
namespace {

using nlohmann::json;
using testing::FakeHostApi;

// Globals of the language and of the standard library the runtimes keep as they are; the
// description covers what Anvil adds or replaces. A global in neither (a binding added without a
// description, or one a Lua/QuickJS upgrade brought) fails the test: describe it, or review it
// and list it here.
// clang-format off
const std::set<std::string> kLuaStandard = {
    "_G", "_VERSION", "assert", "collectgarbage", "coroutine", "error", "getmetatable", "ipairs",
    "load", "math", "next", "pairs", "pcall", "rawequal", "rawget", "rawlen", "rawset", "select",
    "setmetatable", "string", "table", "tonumber", "tostring", "type", "utf8", "xpcall"};
const std::set<std::string> kJsStandard = {
    "AggregateError", "Array", "ArrayBuffer", "Atomics", "BigInt", "BigInt64Array",
    "BigUint64Array", "Boolean", "DataView", "Date", "Error", "EvalError", "Float32Array",
    "Float64Array", "Function", "Infinity", "Int16Array", "Int32Array", "Int8Array",
    "InternalError", "JSON", "Map", "Math", "NaN", "Number", "Object", "Promise", "Proxy",
    "RangeError", "ReferenceError", "Reflect", "RegExp", "Set", "SharedArrayBuffer", "String",
    "Symbol", "SyntaxError", "TypeError", "URIError", "Uint16Array", "Uint32Array", "Uint8Array",
    "Uint8ClampedArray", "WeakMap", "WeakSet", "decodeURI", "decodeURIComponent", "encodeURI",
    "encodeURIComponent", "escape", "eval", "globalThis", "isFinite", "isNaN", "parseFloat",
    "parseInt", "undefined", "unescape"};
// clang-format on

const char* Name(bool js) { return js ? "JS" : "Lua"; }

std::unique_ptr<Runtime> Make(FakeHostApi& api, bool js) {
  return js ? MakeJsRuntime(api, RuntimeLimits{}) : MakeLuaRuntime(api, RuntimeLimits{});
}

// Loads `code` (it registers command "t"), runs "t" and returns its result as JSON.
Result<json> RunT(FakeHostApi& api, bool js, const std::string& code) {
  auto rt = Make(api, js);
  if (!rt) return Fail("internal", "no runtime");
  if (auto s = rt->Load({js ? "main.js" : "main.lua", code, {}}); !s) {
    return tl::unexpected(s.error());
  }
  auto r = rt->RunCommand("t", "[]");
  if (!r) return tl::unexpected(r.error());
  return json::parse(*r);
}

bool Top(const std::string& path) { return path.find('.') == std::string::npos; }

struct Described {
  std::set<std::string> functions, values, namespaces;
};
Described DescribedFor(bool js) {
  Described d;
  for (const auto& f : PluginApi().functions) {
    if (InRuntime(f.runtimes, js)) d.functions.insert(f.path);
  }
  for (const auto& v : PluginApi().values) {
    if (InRuntime(v.runtimes, js)) d.values.insert(v.path);
  }
  for (const auto& n : PluginApi().namespaces) {
    if (InRuntime(n.runtimes, js)) d.namespaces.insert(n.path);
  }
  return d;
}

// What the plugin sees: every global (name -> type), and every member beneath the described
// top-level namespaces, down to the described values (anvil.settings is data, not API).
json LiveApi(bool js) {
  const Described d = DescribedFor(js);
  json roots = json::array(), stop = json::array();
  for (const auto& n : d.namespaces) {
    if (Top(n)) roots.push_back(n);
  }
  for (const auto& v : d.values) stop.push_back(v);
  std::string code;
  if (js) {
    code = "const stop = new Set(" + stop.dump() + "), roots = " + roots.dump() + ";\n" + R"(
anvil.command('t', () => {
  const out = {};
  for (const k of Object.getOwnPropertyNames(globalThis)) out[k] = typeof globalThis[k];
  const walk = (prefix, o, depth) => {
    for (const k of Object.getOwnPropertyNames(o)) {
      const v = o[k], path = prefix + '.' + k;
      out[path] = typeof v;
      if (v !== null && typeof v === 'object' && !stop.has(path) && depth < 5) walk(path, v, depth + 1);
    }
  };
  for (const r of roots) {
    if (globalThis[r] !== null && typeof globalThis[r] === 'object') walk(r, globalThis[r], 1);
  }
  return out;
});)";
  } else {
    std::string stop_table = "{";
    for (const auto& v : stop) stop_table += "[" + v.dump() + "] = true, ";
    std::string roots_table = "{";
    for (const auto& r : roots) roots_table += r.dump() + ", ";
    code = "local stop, roots = " + stop_table + "}, " + roots_table + "}\n" + R"(
anvil.command('t', function()
  local out = {}
  for k, v in pairs(_G) do out[k] = type(v) end
  local function walk(prefix, t, depth)
    for k, v in pairs(t) do
      local path = prefix .. '.' .. tostring(k)
      out[path] = type(v)
      if type(v) == 'table' and not stop[path] and depth < 5 then walk(path, v, depth + 1) end
    end
  end
  for _, r in ipairs(roots) do
    if type(_G[r]) == 'table' then walk(r, _G[r], 1) end
  end
  return out
end))";
  }
  FakeHostApi api;
  auto live = RunT(api, js, code);
  EXPECT_TRUE(live) << Name(js) << ": " << live.error().ToString();
  return live ? *live : json::object();
}

// What differs between the live API and the description: each problem a sentence.
std::vector<std::string> Compare(const json& live, const Described& d, bool js) {
  std::vector<std::string> problems;
  const std::string table_type = js ? "object" : "table";
  const std::string lang = Name(js);
  for (const auto& f : d.functions) {
    if (live.value(f, "missing") != "function") {
      problems.push_back(lang + " has no function " + f + " although the description names it");
    }
  }
  for (const auto& n : d.namespaces) {
    if (live.value(n, "missing") != table_type) {
      problems.push_back(lang + " has no table " + n + " although the description names it");
    }
  }
  for (const auto& v : d.values) {
    if (!live.contains(v)) problems.push_back(lang + " has no " + v);
  }
  const auto& standard = js ? kJsStandard : kLuaStandard;
  for (const auto& [path, type] : live.items()) {
    const bool described =
        d.functions.contains(path) || d.values.contains(path) || d.namespaces.contains(path);
    if (described) continue;
    if (!Top(path)) {
      problems.push_back(lang + " binds " + path + " (" + type.get<std::string>() +
                         ") but the plugin API description does not name it");
    } else if (!standard.contains(path)) {
      problems.push_back(lang + " has a global " + path + " (" + type.get<std::string>() +
                         ") that the plugin API description does not name (describe it in "
                         "src/policy/plugin_api.cc, or list it as the language's own here)");
    }
  }
  for (const auto& name : standard) {
    if (d.functions.contains(name) || d.namespaces.contains(name)) {
      problems.push_back(name + " is both described and listed as the language's own");
    }
  }
  return problems;
}

class PluginApiMatchesTheRuntimes : public ::testing::TestWithParam<bool> {};

TEST_P(PluginApiMatchesTheRuntimes, EveryBindingIsDescribedAndEveryDescribedMemberIsBound) {
  const bool js = GetParam();
  const json live = LiveApi(js);
  ASSERT_FALSE(live.empty());
  EXPECT_EQ(Compare(live, DescribedFor(js), js), std::vector<std::string>{});
}

// The comparison sees both kinds of drift: a described function a runtime lacks (a binding
// removed, or a description added first), and a binding the description lacks.
TEST_P(PluginApiMatchesTheRuntimes, TheComparisonSeesAMissingAndAnUndescribedBinding) {
  const bool js = GetParam();
  const json live = LiveApi(js);
  Described d = DescribedFor(js);
  d.functions.insert("sys.fs.chmod");  // described, but no runtime binds it
  auto problems = Compare(live, d, js);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("no function sys.fs.chmod"), std::string::npos) << problems[0];

  d = DescribedFor(js);
  d.functions.erase("sys.fs.stat");
  problems = Compare(live, d, js);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("binds sys.fs.stat (function) but"), std::string::npos) << problems[0];

  d = DescribedFor(js);
  d.functions.erase("print");
  problems = Compare(live, d, js);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("a global print"), std::string::npos) << problems[0];
}

// ---- every call that leaves the host ---------------------------------------------------------

const ApiRecord* FindRecord(const std::string& name) {
  for (const auto& r : PluginApi().records) {
    if (r.name == name) return &r;
  }
  return nullptr;
}
const ApiAlias* FindAlias(const std::string& name) {
  for (const auto& a : PluginApi().aliases) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

ApiType Parse(const std::string& expression) {
  auto t = ParseApiType(expression);
  EXPECT_TRUE(t) << expression;
  return t ? *t : ApiType{ApiType::Kind::kName, "any", {}};
}

// An argument of type `t`, as source text of the language: every field of a record filled.
std::string Sample(const ApiType& t, bool js) {
  switch (t.kind) {
    case ApiType::Kind::kLiteral:
      return json(t.text).dump();
    case ApiType::Kind::kUnion:
      return Sample(t.children.front(), js);
    case ApiType::Kind::kList:
      return (js ? "[" : "{") + Sample(t.children.front(), js) + (js ? "]" : "}");
    case ApiType::Kind::kMap:
      return js ? "{k: " + Sample(t.children.front(), js) + "}"
                : "{k = " + Sample(t.children.front(), js) + "}";
    case ApiType::Kind::kName:
      break;
  }
  if (t.text == "string" || t.text == "any") return "\"a\"";
  if (t.text == "integer") return "1";
  if (t.text == "number") return "1.5";
  if (t.text == "boolean") return "true";
  if (const ApiRecord* r = FindRecord(t.text)) {
    std::string out = "{";
    for (const auto& f : r->fields) {
      out += js ? json(f.name).dump() + ": " : "[" + json(f.name).dump() + "] = ";
      out += Sample(Parse(f.type), js) + ", ";
    }
    return out + "}";
  }
  if (const ApiAlias* a = FindAlias(t.text)) {
    if (!a->type.empty()) return Sample(Parse(a->type), js);
    if (a->name == "CommandHandler") return js ? "() => {}" : "function() end";
  }
  return "\"a\"";
}

// Why `v` is not a value of type `t` ("" when it is). `optional`: absent/null allowed.
std::string Mismatch(const ApiType& t, const json& v, const std::string& where) {
  switch (t.kind) {
    case ApiType::Kind::kLiteral:
      return v == json(t.text) ? "" : where + " is " + v.dump() + ", not \"" + t.text + "\"";
    case ApiType::Kind::kUnion:
      for (const auto& c : t.children) {
        if (Mismatch(c, v, where).empty()) return "";
      }
      return where + " is " + v.dump() + ", none of its alternatives";
    case ApiType::Kind::kList:
      // Lua gives an empty table as {}.
      if (!v.is_array() && !(v.is_object() && v.empty())) return where + " is not a list";
      for (size_t i = 0; i < v.size() && v.is_array(); ++i) {
        if (auto m = Mismatch(t.children.front(), v[i], where + "[" + std::to_string(i) + "]");
            !m.empty()) {
          return m;
        }
      }
      return "";
    case ApiType::Kind::kMap:
      if (!v.is_object()) return where + " is not a map";
      for (const auto& [k, x] : v.items()) {
        if (auto m = Mismatch(t.children.front(), x, where + "." + k); !m.empty()) return m;
      }
      return "";
    case ApiType::Kind::kName:
      break;
  }
  const std::string& n = t.text;
  if (n == "any") return "";
  if (n == "nil") return v.is_null() ? "" : where + " should be nothing, is " + v.dump();
  if (n == "string") return v.is_string() ? "" : where + " is not a string: " + v.dump();
  if (n == "integer") return v.is_number_integer() ? "" : where + " is not an integer: " + v.dump();
  if (n == "number") return v.is_number() ? "" : where + " is not a number: " + v.dump();
  if (n == "boolean") return v.is_boolean() ? "" : where + " is not a boolean: " + v.dump();
  if (const ApiRecord* r = FindRecord(n)) {
    if (!v.is_object()) return where + " is not a " + n + ": " + v.dump();
    std::set<std::string> fields;
    for (const auto& f : r->fields) {
      fields.insert(f.name);
      const bool present = v.contains(f.name) && !v[f.name].is_null();
      if (!present) {
        if (!f.optional) return where + "." + f.name + " (" + n + ") is missing";
        continue;
      }
      if (auto m = Mismatch(Parse(f.type), v[f.name], where + "." + f.name); !m.empty()) return m;
    }
    for (const auto& [k, x] : v.items()) {
      if (!fields.contains(k)) return where + " has " + k + ", which " + n + " does not describe";
    }
    return "";
  }
  if (const ApiAlias* a = FindAlias(n)) {
    return a->type.empty() ? "" : Mismatch(Parse(a->type), v, where);
  }
  return where + ": unknown type " + n;
}

TEST_P(PluginApiMatchesTheRuntimes, CallsSendTheDescribedOpAndReturnTheDescribedType) {
  const bool js = GetParam();
  size_t tried = 0;
  for (const ApiFunction& f : PluginApi().functions) {
    if (f.channel == ApiChannel::kLocal || !InRuntime(f.runtimes, js)) continue;
    ++tried;
    std::string args;
    for (const auto& p : f.params) args += (args.empty() ? "" : ", ") + Sample(Parse(p.type), js);
    const std::string call = f.path + "(" + args + ")";
    const std::string code = js ? "anvil.command('t', () => " + call + ");"
                                : "anvil.command('t', function() return " + call + " end)";
    const OpSpec* op = OpOf(PluginApi(), f);
    ASSERT_NE(op, nullptr) << f.path;
    FakeHostApi api;
    api.handlers[f.op] = [op](const std::vector<std::string>&) -> Result<std::vector<std::string>> {
      std::vector<std::string> reply;
      for (const auto& field : op->reply) reply.push_back(field.example);
      return reply;
    };
    auto result = RunT(api, js, code);
    ASSERT_TRUE(result) << Name(js) << " " << call << ": " << result.error().ToString();
    ASSERT_EQ(api.calls.size(), 1u) << Name(js) << " " << call;
    EXPECT_EQ(api.calls[0].op, f.op) << Name(js) << " " << call;
    EXPECT_EQ(api.calls[0].args.size(), op->request.size())
        << Name(js) << " " << call << " sends other fields than the description's request";
    EXPECT_EQ(Mismatch(Parse(f.result), *result, f.path + "(...)"), "")
        << Name(js) << " " << call << " returned " << result->dump();
  }
  EXPECT_GE(tried, 12u);
}

INSTANTIATE_TEST_SUITE_P(Runtimes, PluginApiMatchesTheRuntimes, ::testing::Bool(),
                         [](const auto& info) { return std::string(info.param ? "Js" : "Lua"); });

// Registering a command name twice stops the plugin at load, in both runtimes; distinct names
// (and the same name in two plugins) are fine.
TEST_P(PluginApiMatchesTheRuntimes, RegisteringACommandTwiceIsALoadError) {
  const bool js = GetParam();
  FakeHostApi api;
  auto rt = Make(api, js);
  ASSERT_NE(rt, nullptr);
  const std::string twice = js ? "anvil.command('fmt', () => 1);\nanvil.command('lint', () => 2);\n"
                                 "anvil.command('fmt', () => 3);\n"
                               : "anvil.command('fmt', function() return 1 end)\n"
                                 "anvil.command('lint', function() return 2 end)\n"
                                 "anvil.command('fmt', function() return 3 end)\n";
  auto loaded = rt->Load({js ? "main.js" : "main.lua", twice, {}});
  ASSERT_FALSE(loaded) << Name(js) << ": the second 'fmt' replaced the first";
  EXPECT_EQ(loaded.error().code, "invalid");
  EXPECT_NE(loaded.error().message.find("'fmt' is already registered"), std::string::npos)
      << loaded.error().message;

  // Caught by the plugin, the second registration still does not replace the first.
  rt = Make(api, js);
  ASSERT_NE(rt, nullptr);
  const std::string caught =
      js ? "anvil.command('fmt', () => 1);\n"
           "let e = ''; try { anvil.command('fmt', () => 3); } catch (x) { e = x.message; }\n"
           "anvil.command('why', () => e);\n"
         : "anvil.command('fmt', function() return 1 end)\n"
           "local ok, e = pcall(anvil.command, 'fmt', function() return 3 end)\n"
           "anvil.command('why', function() return e end)\n";
  ASSERT_TRUE(rt->Load({js ? "main.js" : "main.lua", caught, {}}));
  EXPECT_EQ(*rt->RunCommand("fmt", "[]"), "1");
  auto why = rt->RunCommand("why", "[]");
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("already registered"), std::string::npos) << *why;
  EXPECT_EQ(rt->Commands(), (std::vector<std::string>{"fmt", "why"}));

  // Benign neighbour: distinct names load and run.
  rt = Make(api, js);
  ASSERT_NE(rt, nullptr);
  const std::string distinct = js ? "anvil.command('a', () => 1); anvil.command('b', () => 2);"
                                  : "anvil.command('a', function() return 1 end)\n"
                                    "anvil.command('b', function() return 2 end)";
  ASSERT_TRUE(rt->Load({js ? "main.js" : "main.lua", distinct, {}}));
  EXPECT_EQ(*rt->RunCommand("b", "[]"), "2");
}

}  // namespace
}  // namespace plugin_api_test
}  // namespace anvil::host
