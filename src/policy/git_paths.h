// The lexical path helpers the git walk, its plan and the check after the run share
// (policy/git_metadata.h): paths as git names them, no file looked at.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace anvil::git_paths {

std::string Join(const std::string& dir, std::string_view name);
std::string StripTrailingSlashes(std::string path);
std::string Dirname(const std::string& path);
std::string Basename(const std::string& path);
// "." and ".." taken away lexically (what the name says, before any symlink is followed).
std::string LexicalNormal(const std::string& path);
// `s` in single quotes for a shell command line.
std::string Quote(const std::string& s);
bool WithinAny(const std::string& path, const std::vector<std::string>& roots);
// `path` or one of the directories above it is in `set` (canonical paths): a walk up, not a
// comparison with every member.
bool UnderAny(const std::string& path, const std::set<std::string>& set);

}  // namespace anvil::git_paths
