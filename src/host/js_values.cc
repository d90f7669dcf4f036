// The QuickJS runtime's value glue (js_internal.h).
//
// Plugin strings become UTF-8 when they cross to the host. A string that names something
// (a path, a URL, a method, a header, a program, an argument, a buffer URI) and holds a lone
// surrogate is refused ("invalid: ..."): it has no UTF-8 form, and replacing it would read,
// write or run something other than what the plugin named. Contents (sys.fs.write data, a
// fetch body, exec stdin) and text that is only shown (editor.notify, console.log) get U+FFFD
// for a lone surrogate instead, as TextEncoder does. Host
// bytes become JS strings by decoding UTF-8 with U+FFFD for each maximal invalid subsequence (the
// WHATWG decoder's rule), so sys.fs.read of a binary file is lossy: the JS API, like INTERFACES.md,
// is text-only.
#include <quickjs.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "host/api_codec.h"
#include "host/convert_budget.h"
#include "host/js_internal.h"
#include "ipc/frame.h"

namespace anvil::host::js {
namespace {

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

// Charges every node of JSON text to a ConvertBudget without building anything: the text is
// bounded by the VM's memory (JSON.stringify runs inside it), the tree parsed from it need not be.
class ChargeSax : public nlohmann::json_sax<json> {
 public:
  explicit ChargeSax(ConvertBudget& budget) : budget_(budget) {}
  bool null() override { return budget_.Scalar(); }
  bool boolean(bool) override { return budget_.Scalar(); }
  bool number_integer(number_integer_t) override { return budget_.Scalar(); }
  bool number_unsigned(number_unsigned_t) override { return budget_.Scalar(); }
  bool number_float(number_float_t, const string_t&) override { return budget_.Scalar(); }
  bool string(string_t& s) override { return budget_.String(s.size()); }
  bool binary(binary_t&) override { return false; }
  bool start_object(std::size_t) override { return budget_.Container(); }
  bool key(string_t& k) override { return budget_.Key(k.size()); }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return budget_.Container(); }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  ConvertBudget& budget_;
};

}  // namespace

// Host bytes as a JS string. Valid UTF-8 goes to QuickJS as it is (its decoder reads valid
// UTF-8 exactly as the WHATWG one does); only bytes that are not get a sanitized copy first.
JSValue NewString(JSContext* ctx, std::string_view bytes) {
  if (ValidUtf8(bytes)) return JS_NewStringLen(ctx, bytes.data(), bytes.size());
  std::string clean = SanitizeUtf8(bytes);
  return JS_NewStringLen(ctx, clean.data(), clean.size());
}

// Where QuickJS's UTF-8 of a string holds an unpaired surrogate: it encodes one as the 3-byte
// sequence ED A0..BF xx, the only invalid UTF-8 it produces. npos when there is none.
size_t LoneSurrogateAt(std::string_view s, size_t from) {
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

// A string argument, no coercion: anything else is "invalid: <what> must be a string". Strict
// (the default, for names): a lone surrogate is refused; lenient (contents, shown text): it
// becomes U+FFFD.
bool StringArg(JSContext* ctx, JSValueConst v, std::string_view what, std::string* out,
               bool strict) {
  if (!JS_IsString(v)) {
    ThrowCode(ctx, "invalid", std::string(what) + " must be a string");
    return false;
  }
  return strict ? ToUtf8Strict(ctx, v, what, out) : ToUtf8(ctx, v, out);
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
  if (shape_ok) {
    // Over the budget (convert_budget.h) before the tree is built: "limit: ...".
    ConvertBudget budget(ipc::kMaxFrameBytes, self.memory_budget());
    ChargeSax sax(budget);
    if (text.size() > ipc::kMaxFrameBytes) {
      budget.String(text.size());
    } else {
      json::sax_parse(text, &sax, json::input_format_t::json, /*strict=*/true,
                      /*ignore_comments=*/false);
    }
    if (budget.spent()) {
      ThrowCode(ctx, "limit",
                budget.Why(std::string(what.substr(0, what.find(" must be"))) + " as JSON"));
      return false;
    }
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

// anvil.settings: built from the parsed JSON (not with JSON.parse, which plugin code never got a
// chance to touch anyway) so that every object and array lands in `made` and is frozen with the
// API: the settings are data, read-only at every depth.
JSValue SettingsValue(JSContext* ctx, const json& v, int depth, std::vector<Value>& made,
                      bool* ok) {
  if (depth > 64) {
    *ok = false;
    return JS_UNDEFINED;
  }
  switch (v.type()) {
    case json::value_t::null:
      return JS_NULL;
    case json::value_t::boolean:
      return JS_NewBool(ctx, v.get<bool>());
    case json::value_t::number_integer:
      return JS_NewInt64(ctx, v.get<int64_t>());
    case json::value_t::number_unsigned:
      return JS_NewFloat64(ctx, static_cast<double>(v.get<uint64_t>()));
    case json::value_t::number_float:
      return JS_NewFloat64(ctx, v.get<double>());
    case json::value_t::string: {
      const auto& text = v.get_ref<const std::string&>();
      return JS_NewStringLen(ctx, text.data(), text.size());
    }
    case json::value_t::array: {
      JSValue arr = JS_NewArray(ctx);
      if (JS_IsException(arr)) {
        *ok = false;
        return arr;
      }
      made.emplace_back(ctx, JS_DupValue(ctx, arr));
      uint32_t i = 0;
      for (const auto& item : v) {
        if (JS_DefinePropertyValueUint32(
                ctx, arr, i++, SettingsValue(ctx, item, depth + 1, made, ok), JS_PROP_C_W_E) < 0) {
          *ok = false;
        }
      }
      return arr;
    }
    case json::value_t::object: {
      JSValue o = JS_NewObject(ctx);
      if (JS_IsException(o)) *ok = false;
      made.emplace_back(ctx, JS_DupValue(ctx, o));
      for (auto it = v.begin(); it != v.end(); ++it) {
        // By atom, not JS_DefinePropertyValueStr: a key may hold a NUL byte.
        JSAtom atom = JS_NewAtomLen(ctx, it.key().data(), it.key().size());
        if (atom == JS_ATOM_NULL) {
          *ok = false;
          continue;
        }
        if (JS_DefinePropertyValue(ctx, o, atom,
                                   SettingsValue(ctx, it.value(), depth + 1, made, ok),
                                   JS_PROP_C_W_E) < 0) {
          *ok = false;
        }
        JS_FreeAtom(ctx, atom);
      }
      return o;
    }
    default:
      return JS_UNDEFINED;
  }
}

}  // namespace anvil::host::js
