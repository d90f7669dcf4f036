#include "net/proxy_flags.h"

namespace anvil {
namespace {}  // namespace

CommandSpec ProxyFlags(ProxyOptions& o) {
  CommandSpec spec;
  spec.program = "anvil-proxy";
  spec.synopsis =
      "--channel-fd N --status-fd N [--allow-host H[:PORT]]...\n"
      "                   [--audit-log FILE] [--unsafe-test-allow-address ADDR[:PORT]]...\n"
      "                   [--unsafe-test-resolver ADDR:PORT]";
  spec.description =
      "The proxy of `anvil sandbox --network proxy`; started by `anvil sandbox`, not by hand.";
  spec.style.wording = ParseStyle::Wording::kExpectsGot;
  spec.flags = {
      DescriptorInto("--channel-fd", "the listening sockets arrive here (required)", o.channel_fd,
                     65535),
      DescriptorInto("--status-fd", "\"ok\" or why not, then one JSON line per distinct refusal",
                     o.status_fd, 65535),
      CollectInto("--allow-host", "H[:PORT]", "a host the command may reach (repeatable)",
                  o.allow_hosts),
      TextInto("--audit-log", "FILE", "JSON-lines audit log (default: stderr)", o.audit_log),
      CollectInto("--unsafe-test-allow-address", "ADDR[:PORT]",
                  "test only: treat ADDR as global (repeatable)", o.unsafe_test_allow_addresses),
      TextInto("--unsafe-test-resolver", "ADDR:PORT", "test only: ask this DNS server",
               o.unsafe_test_resolver),
  };
  return spec;
}

}  // namespace anvil
