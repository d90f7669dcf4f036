// anvil-proxy's socket helpers (net/http_proxy.h), shared by the connection's steps, the tunnel
// hello and the relay: a deadline as a poll timeout, sending all of a buffer, the refusal reply,
// reading a request head, dialling with a deadline.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/unique_fd.h"
#include "netpolicy/ip_address.h"
#include "netpolicy/proxy_request.h"

namespace anvil::proxy {

using Clock = std::chrono::steady_clock;

// Milliseconds until `deadline` for poll(2), rounded up; 0 once it passed.
int MillisLeft(Clock::time_point deadline);

// Sends all of `data` (waiting up to 10 s at a time for room). False when the peer went away.
bool SendAll(int fd, std::string_view data);

// The client's refusal: "HTTP/1.1 <status> ..." with `reason` in the body, then the end.
void Refuse(int fd, int status, const std::string& reason);

// Reads up to the end of the request head (its blank line) into `buffer`; `head_end` is where
// the head ends. Nothing when it arrived; else why not: status 400 when it passed `cap` bytes
// (the client is told), 0 when the client closed or stayed silent past `deadline`.
std::optional<ProxyHeadRefusal> ReadHead(int fd, size_t cap, Clock::time_point deadline,
                                         std::string& buffer, size_t& head_end);

// Non-blocking connect with a deadline. Returns the connected socket or an invalid fd.
UniqueFd Dial(const IpAddress& address, uint16_t port, Clock::time_point deadline,
              std::string& error);

}  // namespace anvil::proxy
