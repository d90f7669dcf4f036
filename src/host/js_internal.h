// The QuickJS runtime's parts, private to src/host/: the runtime object and what its files share.
//   js_runtime.cc   lifecycle: create the context (what it contains), load the plugin, run a
//                   command, describe what it threw (with its trace), destroy
//   js_budget.cc    instructions, memory and the deadline: the allocator, the interrupt
//                   handler, the spent state, promise jobs under the budget
//   js_values.cc    host bytes <-> JS strings (UTF-8 at the boundary), JSON, errors thrown
//                   into the plugin, the frozen settings
//   js_bindings.cc  the globals a plugin sees: anvil, sys and editor (from the op table in
//                   policy/plugin_api), console, print, require
#pragma once

#include <malloc.h>
#include <quickjs.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "host/api_codec.h"
#include "host/runtime.h"
#include "ipc/plugin_trace.h"

namespace anvil::host::js {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// ---- owning JSValue -----------------------------------------------------------------------------

class Value {
 public:
  Value(JSContext* ctx, JSValue v) : ctx_(ctx), v_(v) {}
  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;
  Value(Value&& other) noexcept : ctx_(other.ctx_), v_(other.v_) { other.v_ = JS_UNDEFINED; }
  Value& operator=(Value&& other) noexcept {
    std::swap(ctx_, other.ctx_);
    std::swap(v_, other.v_);
    return *this;
  }
  ~Value() { JS_FreeValue(ctx_, v_); }

  JSValue get() const { return v_; }
  JSValue release() {
    JSValue v = v_;
    v_ = JS_UNDEFINED;
    return v;
  }
  bool exception() const { return JS_IsException(v_); }

 private:
  JSContext* ctx_;
  JSValue v_;
};

// A fresh plain object filled with own data properties (defined, so setters a plugin put on
// Object.prototype never see the host's replies).
class ObjectBuilder {
 public:
  explicit ObjectBuilder(JSContext* ctx) : ctx_(ctx), obj_(ctx, JS_NewObject(ctx)) {
    ok_ = !obj_.exception();
  }
  ObjectBuilder& Set(const char* key, JSValue value) {  // takes ownership of `value`
    if (!ok_ || JS_IsException(value)) {
      JS_FreeValue(ctx_, value);
      ok_ = false;
    } else if (JS_DefinePropertyValueStr(ctx_, obj_.get(), key, value, JS_PROP_C_W_E) < 0) {
      ok_ = false;
    }
    return *this;
  }
  JSValue Take() { return ok_ ? obj_.release() : JS_EXCEPTION; }

 private:
  JSContext* ctx_;
  Value obj_;
  bool ok_;
};

// ---- js_values.cc ----------------------------------------------------------------------------

// Host bytes as a JS string: valid UTF-8 as it is, each maximal invalid subsequence as U+FFFD.
JSValue NewString(JSContext* ctx, std::string_view bytes);
// Where QuickJS's UTF-8 of a string holds an unpaired surrogate (npos when there is none).
size_t LoneSurrogateAt(std::string_view s, size_t from = 0);
// The UTF-8 of String(v) (user toString may run); an unpaired surrogate becomes U+FFFD.
// Returns false with a JS exception pending.
bool ToUtf8(JSContext* ctx, JSValueConst v, std::string* out);

// Throws an Error whose message is `text` ("code: message"). Returns JS_EXCEPTION.
JSValue ThrowText(JSContext* ctx, std::string_view text);
JSValue ThrowCode(JSContext* ctx, std::string_view code, std::string_view message);
JSValue ThrowError(JSContext* ctx, const Error& e);
// The same, but no catch or finally of the plugin runs for it: a budget that is spent.
JSValue ThrowUncatchable(JSContext* ctx, const Error& e);

inline JSValueConst Arg(int argc, JSValueConst* argv, int i) {
  return i < argc ? argv[i] : JS_UNDEFINED;
}

// A string argument, no coercion: anything else is "invalid: <what> must be a string". Strict
// (the default, for names): a lone surrogate is refused; lenient (contents, shown text): it
// becomes U+FFFD. Returns false with a JS exception pending.
bool StringArg(JSContext* ctx, JSValueConst v, std::string_view what, std::string* out,
               bool strict = true);

// JSON text of `v` (JSON.stringify semantics; toJSON may run). `*out` stays empty when v has
// no JSON form (undefined, a function). Returns false with an exception pending.
bool JsonText(JSContext* ctx, JSValueConst v, std::string* out);

// ---- the runtime --------------------------------------------------------------------------------

class JsRuntime final : public Runtime {
 public:
  JsRuntime(HostApi& api, const RuntimeLimits& limits, std::string settings_json)
      : api_(api), limits_(limits), settings_json_(std::move(settings_json)) {}
  ~JsRuntime() override;
  JsRuntime(const JsRuntime&) = delete;
  JsRuntime& operator=(const JsRuntime&) = delete;

  Status Init();
  Status Load(const PluginSource& source) override;
  std::vector<std::string> Commands() const override { return command_order_; }
  Result<std::string> RunCommand(const std::string& name, const std::string& args_json) override;

  // For the API bindings.
  HostApi& api() { return api_; }
  uint64_t memory_budget() const { return limits_.memory_bytes; }
  bool Admit(JSContext* ctx);
  bool Spent() const { return SpentError().has_value(); }
  bool RegisterCommand(const std::string& name, JSValueConst fn);  // false: name taken
  JSValue RequireModule(const std::string& requested);

  // JSMallocFunctions and the interrupt handler.
  static bool Refuse(JSMallocState* s, size_t old_size, size_t new_size);
  static void* Malloc(JSMallocState* s, size_t size);
  static void Free(JSMallocState* s, void* ptr);
  static void* Realloc(JSMallocState* s, void* ptr, size_t size);
  static size_t UsableSize(const void* ptr) { return malloc_usable_size(const_cast<void*>(ptr)); }
  static int Interrupt(JSRuntime* rt, void* opaque);

 private:
  Status DenyCodeGeneration();
  Status InstallApi();
  void StartBudget();
  // After a budget flag is set: no function may start any more (js_budget.cc).
  void OnSpent();
  size_t StackBytes() const;
  std::optional<Error> SpentError() const;
  Error TakeError();
  Error DescribeThrown(JSValueConst thrown);  // with its trace
  Error DescribeThrownValue(JSValueConst thrown);
  void ClearException() { JS_FreeValue(ctx_, JS_GetException(ctx_)); }
  Status DrainJobs();
  Result<Value> Settle(Value result);
  std::optional<Error> FinishCall(std::optional<Error> failure);

  HostApi& api_;
  RuntimeLimits limits_;
  std::string settings_json_;  // Anvil.toml settings (untrusted data), a JSON object
  JSRuntime* rt_ = nullptr;
  JSContext* ctx_ = nullptr;

  std::vector<std::string> command_order_;
  std::map<std::string, JSValue> commands_;  // owned references
  std::map<std::string, std::string> module_sources_;
  std::map<std::string, JSValue> modules_;  // name -> module object (owned), once required

  // Where errors happened (ipc/plugin_trace.h).
  ipc::PluginTrace TraceOf(JSValueConst thrown);
  // "main.js:3:5" inside one line of a QuickJS stack, when it names a plugin file.
  bool FrameLocation(std::string_view frame, ipc::PluginTrace* out) const;
  std::map<std::string, std::string, std::less<>> files_;  // plugin file -> its code
  // Function.prototype's fileName/lineNumber/columnNumber getters (native), taken before any
  // plugin code ran: where a command's function is defined, without running plugin code.
  JSValue site_getters_[3] = {JS_UNDEFINED, JS_UNDEFINED, JS_UNDEFINED};
  std::map<std::string, ipc::PluginTrace> command_sites_;
  const ipc::PluginTrace* running_site_ = nullptr;  // the running command's function
  std::string entry_file_;

  uint64_t polls_left_ = 0;
  bool instructions_spent_ = false;
  bool deadline_passed_ = false;
  bool memory_spent_ = false;
  size_t slack_limit_ = 0;  // once spent: the heap may grow to here (kInterruptSlack)
  const JSMallocState* malloc_state_ = nullptr;  // the runtime's, as the allocator sees it
  Clock::time_point deadline_ = Clock::time_point::max();
  ipc::CpuWatch cpu_;  // the instruction budget's CPU-time equivalent (ipc/cpu_budget.h)
  std::optional<Error> stopped_;
};

inline JsRuntime& Self(JSContext* ctx) {
  return *static_cast<JsRuntime*>(JS_GetContextOpaque(ctx));
}

// ---- js_budget.cc ----------------------------------------------------------------------------

// A pending ordinary exception is dropped (the caller replaces it with its own error); one
// caused by a spent budget stays pending. Returns true when it was dropped. (Uncatchable
// errors only exist once a budget is spent: the interrupt handler or Admit threw them.)
bool DropOrdinaryException(JsRuntime& self, JSContext* ctx);

// ---- js_bindings.cc --------------------------------------------------------------------------

// Every binding: refused once a budget is spent (uncatchably, so nothing reaches the host in
// the polls between the exhaustion and the interrupt), and no C++ exception may unwind through
// QuickJS's C frames.
using Binding = JSValue (*)(JsRuntime& self, JSContext* ctx, int argc, JSValueConst* argv);

template <Binding F>
JSValue Bind(JSContext* ctx, JSValueConst /*this_val*/, int argc, JSValueConst* argv) {
  try {
    JsRuntime& self = Self(ctx);
    if (!self.Admit(ctx)) return JS_EXCEPTION;
    return F(self, ctx, argc, argv);
  } catch (const std::bad_alloc&) {
    return ThrowText(ctx, "limit: host memory exhausted");
  } catch (const std::exception&) {
    return ThrowText(ctx, "internal: unexpected host failure");
  }
}

// ---- js_values.cc, with the runtime ------------------------------------------------------------

// JSON of `v` checked to be an object of strings (want_array false) or an array of strings.
// On a type mismatch throws "invalid: <what>". Returns false with an exception pending.
bool StringsJson(JsRuntime& self, JSContext* ctx, JSValueConst v, bool want_array,
                 std::string_view what, std::string* out);
// What console.log shows for one value: strings as they are, plain data as JSON, the rest as
// String(v). Returns false with an exception pending.
bool DisplayText(JsRuntime& self, JSContext* ctx, JSValueConst v, std::string* out);
// anvil.settings' value for `v`, built from the parsed JSON: every object and array it makes is
// appended to `made` (to be frozen with the API); `*ok` becomes false on any failure.
JSValue SettingsValue(JSContext* ctx, const json& v, int depth, std::vector<Value>& made, bool* ok);

}  // namespace anvil::host::js
