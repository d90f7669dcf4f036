// What the command's home directory looks like in the file view: the data that
// policy/sandbox_home.h plans (outside, from the caller's real home and the user's
// configuration) and that ComputeFileView turns into binds and masks. Plain data, no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace anvil {

// A bind whose path in the view differs from its path on the host.
struct MappedBind {
  std::string source;  // canonical host path
  std::string target;  // absolute path inside the view
  bool writable = false;
  // When non-zero: the object the view binds must still be this inode (st_dev, st_ino) when
  // init binds it, so a directory swapped for another after it was opened and checked is
  // refused rather than bound (the persistent home, whose parent directories a writable root
  // may expose).
  std::uint64_t expect_dev = 0;
  std::uint64_t expect_ino = 0;
};

// A credential location of the caller's real home (policy/sandbox_home.h, kHomeCredentials)
// that exists on the host: wherever the view would show it, an empty read-only file or
// directory covers it.
struct HostCredential {
  std::string path;  // canonical host path
  bool directory = false;
};

enum class HomeKind {
  kNone,        // the command's $HOME is whatever the rest of the view shows there
  kPersistent,  // `source` (the per-workspace sandbox home) bound read-write at `target`
  kTmpfs,       // a fresh, empty tmpfs at `target`, discarded at exit
};

struct HomeView {
  HomeKind kind = HomeKind::kNone;
  std::string target;  // the command's $HOME (absolute, lexically normal)
  MappedBind home;     // kPersistent: source -> target, writable
  // kPersistent: the workspace's own /tmp, kept beside the sandbox home (source -> /tmp,
  // writable); no source: the view's throw-away tmpfs.
  MappedBind tmp;
  // Toolchains and configuration from the real home, read-only: at the same path
  // (`read_roots`) or, where the real path is a symlink to elsewhere, mapped (`binds`).
  std::vector<std::string> read_roots;
  std::vector<MappedBind> binds;
  // The object judged at each of `read_roots` (st_dev, st_ino; binds carry theirs): init binds
  // only that one (MappedBind::expect_ino).
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> identities;
  // Entries of the table and files the git configuration names that were not shown because of
  // a link on the way (HomeWalkAllowed): each path in the home and where it leads ("" nowhere),
  // for the report (`home.not_shown`).
  std::vector<std::pair<std::string, std::string>> not_shown;
  // The sanitized ~/.gitconfig (policy/sandbox_home.h), written into the home as it is built;
  // empty: none.
  std::string gitconfig;
  // The command's PATH (the sandbox environment's), put back by the login shells' start-up
  // files written into the home as it is built (RenderHomeStartupFiles, policy/sandbox_home.h);
  // empty: none.
  std::string path;
  std::vector<HostCredential> credentials;
  // The credential (canonical) that is the user's git config: ~/.gitconfig, or
  // ~/.config/git/config when only that exists; empty: neither. When the real home is shown (a
  // workspace of $HOME), its mask shows `gitconfig` instead of nothing.
  std::string gitconfig_credential;
};

}  // namespace anvil
