#include "policy/consent.h"

#include <algorithm>

#include "fs/path_glob.h"

namespace anvil {
namespace {

bool Contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

bool AddsAny(const std::vector<std::string>& previous, const std::vector<std::string>& requested) {
  return std::any_of(requested.begin(), requested.end(),
                     [&](const std::string& item) { return !Contains(previous, item); });
}

void AppendList(std::string& out, std::string_view heading, const std::vector<std::string>& items,
                bool quote, std::string (*note)(const std::string&)) {
  out += heading;
  if (items.empty()) {
    out += ": nothing\n";
    return;
  }
  out += ":\n";
  for (const std::string& item : items) {
    out += "    - ";
    const std::string shown = SanitizeForDisplay(item);
    if (quote) {
      out += '"';
      out += shown;
      out += '"';
    } else {
      out += shown;
    }
    if (note != nullptr) out += note(item);
    out += '\n';
  }
}

std::string ReadNote(const std::string& glob) {
  if (glob == "**") return " (every file in the workspace)";
  return {};
}

std::string WriteNote(const std::string& glob) {
  if (glob == "**") {
    return " (every file in the workspace, except .git, .anvil, anvil.lock and Anvil.toml, and "
           "what git runs or follows from it because its config names it: hooks directories, "
           "fsmonitor, textconv and filter programs, includes; and no plugin's code: any "
           "directory holding an anvil-plugin.toml)";
  }
  // Wildcards never grant a protected path (path_glob.h); a literal one does, and the user
  // should know what writing it means.
  if (IsLiteralGlob(glob) && IsProtectedPath(glob)) {
    return " (PROTECTED: git or Anvil control file; writing it can run code or change Anvil's "
           "settings)";
  }
  return {};
}

}  // namespace

bool NeedsConsent(const std::optional<Grant>& previous, const Grant& requested) {
  if (!previous) return true;
  return AddsAny(previous->fs_read, requested.fs_read) ||
         AddsAny(previous->fs_write, requested.fs_write) ||
         AddsAny(previous->net_hosts, requested.net_hosts) ||
         AddsAny(previous->exec, requested.exec) || (requested.net_post && !previous->net_post);
}

std::string DescribeGrant(const Grant& grant) {
  std::string out;
  AppendList(out, "  Read files matching", grant.fs_read, /*quote=*/true, &ReadNote);
  // editor.buffer.edit needs only the read grant (docs/protocol.md, "Buffers and edits"): the
  // person is told, since the edit reaches the file when the editor saves it.
  out += "  Edit the open editor buffers of files it reads (anvil serve): ";
  out += grant.fs_read.empty() ? "no\n" : "yes\n";
  AppendList(out, "  Write files matching", grant.fs_write, /*quote=*/true, &WriteNote);
  AppendList(out, "  Connect over HTTPS (port 443 only) to", grant.net_hosts, /*quote=*/false,
             nullptr);
  out += "  Send POST requests (upload data): ";
  out += grant.net_post ? "YES\n" : "no\n";
  AppendList(out, "  Run programs", grant.exec, /*quote=*/false, nullptr);
  return out;
}

}  // namespace anvil
