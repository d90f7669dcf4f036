// A lived-in home for the tests of the command's home (policy/sandbox_home.h): toolchain shims
// the way pyenv, nvm, cargo and pip --user lay them out, a git identity next to a token in
// ~/.gitconfig, and a secret in every credential location of kHomeCredentials. Made under
// /var/tmp (not /tmp, which the sandbox replaces anyway) and given to the caller.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "policy/sandbox_home.h"
#include "sandbox_harness.h"

namespace anvil::testing {

// kHomeCredentials entries that are directories where people have them.
inline const std::set<std::string>& CredentialDirectories() {
  static const std::set<std::string> kDirs = {".ssh",
                                              ".gnupg",
                                              ".aws",
                                              ".azure",
                                              ".config/gcloud",
                                              ".kube",
                                              ".docker",
                                              ".config/gh",
                                              ".config/hub",
                                              ".config/glab-cli",
                                              ".config/rclone",
                                              ".config/doctl",
                                              ".oci",
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
                                              ".config/microsoft-edge"};
  return kDirs;
}

// WriteFile with the parent directories made first.
inline void Put(const std::string& path, const std::string& data, int mode = 0644) {
  std::filesystem::create_directories(path.substr(0, path.rfind('/')));
  WriteFile(path, data, mode);
}

class LivedInHome {
 public:
  LivedInHome() : dir_("anvil-home", "/var/tmp") {
    const std::string h = dir_.path();
    ::chmod(h.c_str(), 0755);
    // pip --user and friends.
    Put(h + "/.local/bin/mytool", "#!/bin/sh\necho \"mytool-ran $*\"\n", 0755);
    // pyenv: a shim that reads the global version file and runs that version's interpreter.
    Put(h + "/.pyenv/version", "3.99.0\n");
    std::filesystem::create_directories(h + "/.pyenv/versions/3.99.0/bin");
    std::filesystem::create_symlink(kPython, h + "/.pyenv/versions/3.99.0/bin/python3");
    Put(h + "/.pyenv/shims/python3",
        "#!/bin/sh\nexec \"$HOME/.pyenv/versions/$(cat \"$HOME/.pyenv/version\")/bin/"
        "python3\" \"$@\"\n",
        0755);
    // nvm, cargo, go install: a tool each.
    Put(h + "/.nvm/versions/node/v99.0.0/bin/nodeish", "#!/bin/sh\necho nodeish-ran\n", 0755);
    Put(h + "/.cargo/bin/cargoish", "#!/bin/sh\necho cargoish-ran\n", 0755);
    Put(h + "/go/bin/goish", "#!/bin/sh\necho goish-ran\n", 0755);
    // git: identity and ignores to keep, a token to drop.
    token_gitconfig_ = UniqueToken("GITCONFIG-TOKEN");
    Put(h + "/.gitconfig",
        "[user]\n\tname = Lived In\n\temail = lived@in.example\n[url \"https://" +
            token_gitconfig_ +
            "@github.com/\"]\n\tinsteadOf = https://github.com/\n"
            "[http]\n\textraHeader = Authorization: Bearer " +
            token_gitconfig_ + "\n");
    Put(h + "/.config/git/ignore", "*.swp\n");
    // A secret in every credential location.
    std::vector<std::string_view> never_shown(std::begin(kHomeCredentials),
                                              std::end(kHomeCredentials));
    never_shown.insert(never_shown.end(), std::begin(kHomeHistories), std::end(kHomeHistories));
    for (auto rel : never_shown) {
      std::string r(rel);
      if (r == ".gitconfig") continue;  // above, with its token
      std::string token = UniqueToken("CRED");
      std::string path = h + "/" + r;
      if (CredentialDirectories().count(r)) {
        path += "/secret";
        if (r == ".ssh") path = h + "/.ssh/id_ed25519";
      }
      // Where git reads configuration (and Anvil's git check reads the user's), the token is
      // in git's syntax, as people have it.
      std::string content = "-----BEGIN " + token + "-----\n";
      if (r == ".config/git/config") {
        content = "[http]\n\textraHeader = Authorization: Bearer " + token + "\n";
      } else if (r == ".config/git/credentials") {
        content = "https://u:" + token + "@example.com\n";
      }
      Put(path, content, 0600);
      secrets_[r] = {path, token};
    }
    ws_ = h + "/proj";
    std::filesystem::create_directories(ws_);
    Put(ws_ + "/README", "a project\n");
  }

  void GiveTo(const CallerIdentity& caller) const { caller.Give(dir_.path()); }

  const std::string& home() const { return dir_.path(); }
  const std::string& workspace() const { return ws_; }
  // relative credential location -> (file holding the secret, the secret)
  const std::map<std::string, std::pair<std::string, std::string>>& secrets() const {
    return secrets_;
  }
  const std::string& gitconfig_token() const { return token_gitconfig_; }

  // The caller's environment with this home: its toolchains first on PATH.
  std::vector<std::string> Env(const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> env = {"PATH=" + home() + "/.pyenv/shims:" + home() +
                                        "/.local/bin:" + home() + "/.cargo/bin:" + home() +
                                        "/go/bin:/usr/local/bin:/usr/bin:/bin",
                                    "HOME=" + home(), "LANG=C.UTF-8"};
    env.insert(env.end(), extra.begin(), extra.end());
    return env;
  }

 private:
  TempDir dir_;
  std::string ws_;
  std::string token_gitconfig_;
  std::map<std::string, std::pair<std::string, std::string>> secrets_;
};

}  // namespace anvil::testing
