// The plugin host's side of the gateway channel: a blocking request/response client over the
// already-connected socket the host was handed. Every request carries the capability token.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "ipc/frame.h"

namespace anvil::ipc {

class GatewayClient {
 public:
  GatewayClient(UniqueFd socket, std::string token_bytes)
      : socket_(std::move(socket)), token_(std::move(token_bytes)) {}

  // Binds the connection to this plugin; returns the session id. The gateway's answer also
  // names its frame cap, which every later request is checked against before it is sent.
  Result<std::string> Hello(const std::string& plugin_id, const std::string& workspace);
  // Sends one request and waits for its response (an error response is a value, not a
  // failure; a failure means the channel broke, except "limit": a request over the frame cap
  // is refused before a byte of it is sent, and the connection stays usable).
  Result<Response> Call(const std::string& op, std::vector<std::string> args);
  Status SendCancel(uint64_t id);
  // Lower level, for pipelining: send now, collect later (in order of arrival).
  Result<uint64_t> Send(const std::string& op, std::vector<std::string> args);
  Result<Response> Receive();

  int fd() const { return socket_.Get(); }

 private:
  Status WriteAll(const std::string& bytes);
  UniqueFd socket_;
  std::string token_;
  uint64_t next_id_ = 1;
  uint32_t max_frame_ = kMaxFrameBytes;  // the gateway's cap, once hello told it
  FrameReader reader_;
};

}  // namespace anvil::ipc
