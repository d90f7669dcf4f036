#include "fs/path_glob.h"

#include <algorithm>
#include <cstddef>

#include "fs/utf8.h"
#include "fs/workspace_path.h"

namespace anvil {
namespace {

constexpr std::string_view kAnySegments = "**";

std::vector<std::string_view> Split(std::string_view normalized) {
  std::vector<std::string_view> parts;
  if (normalized == kWorkspaceRootPath) return parts;  // the root has zero components
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = normalized.find('/', start);
    if (slash == std::string_view::npos) {
      parts.push_back(normalized.substr(start));
      return parts;
    }
    parts.push_back(normalized.substr(start, slash - start));
    start = slash + 1;
  }
}

std::size_t CodePointLength(std::string_view text, std::size_t pos) {
  char32_t c = 0;
  const std::size_t len = fs_internal::DecodeUtf8(text, pos, &c);
  return len == 0 ? 1 : len;  // unreachable for validated input; never loop forever
}

// '*' and '?' within one component. Greedy with single-star backtracking: linear in practice and
// never exponential, so a hostile manifest glob like "*a*a*a*a*b" cannot stall the gateway.
// Literal bytes compare exactly; since both sides are valid UTF-8 a match always ends on a code
// point boundary, which is what lets '?' step one code point.
bool SegmentMatches(std::string_view pattern, std::string_view name) {
  std::size_t p = 0, s = 0;
  std::size_t star_p = std::string_view::npos, star_s = 0;
  while (s < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star_p = p++;
      star_s = s;
    } else if (p < pattern.size() && pattern[p] == '?') {
      ++p;
      s += CodePointLength(name, s);
    } else if (p < pattern.size() && pattern[p] == name[s]) {
      ++p;
      ++s;
    } else if (star_p != std::string_view::npos) {
      p = star_p + 1;
      star_s += CodePointLength(name, star_s);
      s = star_s;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool IsValidPath(std::string_view normalized) {
  auto ok = NormalizeWorkspacePath(normalized, RootPolicy::kAllow);
  return ok && *ok == normalized;
}

}  // namespace

Status ValidateGlob(std::string_view glob) {
  // A glob is spelled like a workspace path ('*' and '?' are legal name characters), so the
  // same rules apply: no absolute globs, no ".." to reach above the root, one spelling only.
  auto path = NormalizeWorkspacePath(glob, RootPolicy::kReject);
  if (!path) return Fail("invalid", "glob: " + path.error().message);
  for (std::string_view segment : Split(glob)) {
    if (segment != kAnySegments && segment.find(kAnySegments) != std::string_view::npos) {
      // "a**b" has no agreed meaning (gitignore, bash and Go differ); refuse to guess.
      return Fail("invalid",
                  "glob: '**' must be a whole path segment: " + QuotePathForMessage(glob));
    }
  }
  return Ok();
}

bool IsLiteralGlob(std::string_view glob) {
  return ValidateGlob(glob) && glob.find_first_of("*?") == std::string_view::npos;
}

namespace {

// The matcher's live states after `normalized_path`'s components: a set-of-states matcher (an NFA
// over glob segments), O(segments x components), so any number of "**" stays polynomial. Empty
// when the glob or the path is invalid or no state survives.
std::vector<bool> LiveStates(const std::vector<std::string_view>& segments,
                             std::string_view normalized_path) {
  const std::vector<std::string_view> components = Split(normalized_path);
  const std::size_t n = segments.size();
  std::vector<bool> states(n + 1, false);
  auto close = [&](std::vector<bool>& set) {
    // "**" may match zero components: reaching it also reaches the segment after it.
    for (std::size_t i = 0; i < n; ++i) {
      if (set[i] && segments[i] == kAnySegments) set[i + 1] = true;
    }
  };
  states[0] = true;
  close(states);
  for (std::string_view component : components) {
    std::vector<bool> next(n + 1, false);
    bool any = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (!states[i]) continue;
      if (segments[i] == kAnySegments) {
        next[i] = any = true;  // "**" consumes this component and may consume more
      } else if (SegmentMatches(segments[i], component)) {
        next[i + 1] = any = true;
      }
    }
    if (!any) return {};
    close(next);
    states.swap(next);
  }
  return states;
}

// True when the segments from `from` on match every non-empty sequence of components: at least
// one "**" and, besides, at most one segment, which is "*" ("**", "**/*", "*/**"). Anything else
// ("**/*.md", "*/*/**", "src/**") leaves some sequence unmatched.
bool MatchesEveryDescendant(const std::vector<std::string_view>& segments, std::size_t from) {
  bool any_segments = false;
  std::size_t single = 0;
  for (std::size_t i = from; i < segments.size(); ++i) {
    if (segments[i] == kAnySegments) {
      any_segments = true;
    } else if (segments[i] == "*") {
      ++single;
    } else {
      return false;
    }
  }
  return any_segments && single <= 1;
}

}  // namespace

bool GlobMatches(std::string_view glob, std::string_view normalized_path) {
  if (!ValidateGlob(glob) || !IsValidPath(normalized_path)) return false;
  const std::vector<std::string_view> segments = Split(glob);
  const std::vector<bool> states = LiveStates(segments, normalized_path);
  return !states.empty() && states[segments.size()];
}

bool GrantReaches(const std::vector<std::string>& globs, std::string_view normalized_dir) {
  if (!IsValidPath(normalized_dir)) return false;
  for (const std::string& glob : globs) {
    if (!ValidateGlob(glob)) continue;
    // Every live state can still be completed: each remaining segment matches some name.
    if (!LiveStates(Split(glob), normalized_dir).empty()) return true;
  }
  return false;
}

bool GrantCoversSubtree(const std::vector<std::string>& globs, std::string_view normalized_dir) {
  if (!IsValidPath(normalized_dir)) return false;
  for (const std::string& glob : globs) {
    if (!ValidateGlob(glob)) continue;
    const std::vector<std::string_view> segments = Split(glob);
    const std::vector<bool> states = LiveStates(segments, normalized_dir);
    for (std::size_t i = 0; i < states.size(); ++i) {
      if (states[i] && MatchesEveryDescendant(segments, i)) return true;
    }
  }
  return false;
}

bool GrantAllows(const std::vector<std::string>& globs, std::string_view normalized_path,
                 Access access) {
  if (!IsValidPath(normalized_path)) return false;
  const bool protected_write = access == Access::kWrite && IsProtectedPath(normalized_path);
  for (const std::string& glob : globs) {
    if (protected_write) {
      // Only an exact, wildcard-free grant of this very path: approving "**" or "*.toml" must
      // never have meant "and rewrite my git hooks".
      if (IsLiteralGlob(glob) && glob == normalized_path) return true;
    } else if (GlobMatches(glob, normalized_path)) {
      return true;
    }
  }
  return false;
}

}  // namespace anvil
