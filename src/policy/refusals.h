// What the sandbox refused a command, and the one-line way to allow it: the summary
// `anvil sandbox` prints on stderr after the command exits (and the `refusals` array of
// --json). Every entry is a fact recorded during the run — by the refusal observer in the
// sandbox's init (linux/refusal_observer.h: a write into a read-only part of the view, a
// connection the network mode does not allow) or by anvil-proxy (a target it refused) — never
// a guess from the command's output. Pure functions; the table tests are in tests/unit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/sandbox_policy.h"

namespace anvil {

// Where a refused write landed, by the view's parts.
enum class WriteArea {
  kGit,              // a protected .git (workspace-write): --writable-git
  kAnvilDir,         // .anvil, anvil.lock, Anvil.toml, Anvil's trust state: no way past
  kReadOnlySubpath,  // --read-only-subpath / Anvil.toml's read_only_subpaths
  kCredential,       // a credential location, covered or held by the host-autorun shield
                     // (one that did not exist: a placeholder): no way past
  kReadable,         // a toolchain or readable root (from the real home or elsewhere)
  kSystem,           // a runtime root (/usr, /etc, ...)
  kOutside,          // nowhere writable: the view's own read-only skeleton
  kReadOnlyPolicy,   // the workspace or a root under --policy read-only
  kHostAutorun,      // what the host runs from the home (policy/host_autorun.h), credential
                     // locations aside: a directory by --writable-root DIR; a file only
                     // outside the sandbox
  kWorkspaceWay,     // a directory on the way down to the workspace in the sandbox home or the
                     // view's /tmp (WorkspaceWays): beside the workspace, --writable-root DIR
};
std::string_view ToString(WriteArea area);

// Which part of `view` the path (canonical, inside the view) belongs to, for a write the view
// refused (the observer established that it was refused), and that part's root.
struct WriteClass {
  WriteArea area = WriteArea::kOutside;
  std::string root;  // the bind or directory the area is (e.g. /home/u/.pyenv)
};
WriteClass ClassifyWrite(const FileView& view, const SandboxPolicy& policy,
                         const std::string& path);

struct Refusal {
  enum class Kind { kWrite, kNetwork, kProxy };
  Kind kind = Kind::kWrite;
  std::string program;  // the process's name (comm); "" for the proxy
  std::string subject;  // write: path in the view; network: ADDRESS:PORT; proxy: HOST:PORT
  std::string detail;   // write: the syscall; network: "dns" or "direct"; proxy: its reason
  WriteArea area = WriteArea::kOutside;  // kWrite only
  std::string root;                      // kWrite only: WriteClass::root
  // kWrite only: what the write was on the way to, beneath `subject`: the deeper name the same
  // process tried to make just before, or else (kOutside) a path beneath it that the process
  // names in its arguments or environment (`mkdir -p /srv/cc/0`, CCACHE_DIR=/srv/cc); "" for
  // none.
  std::string wanted;
};

// The record init sends (one pipe write: at most `max_bytes`) and its inverse.
std::string EncodeRefusal(const Refusal& refusal, std::size_t max_bytes);
bool DecodeRefusal(std::string_view text, Refusal& out);

// Drops the loopback hint for `address` (a network refusal with detail "loopback" or "dns" at
// that address, as the observer showed it) from `refusals`: a later connect found its port bound
// (linux/refusal_observer.h, LoopbackHints). Other refusals stay.
void WithdrawLoopbackHint(std::vector<Refusal>& refusals, std::string_view address);

// A proxy audit reason ("denied: host not allowed: example.org:443 (...)") as a refusal of
// `target` (HOST:PORT).
Refusal ProxyRefusal(const std::string& target, const std::string& reason);

// One refusal explained: what was refused and why, and `allow`: the one-line way past it
// (empty when there is none, e.g. a credential location).
struct RefusalAdvice {
  std::string what;
  std::string why;
  std::string allow;
};
// Whether a path is a directory on the host (outside the sandbox); empty: not asked.
using HostIsDirectory = std::function<bool(const std::string&)>;

// `home` is the command's $HOME ("" for none) and `workspace` the workspace, to show paths
// the way the user typed them; `network` the mode the command ran with. `host_dir`: a write
// refused outside every root at a path the view does not show but the host has as a directory
// (`mkdir /var/tmp` on the way to a cache the host keeps there) names that directory, not its
// parent.
RefusalAdvice Advise(const Refusal& refusal, const std::string& workspace, const std::string& home,
                     NetworkMode network, const HostIsDirectory& host_dir = {});

// The summary for stderr: "" when nothing was refused; else a header line and one line per
// kind of refusal (the same advice once, "and N more" for repeats). `dropped` counts refusals
// the observer saw but did not keep (past its cap).
std::string RefusalSummary(const std::vector<Refusal>& refusals, std::size_t dropped,
                           const std::string& workspace, const std::string& home,
                           NetworkMode network, const HostIsDirectory& host_dir = {});

// After a run that ended with status 128 + SIGBUS (135: the command was killed by it, or the shell
// that ran it reports a program that was): the hint that a full /dev/shm (a tmpfs of `shm_bytes`)
// does that to a program that maps it (PyTorch's DataLoader workers, Chromium), naming
// `--limit shm=`; "" for any other status. One line with its newline.
std::string SigbusHint(int shell_status, std::uint64_t shm_bytes);

// After a run that failed (`shell_status` != 0): the entries of the home the view left out because
// a link on their way could have been re-pointed by an earlier run (HomeView::not_shown: the path
// in the home, where it leads), each with the `--readable-root` that shows where it leads; a tool
// installed through such a link (`~/.pyenv -> /opt/pyenv`) is otherwise just "not found". At most
// three, then how many more (`--json` lists them all); `home` is shown as `~`. "" when the run
// succeeded or nothing was left out; else lines, each with its newline.
std::string HomeNotShownHint(int shell_status,
                             const std::vector<std::pair<std::string, std::string>>& not_shown,
                             const std::string& home);

// Root's sandbox writes as an unprivileged id through an idmapped workspace that maps only root's
// ids (docs/policy.md, "Root's sandbox"): the kernel gives no write access to a file or directory
// whose owner or group is another id, whatever its mode, so in a workspace whose top is not
// root:root every write there fails with "Permission denied". The warning naming the owner and
// the fix; "" when the caller is not root or the top is root's. One line with its newline.
std::string RootForeignWorkspaceWarning(bool caller_root, const std::string& workspace,
                                        std::uint32_t owner, const std::string& owner_name,
                                        std::uint32_t group);

}  // namespace anvil
