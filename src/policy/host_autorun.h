// What the host runs from the user's home without being asked, and what a sandboxed run must do
// so that no command can plant it (pure; linux/autorun_shield.h carries the plan out).
//
// A shell reads its startup files at every login or new terminal, a login puts ~/.local/bin
// and ~/bin first on PATH (a planted `ls` there runs instead of /usr/bin/ls), systemd starts
// the user's units, the desktop its autostart entries, and Anvil loads its installed plugins
// with their grants. A sandboxed command whose writable root holds one of these places (a
// workspace of $HOME, or of a directory above it) could write code there that runs later
// outside any sandbox. So, for every place of kHostAutorun that a writable root holds:
//   - what exists stays read-only (a file, or a whole directory), and every directory between
//     the root and it is pinned (bound onto itself), so it can be neither written nor moved
//     aside and made anew;
//   - a symbolic link on the way (~/.bashrc -> dotfiles/bashrc) is pinned too (bound onto
//     itself: it cannot be removed or replaced), and so is everything it leads to that a
//     writable root holds, which includes the file a link points to inside the workspace;
//   - a place that does not exist is taken, for the run, by a dangling symbolic link to
//     kAutorunPlaceholder, pinned like the others. Every reader on the host (bash choosing
//     between .bash_profile, .bash_login and .profile; `[ -d ~/bin ]` in .profile; systemd;
//     Xsession's `[ -x ~/.xsession ]`) sees it exactly as a missing file, and a write through
//     it finds nothing it can create. A directory missing on the way to it is made for the
//     run (writable, pinned). Both are removed after the run (linux/autorun_shield.h).
// A writable root that IS the place (`--writable-root ~/.local/bin`) is the user's explicit
// choice: it stays writable. A workspace below $HOME holds none of them and nothing changes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace anvil {

// Where a place of the table lies.
enum class AutorunBase : std::uint8_t {
  kHome,    // each home: $HOME and the user database's home
  kZsh,     // zsh's directory: each home, and $ZDOTDIR
  kConfig,  // $XDG_CONFIG_HOME, and each home's .config
  kData,    // $XDG_DATA_HOME, and each home's .local/share
};

struct HostAutorun {
  AutorunBase base;
  std::string_view path;  // relative to the base; a file or a directory
  std::string_view what;  // who runs it
};

// Only what runs code, or sets PATH or LD_*, for every session of its kind. A file that a
// startup file of this user's own sources (~/.cargo/env, an oh-my-zsh tree), a program's own
// configuration (an editor's, ~/.npmrc) and a window manager's config are not in it.
inline constexpr HostAutorun kHostAutorun[] = {
    {AutorunBase::kHome, ".profile", "sh, dash and bash login shells; display managers"},
    {AutorunBase::kHome, ".bash_profile", "bash login shells (the first of the three that exists)"},
    {AutorunBase::kHome, ".bash_login", "bash login shells"},
    {AutorunBase::kHome, ".bashrc", "interactive bash; .profile sources it"},
    {AutorunBase::kHome, ".bash_aliases", "Debian's and Ubuntu's .bashrc source it"},
    {AutorunBase::kHome, ".bashrc.d", "Fedora's .bashrc sources every file in it"},
    {AutorunBase::kHome, ".bash_logout", "bash login shells, on exit"},
    {AutorunBase::kHome, ".alias", "openSUSE's bash.bashrc sources it"},
    {AutorunBase::kZsh, ".zshenv", "every zsh"},
    {AutorunBase::kZsh, ".zprofile", "zsh login shells"},
    {AutorunBase::kZsh, ".zshrc", "interactive zsh"},
    {AutorunBase::kZsh, ".zlogin", "zsh login shells"},
    {AutorunBase::kZsh, ".zlogout", "zsh login shells, on exit"},
    {AutorunBase::kConfig, "fish", "fish: config.fish, conf.d, functions, universal variables"},
    {AutorunBase::kHome, ".kshrc", "interactive ksh ($ENV's default)"},
    {AutorunBase::kHome, ".mkshrc", "interactive mksh"},
    {AutorunBase::kHome, ".cshrc", "csh, and tcsh without .tcshrc"},
    {AutorunBase::kHome, ".tcshrc", "tcsh"},
    {AutorunBase::kHome, ".login", "csh and tcsh login shells"},
    {AutorunBase::kHome, ".logout", "csh and tcsh login shells, on exit"},
    {AutorunBase::kHome, "bin", "put first on PATH by Debian's and Ubuntu's .profile"},
    {AutorunBase::kHome, ".local/bin", "put first on PATH by .profile or .bashrc (Debian, Fedora)"},
    {AutorunBase::kHome, ".pam_environment", "pam_env at login (PATH, LD_PRELOAD, ...)"},
    {AutorunBase::kHome, ".xprofile", "display managers at a graphical login"},
    {AutorunBase::kHome, ".xsessionrc", "Debian's Xsession at a graphical login"},
    {AutorunBase::kHome, ".xsession", "Xsession's default session"},
    {AutorunBase::kHome, ".xinitrc", "startx and xinit"},
    {AutorunBase::kHome, ".xinputrc", "im-config at a graphical login"},
    {AutorunBase::kConfig, "systemd", "the user manager: units, timers, user.conf's environment"},
    {AutorunBase::kConfig, "autostart", "XDG autostart entries, started at a graphical login"},
    {AutorunBase::kConfig, "environment.d", "the user manager's and session's environment"},
    {AutorunBase::kConfig, "plasma-workspace", "KDE Plasma's env and shutdown scripts"},
    {AutorunBase::kData, "systemd", "the user manager's units"},
    {AutorunBase::kData, "dbus-1", "D-Bus session services, started on demand"},
    {AutorunBase::kData, "anvil", "Anvil's installed plugins (the default --plugin-path)"},
};

// The environment the places depend on. Relative values (and values with a "." or ".."
// component) are ignored, as the XDG Base Directory spec says.
struct AutorunEnv {
  std::string home;         // $HOME
  std::string passwd_home;  // the user database's home (fs/file_io.h PasswdHome)
  std::string xdg_config_home, xdg_data_home, zdotdir;
};
AutorunEnv AutorunEnvFromProcess();

// Every place of the table for `env`, as absolute lexical paths, each once: not only this
// environment's home but the user database's too, since a login there reads its own.
std::vector<std::string> HostAutorunPaths(const AutorunEnv& env);

// Where a missing place points for the run. /proc's top directory: no process on the host, nor
// in the sandbox, can create a name there, so the link stays dangling, and opening it is
// ENOENT, as for a missing file.
inline constexpr std::string_view kAutorunPlaceholder = "/proc/anvil-sandbox-placeholder";

// lstat(2) of one path, injected.
struct AutorunFs {
  enum class Kind : std::uint8_t { kMissing, kDirectory, kFile, kSymlink, kOther };
  struct Node {
    Kind kind = Kind::kMissing;
    std::uint64_t links = 1;  // a regular file's hard links
    std::string target;       // a symbolic link's text
  };
  std::function<Node(const std::string& path)> lstat;
};

// A missing name the run makes before the command starts.
struct AutorunMake {
  std::string parent;  // canonical, existing
  std::string name;
  bool directory = false;  // a directory on the way (writable); else the placeholder link
  bool operator==(const AutorunMake&) const = default;
};

struct AutorunShieldPlan {
  std::vector<AutorunMake> make;          // to make first, then plan again
  std::vector<std::string> read_only;     // what exists, canonical: bound read-only
  std::vector<std::string> pinned_dirs;   // directories on the way: bound onto themselves
  std::vector<std::string> pinned_links;  // symbolic links on the way: bound onto themselves
  // Every placeholder link met, pinned or not (one an earlier run left where no root of this
  // run holds it): removed after the run unless another run still holds it.
  std::vector<std::string> placeholders;
};

// The plan for one run: `places` (HostAutorunPaths), the run's writable roots (canonical),
// `covered` (what the view mounts afresh, such as its private /tmp: a root does not show what
// lies beneath it), `unmakeable` (names an earlier round could not make: the caller's
// credentials could not, so the command's cannot either). Resolves each place as the kernel
// would, one component at a time, each name looked at once per plan. An error ("sandbox") for a
// file held by a writable root that has another hard link: a second name of it could be written.
Result<AutorunShieldPlan> PlanAutorunShield(const std::vector<std::string>& places,
                                            const std::vector<std::string>& writable_roots,
                                            const std::vector<std::string>& covered,
                                            const AutorunFs& fs,
                                            const std::vector<std::string>& unmakeable = {});

}  // namespace anvil
