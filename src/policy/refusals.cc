#include "policy/refusals.h"

#include <algorithm>
#include <csignal>
#include <map>

#include "fs/protected_names.h"
#include "policy/display_text.h"

namespace anvil {

std::string_view ToString(WriteArea area) {
  switch (area) {
    case WriteArea::kGit:
      return "git";
    case WriteArea::kAnvilDir:
      return "anvil";
    case WriteArea::kReadOnlySubpath:
      return "read_only_subpath";
    case WriteArea::kCredential:
      return "credential";
    case WriteArea::kReadable:
      return "readable_root";
    case WriteArea::kSystem:
      return "system";
    case WriteArea::kOutside:
      return "outside";
    case WriteArea::kReadOnlyPolicy:
      return "read_only_policy";
    case WriteArea::kHostAutorun:
      return "host_autorun";
    case WriteArea::kWorkspaceWay:
      return "beside_workspace";
  }
  return "?";
}

namespace {

std::string Basename(const std::string& path) { return path.substr(path.rfind('/') + 1); }

bool HasGitComponent(const std::string& path) {
  return path.find("/.git/") != std::string::npos ||
         (path.size() >= 5 && path.compare(path.size() - 5, 5, "/.git") == 0);
}

}  // namespace

WriteClass ClassifyWrite(const FileView& view, const SandboxPolicy& policy,
                         const std::string& path) {
  for (const auto& m : view.credential_masks) {
    if (PathIsWithin(path, m)) return {WriteArea::kCredential, m};
  }
  for (const auto& h : view.host_autorun) {
    if (!PathIsWithin(path, h)) continue;
    // A credential location the shield holds (read-only, or a placeholder for a missing one):
    // no way past, as for one that is covered; never --writable-root ~/.kube.
    for (const auto& c : view.host_credentials) {
      if (PathIsWithin(h, c)) return {WriteArea::kCredential, c};
    }
    return {WriteArea::kHostAutorun, h};
  }
  for (const auto& a : view.anvil_state) {
    if (PathIsWithin(path, a)) return {WriteArea::kAnvilDir, a};
  }
  // The deepest read-only part wins: a .git inside a readable root is still a .git.
  for (const auto& wr : view.writable_roots) {
    for (const auto& sub : wr.read_only_subpaths) {
      if (!PathIsWithin(path, sub)) continue;
      const std::string base = Basename(sub);
      const auto kind = ProtectedKindOfPath(sub);
      if (kind && *kind != ProtectedNameKind::kGitMetadata) return {WriteArea::kAnvilDir, sub};
      if (base == ".git" || HasGitComponent(sub) ||
          std::find(view.git_protected.begin(), view.git_protected.end(), sub) !=
              view.git_protected.end()) {
        return {WriteArea::kGit, sub};
      }
      return {WriteArea::kReadOnlySubpath, sub};
    }
  }
  const MappedBind* mapped = nullptr;
  for (const auto& m : view.mapped_binds) {
    if (!m.writable && PathIsWithin(path, m.target) &&
        (mapped == nullptr || m.target.size() > mapped->target.size())) {
      mapped = &m;
    }
  }
  if (mapped != nullptr) return {WriteArea::kReadable, mapped->target};
  const std::string* root = nullptr;
  for (const auto& g : view.linked_git_dirs) {
    // The git dir of the worktree the workspace is: --writable-git makes it writable.
    if (PathIsWithin(path, g)) return {WriteArea::kGit, g};
  }
  for (const auto& r : view.read_roots) {
    if (PathIsWithin(path, r) && (root == nullptr || r.size() > root->size())) root = &r;
  }
  if (root != nullptr) {
    if (policy.kind == PolicyKind::kReadOnly && PathIsWithin(*root, policy.workspace)) {
      return {WriteArea::kReadOnlyPolicy, *root};
    }
    if (InSystemRoot(*root)) return {WriteArea::kSystem, *root};
    return {WriteArea::kReadable, *root};
  }
  // The sandbox home's ~/.local/lib beside the host's ~/.local/bin: read-only as a toolchain is.
  for (const auto& dir : view.sealed_home_dirs) {
    if (PathIsWithin(path, dir)) return {WriteArea::kReadable, dir};
  }
  // The deepest way down to the workspace that holds it: a directory of the view's own, in the
  // sandbox home or /tmp, that shows nothing of the host's but that way.
  const std::vector<std::string> ways = WorkspaceWays(view);
  for (auto way = ways.rbegin(); way != ways.rend(); ++way) {
    if (PathIsWithin(path, *way)) return {WriteArea::kWorkspaceWay, *way};
  }
  if (view.full_read) return {WriteArea::kSystem, "/"};
  return {WriteArea::kOutside, ""};
}

namespace {

constexpr char kSep = '\x1f';

std::string Clean(std::string_view text, size_t max) {
  std::string out;
  for (char c : text) {
    if (out.size() >= max) break;
    unsigned char u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7f) ? '?' : c;
  }
  return out;
}

}  // namespace

std::string EncodeRefusal(const Refusal& r, std::size_t max_bytes) {
  std::string kind = r.kind == Refusal::Kind::kWrite     ? "w"
                     : r.kind == Refusal::Kind::kNetwork ? "n"
                                                         : "p";
  std::string head = kind + kSep + std::to_string(static_cast<int>(r.area)) + kSep +
                     Clean(r.program, 16) + kSep + Clean(r.detail, 24) + kSep;
  // Paths may be long: the root and subject share what is left, the subject first.
  size_t left = max_bytes > head.size() + 2 ? max_bytes - head.size() - 2 : 0;
  std::string subject = Clean(r.subject, left);
  left -= subject.size();
  std::string root = Clean(r.root, left);
  left -= root.size();
  std::string wanted = left > 1 ? Clean(r.wanted, left - 1) : "";
  if (wanted.size() != r.wanted.size()) wanted.clear();  // cut short, it names nothing
  return head + subject + kSep + root + (wanted.empty() ? "" : kSep + wanted);
}

bool DecodeRefusal(std::string_view text, Refusal& out) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(kSep, start);
    parts.emplace_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  if ((parts.size() != 6 && parts.size() != 7) || parts[0].size() != 1) return false;
  switch (parts[0][0]) {
    case 'w':
      out.kind = Refusal::Kind::kWrite;
      break;
    case 'n':
      out.kind = Refusal::Kind::kNetwork;
      break;
    case 'p':
      out.kind = Refusal::Kind::kProxy;
      break;
    default:
      return false;
  }
  int area = 0;
  for (char c : parts[1]) {
    if (c < '0' || c > '9' || area > 100) return false;
    area = area * 10 + (c - '0');
  }
  if (area > static_cast<int>(WriteArea::kWorkspaceWay)) return false;
  out.area = static_cast<WriteArea>(area);
  out.program = parts[2];
  out.detail = parts[3];
  out.subject = parts[4];
  out.root = parts[5];
  out.wanted = parts.size() == 7 ? parts[6] : "";
  return true;
}

void WithdrawLoopbackHint(std::vector<Refusal>& refusals, std::string_view address) {
  std::erase_if(refusals, [&](const Refusal& r) {
    return r.kind == Refusal::Kind::kNetwork && (r.detail == "loopback" || r.detail == "dns") &&
           r.subject == address;
  });
}

Refusal ProxyRefusal(const std::string& target, const std::string& reason) {
  Refusal r;
  r.kind = Refusal::Kind::kProxy;
  r.subject = Clean(target, 300);
  r.detail = Clean(reason, 400);
  return r;
}

namespace {

// The path one component beneath `dir` on the way to `wanted` (strictly beneath `dir`); "" when
// `wanted` is not beneath it.
std::string WayBeneath(const std::string& dir, const std::string& wanted) {
  if (dir.empty() || wanted.size() <= dir.size() + 1 || !PathIsWithin(wanted, dir)) return "";
  const size_t from = dir == "/" ? 1 : dir.size() + 1;
  const size_t end = wanted.find('/', from);
  const std::string below = wanted.substr(0, end);
  return below.size() > from ? below : "";
}

std::string Shown(const std::string& path, const std::string& workspace, const std::string& home) {
  if (!workspace.empty() && path != workspace && PathIsWithin(path, workspace)) {
    return path.substr(workspace.size() + 1);
  }
  if (!home.empty() && PathIsWithin(path, home)) {
    return path == home ? "~" : "~" + path.substr(home.size());
  }
  return path;
}

// A write of pip (or python -m pip) into the user site, ~/.local/bin or ~/.local/lib.
bool PipUserSite(const Refusal& r, const std::string& home) {
  if (home.empty()) return false;
  const std::string program = Basename(r.program);
  if (!program.starts_with("python") && !program.starts_with("pip")) return false;
  return PathIsWithin(r.subject, home + "/.local/bin") ||
         PathIsWithin(r.subject, home + "/.local/lib");
}
constexpr const char* kPipUserWayPast =
    "install into a virtualenv in the workspace instead (python3 -m venv .venv && .venv/bin/pip "
    "install ...), or let pip --user write your real user site, both halves: --writable-root "
    "~/.local/bin --writable-root ~/.local/lib";

// "host:443" -> "host"; other ports kept.
std::string AllowHostArg(const std::string& target) {
  auto colon = target.rfind(':');
  if (colon != std::string::npos && target.substr(colon + 1) == "443") {
    return target.substr(0, colon);
  }
  return target;
}

}  // namespace

RefusalAdvice Advise(const Refusal& r, const std::string& workspace, const std::string& home,
                     NetworkMode network, const HostIsDirectory& host_dir) {
  RefusalAdvice a;
  switch (r.kind) {
    case Refusal::Kind::kWrite: {
      a.what = "write " + Shown(r.subject, workspace, home);
      const std::string root = Shown(r.root, workspace, home);
      switch (r.area) {
        case WriteArea::kGit:
          a.why = Basename(r.root) == ".git" || HasGitComponent(r.root)
                      ? "Anvil keeps .git read-only (hooks and config there run outside the "
                        "sandbox)"
                      : root +
                            " is git metadata or a path a repository's git config names (a hook, "
                            "an include), which git runs or reads outside the sandbox";
          a.allow = "--writable-git";
          break;
        case WriteArea::kAnvilDir: {
          const auto kind = ProtectedKindOfPath(r.root);
          if (kind == ProtectedNameKind::kPluginLock) {
            a.why = root +
                    " pins the plugins' code and stays read-only (`anvil plugin lock` outside the "
                    "sandbox updates it)";
          } else if (kind == ProtectedNameKind::kWorkspaceConfig) {
            a.why = root +
                    " says which plugins run and with what settings, and stays read-only (edit "
                    "it outside the sandbox)";
          } else if (kind == ProtectedNameKind::kAgentConfig) {
            a.why = root +
                    " is an AI agent's project configuration (hooks, MCP servers, permissions it "
                    "acts on outside the sandbox) and stays read-only (edit it outside the "
                    "sandbox)";
          } else if (kind == ProtectedNameKind::kVcsMetadata) {
            a.why = root +
                    " is a version control repository's metadata (hg's, jj's, sl's, darcs' or "
                    "pijul's: its config names hooks, extensions and pagers they run outside the "
                    "sandbox) and stays read-only";
            a.allow = "--writable-git";
          } else if (kind == ProtectedNameKind::kEditorAutorun) {
            a.why = root +
                    " tells VS Code what to run on the host (a task run when the folder opens, "
                    "the MCP servers it starts) and stays read-only (edit it outside the "
                    "sandbox)";
          } else if (Basename(r.root) == ".anvil") {
            a.why = ".anvil is Anvil's own state and stays read-only";
          } else {
            a.why = root +
                    " is Anvil's own state on this machine (command rules, trusted keys, config, "
                    "grants) and stays read-only (change it with `anvil` outside the sandbox)";
          }
          break;
        }
        case WriteArea::kReadOnlySubpath:
          a.why = root +
                  " is kept read-only (--read-only-subpath or Anvil.toml's [sandbox] "
                  "read_only_subpaths)";
          a.allow = "drop " + root + " from --read-only-subpath / read_only_subpaths";
          break;
        case WriteArea::kCredential:
          if (Basename(r.root) == ".gitconfig" || r.root.ends_with("/.config/git/config")) {
            // Shown as the sanitized copy where it covers the real one (a workspace of $HOME).
            a.why = root +
                    " is your git config, which the sandbox shows only as a sanitized copy and "
                    "never changes (change it outside the sandbox)";
            break;
          }
          a.why = root +
                  " is a credential location, which the sandbox neither shows nor lets a "
                  "command make or change";
          break;
        case WriteArea::kReadable:
          a.why = root +
                  " is shown read-only (a toolchain, a readable root, or the repository above "
                  "the workspace)";
          a.allow = "--writable-root " + root;
          if (PipUserSite(r, home)) {
            // pip --user writes ~/.local/lib and ~/.local/bin together: naming one of them
            // would leave a command on the host whose package is not there.
            a.why = root +
                    " is read-only while your real ~/.local/bin is shown (pip --user writes both, "
                    "and a command there runs outside the sandbox)";
            a.allow = kPipUserWayPast;
          }
          break;
        case WriteArea::kSystem:
          a.why = "system directories are read-only in the sandbox";
          a.allow = "install into the workspace or $HOME instead (a virtualenv, --prefix ~/.local)";
          break;
        case WriteArea::kOutside: {
          a.why = "outside what the sandbox can write (the workspace, $HOME, /tmp)";
          // The directory it was written in, if it is one the user could name; never "/". A
          // directory the host has that the view does not show (made on the way down by
          // `mkdir -p`) is itself the one to name: its parent would open far more. Narrower
          // still, the host's directory just beneath it on the way to what the command wanted
          // there (CCACHE_DIR=/var/tmp/cc: /var/tmp/cc, not all of /var/tmp).
          std::string dir = r.subject.substr(0, r.subject.rfind('/'));
          if (host_dir && r.subject != "/" && host_dir(r.subject)) {
            a.why += "; the host's " + r.subject + " is not shown";
            dir = r.subject;
            const std::string below = WayBeneath(r.subject, r.wanted);
            if (!below.empty() && host_dir(below)) dir = below;
          }
          if (!dir.empty()) a.allow = "--writable-root " + Shown(dir, workspace, home);
          break;
        }
        case WriteArea::kReadOnlyPolicy:
          a.why = "--policy read-only";
          a.allow = "--policy workspace-write";
          break;
        case WriteArea::kHostAutorun:
          a.why = root +
                  " is run by the host outside the sandbox (shell startup, PATH, user units, "
                  "autostart, editors', REPLs' and tools' configuration, Anvil's plugins) and "
                  "stays read-only";
          // A write beneath it: a directory, which the user may name. The file itself: only
          // outside the sandbox.
          if (r.subject != r.root) a.allow = "--writable-root " + root;
          if (PipUserSite(r, home)) a.allow = kPipUserWayPast;
          break;
        case WriteArea::kWorkspaceWay: {
          // The directory it was written in: the host's, shown whole (and writable) by the flag.
          const std::string dir = r.subject.substr(0, r.subject.rfind('/'));
          a.why = root +
                  " is only the way to the workspace in the sandbox (nothing else of the host's " +
                  root + " is shown) and stays read-only";
          if (!dir.empty()) a.allow = "--writable-root " + Shown(dir, workspace, home);
          break;
        }
      }
      break;
    }
    case Refusal::Kind::kNetwork: {
      a.what = (r.detail == "dns" ? "name lookup (DNS to " + r.subject + ")"
                                  : "connect to " + r.subject);
      if (r.detail == "loopback") {
        // The sandbox's own loopback, where nothing listened on that port.
        a.why =
            "nothing listens there on the sandbox's own loopback (a server on the host's "
            "loopback is in another network namespace and never reachable under --network " +
            std::string(ToString(network)) + ")";
        a.allow =
            "start the server inside the same sandboxed command (e.g. `server & sleep 1; "
            "curl ...`), or run the client outside the sandbox";
        break;
      }
      if (network == NetworkMode::kProxy) {
        a.why = "only Anvil's proxy reaches the network (HTTPS_PROXY is set)";
        a.allow = "use the proxy and --allow-host HOST";
      } else {
        a.why = "no network (--network none)";
        a.allow = "--network proxy --allow-host HOST (or --profile node|python|rust|go)";
      }
      break;
    }
    case Refusal::Kind::kProxy: {
      a.what = r.subject + " through the proxy";
      const std::string& why = r.detail;
      if (why.find("host not allowed") != std::string::npos) {
        a.why = "host not on the --allow-host list";
        a.allow = "--allow-host " + AllowHostArg(r.subject);
      } else if (why.find(" resolves to ") != std::string::npos ||
                 why.find("address ") != std::string::npos) {
        auto pos = why.find("denied: ");
        a.why = (pos == 0 ? why.substr(8) : why) + "; the proxy reaches public addresses only";
      } else {
        auto pos = why.find("denied: ");
        a.why = pos == 0 ? why.substr(8) : why;
      }
      break;
    }
  }
  return a;
}

std::string RefusalSummary(const std::vector<Refusal>& refusals, std::size_t dropped,
                           const std::string& workspace, const std::string& home,
                           NetworkMode network, const HostIsDirectory& host_dir) {
  if (refusals.empty() && dropped == 0) return {};
  struct Line {
    std::string program, what, why, allow;
    size_t more = 0;
  };
  std::vector<Line> lines;
  for (const auto& r : refusals) {
    RefusalAdvice a = Advise(r, workspace, home, network, host_dir);
    auto same = std::find_if(lines.begin(), lines.end(), [&](const Line& l) {
      return l.why == a.why && l.allow == a.allow && l.program == r.program;
    });
    if (same != lines.end()) {
      ++same->more;
      continue;
    }
    lines.push_back({r.program, a.what, a.why, a.allow, 0});
  }
  std::string out = "anvil: the sandbox refused (--quiet hides this):\n";
  for (const auto& l : lines) {
    out += "  ";
    if (!l.program.empty()) out += l.program + ": ";
    out += l.what;
    if (l.more > 0) out += " (and " + std::to_string(l.more) + " more)";
    out += " - " + l.why;
    if (!l.allow.empty()) {
      out += l.allow.rfind("--", 0) == 0 ? "; allow with " + l.allow : "; " + l.allow;
    }
    out += "\n";
  }
  if (dropped > 0) out += "  (" + std::to_string(dropped) + " more not listed)\n";
  return out;
}

}  // namespace anvil

namespace anvil {

std::string SigbusHint(int shell_status, std::uint64_t shm_bytes) {
  if (shell_status != 128 + SIGBUS) return "";
  const std::uint64_t mib = shm_bytes >> 20;
  const std::string size = shm_bytes == 0                   ? "its size"
                           : mib >= 1024 && mib % 1024 == 0 ? std::to_string(mib >> 10) + "G"
                                                            : std::to_string(mib) + "M";
  return "anvil sandbox: exit status 135 is SIGBUS, which a program that maps /dev/shm (PyTorch's "
         "DataLoader, Chromium) gets when it is full; the sandbox's /dev/shm is " +
         size + ". fix: a larger one, --limit shm=SIZE (e.g. --limit shm=2G)\n";
}

std::string HomeNotShownHint(int shell_status,
                             const std::vector<std::pair<std::string, std::string>>& not_shown,
                             const std::string& home) {
  if (shell_status == 0 || not_shown.empty()) return "";
  auto shown = [&](const std::string& path) {
    if (!home.empty() && home != "/" && path.rfind(home + "/", 0) == 0) {
      return "~" + SanitizeForDisplay(path.substr(home.size()));
    }
    return SanitizeForDisplay(path);
  };
  std::string out =
      "anvil sandbox: not shown from the home, a link on the way an earlier run could have "
      "re-pointed (docs/policy.md, \"The command's home\"):\n";
  constexpr size_t kListed = 3;
  for (size_t i = 0; i < not_shown.size() && i < kListed; ++i) {
    const auto& [path, leads_to] = not_shown[i];
    out += "  " + shown(path) + " leads to " + SanitizeForDisplay(leads_to) +
           "; if the command needed it: --readable-root " + PasteableShellWord(leads_to) + "\n";
  }
  if (not_shown.size() > kListed) {
    out += "  (and " + std::to_string(not_shown.size() - kListed) + " more: --json lists them)\n";
  }
  return out;
}

std::string RootForeignWorkspaceWarning(bool caller_root, const std::string& workspace,
                                        std::uint32_t owner, const std::string& owner_name,
                                        std::uint32_t group) {
  if (!caller_root || (owner == 0 && group == 0)) return "";
  const std::string why =
      ", and root's sandbox writes only what is root's there (docs/policy.md, \"Root's "
      "sandbox\"): writes fail with \"Permission denied\". fix: ";
  if (owner == 0) {
    return "anvil sandbox: warning: the workspace " + workspace + " has group " +
           std::to_string(group) + why + "chgrp -R root it, or run anvil as a user of that group\n";
  }
  const std::string who = owner_name.empty() ? "uid " + std::to_string(owner) : owner_name;
  const std::string user = owner_name.empty() ? "#" + std::to_string(owner) : owner_name;
  return "anvil sandbox: warning: the workspace " + workspace + " belongs to " + who + why +
         "run it as its owner, `sudo -u " + user + " anvil sandbox ...`\n";
}

}  // namespace anvil
