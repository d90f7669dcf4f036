// The home directory of a sandboxed command (`anvil sandbox`): a pure plan.
//
// $HOME exists at its usual path and is writable, but it is not the user's real home: by
// default it is a persistent per-workspace directory under the user's state directory
// ($XDG_STATE_HOME/anvil/homes/<name>-<hash of the workspace path>/home; the repository's top
// for a workspace below it, SandboxHomeKey), so caches (pip, npm, go, cargo) survive between
// runs of one workspace while one repository's runs cannot poison another workspace's. Onto it the
// view binds, read-only, an ALLOWLIST of the real home: the toolchains of kHomeToolchains (plus the
// user's own additions, config.toml's readable_roots); the sandbox's ~/.gitconfig is a sanitized
// copy of the user's, written again at every start where it differs. Anything not listed stays
// absent; there is no "home minus a denylist".
//
// Credentials: the locations of kHomeCredentials are never shown. With the allowlist they are
// absent anyway; where some bind would still show one (a readable root the user added that
// contains ~/.config, a workspace that is the home directory, --read-access full with
// --home none) an empty read-only file or directory covers it, and a readable root that lies
// inside one is refused.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "policy/git_config.h"
#include "policy/home_view.h"
#include "policy/sandbox_policy.h"

namespace anvil {

enum class HomeMode {
  kPersistent,  // the per-workspace sandbox home (default)
  kTmp,         // an empty tmpfs, discarded at exit
  kNone,        // no home at all (the view before homes existed)
};
Result<HomeMode> ParseHomeMode(std::string_view text);
std::string_view ToString(HomeMode mode);

// A toolchain (or non-secret configuration file) of the real home that the view binds
// read-only at the same path. `path` is relative to the home; a component may hold one '*'
// (matched against the directory's entries, never '.'-led ones unless the pattern is).
struct HomeToolchain {
  std::string_view path;
  std::string_view what;
};
inline constexpr HomeToolchain kHomeToolchains[] = {
    {".local/bin", "pip --user, pipx, uv tool and other per-user commands"},
    {".local/lib/python*/site-packages", "pip --user packages"},
    {".local/share/uv/python", "uv-managed Python interpreters"},
    {".local/share/uv/tools", "uv tool environments"},
    {".local/pipx/venvs", "pipx environments (newer pipx)"},
    {".local/share/pipx/venvs", "pipx environments"},
    {".pyenv", "pyenv (shims, versions, global version file)"},
    {".nvm", "nvm (node versions, aliases)"},
    {".rustup", "rustup toolchains and settings"},
    {".cargo/bin", "cargo-installed commands and the rustup proxies"},
    {"go/bin", "go install'ed commands"},
    {".sdkman", "SDKMAN! candidates (Java, Gradle, Maven, Kotlin, ...)"},
    {".rbenv", "rbenv"},
    {".asdf", "asdf (shims, installs)"},
    {".tool-versions", "asdf's global versions"},
    {".local/share/mise", "mise (installs, shims)"},
    {".volta", "Volta"},
    {".bun/bin", "Bun"},
    {".deno/bin", "Deno"},
    {".n", "n (with N_PREFIX=~/.n)"},
    {".local/share/fnm", "fnm node versions"},
    {".goenv", "goenv"},
    {".jenv", "jenv"},
    {".ghcup/bin", "GHCup (Haskell)"},
    {".elan", "elan (Lean)"},
    {"bin", "~/bin: Debian's and Ubuntu's .profile put it on PATH"},
    {"miniconda3", "conda (Miniconda's default prefix)"},
    {"anaconda3", "conda (Anaconda's default prefix)"},
    {"miniforge3", "conda (Miniforge's default prefix)"},
    {".virtualenvs", "virtualenvwrapper's environments"},
    {".local/share/virtualenvs", "pipenv's environments"},
    {".local/share/pnpm", "pnpm: PNPM_HOME, its global commands"},
    {".npm-global", "npm's usual user prefix (npm config set prefix ~/.npm-global)"},
    {".yarn/bin", "yarn global commands"},
    {".dotnet", ".NET SDK (dotnet-install.sh)"},
    {".juliaup", "juliaup"},
    {".nix-profile", "Nix user profile"},
    {"sdk", "go's golang.org/dl versions (~/sdk/go1.x)"},
    {".config/git/ignore", "git's global excludes file"},
    {".config/git/attributes", "git's global attributes file"},
    {".editorconfig", "EditorConfig defaults"},
};

// Where credentials live under a home directory, relative to it. Never shown (see above), and
// when a writable root holds the home, neither made nor changed: policy/host_autorun.h keeps
// them with the places the host runs (a new ~/.kube/config or ~/.ssh/rc runs code too).
inline constexpr std::string_view kHomeCredentials[] = {
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".gitconfig",  // may hold url.*.insteadOf tokens, http.extraHeader, credential helpers
    ".config/git/config",
    ".config/gh",
    ".config/hub",
    ".config/glab-cli",
    ".pypirc",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".composer/auth.json",
    ".config/composer/auth.json",
    ".config/containers/auth.json",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".s3cfg",
    ".boto",
    ".config/rclone",
    ".config/doctl",
    ".oci",
    ".databrickscfg",
    ".kaggle",
    ".config/op",
    ".password-store",
    ".local/share/keyrings",
    ".local/share/kwalletd",
    ".pki",
    ".mozilla",
    ".thunderbird",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".Xauthority",  // the X server's cookie: any client holding it drives the user's display
    // AI agents' and other tools' tokens.
    ".claude/.credentials.json",
    ".codex/auth.json",
    ".config/github-copilot",
    ".config/configstore",  // firebase-tools and other Node CLIs keep refresh tokens there
    ".pulumi/credentials.json",
    ".pgpass",
    ".my.cnf",
    ".mylogin.cnf",
    ".config/sops/age",
    ".subversion/auth",
};
// Histories: never shown either, but no program runs what they hold, and a shell of the host
// writes its own there while a run lasts. So, unlike kHomeCredentials, a missing one is not
// held by a placeholder (policy/host_autorun.h).
inline constexpr std::string_view kHomeHistories[] = {
    ".bash_history",   ".zsh_history",       ".zhistory",
    ".histfile",       ".sh_history",        ".local/share/fish/fish_history",
    ".python_history", ".node_repl_history", ".psql_history",
    ".mysql_history",  ".sqlite_history",    ".rediscli_history",
    ".lesshst",        ".viminfo",
};

// What the plan needs of the host; injected so the decision stays a table-testable function.
struct HomeHost {
  enum class Kind { kMissing, kDirectory, kFile, kSymlink, kOther };
  std::function<Kind(const std::string&)> lstat_kind;
  // Canonical path (symlinks resolved) if it exists.
  std::function<std::optional<std::string>(const std::string&)> resolve;
  // Names in a directory (no "." or ".."); empty when it cannot be listed; at most
  // kMaxListedNames (a listing that long may be incomplete).
  std::function<std::vector<std::string>(const std::string&)> list_dir;
  // The text of a symbolic link (readlink(2)); nullopt when `path` is none.
  std::function<std::optional<std::string>(const std::string&)> readlink;
  // The object at `path` opened without following a symbolic link anywhere on the way
  // (openat2 RESOLVE_NO_SYMLINKS): its kind and identity; nullopt when it cannot be. Unset: no
  // identity is recorded (the bind is then not checked).
  struct Node {
    Kind kind = Kind::kMissing;
    uint64_t dev = 0;
    uint64_t ino = 0;
  };
  std::function<std::optional<Node>(const std::string&)> identify;
};
inline constexpr size_t kMaxListedNames = 4096;

// ---- the links on the way to what the home shows ----
// An entry of the real home the view shows (a toolchain of kHomeToolchains, a file the git
// configuration names) is found by following symbolic links, and a link below the home can have
// been written by an earlier run whose workspace or writable root held it (`~/dotfiles`,
// `~/.config`): pointed at a document, it would show that document to every later run. So the
// walk records every link it follows, and HomeWalkAllowed judges them and where the walk ends;
// the bind is then checked to be the very object judged (MappedBind::expect_ino, opened without
// following a link).
struct PathWalk {
  // Every symbolic link followed, in order, at its canonical place (its directory resolved).
  std::vector<std::string> links;
  // The canonical path it ends at; nullopt: missing, dangling, a loop, or more than
  // kMaxWalkLinks links.
  std::optional<std::string> end;
};
inline constexpr size_t kMaxWalkLinks = 40;
// Resolves `path` (absolute) as the kernel does, one component at a time (host.lstat_kind,
// host.readlink). Pure.
PathWalk WalkPath(const std::string& path, const HomeHost& host);

// Whether `link` (a PathWalk link) is the home's own: it lies directly in the home
// (`home_canonical`), where only a run whose writable root is the home itself could have made it
// (and that run sees all of the home but its credentials and histories anyway), or on the way to
// the home itself (`home`, lexical: /home -> /var/home).
bool HomeLinkTrusted(const std::string& link, const std::string& home,
                     const std::string& home_canonical);

// Whether `path` (canonical) lies at or beneath a place of kHomeToolchains under
// `home_canonical`, matched component by component: one the view shows by its own name.
bool InHomeToolchainPlace(const std::string& path, const std::string& home_canonical);

// Whether what `walk` ends at may be shown: it lies in a system root (InSystemRoot), or at a
// place shown by its own name (InHomeToolchainPlace, or at or beneath one of `own`: canonical
// paths the user or the configuration named), or every link followed is the home's own
// (HomeLinkTrusted) and it lies in the home. Never when the walk ends nowhere. A link deeper in
// the home (stow's `~/.config/git/ignore -> ~/dotfiles/...`), or one that leaves the home and the
// system, leads only to what is shown by its own name anyway. The credential locations and
// histories are the caller's to refuse (PlanHomeView). Pure.
bool HomeWalkAllowed(const PathWalk& walk, const std::string& home,
                     const std::string& home_canonical, const std::vector<std::string>& own);

struct HomePlanInput {
  HomeMode mode = HomeMode::kPersistent;
  std::string home;  // the caller's $HOME: absolute (the plan normalizes it)
  // kPersistent: the prepared per-workspace directory (canonical) and its identity; empty when
  // it could not be prepared, and then the home is a tmpfs instead.
  std::string sandbox_home;
  dev_t sandbox_home_dev = 0;
  ino_t sandbox_home_ino = 0;
  // kPersistent: the prepared per-workspace /tmp (canonical) and its identity; empty: the view's
  // throw-away tmpfs (--tmp private, --limit tmp, or none could be prepared).
  std::string sandbox_tmp;
  dev_t sandbox_tmp_dev = 0;
  ino_t sandbox_tmp_ino = 0;
  // The sanitized ~/.gitconfig (RenderSanitizedGitConfig) to write at ~/.gitconfig; empty:
  // none.
  std::string gitconfig;
  // Extra readable roots (config.toml, profiles, --readable-root): absolute, '~' expanded.
  // Missing ones are skipped.
  std::vector<std::string> readable_roots;
  // Readable roots nobody named that the workspace implies (EnclosingRepositoryTop): skipped,
  // never an error, where a named one would be refused (inside a credential location, or
  // covering the home).
  std::vector<std::string> implied_readable_roots;
  // The files the user's git configuration names (GitNamedFiles, policy/git_global_files.h):
  // each shown read-only at its path where GitNamedFileShown allows it, judged by the walk of
  // PlanHomeView itself. `writable_roots`: the run's (the workspace first).
  std::vector<std::string> git_named_files;
  std::vector<std::string> writable_roots;
};

// What EnclosingRepositoryTop looks at: a path as lstat(2) sees it.
struct RepoTopFacts {
  enum class Kind { kMissing, kDirectory, kFile, kOther };
  Kind kind = Kind::kMissing;
  uint64_t dev = 0;
  uint32_t uid = 0;
  uint32_t mode = 0;
};
using RepoTopLstat = std::function<RepoTopFacts(const std::string&)>;

// The repository git run in `workspace` (canonical) would use when the workspace has no `.git`
// of its own: the nearest directory above it that holds a `.git` directory, looked for as git
// does (upward, not past a file system's edge). A workspace below a repository's top (a package
// of a monorepo) then sees the repository read-only: git's read commands work, and a build that
// writes above the workspace fails loudly instead of quietly building something else.
// Only a repository that is the caller's (`uid`) is shown, as git itself takes only one the
// caller owns (safe.directory): the directory and its `.git` owned by the caller, `.git` a git
// dir (it holds HEAD), the directory not writable by others (a `/var/tmp/.git` anyone can make
// shows nothing). Never `/`, nor a directory that is or holds one of `homes` (canonical: the
// caller's $HOME and the user database's home; empty: no home is known, and nothing is shown),
// so a dotfiles repository at `~` shows nothing of the home. A `.git` file in the workspace (a
// submodule's checkout, whose git dir the repository above keeps) is looked past. nullopt when
// the workspace has a `.git` directory, and when the nearest `.git` above is not such a
// directory.
std::optional<std::string> EnclosingRepositoryTop(const std::string& workspace,
                                                  const std::vector<std::string>& homes,
                                                  uint32_t uid, const RepoTopLstat& lstat);

// An activated Python environment the caller's environment names: a virtualenv ($VIRTUAL_ENV,
// holding the file pyvenv.cfg) or a conda environment ($CONDA_PREFIX, holding the directory
// conda-meta). Its interpreter is a link to the system's or a toolchain's, and finds the
// environment only when run by its own path: so the directory is shown read-only.
struct ActivatedEnvironment {
  std::string_view variable;
  std::string_view marker;
  RepoTopFacts::Kind marker_kind;
};
inline constexpr ActivatedEnvironment kActivatedEnvironments[] = {
    {"VIRTUAL_ENV", "pyvenv.cfg", RepoTopFacts::Kind::kFile},
    {"CONDA_PREFIX", "conda-meta", RepoTopFacts::Kind::kDirectory},
};

// Whether `dir` (the variable's value, canonical) is shown read-only as an implied readable root
// (PlanHomeView then skips it inside a credential location): a directory (lstat) owned by the
// caller (`uid`) or root and writable by no one else, holding the environment's marker of the
// same owners; not `/`, not already shown (inside a runtime root, the workspace or another
// writable root), and holding neither a writable root (the first is the workspace) nor one of
// `homes` (canonical; empty: no home is known, and nothing is shown). Pure.
bool ActivatedEnvironmentShown(const std::string& dir, const ActivatedEnvironment& environment,
                               uint32_t uid, const std::vector<std::string>& homes,
                               const std::vector<std::string>& writable_roots,
                               const RepoTopLstat& lstat);

// The plan. Errors ("invalid"): a readable root inside a credential location, or one that is
// the home directory itself while the sandbox has a home of its own.
Result<HomeView> PlanHomeView(const HomePlanInput& input, const HomeHost& host);

// pip --user writes ~/.local/lib and ~/.local/bin together. While the view shows the host's
// ~/.local/bin (read-only, or a writable root the user named) and ~/.local/lib is the sandbox
// home's, the sandbox home's ~/.local/lib is shown as an empty read-only directory of the view's
// own (FileView::sealed_home_dirs) with the host's user sites bound beneath it, so pip fails at
// its first write and installs nothing, instead of a package in the sandbox home whose command
// it could not write (or, with --writable-root ~/.local/bin, a command on the host whose package
// is not there). Returns that directory, or nothing: no sandbox home, the host's ~/.local/bin not
// shown, or another mount shows ~/.local/lib or a directory between it and the home, or a
// writable root or the workspace lies in it.
std::optional<std::string> UserSiteSealed(const FileView& view);

// Adds the home's binds and the credential masks to `view` (ComputeFileView calls it once the
// rest of the view is known). A writable root that is the home or contains it shows the real
// home instead (no sandbox home then; its credentials are still covered).
Status ApplyHomeView(const HomeView& home, const HostFs& host, FileView& view);

// Adds to view.masked_files each socket, and to view.masked_dirs each locked directory
// (canonical host paths), that a mapped bind shows.
void MaskSocketsInMappedBinds(FileView& view, const std::vector<std::string>& sockets,
                              const std::vector<std::string>& locked_dirs = {});

// The host path the view shows at `view_path`, by its binds (nullopt: a place of the view's
// own making: its root, /dev, /proc, /tmp, a tmpfs home, a mask).
std::optional<std::string> ViewSource(const FileView& view, const std::string& view_path);

// Directory name of the sandbox home of `workspace` (canonical): a readable prefix of its last
// component and 16 hex digits of its SHA-256, e.g. "myproj-3f2a9c0d4b1e7a65".
std::string SandboxHomeDirName(const std::string& workspace);

// What keys the sandbox home and the kept /tmp of a run in `workspace` (canonical): the top of
// the repository it lies in (`repository_top`: EnclosingRepositoryTop's answer, the caller's own
// repository, which the run sees read-only), so that every directory of one repository shares
// them — a run in a subdirectory is of the same trust domain, since a run at the top could write
// that subdirectory anyway — or else the workspace itself (a repository's top keys its own).
// Another repository, or a directory in none, keeps its own. Pure.
std::string SandboxHomeKey(const std::string& workspace,
                           const std::optional<std::string>& repository_top);

// "~" and "~/x" against `home`; other paths unchanged.
std::string ExpandHome(const std::string& path, const std::string& home);

// Lexically normal absolute path (no ".", "..", empty components or trailing '/'), or nullopt.
std::optional<std::string> NormalizeAbsolute(std::string_view path);

// ~/.profile and ~/.bash_profile of the sandbox home: `PATH` (the command's, as the sandbox
// passes it) set again for login shells (`bash -lc`, `sh -l`), whose /etc/profile may reset it;
// nothing of the user's own startup files. Empty for an empty `path`.
std::string RenderHomeProfile(std::string_view path);

// ---- the shells' start-up files: Anvil's in the sandbox home ----
// A shell runs the code of its start-up files on its own, before (and after) what it was asked
// to run: a file an earlier command wrote into the sandbox home would run, unjudged, inside a
// later command the rules judged harmless (`zsh -c ls` runs ~/.zshenv). So every start-up file
// that a shell of RecognisedShells (command_segments.h) reads from $HOME, non-interactive (-c),
// login (-l) or interactive, is written by Anvil at every start: the PATH for login shells (as
// RenderHomeProfile), nothing otherwise. zsh reads $ZDOTDIR, which the sandbox's environment
// sets to $HOME; BASH_ENV and ENV are dropped from it (cli/sandbox_validate.cc).
enum class StartupContent {
  kEmpty,    // nothing (the file exists, so nothing of an earlier command's stays)
  kShPath,   // RenderHomeProfile: `PATH='…'; export PATH`
  kCshPath,  // `setenv PATH '…'` (csh and tcsh), when the PATH needs no quoting csh lacks
  kInputrc,  // `$include /etc/inputrc`: readline reads /etc/inputrc only without ~/.inputrc
};
struct HomeStartupFile {
  std::string_view path;    // relative to the home
  std::string_view shells;  // the shells (RecognisedShells names) that read it, space-separated
  std::string_view when;    // for people
  StartupContent content = StartupContent::kEmpty;
};
inline constexpr HomeStartupFile kHomeStartupFiles[] = {
    {".profile", "sh dash bash rbash ksh ksh93 rksh rksh93 mksh rmksh lksh pdksh ash posh yash",
     "login shells (bash when neither .bash_profile nor .bash_login exists)",
     StartupContent::kShPath},
    {".bash_profile", "bash rbash", "bash login shells", StartupContent::kShPath},
    {".bash_login", "bash rbash", "bash login shells without .bash_profile",
     StartupContent::kShPath},
    {".bashrc", "bash rbash",
     "interactive bash; also `bash -c` with a socket as standard input or under ssh "
     "(Debian's SSH_SOURCE_BASHRC)"},
    {".bash_logout", "bash rbash", "bash login shells, at exit"},
    {".zshenv", "zsh rzsh", "every zsh, -c included"},
    {".zprofile", "zsh rzsh", "zsh login shells", StartupContent::kShPath},
    {".zshrc", "zsh rzsh", "interactive zsh"},
    {".zlogin", "zsh rzsh", "zsh login shells, after .zshrc"},
    {".zlogout", "zsh rzsh", "zsh login shells, at exit"},
    // zsh runs FILE.zwc (compiled) instead of FILE when it is newer: an empty one is not
    // wordcode, and zsh reads FILE.
    {".zshenv.zwc", "zsh rzsh", "compiled .zshenv"},
    {".zprofile.zwc", "zsh rzsh", "compiled .zprofile"},
    {".zshrc.zwc", "zsh rzsh", "compiled .zshrc"},
    {".zlogin.zwc", "zsh rzsh", "compiled .zlogin"},
    {".zlogout.zwc", "zsh rzsh", "compiled .zlogout"},
    {".cshrc", "csh bsd-csh tcsh", "every csh, -c included (tcsh without .tcshrc)"},
    {".tcshrc", "tcsh", "every tcsh, -c included"},
    {".login", "csh bsd-csh tcsh", "csh login shells, after .cshrc", StartupContent::kCshPath},
    {".logout", "csh bsd-csh tcsh", "csh login shells, at exit"},
    {".kshrc", "ksh ksh93 rksh rksh93 pdksh", "interactive ksh93 ($ENV's default)"},
    {".mkshrc", "mksh rmksh lksh", "interactive mksh and lksh ($ENV's default)"},
    {".yash_profile", "yash", "yash login shells", StartupContent::kShPath},
    {".yashrc", "yash", "interactive yash"},
    // Not a shell's own, but read by the line editor of interactive bash (and of every readline
    // program): a key bound to a macro types a command into the next prompt.
    {".inputrc", "bash rbash", "readline: key bindings and macros", StartupContent::kInputrc},
    {".xonshrc", "xonsh", "every xonsh, -c included (unless --no-rc)"},
};
// Directories a shell loads code from by name, where owning one file would not be enough: fish
// runs ~/.config/fish/config.fish, every conf.d/*.fish, autoloads functions/NAME.fish when a
// command NAME runs, keeps universal variables (fish_variables) there, and loads
// ~/.local/share/fish/vendor_conf.d and vendor_functions.d; PowerShell, nushell, xonsh and
// elvish keep their profiles, rc files and autoloaded modules in directories too. Each is an
// empty tmpfs of its own in every run: what a command writes there lasts for that run only.
struct HomeStartupDir {
  std::string_view path;
  std::string_view shells;
  std::string_view when;
};
inline constexpr HomeStartupDir kHomeStartupDirs[] = {
    {".config/fish", "fish", "config.fish, conf.d, functions (autoloaded), universal variables"},
    {".local/share/fish", "fish", "vendor_conf.d, vendor_functions.d, generated completions"},
    // Shells the rules do not read (policy/command_segments.h), run all the same.
    {".config/powershell", "pwsh", "profile.ps1 and Microsoft.PowerShell_profile.ps1, -c included"},
    {".local/share/powershell", "pwsh", "Modules, imported when a command they export is run"},
    {".config/nushell", "nu", "env.nu, config.nu, login.nu, autoload/"},
    {".local/share/nushell", "nu", "vendor/autoload"},
    {".config/xonsh", "xonsh", "rc.xsh and rc.d/*.xsh, -c included"},
    {".config/elvish", "elvish", "rc.elv"},
};
// The start-up files to write into the sandbox home, each with its content, for a command whose
// PATH is `path` ("" when it has none: the login files are empty then too).
std::vector<HomeFile> RenderHomeStartupFiles(std::string_view path);

// ---- ~/.gitconfig, sanitized ----
// Entries come from ParseGitConfig (policy/git_config.h, git's own syntax). At most
// kMaxGitConfigEntries of them, over every file read, make the copy.
inline constexpr size_t kMaxGitConfigEntries = 4096;
// Whether an entry may appear in the sandbox's copy: identity (user.name, user.email), the
// excludes and attributes files, init.defaultBranch, aliases, colours, safe.directory and the
// behaviour of everyday commands (diff, merge, pull, push, fetch, rebase, status, log, ...).
// Never: credential.*, http.*, url.*, include*, core.sshCommand, hooks, filters, signing, and no
// value that carries a URL with a user name or password.
bool GitConfigEntryAllowed(const GitConfigEntry& entry);
// The allowed entries of `entries`, rendered as a git config file.
std::string RenderSanitizedGitConfig(const std::vector<GitConfigEntry>& entries);

}  // namespace anvil
