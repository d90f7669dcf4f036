#include "policy/program_lookup.h"

#include <algorithm>

#include "policy/display_text.h"
#include "policy/git_paths.h"
#include "policy/sandbox_policy.h"
#include "policy/shell_words.h"

namespace anvil {
namespace {

// A PATH value's entries, as execvp reads them: every ':' separates, so a leading, trailing or
// doubled ':' is an empty entry (the working directory).
std::vector<std::string_view> Entries(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t colon = path.find(':', start);
    if (colon == std::string_view::npos) {
      out.push_back(path.substr(start));
      return out;
    }
    out.push_back(path.substr(start, colon - start));
    start = colon + 1;
  }
}

std::string_view WithoutTrailingSlashes(std::string_view entry) {
  while (entry.size() > 1 && entry.back() == '/') entry.remove_suffix(1);
  return entry;
}

std::vector<LookupPath> PathsOf(const ProgramSearch& search) {
  if (search.paths.empty()) return {LookupPath{std::string(kDefaultProgramPath), {}, {}}};
  return search.paths;
}

bool Holds(const ProgramSearch& search, std::string_view dir, std::string_view name) {
  return search.facts.holds && search.facts.holds(std::string(dir), std::string(name));
}

std::string ShownEntry(std::string_view entry) {
  return entry.empty() ? "an empty entry (the working directory)"
                       : "`" + SanitizeForDisplay(entry, 120) + "`";
}

std::string ShownPath(std::string_view path) { return SanitizeForDisplay(path, 200); }

// Whether the sandboxed command may write into `entry` (absolute, not a system directory): it
// lies in a writable root, by its name or once its links are resolved. Unknown is writable.
bool InWritableRoot(const ProgramSearch& search, const LookupPath& path, std::string_view entry) {
  const std::string canonical =
      search.facts.canonical ? search.facts.canonical(std::string(entry)) : std::string();
  if (canonical.empty()) return true;
  auto writable = [&path](std::string_view dir) {
    auto within = [dir](const std::string& root) { return PathIsWithin(dir, root); };
    return std::any_of(path.writable_roots.begin(), path.writable_roots.end(), within) &&
           std::none_of(path.read_only.begin(), path.read_only.end(), within);
  };
  return writable(WithoutTrailingSlashes(entry)) || writable(canonical);
}

// Whether the sandboxed command may write into the system directory `entry`: a writable root
// other than the unconfined `/` holds it, by its name or once its links are resolved
// (`--writable-root /usr/local`, a /usr/local/bin that links into the workspace). Unconfined,
// the system's directories are as writable as the user's permissions make them outside any
// sandbox: nothing a sandboxed command could plant.
bool SystemDirWritable(const ProgramSearch& search, const LookupPath& path,
                       std::string_view entry) {
  LookupPath confined = path;
  std::erase(confined.writable_roots, std::string("/"));
  if (confined.writable_roots.empty()) return false;
  // Without facts about links (a caller that judges by names alone), by its name.
  if (!search.facts.canonical) {
    ProgramSearch by_name = search;
    by_name.facts.canonical = [](const std::string& dir) { return dir; };
    return InWritableRoot(by_name, confined, WithoutTrailingSlashes(entry));
  }
  return InWritableRoot(search, confined, WithoutTrailingSlashes(entry));
}

}  // namespace

bool IsSystemProgramDir(std::string_view entry) {
  entry = WithoutTrailingSlashes(entry);
  return std::find(std::begin(kSystemProgramDirs), std::end(kSystemProgramDirs), entry) !=
         std::end(kSystemProgramDirs);
}

std::string BareNameJudgement::Why(std::string_view name) const {
  const std::string shown = QuoteShellWord(SanitizeForDisplay(name, 80));
  switch (source) {
    case BareNameSource::kSystem:
      return "";
    case BareNameSource::kShadowable:
      return shown + " is looked up on PATH=" + ShownPath(path) + ", where " + ShownEntry(entry) +
             ", a directory the sandboxed command may write into, comes before the system's " +
             shown +
             ": a program of that name put there would run instead, so it is not taken for the "
             "system's (fix: put that directory after /usr/bin and /bin in PATH)";
    case BareNameSource::kOther:
      return shown + " on PATH=" + ShownPath(path) + " is the one in " + ShownEntry(entry) +
             ", found before the system's: not the system's program";
    case BareNameSource::kNotFound:
      return shown + " is in no system directory on PATH=" + ShownPath(path) +
             ", so it is not taken for the system's program";
  }
  return "";
}

BareNameJudgement JudgeSystemProgram(std::string_view name, const ProgramSearch& search) {
  for (const LookupPath& path : PathsOf(search)) {
    BareNameJudgement judged;
    judged.path = path.value;
    for (std::string_view entry : Entries(path.value)) {
      if (IsSystemProgramDir(entry) && !SystemDirWritable(search, path, entry)) {
        if (Holds(search, WithoutTrailingSlashes(entry), name)) {
          judged.source = BareNameSource::kSystem;
          break;
        }
        continue;
      }
      // Another directory first: one the sandboxed command may write into (or a relative one,
      // the working directory) may hold the name by the time it runs; one it cannot write
      // (~/.cargo/bin, ~/.local/bin, a version manager's shims) only matters when it holds the
      // name now, and then that program, not the system's, is what runs.
      const bool relative = entry.empty() || entry[0] != '/';
      if (relative || InWritableRoot(search, path, entry)) {
        judged.source = BareNameSource::kShadowable;
        judged.entry = std::string(entry);
        break;
      }
      if (Holds(search, entry, name)) {
        judged.source = BareNameSource::kOther;
        judged.entry = std::string(entry);
        break;
      }
    }
    if (judged.source != BareNameSource::kSystem) return judged;
  }
  return {BareNameSource::kSystem, "", ""};
}

std::string SystemPathNotSystems(std::string_view argv0, const ProgramSearch& search) {
  const std::size_t slash = argv0.rfind('/');
  if (slash == std::string_view::npos || argv0[0] != '/') return "";
  // The directory as the kernel reads it, by name (`//usr/local/bin`, `/usr/local/./bin`,
  // `/usr/local/bin/../bin`): a spelling never hides a system directory.
  const std::string dir = git_paths::LexicalNormal(std::string(argv0.substr(0, slash + 1)));
  if (!IsSystemProgramDir(dir)) return "";
  for (const LookupPath& path : PathsOf(search)) {
    if (SystemDirWritable(search, path, dir)) {
      return "`" + SanitizeForDisplay(argv0, 120) + "` is in " + ShownEntry(dir) +
             ", which a writable root of the sandbox holds: a program put there would run, so it "
             "is not taken for the system's (fix: make a directory of your own the writable "
             "root, not a system directory)";
    }
  }
  return "";
}

std::string ProgramPathAllowBlocked(std::string_view argv0, const ProgramSearch* search) {
  const std::size_t slash = argv0.rfind('/');
  if (slash == std::string_view::npos) return "";
  const std::string shown = "`" + SanitizeForDisplay(argv0, 120) + "`";
  if (argv0[0] != '/') {
    return shown +
           " is named by a relative path: it is whatever file of that name is in the directory "
           "the command runs in, in any repository, so an allow rule does not speak for it "
           "(fix: answer the question)";
  }
  if (search == nullptr) return "";
  const std::string dir = git_paths::LexicalNormal(std::string(argv0.substr(0, slash + 1)));
  for (const LookupPath& path : PathsOf(*search)) {
    LookupPath confined = path;
    std::erase(confined.writable_roots, std::string("/"));
    if (confined.writable_roots.empty()) continue;
    if (InWritableRoot(*search, confined, WithoutTrailingSlashes(dir))) {
      return shown +
             " is in a writable root of the sandbox: the sandboxed command may put any program "
             "there, so an allow rule does not speak for it (fix: answer the question)";
    }
  }
  return "";
}

std::string AllowRuleBlocked(std::string_view name, const ProgramSearch& search) {
  const std::string shown = QuoteShellWord(SanitizeForDisplay(name, 80));
  for (const LookupPath& path : PathsOf(search)) {
    for (std::string_view entry : Entries(path.value)) {
      if (IsSystemProgramDir(entry) && !SystemDirWritable(search, path, entry)) {
        if (Holds(search, WithoutTrailingSlashes(entry), name)) break;
        continue;
      }
      const bool relative = entry.empty() || entry[0] != '/';
      if (relative || InWritableRoot(search, path, entry)) {
        return shown + " is looked up on PATH=" + ShownPath(path.value) + ", where " +
               ShownEntry(entry) +
               (relative ? " (relative: the working directory, in the workspace)"
                         : " (the sandboxed command may write there)") +
               " comes before " + shown +
               " is found: an allow rule does not speak for a program put there (fix: put that "
               "directory after the system directories in PATH, or answer the question)";
      }
      if (Holds(search, entry, name)) break;
    }
  }
  return "";
}

std::vector<std::string> ResolvedProgramNames(std::string_view argv0, const ProgramSearch& search) {
  std::vector<std::string> out;
  if (!search.facts.canonical) return out;
  auto add = [&out, &search](const std::string& file) {
    const std::string canonical = search.facts.canonical(file);
    const std::size_t slash = canonical.rfind('/');
    if (canonical.empty() || slash == std::string::npos || slash + 1 == canonical.size()) return;
    std::string name = canonical.substr(slash + 1);
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  };
  if (argv0.find('/') != std::string_view::npos) {
    if (argv0[0] == '/') add(std::string(argv0));
    return out;
  }
  if (argv0.empty()) return out;
  for (const LookupPath& path : PathsOf(search)) {
    for (std::string_view entry : Entries(path.value)) {
      if (entry.empty() || entry[0] != '/') continue;
      const std::string dir(WithoutTrailingSlashes(entry));
      if (Holds(search, dir, argv0)) {
        add(dir + "/" + std::string(argv0));
        break;
      }
    }
  }
  return out;
}

}  // namespace anvil
