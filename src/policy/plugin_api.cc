#include "policy/plugin_api.h"

#include <algorithm>
#include <set>
#include <utility>

namespace anvil {
namespace {

using std::string_literals::operator""s;

const std::vector<std::string> kNoErrors;

ApiParam P(std::string name, std::string type, std::string doc) {
  return ApiParam{std::move(name), std::move(type), false, false, std::move(doc)};
}
ApiParam Values(std::string doc) { return ApiParam{"values", "any", true, true, std::move(doc)}; }
// A string of any bytes (contents, shown text), not a name.
ApiParam Bytes(std::string name, std::string doc) {
  return ApiParam{std::move(name), "string", false, false, std::move(doc), true};
}
// An options record, left out for the defaults.
ApiParam Options(std::string name, std::string type, std::string doc) {
  return ApiParam{std::move(name), std::move(type), true, false, std::move(doc)};
}

ApiWireField PathField(std::string name) { return {std::move(name), "notes/a.txt", false, true}; }
// An optional boolean field: "1" or "0" ("0" when left out).
ApiWireField Flag(std::string name) { return {std::move(name), "0", true, false}; }

ApiField F(std::string name, std::string type, std::string doc) {
  return ApiField{std::move(name), std::move(type), false, std::move(doc)};
}
ApiField OptionalField(std::string name, std::string type, std::string doc) {
  return ApiField{std::move(name), std::move(type), true, std::move(doc)};
}

PluginApiDescription Build() {
  PluginApiDescription api;

  api.aliases = {
      {"FileType", R"("file"|"dir"|"symlink"|"other")", "", "",
       "What a directory entry is. A symlink is reported, never followed out of the workspace."},
      {"Json", "", "nil|boolean|number|string|table",
       "null | boolean | number | string | Json[] | { [key: string]: Json }",
       "Data that survives JSON: what commands take and return."},
      {"CommandHandler", "", "fun(args: table): any", "(args: any) => unknown",
       "A command's code. `args` are the command's arguments (`anvil run PLUGIN CMD A B` passes "
       "{\"A\", \"B\"}; an editor may pass an object). The return value is the result: strings "
       "as they are, other values as JSON. In JS it may return a Promise."},
      {"Settings", "", "table<string, any>", "{ readonly [key: string]: Json }",
       "The workspace's settings for this plugin (Anvil.toml [plugins.settings.\"ID\"]): "
       "untrusted data, read-only at every depth; an empty table/object when there are none."},
  };

  api.records = {
      {"FsEntry",
       false,
       "One entry of sys.fs.list.",
       {F("name", "string", "the entry's name (no directory part)"),
        F("type", "FileType", "file, dir, symlink or other")}},
      {"FsStat",
       false,
       "What sys.fs.stat says about a path.",
       {F("type", "FileType", "file, dir, symlink or other"), F("size", "integer", "size in bytes"),
        F("mtime", "number", "last modification, seconds since the Unix epoch (with fraction)")}},
      {"FetchRequest",
       true,
       "What sys.net.fetch sends.",
       {F("url", "string", "an https:// URL on port 443 whose host the grant names exactly"),
        OptionalField("method", R"("GET"|"HEAD"|"POST")",
                      "GET when left out; POST needs net.post = true"),
        OptionalField("headers", "map<string>", "request headers (strings only)"),
        OptionalField("body", "string", "the request body (POST only)")}},
      {"FetchResponse",
       false,
       "The answer of sys.net.fetch (error statuses and redirects are answers too).",
       {F("status", "integer", "the HTTP status"),
        F("headers", "map<string>", "response headers, names in lower case"),
        F("body", "string", "the body, decompressed")}},
      {"ExecRequest",
       true,
       "What sys.exec runs.",
       {F("program", "string",
          "a name from Anvil's executable table that the grant names (rg, fd)"),
        OptionalField("args", "string[]", "arguments, checked against the table (no shell)"),
        OptionalField("stdin", "string", "text for the tool's standard input (else /dev/null)")}},
      {"ExecResult",
       false,
       "What a tool run by sys.exec did.",
       {F("code", "integer", "exit status; 128+N when signal N ended it"),
        F("stdout", "string", "standard output (capped)"),
        F("stderr", "string", "standard error (capped)"),
        F("truncated", "boolean", "true when an output cap stopped the tool"),
        OptionalField("limit", R"("stdout"|"stderr")", "the cap that stopped it, if one did")}},
      {"Buffer",
       false,
       "A snapshot of an open editor buffer.",
       {F("uri", "string", "the document's file:// URI"),
        F("version", "integer", "the version this text is; pass it to editor.buffer.edit"),
        F("text", "string", "the buffer's text, as the user sees it (saved or not)")}},
      {"Position",
       true,
       "A place in a buffer: 0-based line, character counted in UTF-8 bytes of that line.",
       {F("line", "integer", "0-based line"),
        F("character", "integer", "0-based byte offset in the line")}},
      {"Range",
       true,
       "A span of a buffer, start inclusive, end exclusive.",
       {F("start", "Position", "where it starts"), F("end", "Position", "where it ends")}},
      {"WriteOptions",
       true,
       "Options of sys.fs.write.",
       {OptionalField("parents", "boolean",
                      "make missing parent directories first (each needs the fs.write grant)")}},
      {"MkdirOptions",
       true,
       "Options of sys.fs.mkdir.",
       {OptionalField("recursive", "boolean",
                      "make missing parents too, and accept an existing directory")}},
      {"RemoveOptions",
       true,
       "Options of sys.fs.remove.",
       {OptionalField("recursive", "boolean",
                      "remove a directory with everything in it (refused if anything in it has a "
                      "protected name)")}},
      {"TextEdit",
       true,
       "One edit: replace `range` (the whole buffer when left out) with `text`.",
       {OptionalField("range", "Range", "what to replace; leave out to replace everything (alone)"),
        F("text", "string", "the new text")}},
  };

  api.namespaces = {
      {"anvil", ApiRuntimes::kBoth, "Anvil's own: registering commands, the plugin's settings."},
      {"sys", ApiRuntimes::kBoth,
       "The world outside the plugin, through Anvil's gateway: every call is checked against "
       "what the user granted (anvil-plugin.toml [permissions])."},
      {"sys.fs", ApiRuntimes::kBoth, "Workspace files; paths are relative to the workspace root."},
      {"sys.net", ApiRuntimes::kBoth, "HTTPS to the hosts the grant names."},
      {"editor", ApiRuntimes::kBoth,
       "The user's editor (anvil serve): notifications and open buffers."},
      {"editor.buffer", ApiRuntimes::kBoth,
       "Open buffers: versioned snapshots, and edits against exactly one version."},
      {"console", ApiRuntimes::kJs, "The plugin log (anvil run: stderr; anvil serve: its log)."},
      {"os", ApiRuntimes::kLua,
       "Only os.time and os.clock: no files, processes, environment or dates."},
  };

  const std::vector<std::string> fs_errors = {"denied", "invalid", "not_found", "io"};
  const std::vector<std::string> write_errors = {"denied", "invalid", "not_found", "io", "limit"};
  api.functions = {
      {"anvil.command",
       ApiRuntimes::kBoth,
       {P("name", "string", "1-128 characters of [A-Za-z0-9._-]; each name once"),
        P("handler", "CommandHandler", "runs when the command is invoked")},
       "nil",
       "Registers a command. Registering a name that is already registered is an error.",
       ApiChannel::kLocal,
       "",
       {"invalid"}},
      {"sys.fs.read",
       ApiRuntimes::kBoth,
       {P("path", "string", "relative to the workspace root")},
       "string",
       "The contents of a workspace file.",
       ApiChannel::kGateway,
       "fs.read",
       write_errors},
      {"sys.fs.write",
       ApiRuntimes::kBoth,
       {P("path", "string", "relative to the workspace root"),
        Bytes("data", "the file's new contents (any bytes)"),
        Options("options", "WriteOptions", "parents = true creates missing parent directories")},
       "nil",
       "Writes a workspace file atomically (a temporary file, then rename). A missing parent "
       "directory is not_found unless options.parents is true.",
       ApiChannel::kGateway,
       "fs.write",
       write_errors},
      {"sys.fs.list",
       ApiRuntimes::kBoth,
       {P("dir", "string", "relative to the workspace root; \".\" is the root")},
       "FsEntry[]",
       "The entries of a workspace directory.",
       ApiChannel::kGateway,
       "fs.list",
       fs_errors},
      {"sys.fs.stat",
       ApiRuntimes::kBoth,
       {P("path", "string", "relative to the workspace root; \".\" is the root")},
       "FsStat",
       "The type, size and modification time of a workspace path.",
       ApiChannel::kGateway,
       "fs.stat",
       fs_errors},
      {"sys.fs.mkdir",
       ApiRuntimes::kBoth,
       {P("path", "string", "relative to the workspace root"),
        Options("options", "MkdirOptions",
                "recursive = true creates missing parents and accepts an existing directory")},
       "nil",
       "Creates a workspace directory. An existing path is invalid (already exists) and a "
       "missing parent not_found, unless options.recursive is true.",
       ApiChannel::kGateway,
       "fs.mkdir",
       write_errors},
      {"sys.fs.remove",
       ApiRuntimes::kBoth,
       {P("path", "string", "relative to the workspace root"),
        Options("options", "RemoveOptions",
                "recursive = true removes a directory and everything in it")},
       "nil",
       "Removes a file, a symlink (never what it points to) or an empty directory; a directory "
       "that is not empty needs options.recursive.",
       ApiChannel::kGateway,
       "fs.remove",
       write_errors},
      {"sys.fs.rename",
       ApiRuntimes::kBoth,
       {P("from", "string", "relative to the workspace root"),
        P("to", "string", "the new name, relative to the workspace root; must not exist")},
       "nil",
       "Renames (moves) a file or directory within the workspace. It never replaces: an "
       "existing destination is invalid (remove it first).",
       ApiChannel::kGateway,
       "fs.rename",
       write_errors},
      {"sys.net.fetch",
       ApiRuntimes::kBoth,
       {P("request", "FetchRequest", "the URL and, optionally, method, headers and body")},
       "FetchResponse",
       "One HTTPS request to a host the grant names (port 443; redirects are not followed).",
       ApiChannel::kGateway,
       "net.fetch",
       {"denied", "invalid", "not_found", "io", "limit", "busy"}},
      {"sys.exec",
       ApiRuntimes::kBoth,
       {P("request", "ExecRequest", "the program, its arguments and optional stdin")},
       "ExecResult",
       "Runs one tool of Anvil's executable table that the grant names, sandboxed, in the "
       "workspace root; it reads what sys.fs.read could read, nothing else.",
       ApiChannel::kGateway,
       "exec",
       {"denied", "invalid", "not_found", "busy", "limit", "sandbox"}},
      {"editor.notify",
       ApiRuntimes::kBoth,
       {Bytes("text", "one line; control characters are removed, 500 characters at most")},
       "nil",
       "Shows a message to the user, attributed to the plugin (anvil run prints it on stderr).",
       ApiChannel::kEditor,
       "editor.notify",
       kNoErrors},
      {"editor.buffer.get",
       ApiRuntimes::kBoth,
       {P("target", "string", "the buffer's file:// URI or a workspace-relative path")},
       "Buffer",
       "A snapshot of an open buffer (anvil serve; `anvil run` has none: not_found).",
       ApiChannel::kEditor,
       "editor.buffer.get",
       {"denied", "invalid", "not_found"}},
      {"editor.buffer.edit",
       ApiRuntimes::kBoth,
       {P("uri", "string", "the uri of the snapshot"),
        P("version", "integer", "the version of the snapshot the edits were computed from"),
        P("edits", "TextEdit[]", "non-overlapping edits against that snapshot")},
       "boolean",
       "Applies edits to the buffer at exactly `version` (true); if it changed since, nothing is "
       "applied and the call raises stale: ...",
       ApiChannel::kEditor,
       "editor.buffer.edit",
       {"stale", "denied", "invalid", "not_found"}},
      {"print",
       ApiRuntimes::kBoth,
       {Values("values to write; Lua separates them with tabs, JS with spaces")},
       "nil",
       "Writes a line to the plugin log (anvil run: stderr; anvil serve: its log).",
       ApiChannel::kLocal,
       "",
       kNoErrors},
      {"warn",
       ApiRuntimes::kLua,
       {Values("values to write")},
       "nil",
       "Writes a warning line to the plugin log.",
       ApiChannel::kLocal,
       "",
       kNoErrors},
      {"require",
       ApiRuntimes::kLua,
       {P("name", "string", "a module of this plugin, e.g. \"lib.util\" for lib/util.lua")},
       "any",
       "Loads one of the plugin's own lib/ modules (once) and returns what it returned.",
       ApiChannel::kLocal,
       "",
       {"not_found"}},
      {"require",
       ApiRuntimes::kJs,
       {P("name", "string",
          "a module of this plugin, e.g. \"lib/util.js\" (or \"./lib/util.js\")")},
       "any",
       "Loads one of the plugin's own lib/ modules (once) and returns its module.exports.",
       ApiChannel::kLocal,
       "",
       {"not_found"}},
      {"os.time",
       ApiRuntimes::kLua,
       {},
       "integer",
       "Seconds since the Unix epoch (no arguments: the rest of os is not available).",
       ApiChannel::kLocal,
       "",
       {"invalid"}},
      {"os.clock",
       ApiRuntimes::kLua,
       {},
       "number",
       "Processor time the plugin host has used, in seconds.",
       ApiChannel::kLocal,
       "",
       kNoErrors},
  };
  for (const char* level : {"log", "info", "warn", "error", "debug"}) {
    api.functions.push_back({"console."s + level,
                             ApiRuntimes::kJs,
                             {Values("values to write, separated by spaces (objects as JSON)")},
                             "nil",
                             "Writes a line to the plugin log at level " + std::string(level) + ".",
                             ApiChannel::kLocal,
                             "",
                             kNoErrors});
  }

  const ApiChannel kGateway = ApiChannel::kGateway;
  const ApiChannel kEditor = ApiChannel::kEditor;
  // {op, channel, grant, root allowed, inline, internal, request, reply, audit target, encoding,
  // doc}
  api.ops = {
      {"ping",
       kGateway,
       "",
       false,
       true,
       true,
       {},
       {},
       "",
       ApiReply::kNothing,
       "— (a no-op round trip)"},
      {"fs.read",
       kGateway,
       "fs.read",
       false,
       true,
       false,
       {PathField("path")},
       {{"contents", "int x;\n"}},
       "{path}",
       ApiReply::kString,
       "contents"},
      {"fs.write",
       kGateway,
       "fs.write",
       false,
       false,
       false,
       {PathField("path"), {"data", "x"}, Flag("parents")},
       {},
       "{path}",
       ApiReply::kNothing,
       "— (atomic: temp file + fsync + rename beneath the root; parents `1`: missing parent "
       "directories are made first, each checked as an fs.mkdir)"},
      {"fs.list",
       kGateway,
       "fs.read",
       true,
       true,
       false,
       {PathField("dir")},
       {{"omitted", "0"}, {"entries", "a.c\0file\0src\0dir\0"s}},
       "{dir}",
       ApiReply::kCustom,
       "omitted-count, `name\\0type\\0name\\0type\\0…` (type: file, dir, symlink, other)"},
      {"fs.stat",
       kGateway,
       "fs.read",
       true,
       true,
       false,
       {PathField("path")},
       {{"type", "file"}, {"size", "12"}, {"mtime_sec", "100"}, {"mtime_nsec", "500000000"}},
       "{path}",
       ApiReply::kCustom,
       "type, size, mtime seconds, mtime nanoseconds"},
      {"fs.mkdir",
       kGateway,
       "fs.write",
       false,
       false,
       false,
       {PathField("path"), Flag("recursive")},
       {},
       "{path}",
       ApiReply::kNothing,
       "— (recursive `1`: missing parents are made and an existing directory is fine)"},
      {"fs.remove",
       kGateway,
       "fs.write",
       false,
       false,
       false,
       {PathField("path"), Flag("recursive")},
       {},
       "{path}",
       ApiReply::kNothing,
       "— (recursive `1`: a directory and everything beneath it; a tree holding a protected name "
       "is refused, see below)"},
      {"fs.rename",
       kGateway,
       "fs.write",
       false,
       false,
       false,
       {PathField("from"), PathField("to")},
       {},
       "{from} -> {to}",
       ApiReply::kNothing,
       "— (never replaces an existing destination; a directory holding a protected name "
       "anywhere beneath it is refused, see below)"},
      {"exec",
       kGateway,
       "exec",
       false,
       false,
       false,
       {{"program", "rg"}, {"args", "[]"}, {"stdin", ""}},
       {{"code", "0"},
        {"stdout", "out"},
        {"stderr", ""},
        {"stdout_truncated", "0"},
        {"stderr_truncated", "0"},
        {"limit", ""}},
       "{program}",
       ApiReply::kCustom,
       "exit code, stdout, stderr, stdout truncated (`1`/`0`), stderr truncated (`1`/`0`), the "
       "cap that stopped the tool (`stdout`, `stderr` or empty)"},
      {"net.fetch",
       kGateway,
       "net.hosts",
       false,
       false,
       false,
       {{"url", "https://example.com/"}, {"method", "GET"}, {"headers", "{}"}, {"body", ""}},
       {{"status", "200"}, {"headers", R"({"content-type":"text/plain"})"}, {"body", "ok"}},
       "{url}",
       ApiReply::kCustom,
       "status, response headers (JSON object), body (see below)"},
      {"editor.notify",
       kEditor,
       "",
       false,
       false,
       false,
       {{"text", "hi"}},
       {},
       "{text}",
       ApiReply::kNothing,
       "—"},
      {"editor.buffer.get",
       kEditor,
       "fs.read",
       false,
       false,
       false,
       {{"target", "src/a.c"}},
       {{"uri", "file:///ws/src/a.c"}, {"version", "3"}, {"text", "int x;\n"}},
       "{target}",
       ApiReply::kCustom,
       "uri, version, text"},
      {"editor.buffer.edit",
       kEditor,
       "fs.read",
       false,
       false,
       false,
       {{"uri", "file:///ws/src/a.c"}, {"version", "3"}, {"edits", "[]"}},
       {},
       "{uri}",
       ApiReply::kCustom,
       "—"},
  };

  api.values = {
      {"anvil.settings", ApiRuntimes::kBoth, "Settings",
       "This plugin's settings from the workspace's Anvil.toml: data, never authority."},
  };
  return api;
}

// ---- type expressions ----------------------------------------------------------------------

class TypeParser {
 public:
  explicit TypeParser(std::string_view text) : text_(text) {}

  Result<ApiType> Parse() {
    auto t = Union();
    if (!t) return t;
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
    auto first = Postfix();
    if (!first) return first;
    ApiType out;
    out.kind = ApiType::Kind::kUnion;
    out.children.push_back(std::move(*first));
    while (true) {
      Skip();
      if (at_ >= text_.size() || text_[at_] != '|') break;
      ++at_;
      auto next = Postfix();
      if (!next) return next;
      out.children.push_back(std::move(*next));
    }
    if (out.children.size() == 1) return std::move(out.children.front());
    return out;
  }

  Result<ApiType> Postfix() {
    auto t = Primary();
    if (!t) return t;
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
      auto value = Union();
      if (!value) return value;
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

bool InRuntime(ApiRuntimes runtimes, bool js) {
  return runtimes == ApiRuntimes::kBoth ||
         (js ? runtimes == ApiRuntimes::kJs : runtimes == ApiRuntimes::kLua);
}

std::string ApiParentPath(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? std::string() : path.substr(0, dot);
}

std::string ApiLeafName(const std::string& path) { return path.substr(path.rfind('.') + 1); }

const PluginApiDescription& PluginApi() {
  static const PluginApiDescription kApi = Build();
  return kApi;
}

Result<ApiType> ParseApiType(std::string_view expression) { return TypeParser(expression).Parse(); }

const OpSpec* FindOp(std::string_view op) {
  for (const auto& spec : PluginApi().ops) {
    if (spec.op == op) return &spec;
  }
  return nullptr;
}

const OpSpec* OpOf(const PluginApiDescription& api, const ApiFunction& function) {
  if (function.op.empty()) return nullptr;
  for (const auto& spec : api.ops) {
    if (spec.op == function.op) return &spec;
  }
  return nullptr;
}

std::string GrantOf(const PluginApiDescription& api, const ApiFunction& function) {
  const OpSpec* op = OpOf(api, function);
  return op ? op->grant : "";
}

const ApiRecord* OptionsRecord(const PluginApiDescription& api, const ApiParam& param) {
  for (const auto& r : api.records) {
    if (r.name != param.type) continue;
    if (!r.input || r.fields.empty()) return nullptr;
    for (const auto& f : r.fields) {
      if (!f.optional || f.type != "boolean") return nullptr;
    }
    return &r;
  }
  return nullptr;
}

bool GenericBinding(const PluginApiDescription& api, const ApiFunction& function) {
  const OpSpec* op = OpOf(api, function);
  if (op == nullptr || op->encoding == ApiReply::kCustom) return false;
  for (const auto& p : function.params) {
    if (p.variadic) return false;
    if (p.type == "string" && !p.optional) continue;
    if (p.optional && OptionsRecord(api, p) != nullptr) continue;
    return false;
  }
  return true;
}

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
