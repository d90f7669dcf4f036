// The plugin API's op table (plugin_api.h): one OpSpec per wire op, from which the gateway's
// dispatch, the audit and both runtimes' bindings are driven; and its look-ups.
#include <string>
#include <utility>

#include "policy/plugin_api.h"

namespace anvil {
namespace {

using std::string_literals::operator""s;

ApiWireField PathField(std::string name) { return {std::move(name), "notes/a.txt", false, true}; }
// An optional boolean field: "1" or "0" ("0" when left out).
ApiWireField Flag(std::string name) { return {std::move(name), "0", true, false}; }

}  // namespace

std::vector<OpSpec> PluginApiOps() {
  const ApiChannel kGateway = ApiChannel::kGateway;
  const ApiChannel kEditor = ApiChannel::kEditor;
  // {op, channel, grant, root allowed, inline, internal, request, reply, audit target, encoding,
  // doc}
  return {
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
}

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

}  // namespace anvil
