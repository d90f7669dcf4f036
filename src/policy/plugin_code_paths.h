// Plugin code is never a plugin's to write (threat model T8/T5): a plugin granted fs.write over
// a directory that holds another plugin's code (a `--plugin-dir` inside the workspace, the
// plugin search path of a workspace at or above $HOME) would rewrite that plugin's main.lua,
// and the next `anvil run` of it, or `anvil serve`'s reload, would run the writer's code with
// the other plugin's grant (an edit of an approved directory never asks again: that is how the
// user's own edits work; only anvil.lock, which pins code, stopped it).
//
// A plugin directory is any directory that holds an `anvil-plugin.toml` (compared as the
// protected names are, fs/protected_names.h FoldNameForLookup), whether or not this session
// loaded it: the plugin run next is not known to the gateway of this run. The gateway refuses
// fs.write, fs.mkdir, fs.remove and fs.rename at or beneath one, and a move or removal of a
// tree that holds one (src/gateway/dispatch.cc); `anvil serve`'s editor.buffer.edit applies the
// same rule (src/session/lsp/serve_documents.cc). No grant opens it: the user edits plugin code
// themselves.
//
// Pure, but for CheckPluginCodeWrite and PluginCodeError, thin loops over a WorkspaceRoot.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "fs/workspace_root.h"

namespace anvil {

inline constexpr std::string_view kPluginManifestName = "anvil-plugin.toml";

// True when the file name `name` (raw bytes) names a plugin manifest on some file system Anvil
// runs on: "anvil-plugin.toml" after FoldNameForLookup (ASCII case, casefold letters, HFS+
// ignorables, trailing dots and spaces). Over-matching only refuses more.
bool IsPluginManifestName(std::string_view name);

// The directories that would make a write to normalized workspace path `path` a write of plugin
// code, were one to hold a manifest: `path` itself (a directory moved, removed, or written into),
// then each directory above it, deepest first, the workspace itself ("." ) last.
std::vector<std::string> PluginDirCandidates(std::string_view path);

// The refusal ("denied") of op `op` on `path`, which lies at or beneath plugin directory
// `plugin_dir` ("." for the workspace): names the plugin by `plugin_id` (empty when its
// manifest does not parse) and its directory, and says how to do it instead
// (policy/protected_subtrees.h ProtectedWriteRefusal, kind kPluginCode). The plugin
// directories are found by probing `path` and the directories above it (PluginDirCandidates),
// so each lies at or above the path by construction.
Error PluginCodeRefusal(std::string_view op, std::string_view path, std::string_view plugin_dir,
                        std::string_view plugin_id);

// The manifest's id from its text, or "" when it does not parse (the directory names it then).
std::string PluginIdOfManifest(std::string_view manifest_text);

// PluginCodeRefusal for `plugin_dir`, with the id read from its manifest beneath `root`.
Error PluginCodeError(const WorkspaceRoot& root, std::string_view op, std::string_view path,
                      std::string_view plugin_dir);

// "ok", or the refusal when a directory of PluginDirCandidates(path) holds a manifest (looked
// up beneath `root` following no symlink, as the fs ops' mutations do; a missing directory on
// the way, a symlinked one, or `path` being a file, holds none). A probe that fails otherwise
// fails closed: its error, saying what could not be checked.
Status CheckPluginCodeWrite(const WorkspaceRoot& root, std::string_view op, std::string_view path);

}  // namespace anvil
