#include "cli/terminal_progress.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "common/fd_io.h"

namespace anvil::cli {
namespace {

// "\r" back to column 0, CSI K erase to the end of the line.
constexpr std::string_view kEraseLine = "\r\x1b[K";
// Longer lines would wrap, and a wrapped line cannot be erased with one CSI K.
constexpr size_t kMaxColumns = 72;

}  // namespace

TerminalProgress::TerminalProgress(int fd) : fd_(fd) {
  const char* term = std::getenv("TERM");
  enabled_ = ::isatty(fd) == 1 && term && *term && std::strcmp(term, "dumb") != 0;
}

void TerminalProgress::Write(std::string_view bytes) const {
  // A progress line is never worth failing, or waiting, for.
  (void)fd_io::WriteAll(fd_, bytes, fd_io::Wait::NoWait());
}

void TerminalProgress::Show(std::string_view text) {
  text_ = "anvil: " + std::string(text);
  if (text_.size() > kMaxColumns) {
    size_t cut = kMaxColumns - 3;
    // Do not cut a UTF-8 sequence in two.
    while (cut > 0 && (static_cast<unsigned char>(text_[cut]) & 0xC0) == 0x80) --cut;
    text_ = text_.substr(0, cut) + "...";
  }
  Redraw();
}

void TerminalProgress::Redraw() {
  if (!enabled_ || text_.empty()) return;
  Write(std::string(kEraseLine) + text_);
  shown_ = true;
}

void TerminalProgress::Clear() {
  if (!enabled_ || !shown_) return;
  Write(kEraseLine);
  shown_ = false;
}

}  // namespace anvil::cli
