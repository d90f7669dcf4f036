// `anvil plugin ...`: inspect, approve, revoke, lock, and the signing keys (keygen, sign,
// trust-key).
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/audit_view.h"
#include "cli/plugin_cli.h"
#include "cli/plugin_new_command.h"
#include "cli/run_command.h"
#include "cli/run_watch.h"
#include "cli/terminal_progress.h"
#include "common/json_depth.h"
#include "common/unique_fd.h"
#include "fs/file_io.h"
#include "fs/workspace_path.h"
#include "ipc/plugin_trace.h"
#include "policy/consent.h"
#include "policy/display_text.h"
#include "policy/grant_store.h"
#include "policy/lockfile.h"
#include "policy/manifest.h"
#include "policy/manifest_signature.h"
#include "policy/trusted_keys.h"
#include "policy/workspace_config.h"
#include "session/plugin_admission.h"
#include "session/plugin_catalog.h"
#include "session/plugin_session.h"

namespace anvil::cli {

using namespace plugin_cli;  // the terminal helpers these three commands share
using namespace std::chrono_literals;

namespace {

int RunKeyCommand(const std::string& sub, const std::vector<std::string>& rest, const char* usage) {
  auto fail = [](const Error& e) {
    std::cerr << ErrorLine("anvil plugin", e);
    return kExitPluginError;
  };
  auto usage_error = [&](const std::string& text) {
    std::cerr << "anvil plugin " << sub << ": invalid: " << Shown(text) << "\n" << usage;
    return kExitUsage;
  };
  if (sub == "trusted-keys") {
    if (!rest.empty()) return usage_error("takes no arguments");
    auto keys = LoadTrustedKeys();
    if (!keys) return fail(keys.error());
    for (const auto& k : *keys) {
      std::cout << Shown(k.name) << "  key id " << KeyId(k.public_key) << "\n";
    }
    return kExitOk;
  }
  if (sub == "keygen") {
    if (rest.size() != 1) return usage_error("needs FILE");
    auto pair = GenerateEd25519KeyPair();
    if (!pair) return fail(pair.error());
    if (auto s = WriteNewFile(rest[0], pair->private_pem, 0600); !s) return fail(s.error());
    if (auto s = WriteNewFile(rest[0] + ".pub", PublicKeyPem(pair->public_raw), 0644); !s) {
      return fail(s.error());
    }
    std::cout << "private key: " << Shown(rest[0])
              << " (keep it secret)\npublic key:  " << Shown(rest[0])
              << ".pub\nkey id:      " << KeyId(pair->public_raw) << "\n";
    return kExitOk;
  }
  if (sub == "sign") {
    if (rest.size() != 3 || rest[0] != "--key") return usage_error("needs --key FILE PLUGIN_DIR");
    auto key = ReadSmallFile(rest[1], 16384);
    if (!key) return fail(key.error());
    std::string plugin_dir = Canonical(rest[2]);
    if (plugin_dir.empty()) return usage_error("no such plugin directory " + rest[2]);
    auto manifest = LoadManifest(plugin_dir);
    if (!manifest) return fail(manifest.error());
    auto sig = SignManifest(manifest->sha256, *key);
    if (!sig) return fail(sig.error());
    UniqueFd dir(::open(plugin_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir) return fail(Error{"io", "open " + plugin_dir + ": " + std::strerror(errno), errno});
    if (auto s = WriteFileAtomically(dir.Get(), std::string(kSignatureFileName), *sig, 0644); !s) {
      return fail(s.error());
    }
    std::cout << "signed " << SanitizeForDisplay(manifest->id) << " (manifest sha256 "
              << manifest->sha256.substr(0, 12) << ") into " << Shown(plugin_dir) << "/"
              << kSignatureFileName << "\n";
    return kExitOk;
  }
  if (sub == "trust-key") {
    if (rest.size() != 2) return usage_error("needs NAME FILE");
    auto text = ReadSmallFile(rest[1], 4096);
    if (!text) return fail(text.error());
    auto raw = ParsePublicKey(*text);
    if (!raw) return fail(raw.error());
    if (auto s = TrustKey(rest[0], *raw); !s) return fail(s.error());
    std::cout << "trusting " << Shown(rest[0]) << " (key id " << KeyId(*raw) << ")\n";
    return kExitOk;
  }
  // untrust-key
  if (rest.size() != 1) return usage_error("needs NAME");
  if (auto s = UntrustKey(rest[0]); !s) return fail(s.error());
  std::cout << "no longer trusting " << Shown(rest[0]) << "\n";
  return kExitOk;
}

CommandSpec PluginSpec(std::string& workspace_arg, std::string& sha256_arg) {
  CommandSpec spec;
  spec.echo = SanitizeFlagArgument;
  spec.name = "plugin";
  spec.program = "anvil plugin";
  spec.summary = "inspect, approve, revoke and lock plugins";
  spec.synopsis =
      "<new|types|list|inspect|approve|revoke|lock|keygen|sign|trust-key|untrust-key|"
      "trusted-keys> ...";
  const Positional plugin_dir{"PLUGIN_DIR", Completion::kPluginDirectory};
  PluginRuntime unused_runtime = PluginRuntime::kLua;
  spec.subcommands = {
      // new and types parse with their own tables (cli/plugin_new_command.h).
      {"new",
       PluginNewSpec(unused_runtime).synopsis,
       "create a working plugin: manifest, a command, a test, editor\n"
       "types (anvil plugin new --help)",
       {{"NAME"}, {"DIR", Completion::kDirectory}}},
      {"types",
       PluginTypesSpec().synopsis,
       "write the plugin's editor types (anvil.d.ts / types/anvil.lua) again",
       {plugin_dir}},
      {"list", "", "the grants stored for the workspace", {}, true},
      {"inspect",
       "PLUGIN_DIR",
       "the manifest, what it requests, and whether it is granted here",
       {plugin_dir},
       true},
      {"approve",
       "PLUGIN_DIR",
       "grant exactly what the manifest requests (keyed by its SHA-256)",
       {plugin_dir},
       true},
      {"revoke", "PLUGIN_ID", "remove the plugin's grants in the workspace", {{"PLUGIN_ID"}}, true},
      {"lock",
       "PLUGIN_DIR",
       "pin the plugin's manifest and code hashes in <workspace>/anvil.lock",
       {plugin_dir},
       true},
      {"keygen",
       "FILE",
       "write a new private key to FILE (0600) and its public key to FILE.pub",
       {{"FILE", Completion::kFile}}},
      {"sign",
       "--key FILE PLUGIN_DIR",
       "sign PLUGIN_DIR/anvil-plugin.toml into anvil-plugin.toml.sig",
       // Completed as operands: --key is skipped like any flag.
       {{"FILE", Completion::kFile}, plugin_dir}},
      {"trust-key",
       "NAME FILE",
       "trust the public key in FILE (PEM or 64 hex) as NAME",
       {{"NAME"}, {"FILE", Completion::kFile}}},
      {"untrust-key", "NAME", "stop trusting the key NAME", {{"NAME"}}},
      {"trusted-keys", "", "list the keys you trust", {}},
  };
  spec.sections_before_flags = {
      {"",
       "Manifest signatures (ed25519; docs/plugin-api.md \"Signed manifests\"): keygen, sign,\n"
       "trust-key, untrust-key and trusted-keys.",
       false},
  };
  spec.flags = {
      Text("--workspace", "DIR",
           "the workspace (default: the current directory; list, inspect,\n"
           "approve, revoke and lock)",
           [&workspace_arg](const std::string& v) {
             workspace_arg = v;
             return Ok();
           })
          .Expects("a directory")
          .Completes(Completion::kDirectory),
      Text("--sha256", "HEX",
           "approve: only the manifest with this SHA-256 (as inspect\n"
           "printed it); refused when the manifest has changed since",
           [&sha256_arg](const std::string& v) {
             sha256_arg = v;
             return Ok();
           })
          .Expects("the 64 hex digits inspect printed"),
  };
  spec.examples = {
      "anvil plugin new --js me.notes                     # ./notes: a JS plugin to start from",
      "anvil plugin inspect examples/plugins/notes-js     # what it asks for, granted or not",
      "anvil plugin approve examples/plugins/notes-js     # grant exactly that, for this workspace",
      "anvil plugin approve --sha256 HEX DIR              # only the manifest inspect showed",
      "anvil plugin list                                  # the grants stored for this workspace",
      "anvil plugin revoke example.notes",
      "anvil plugin lock examples/plugins/notes-js        # pin it in ./anvil.lock",
  };
  spec.style.operands = ParseStyle::Operands::kAnywhere;
  spec.style.dash_is_operand = true;
  return spec;
}

}  // namespace

CommandSpec PluginCommandSpec() {
  static std::string unused, unused_sha;
  return PluginSpec(unused, unused_sha);
}

int RunPluginCommand(const std::vector<std::string>& args) {
  std::string workspace_arg = ".";
  std::string sha256_arg;
  const CommandSpec spec = PluginSpec(workspace_arg, sha256_arg);
  const std::string usage = RenderHelp(spec);
  const char* kUsage = usage.c_str();
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? kExitUsage : kExitOk;
  }
  std::string sub = args[0];
  std::vector<std::string> known;
  for (const auto& s : spec.subcommands) known.push_back(s.name);
  if (std::find(known.begin(), known.end(), sub) == known.end()) {
    std::string names;
    for (const auto& k : known) names += (names.empty() ? "" : ", ") + k;
    std::cerr << "anvil plugin: invalid: unknown subcommand '" << SanitizeForDisplay(sub, 100)
              << "' (the subcommands: " << names << "; see anvil plugin --help)";
    if (auto s = Suggest(sub, known)) std::cerr << "; did you mean " << *s << "?";
    std::cerr << "\n";
    return kExitUsage;
  }
  if (sub == "new") return RunPluginNewCommand({args.begin() + 1, args.end()});
  if (sub == "types") return RunPluginTypesCommand({args.begin() + 1, args.end()});
  if (sub == "keygen" || sub == "sign" || sub == "trust-key" || sub == "untrust-key" ||
      sub == "trusted-keys") {
    return RunKeyCommand(sub, std::vector<std::string>(args.begin() + 1, args.end()), kUsage);
  }
  auto parsed = ParseFlags(spec, std::vector<std::string>(args.begin() + 1, args.end()));
  if (!parsed) {
    std::cerr << ErrorLine("anvil plugin " + Shown(sub, 64), parsed.error());
    return kExitUsage;
  }
  if (parsed->help) {
    std::cout << kUsage;
    return kExitOk;
  }
  const std::vector<std::string>& rest = parsed->operands;
  std::string workspace = Canonical(workspace_arg);
  if (workspace.empty()) {
    std::cerr << "anvil plugin: invalid: no such workspace " << Shown(workspace_arg) << "\n";
    return kExitUsage;
  }
  auto store = GrantStore::Open();
  if (!store) {
    std::cerr << ErrorLine("anvil plugin", store.error());
    return kExitPluginError;
  }
  if (!sha256_arg.empty()) {
    std::transform(sha256_arg.begin(), sha256_arg.end(), sha256_arg.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (sha256_arg.size() != 64 ||
        sha256_arg.find_first_not_of("0123456789abcdef") != std::string::npos) {
      std::cerr << "anvil plugin " << Shown(sub, 64) << ": invalid: --sha256 "
                << Shown(sha256_arg, 80)
                << " is not a SHA-256 (fix: the 64 hex digits `anvil plugin inspect` prints)\n";
      return kExitUsage;
    }
  }
  if (!sha256_arg.empty() && sub != "approve") {
    std::cerr << "anvil plugin " << Shown(sub, 64)
              << ": invalid: --sha256 is for approve only (fix: drop it)\n";
    return kExitUsage;
  }
  if (sub == "list") {
    for (const auto& e : store->List(workspace)) {
      std::cout << SanitizeForDisplay(e.plugin_id) << "  manifest "
                << e.manifest_sha256.substr(0, 12) << "\n"
                << DescribeGrant(e.grant) << "\n";
    }
    return kExitOk;
  }
  if (rest.size() != 1) {
    std::cerr << "anvil plugin " << Shown(sub, 64) << ": invalid: needs one argument\n" << kUsage;
    return kExitUsage;
  }
  if (sub == "revoke") {
    auto revoked = store->Revoke(workspace, rest[0]);
    if (!revoked) {
      std::cerr << ErrorLine("anvil plugin", revoked.error());
      return kExitPluginError;
    }
    // What is gone, in the words the grant was given in: a revoke the user can check.
    for (const auto& e : *revoked) {
      std::cout << "revoked " << SanitizeForDisplay(e.plugin_id) << " in " << Shown(workspace)
                << " (manifest " << e.manifest_sha256.substr(0, 12)
                << (e.copy ? ", copy in " + SanitizeForDisplay(e.copy->dir) : std::string())
                << "); it may no longer:\n"
                << DescribeGrant(e.grant) << "\n";
    }
    // True of every front end: `anvil serve` watches the grant store and stops the plugin's
    // host at once; `anvil run` and `anvil mcp` admit the plugin afresh at each command.
    std::cout << "A running `anvil serve` of this workspace stops the plugin now; nothing starts "
                 "it again without a new approval.\n";
    return kExitOk;
  }
  std::string plugin_dir = Canonical(rest[0]);
  auto manifest = plugin_dir.empty()
                      ? Result<Manifest>(Fail("not_found", "no such plugin directory " + rest[0]))
                      : LoadManifest(plugin_dir);
  // inspect and approve look at what would run: an entry the host could never open (missing, a
  // symlink) is refused here, with its line and column, before anyone approves it.
  if (manifest && (sub == "inspect" || sub == "approve")) {
    if (auto entry = CheckManifestEntry(plugin_dir, *manifest); !entry) {
      manifest = tl::unexpected(entry.error());
    }
  }
  if (!manifest) {
    std::cerr << ErrorLine("anvil plugin", manifest.error());
    return kExitUsage;
  }
  // A grant is for one copy of the plugin: this directory, or this code. A module under lib/
  // that cannot be hashed (a symlink, a name that is not allowed) is refused by inspect and
  // approve as `anvil run` refuses it, before anything is shown as fine.
  std::string dir_identity;
  auto code = HashPluginDir(plugin_dir, *manifest, &dir_identity);
  if (!code && (sub == "inspect" || sub == "approve")) {
    std::cerr << ErrorLine("anvil plugin", code.error());
    return kExitPluginError;
  }
  if (sub == "inspect") {
    bool granted =
        code && store
                    ->FindForCopy(workspace, manifest->id, manifest->sha256,
                                  PluginCopy{plugin_dir, code->code_sha256, dir_identity})
                    .has_value();
    auto signature = session::CheckSignature(plugin_dir, *manifest, false);
    std::string signed_by =
        !signature ? "REFUSED: " + SanitizeForDisplay(signature.error().ToString(), 1000)
        : signature->signed_by_trusted_key ? "signed by " + Shown(signature->signer, 64)
                                           : "not signed";
    std::cout << "id:       " << SanitizeForDisplay(manifest->id)
              << "\nversion:  " << SanitizeForDisplay(manifest->version)
              << "\nruntime:  " << ToString(manifest->runtime) << "\nmanifest: sha256 "
              << manifest->sha256 << "\nsigned:   " << signed_by << "\ngranted:  "
              << (granted ? "yes (this manifest, this copy of the plugin, this workspace)" : "no")
              << "\nrequests:\n"
              << DescribeGrant(manifest->requested) << "\n";
    if (!granted) {
      std::cout << "approve exactly this manifest with:\n  anvil plugin approve --sha256 "
                << manifest->sha256 << " " << PasteableShellWord(plugin_dir) << "\n";
    }
    return kExitOk;
  }
  if (sub == "approve" && !sha256_arg.empty() && sha256_arg != manifest->sha256) {
    // What was inspected is not what is there now: nothing is granted on the strength of a
    // manifest the user did not see.
    std::cerr << "anvil plugin approve: denied: the manifest of " << Shown(plugin_dir)
              << " has changed since it was inspected (sha256 " << manifest->sha256 << ", not the "
              << Shown(sha256_arg, 80) << " given); nothing was granted. It now requests:\n"
              << DescribeGrant(manifest->requested)
              << "\nfix: anvil plugin inspect it again, then approve with the new --sha256\n";
    return kExitRefused;
  }
  if (sub == "approve") {
    if (auto s = store->Approve(workspace, manifest->id, manifest->sha256, manifest->requested,
                                PluginCopy{plugin_dir, code->code_sha256, dir_identity});
        !s) {
      std::cerr << ErrorLine("anvil plugin", s.error());
      return kExitPluginError;
    }
    std::cout << "granted " << SanitizeForDisplay(manifest->id) << " in " << Shown(workspace)
              << ":\n"
              << DescribeGrant(manifest->requested) << "\n";
    return kExitOk;
  }
  if (sub == "lock") {
    auto lock = ReadLockfile(workspace);
    Lockfile lf = lock ? *lock : Lockfile{};
    if (!lock && lock.error().code != "not_found") {
      std::cerr << ErrorLine("anvil plugin", lock.error());
      return kExitPluginError;
    }
    auto hashes = HashPluginDir(plugin_dir, *manifest);
    if (!hashes) {
      std::cerr << ErrorLine("anvil plugin", hashes.error());
      return kExitPluginError;
    }
    lf.plugins[manifest->id] = *hashes;
    if (auto s = WriteLockfile(workspace, lf); !s) {
      std::cerr << ErrorLine("anvil plugin", s.error());
      return kExitPluginError;
    }
    std::cout << "locked " << SanitizeForDisplay(manifest->id) << " in " << Shown(workspace)
              << "/anvil.lock\n";
    return kExitOk;
  }
  std::cerr << "anvil plugin: invalid: unknown subcommand " << Shown(sub, 64) << "\n" << kUsage;
  return kExitUsage;
}

}  // namespace anvil::cli
