// What the host runs from the user's home without being asked, and what a sandboxed run must do
// so that no command can plant it (pure; linux/autorun_shield.h carries the plan out).
//
// A shell reads its startup files at every login or new terminal, a login puts ~/.local/bin
// and ~/bin first on PATH (a planted `ls` there runs instead of /usr/bin/ls), systemd starts
// the user's units, the desktop its autostart entries, and Anvil loads its installed plugins
// with their grants. A sandboxed command whose writable root holds one of these places (a
// workspace of $HOME, or of a directory above it) could write code there that runs later
// outside any sandbox, and so could a credential location it makes (~/.kube/config with an
// exec plugin). So, for every place of kHostAutorun or kHomeCredentials that a writable root
// holds:
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
#include <optional>
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

// What runs code, sets PATH or LD_*, or decides what code a program fetches or loads, without
// the user asking for that code: a shell's, a session's or a desktop's startup; what is first on
// PATH or sourced by the usual startup files (toolchain managers); a program's configuration or
// plugin directory when it runs code from there by itself (an editor's, a REPL's, a debugger's,
// a terminal's, a window manager's), or names the code it runs (cargo's rustc-wrapper, go's
// -toolexec, pip's index, Gradle's init scripts). The credential locations of kHomeCredentials
// join them (HostAutorunPaths). Not in it: caches (~/.cache, ~/.npm, ~/go/pkg/mod: what a
// build fills, and must go on filling inside: policy/host_caches.h shadows them instead), and
// what a user's own startup files source from a place of their choosing.
inline constexpr HostAutorun kHostAutorun[] = {
    // Shells.
    {AutorunBase::kHome, ".profile", "sh, dash and bash login shells; display managers"},
    {AutorunBase::kHome, ".bash_profile", "bash login shells (the first of the three that exists)"},
    {AutorunBase::kHome, ".bash_login", "bash login shells"},
    {AutorunBase::kHome, ".bashrc", "interactive bash; .profile sources it"},
    {AutorunBase::kHome, ".bash_aliases", "Debian's and Ubuntu's .bashrc source it"},
    {AutorunBase::kHome, ".bashrc.d", "Fedora's .bashrc sources every file in it"},
    {AutorunBase::kHome, ".bash_logout", "bash login shells, on exit"},
    {AutorunBase::kHome, ".bash_completion", "bash-completion, in every interactive bash"},
    {AutorunBase::kConfig, "bash_completion", "bash-completion, in every interactive bash"},
    {AutorunBase::kData, "bash-completion",
     "bash-completion: a command's completion, at its first TAB"},
    {AutorunBase::kHome, ".inputrc", "readline: a key bound to a macro types a command"},
    {AutorunBase::kHome, ".alias", "openSUSE's bash.bashrc sources it"},
    {AutorunBase::kZsh, ".zshenv", "every zsh"},
    {AutorunBase::kZsh, ".zprofile", "zsh login shells"},
    {AutorunBase::kZsh, ".zshrc", "interactive zsh"},
    {AutorunBase::kZsh, ".zlogin", "zsh login shells"},
    {AutorunBase::kZsh, ".zlogout", "zsh login shells, on exit"},
    {AutorunBase::kZsh, ".zshenv.zwc", "zsh reads a compiled startup file in place of the source"},
    {AutorunBase::kZsh, ".zprofile.zwc", "zsh, compiled"},
    {AutorunBase::kZsh, ".zshrc.zwc", "zsh, compiled"},
    {AutorunBase::kZsh, ".zlogin.zwc", "zsh, compiled"},
    {AutorunBase::kZsh, ".zlogout.zwc", "zsh, compiled"},
    {AutorunBase::kZsh, ".zcompdump", "zsh's compinit sources it"},
    {AutorunBase::kHome, ".oh-my-zsh", "oh-my-zsh: .zshrc sources it"},
    {AutorunBase::kHome, ".p10k.zsh", "powerlevel10k: .zshrc sources it when present"},
    {AutorunBase::kHome, ".zinit", "zinit: .zshrc sources it"},
    {AutorunBase::kData, "zinit", "zinit (newer): .zshrc sources it"},
    {AutorunBase::kHome, ".zplug", "zplug: .zshrc sources it"},
    {AutorunBase::kHome, ".antigen", "antigen: .zshrc sources it"},
    {AutorunBase::kHome, ".zprezto", "prezto: .zshrc sources it"},
    {AutorunBase::kHome, ".bash_it", "bash-it: .bashrc sources it"},
    {AutorunBase::kHome, ".fzf.bash", "fzf's installer: .bashrc sources it when present"},
    {AutorunBase::kHome, ".fzf.zsh", "fzf's installer: .zshrc sources it when present"},
    {AutorunBase::kHome, ".fzf", "fzf: its bin on PATH, its shell files sourced"},
    {AutorunBase::kConfig, "fish", "fish: config.fish, conf.d, functions, universal variables"},
    {AutorunBase::kData, "fish", "fish: vendor conf.d, functions and completions"},
    {AutorunBase::kHome, ".kshrc", "interactive ksh ($ENV's default)"},
    {AutorunBase::kHome, ".mkshrc", "interactive mksh"},
    {AutorunBase::kHome, ".cshrc", "csh, and tcsh without .tcshrc"},
    {AutorunBase::kHome, ".tcshrc", "tcsh"},
    {AutorunBase::kHome, ".login", "csh and tcsh login shells"},
    {AutorunBase::kHome, ".logout", "csh and tcsh login shells, on exit"},
    {AutorunBase::kHome, ".xonshrc", "xonsh"},
    {AutorunBase::kConfig, "xonsh", "xonsh"},
    {AutorunBase::kConfig, "nushell", "nushell: config.nu, env.nu"},
    {AutorunBase::kConfig, "elvish", "elvish: rc.elv"},
    {AutorunBase::kConfig, "powershell", "PowerShell's profiles"},
    {AutorunBase::kConfig, "starship.toml",
     "starship: custom modules run a command at every prompt"},
    // PATH, and what startup files source.
    {AutorunBase::kHome, "bin", "put first on PATH by Debian's and Ubuntu's .profile"},
    {AutorunBase::kHome, ".local/bin", "put first on PATH by .profile or .bashrc (Debian, Fedora)"},
    {AutorunBase::kHome, ".local/lib", "pip --user: a .pth or usercustomize runs in every python3"},
    {AutorunBase::kData, "uv", "uv: the tools ~/.local/bin links to, and its Pythons"},
    {AutorunBase::kData, "pipx", "pipx: the environments ~/.local/bin links to"},
    {AutorunBase::kHome, ".local/pipx", "pipx (newer): the same"},
    {AutorunBase::kHome, ".cargo/bin", "on PATH (rustup's ~/.cargo/env)"},
    {AutorunBase::kHome, ".cargo/env", "rustup: .profile and .bashrc source it"},
    {AutorunBase::kHome, ".cargo/config.toml",
     "cargo: build.rustc-wrapper, target runners, aliases"},
    {AutorunBase::kHome, ".cargo/config", "cargo (the older name)"},
    {AutorunBase::kHome, ".rustup", "the toolchains the rustup proxies run"},
    {AutorunBase::kHome, "go/bin", "go install'ed commands, on PATH"},
    {AutorunBase::kConfig, "go",
     "go env -w: GOFLAGS=-toolexec=..., CC, GOPROXY for every go command"},
    {AutorunBase::kHome, ".pyenv", "pyenv: shims on PATH, its init sourced"},
    {AutorunBase::kHome, ".nvm", "nvm: .bashrc sources nvm.sh"},
    {AutorunBase::kHome, ".npm-global", "npm's usual user prefix: its bin on PATH"},
    {AutorunBase::kHome, ".node_modules", "node: require() looks here after the project"},
    {AutorunBase::kHome, ".node_libraries", "node: require() looks here after the project"},
    {AutorunBase::kData, "pnpm", "pnpm's PNPM_HOME: global commands on PATH"},
    {AutorunBase::kHome, ".bunfig.toml", "bun: preload scripts for every bun run"},
    {AutorunBase::kConfig, ".bunfig.toml", "bun: preload scripts for every bun run"},
    {AutorunBase::kHome, ".bun", "Bun, on PATH"},
    {AutorunBase::kHome, ".deno", "Deno: installed commands on PATH"},
    {AutorunBase::kHome, ".volta", "Volta: shims on PATH"},
    {AutorunBase::kHome, ".n", "n (with N_PREFIX=~/.n), on PATH"},
    {AutorunBase::kData, "fnm", "fnm: node versions"},
    {AutorunBase::kData, "mise", "mise: installs and shims on PATH"},
    {AutorunBase::kConfig, "mise", "mise: env and hooks on every cd"},
    {AutorunBase::kHome, ".asdf", "asdf: shims on PATH, asdf.sh sourced"},
    {AutorunBase::kHome, ".rvm", "RVM: .bashrc and .profile source scripts/rvm"},
    {AutorunBase::kHome, ".rye", "rye: shims on PATH, its env sourced"},
    {AutorunBase::kHome, ".pixi", "pixi: its bin on PATH"},
    {AutorunBase::kHome, ".proto", "proto: shims on PATH"},
    {AutorunBase::kHome, ".juliaup", "juliaup: on PATH"},
    {AutorunBase::kHome, ".pub-cache", "dart pub global: its bin on PATH"},
    {AutorunBase::kHome, ".foundry", "foundryup: its bin on PATH"},
    {AutorunBase::kHome, ".poetry", "the old poetry installer: its bin on PATH"},
    {AutorunBase::kData, "gem", "RubyGems' user installs (newer): their bin on PATH"},
    {AutorunBase::kHome, ".rbenv", "rbenv: shims on PATH"},
    {AutorunBase::kHome, ".goenv", "goenv: shims on PATH"},
    {AutorunBase::kHome, ".jenv", "jenv: shims on PATH"},
    {AutorunBase::kHome, ".sdkman", "SDKMAN!: .bashrc sources sdkman-init.sh"},
    {AutorunBase::kHome, ".ghcup", "GHCup: on PATH, its env sourced"},
    {AutorunBase::kHome, ".cabal", "cabal: its bin on PATH, config"},
    {AutorunBase::kHome, ".elan", "elan (Lean), on PATH"},
    {AutorunBase::kHome, ".opam", "opam: its env sourced, switches on PATH"},
    {AutorunBase::kHome, ".nix-profile", "nix: on PATH"},
    {AutorunBase::kHome, ".guix-profile", "guix: on PATH"},
    {AutorunBase::kHome, ".dotnet/tools", "dotnet tools, on PATH"},
    {AutorunBase::kHome, ".krew", "kubectl plugins, on PATH"},
    {AutorunBase::kHome, ".luarocks", "luarocks: its bin on PATH"},
    {AutorunBase::kHome, "perl5", "local::lib: on PERL5LIB and PATH"},
    // Login, session and desktop.
    {AutorunBase::kHome, ".pam_environment", "pam_env at login (PATH, LD_PRELOAD, ...)"},
    {AutorunBase::kHome, ".xprofile", "display managers at a graphical login"},
    {AutorunBase::kHome, ".xsessionrc", "Debian's Xsession at a graphical login"},
    {AutorunBase::kHome, ".xsession", "Xsession's default session"},
    {AutorunBase::kHome, ".xinitrc", "startx and xinit"},
    {AutorunBase::kHome, ".xserverrc", "startx: the X server it runs"},
    {AutorunBase::kHome, ".xinputrc", "im-config at a graphical login"},
    {AutorunBase::kHome, ".Xresources",
     "Xsession's xrdb: terminals' key translations type commands"},
    {AutorunBase::kHome, ".Xdefaults", "X clients without xrdb: the same"},
    {AutorunBase::kHome, ".xscreensaver", "xscreensaver: the programs it runs"},
    {AutorunBase::kConfig, "systemd", "the user manager: units, timers, user.conf's environment"},
    {AutorunBase::kConfig, "autostart", "XDG autostart entries, started at a graphical login"},
    {AutorunBase::kConfig, "autostart-scripts", "KDE Plasma 5's autostart scripts"},
    {AutorunBase::kConfig, "environment.d", "the user manager's and session's environment"},
    {AutorunBase::kConfig, "user-tmpfiles.d",
     "systemd-tmpfiles --user at login: makes, links or replaces any file of the home"},
    {AutorunBase::kData, "user-tmpfiles.d", "systemd-tmpfiles --user: the same"},
    {AutorunBase::kConfig, "plasma-workspace", "KDE Plasma's env and shutdown scripts"},
    {AutorunBase::kConfig, "gnome-session", "GNOME's saved session: programs started at login"},
    {AutorunBase::kConfig, "dconf",
     "GNOME's settings: enabled shell extensions, keybinding commands"},
    {AutorunBase::kConfig, "user-dirs.dirs", "xdg-user-dir sources it as shell"},
    {AutorunBase::kConfig, "mimeapps.list", "which program xdg-open runs for a type"},
    {AutorunBase::kData, "applications", "desktop entries: shadow the system's launchers"},
    {AutorunBase::kData, "systemd", "the user manager's units"},
    {AutorunBase::kData, "dbus-1", "D-Bus session services, started on demand"},
    {AutorunBase::kData, "gnome-shell", "GNOME Shell's extensions, loaded at login"},
    {AutorunBase::kData, "cinnamon", "Cinnamon's applets and extensions"},
    {AutorunBase::kData, "plasma", "KDE Plasma's widgets"},
    {AutorunBase::kData, "kwin", "KWin's scripts"},
    {AutorunBase::kData, "konsole", "Konsole's profiles: the command a new terminal runs"},
    {AutorunBase::kData, "flatpak", "per-user Flatpak applications"},
    {AutorunBase::kHome, ".kde", "KDE 4's Autostart and env"},
    {AutorunBase::kConfig, "pipewire", "PipeWire: context.exec runs programs"},
    {AutorunBase::kConfig, "wireplumber", "WirePlumber's Lua scripts"},
    {AutorunBase::kConfig, "i3", "i3: exec lines at start"},
    {AutorunBase::kConfig, "sway", "sway: exec lines at start"},
    {AutorunBase::kConfig, "hypr", "Hyprland: exec-once lines"},
    {AutorunBase::kConfig, "river", "river: its init program"},
    {AutorunBase::kConfig, "labwc", "labwc: its autostart"},
    {AutorunBase::kConfig, "niri", "niri: spawn-at-startup"},
    {AutorunBase::kConfig, "wayfire.ini", "Wayfire: its autostart section"},
    {AutorunBase::kConfig, "openbox", "Openbox: its autostart"},
    {AutorunBase::kConfig, "lxsession", "LXDE: its autostart"},
    {AutorunBase::kConfig, "lxqt", "LXQt: its session's autostart"},
    {AutorunBase::kConfig, "xfce4", "Xfce: xinitrc, keyboard shortcuts' commands"},
    {AutorunBase::kConfig, "awesome", "awesome: rc.lua"},
    {AutorunBase::kConfig, "bspwm", "bspwm: bspwmrc is run"},
    {AutorunBase::kConfig, "sxhkd", "sxhkd: key bindings' commands"},
    {AutorunBase::kConfig, "herbstluftwm", "herbstluftwm: its autostart is run"},
    {AutorunBase::kConfig, "qtile", "qtile: config.py"},
    {AutorunBase::kHome, ".xmonad", "xmonad: xmonad.hs, compiled and run"},
    // Terminals, multiplexers, editors, REPLs and debuggers.
    {AutorunBase::kConfig, "alacritty", "Alacritty: the shell a new terminal runs"},
    {AutorunBase::kConfig, "kitty", "kitty: startup sessions, watchers"},
    {AutorunBase::kConfig, "wezterm", "WezTerm: wezterm.lua"},
    {AutorunBase::kHome, ".wezterm.lua", "WezTerm"},
    {AutorunBase::kConfig, "foot", "foot: the shell a new terminal runs"},
    {AutorunBase::kConfig, "ghostty", "Ghostty: the command a new terminal runs"},
    {AutorunBase::kHome, ".tmux.conf", "tmux: run-shell"},
    {AutorunBase::kConfig, "tmux", "tmux"},
    {AutorunBase::kHome, ".tmux", "tmux plugins"},
    {AutorunBase::kHome, ".screenrc", "screen"},
    {AutorunBase::kHome, ".byobu", "byobu"},
    {AutorunBase::kConfig, "zellij", "zellij: layouts run commands"},
    {AutorunBase::kHome, ".vimrc", "vim"},
    {AutorunBase::kHome, ".gvimrc", "gvim"},
    {AutorunBase::kHome, ".exrc", "vi and ex"},
    {AutorunBase::kHome, ".vim", "vim: plugins, autoload, after"},
    {AutorunBase::kConfig, "vim", "vim 9.1's XDG directory"},
    {AutorunBase::kConfig, "nvim", "neovim: init.lua, plugins"},
    {AutorunBase::kData, "nvim", "neovim: site/plugin, installed plugins"},
    {AutorunBase::kHome, ".emacs", "emacs"},
    {AutorunBase::kHome, ".emacs.el", "emacs"},
    {AutorunBase::kHome, ".emacs.d", "emacs: init.el, packages"},
    {AutorunBase::kConfig, "emacs", "emacs 27's XDG directory"},
    {AutorunBase::kHome, ".doom.d", "Doom Emacs"},
    {AutorunBase::kConfig, "doom", "Doom Emacs"},
    {AutorunBase::kHome, ".spacemacs", "Spacemacs"},
    {AutorunBase::kHome, ".spacemacs.d", "Spacemacs"},
    {AutorunBase::kHome, ".nanorc", "nano: its speller and formatter commands"},
    {AutorunBase::kConfig, "nano", "nano"},
    {AutorunBase::kConfig, "micro", "micro: Lua plugins"},
    {AutorunBase::kConfig, "helix", "helix: language servers it starts for a file"},
    {AutorunBase::kConfig, "kak", "kakoune: kakrc runs shell"},
    {AutorunBase::kHome, ".selected_editor",
     "Debian's editor choice: its editor wrapper sources it as shell"},
    {AutorunBase::kHome, ".vscode", "VS Code: extensions, argv.json"},
    {AutorunBase::kHome, ".vscode-oss", "Code - OSS and VSCodium: extensions"},
    {AutorunBase::kHome, ".vscode-server", "VS Code's remote server and its extensions"},
    {AutorunBase::kHome, ".cursor", "Cursor: extensions"},
    {AutorunBase::kHome, ".cursor-server", "Cursor's remote server"},
    {AutorunBase::kConfig, "Code/User",
     "VS Code: settings, tasks (terminal profiles, tasks run on open)"},
    {AutorunBase::kConfig, "Code - OSS/User", "Code - OSS: the same"},
    {AutorunBase::kConfig, "VSCodium/User", "VSCodium: the same"},
    {AutorunBase::kHome, ".vscodium-server", "VSCodium's remote server and its extensions"},
    {AutorunBase::kConfig, "Cursor/User", "Cursor: settings, tasks (terminal profiles)"},
    {AutorunBase::kHome, ".vscode-insiders", "VS Code Insiders: extensions, argv.json"},
    {AutorunBase::kHome, ".vscode-server-insiders", "VS Code Insiders' remote server"},
    {AutorunBase::kConfig, "Code - Insiders/User", "VS Code Insiders: settings, tasks"},
    {AutorunBase::kData, "code-server", "code-server: settings and extensions"},
    {AutorunBase::kHome, ".windsurf", "Windsurf: extensions"},
    {AutorunBase::kHome, ".windsurf-server", "Windsurf's remote server"},
    {AutorunBase::kConfig, "Windsurf/User", "Windsurf: settings, tasks (terminal profiles)"},
    {AutorunBase::kHome, ".codeium", "Windsurf: mcp_config.json (the MCP servers it starts)"},
    {AutorunBase::kHome, ".positron", "Positron: extensions"},
    {AutorunBase::kConfig, "Positron/User", "Positron: settings, tasks (terminal profiles)"},
    {AutorunBase::kHome, ".kiro", "Kiro: extensions, settings/mcp.json, hooks"},
    {AutorunBase::kConfig, "Kiro/User", "Kiro: settings, tasks (terminal profiles)"},
    {AutorunBase::kHome, ".trae", "Trae: extensions"},
    {AutorunBase::kHome, ".trae-server", "Trae's remote server"},
    {AutorunBase::kConfig, "Trae/User", "Trae: settings, tasks (terminal profiles)"},
    {AutorunBase::kHome, ".trae-cn", "Trae CN: extensions"},
    {AutorunBase::kConfig, "Trae CN/User", "Trae CN: settings, tasks"},
    {AutorunBase::kConfig, "sublime-text",
     "Sublime Text: Packages' Python plugins, loaded at start"},
    {AutorunBase::kConfig, "sublime-text-3", "Sublime Text 3: the same"},
    {AutorunBase::kConfig, "sublime-merge", "Sublime Merge: Packages' plugins"},
    {AutorunBase::kConfig, "zed", "Zed: settings (terminal shell, language servers), tasks"},
    {AutorunBase::kData, "zed", "Zed: extensions and the language servers it starts"},
    {AutorunBase::kConfig, "yazi", "yazi: openers run commands, init.lua and plugins"},
    {AutorunBase::kConfig, "JetBrains", "JetBrains IDEs: options, plugins"},
    {AutorunBase::kData, "JetBrains", "JetBrains IDEs: plugins"},
    {AutorunBase::kConfig, "libreoffice", "LibreOffice: macros bound to events"},
    {AutorunBase::kConfig, "mpv", "mpv: scripts"},
    {AutorunBase::kConfig, "ranger", "ranger: commands.py, rc.conf"},
    {AutorunBase::kConfig, "lf", "lf: lfrc (its commands run shell), the previewer it names"},
    {AutorunBase::kHome, ".lesskey", "less: #env sets LESSOPEN for every less"},
    {AutorunBase::kHome, ".less", "less: compiled lesskey"},
    {AutorunBase::kConfig, "lesskey", "less: the same"},
    {AutorunBase::kHome, ".mailcap", "mailcap: the commands that open a type"},
    {AutorunBase::kHome, ".muttrc", "mutt: source cmd|"},
    {AutorunBase::kConfig, "mutt", "mutt"},
    {AutorunBase::kHome, ".ipython", "IPython: profile startup files, config"},
    {AutorunBase::kHome, ".jupyter", "Jupyter: its Python config files"},
    {AutorunBase::kData, "jupyter", "Jupyter: kernels and extensions"},
    {AutorunBase::kHome, ".pythonrc", "a usual PYTHONSTARTUP"},
    {AutorunBase::kHome, ".pythonrc.py", "a usual PYTHONSTARTUP"},
    {AutorunBase::kHome, ".pythonstartup", "a usual PYTHONSTARTUP"},
    {AutorunBase::kHome, ".irbrc", "irb"},
    {AutorunBase::kConfig, "irb", "irb"},
    {AutorunBase::kHome, ".pryrc", "pry"},
    {AutorunBase::kHome, ".Rprofile", "R, at every start"},
    {AutorunBase::kHome, ".Renviron", "R: its environment"},
    {AutorunBase::kHome, "R", "R's user library"},
    {AutorunBase::kHome, ".julia", "Julia: config/startup.jl, packages"},
    {AutorunBase::kHome, ".ghci", "ghci"},
    {AutorunBase::kHome, ".ghc", "ghci.conf"},
    {AutorunBase::kHome, ".ocamlinit", "the OCaml toplevel and utop"},
    {AutorunBase::kHome, ".perldb", "perl -d"},
    {AutorunBase::kHome, ".pdbrc", "pdb and breakpoint(): its lines run as debugger commands"},
    {AutorunBase::kHome, ".psqlrc", "psql: \\! runs a shell command"},
    {AutorunBase::kHome, ".sqliterc", "sqlite3: .shell and .system run commands"},
    {AutorunBase::kHome, ".cpan", "cpan: CPAN/MyConfig.pm"},
    {AutorunBase::kHome, ".gdbinit", "gdb"},
    {AutorunBase::kHome, ".gdbearlyinit", "gdb"},
    {AutorunBase::kConfig, "gdb", "gdb: gdbinit, gdbearlyinit"},
    {AutorunBase::kHome, ".lldbinit", "lldb"},
    // AI agents' own settings: hooks they run, MCP servers they spawn, what they may run
    // unsandboxed, their own sandbox mode (their tokens are credentials: sandbox_home.h).
    {AutorunBase::kHome, ".claude", "Claude Code: settings (hooks, permissions), commands, agents"},
    {AutorunBase::kHome, ".claude.json", "Claude Code: the MCP servers it starts"},
    {AutorunBase::kHome, ".codex", "Codex: config.toml (MCP servers, notify, sandbox mode)"},
    {AutorunBase::kHome, ".gemini", "Gemini CLI: settings (MCP servers, tools)"},
    {AutorunBase::kHome, ".aider.conf.yml", "aider: its commands and settings"},
    {AutorunBase::kConfig, "opencode", "opencode: MCP servers, commands"},
    {AutorunBase::kHome, ".continue", "Continue: config (MCP servers, commands)"},
    {AutorunBase::kHome, ".hgrc", "Mercurial: [hooks] and [extensions] run by every hg"},
    {AutorunBase::kConfig, "hg", "Mercurial: the same"},
    {AutorunBase::kHome, ".pylintrc", "pylint: init-hook runs Python (editors lint on save)"},
    {AutorunBase::kConfig, "pylintrc", "pylint: the same"},
    {AutorunBase::kConfig, "mypy", "mypy: plugins it imports"},
    {AutorunBase::kHome, ".mypy.ini", "mypy: the same"},
    // Tools whose configuration runs code or chooses where code comes from.
    // Files, not the directory: git's own protection (policy/git_metadata.h) holds a missing
    // user config by a placeholder of its own, in that directory.
    {AutorunBase::kConfig, "git/config", "git's user config"},
    {AutorunBase::kConfig, "git/attributes", "git: the filter and diff drivers files get"},
    {AutorunBase::kConfig, "git/gitk", "gitk's Tcl"},
    {AutorunBase::kHome, ".gitk", "gitk's Tcl"},
    {AutorunBase::kConfig, "lazygit", "lazygit: config.yml's custom commands, editor and pager"},
    {AutorunBase::kConfig, "jj", "Jujutsu: config.toml, conf.d (ui.pager, ui.editor, aliases)"},
    {AutorunBase::kHome, ".jjconfig.toml", "Jujutsu (the older place)"},
    {AutorunBase::kHome, ".tigrc", "tig: its bindings run shell commands"},
    {AutorunBase::kConfig, "tig", "tig: config, the same"},
    {AutorunBase::kConfig, "direnv", "direnv: direnvrc, a whitelist that lets every .envrc run"},
    {AutorunBase::kData, "direnv", "direnv: which .envrc may run"},
    {AutorunBase::kConfig, "pip", "pip: the index every pip install uses"},
    {AutorunBase::kHome, ".pip", "pip (the older place)"},
    {AutorunBase::kConfig, "uv", "uv: its index"},
    {AutorunBase::kHome, ".pydistutils.cfg", "setuptools"},
    {AutorunBase::kHome, ".condarc", "conda: its channels"},
    {AutorunBase::kConfig, "pypoetry", "poetry: its repositories"},
    {AutorunBase::kConfig, "pnpm", "pnpm: its rc"},
    {AutorunBase::kHome, ".gemrc", "gem"},
    {AutorunBase::kHome, ".npm-init.js", "npm init runs it"},
    {AutorunBase::kHome, ".gradle/init.d", "Gradle: init scripts run by every build"},
    {AutorunBase::kHome, ".gradle/init.gradle", "Gradle: the same"},
    {AutorunBase::kHome, ".gradle/init.gradle.kts", "Gradle: the same"},
    {AutorunBase::kHome, ".mavenrc", "mvn sources it"},
    {AutorunBase::kHome, ".sbt", "sbt: global plugins"},
    {AutorunBase::kHome, ".nuget/NuGet", "NuGet: its sources"},
    {AutorunBase::kConfig, "containers", "podman: containers.conf (runtime, hooks)"},
    {AutorunBase::kConfig, "helm", "helm"},
    {AutorunBase::kData, "helm", "helm: plugins"},
    {AutorunBase::kHome, ".terraformrc", "terraform: provider overrides"},
    {AutorunBase::kHome, ".terraform.d", "terraform: plugins"},
    {AutorunBase::kHome, ".ansible.cfg", "ansible: plugin paths"},
    {AutorunBase::kHome, ".ansible", "ansible: collections and plugins"},
    {AutorunBase::kHome, ".vagrant.d", "vagrant: its Vagrantfile and plugins"},
    {AutorunBase::kHome, ".curlrc", "curl: options of every download"},
    {AutorunBase::kConfig, ".curlrc", "curl"},
    {AutorunBase::kHome, ".wgetrc", "wget"},
    {AutorunBase::kHome, ".forward", "mail delivery: |command"},
    {AutorunBase::kHome, ".procmailrc", "procmail, at mail delivery"},
    {AutorunBase::kHome, ".mailfilter", "maildrop, at mail delivery"},
    {AutorunBase::kHome, ".qmail", "qmail delivery"},
    {AutorunBase::kHome, ".rhosts", "rsh and host-based ssh: who may log in"},
    {AutorunBase::kHome, ".shosts", "host-based ssh: who may log in"},
    {AutorunBase::kHome, ".k5login", "Kerberos: who may log in"},
    {AutorunBase::kHome, ".k5users", "Kerberos: who may run what"},
    // Anvil.
    {AutorunBase::kData, "anvil", "Anvil's installed plugins (the default --plugin-path)"},
};

// The environment the places depend on. Relative values (and values with a "." or ".."
// component) are ignored, as the XDG Base Directory spec says.
// "/a//b/" -> "/a/b"; nullopt for a relative path or one with a "." or ".." component (the XDG
// Base Directory spec ignores such values, and so does every home place taken from one).
std::optional<std::string> CleanAbsolute(const std::string& p);

struct AutorunEnv {
  std::string home;         // $HOME
  std::string passwd_home;  // the user database's home (fs/file_io.h PasswdHome)
  std::string xdg_config_home, xdg_data_home, zdotdir;
  std::string xdg_cache_home;  // policy/host_caches.h
};

// Every place of the table for `env`, and every credential location of kHomeCredentials
// (policy/sandbox_home.h) in each home, as absolute lexical paths, each once: the one list of
// what a command may neither make nor change in a home a writable root holds. Not only this
// environment's home but the user database's too, since a login there reads its own.
std::vector<std::string> HostAutorunPaths(const AutorunEnv& env);

// The credential locations of kHomeCredentials in each home of `env`, as absolute lexical
// paths, each once: the part of HostAutorunPaths a refused write calls a credential
// (policy/refusals.h), which no flag opens.
std::vector<std::string> HomeCredentialPaths(const AutorunEnv& env);

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

// A cache place (policy/host_caches.h) the run shows as the sandbox home's instead.
struct AutorunShadow {
  std::string place;  // as listed (lexical)
  std::string path;   // where it resolves, canonical: an existing directory
  bool operator==(const AutorunShadow&) const = default;
};

// A file to keep read-only that has other hard links: each other name a writable root holds
// must be kept read-only too (linux/autorun_shield.h looks for them).
struct AutorunHardLink {
  std::string path;  // canonical
  std::uint64_t links = 0;
  bool operator==(const AutorunHardLink&) const = default;
};

struct AutorunShieldPlan {
  std::vector<AutorunMake> make;          // to make first, then plan again
  std::vector<std::string> read_only;     // what exists, canonical: bound read-only
  std::vector<std::string> pinned_dirs;   // directories on the way: bound onto themselves
  std::vector<std::string> pinned_links;  // symbolic links on the way: bound onto themselves
  // Every placeholder link met, pinned or not (one an earlier run left where no root of this
  // run holds it): removed after the run unless another run still holds it.
  std::vector<std::string> placeholders;
  // Every existing directory the places lead through or to, held by a root of this run or not:
  // one an earlier run made and marked (a killed run left it: a directory on the way, a cache
  // place) is taken over and removed after the run while empty (linux/autorun_shield.h).
  std::vector<std::string> met_dirs;
  // The cache places a writable root holds, each an existing directory: the view binds the
  // sandbox home's own directory over it (what is beneath it is not the run's business).
  std::vector<AutorunShadow> shadowed;
  // Of read_only, the files with more than one name.
  std::vector<AutorunHardLink> hard_linked;
};

// The plan for one run: `places` (HostAutorunPaths), the run's writable roots (canonical),
// `covered` (what the view mounts afresh, such as its private /tmp: a root does not show what
// lies beneath it), `unmakeable` (names an earlier round could not make: the caller's
// credentials could not, so the command's cannot either). Resolves each place as the kernel
// would, one component at a time, each name looked at once per plan. A file held by a writable
// root that has other hard links is read-only and listed in hard_linked: a second name of it
// could be written, so the caller keeps those read-only too or refuses the run.
// `shadow_places` (policy/host_caches.h HostCachePlaces): planned first, like the others, but an
// existing directory is shadowed instead of kept read-only, a missing one is made as a directory
// (to be shadowed in the next round), and what lies beneath a shadowed one counts as covered.
Result<AutorunShieldPlan> PlanAutorunShield(const std::vector<std::string>& places,
                                            const std::vector<std::string>& writable_roots,
                                            const std::vector<std::string>& covered,
                                            const AutorunFs& fs,
                                            const std::vector<std::string>& unmakeable = {},
                                            const std::vector<std::string>& shadow_places = {});

}  // namespace anvil
