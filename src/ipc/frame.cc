#include "ipc/frame.h"

#include <cstring>

namespace anvil::ipc {
namespace {

void PutU16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>(v >> 8));
}
void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Starts a frame of `size` bytes in all (room reserved once: a 4 KiB read's answer is not
// copied while it grows); Finish() patches the length.
std::string Begin(FrameKind kind, size_t size = 5) {
  std::string out;
  out.reserve(size);
  out.append(4, '\0');
  out.push_back(static_cast<char>(kind));
  return out;
}

size_t FieldsSize(const std::vector<std::string>& fields) {
  size_t n = 2;
  for (const auto& f : fields) n += 4 + f.size();
  return n;
}
std::string Finish(std::string out) {
  uint32_t len = static_cast<uint32_t>(out.size() - 4);
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  return out;
}

void PutFields(std::string& out, const std::vector<std::string>& fields) {
  PutU16(out, static_cast<uint16_t>(fields.size()));
  for (const auto& f : fields) {
    PutU32(out, static_cast<uint32_t>(f.size()));
    out += f;
  }
}

class Cursor {
 public:
  explicit Cursor(std::string_view data) : data_(data) {}
  bool U8(uint8_t& v) {
    if (left() < 1) return false;
    v = static_cast<uint8_t>(data_[pos_++]);
    return true;
  }
  bool U16(uint16_t& v) {
    if (left() < 2) return false;
    v = static_cast<uint16_t>(Byte(0) | (Byte(1) << 8));
    pos_ += 2;
    return true;
  }
  bool U32(uint32_t& v) {
    if (left() < 4) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(Byte(i)) << (8 * i);
    pos_ += 4;
    return true;
  }
  bool U64(uint64_t& v) {
    if (left() < 8) return false;
    v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(Byte(i)) << (8 * i);
    pos_ += 8;
    return true;
  }
  bool Bytes(size_t n, std::string& out) {
    if (left() < n) return false;
    out.assign(data_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  bool Fields(std::vector<std::string>& out) {
    uint16_t n;
    if (!U16(n) || n > kMaxFields) return false;
    out.resize(n);
    for (auto& f : out) {
      uint32_t len;
      if (!U32(len) || !Bytes(len, f)) return false;
    }
    return true;
  }
  bool Done() const { return pos_ == data_.size(); }

 private:
  size_t left() const { return data_.size() - pos_; }
  uint32_t Byte(int i) const { return static_cast<uint8_t>(data_[pos_ + i]); }
  std::string_view data_;
  size_t pos_ = 0;
};

}  // namespace

std::string Response::ErrorText() const {
  if (ok || fields.size() < 2) return "";
  return fields[0] + ": " + fields[1];
}

anvil::Error Response::ToError() const {
  if (ok || fields.size() < 2) return anvil::Error{"error", "malformed error", 0};
  return anvil::Error{anvil::ErrorCode::FromWire(fields[0]), fields[1], 0,
                      fields.size() > 2 ? fields[2] : std::string()};
}

std::string EncodeRequest(const Request& request) {
  std::string out = Begin(FrameKind::kRequest, 5 + 8 + 1 + request.token.size() + 1 +
                                                   request.op.size() + FieldsSize(request.args));
  PutU64(out, request.id);
  out.push_back(static_cast<char>(request.token.size()));
  out += request.token;
  out.push_back(static_cast<char>(request.op.size()));
  out += request.op;
  PutFields(out, request.args);
  return Finish(std::move(out));
}

std::string EncodeResponse(const Response& response) {
  std::string out = Begin(FrameKind::kResponse, 5 + 8 + 1 + FieldsSize(response.fields));
  PutU64(out, response.id);
  out.push_back(response.ok ? 0 : 1);
  PutFields(out, response.fields);
  return Finish(std::move(out));
}

std::string EncodeCancel(uint64_t id) {
  std::string out = Begin(FrameKind::kCancel);
  PutU64(out, id);
  return Finish(std::move(out));
}

std::string EncodeControl(std::string_view json) {
  std::string out = Begin(FrameKind::kControl);
  out += json;
  return Finish(std::move(out));
}

Status CheckFrameFits(const std::string& encoded, uint32_t max_frame) {
  if (encoded.size() < 4 || encoded.size() - 4 <= max_frame) return Ok();
  return Fail("limit", "message of " + std::to_string(encoded.size() - 4) +
                           " bytes is over the frame cap of " + std::to_string(max_frame) +
                           " bytes; nothing was sent");
}

Result<Request> DecodeRequest(std::string_view body) {
  Cursor c(body);
  Request r;
  uint8_t token_len, op_len;
  if (!c.U64(r.id) || !c.U8(token_len) || token_len > kMaxTokenLength ||
      !c.Bytes(token_len, r.token) || !c.U8(op_len) || op_len == 0 || op_len > kMaxOpLength ||
      !c.Bytes(op_len, r.op) || !c.Fields(r.args) || !c.Done()) {
    return Fail("invalid", "malformed request frame");
  }
  return r;
}

Result<Response> DecodeResponse(std::string_view body) {
  Cursor c(body);
  Response r;
  uint8_t status;
  if (!c.U64(r.id) || !c.U8(status) || status > 1 || !c.Fields(r.fields) || !c.Done()) {
    return Fail("invalid", "malformed response frame");
  }
  r.ok = status == 0;
  if (!r.ok && r.fields.size() != 2 && r.fields.size() != 3) {
    return Fail("invalid", "malformed error response");
  }
  return r;
}

Result<uint64_t> DecodeCancel(std::string_view body) {
  Cursor c(body);
  uint64_t id;
  if (!c.U64(id) || !c.Done()) return Fail("invalid", "malformed cancel frame");
  return id;
}

Result<std::optional<Frame>> FrameReader::Next() {
  size_t avail = buffer_.size() - offset_;
  if (avail < 4) return std::optional<Frame>();
  uint32_t len = 0;
  for (int i = 0; i < 4; ++i) {
    len |= static_cast<uint32_t>(static_cast<uint8_t>(buffer_[offset_ + i])) << (8 * i);
  }
  if (len == 0 || len > max_frame_) {
    return Fail("limit", "frame of " + std::to_string(len) + " bytes is over the cap of " +
                             std::to_string(max_frame_));
  }
  if (avail < 4 + static_cast<size_t>(len)) return std::optional<Frame>();
  uint8_t kind = static_cast<uint8_t>(buffer_[offset_ + 4]);
  if (kind < 1 || kind > 4) return Fail("invalid", "unknown frame kind");
  Frame frame{static_cast<FrameKind>(kind), buffer_.substr(offset_ + 5, len - 1)};
  offset_ += 4 + len;
  // Compact once the consumed prefix dominates, so the buffer never grows without bound; all of
  // it consumed (one request, one answer: the usual case) costs no copy.
  if (offset_ == buffer_.size()) {
    buffer_.clear();
    offset_ = 0;
  } else if (offset_ > 65536 && offset_ * 2 > buffer_.size()) {
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
  return std::optional<Frame>(std::move(frame));
}

}  // namespace anvil::ipc
