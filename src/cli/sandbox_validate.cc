// The pure steps between parsing `anvil sandbox`'s and anvil-exec-runner's flags and resolving
// them (cli/sandbox_spec.h): which combinations are refused, and the command's environment.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

#include "cli/sandbox_spec.h"

namespace anvil::cli {

Status ValidateCommandSource(SandboxArgs& a) {
  SandboxPolicy& policy = a.inv.spec.policy;
  if (a.call_fd >= 0) {
    // The call names the program, argv and readable paths; the workspace starts empty.
    if (!a.command.empty() || a.exec_fd >= 0 || a.readable_flags) {
      return Fail("invalid",
                  "--call-fd takes the command, --exec-fd and the readable paths from the call");
    }
    if (policy.kind != PolicyKind::kReadOnly || policy.read_access != ReadAccess::kRestricted) {
      return Fail("invalid", "--call-fd needs --policy read-only --read-access restricted");
    }
    policy.workspace_read_subpaths.emplace();
  } else if (policy.runtime_from_call) {
    return Fail("invalid", "--runtime-from-call needs --call-fd");
  } else if (a.command.empty()) {
    return Fail("invalid", "no command given (usage: ... -- CMD [ARGS...])");
  }
  return Ok();
}

Status ValidatePolicyCombination(SandboxArgs& a) {
  SandboxPolicy& policy = a.inv.spec.policy;
  if (policy.workspace_read_subpaths) {
    if (policy.kind != PolicyKind::kReadOnly) {
      return Fail("invalid", "--readable-path/--no-workspace-read need --policy read-only");
    }
    auto& subs = *policy.workspace_read_subpaths;
    if (std::find(subs.begin(), subs.end(), ".") != subs.end()) {
      policy.workspace_read_subpaths.reset();
    }
  }
  for (auto& sub : policy.extra_read_only_subpaths) {
    if (sub.empty()) return Fail("invalid", "--read-only-subpath: empty path");
    if (sub[0] != '/') sub = policy.workspace + "/" + sub;
  }
  if ((!a.allow_hosts.empty() || !a.inv.unsafe_test_allow_addresses.empty() ||
       !a.inv.unsafe_test_resolver.empty() || !a.unsafe_test_ca.empty()) &&
      policy.network != NetworkMode::kProxy) {
    return Fail("invalid", "--allow-host and the --unsafe-test-* options need --network proxy");
  }
  if (policy.network == NetworkMode::kProxy && policy.kind != PolicyKind::kReadOnly &&
      policy.kind != PolicyKind::kWorkspaceWrite) {
    return Fail("invalid", "--network proxy needs --policy read-only or workspace-write");
  }
  if (policy.kind == PolicyKind::kDangerFullAccess && !a.network_explicit) {
    policy.network = NetworkMode::kFull;
  }
  if (!policy.ConfinesFilesystem() &&
      (!policy.extra_writable_roots.empty() || !policy.extra_read_only_subpaths.empty())) {
    // Accepting and ignoring them would mislead: this policy does not confine files at all.
    return Fail("invalid", "--writable-root/--read-only-subpath have no effect with " +
                               std::string(ToString(policy.kind)));
  }
  return Ok();
}

std::vector<std::string> SandboxEnvironment(const SandboxArgs& a,
                                            const std::vector<std::string>& environ_entries,
                                            const std::string& test_ca, bool caller_is_root) {
  const SandboxPolicy& policy = a.inv.spec.policy;
  EnvPolicy filter = a.env;
  std::vector<std::string> base = a.minimal_env ? MinimalExecEnvironment() : environ_entries;
  if (a.minimal_env) filter.clear = false;
  std::vector<std::string> env = FilterEnvironment(base, filter);
  // At most one PATH: the first of several, which getenv (and so env, xargs or timeout inside)
  // reads, where a shell would take the last; the judgement of a bare name reads the same one.
  bool path_seen = false;
  std::erase_if(env, [&path_seen](const std::string& e) {
    if (e.rfind("PATH=", 0) != 0) return false;
    const bool later = path_seen;
    path_seen = true;
    return later;
  });
  env.push_back("ANVIL_SANDBOX=" + std::string(ToString(policy.kind)));
  if (policy.network == NetworkMode::kProxy) {
    // Every proxy variable points at the proxy; nothing may be exempted from it.
    static constexpr const char* kProxyVars[] = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                                                 "http_proxy", "https_proxy", "all_proxy"};
    std::erase_if(env, [](const std::string& e) {
      std::string name = e.substr(0, e.find('='));
      for (const char* v : kProxyVars) {
        if (name == v) return true;
      }
      return name == "NO_PROXY" || name == "no_proxy";
    });
    std::string url = "http://127.0.0.1:" + std::to_string(kProxyPort);
    for (const char* v : kProxyVars) env.push_back(std::string(v) + "=" + url);
    if (!test_ca.empty()) {
      // Test-only. TLS runs end to end through CONNECT, so the test CA is for the command's own
      // clients: the usual variables point at it.
      for (const char* v : {"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE",
                            "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO"}) {
        std::erase_if(env, [&](const std::string& e) {
          return e.compare(0, std::strlen(v) + 1, std::string(v) + "=") == 0;
        });
        env.push_back(std::string(v) + "=" + test_ca);
      }
    }
  }
  if (policy.ConfinesFilesystem()) {
    // /tmp inside is the sandbox's own; an inherited TMPDIR pointing elsewhere would not be
    // writable. One the caller names (--setenv TMPDIR=..., --keep-env TMPDIR: a directory of
    // the workspace for more room than /tmp has) stands.
    const bool asked =
        std::find(a.env.keep.begin(), a.env.keep.end(), "TMPDIR") != a.env.keep.end() ||
        std::any_of(a.env.set.begin(), a.env.set.end(),
                    [](const std::string& e) { return e.rfind("TMPDIR=", 0) == 0; });
    if (!asked) {
      std::erase_if(env, [](const std::string& e) { return e.rfind("TMPDIR=", 0) == 0; });
    }
  }
  const bool git_global_named =
      std::any_of(a.env.set.begin(), a.env.set.end(),
                  [](const std::string& e) { return e.rfind("GIT_CONFIG_GLOBAL=", 0) == 0; });
  if (policy.ConfinesFilesystem() && !git_global_named) {
    // git's global configuration is the ~/.gitconfig Anvil writes at every start (the sanitized
    // copy of both of the user's files), never also $XDG_CONFIG_HOME/git/config: that one is a
    // file of the sandbox home that an earlier command may have written (core.fsmonitor runs in
    // the next run's `git status`). GIT_CONFIG_GLOBAL makes git read that one file only. One the
    // caller names with --setenv stands, as --setenv always does.
    std::string home_dir;
    for (const std::string& e : env) {
      if (e.rfind("HOME=", 0) == 0) {
        home_dir = e.substr(5);  // the first, as getenv reads it
        break;
      }
    }
    std::erase_if(env, [](const std::string& e) { return e.rfind("GIT_CONFIG_GLOBAL=", 0) == 0; });
    if (!home_dir.empty() && home_dir[0] == '/') {
      env.push_back("GIT_CONFIG_GLOBAL=" + home_dir + "/.gitconfig");
    }
  }
  if (policy.ConfinesFilesystem()) {
    // The shells' start-up files are the ones Anvil writes into the home at every start
    // (policy/sandbox_home.h): zsh reads them from $ZDOTDIR, so it is $HOME; bash's BASH_ENV and
    // the POSIX shells' ENV name one more file to run, which may lie in the sandbox home an
    // earlier command wrote, so they are dropped; fish's directories are the home's .config/fish
    // and .local/share/fish, so an XDG_CONFIG_HOME or XDG_DATA_HOME elsewhere in the home is put
    // back to those. What the caller names with --setenv stands, as --setenv always does.
    auto named = [&a](std::string_view name) {
      return std::any_of(a.env.set.begin(), a.env.set.end(), [name](const std::string& e) {
        return e.size() > name.size() && e.compare(0, name.size(), name) == 0 &&
               e[name.size()] == '=';
      });
    };
    auto value_of = [&env](std::string_view name) -> std::optional<std::string> {
      for (const std::string& e : env) {
        if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 &&
            e[name.size()] == '=') {
          return e.substr(name.size() + 1);  // the first, as getenv reads it
        }
      }
      return std::nullopt;
    };
    auto drop = [&env](std::string_view name) {
      std::erase_if(env, [name](const std::string& e) {
        return e.size() > name.size() && e.compare(0, name.size(), name) == 0 &&
               e[name.size()] == '=';
      });
    };
    const std::string home_dir = value_of("HOME").value_or("");
    for (std::string_view name : {"BASH_ENV", "ENV", "INPUTRC"}) {
      if (!named(name)) drop(name);
    }
    if (!named("ZDOTDIR")) {
      drop("ZDOTDIR");
      if (!home_dir.empty() && home_dir[0] == '/') env.push_back("ZDOTDIR=" + home_dir);
    }
    const std::string home_slash = home_dir.ends_with('/') ? home_dir : home_dir + "/";
    for (auto [name, usual] :
         {std::pair<std::string_view, std::string_view>{"XDG_CONFIG_HOME", ".config"},
          {"XDG_DATA_HOME", ".local/share"}}) {
      const std::optional<std::string> value = value_of(name);
      if (named(name) || !value || home_dir.empty() || home_dir[0] != '/') continue;
      std::string normal = *value;
      while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
      if (normal == home_slash + std::string(usual)) continue;
      if (normal.rfind(home_slash, 0) == 0 || normal + "/" == home_slash ||
          normal.find("/../") != std::string::npos || normal.ends_with("/..")) {
        drop(name);
        env.push_back(std::string(name) + "=" + home_slash + std::string(usual));
      }
    }
  }
  if (caller_is_root && policy.ConfinesFilesystem() && !a.env.clear) {
    // Root's confined command is uid 0 of a user namespace that maps the caller's own ids only:
    // it cannot give a file to another owner (chown fails with EINVAL). GNU tar run as uid 0
    // restores every archive member's owner by default and exits 2 when it cannot, so
    // `tar xf` of any archive made elsewhere would fail; TAR_OPTIONS asks it for what it does
    // for every other user (the files are the extracting user's). Put before the caller's own
    // TAR_OPTIONS (a later `--same-owner` there wins); one named with --setenv stands.
    const bool named = std::any_of(a.env.set.begin(), a.env.set.end(), [](const std::string& e) {
      return e.rfind("TAR_OPTIONS=", 0) == 0;
    });
    if (!named) {
      std::string value = "--no-same-owner";
      for (const std::string& e : env) {
        if (e.rfind("TAR_OPTIONS=", 0) == 0) {
          if (e.size() > 12) value += " " + e.substr(12);  // the first, as getenv reads it
          break;
        }
      }
      std::erase_if(env, [](const std::string& e) { return e.rfind("TAR_OPTIONS=", 0) == 0; });
      env.push_back("TAR_OPTIONS=" + value);
    }
  }
  if (policy.network == NetworkMode::kNone && !a.env.clear) {
    // Without a network, a tool's background update check or telemetry ping can only fail:
    // refused, it would be reported as a refusal beside whatever the command did wrong (npm's
    // update notifier, first thing in each fresh sandbox home). Off unless the caller says.
    for (const char* v : kOfflineQuiet) {
      const std::string name = std::string(v).substr(0, std::string(v).find('='));
      const bool set = std::any_of(env.begin(), env.end(), [&](const std::string& e) {
        return e.compare(0, name.size() + 1, name + "=") == 0;
      });
      if (!set) env.push_back(v);
    }
  }
  return env;
}

}  // namespace anvil::cli
