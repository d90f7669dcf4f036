// The control channel: JSON frames from the trusted side on the socketpair end it gave the
// gateway (--control-fd). register (a capability token for one plugin host, by pid, with its
// grant), revoke (by token or plugin), cancel (a plugin's requests), status, shutdown. The
// registrations live here: a token is honoured while its host runs (a pidfd in the epoll set)
// and until it is revoked. The session lasts as long as this channel is open.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/unique_fd.h"
#include "gateway/audit_log.h"
#include "gateway/gateway.h"
#include "gateway/job_queue.h"
#include "gateway/registration.h"
#include "gateway/transport.h"
#include "ipc/frame.h"

namespace anvil::gateway {

class ControlChannel {
 public:
  ControlChannel(const GatewayOptions& options, const UniqueFd& epoll, Transport& transport,
                 JobQueue& queue, AuditLog* audit)
      : options_(options), epoll_(epoll), transport_(transport), queue_(queue), audit_(audit) {}

  // The control socket is readable: reads what the trusted side sent and answers each frame.
  void HandleReadable();
  // The host of registration `index` exited (its pidfd is readable): its token is revoked.
  void HostExited(uint64_t index);

  // The registration whose token is `token` (compared in constant time with every one); null
  // when there is none.
  std::shared_ptr<Registration> FindByToken(std::string_view token);

  // False once the trusted side is gone, asked for shutdown, or sent a malformed frame.
  bool open() const { return open_; }

 private:
  void Reply(const nlohmann::json& reply);
  nlohmann::json Register(const nlohmann::json& msg);
  nlohmann::json Revoke(const nlohmann::json& msg);
  nlohmann::json Cancel(const nlohmann::json& msg);
  void RevokeRegistration(const std::shared_ptr<Registration>& reg, const std::string& why);

  const GatewayOptions& options_;
  const UniqueFd& epoll_;
  Transport& transport_;
  JobQueue& queue_;
  AuditLog* audit_;
  ipc::FrameReader reader_;
  std::map<uint64_t, std::shared_ptr<Registration>> registrations_;  // by index
  uint64_t next_reg_ = 1;
  // By plugin id, for the whole session: a host registered again keeps what its plugin used.
  std::map<std::string, std::shared_ptr<WriteBudget>> write_budgets_;
  bool open_ = true;
};

}  // namespace anvil::gateway
