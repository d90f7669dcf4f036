#include "cli/plugin_scaffold.h"

#include <string_view>

#include "policy/plugin_api.h"
#include "policy/plugin_api_stubs.h"

namespace anvil::cli {
namespace {

// "@ID@" -> the plugin id, "@NAME@" -> the id's last part, "@EXT@" -> lua/js.
std::string Fill(std::string_view text, const std::string& id, PluginRuntime runtime) {
  std::string out(text);
  const std::pair<std::string_view, std::string> fills[] = {
      {"@ID@", id},
      {"@NAME@", DefaultPluginDirName(id)},
      {"@EXT@", std::string(ToString(runtime))}};
  for (const auto& [key, value] : fills) {
    for (size_t at = out.find(key); at != std::string::npos;
         at = out.find(key, at + value.size())) {
      out.replace(at, key.size(), value);
    }
  }
  return out;
}

constexpr std::string_view kManifest =
    R"~~(# The manifest (docs/plugin-api.md, "The manifest"). Anvil shows what [permissions] asks
# for to the user, who grants exactly that or nothing; a changed manifest is asked for again.
id = "@ID@"
version = "0.1.0"
runtime = "@EXT@"
entry = "main.@EXT@"
name = "@NAME@"
description = "Says hello and how long a workspace file is."

[permissions]
# Read files under src/ of the workspace, nothing else. Ask only for what the commands use:
#   fs.write = ["notes/**"]   net.hosts = ["api.example.com"]   exec = ["rg"]
fs.read = ["src/**"]
)~~";

constexpr std::string_view kMainLua =
    R"~~(-- @ID@: an Anvil plugin. The API is in docs/plugin-api.md; types/anvil.lua describes it to
-- your editor (lua-language-server reads .luarc.json).
--   run it:   anvil run --workspace test/fixture . hello
--   test it:  sh test/run.sh

-- hello [PATH]: reads PATH (default src/hello.txt) through Anvil's gateway and says how many
-- lines it has. A path the grant does not cover fails with "denied: ...".
anvil.command("hello", function(args)
  local path = args[1] or "src/hello.txt"
  local text = sys.fs.read(path)
  local _, lines = text:gsub("\n", "\n")
  return string.format("hello from @ID@: %s has %d lines", path, lines)
end)
)~~";

constexpr std::string_view kMainJs =
    R"~~(// @ID@: an Anvil plugin. The API is in docs/plugin-api.md; anvil.d.ts describes it to your
// editor, and `tsc --noEmit -p jsconfig.json` type-checks this file against it.
//   run it:   anvil run --workspace test/fixture . hello
//   test it:  sh test/run.sh

// hello [PATH]: reads PATH (default src/hello.txt) through Anvil's gateway and says how many
// lines it has. A path the grant does not cover fails with "denied: ...".
anvil.command("hello", (args) => {
  const path = typeof args[0] === "string" ? args[0] : "src/hello.txt";
  const text = sys.fs.read(path);
  const lines = text.split("\n").length - 1;
  return `hello from @ID@: ${path} has ${lines} lines`;
});
)~~";

constexpr std::string_view kTestRun = R"~~(#!/bin/sh
# Runs this plugin's tests: each case of test/cases.sh runs one of its commands with
# `anvil run` on the workspace test/fixture (the real sandbox, gateway and grant, as a user
# runs it) and checks what it prints. The grant the tests give the plugin and the audit log
# go to a temporary directory, never to your own.
#   sh test/run.sh                       (from anywhere)
#   ANVIL=/path/to/anvil sh test/run.sh  (another build of anvil)
set -u
here=$(cd "$(dirname "$0")" && pwd)
plugin=$(dirname "$here")
anvil=${ANVIL:-anvil}
state=$(mktemp -d "${TMPDIR:-/tmp}/anvil-plugin-test.XXXXXX") || exit 2
trap 'rm -rf "$state"' EXIT
trap 'exit 130' INT TERM
passed=0
failed=0

# run COMMAND [ARGS...]: sets out (stdout), err (stderr) and status.
run() {
  XDG_STATE_HOME="$state" "$anvil" run --approve --workspace "$here/fixture" "$plugin" "$@" \
    >"$state/out" 2>"$state/err"
  status=$?
  out=$(cat "$state/out")
  err=$(cat "$state/err")
}
pass() {
  passed=$((passed + 1))
  echo "ok    $*"
}
fail() {
  want=$1
  shift
  failed=$((failed + 1))
  echo "FAIL  $*"
  echo "  want:   $want"
  echo "  got:    $out"
  if [ -n "$err" ]; then printf '%s\n' "$err" | sed 's/^/  stderr: /'; fi
  echo "  status: $status"
}
# expect OUTPUT COMMAND [ARGS...]: the command succeeds and prints exactly OUTPUT.
expect() {
  want=$1
  shift
  run "$@"
  if [ "$status" -eq 0 ] && [ "$out" = "$want" ]; then pass "$@"; else fail "$want" "$@"; fi
}
# expect_error MESSAGE COMMAND [ARGS...]: the command fails with MESSAGE ("code: text").
expect_error() {
  want=$1
  shift
  run "$@"
  if [ "$status" -ne 0 ] && printf '%s\n' "$err" | grep -qxF "anvil run: $want"; then
    pass "$@"
  else
    fail "error: $want" "$@"
  fi
}

. "$here/cases.sh"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
)~~";

constexpr std::string_view kTestCases =
    R"~~(# The cases `sh test/run.sh` runs, each a command of this plugin run with `anvil run` on the
# workspace test/fixture:
#   expect OUTPUT COMMAND [ARGS...]         the command prints exactly OUTPUT
#   expect_error MESSAGE COMMAND [ARGS...]  the command fails with MESSAGE ("code: text")
expect "hello from @ID@: src/hello.txt has 2 lines" hello
expect "hello from @ID@: src/one-line.txt has 1 lines" hello src/one-line.txt
# Outside the grant (fs.read = ["src/**"]): the gateway refuses, whatever the code tries.
expect_error "denied: fs.read outside the grant: private.txt" hello private.txt
)~~";

constexpr std::string_view kReadme = R"~~(# @ID@

An Anvil plugin (@EXT@; the API is in Anvil's docs/plugin-api.md). Anvil runs it in a sandbox
and lets it reach only what the user granted (`[permissions]` in `anvil-plugin.toml`).

| file | |
|---|---|
| `anvil-plugin.toml` | the manifest: id, runtime, entry, the permissions it asks for |
| `main.@EXT@` | the code: registers the command `hello` |
| `test/run.sh`, `test/cases.sh` | its tests: commands run on the workspace `test/fixture` |
@EDITOR_ROWS@

```sh
anvil run --workspace test/fixture . hello       # asks you, then runs it (or --approve)
sh test/run.sh                                   # the tests (ANVIL=... for another anvil)
anvil plugin inspect .                           # what it asks for
anvil plugin types .                             # refresh the editor files for your anvil
```

In Neovim (`editors/nvim` of Anvil): `require('anvil').setup({plugin_dirs = {'/path/to/@NAME@'}})`,
then `:AnvilRun @NAME@:hello`.
)~~";

constexpr std::string_view kJsConfig = R"~~({
  "compilerOptions": {
    "allowJs": true,
    "checkJs": true,
    "noEmit": true,
    "strict": true,
    "target": "ES2023",
    "lib": ["ES2023"],
    "types": [],
    "moduleDetection": "force"
  },
  "include": ["anvil.d.ts", "*.js", "lib/**/*.js"]
}
)~~";

constexpr std::string_view kLuarc = R"~~({
  "runtime.version": "Lua 5.4",
  "runtime.builtin": {
    "io": "disable",
    "os": "disable",
    "debug": "disable",
    "package": "disable"
  },
  "workspace.library": ["types"],
  "workspace.checkThirdParty": false
}
)~~";

}  // namespace

std::string DefaultPluginDirName(const std::string& id) {
  // The last non-empty part: "a.b." is "b" (an id starts with [a-z0-9], so there is one).
  std::string trimmed = id;
  while (!trimmed.empty() && trimmed.back() == '.') trimmed.pop_back();
  const auto dot = trimmed.rfind('.');
  return dot == std::string::npos ? trimmed : trimmed.substr(dot + 1);
}

std::vector<ScaffoldFile> EditorSupportFiles(PluginRuntime runtime) {
  if (runtime == PluginRuntime::kJs) {
    return {{"anvil.d.ts", RenderTypeScriptDeclarations(PluginApi()), 0644,
             "the plugin API for TypeScript-aware editors (generated)"},
            {"jsconfig.json", std::string(kJsConfig), 0644,
             "checkJs against anvil.d.ts: `tsc --noEmit -p jsconfig.json`"}};
  }
  return {{"types/anvil.lua", RenderLuaMeta(PluginApi()), 0644,
           "the plugin API for lua-language-server (---@meta, generated)"},
          {".luarc.json", std::string(kLuarc), 0644,
           "points lua-language-server at types/, Lua 5.4, no io/os/debug/package"}};
}

std::vector<ScaffoldFile> PluginScaffold(const std::string& id, PluginRuntime runtime) {
  const bool js = runtime == PluginRuntime::kJs;
  std::vector<ScaffoldFile> files = {
      {"anvil-plugin.toml", Fill(kManifest, id, runtime), 0644,
       "the manifest: id, runtime, entry, the permissions it asks for"},
      {js ? "main.js" : "main.lua", Fill(js ? kMainJs : kMainLua, id, runtime), 0644,
       "the code: one command, hello"},
  };
  std::string editor_rows;
  for (auto& f : EditorSupportFiles(runtime)) {
    editor_rows += "| `" + f.path + "` | " + f.what + " |\n";
    files.push_back(std::move(f));
  }
  if (!editor_rows.empty()) editor_rows.pop_back();
  files.push_back({"test/run.sh", std::string(kTestRun), 0755,
                   "the tests: sh test/run.sh (runs each case with anvil run)"});
  files.push_back({"test/cases.sh", Fill(kTestCases, id, runtime), 0644, "the test cases"});
  files.push_back({"test/fixture/src/hello.txt", "hello from the fixture\nsecond line\n", 0644,
                   "the workspace the tests run on"});
  files.push_back({"test/fixture/src/one-line.txt", "one line\n", 0644, ""});
  files.push_back({"test/fixture/private.txt", "not for plugins\n", 0644, ""});
  std::string readme = Fill(kReadme, id, runtime);
  readme.replace(readme.find("@EDITOR_ROWS@"), 13, editor_rows);
  files.push_back({"README.md", std::move(readme), 0644, "how to run, test and inspect it"});
  return files;
}

}  // namespace anvil::cli
