// The editor's text documents in `anvil serve`: LSP text document sync (textDocument/didOpen,
// didChange, didClose) into the versioned buffers (text_document.h), and the plugins' view of
// them: editor.buffer.get inside the fs.read grant, editor.buffer.edit as a versioned
// workspace/applyEdit (invariant 8: a stale snapshot cannot mutate a buffer). A buffer is judged
// by the file its name leads to, as sys.fs.read judges a path (BufferTarget below), not by the
// name alone: "src/l -> ../private.txt" is not shared under "src/**". An edit, which the user
// saves, is refused what the gateway refuses a plugin's fs writes: a protected name, and a path
// git runs or follows (linux/git_run_guard.h: .githooks/pre-commit under core.hooksPath), unless
// a grant names the exact path, and a git dir under another name (fs/git_dir_guard.h: a bare
// repository's config or hooks, or the entry that would make a directory one), and plugin code
// (policy/plugin_code_paths.h: at or beneath a directory holding an anvil-plugin.toml), and
// Anvil's trust state (policy/trust_state_paths.h: the grant store, trusted keys).
#include <cstdlib>
#include <string>
#include <utility>

#include "fs/path_glob.h"
#include "fs/workspace_path.h"
#include "fs/workspace_root.h"
#include "linux/trust_shield.h"
#include "policy/plugin_code_paths.h"
#include "policy/trust_state_paths.h"
#include "session/lsp/document_uri.h"
#include "session/serve_server.h"

namespace anvil::session::serve {

// ---- text document sync ---------------------------------------------------------------------

void Server::DidOpen(const json& params) {
  const json* doc = Find(params, {"textDocument"});
  if (!doc || !doc->is_object() || !doc->contains("uri") || !(*doc)["uri"].is_string() ||
      !doc->contains("text") || !(*doc)["text"].is_string() || !doc->contains("version") ||
      !(*doc)["version"].is_number_integer()) {
    LogMessage(kMessageError, "Anvil: didOpen needs textDocument {uri, version, text}");
    return;
  }
  std::string language;
  if (doc->contains("languageId") && (*doc)["languageId"].is_string()) {
    language = (*doc)["languageId"].get<std::string>();
  }
  if (auto s = buffers_.Open((*doc)["uri"].get<std::string>(), language,
                             (*doc)["version"].get<int64_t>(), (*doc)["text"].get<std::string>());
      !s) {
    LogMessage(kMessageWarning, "Anvil: " + s.error().ToString());
  }
}

void Server::DidChange(const json& params) {
  const json* uri = Find(params, {"textDocument", "uri"});
  const json* version = Find(params, {"textDocument", "version"});
  const json* changes = Find(params, {"contentChanges"});
  if (!uri || !uri->is_string() || !version || !version->is_number_integer() || !changes) {
    LogMessage(kMessageError,
               "Anvil: didChange needs textDocument {uri, version} and contentChanges");
    return;
  }
  if (auto s =
          buffers_.Change(uri->get<std::string>(), version->get<int64_t>(), *changes, encoding_);
      !s) {
    LogMessage(kMessageWarning, "Anvil: " + s.error().ToString());
  }
}

void Server::DidClose(const json& params) {
  const json* uri = Find(params, {"textDocument", "uri"});
  if (uri && uri->is_string()) (void)buffers_.Close(uri->get<std::string>());
}

// ---- the plugins' editor.buffer requests ----------------------------------------------------

namespace {

// Where the buffer of normalized workspace path `path` lives on disk, resolved beneath the
// workspace as sys.fs.read resolves a path (openat2 RESOLVE_BENEATH: a link out of the workspace
// is refused): the name of the file it leads to. A file not on disk yet (a new, unsaved buffer)
// is judged by where its nearest existing directory leads, with the missing names below it; a
// dangling symlink on the way is refused, since saving would create whatever it points at. What
// sys.fs.read refuses of an existing object is refused here too: a directory or special file,
// and a file with more than one hard link (another name may lie outside the workspace); an edit,
// which the user saves, also refuses a hard-linked file whatever the read option says, as
// sys.fs.write does.
Result<std::string> BufferTarget(const WorkspaceRoot& root, const std::string& path,
                                 bool for_edit) {
  auto object = root.Resolve(path);
  if (object) {
    if (object->type != FileType::kFile) {
      return Fail("invalid", "buffer " + QuotePathForMessage(path) + " is not a regular file");
    }
    if (object->nlink > 1 && (for_edit || !root.options().allow_hardlinked_reads)) {
      return Fail("denied", "buffer " + QuotePathForMessage(path) + " is a file with " +
                                std::to_string(object->nlink) +
                                " hard links and may be shared with a file outside the workspace");
    }
    return object->path;
  }
  if (object.error().code != "not_found") return tl::unexpected(object.error());
  // Not on disk: up to the nearest directory that is.
  std::string missing;
  std::string dir = path;
  while (true) {
    auto [parent, name] = SplitParent(dir);
    missing = missing.empty() ? std::string(name) : std::string(name) + "/" + missing;
    dir = std::string(parent);
    auto found = root.Resolve(dir);
    if (!found) {
      if (found.error().code != "not_found" || dir == ".") return tl::unexpected(found.error());
      continue;
    }
    if (found->type != FileType::kDir) {
      return Fail("invalid", "buffer " + QuotePathForMessage(path) + " lies beneath a file");
    }
    const std::string first = missing.substr(0, missing.find('/'));
    const std::string first_path = found->path == "." ? first : found->path + "/" + first;
    if (auto info = root.Stat(first_path); info && info->type == FileType::kSymlink) {
      return Fail("denied", "buffer " + QuotePathForMessage(path) +
                                " goes through a symlink that leads nowhere: " +
                                QuotePathForMessage(first_path));
    }
    return found->path == "." ? missing : found->path + "/" + missing;
  }
}

constexpr std::string_view kBufferEdit = "editor.buffer.edit";

// The grant rules of editor.buffer.get and .edit for one name (the buffer's, or the file's it
// leads to).
Status BufferNameAllowed(const Grant& grant, const std::string& name, bool for_edit,
                         const std::string& what) {
  if (!GrantAllows(grant.fs_read, name, Access::kRead)) {
    return Fail("denied", what + " is outside the plugin's fs.read grant");
  }
  if (for_edit && IsProtectedPath(name) && !GrantAllows(grant.fs_write, name, Access::kWrite)) {
    return Fail("denied", what + " is a protected path; editing it needs a literal fs.write grant");
  }
  return Ok();
}

}  // namespace

Result<const TextDocument*> Server::BufferFor(const Plugin& p, const std::string& uri_or_path,
                                              bool for_edit) const {
  const TextDocument* doc = nullptr;
  std::string path;
  if (uri_or_path.find("://") == std::string::npos) {
    // A workspace-relative path: the open buffer of that file.
    ANVIL_TRY(normalized, NormalizeWorkspacePath(uri_or_path));
    path = *normalized;
    doc = buffers_.FindByPath(path, o_.workspace);
  } else {
    ANVIL_TRY(rel, WorkspacePathOfUri(uri_or_path, o_.workspace));
    path = *rel;
    doc = buffers_.Find(uri_or_path);
  }
  ANVIL_RETURN_IF_ERROR(
      BufferNameAllowed(*p.grant, path, for_edit, "buffer " + QuotePathForMessage(path)));
  if (!doc) return Fail("not_found", "no open buffer " + QuotePathForMessage(uri_or_path));
  // The name is granted; so must be the file it leads to (the one the editor shows and saves).
  if (!buffer_root_) {
    ANVIL_TRY(root, WorkspaceRoot::Open(o_.workspace));
    buffer_root_.emplace(std::move(*root));
  }
  ANVIL_TRY(target, BufferTarget(*buffer_root_, path, for_edit));
  if (*target != path) {
    ANVIL_RETURN_IF_ERROR(BufferNameAllowed(*p.grant, *target, for_edit,
                                            "buffer " + QuotePathForMessage(path) + " leads to " +
                                                QuotePathForMessage(*target) + ", which"));
  }
  if (for_edit) {
    // What git runs: by the name (what git opens) and by the file it leads to (what is saved).
    if (!git_run_) git_run_ = GitRunGuard::Start(o_.workspace);
    ANVIL_RETURN_IF_ERROR(git_run_->Check(kBufferEdit, path, false, p.grant->fs_write));
    if (*target != path) {
      ANVIL_RETURN_IF_ERROR(git_run_->Check(kBufferEdit, *target, false, p.grant->fs_write));
    }
    // A git dir under another name (a bare repository; fs/git_dir_guard.h), as for the
    // gateway's fs.write: nothing saved inside one, nor an entry that completes one.
    for (const std::string* name : {&path, &*target}) {
      auto old = buffer_root_->GitEntryKind(*name);
      const GitDirEntryKind made = old && *old == GitDirEntryKind::kExecFile
                                       ? GitDirEntryKind::kExecFile
                                       : GitDirEntryKind::kFile;
      ANVIL_RETURN_IF_ERROR(buffer_root_->CheckGitDirs(kBufferEdit, *name, made));
      // Plugin code, as for the gateway's fs.write: no grant opens it.
      ANVIL_RETURN_IF_ERROR(CheckPluginCodeWrite(*buffer_root_, kBufferEdit, *name));
      // Nor Anvil's trust state (the grant store, trusted keys) in the workspace.
      if (!trust_state_) trust_state_ = AnvilTrustStateInWorkspace(buffer_root_->path());
      ANVIL_RETURN_IF_ERROR(CheckTrustStateWrite(*trust_state_, kBufferEdit, *name, false));
    }
  }
  return doc;
}

void Server::HandleBufferGet(Plugin& p, const ipc::Request& req) {
  auto doc = BufferFor(p, req.args[0], false);
  if (!doc) {
    (void)p.host->Answer(ipc::Response::Error(req.id, doc.error().code, doc.error().message));
    return;
  }
  (void)p.host->Answer(
      {req.id, true, {(*doc)->uri, std::to_string((*doc)->version), (*doc)->text}});
}

void Server::HandleBufferEdit(Plugin& p, const ipc::Request& req) {
  auto answer_error = [&](const std::string& code, const std::string& text) {
    (void)p.host->Answer(ipc::Response::Error(req.id, code, text));
  };
  if (!versioned_edits_) {
    return answer_error("denied",
                        "the editor did not announce versioned edits (workspace.applyEdit and "
                        "workspace.workspaceEdit.documentChanges), so no edit can be checked "
                        "against its version");
  }
  auto doc = BufferFor(p, req.args[0], true);
  if (!doc) return answer_error(doc.error().code, doc.error().message);
  const std::string& v = req.args[1];
  char* end = nullptr;
  long long version = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0') return answer_error("invalid", "version must be an integer");
  auto prepared = buffers_.PrepareEdit((*doc)->uri, version, req.args[2], encoding_);
  if (!prepared) return answer_error(prepared.error().code, prepared.error().message);
  json params = {
      {"label",
       "[" + p.entry.id + "] " +
           (p.running ? SanitizeForDisplay(p.running->command, 128) : std::string("edit"))},
      {"edit",
       {{"documentChanges",
         json::array({{{"textDocument", {{"uri", prepared->uri}, {"version", prepared->version}}},
                       {"edits", prepared->lsp_edits}}})}}}};
  Plugin* pp = &p;
  const uint64_t generation = p.generation, host_request = req.id;
  SendRequest("workspace/applyEdit", params,
              [this, pp, generation, host_request, edit = std::move(*prepared)](const json* result,
                                                                                const json* error) {
                bool applied =
                    !error && result && result->is_object() && IsTrue(Find(*result, {"applied"}));
                buffers_.FinishEdit(edit, applied);
                if (pp->generation != generation || !pp->host) return;  // host gone meanwhile
                if (applied) {
                  (void)pp->host->Answer({host_request, true, {}});
                  return;
                }
                std::string why = "the editor answered with an error";
                if (const json* reason = result ? Find(*result, {"failureReason"}) : nullptr;
                    reason && reason->is_string()) {
                  why = SanitizeForDisplay(reason->get<std::string>(), 200);
                } else if (!error) {
                  why = "no reason given";
                }
                (void)pp->host->Answer(ipc::Response::Error(
                    host_request, "stale", "the editor did not apply the edit: " + why));
              });
}

}  // namespace anvil::session::serve
