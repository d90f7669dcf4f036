// QuickJS 2025-04-26 plugin runtime, the JS half of anvil-plugin-host (threat model T4, T6): its
// lifecycle (the other parts are listed in js_internal.h).
// Same plugin API as the Lua runtime (INTERFACES.md), synchronous; every failure is thrown as
// an Error whose message is "code: text".
//
// What the context contains, and why:
//  - A raw context (JS_NewContextRaw) with only the intrinsics plugins need: base objects
//    (BigInt included), Date, RegExp, JSON, Proxy, Map/Set, typed arrays, Promise. Not
//    WeakRef/FinalizationRegistry (GC-driven callbacks) nor String.prototype.normalize.
//  - No std/os modules (quickjs-libc is not linked into the host at all), no module loader
//    (JS_SetModuleLoaderFunc is never called: `import` in the entry is a SyntaxError and
//    `import()` rejects), no bytecode reader (JS_ReadObject is never called, and
//    JS_EVAL_FLAG_COMPILE_ONLY is never used), and Atomics.wait cannot block.
//  - The Eval intrinsic IS added: in 2025-04-26 JS_Eval itself goes through it
//    (JS_EvalInternal throws "eval is not supported" without it), and JS_Eval is how the host
//    compiles the entry and the modules. So the compiler stays in the context and every way
//    plugin code could reach it is cut instead (DenyCodeGeneration): the global `eval` and the
//    four function constructors (Function, and those of generator, async and async-generator
//    functions, reachable only as `.constructor` of their prototypes) are replaced by stubs that
//    throw "denied: ...". A direct `eval(s)` compiles only when its callee is the context's
//    original eval object, which nothing reachable from plugin code refers to any more.
//
// Budgets (js_budget.cc): instructions as interrupt polls, the deadline, memory through the
// allocator; once one is spent the plugin cannot catch it or start another function. Data
// (js_values.cc): strings cross as UTF-8, names with a lone surrogate are refused.
#include <quickjs.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "host/js_internal.h"
#include "host/runtime.h"
#include "ipc/plugin_trace.h"

namespace anvil::host {
namespace js {
namespace {

// A module's source is wrapped in this on line 1: columns there are shifted back by its length.
constexpr std::string_view kModulePrefix = "(function (module, exports) {";

// "lib/util" -> "lib/util.js": the file a module name was read from (host/plugin_host.cc).
std::string ModuleFile(const std::string& name) {
  return name.ends_with(".js") ? name : name + ".js";
}

JSValue DenyCodeFromStrings(JsRuntime&, JSContext* ctx, int, JSValueConst*) {
  return ThrowText(ctx, "denied: code generation from strings is disabled for plugins");
}

}  // namespace

JsRuntime::~JsRuntime() {
  if (rt_) JS_SetMaxStackSize(rt_, StackBytes());
  if (ctx_) {
    for (auto& [name, fn] : commands_) JS_FreeValue(ctx_, fn);
    for (auto& [name, module] : modules_) JS_FreeValue(ctx_, module);
    for (JSValue& getter : site_getters_) JS_FreeValue(ctx_, getter);
    JS_FreeContext(ctx_);
  }
  if (rt_) JS_FreeRuntime(rt_);
}

bool JsRuntime::RegisterCommand(const std::string& name, JSValueConst fn) {
  auto [it, inserted] = commands_.emplace(name, JS_UNDEFINED);
  if (!inserted) return false;
  command_order_.push_back(name);
  it->second = JS_DupValue(ctx_, fn);
  // Where the function is defined: the only location a thrown non-Error value can get.
  ipc::PluginTrace site;
  std::string file;
  Value file_v(ctx_, JS_Call(ctx_, site_getters_[0], fn, 0, nullptr));
  Value line_v(ctx_, JS_Call(ctx_, site_getters_[1], fn, 0, nullptr));
  Value col_v(ctx_, JS_Call(ctx_, site_getters_[2], fn, 0, nullptr));
  int32_t line = 0, col = 0;
  if (JS_IsString(file_v.get()) && ToUtf8(ctx_, file_v.get(), &file) && files_.count(file) &&
      JS_IsNumber(line_v.get()) && JS_ToInt32(ctx_, &line, line_v.get()) == 0 && line > 0) {
    if (JS_IsNumber(col_v.get())) (void)JS_ToInt32(ctx_, &col, col_v.get());
    site.file = file;
    site.line = line;
    site.column = col;
    site.source = ipc::SourceLine(files_.find(file)->second, line);
  }
  if (file_v.exception() || line_v.exception() || col_v.exception()) {
    (void)DropOrdinaryException(*this, ctx_);
  }
  command_sites_[name] = std::move(site);
  return true;
}

// require(name): only the plugin's own modules (PluginSource::modules, read before the
// lockdown), each evaluated once as `(function (module, exports) { ... })`; a leading "./" is
// ignored. A module required while it is still loading (a cycle) gets its exports so far.
JSValue JsRuntime::RequireModule(const std::string& requested) {
  std::string name = requested.starts_with("./") ? requested.substr(2) : requested;
  if (auto it = modules_.find(name); it != modules_.end()) {
    return JS_GetPropertyStr(ctx_, it->second, "exports");
  }
  auto source = module_sources_.find(name);
  if (source == module_sources_.end()) {
    return ThrowCode(ctx_, "not_found", "no module '" + requested + "' in this plugin");
  }
  std::string code = std::string(kModulePrefix) + source->second + "\n})";
  // Evaluated under its file's name, so that errors and stacks say where ("lib/util.js:3:5").
  const std::string file = ModuleFile(name);
  Value fn(ctx_, JS_Eval(ctx_, code.c_str(), code.size(), file.c_str(), JS_EVAL_TYPE_GLOBAL));
  if (fn.exception()) return JS_EXCEPTION;
  if (!JS_IsFunction(ctx_, fn.get())) {
    return ThrowCode(ctx_, "invalid", "module '" + name + "' is not a function body");
  }
  Value module(ctx_, ObjectBuilder(ctx_).Set("exports", JS_NewObject(ctx_)).Take());
  if (module.exception()) return JS_EXCEPTION;
  Value exports(ctx_, JS_GetPropertyStr(ctx_, module.get(), "exports"));
  if (exports.exception()) return JS_EXCEPTION;
  modules_.emplace(name, JS_DupValue(ctx_, module.get()));
  JSValueConst args[] = {module.get(), exports.get()};
  Value ran(ctx_, JS_Call(ctx_, fn.get(), JS_UNDEFINED, 2, args));
  if (ran.exception()) {
    // A failed module is not cached: the next require runs it again, as in Node.
    if (auto it = modules_.find(name); it != modules_.end()) {
      JS_FreeValue(ctx_, it->second);
      modules_.erase(it);
    }
    return JS_EXCEPTION;
  }
  return JS_GetPropertyStr(ctx_, module.get(), "exports");
}

Status JsRuntime::Init() {
  static const JSMallocFunctions kAllocator = {&JsRuntime::Malloc, &JsRuntime::Free,
                                               &JsRuntime::Realloc, &JsRuntime::UsableSize};
  rt_ = JS_NewRuntime2(&kAllocator, this);
  if (!rt_) return Fail("limit", "cannot create the QuickJS runtime");
  JS_SetRuntimeOpaque(rt_, this);
  JS_SetMaxStackSize(rt_, StackBytes());
  JS_SetCanBlock(rt_, false);  // Atomics.wait would block where no interrupt can reach it
  JS_SetInterruptHandler(rt_, &JsRuntime::Interrupt, this);
  StartBudget();

  ctx_ = JS_NewContextRaw(rt_);
  if (!ctx_) return Fail("limit", "cannot create the QuickJS context");
  JS_SetContextOpaque(ctx_, this);
  JS_AddIntrinsicBaseObjects(ctx_);
  JS_AddIntrinsicDate(ctx_);
  JS_AddIntrinsicEval(ctx_);  // needed by JS_Eval itself; see DenyCodeGeneration
  JS_AddIntrinsicRegExp(ctx_);
  JS_AddIntrinsicJSON(ctx_);
  JS_AddIntrinsicProxy(ctx_);
  JS_AddIntrinsicMapSet(ctx_);
  JS_AddIntrinsicTypedArrays(ctx_);
  JS_AddIntrinsicPromise(ctx_);
  ANVIL_RETURN_IF_ERROR(DenyCodeGeneration());
  {
    // Function.prototype, through an intrinsic function: there is no API call for it.
    Value global(ctx_, JS_GetGlobalObject(ctx_));
    Value object_ctor(ctx_, JS_GetPropertyStr(ctx_, global.get(), "Object"));
    Value proto(ctx_, JS_GetPrototype(ctx_, object_ctor.get()));
    const char* const names[3] = {"fileName", "lineNumber", "columnNumber"};
    for (int i = 0; i < 3 && JS_IsObject(proto.get()); ++i) {
      JSAtom atom = JS_NewAtom(ctx_, names[i]);
      JSPropertyDescriptor desc;
      if (JS_GetOwnProperty(ctx_, &desc, proto.get(), atom) == 1) {
        site_getters_[i] = desc.getter;
        JS_FreeValue(ctx_, desc.value);
        JS_FreeValue(ctx_, desc.setter);
      }
      JS_FreeAtom(ctx_, atom);
    }
    ClearException();
  }
  ANVIL_RETURN_IF_ERROR(InstallApi());
  if (memory_spent_) return Fail("limit", "cannot set up the QuickJS context");

  // The budget covers the VM as a whole, the context's own baseline included. It is applied
  // after setup because JS_AddIntrinsic* cannot report a failed allocation.
  JSMemoryUsage usage;
  JS_ComputeMemoryUsage(rt_, &usage);
  if (static_cast<uint64_t>(usage.malloc_size) >= limits_.memory_bytes) {
    return Fail("limit", "the memory budget is below the JS runtime's baseline");
  }
  JS_SetMemoryLimit(rt_, static_cast<size_t>(std::min<uint64_t>(
                             limits_.memory_bytes, std::numeric_limits<size_t>::max())));
  // Collect cycles every 1/8 of the budget (at least 256 KiB, QuickJS's default; at most
  // 8 MiB): cyclic garbage must not be what exhausts the budget.
  JS_SetGCThreshold(rt_, static_cast<size_t>(
                             std::clamp<uint64_t>(limits_.memory_bytes / 8, 256u << 10, 8u << 20)));
  return Ok();
}

Status JsRuntime::DenyCodeGeneration() {
  Value global(ctx_, JS_GetGlobalObject(ctx_));
  // Trusted code, run before any plugin code: the prototypes of the four function kinds.
  static constexpr std::string_view kProtos =
      "[function () {}, function* () {}, async function () {}, async function* () {}]"
      ".map(Object.getPrototypeOf)";
  Value protos(ctx_, JS_Eval(ctx_, kProtos.data(), kProtos.size(), "<anvil>", JS_EVAL_TYPE_GLOBAL));
  if (protos.exception()) {
    ClearException();
    return Fail("internal", "cannot find the function prototypes");
  }
  static constexpr const char* kNames[] = {"Function", "GeneratorFunction", "AsyncFunction",
                                           "AsyncGeneratorFunction"};
  for (uint32_t i = 0; i < 4; ++i) {
    Value proto(ctx_, JS_GetPropertyUint32(ctx_, protos.get(), i));
    Value stub(ctx_, JS_NewCFunction2(ctx_, &Bind<DenyCodeFromStrings>, kNames[i], 1,
                                      JS_CFUNC_constructor_or_func, 0));
    if (proto.exception() || stub.exception() || !JS_IsObject(proto.get())) {
      ClearException();
      return Fail("internal", "cannot replace the function constructors");
    }
    // stub.prototype = proto and proto.constructor = stub: `f instanceof Function` still
    // holds, `(() => {}).constructor("...")` and `new Function("...")` throw.
    JS_SetConstructor(ctx_, stub.get(), proto.get());
    if (i == 0 && JS_DefinePropertyValueStr(ctx_, global.get(), "Function", stub.release(),
                                            JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0) {
      ClearException();
      return Fail("internal", "cannot replace Function");
    }
  }
  JSValue eval_stub =
      JS_NewCFunction2(ctx_, &Bind<DenyCodeFromStrings>, "eval", 1, JS_CFUNC_generic, 0);
  if (JS_DefinePropertyValueStr(ctx_, global.get(), "eval", eval_stub,
                                JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0) {
    ClearException();
    return Fail("internal", "cannot replace eval");
  }
  return Ok();
}

Error JsRuntime::TakeError() {
  Value thrown(ctx_, JS_GetException(ctx_));
  if (auto e = SpentError()) return *e;
  Error e = DescribeThrown(thrown.get());
  if (auto spent = SpentError()) return *spent;  // describing it ran plugin code
  return e;
}

// "code: message" thrown by the plugin keeps its code; anything else is code "error".
Error JsRuntime::DescribeThrown(JSValueConst thrown) {
  Error e = DescribeThrownValue(thrown);
  if (e.code == "limit" || e.code == "timeout" || Spent()) return e;
  e.trace = ipc::EncodePluginTrace(TraceOf(thrown));
  return e;
}

bool JsRuntime::FrameLocation(std::string_view frame, ipc::PluginTrace* out) const {
  // "at f (main.js:3:5)", "at main.js:3:5" (a syntax error), "at f (native)".
  std::string_view where = frame;
  if (where.ends_with(")")) {
    const auto open = where.rfind('(');
    if (open == std::string_view::npos) return false;
    where = where.substr(open + 1, where.size() - open - 2);
  } else if (where.starts_with("at ")) {
    where.remove_prefix(3);
  }
  const auto c2 = where.rfind(':');
  if (c2 == std::string_view::npos || c2 == 0) return false;
  const auto c1 = where.rfind(':', c2 - 1);
  if (c1 == std::string_view::npos) return false;
  auto number = [](std::string_view digits, int* v) {
    if (digits.empty() || digits.size() > 9) return false;
    *v = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return false;
      *v = *v * 10 + (c - '0');
    }
    return true;
  };
  int line = 0, col = 0;
  if (!number(where.substr(c1 + 1, c2 - c1 - 1), &line) || !number(where.substr(c2 + 1), &col) ||
      line <= 0) {
    return false;
  }
  auto file = files_.find(where.substr(0, c1));
  if (file == files_.end()) return false;
  // A module's line 1 starts after the wrapper (RequireModule).
  if (line == 1 && file->first != entry_file_ && col > static_cast<int>(kModulePrefix.size())) {
    col -= static_cast<int>(kModulePrefix.size());
  }
  out->file = file->first;
  out->line = line;
  out->column = col;
  out->source = ipc::SourceLine(file->second, line);
  return true;
}

ipc::PluginTrace JsRuntime::TraceOf(JSValueConst thrown) {
  ipc::PluginTrace trace;
  std::string stack;
  if (JS_IsError(ctx_, thrown)) {
    // An own data property only: a getter (or a proxy trap) would be plugin code.
    JSAtom atom = JS_NewAtom(ctx_, "stack");
    JSPropertyDescriptor desc;
    int has = JS_GetOwnProperty(ctx_, &desc, thrown, atom);
    JS_FreeAtom(ctx_, atom);
    if (has < 0) ClearException();
    if (has == 1) {
      if (JS_IsString(desc.value) && !ToUtf8(ctx_, desc.value, &stack)) ClearException();
      JS_FreeValue(ctx_, desc.value);
      JS_FreeValue(ctx_, desc.getter);
      JS_FreeValue(ctx_, desc.setter);
    }
  }
  size_t pos = 0;
  while (pos < stack.size() && pos < 64 * 1024) {
    auto nl = stack.find('\n', pos);
    if (nl == std::string::npos) nl = stack.size();
    std::string_view frame = std::string_view(stack).substr(pos, nl - pos);
    pos = nl + 1;
    while (!frame.empty() && (frame.front() == ' ' || frame.front() == '\t'))
      frame.remove_prefix(1);
    if (frame.empty()) continue;
    if (trace.stack.size() == ipc::kMaxTraceFrames) {
      trace.stack_truncated = true;
      break;
    }
    trace.stack.push_back(ipc::CapUtf8(frame, ipc::kMaxTraceFrameBytes));
    if (trace.file.empty()) FrameLocation(frame, &trace);
  }
  if (trace.file.empty()) {
    if (!JS_IsError(ctx_, thrown) && running_site_ != nullptr && !running_site_->file.empty()) {
      trace.file = running_site_->file;
      trace.line = running_site_->line;
      trace.column = running_site_->column;
      trace.source = running_site_->source;
      trace.note =
          "the command's function: QuickJS records where an Error was thrown, not other values "
          "(fix: throw new Error(...))";
    } else if (!JS_IsError(ctx_, thrown)) {
      trace.note =
          "no location: QuickJS records where an Error was thrown, not other values (fix: throw "
          "new Error(...))";
    }
  }
  return trace;
}

Error JsRuntime::DescribeThrownValue(JSValueConst thrown) {
  std::string message, name;
  auto string_prop = [&](const char* key, std::string* out) {
    Value v(ctx_, JS_GetPropertyStr(ctx_, thrown, key));
    if (v.exception()) {
      ClearException();
    } else if (JS_IsString(v.get()) && !ToUtf8(ctx_, v.get(), out)) {
      ClearException();
    }
  };
  if (JS_IsError(ctx_, thrown)) {
    string_prop("message", &message);
    string_prop("name", &name);
    if (name == "InternalError" && message == "out of memory") {
      return Error{"limit", "memory budget exhausted", 0};
    }
    if (name == "InternalError" && message == "stack overflow") {
      return Error{"limit", "stack overflow: recursion deeper than the stack budget", 0};
    }
  } else if (JS_IsUninitialized(thrown) || JS_IsNull(thrown)) {
    message = "uncaught exception";  // what QuickJS throws when even the error was not allocated
  } else if (!ToUtf8(ctx_, thrown, &message)) {
    ClearException();
    message = "uncaught exception that cannot be shown";
  }
  // Keep an Anvil code the plugin re-threw ("denied: ..."), else it is a plugin error.
  for (Code known : kPluginCodes) {
    const std::string_view code = WireName(known);
    if (message.size() > code.size() + 1 && message.starts_with(code) &&
        message.compare(code.size(), 2, ": ") == 0) {
      return Error{known, message.substr(code.size() + 2), 0};
    }
  }
  if (!name.empty() && name != "Error") message = message.empty() ? name : name + ": " + message;
  if (message.empty()) message = "uncaught exception";
  return Error{"error", message, 0};
}

// A command's value, or what its promise settles to once the jobs have run.
Result<Value> JsRuntime::Settle(Value result) {
  if (static_cast<int>(JS_PromiseState(ctx_, result.get())) < 0) return result;
  ANVIL_RETURN_IF_ERROR(DrainJobs());
  switch (JS_PromiseState(ctx_, result.get())) {
    case JS_PROMISE_FULFILLED:
      return Value(ctx_, JS_PromiseResult(ctx_, result.get()));
    case JS_PROMISE_REJECTED: {
      Value reason(ctx_, JS_PromiseResult(ctx_, result.get()));
      Error e = DescribeThrown(reason.get());
      if (auto spent = SpentError()) return tl::unexpected(*spent);
      return tl::unexpected(e);
    }
    default:
      return Fail("error", "the command's promise never settled");
  }
}

Status JsRuntime::Load(const PluginSource& source) {
  if (stopped_) return tl::unexpected(*stopped_);
  module_sources_ = source.modules;
  for (const auto& [name, code] : source.modules) files_.emplace(ModuleFile(name), code);
  files_.emplace(source.entry_name, source.entry_code);
  entry_file_ = source.entry_name;
  StartBudget();
  std::optional<Error> failure;
  {
    Value r(ctx_, JS_Eval(ctx_, source.entry_code.c_str(), source.entry_code.size(),
                          source.entry_name.c_str(), JS_EVAL_TYPE_GLOBAL));
    if (r.exception()) failure = TakeError();
  }
  if (auto e = FinishCall(std::move(failure))) return tl::unexpected(*e);
  return Ok();
}

Result<std::string> JsRuntime::RunCommand(const std::string& name, const std::string& args_json) {
  if (stopped_) return tl::unexpected(*stopped_);
  auto it = commands_.find(name);
  if (it == commands_.end()) return Fail("not_found", "no command '" + name + "'");
  StartBudget();
  // Held for the call, whatever the command does to the table while it runs.
  Value fn(ctx_, JS_DupValue(ctx_, it->second));
  const ipc::PluginTrace site = command_sites_[name];
  running_site_ = &site;
  struct Reset {
    const ipc::PluginTrace*& p;
    ~Reset() { p = nullptr; }
  } reset{running_site_};
  std::optional<Error> failure;
  std::string text = "null";
  {
    Value args(ctx_, JS_ParseJSON(ctx_, args_json.c_str(), args_json.size(), "<args>"));
    JSValueConst argv[] = {args.get()};
    Value result(ctx_, JS_UNDEFINED);
    if (args.exception()) {
      ClearException();
      failure = Error{"invalid", "command arguments are not JSON", 0};
    } else if (result = Value(ctx_, JS_Call(ctx_, fn.get(), JS_UNDEFINED, 1, argv));
               result.exception()) {
      failure = TakeError();
    } else if (auto value = Settle(std::move(result)); !value) {
      failure = value.error();
    } else {
      std::string json_text;
      if (!JsonText(ctx_, value->get(), &json_text)) {
        Error e = TakeError();
        if (e.code == "error") e = Error{"invalid", "result is not JSON data: " + e.message, 0};
        failure = e;
      } else if (!json_text.empty()) {
        text = std::move(json_text);  // undefined and functions have no JSON: "null"
      }
    }
  }
  if (auto e = FinishCall(std::move(failure))) return tl::unexpected(*e);
  return text;
}

}  // namespace js

std::unique_ptr<Runtime> MakeJsRuntime(HostApi& api, const RuntimeLimits& limits,
                                       const std::string& settings_json) {
  auto runtime = std::make_unique<js::JsRuntime>(api, limits, settings_json);
  if (!runtime->Init()) return nullptr;
  return runtime;
}

}  // namespace anvil::host
