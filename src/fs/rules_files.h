// The files of agents' command rules (policy/command_rules.h) found and read, and the user
// layer's directory from the environment; the parsing and the layers' order stay in policy/.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace anvil {

// $XDG_CONFIG_HOME/anvil/rules, else $HOME/.config/anvil/rules; a relative XDG_CONFIG_HOME is
// ignored (XDG Base Directory). Empty when neither gives an absolute path.
std::string UserRulesDirFrom(const char* xdg_config_home, const char* home);
std::string UserRulesDir();  // from this process's environment

// The *.toml files of a layer's directory (no dot files), in name order; a "limit" error past
// `max_files`. A missing directory is no files.
Result<std::vector<std::string>> RulesFilesIn(const std::string& dir, std::size_t max_files);

// A user's or administrator's file: theirs to lay out, so a symlink (a dotfiles manager's) is
// followed; it must end at a regular file (a FIFO is not waited on). "not_found" when missing.
Result<std::string> ReadTrustedRulesFile(const std::string& path, std::size_t max_bytes);

// The workspace's rules file (`relative`, e.g. .anvil/rules.toml), opened beneath the workspace
// without following any symlink: the repository decides its contents, not which file on the
// machine is read. nullopt when it does not exist; a link on the way is "denied". `shown`: the
// path as messages name it.
Result<std::optional<std::string>> ReadWorkspaceRulesFile(const std::string& workspace_dir,
                                                          std::string_view relative,
                                                          const std::string& shown,
                                                          std::size_t max_bytes);

}  // namespace anvil
