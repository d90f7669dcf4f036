// The files a tool of the executable policy table needs in order to start (threat model T3): its
// executable, its ELF interpreter, the shared libraries the dynamic loader resolves for it, and
// the loader's cache. sys.exec's runner shows the tool these and nothing else of the system (no
// /etc, no /usr as a whole).
//
// Resolved by the trusted side (the exec broker, outside any sandbox), once per tool and again
// when the executable changes: the interpreter named in the ELF file is run as `INTERP --list
// PROGRAM` with an empty environment (what ldd does; no code of the program runs, and no
// LD_LIBRARY_PATH or LD_PRELOAD of anyone's can steer it), and its answer is parsed. The paths are
// the ones the loader opens, symlinks included, so the loader inside the view finds the same
// files by the same names.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace anvil {

// Identity of an executable file: its runtime is resolved again when this changes (an upgrade).
struct ProgramIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  std::int64_t mtime_sec = 0;
  long mtime_nsec = 0;
  off_t size = 0;
  bool operator==(const ProgramIdentity&) const = default;
};

struct ToolRuntime {
  std::string program;             // absolute path of the executable
  ProgramIdentity identity;        // of `program` when resolved
  std::vector<std::string> files;  // absolute paths: program, interpreter, libraries, ld.so.cache
};

// PT_INTERP of an ELF image's first bytes (enough to hold the program headers): "" for a static
// executable; "invalid" for something that is not a 64-bit or 32-bit little-endian ELF file or
// whose interpreter is not an absolute path.
Result<std::string> ElfInterpreter(std::string_view image);

// The absolute paths in the output of `ld.so --list`: "name => /path (0x...)" and "/path (0x...)"
// lines; the vDSO (no path) is skipped. "not_found" when a library was not found, "invalid" for
// a line of another shape.
Result<std::vector<std::string>> ParseLoaderList(std::string_view output);

// Resolves `program` (absolute) on the host; `extra_files` (absolute; skipped when missing) are
// added. Errors: "not_found", "sandbox" (the loader failed or said something unexpected).
Result<ToolRuntime> ResolveToolRuntime(const std::string& program,
                                       const std::vector<std::string>& extra_files = {});

// The identity of an open file (fstat).
Result<ProgramIdentity> IdentityOf(int fd);

}  // namespace anvil
