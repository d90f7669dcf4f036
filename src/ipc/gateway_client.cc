#include "ipc/gateway_client.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "common/fd_io.h"

namespace anvil::ipc {

Status GatewayClient::WriteAll(const std::string& bytes) {
  if (!fd_io::SendAll(socket_.Get(), bytes, 0, fd_io::Wait::NoWait())) {
    return SysFail("io", "gateway send");
  }
  return Ok();
}

Result<uint64_t> GatewayClient::Send(const std::string& op, std::vector<std::string> args) {
  Request r{next_id_++, token_, op, std::move(args)};
  const std::string frame = EncodeRequest(r);
  // The gateway closes a connection that sends a frame over its cap: refuse the request here
  // instead, so one oversized sys.fs.write cannot cut the plugin off from the gateway.
  if (auto s = CheckFrameFits(frame, max_frame_); !s) {
    return Fail("limit", op + ": request of " + std::to_string(frame.size() - 4) +
                             " bytes is over the gateway's frame cap of " +
                             std::to_string(max_frame_) + " bytes; nothing was sent");
  }
  ANVIL_RETURN_IF_ERROR(WriteAll(frame));
  return r.id;
}

Result<Response> GatewayClient::Receive() {
  char buffer[65536];
  while (true) {
    ANVIL_TRY(frame, reader_.Next());
    if (*frame) {
      if ((*frame)->kind != FrameKind::kResponse)
        return Fail("io", "unexpected frame from gateway");
      return DecodeResponse((*frame)->body);
    }
    ssize_t n = ::recv(socket_.Get(), buffer, sizeof(buffer), 0);
    if (n == 0) return Fail("io", "gateway closed the connection");
    if (n < 0) {
      if (errno == EINTR) continue;
      return SysFail("io", "gateway recv");
    }
    reader_.Append(buffer, static_cast<size_t>(n));
  }
}

Result<Response> GatewayClient::Call(const std::string& op, std::vector<std::string> args) {
  auto id = Send(op, std::move(args));
  if (!id) {
    // The gateway may have refused the connection with a reason (`busy`: out of descriptors)
    // and closed it before this request arrived. The peer is gone, so reading cannot block:
    // report its reason rather than a bare broken pipe.
    if (id.error().sys_errno == EPIPE || id.error().sys_errno == ECONNRESET) {
      auto reason = Receive();
      if (reason && reason->id == 0) return reason;
    }
    return tl::unexpected(id.error());
  }
  while (true) {
    ANVIL_TRY(response, Receive());
    if (response->id == *id || response->id == 0) return response;
    // A response to an earlier (cancelled or pipelined) request: skip it.
  }
}

Status GatewayClient::SendCancel(uint64_t id) { return WriteAll(EncodeCancel(id)); }

Result<std::string> GatewayClient::Hello(const std::string& plugin_id,
                                         const std::string& workspace) {
  ANVIL_TRY(r, Call("hello", {plugin_id, workspace}));
  if (!r->ok) return Fail(ErrorCode::FromWire(r->fields[0]), r->fields[1]);
  // [session id, frame cap]; a gateway that names no cap keeps ours.
  if (r->fields.size() >= 2) {
    uint64_t cap = 0;
    const std::string& text = r->fields[1];
    bool digits = !text.empty() && text.size() <= 10;
    for (char c : text) {
      digits = digits && c >= '0' && c <= '9';
      if (digits) cap = cap * 10 + static_cast<uint64_t>(c - '0');
    }
    if (digits && cap > 0 && cap < max_frame_) max_frame_ = static_cast<uint32_t>(cap);
  }
  return r->fields.empty() ? std::string() : r->fields[0];
}

}  // namespace anvil::ipc
