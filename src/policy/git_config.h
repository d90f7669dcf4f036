// A bounded parser of git's configuration file syntax, as git itself reads it (config.c):
// sections `[core]`, subsections `[diff "tool"]` (case kept, `\"` and `\\` escapes) and the
// legacy `[diff.tool]` (lower-cased), keys case-insensitive, values with double quotes, the
// escapes \t \b \n \" \\, a backslash-newline continuation, `#`/`;` comments outside quotes, a
// key without `=` (boolean true), a key on the same line as its section header, CRLF line ends
// and a leading UTF-8 byte order mark.
//
// Used to find what a repository's configuration tells git to execute or follow as a path
// (git_metadata.h). Pure: no file is opened here. A text git would refuse ("bad config line")
// is an error here too, naming the line: the caller decides what that means (the sandbox does
// not start; a repository created by a command is quarantined).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace anvil {

struct GitConfigEntry {
  std::string section;     // lower-case
  std::string subsection;  // [a "B"] -> "B" (case kept); legacy [a.b] -> "b"; empty when none
  bool has_subsection = false;
  std::string key;                   // lower-case
  std::optional<std::string> value;  // nullopt: the key alone (git's boolean true)
  int line = 0;                      // 1-based line of the key
};

struct GitConfigLimits {
  size_t max_bytes = 1 << 20;    // a config larger than this is refused
  size_t max_entries = 100000;   // so is one with more keys
  size_t max_name_bytes = 1024;  // section + subsection + key
};

Result<std::vector<GitConfigEntry>> ParseGitConfig(std::string_view text,
                                                   const GitConfigLimits& limits = {});

// git's boolean words: true for "true", "yes", "on", a non-zero number and the key alone; false
// for "false", "no", "off", "0" and the empty string; nullopt for anything else.
std::optional<bool> GitConfigBool(const std::optional<std::string>& value);

}  // namespace anvil
