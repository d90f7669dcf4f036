#include "session/lsp_framing.h"

#include <algorithm>
#include <cctype>

#include "common/json_depth.h"

namespace anvil::session {
namespace {

constexpr std::string_view kContentLength = "content-length";

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Where the next "Content-Length" starts, or npos. Anywhere, not only at a line start: the
// body of a message with a bad header runs straight into the next message's header.
std::size_t FindHeaderStart(std::string_view text) {
  for (std::size_t pos = 0; pos + kContentLength.size() <= text.size(); ++pos) {
    if (EqualsIgnoreCase(text.substr(pos, kContentLength.size()), kContentLength)) {
      return pos;
    }
  }
  return std::string_view::npos;
}

}  // namespace

void LspReader::Append(const char* data, std::size_t size) {
  if (skip_ > 0 && offset_ == buffer_.size()) {
    std::size_t n = std::min(skip_, size);  // an oversized body is dropped, never buffered
    skip_ -= n;
    data += n;
    size -= n;
  }
  buffer_.append(data, size);
}

std::optional<LspEvent> LspReader::Fail(std::string text, int code) {
  LspEvent e;
  e.error_code = code;
  e.error_text = std::move(text);
  return e;
}

void LspReader::Compact() {
  if (offset_ > 0 && (offset_ == buffer_.size() || offset_ > 65536)) {
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
}

std::optional<LspEvent> LspReader::Next() {
  Compact();
  std::string_view pending(buffer_.data() + offset_, buffer_.size() - offset_);
  if (skip_ > 0) {
    std::size_t n = std::min(skip_, pending.size());
    skip_ -= n;
    offset_ += n;
    if (skip_ > 0) return std::nullopt;
    pending.remove_prefix(n);
  }
  if (resync_) {
    std::size_t at = FindHeaderStart(pending);
    if (at == std::string_view::npos) {
      // Keep a tail that may be the start of a split "Content-Length".
      std::size_t keep = std::min(pending.size(), kContentLength.size());
      offset_ = buffer_.size() - keep;
      return std::nullopt;
    }
    offset_ += at;
    pending.remove_prefix(at);
    resync_ = false;
  }
  if (!body_length_) {
    std::size_t end = pending.find("\r\n\r\n");
    if (end == std::string_view::npos) {
      if (pending.size() > kMaxHeaderBytes) {
        offset_ = buffer_.size();
        resync_ = true;
        return Fail("invalid header: header block over 8 KiB without an empty line");
      }
      return std::nullopt;
    }
    std::string_view headers = pending.substr(0, end);
    offset_ += end + 4;
    if (end > kMaxHeaderBytes) {
      resync_ = true;
      return Fail("invalid header: header block over 8 KiB");
    }
    std::optional<std::size_t> length;
    while (!headers.empty()) {
      std::size_t eol = headers.find("\r\n");
      std::string_view line = headers.substr(0, eol);
      headers = eol == std::string_view::npos ? std::string_view() : headers.substr(eol + 2);
      std::size_t colon = line.find(':');
      std::string_view name = colon == std::string_view::npos ? line : line.substr(0, colon);
      bool printable = std::all_of(line.begin(), line.end(), [](char c) {
        return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f;
      });
      if (colon == std::string_view::npos || name.empty() || !printable ||
          name.find_first_of(" \t") != std::string_view::npos) {
        resync_ = true;
        return Fail("invalid header: a header line must be 'Name: value' in printable ASCII");
      }
      std::string_view value = Trim(line.substr(colon + 1));
      if (EqualsIgnoreCase(name, kContentLength)) {
        if (length) {
          resync_ = true;
          return Fail("invalid header: Content-Length given twice");
        }
        if (value.empty() || value.size() > 12 ||
            !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
          resync_ = true;
          return Fail("invalid header: Content-Length must be a decimal number of bytes");
        }
        std::size_t n = 0;
        for (char c : value) n = n * 10 + static_cast<std::size_t>(c - '0');
        length = n;
      } else if (EqualsIgnoreCase(name, "content-type")) {
        std::string lower(value);
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        auto charset = lower.find("charset=");
        if (charset != std::string::npos) {
          std::string cs = lower.substr(charset + 8);
          if (cs.rfind("utf-8", 0) != 0 && cs.rfind("utf8", 0) != 0) {
            resync_ = true;
            return Fail("invalid header: only charset=utf-8 is supported");
          }
        }
      }
      // Other headers carry nothing the protocol defines; they are ignored.
    }
    if (!length) {
      resync_ = true;
      return Fail("invalid header: Content-Length is missing");
    }
    if (*length == 0) return Fail("invalid request: empty message body");
    if (*length > max_message_) {
      skip_ = *length;
      std::size_t n = std::min(skip_, buffer_.size() - offset_);
      skip_ -= n;
      offset_ += n;
      return Fail("invalid request: message of " + std::to_string(*length) +
                  " bytes is over the limit of " + std::to_string(max_message_) + " bytes");
    }
    body_length_ = *length;
    pending = std::string_view(buffer_.data() + offset_, buffer_.size() - offset_);
  }
  if (pending.size() < *body_length_) return std::nullopt;
  std::string_view body = pending.substr(0, *body_length_);
  offset_ += *body_length_;
  body_length_.reset();
  // Bounded: a message nested a million deep parses, then overflows the stack when its id or
  // params are echoed.
  bool too_deep = false;
  auto json = ParseBoundedJson(body, &too_deep);
  if (too_deep) {
    return Fail("parse error: the body nests arrays/objects deeper than " +
                    std::to_string(kMaxJsonNesting) + " levels",
                -32700);
  }
  if (json.is_discarded()) return Fail("parse error: the body is not valid UTF-8 JSON", -32700);
  LspEvent e;
  e.message = std::move(json);
  return e;
}

std::optional<LspEvent> LspReader::AtEof() const {
  std::size_t left = buffer_.size() - offset_;
  if (body_length_) {
    LspEvent e;
    e.error_code = -32600;
    e.error_text = "invalid request: input ended inside a message body (" + std::to_string(left) +
                   " of " + std::to_string(*body_length_) + " bytes)";
    return e;
  }
  std::string_view rest(buffer_.data() + offset_, left);
  if (!resync_ && skip_ == 0 && rest.find_first_not_of(" \t\r\n") != std::string_view::npos) {
    LspEvent e;
    e.error_code = -32600;
    e.error_text = "invalid request: input ended inside a message header";
    return e;
  }
  return std::nullopt;
}

std::string EncodeLspMessage(const nlohmann::json& message) {
  std::string body = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace anvil::session
