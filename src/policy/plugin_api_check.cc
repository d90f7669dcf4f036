// Type expressions of the plugin API (ParseApiType) and the description's own check
// (CheckPluginApiDescription: every name defined, every op bound and used), plugin_api.h.
#include <algorithm>
#include <set>
#include <utility>

#include "policy/plugin_api.h"

namespace anvil {
namespace {

class TypeParser {
 public:
  explicit TypeParser(std::string_view text) : text_(text) {}

  Result<ApiType> Parse() {
    ANVIL_TRY(t, Union());
    Skip();
    if (at_ != text_.size()) return Error("unexpected '" + std::string(1, text_[at_]) + "'");
    return t;
  }

 private:
  void Skip() {
    while (at_ < text_.size() && text_[at_] == ' ') ++at_;
  }
  tl::unexpected<anvil::Error> Error(const std::string& what) const {
    return Fail("invalid",
                "type '" + std::string(text_) + "' at " + std::to_string(at_ + 1) + ": " + what);
  }
  static bool IsNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }

  Result<ApiType> Union() {
    ANVIL_TRY(first, Postfix());
    ApiType out;
    out.kind = ApiType::Kind::kUnion;
    out.children.push_back(std::move(*first));
    while (true) {
      Skip();
      if (at_ >= text_.size() || text_[at_] != '|') break;
      ++at_;
      ANVIL_TRY(next, Postfix());
      out.children.push_back(std::move(*next));
    }
    if (out.children.size() == 1) return std::move(out.children.front());
    return out;
  }

  Result<ApiType> Postfix() {
    ANVIL_TRY(t, Primary());
    while (text_.substr(at_).starts_with("[]")) {
      at_ += 2;
      ApiType list;
      list.kind = ApiType::Kind::kList;
      list.children.push_back(std::move(*t));
      *t = std::move(list);
    }
    return t;
  }

  Result<ApiType> Primary() {
    Skip();
    if (at_ >= text_.size()) return Error("a type is missing");
    ApiType out;
    if (text_[at_] == '"') {
      const auto end = text_.find('"', at_ + 1);
      if (end == std::string_view::npos) return Error("unterminated string literal");
      out.kind = ApiType::Kind::kLiteral;
      out.text = std::string(text_.substr(at_ + 1, end - at_ - 1));
      at_ = end + 1;
      return out;
    }
    if (text_.substr(at_).starts_with("map<")) {
      at_ += 4;
      ANVIL_TRY(value, Union());
      Skip();
      if (at_ >= text_.size() || text_[at_] != '>') return Error("'map<' without '>'");
      ++at_;
      out.kind = ApiType::Kind::kMap;
      out.children.push_back(std::move(*value));
      return out;
    }
    const size_t start = at_;
    while (at_ < text_.size() && IsNameChar(text_[at_])) ++at_;
    if (at_ == start) return Error("expected a type name");
    out.kind = ApiType::Kind::kName;
    out.text = std::string(text_.substr(start, at_ - start));
    return out;
  }

  std::string_view text_;
  size_t at_ = 0;
};

const std::set<std::string, std::less<>>& Primitives() {
  static const std::set<std::string, std::less<>> kPrimitives = {"string",  "integer", "number",
                                                                 "boolean", "any",     "nil"};
  return kPrimitives;
}

void CheckNames(const ApiType& type, const std::set<std::string, std::less<>>& defined,
                const std::string& where, std::vector<std::string>& problems) {
  if (type.kind == ApiType::Kind::kName && !Primitives().contains(type.text) &&
      !defined.contains(type.text)) {
    problems.push_back(where + ": type " + type.text + " is not defined");
  }
  for (const auto& child : type.children) CheckNames(child, defined, where, problems);
}

}  // namespace

Result<ApiType> ParseApiType(std::string_view expression) { return TypeParser(expression).Parse(); }

std::vector<std::string> CheckPluginApiDescription(const PluginApiDescription& api) {
  std::vector<std::string> problems;
  std::set<std::string, std::less<>> defined;
  for (const auto& a : api.aliases) {
    if (!defined.insert(a.name).second) problems.push_back("type " + a.name + " defined twice");
    if (a.type.empty() == (a.lua.empty() || a.typescript.empty())) {
      problems.push_back("type " + a.name + " needs a type expression or both spellings");
    }
  }
  for (const auto& r : api.records) {
    if (!defined.insert(r.name).second) problems.push_back("type " + r.name + " defined twice");
  }
  auto check_type = [&](const std::string& expression, const std::string& where) {
    auto parsed = ParseApiType(expression);
    if (!parsed) {
      problems.push_back(where + ": " + parsed.error().message);
      return;
    }
    CheckNames(*parsed, defined, where, problems);
  };
  for (const auto& a : api.aliases) {
    if (!a.type.empty()) check_type(a.type, a.name);
  }
  for (const auto& r : api.records) {
    std::set<std::string> fields;
    for (const auto& f : r.fields) {
      check_type(f.type, r.name + "." + f.name);
      if (!fields.insert(f.name).second) problems.push_back(r.name + "." + f.name + " twice");
    }
  }
  static const std::set<std::string, std::less<>> kGrants = {"", "fs.read", "fs.write", "net.hosts",
                                                             "exec"};
  std::set<std::pair<std::string, bool>> paths;  // (path, js)
  std::set<std::pair<std::string, bool>> used;   // (op, js): ops some function becomes
  auto claim = [&](const std::string& path, ApiRuntimes runtimes) {
    for (bool js : {false, true}) {
      if (InRuntime(runtimes, js) && !paths.insert({path, js}).second) {
        problems.push_back(path + " described twice for " + (js ? "JS" : "Lua"));
      }
    }
    if (path.empty() || path.front() == '.' || path.back() == '.' ||
        path.find("..") != std::string::npos) {
      problems.push_back("malformed path '" + path + "'");
    }
  };
  for (const auto& f : api.functions) {
    claim(f.path, f.runtimes);
    check_type(f.result, f.path + " result");
    for (size_t i = 0; i < f.params.size(); ++i) {
      const auto& p = f.params[i];
      check_type(p.type, f.path + "(" + p.name + ")");
      if (p.variadic && i + 1 != f.params.size()) {
        problems.push_back(f.path + ": only the last parameter can be variadic");
      }
    }
    const bool wired = f.channel != ApiChannel::kLocal;
    if (wired == f.op.empty()) {
      problems.push_back(f.path + (wired ? ": a call that leaves the host needs an op"
                                         : ": a local function has no op"));
    }
    if (!wired) continue;
    const OpSpec* op = OpOf(api, f);
    if (op == nullptr) {
      problems.push_back(f.path + ": op " + f.op + " is not described");
      continue;
    }
    if (op->channel != f.channel)
      problems.push_back(f.path + ": op " + f.op + " is on another channel");
    if (op->internal) problems.push_back(f.path + ": op " + f.op + " is internal");
    for (bool js : {false, true}) {
      if (InRuntime(f.runtimes, js)) used.insert({f.op, js});
    }
    if (op->encoding != ApiReply::kCustom && GenericBinding(api, f)) {
      // The request a generic binding sends: its parameters in order, options spread.
      std::vector<std::string> sent;
      for (const auto& p : f.params) {
        if (const ApiRecord* r = OptionsRecord(api, p)) {
          for (const auto& field : r->fields) sent.push_back(field.name);
        } else {
          sent.push_back(p.name);
        }
      }
      std::vector<std::string> described;
      for (const auto& field : op->request) described.push_back(field.name);
      if (sent != described) {
        problems.push_back(f.path + ": its parameters do not make the request fields of " + f.op);
      }
    } else if (op->encoding != ApiReply::kCustom) {
      problems.push_back(f.path + ": op " + f.op +
                         " has a plain reply but the function cannot be bound generically");
    }
  }
  std::set<std::string> op_names;
  for (const auto& op : api.ops) {
    if (!op_names.insert(op.op).second) problems.push_back("op " + op.op + " described twice");
    if (!kGrants.contains(op.grant))
      problems.push_back("op " + op.op + ": unknown grant " + op.grant);
    if (op.channel == ApiChannel::kLocal) problems.push_back("op " + op.op + ": a local channel");
    bool optional_seen = false;
    bool has_path = false;
    for (const auto& field : op.request) {
      if (optional_seen && !field.optional) {
        problems.push_back("op " + op.op + ": only trailing request fields can be optional");
      }
      optional_seen = optional_seen || field.optional;
      has_path = has_path || field.path;
    }
    if (has_path && op.grant != "fs.read" && op.grant != "fs.write") {
      problems.push_back("op " + op.op + ": path fields need the fs.read or fs.write grant");
    }
    if (op.runs_inline && op.grant == "fs.write") {
      problems.push_back("op " + op.op + ": a write never runs inline");
    }
    if (op.encoding == ApiReply::kString && op.reply.size() != 1) {
      problems.push_back("op " + op.op + ": a string reply is one field");
    }
    if (op.encoding == ApiReply::kNothing && !op.reply.empty()) {
      problems.push_back("op " + op.op + ": a reply of nothing has no fields");
    }
    // Every {field} of the audit target is a request field.
    for (size_t open = op.audit_target.find('{'); open != std::string::npos;
         open = op.audit_target.find('{', open + 1)) {
      const size_t close = op.audit_target.find('}', open);
      const std::string name =
          close == std::string::npos ? "" : op.audit_target.substr(open + 1, close - open - 1);
      if (std::none_of(op.request.begin(), op.request.end(),
                       [&](const ApiWireField& f) { return f.name == name; })) {
        problems.push_back("op " + op.op + ": audit target names no request field '" + name + "'");
      }
    }
    if (op.internal) continue;
    for (bool js : {false, true}) {
      if (!used.contains({op.op, js})) {
        problems.push_back("op " + op.op + " has no function in " + (js ? "JS" : "Lua"));
      }
    }
  }
  for (const auto& v : api.values) {
    claim(v.path, v.runtimes);
    check_type(v.type, v.path);
  }
  // Every member lives in a described namespace, present in the member's runtimes.
  std::set<std::pair<std::string, bool>> namespaces;
  for (const auto& n : api.namespaces) {
    for (bool js : {false, true}) {
      if (InRuntime(n.runtimes, js) && !namespaces.insert({n.path, js}).second) {
        problems.push_back("namespace " + n.path + " described twice");
      }
    }
  }
  for (const auto& [path, js] : paths) {
    for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1)) {
      if (!namespaces.contains({path.substr(0, dot), js})) {
        problems.push_back(path + ": namespace " + path.substr(0, dot) + " is not described for " +
                           (js ? "JS" : "Lua"));
      }
    }
  }
  for (const auto& ns : namespaces) {
    if (paths.contains(ns)) problems.push_back(ns.first + " is both a namespace and a member");
  }
  // A value or function must not sit where another path treats it as a namespace.
  for (const auto& [path, js] : paths) {
    for (const auto& [other, other_js] : paths) {
      if (js == other_js && other.size() > path.size() && other.starts_with(path + ".")) {
        problems.push_back(other + " is beneath " + path + ", which is not a namespace");
      }
    }
  }
  return problems;
}

}  // namespace anvil
