// The protected names: the one table both walls use (threat models T1 and T8).
//
// A plugin's fs operations (the gateway, src/gateway/dispatch.cc) refuse to write, make, move
// or remove anything with a protected name at any depth unless a grant names that exact path
// (path_glob.h, GrantAllows), and the command sandbox (`anvil sandbox`, workspace-write) keeps
// every one of them read-only inside its writable roots (policy/sandbox_policy.h for the top of
// a root, policy/protected_names_plan.h for the rest of the tree). Each name is here once, with
// what it is, so that neither wall can protect a name the other forgets.
//
// Pure: nothing here touches the filesystem.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace anvil {

enum class ProtectedNameKind {
  // .git: rewriting hooks or config gives code execution the next time the user runs git. The
  // command sandbox keeps it with everything git runs (policy/git_metadata.h), and drops that
  // protection only when asked to (--writable-git).
  kGitMetadata,
  // .anvil: Anvil's per-workspace state (the workspace's command rules).
  kAnvilState,
  // anvil.lock: pins each plugin's manifest and code (policy/lockfile.h); without it a plugin's
  // files can be swapped under the grant the user gave.
  kPluginLock,
  // Anvil.toml: enables installed plugins and hands them settings (policy/workspace_config.h).
  kWorkspaceConfig,
  // An AI agent front end's project configuration (.claude/, .codex/, .agents/, .gemini/,
  // .cursor/, .mcp.json, opencode's, aider's, Kiro's, Qwen Code's, Continue's, Roo Code's,
  // Amazon Q's, crush's, Zed's): it decides what the agent runs on the host without asking —
  // hooks, MCP servers it spawns, which commands it may run unsandboxed, its own sandbox mode.
  // Anvil is deployed under these agents (docs/agents.md): a command they run through it must
  // not rewrite the rules of the agent that contains it.
  kAgentConfig,
  // Another version control system's repository metadata whose config runs code on the host:
  // Mercurial's .hg (hgrc's [hooks] and [extensions], run by hg in a repository the user owns),
  // Jujutsu's .jj (repo/config.toml's ui.pager and aliases, in versions that read it),
  // Sapling's .sl (its config's [hooks] and aliases), Darcs' _darcs (prefs/defaults gives
  // commands their options: a --test or posthook command) and Pijul's .pijul (its config's
  // hooks). Kept whole, as .git is, and opened with it by --writable-git; unlike .git, a new one
  // is never judged by what it holds: one the command makes is moved aside after the run.
  kVcsMetadata,
  // A file in an editor's workspace directory that makes the editor run commands by itself:
  // VS Code's .vscode/tasks.json (a task with runOptions.runOn "folderOpen" runs when the
  // folder is opened) and .vscode/mcp.json (the MCP servers it starts). Cursor and Windsurf
  // read the same files. Only those files (kProtectedFilesIn): the rest of .vscode (settings,
  // launch configurations, recommended extensions) is everyday work.
  kEditorAutorun,
};

struct ProtectedName {
  std::string_view name;
  ProtectedNameKind kind;
};

// A name added here is one an older walk cache did not keep: bump its format
// (linux/git_walk_cache.cc) with it.
inline constexpr ProtectedName kProtectedNames[] = {
    {".git", ProtectedNameKind::kGitMetadata},
    {".anvil", ProtectedNameKind::kAnvilState},
    {"anvil.lock", ProtectedNameKind::kPluginLock},
    {"Anvil.toml", ProtectedNameKind::kWorkspaceConfig},
    {".claude", ProtectedNameKind::kAgentConfig},
    {".codex", ProtectedNameKind::kAgentConfig},
    {".agents", ProtectedNameKind::kAgentConfig},
    {".gemini", ProtectedNameKind::kAgentConfig},
    {".cursor", ProtectedNameKind::kAgentConfig},
    {".mcp.json", ProtectedNameKind::kAgentConfig},
    {".opencode", ProtectedNameKind::kAgentConfig},
    {"opencode.json", ProtectedNameKind::kAgentConfig},
    {".aider.conf.yml", ProtectedNameKind::kAgentConfig},
    {".kiro", ProtectedNameKind::kAgentConfig},
    {".qwen", ProtectedNameKind::kAgentConfig},
    {".continue", ProtectedNameKind::kAgentConfig},
    {".roo", ProtectedNameKind::kAgentConfig},
    {".amazonq", ProtectedNameKind::kAgentConfig},
    {"crush.json", ProtectedNameKind::kAgentConfig},
    {".crush.json", ProtectedNameKind::kAgentConfig},
    {".zed", ProtectedNameKind::kAgentConfig},
    {".hg", ProtectedNameKind::kVcsMetadata},
    {".jj", ProtectedNameKind::kVcsMetadata},
    {".sl", ProtectedNameKind::kVcsMetadata},
    {"_darcs", ProtectedNameKind::kVcsMetadata},
    {".pijul", ProtectedNameKind::kVcsMetadata},
};

// A file protected only inside a directory of a given name, where the program that runs what it
// says reads it; a file of that name anywhere else, and the directory's other files, are left.
struct ProtectedFileIn {
  std::string_view dir;
  std::string_view name;
  ProtectedNameKind kind;
};

// As kProtectedNames: a name added here is one an older walk cache did not keep.
inline constexpr ProtectedFileIn kProtectedFilesIn[] = {
    {".vscode", "tasks.json", ProtectedNameKind::kEditorAutorun},
    {".vscode", "mcp.json", ProtectedNameKind::kEditorAutorun},
};

// The program that reads a name of this kind follows a symbolic link there (an agent, hg, jj,
// VS Code), so what the link leads to is what to keep; Anvil opens its own names without
// following one.
constexpr bool FollowedThroughLinks(ProtectedNameKind kind) {
  return kind == ProtectedNameKind::kAgentConfig || kind == ProtectedNameKind::kVcsMetadata ||
         kind == ProtectedNameKind::kEditorAutorun;
}

// A repository's metadata, git's or another version control system's: what --writable-git
// (the user's trust in the command with the repository) opens.
constexpr bool IsRepositoryMetadata(ProtectedNameKind kind) {
  return kind == ProtectedNameKind::kGitMetadata || kind == ProtectedNameKind::kVcsMetadata;
}

// The kind of a protected name, when one file name (raw bytes, not necessarily UTF-8) names a
// protected entry on some file system Anvil may run on: compared after the folds those file
// systems apply when they look a name up — ASCII case, the two non-ASCII letters that
// case-fold to ASCII ones (U+212A KELVIN SIGN to k, U+017F LONG S to s: ext4/f2fs casefold),
// the code points HFS+ ignores (U+200C-U+200F, U+202A-U+202E, U+206A-U+206F, U+FEFF), and
// trailing dots and spaces (NTFS, SMB). Over-matching only refuses more, so the folds are
// applied whatever the file system.
std::optional<ProtectedNameKind> ProtectedNameKindOf(std::string_view name);

// ProtectedNameKindOf(name) has a value.
bool IsProtectedName(std::string_view name);

// The kind of entry `name` of a directory whose own name is `dir` (both compared after the
// folds of ProtectedNameKindOf): a protected name, or a file of kProtectedFilesIn in its
// directory.
std::optional<ProtectedNameKind> ProtectedNameKindIn(std::string_view dir, std::string_view name);

// ProtectedNameKindIn for the last component of the '/'-separated `path`, in the directory the
// component before it names; a last component IsProtectedFilesDirName names (a `.vscode`
// symlink, the only kind of it a walk names) has its files' kind.
std::optional<ProtectedNameKind> ProtectedKindOfPath(std::string_view path);

// `name` is the file name of an entry of kProtectedFilesIn, in whichever directory: one a walk
// keeps to judge with its directory.
bool IsProtectedFileInName(std::string_view name);

// `name` (folded as ProtectedNameKindOf folds) is the directory of an entry of kProtectedFilesIn
// (`.vscode`): as a symlink, the program reads its protected files through it wherever it leads,
// so a symlink by that name is protected as a whole (a directory by that name is not: only its
// listed files are).
bool IsProtectedFilesDirName(std::string_view name);

// `name` as the case-folding and ignoring file systems of IsProtectedName compare it: ASCII
// lower case, U+212A -> 'k', U+017F -> 's', HFS+'s ignorable code points dropped, trailing dots
// and spaces cut. Any other non-ASCII code point (or invalid byte) becomes '\x80', which no
// ASCII name contains.
std::string FoldNameForLookup(std::string_view name);

// True when any component of the '/'-separated relative path is a protected name, or a file
// of kProtectedFilesIn in the directory before it (at any depth: nested repositories, plugins
// and workspaces have their own).
bool IsProtectedPath(std::string_view normalized_path);

}  // namespace anvil
