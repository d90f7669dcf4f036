// The plugin API's description (plugin_api.h): every function, type and value a plugin sees,
// and the look-ups the bindings use. The op table is plugin_api_ops.cc; the type expressions
// and the description's own check, plugin_api_check.cc.
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

  api.ops = PluginApiOps();

  api.values = {
      {"anvil.settings", ApiRuntimes::kBoth, "Settings",
       "This plugin's settings from the workspace's Anvil.toml: data, never authority."},
  };
  return api;
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

}  // namespace anvil
