#include "host/host_flags.h"

#include <chrono>
#include <climits>
#include <string>

#include "policy/display_text.h"

namespace anvil::host {
namespace {

std::string Default(uint64_t n) { return "(default " + std::to_string(n) + ")"; }

}  // namespace

CommandSpec HostFlags(HostOptions& o) {
  CommandSpec spec;
  spec.program = "anvil-plugin-host";
  spec.synopsis =
      "--plugin-dir DIR --runtime lua|js --entry FILE\n"
      "                         --plugin-id ID --workspace DIR\n"
      "                         [--gateway-fd N] --session-fd N --token-fd N [limits]";
  spec.description =
      "Runs one plugin. Started by `anvil run` / `anvil serve`; not meant to be run by hand.";
  spec.style.wording = ParseStyle::Wording::kExpectsGot;
  spec.echo = SanitizeFlagArgument;
  const RuntimeLimits d;
  spec.flags = {
      TextInto("--plugin-dir", "DIR", "the plugin's directory", o.plugin_dir),
      TextInto("--runtime", "lua|js", "the plugin's language", o.runtime).Choices({"lua", "js"}),
      TextInto("--entry", "FILE", "the entry file, relative to --plugin-dir", o.entry),
      TextInto("--plugin-id", "ID", "the plugin's id (anvil-plugin.toml)", o.plugin_id),
      TextInto("--workspace", "DIR", "the workspace", o.workspace),
      DescriptorInto("--gateway-fd",
                     "the connection to the gateway (default: it comes with the\n"
                     "handoff on --token-fd)",
                     o.gateway_fd),
      DescriptorInto("--session-fd", "the channel to the trusted side", o.session_fd),
      DescriptorInto("--token-fd", "the capability token, then the plugin's settings (read to EOF)",
                     o.token_fd),
      ByteSize("--memory-limit", "BYTES",
               "VM heap budget (default " + std::to_string(d.memory_bytes >> 20) + " MiB)",
               UpTo<uint64_t>(), [&o](uint64_t n) { o.limits.memory_bytes = n; })
          .Expects("a number of bytes"),
      Count("--instructions", "N",
            "instruction budget per load and per command " + Default(d.instructions),
            UpTo<uint64_t>(), [&o](uint64_t n) { o.limits.instructions = n; })
          .Expects("a number"),
      Count("--deadline-ms", "MS",
            "wall-clock budget per command " + Default(d.deadline.count()) +
                "; the trusted side also kills at it",
            UpTo<uint64_t>(),
            [&o](uint64_t ms) { o.limits.deadline = std::chrono::milliseconds(ms); })
          .Expects("a number"),
      ByteSize("--address-space", "BYTES",
               "RLIMIT_AS of the host (default " +
                   std::to_string(LockdownOptions{}.address_space >> 30) + " GiB)",
               UpTo<uint64_t>(), [&o](uint64_t n) { o.lockdown.address_space = n; })
          .Expects("a number of bytes"),
  };
  return spec;
}

}  // namespace anvil::host
