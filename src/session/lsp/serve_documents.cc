// The editor's text documents in `anvil serve`: LSP text document sync (textDocument/didOpen,
// didChange, didClose) into the versioned buffers (text_document.h), and the plugins' view of
// them: editor.buffer.get inside the fs.read grant, editor.buffer.edit as a versioned
// workspace/applyEdit (invariant 8: a stale snapshot cannot mutate a buffer).
#include <cstdlib>
#include <string>
#include <utility>

#include "fs/path_glob.h"
#include "fs/workspace_path.h"
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

Result<const TextDocument*> Server::BufferFor(const Plugin& p, const std::string& uri_or_path,
                                              bool for_edit) const {
  const TextDocument* doc = nullptr;
  std::string path;
  if (uri_or_path.find("://") == std::string::npos) {
    // A workspace-relative path: the open buffer of that file.
    auto normalized = NormalizeWorkspacePath(uri_or_path);
    if (!normalized) return tl::unexpected(normalized.error());
    path = *normalized;
    doc = buffers_.FindByPath(path, o_.workspace);
  } else {
    auto rel = WorkspacePathOfUri(uri_or_path, o_.workspace);
    if (!rel) return tl::unexpected(rel.error());
    path = *rel;
    doc = buffers_.Find(uri_or_path);
  }
  if (!GrantAllows(p.grant->fs_read, path, Access::kRead)) {
    return Fail("denied",
                "buffer " + QuotePathForMessage(path) + " is outside the plugin's fs.read grant");
  }
  if (for_edit && IsProtectedPath(path) && !GrantAllows(p.grant->fs_write, path, Access::kWrite)) {
    return Fail("denied", "buffer " + QuotePathForMessage(path) +
                              " is a protected path; editing it needs a literal fs.write grant");
  }
  if (!doc) return Fail("not_found", "no open buffer " + QuotePathForMessage(uri_or_path));
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
