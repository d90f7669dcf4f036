// One status line on the user's terminal ("anvil: running find-todos..."), redrawn in place
// and erased before anything else is printed. Only when the stream is a terminal (and TERM is
// not "dumb"): a pipe, a file or a CI log gets no escape sequences and no extra text at all, so
// scripts reading stderr see exactly what they saw before.
#pragma once

#include <string>
#include <string_view>

namespace anvil::cli {

class TerminalProgress {
 public:
  explicit TerminalProgress(int fd);
  ~TerminalProgress() { Clear(); }
  TerminalProgress(const TerminalProgress&) = delete;
  TerminalProgress& operator=(const TerminalProgress&) = delete;

  bool enabled() const { return enabled_; }
  // Replaces the line with "anvil: " + text. `text` must be safe to show (sanitized).
  void Show(std::string_view text);
  // Erases the line; Show again (or Redraw) after printing something else.
  void Clear();
  void Redraw();

 private:
  void Write(std::string_view bytes) const;
  int fd_;
  bool enabled_;
  bool shown_ = false;
  std::string text_;
};

}  // namespace anvil::cli
