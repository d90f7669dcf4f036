#include "fs/protected_names.h"

#include <algorithm>
#include <cstddef>

namespace anvil {
namespace {

constexpr char AsciiLower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool EqualsAsciiCaseInsensitive(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

}  // namespace

std::string FoldNameForLookup(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (std::size_t i = 0; i < name.size();) {
    const auto b0 = static_cast<unsigned char>(name[i]);
    if (b0 < 0x80) {
      out.push_back(AsciiLower(static_cast<char>(b0)));
      ++i;
      continue;
    }
    // Decode one UTF-8 sequence (shape only: an invalid one is just "not ASCII").
    std::size_t len = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : b0 >= 0xC0 ? 2 : 1;
    char32_t cp = len == 4 ? b0 & 0x07 : len == 3 ? b0 & 0x0F : len == 2 ? b0 & 0x1F : 0xFFFD;
    bool valid = len > 1 && i + len <= name.size();
    for (std::size_t k = 1; valid && k < len; ++k) {
      const auto b = static_cast<unsigned char>(name[i + k]);
      if ((b & 0xC0) != 0x80) valid = false;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (!valid) {
      out.push_back('\x80');
      ++i;
      continue;
    }
    i += len;
    const bool hfs_ignorable = (cp >= 0x200C && cp <= 0x200F) || (cp >= 0x202A && cp <= 0x202E) ||
                               (cp >= 0x206A && cp <= 0x206F) || cp == 0xFEFF;
    if (hfs_ignorable) continue;
    if (cp == 0x212A) {
      out.push_back('k');
    } else if (cp == 0x017F) {
      out.push_back('s');
    } else {
      out.push_back('\x80');
    }
  }
  while (!out.empty() && (out.back() == '.' || out.back() == ' ')) out.pop_back();
  return out;
}

namespace {

// `name` as compared with the tables (ASCII case aside): an ASCII name folds to itself
// lower-cased, trailing dots and spaces cut, so it is compared in place, without building the
// folded copy (the command sandbox's walk asks this of every entry); another is folded into
// `storage`.
std::string_view Compared(std::string_view name, std::string& storage) {
  const bool ascii = std::all_of(name.begin(), name.end(),
                                 [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (!ascii) {
    storage = FoldNameForLookup(name);
    return storage;
  }
  while (!name.empty() && (name.back() == '.' || name.back() == ' ')) name.remove_suffix(1);
  return name;
}

}  // namespace

std::optional<ProtectedNameKind> ProtectedNameKindOf(std::string_view name) {
  std::string folded;
  const std::string_view compared = Compared(name, folded);
  for (const ProtectedName& p : kProtectedNames) {
    if (EqualsAsciiCaseInsensitive(compared, p.name)) return p.kind;
  }
  return std::nullopt;
}

bool IsProtectedName(std::string_view name) { return ProtectedNameKindOf(name).has_value(); }

bool IsProtectedFileInName(std::string_view name) {
  std::string folded;
  const std::string_view compared = Compared(name, folded);
  return std::any_of(
      std::begin(kProtectedFilesIn), std::end(kProtectedFilesIn),
      [&](const ProtectedFileIn& f) { return EqualsAsciiCaseInsensitive(compared, f.name); });
}

bool IsProtectedFilesDirName(std::string_view name) {
  std::string folded;
  const std::string_view compared = Compared(name, folded);
  return std::any_of(
      std::begin(kProtectedFilesIn), std::end(kProtectedFilesIn),
      [&](const ProtectedFileIn& f) { return EqualsAsciiCaseInsensitive(compared, f.dir); });
}

std::optional<ProtectedNameKind> ProtectedNameKindIn(std::string_view dir, std::string_view name) {
  if (auto kind = ProtectedNameKindOf(name)) return kind;
  std::string folded_name;
  const std::string_view compared_name = Compared(name, folded_name);
  std::string folded_dir;
  std::optional<std::string_view> compared_dir;  // folded only when a file name matches
  for (const ProtectedFileIn& f : kProtectedFilesIn) {
    if (!EqualsAsciiCaseInsensitive(compared_name, f.name)) continue;
    if (!compared_dir) compared_dir = Compared(dir, folded_dir);
    if (EqualsAsciiCaseInsensitive(*compared_dir, f.dir)) return f.kind;
  }
  return std::nullopt;
}

std::optional<ProtectedNameKind> ProtectedKindOfPath(std::string_view path) {
  const auto slash = path.rfind('/');
  const std::string_view last = slash == std::string_view::npos ? path : path.substr(slash + 1);
  std::optional<ProtectedNameKind> kind;
  if (slash == std::string_view::npos) {
    kind = ProtectedNameKindOf(path);
  } else {
    const std::string_view parent = path.substr(0, slash);
    kind = ProtectedNameKindIn(parent.substr(parent.rfind('/') + 1), last);
  }
  // A `.vscode` the walk names is a symlink (policy/git_walk_step.h): its files' kind.
  if (!kind && IsProtectedFilesDirName(last)) kind = ProtectedNameKind::kEditorAutorun;
  return kind;
}

bool IsProtectedPath(std::string_view normalized_path) {
  std::size_t start = 0;
  std::string_view dir;
  while (start <= normalized_path.size()) {
    std::size_t slash = normalized_path.find('/', start);
    if (slash == std::string_view::npos) slash = normalized_path.size();
    const std::string_view name = normalized_path.substr(start, slash - start);
    if (ProtectedNameKindIn(dir, name)) return true;
    dir = name;
    start = slash + 1;
  }
  return false;
}

}  // namespace anvil
