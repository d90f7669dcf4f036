#include "cli/plugin_new_command.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "cli/plugin_scaffold.h"
#include "common/fd_io.h"
#include "common/flag_set.h"
#include "common/unique_fd.h"
#include "fs/file_io.h"
#include "policy/display_text.h"
#include "policy/manifest.h"

namespace anvil::cli {
namespace {

constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;

}  // namespace

CommandSpec PluginNewSpec(PluginRuntime& runtime) {
  CommandSpec spec;
  spec.name = "plugin-new";
  spec.program = "anvil plugin new";
  spec.synopsis = "[--lua|--js] NAME [DIR]";
  spec.description =
      "Create a working plugin in DIR: the manifest, an entry with one command (hello), a test you "
      "can\n"
      "run (sh DIR/test/run.sh: each case runs a command with `anvil run` on the workspace\n"
      "DIR/test/fixture), and editor support generated from this anvil's plugin API: "
      "types/anvil.lua\n"
      "and .luarc.json for lua-language-server (--lua, the default), or anvil.d.ts and "
      "jsconfig.json\n"
      "for TypeScript-aware editors and `tsc --noEmit -p jsconfig.json` (--js).";
  spec.positionals = {{"NAME"}, {"DIR", Completion::kDirectory}};
  spec.sections_before_flags = {
      {"",
       "  NAME   the plugin id: [a-z0-9][a-z0-9._-]*, at most 64 bytes, e.g. me.word-count\n"
       "  DIR    a new directory, or an empty one (default: NAME's last dot-separated part)",
       true},
  };
  spec.flags = {
      Switch("--lua", "a Lua plugin (the default)", [&runtime] { runtime = PluginRuntime::kLua; }),
      Switch("--js", "a JavaScript plugin", [&runtime] { runtime = PluginRuntime::kJs; }),
  };
  spec.examples = {
      "anvil plugin new me.word-count                 # ./word-count, Lua",
      "anvil plugin new --js me.notes plugins/notes   # plugins/notes, JavaScript",
  };
  spec.style.operands = ParseStyle::Operands::kAnywhere;
  spec.style.dash_alone_is_operand = true;
  spec.style.see_help_hint = false;  // the usage follows the error
  spec.echo = SanitizeFlagArgument;
  return spec;
}

CommandSpec PluginTypesSpec() {
  CommandSpec spec;
  spec.name = "plugin-types";
  spec.program = "anvil plugin types";
  spec.synopsis = "[PLUGIN_DIR]";
  spec.description =
      "Write the editor-support files of a plugin again, generated from this anvil's plugin API:\n"
      "anvil.d.ts (JS) or types/anvil.lua (Lua), by the manifest's runtime. jsconfig.json and\n"
      ".luarc.json are written only when missing. PLUGIN_DIR defaults to the current directory.";
  spec.positionals = {{"PLUGIN_DIR", Completion::kPluginDirectory}};
  spec.style.operands = ParseStyle::Operands::kAnywhere;
  spec.style.see_help_hint = false;  // the usage follows the error
  spec.echo = SanitizeFlagArgument;
  return spec;
}

namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

int Fail(const std::string& sub, const std::string& message) {
  std::cerr << "anvil plugin " << sub << ": " << message << "\n";
  return kExitFailed;
}

// Whether the directory open at `fd` has no entries besides . and ..
Result<bool> IsEmptyDir(int fd) {
  int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return SysFail("io", "read directory");
  DIR* dir = ::fdopendir(dup);
  if (!dir) {
    ::close(dup);
    return SysFail("io", "read directory");
  }
  bool empty = true;
  while (dirent* e = ::readdir(dir)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      empty = false;
      break;
    }
  }
  ::closedir(dir);
  return empty;
}

Status WriteAll(int fd, std::string_view bytes, const std::string& shown) {
  if (!fd_io::WriteAll(fd, bytes, fd_io::Wait::NoWait())) return SysFail("io", "write " + shown);
  return Ok();
}

// Creates the files beneath `dir_fd`, never replacing anything (O_EXCL, no symlink followed).
// On failure removes what it created, so a plugin directory is either complete or untouched.
class Creator {
 public:
  Creator(int dir_fd, std::string shown) : dir_fd_(dir_fd), shown_(std::move(shown)) {}
  ~Creator() { Rollback(); }
  Creator(const Creator&) = delete;
  Creator& operator=(const Creator&) = delete;

  // Removes what was created, newest first (files before the directories holding them).
  void Rollback() {
    if (committed_) return;
    committed_ = true;
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
      ::unlinkat(dir_fd_, it->first.c_str(), it->second ? AT_REMOVEDIR : 0);
    }
  }

  Status Create(const ScaffoldFile& file) {
    // Parent directories first ("test/fixture/src").
    for (size_t slash = file.path.find('/'); slash != std::string::npos;
         slash = file.path.find('/', slash + 1)) {
      const std::string dir = file.path.substr(0, slash);
      if (::mkdirat(dir_fd_, dir.c_str(), 0755) == 0) {
        created_.emplace_back(dir, true);
      } else if (errno != EEXIST) {
        return SysFail("io", "create " + shown_ + "/" + dir);
      }
    }
    UniqueFd fd(::openat(dir_fd_, file.path.c_str(),
                         O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, file.mode));
    if (!fd) return SysFail("io", "create " + shown_ + "/" + file.path);
    created_.emplace_back(file.path, false);
    ANVIL_RETURN_IF_ERROR(WriteAll(fd.Get(), file.contents, shown_ + "/" + file.path));
    // The mode asked for, whatever the umask took away from it (test/run.sh is executable).
    if (::fchmod(fd.Get(), file.mode) != 0 || ::fsync(fd.Get()) != 0) {
      return SysFail("io", "write " + shown_ + "/" + file.path);
    }
    return Ok();
  }
  void Commit() { committed_ = true; }

 private:
  int dir_fd_;
  std::string shown_;
  std::vector<std::pair<std::string, bool>> created_;  // (path, is a directory), in order
  bool committed_ = false;
};

void PrintListing(const std::vector<ScaffoldFile>& files) {
  size_t width = 0;
  for (const auto& f : files) {
    if (!f.what.empty()) width = std::max(width, f.path.size());
  }
  for (const auto& f : files) {
    if (f.what.empty()) continue;
    std::cout << "  " << f.path << std::string(width - f.path.size() + 2, ' ') << f.what << "\n";
  }
}

// `dir` as the user should type it in a command line ("." stays ".", a name gets "./" only if
// it could read as an option).
std::string Shown(const std::string& dir) { return dir.starts_with("-") ? "./" + dir : dir; }

}  // namespace

int RunPluginNewCommand(const std::vector<std::string>& args) {
  PluginRuntime runtime = PluginRuntime::kLua;
  const CommandSpec spec = PluginNewSpec(runtime);
  auto parsed = ParseFlags(spec, args);
  if (!parsed) {
    std::cerr << "anvil plugin new: " << parsed.error().ToString() << "\n" << RenderHelp(spec);
    return kExitUsage;
  }
  if (parsed->help) {
    std::cout << RenderHelp(spec);
    return kExitOk;
  }
  const std::vector<std::string>& positional = parsed->operands;
  if (positional.empty() || positional.size() > 2) {
    std::cerr << "anvil plugin new: invalid: needs NAME and at most one DIR\n" << RenderHelp(spec);
    return kExitUsage;
  }
  const std::string& id = positional[0];
  if (auto s = ValidatePluginId(id); !s) {
    std::cerr << "anvil plugin new: invalid: NAME is the plugin id: " << s.error().message << "\n";
    return kExitUsage;
  }
  const std::string dir = positional.size() == 2 ? positional[1] : DefaultPluginDirName(id);

  bool made_dir = false;
  if (::mkdir(dir.c_str(), 0755) == 0) {
    made_dir = true;
  } else if (errno != EEXIST) {
    return Fail("new",
                Error{errno == ENOENT ? Code::kNotFound : Code::kIo,
                      Errno("create " + dir) + " (fix: create its parent directory first)", errno}
                    .ToString());
  }
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir_fd) {
    return Fail("new", "invalid: " + Errno(dir) + " (fix: name a new or empty directory)");
  }
  if (!made_dir) {
    auto empty = IsEmptyDir(dir_fd.Get());
    if (!empty) return Fail("new", empty.error().ToString());
    if (!*empty) {
      std::cerr << "anvil plugin new: invalid: " << dir
                << " exists and is not empty (fix: name a new or empty directory; nothing "
                   "was written)\n";
      return kExitUsage;
    }
  }
  const auto files = PluginScaffold(id, runtime);
  {
    Creator creator(dir_fd.Get(), dir);
    Status written = Ok();
    for (const auto& f : files) {
      if (written = creator.Create(f); !written) break;
    }
    if (written && ::fsync(dir_fd.Get()) != 0) written = SysFail("io", "sync " + dir);
    if (!written) {
      creator.Rollback();
      if (made_dir) ::rmdir(dir.c_str());
      return Fail("new", written.error().ToString() + " (nothing was kept)");
    }
    creator.Commit();
  }
  std::cout << "created plugin " << id << " (" << ToString(runtime) << ") in " << dir << ":\n";
  PrintListing(files);
  const std::string shown = Shown(dir);
  std::cout << "\nnext:\n"
            << "  anvil run --workspace " << shown << "/test/fixture " << shown
            << " hello    # asks you, then runs the command\n"
            << "  sh " << shown << "/test/run.sh    # runs its tests\n";
  return kExitOk;
}

int RunPluginTypesCommand(const std::vector<std::string>& args) {
  const CommandSpec spec = PluginTypesSpec();
  auto parsed = ParseFlags(spec, args);
  if (!parsed) {
    std::cerr << "anvil plugin types: " << parsed.error().ToString() << "\n" << RenderHelp(spec);
    return kExitUsage;
  }
  if (parsed->help) {
    std::cout << RenderHelp(spec);
    return kExitOk;
  }
  if (parsed->operands.size() > 1) {
    std::cerr << "anvil plugin types: invalid: takes one PLUGIN_DIR\n" << RenderHelp(spec);
    return kExitUsage;
  }
  const std::string dir = parsed->operands.empty() ? "." : parsed->operands[0];
  auto manifest = LoadManifest(dir);
  if (!manifest) {
    std::cerr << "anvil plugin types: " << manifest.error().ToString() << "\n";
    return kExitUsage;
  }
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) return Fail("types", "io: " + Errno(dir));
  const auto files = EditorSupportFiles(manifest->runtime);
  for (size_t i = 0; i < files.size(); ++i) {
    const ScaffoldFile& f = files[i];
    const auto slash = f.path.rfind('/');
    const std::string sub = slash == std::string::npos ? "" : f.path.substr(0, slash);
    const std::string name = slash == std::string::npos ? f.path : f.path.substr(slash + 1);
    if (!sub.empty() && ::mkdirat(dir_fd.Get(), sub.c_str(), 0755) != 0 && errno != EEXIST) {
      return Fail("types", "io: " + Errno("create " + dir + "/" + sub));
    }
    UniqueFd parent(sub.empty() ? ::fcntl(dir_fd.Get(), F_DUPFD_CLOEXEC, 0)
                                : ::openat(dir_fd.Get(), sub.c_str(),
                                           O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!parent) return Fail("types", "io: " + Errno(dir + "/" + sub));
    // The generated declarations (the first file) follow this anvil; the editor configuration
    // is the author's once written.
    if (i > 0) {
      struct stat st {};
      if (::fstatat(parent.Get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        std::cout << "kept    " << dir << "/" << f.path << "\n";
        continue;
      }
    }
    if (auto s = WriteFileAtomically(parent.Get(), name, f.contents, f.mode); !s) {
      return Fail("types", s.error().ToString());
    }
    std::cout << "wrote   " << dir << "/" << f.path << "  (" << f.what << ")\n";
  }
  return kExitOk;
}

}  // namespace anvil::cli
