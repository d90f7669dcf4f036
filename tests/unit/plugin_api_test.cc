// The plugin API description itself (policy/plugin_api.h) and the editor files generated from it
// (policy/plugin_api_stubs.h). That the description matches the runtimes is
// tests/host/plugin_api_test.cc; that the generated files type-check and parse with the real
// tools is tests/authoring/plugin_new_test.cc.
#include "policy/plugin_api.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "policy/plugin_api_stubs.h"

namespace anvil {
namespace plugin_api_test {
namespace {

TEST(PluginApiDescription, IsConsistent) {
  EXPECT_EQ(CheckPluginApiDescription(PluginApi()), std::vector<std::string>{});
}

TEST(PluginApiDescription, ChecksFindBrokenDescriptions) {
  struct Case {
    const char* name;
    void (*mutate)(PluginApiDescription&);
    const char* problem;
  };
  const Case cases[] = {
      {"unknown type", [](PluginApiDescription& a) { a.functions[1].result = "Nope"; },
       "type Nope is not defined"},
      {"bad type syntax", [](PluginApiDescription& a) { a.records[0].fields[0].type = "map<"; },
       "a type is missing"},
      {"path twice", [](PluginApiDescription& a) { a.functions.push_back(a.functions[1]); },
       "described twice"},
      {"wired without op", [](PluginApiDescription& a) { a.functions[1].op.clear(); },
       "needs an op"},
      {"local with an op", [](PluginApiDescription& a) { a.functions[0].op = "fs.read"; },
       "a local function has no op"},
      {"unknown grant", [](PluginApiDescription& a) { a.ops[1].grant = "fs.everything"; },
       "unknown grant"},
      {"op not described", [](PluginApiDescription& a) { a.functions[1].op = "fs.chmod"; },
       "op fs.chmod is not described"},
      {"op without a function",
       [](PluginApiDescription& a) {
         for (auto& f : a.functions) {
           if (f.path == "sys.fs.mkdir") f.runtimes = ApiRuntimes::kLua;
         }
       },
       "op fs.mkdir has no function in JS"},
      {"parameters that do not make the request",
       [](PluginApiDescription& a) {
         for (auto& op : a.ops) {
           if (op.op == "fs.write") op.request.pop_back();
         }
       },
       "do not make the request fields of fs.write"},
      {"optional field before a required one",
       [](PluginApiDescription& a) {
         for (auto& op : a.ops) {
           if (op.op == "fs.mkdir") op.request.push_back({"mode", "", false, false});
         }
       },
       "only trailing request fields can be optional"},
      {"a path under a grant that has no globs",
       [](PluginApiDescription& a) {
         for (auto& op : a.ops) {
           if (op.op == "exec") op.request[0].path = true;
         }
       },
       "path fields need the fs.read or fs.write grant"},
      {"a write inline",
       [](PluginApiDescription& a) {
         for (auto& op : a.ops) {
           if (op.op == "fs.remove") op.runs_inline = true;
         }
       },
       "a write never runs inline"},
      {"audit target of an unknown field",
       [](PluginApiDescription& a) {
         for (auto& op : a.ops) {
           if (op.op == "fs.rename") op.audit_target = "{from} -> {dest}";
         }
       },
       "audit target names no request field 'dest'"},
      {"no namespace",
       [](PluginApiDescription& a) {
         ApiFunction f = a.functions[1];
         f.path = "sys.proc.spawn";
         a.functions.push_back(f);
       },
       "namespace sys.proc is not described"},
      {"variadic not last",
       [](PluginApiDescription& a) {
         a.functions[1].params.insert(a.functions[1].params.begin(),
                                      ApiParam{"v", "any", true, true, ""});
       },
       "only the last parameter"},
      {"alias spelled neither way", [](PluginApiDescription& a) { a.aliases[0].type.clear(); },
       "needs a type expression"},
  };
  for (const auto& c : cases) {
    PluginApiDescription api = PluginApi();
    c.mutate(api);
    auto problems = CheckPluginApiDescription(api);
    bool found = false;
    for (const auto& p : problems) found = found || p.find(c.problem) != std::string::npos;
    EXPECT_TRUE(found) << c.name << ": no problem mentions '" << c.problem << "'";
  }
}

std::string ReadDoc(const std::string& name) {
  std::ifstream in(std::string(ANVIL_SOURCE_DIR) + "/docs/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The user's pages name every function and every op: an op added to the table without its
// documentation fails here.
TEST(PluginApiDescription, DocsNameEveryFunctionAndEveryOp) {
  const std::string api_page = ReadDoc("plugin-api.md");
  const std::string protocol = ReadDoc("protocol.md");
  ASSERT_FALSE(api_page.empty());
  ASSERT_FALSE(protocol.empty());
  for (const auto& f : PluginApi().functions) {
    if (f.channel == ApiChannel::kLocal) continue;
    EXPECT_NE(api_page.find("`" + f.path), std::string::npos)
        << "docs/plugin-api.md does not document `" << f.path << "`";
  }
  for (const auto& op : PluginApi().ops) {
    if (op.channel != ApiChannel::kGateway) continue;
    EXPECT_NE(protocol.find("| `" + op.op + "` |"), std::string::npos)
        << "docs/protocol.md's Operations table has no row for " << op.op;
  }
  // Every option of an options record is documented with its function.
  for (const auto& f : PluginApi().functions) {
    for (const auto& p : f.params) {
      if (const ApiRecord* r = OptionsRecord(PluginApi(), p)) {
        for (const auto& field : r->fields) {
          EXPECT_NE(api_page.find(field.name + " = true"), std::string::npos)
              << "docs/plugin-api.md does not show " << f.path << " {" << field.name << "}";
        }
      }
    }
  }
}

TEST(PluginApiType, ParsesTheGrammar) {
  auto t = ParseApiType(R"(map<FsEntry[]>|"a b"|string)");
  ASSERT_TRUE(t) << t.error().ToString();
  ASSERT_EQ(t->kind, ApiType::Kind::kUnion);
  ASSERT_EQ(t->children.size(), 3u);
  EXPECT_EQ(t->children[0].kind, ApiType::Kind::kMap);
  EXPECT_EQ(t->children[0].children[0].kind, ApiType::Kind::kList);
  EXPECT_EQ(t->children[0].children[0].children[0].text, "FsEntry");
  EXPECT_EQ(t->children[1].kind, ApiType::Kind::kLiteral);
  EXPECT_EQ(t->children[1].text, "a b");
  EXPECT_EQ(TypeScriptType(*t, false), R"(Record<string, Anvil.FsEntry[]> | "a b" | string)");
  EXPECT_EQ(LuaType(*t), R"(table<string, anvil.FsEntry[]>|"a b"|string)");
  auto list_of_union = ParseApiType(R"(("x"))");
  EXPECT_FALSE(list_of_union) << "parentheses are not part of the grammar";
  for (const char* bad : {"", "map<string", "\"open", "a b", "[]", "string|", "map<>"}) {
    EXPECT_FALSE(ParseApiType(bad)) << bad;
  }
  EXPECT_EQ(TypeScriptType(*ParseApiType("integer[]"), false), "number[]");
  EXPECT_EQ(LuaType(*ParseApiType("integer[]")), "integer[]");
}

TEST(PluginApiStubs, TypeScriptDeclaresEveryJsMemberAndNoLuaOnlyOne) {
  const std::string dts = RenderTypeScriptDeclarations(PluginApi());
  for (const char* want : {
           "declare const anvil: {",
           "command(name: string, handler: Anvil.CommandHandler): void;",
           "readonly settings: Anvil.Settings;",
           "declare const sys: {",
           "read(path: string): string;",
           "write(path: string, data: string, options?: Anvil.WriteOptions): void;",
           "mkdir(path: string, options?: Anvil.MkdirOptions): void;",
           "remove(path: string, options?: Anvil.RemoveOptions): void;",
           "rename(from: string, to: string): void;",
           "export interface MkdirOptions {",
           "    recursive?: boolean | null;",
           "Checked against the grant: fs.write in anvil-plugin.toml [permissions].",
           "list(dir: string): Anvil.FsEntry[];",
           "fetch(request: Anvil.FetchRequest): Anvil.FetchResponse;",
           "exec(request: Anvil.ExecRequest): Anvil.ExecResult;",
           "edit(uri: string, version: number, edits: Anvil.TextEdit[]): boolean;",
           "declare function print(...values: any[]): void;",
           "declare function require(name: string): any;",
           "log(...values: any[]): void;",
           "export interface ExecRequest {",
           "    args?: string[] | null;",
           "    readonly limit: \"stdout\" | \"stderr\" | null;",
           "export type FileType = \"file\" | \"dir\" | \"symlink\" | \"other\";",
           "Checked against the grant: fs.read in anvil-plugin.toml [permissions].",
       }) {
    EXPECT_NE(dts.find(want), std::string::npos) << "anvil.d.ts lacks: " << want << "\n" << dts;
  }
  EXPECT_EQ(dts.find("declare const os"), std::string::npos) << "os is Lua's";
  EXPECT_EQ(dts.find("clock"), std::string::npos);
  EXPECT_EQ(dts.find("declare function warn"), std::string::npos) << "warn is Lua's";
}

TEST(PluginApiStubs, LuaMetaDeclaresEveryLuaMemberAndNoJsOnlyOne) {
  const std::string meta = RenderLuaMeta(PluginApi());
  EXPECT_TRUE(meta.starts_with("---@meta\n"));
  for (const char* want : {
           "function anvil.command(name, handler) end",
           "---@type anvil.Settings\nanvil.settings = {}",
           "sys = {}",
           "sys.fs = {}",
           "---@param path string relative to the workspace root\n---@return string\nfunction "
           "sys.fs.read(path) end",
           "function sys.exec(request) end",
           "function sys.fs.write(path, data, options) end",
           "---@param options? anvil.WriteOptions",
           "function sys.fs.mkdir(path, options) end",
           "function sys.fs.remove(path, options) end",
           "function sys.fs.rename(from, to) end",
           "---@param request anvil.ExecRequest",
           "---@return anvil.FsEntry[]\nfunction sys.fs.list(dir) end",
           "function editor.buffer.edit(uri, version, edits) end",
           "function os.time() end",
           "function print(...) end",
           "function warn(...) end",
           "---@field limit? \"stdout\"|\"stderr\"",
           "---@class anvil.TextEdit",
       }) {
    EXPECT_NE(meta.find(want), std::string::npos) << "the LuaLS meta lacks: " << want;
  }
  EXPECT_EQ(meta.find("console"), std::string::npos);
}

}  // namespace
}  // namespace plugin_api_test
}  // namespace anvil
