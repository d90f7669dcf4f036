// QuickJS 2025-04-26 plugin runtime, the JS half of anvil-plugin-host (threat model T4, T6).
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
// Budgets. QuickJS polls for interrupts at every jump, every call and in a few internal loops
// (prototype walks, for-in, regexp backtracking), and calls the interrupt handler once every
// 10,000 polls (JS_INTERRUPT_COUNTER_INIT in quickjs.c; the same count in libregexp.c). One
// poll is counted as one unit of RuntimeLimits::instructions, so a call may make
// ceil(instructions / 10,000) handler calls. In a tight loop a poll is one iteration, the unit
// the Lua count hook sees for `while true do end`; in straight-line code one poll covers a few
// bytecodes, so the JS budget is coarser than Lua's, never finer. The handler also checks the
// steady-clock deadline. Once the instruction budget, the deadline or the memory budget (the
// allocator below, not QuickJS's own accounting, so the runtime knows it happened) is spent,
// the handler returns 1 at every later poll: QuickJS's interrupt error skips catch and finally,
// so `try { for(;;){} } catch {}` loops cannot keep a plugin alive; and every API binding
// refuses with an uncatchable error, so the window before the next poll cannot reach the host.
// That alone is not enough: several builtins turn any exception, the uncatchable one included,
// into a rejected promise and return normally (the Promise constructor's executor, an async
// function's or async generator's body, Promise.all/race/any/allSettled's iteration, reading a
// thenable's `then`), after which plugin code would run on for another 10,000 polls, forever.
// So a spent budget also shrinks QuickJS's stack limit to one byte: every function call (JS,
// native, bound, getter, proxy trap, generator step) checks the stack before it starts, so no
// function can start any more and no such builtin can even be entered. What still runs is the
// frames already on the stack, each until its next poll, where it is interrupted again: at
// most one swallowed error per builtin frame below, bounded by the stack. The interrupt error
// itself must be allocated: once spent, the allocator lets the heap exceed the budget by a
// small slack renewed at each interrupt, else a full heap would turn the uncatchable error
// into a catchable `null` (QuickJS throws null when it cannot allocate an error).
// Promise jobs run only while the call is within its budget and deadline; when a budget ran out
// with jobs still queued, the runtime stops for good (those jobs must not run later either).
//
// Data. Plugin strings become UTF-8 when they cross to the host. A string that names something
// (a path, a URL, a method, a header, a program, an argument, a buffer URI) and holds a lone
// surrogate is refused ("invalid: ..."): it has no UTF-8 form, and replacing it would read,
// write or run something other than what the plugin named. Contents (sys.fs.write data, a
// fetch body, exec stdin) and text that is only shown (editor.notify, console.log) get U+FFFD
// for a lone surrogate instead, as TextEncoder does. Host
// bytes become JS strings by decoding UTF-8 with U+FFFD for each maximal invalid subsequence (the
// WHATWG decoder's rule), so sys.fs.read of a binary file is lossy: the JS API, like INTERFACES.md,
// is text-only.
#include <malloc.h>
#include <quickjs.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/sanitizer.h"
#include "fs/workspace_path.h"
#include "host/api_codec.h"
#include "host/runtime.h"
#include "ipc/plugin_trace.h"
#include "policy/plugin_api.h"

namespace anvil::host {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr uint64_t kPollsPerInterrupt = 10000;  // JS_INTERRUPT_COUNTER_INIT in quickjs.c
constexpr size_t kMallocOverhead = 8;           // MALLOC_OVERHEAD in quickjs.c
// Past a spent budget: room over the memory budget for the interrupt error (an Error object,
// its message, a backtrace that is dropped when it does not fit), renewed at each interrupt.
constexpr size_t kInterruptSlack = 64u << 10;
// QuickJS's stack limit once spent: every call fails its stack check (0 would disable it).
constexpr size_t kSpentStackBytes = 1;
constexpr size_t kMaxCommandName = 128;

// Codes a plugin may re-throw and keep (the Lua runtime keeps the same set).
constexpr std::string_view kKnownCodes[] = {"denied",    "invalid", "not_found", "limit", "timeout",
                                            "cancelled", "stale",   "busy",      "io"};

// ---- UTF-8 at the boundary ----------------------------------------------------------------------

// The length of the leading ASCII run of `in`, eight bytes at a time: host replies (file
// contents, command output) are mostly ASCII, and every one of them is checked.
size_t AsciiPrefix(std::string_view in) {
  size_t i = 0;
  for (; i + 8 <= in.size(); i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, in.data() + i, sizeof word);
    if ((word & 0x8080808080808080ull) != 0) break;
  }
  while (i < in.size() && static_cast<unsigned char>(in[i]) < 0x80) ++i;
  return i;
}

// The length of the valid UTF-8 sequence of two to four bytes at in[i] (a non-ASCII lead byte),
// or 0 when it is not one: an overlong form, a UTF-16 surrogate, above U+10FFFF, truncated.
// `*consumed` is the length of the maximal invalid subsequence when it is not (at least 1).
size_t Utf8SequenceAt(std::string_view in, size_t i, size_t* consumed) {
  const auto c = static_cast<unsigned char>(in[i]);
  int need = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // UTF-16 surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    *consumed = 1;
    return 0;
  }
  size_t j = i + 1;
  int got = 0;
  while (got < need && j < in.size()) {
    auto d = static_cast<unsigned char>(in[j]);
    if (d < lo || d > hi) break;
    lo = 0x80;
    hi = 0xBF;
    ++j;
    ++got;
  }
  *consumed = j - i;
  return got == need ? j - i : 0;
}

bool ValidUtf8(std::string_view in) {
  size_t i = 0;
  while (true) {
    i += AsciiPrefix(in.substr(i));
    if (i == in.size()) return true;
    size_t consumed = 0;
    if (Utf8SequenceAt(in, i, &consumed) == 0) return false;
    i += consumed;
  }
}

// Appends the valid UTF-8 of `in`, each maximal invalid subsequence replaced by U+FFFD
// (WHATWG "decode with replacement"): host bytes need not be UTF-8 (protocol.md).
std::string SanitizeUtf8(std::string_view in) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (true) {
    const size_t ascii = AsciiPrefix(in.substr(i));
    out.append(in.substr(i, ascii));
    i += ascii;
    if (i == in.size()) return out;
    size_t consumed = 0;
    if (Utf8SequenceAt(in, i, &consumed) != 0) {
      out.append(in.substr(i, consumed));
    } else {
      out += kReplacement;
    }
    i += consumed;
  }
}

// Host bytes as a JS string. Valid UTF-8 goes to QuickJS as it is (its decoder reads valid
// UTF-8 exactly as the WHATWG one does); only bytes that are not get a sanitized copy first.
JSValue NewString(JSContext* ctx, std::string_view bytes) {
  if (ValidUtf8(bytes)) return JS_NewStringLen(ctx, bytes.data(), bytes.size());
  std::string clean = SanitizeUtf8(bytes);
  return JS_NewStringLen(ctx, clean.data(), clean.size());
}

// Where QuickJS's UTF-8 of a string holds an unpaired surrogate: it encodes one as the 3-byte
// sequence ED A0..BF xx, the only invalid UTF-8 it produces. npos when there is none.
size_t LoneSurrogateAt(std::string_view s, size_t from = 0) {
  while (from < s.size()) {
    const void* hit = std::memchr(s.data() + from, 0xED, s.size() - from);
    if (hit == nullptr) return std::string_view::npos;
    const size_t i = static_cast<size_t>(static_cast<const char*>(hit) - s.data());
    if (i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0xA0) return i;
    from = i + 1;
  }
  return std::string_view::npos;
}

// The UTF-8 of String(v) (user toString may run); an unpaired surrogate becomes U+FFFD.
// Returns false with a JS exception pending.
bool ToUtf8(JSContext* ctx, JSValueConst v, std::string* out) {
  size_t len = 0;
  const char* s = JS_ToCStringLen(ctx, &len, v);
  if (!s) return false;
  out->assign(s, len);
  JS_FreeCString(ctx, s);
  for (size_t i = LoneSurrogateAt(*out); i != std::string_view::npos && i + 2 < out->size();
       i = LoneSurrogateAt(*out, i + 3)) {
    out->replace(i, 3, "\xEF\xBF\xBD");
  }
  return true;
}

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

// ---- errors as plugins see them -----------------------------------------------------------------

// Throws an Error whose message is `text` ("code: message"). Returns JS_EXCEPTION.
JSValue ThrowText(JSContext* ctx, std::string_view text) {
  Value err(ctx, JS_NewError(ctx));
  if (err.exception()) return JS_EXCEPTION;
  JSValue message = NewString(ctx, text);
  if (JS_IsException(message)) return JS_EXCEPTION;
  if (JS_DefinePropertyValueStr(ctx, err.get(), "message", message,
                                JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0) {
    return JS_EXCEPTION;
  }
  return JS_Throw(ctx, err.release());
}

JSValue ThrowCode(JSContext* ctx, std::string_view code, std::string_view message) {
  std::string text;
  text.append(code).append(": ").append(message);
  return ThrowText(ctx, text);
}

JSValue ThrowError(JSContext* ctx, const Error& e) { return ThrowText(ctx, PluginErrorText(e)); }

// The same, but no catch or finally of the plugin runs for it: a budget that is spent.
JSValue ThrowUncatchable(JSContext* ctx, const Error& e) {
  ThrowError(ctx, e);
  JSValue exc = JS_GetException(ctx);
  JS_SetUncatchableError(ctx, exc, true);
  return JS_Throw(ctx, exc);
}

JSValueConst Arg(int argc, JSValueConst* argv, int i) { return i < argc ? argv[i] : JS_UNDEFINED; }

// The UTF-8 of a string that must be valid Unicode: a lone surrogate (QuickJS encodes it as
// ED A0..BF xx, which strict UTF-8 never contains) throws "invalid: <what> is not valid
// Unicode". Returns false with a JS exception pending.
bool ToUtf8Strict(JSContext* ctx, JSValueConst v, std::string_view what, std::string* out) {
  size_t len = 0;
  const char* s = JS_ToCStringLen(ctx, &len, v);
  if (!s) return false;
  const bool lone = LoneSurrogateAt(std::string_view(s, len)) != std::string_view::npos;
  if (!lone) out->assign(s, len);
  JS_FreeCString(ctx, s);
  if (lone) {
    ThrowCode(ctx, "invalid",
              std::string(what) + " is not valid Unicode (it holds a lone surrogate)");
    return false;
  }
  return true;
}

// A string argument, no coercion: anything else is "invalid: <what> must be a string". Strict
// (the default, for names): a lone surrogate is refused; lenient (contents, shown text): it
// becomes U+FFFD.
bool StringArg(JSContext* ctx, JSValueConst v, std::string_view what, std::string* out,
               bool strict = true) {
  if (!JS_IsString(v)) {
    ThrowCode(ctx, "invalid", std::string(what) + " must be a string");
    return false;
  }
  return strict ? ToUtf8Strict(ctx, v, what, out) : ToUtf8(ctx, v, out);
}

bool ValidCommandName(std::string_view name) {
  if (name.empty() || name.size() > kMaxCommandName) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

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
  // After a budget flag is set: no function may start any more (see the top of the file).
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
  std::optional<Error> stopped_;
};

JsRuntime& Self(JSContext* ctx) { return *static_cast<JsRuntime*>(JS_GetContextOpaque(ctx)); }

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

struct GenericPlan;
const GenericPlan& PlanOf(size_t index);
JSValue GenericCall(JsRuntime& self, JSContext* ctx, int argc, JSValueConst* argv,
                    const ApiFunction& f, const GenericPlan& plan);

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

// A pending ordinary exception is dropped (the caller replaces it with its own error); one
// caused by a spent budget stays pending. Returns true when it was dropped. (Uncatchable
// errors only exist once a budget is spent: the interrupt handler or Admit threw them.)
bool DropOrdinaryException(JsRuntime& self, JSContext* ctx) {
  if (self.Spent()) return false;
  JS_FreeValue(ctx, JS_GetException(ctx));
  return true;
}

// JSON text of `v` (JSON.stringify semantics; toJSON may run). `*out` stays empty when v has
// no JSON form (undefined, a function). Returns false with an exception pending.
bool JsonText(JSContext* ctx, JSValueConst v, std::string* out) {
  Value text(ctx, JS_JSONStringify(ctx, v, JS_UNDEFINED, JS_UNDEFINED));
  if (text.exception()) return false;
  out->clear();
  if (!JS_IsString(text.get())) return true;
  return ToUtf8(ctx, text.get(), out);
}

// JSON of `v` checked to be an object of strings (want_array false) or an array of strings.
// On a type mismatch throws "invalid: <what>". Returns false with an exception pending.
bool StringsJson(JsRuntime& self, JSContext* ctx, JSValueConst v, bool want_array,
                 std::string_view what, std::string* out) {
  int is_array = JS_IsArray(ctx, v);
  if (is_array < 0) return false;
  bool shape_ok = JS_IsObject(v) && !JS_IsFunction(ctx, v) && (is_array == 1) == want_array;
  std::string text;
  if (shape_ok && !JsonText(ctx, v, &text)) {
    if (!DropOrdinaryException(self, ctx)) return false;
    shape_ok = false;
  }
  json parsed = shape_ok ? json::parse(text, nullptr, false) : json();
  if (shape_ok && parsed.is_discarded()) {
    // JSON.stringify escapes a lone surrogate ("\ud800"), which no JSON parser turns into text.
    ThrowCode(ctx, "invalid",
              std::string(what) +
                  " (a string in it is not valid Unicode: it holds a lone "
                  "surrogate)");
    return false;
  }
  if (shape_ok) shape_ok = want_array ? parsed.is_array() : parsed.is_object();
  if (shape_ok) {
    shape_ok =
        std::all_of(parsed.begin(), parsed.end(), [](const json& v) { return v.is_string(); });
  }
  if (!shape_ok) {
    ThrowCode(ctx, "invalid", what);
    return false;
  }
  *out = parsed.dump(-1, ' ', false, json::error_handler_t::replace);
  return true;
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

// What console.log shows for one value: strings as they are, plain data as JSON, the rest as
// String(v). Returns false with an exception pending.
bool DisplayText(JsRuntime& self, JSContext* ctx, JSValueConst v, std::string* out) {
  if (JS_IsString(v)) return ToUtf8(ctx, v, out);
  if (JS_IsObject(v) && !JS_IsFunction(ctx, v) && !JS_IsError(ctx, v)) {
    if (JsonText(ctx, v, out)) {
      if (!out->empty()) return true;
    } else if (!DropOrdinaryException(self, ctx)) {
      return false;
    }
  }
  if (JS_IsSymbol(v)) {
    *out = "Symbol()";
    return true;
  }
  return ToUtf8(ctx, v, out);
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

JSValue DenyCodeFromStrings(JsRuntime&, JSContext* ctx, int, JSValueConst*) {
  return ThrowText(ctx, "denied: code generation from strings is disabled for plugins");
}

// ---- JsRuntime ----------------------------------------------------------------------------------

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

// The allocator is QuickJS's default one plus a flag: the runtime must know that a failure was
// the memory budget (QuickJS only raises a catchable InternalError) so that it can make it stick.
// True when growing a block from `old_size` to `new_size` bytes must fail (and marks the memory
// budget spent). Once a budget is spent, up to slack_limit_ is allowed: the interrupt's error.
bool JsRuntime::Refuse(JSMallocState* s, size_t old_size, size_t new_size) {
  auto* self = static_cast<JsRuntime*>(s->opaque);
  if (new_size <= old_size) return false;
  const size_t growth = new_size - old_size;
  if (s->malloc_size <= s->malloc_limit && growth <= s->malloc_limit - s->malloc_size) return false;
  if (self->Spent() && s->malloc_size <= self->slack_limit_ &&
      growth <= self->slack_limit_ - s->malloc_size) {
    return false;
  }
  if (!self->memory_spent_) {
    self->memory_spent_ = true;
    self->OnSpent();
  }
  return true;
}

void* JsRuntime::Malloc(JSMallocState* s, size_t size) {
  auto* self = static_cast<JsRuntime*>(s->opaque);
  self->malloc_state_ = s;
  if (Refuse(s, 0, size)) return nullptr;
  void* p = std::malloc(size == 0 ? 1 : size);
  if (!p) {
    if (!self->memory_spent_) {
      self->memory_spent_ = true;
      self->OnSpent();
    }
    return nullptr;
  }
  s->malloc_count++;
  s->malloc_size += UsableSize(p) + kMallocOverhead;
  return p;
}

void JsRuntime::Free(JSMallocState* s, void* ptr) {
  if (!ptr) return;
  s->malloc_count--;
  s->malloc_size -= UsableSize(ptr) + kMallocOverhead;
  std::free(ptr);
}

void* JsRuntime::Realloc(JSMallocState* s, void* ptr, size_t size) {
  if (!ptr) return size == 0 ? nullptr : Malloc(s, size);
  if (size == 0) {
    Free(s, ptr);
    return nullptr;
  }
  auto* self = static_cast<JsRuntime*>(s->opaque);
  size_t old_size = UsableSize(ptr);
  if (Refuse(s, old_size, size)) return nullptr;
  void* p = std::realloc(ptr, size);
  if (!p) {
    if (!self->memory_spent_) {
      self->memory_spent_ = true;
      self->OnSpent();
    }
    return nullptr;
  }
  s->malloc_size = s->malloc_size - old_size + UsableSize(p);
  return p;
}

int JsRuntime::Interrupt(JSRuntime*, void* opaque) {
  auto* self = static_cast<JsRuntime*>(opaque);
  if (!self->Spent()) {
    if (self->polls_left_ == 0) {
      self->instructions_spent_ = true;
    } else {
      --self->polls_left_;
    }
    if (Clock::now() >= self->deadline_) self->deadline_passed_ = true;
    if (!self->Spent()) return 0;
    self->OnSpent();
  }
  // Once spent, stay spent: every later poll interrupts again, so a catch handler or a
  // finally block gets at most one poll interval before it is cut too. QuickJS allocates the
  // interrupt error right after this returns: give it room even when the heap is full.
  const size_t heap = self->malloc_state_ ? self->malloc_state_->malloc_size : 0;
  self->slack_limit_ = heap + kInterruptSlack;
  return 1;
}

void JsRuntime::OnSpent() {
  // From here no function (plugin, builtin or API binding) can start: each checks the stack
  // limit before running. Frames already running end at their next interrupt poll.
  if (rt_) JS_SetMaxStackSize(rt_, kSpentStackBytes);
}

size_t JsRuntime::StackBytes() const {
  // 0 would switch QuickJS's stack check off (a crash instead of an error): keep the default.
  const auto bytes = static_cast<size_t>(limits_.stack_bytes != 0 ? limits_.stack_bytes
                                                                  : RuntimeLimits{}.stack_bytes);
  // AddressSanitizer's redzones make every C frame several times larger: the same JS depth
  // needs a proportionally larger native stack (sanitizer builds only; the thread's stack is
  // far larger than either).
  return ANVIL_ASAN ? bytes * 4 : bytes;
}

void JsRuntime::StartBudget() {
  instructions_spent_ = false;
  deadline_passed_ = false;
  slack_limit_ = 0;
  JS_SetMaxStackSize(rt_, StackBytes());
  if (memory_spent_) {
    memory_spent_ = false;
    JS_RunGC(rt_);  // cycles left by the unwound call
  }
  polls_left_ = limits_.instructions / kPollsPerInterrupt +
                (limits_.instructions % kPollsPerInterrupt != 0 ? 1 : 0);
  auto now = Clock::now();
  auto room = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now);
  deadline_ = limits_.deadline >= room
                  ? Clock::time_point::max()
                  : now + std::chrono::duration_cast<Clock::duration>(limits_.deadline);
  // The stack limit counts from the frame the call starts in, not where the runtime was made.
  JS_UpdateStackTop(rt_);
}

std::optional<Error> JsRuntime::SpentError() const {
  if (instructions_spent_) return Error{"limit", "instruction budget exhausted", 0};
  if (deadline_passed_) return Error{"timeout", "command passed its deadline", 0};
  if (memory_spent_) return Error{"limit", "memory budget exhausted", 0};
  return std::nullopt;
}

bool JsRuntime::Admit(JSContext* ctx) {
  if (!Spent() && Clock::now() >= deadline_) {
    deadline_passed_ = true;
    OnSpent();
  }
  if (auto e = SpentError()) {
    ThrowUncatchable(ctx, *e);
    return false;
  }
  return true;
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

// A module's source is wrapped in this on line 1: columns there are shifted back by its length.
constexpr std::string_view kModulePrefix = "(function (module, exports) {";

// "lib/util" -> "lib/util.js": the file a module name was read from (host/plugin_host.cc).
std::string ModuleFile(const std::string& name) {
  return name.ends_with(".js") ? name : name + ".js";
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
  if (auto s = DenyCodeGeneration(); !s) return s;
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
  if (auto s = InstallApi(); !s) return s;
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
    // anvil.settings: built here from the parsed JSON (not with JSON.parse, which plugin code
    // never got a chance to touch anyway) so that every object and array lands in `made` and
    // is frozen with the API: the settings are data, read-only at every depth.
    const nlohmann::json settings = nlohmann::json::parse(settings_json_, nullptr, false);
    if (!settings.is_object()) return Fail("invalid", "plugin settings are not a JSON object");
    std::function<JSValue(const nlohmann::json&, int)> build = [&](const nlohmann::json& v,
                                                                   int depth) -> JSValue {
      if (depth > 64) {
        ok = false;
        return JS_UNDEFINED;
      }
      switch (v.type()) {
        case nlohmann::json::value_t::null:
          return JS_NULL;
        case nlohmann::json::value_t::boolean:
          return JS_NewBool(ctx_, v.get<bool>());
        case nlohmann::json::value_t::number_integer:
          return JS_NewInt64(ctx_, v.get<int64_t>());
        case nlohmann::json::value_t::number_unsigned:
          return JS_NewFloat64(ctx_, static_cast<double>(v.get<uint64_t>()));
        case nlohmann::json::value_t::number_float:
          return JS_NewFloat64(ctx_, v.get<double>());
        case nlohmann::json::value_t::string: {
          const auto& text = v.get_ref<const std::string&>();
          return JS_NewStringLen(ctx_, text.data(), text.size());
        }
        case nlohmann::json::value_t::array: {
          JSValue arr = JS_NewArray(ctx_);
          if (JS_IsException(arr)) {
            ok = false;
            return arr;
          }
          made.emplace_back(ctx_, JS_DupValue(ctx_, arr));
          uint32_t i = 0;
          for (const auto& item : v) {
            if (JS_DefinePropertyValueUint32(ctx_, arr, i++, build(item, depth + 1),
                                             JS_PROP_C_W_E) < 0) {
              ok = false;
            }
          }
          return arr;
        }
        case nlohmann::json::value_t::object: {
          JSValue o = obj();
          for (auto it = v.begin(); it != v.end(); ++it) {
            // By atom, not JS_DefinePropertyValueStr: a key may hold a NUL byte.
            JSAtom atom = JS_NewAtomLen(ctx_, it.key().data(), it.key().size());
            if (atom == JS_ATOM_NULL) {
              ok = false;
              continue;
            }
            if (JS_DefinePropertyValue(ctx_, o, atom, build(it.value(), depth + 1), JS_PROP_C_W_E) <
                0) {
              ok = false;
            }
            JS_FreeAtom(ctx_, atom);
          }
          return o;
        }
        default:
          return JS_UNDEFINED;
      }
    };
    put(anvil.get(), "settings", build(settings, 0));
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
  for (std::string_view code : kKnownCodes) {
    if (message.size() > code.size() + 1 && message.starts_with(code) &&
        message.compare(code.size(), 2, ": ") == 0) {
      return Error{std::string(code), message.substr(code.size() + 2), 0};
    }
  }
  if (!name.empty() && name != "Error") message = message.empty() ? name : name + ": " + message;
  if (message.empty()) message = "uncaught exception";
  return Error{"error", message, 0};
}

// Runs queued promise jobs while the call is within its budget and deadline, never after.
Status JsRuntime::DrainJobs() {
  while (JS_IsJobPending(rt_)) {
    if (!Spent() && Clock::now() >= deadline_) {
      deadline_passed_ = true;
      OnSpent();
    }
    if (auto e = SpentError()) return tl::unexpected(*e);
    JSContext* job_ctx = nullptr;
    if (JS_ExecutePendingJob(rt_, &job_ctx) < 0) return tl::unexpected(TakeError());
  }
  if (auto e = SpentError()) return tl::unexpected(*e);
  return Ok();
}

// A command's value, or what its promise settles to once the jobs have run.
Result<Value> JsRuntime::Settle(Value result) {
  if (static_cast<int>(JS_PromiseState(ctx_, result.get())) < 0) return result;
  if (auto s = DrainJobs(); !s) return tl::unexpected(s.error());
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

// Ends a call. Jobs the plugin queued belong to this call and run now (under its budget); if a
// budget ran out with jobs still queued the runtime stops, since running them in a later call
// would be running them past this call's deadline.
// A spent budget is what the call reports even when the plugin caught the failed allocation
// and returned before the next interrupt poll could stop it.
std::optional<Error> JsRuntime::FinishCall(std::optional<Error> failure) {
  if (!Spent()) {
    Status drained = DrainJobs();
    if (!drained && !failure) failure = drained.error();
  }
  if (auto spent = SpentError()) {
    failure = *spent;
    if (JS_IsJobPending(rt_)) {
      stopped_ = Error{spent->code,
                       spent->message + "; the plugin left work queued and must be reloaded", 0};
    }
  }
  return failure;
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

}  // namespace

std::unique_ptr<Runtime> MakeJsRuntime(HostApi& api, const RuntimeLimits& limits,
                                       const std::string& settings_json) {
  auto runtime = std::make_unique<JsRuntime>(api, limits, settings_json);
  if (!runtime->Init()) return nullptr;
  return runtime;
}

}  // namespace anvil::host
