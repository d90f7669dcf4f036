// Reading and writing the small files the trusted side keeps (manifests, anvil.lock,
// Anvil.toml, the grant store) without being steered by whoever wrote the directory: a symlink
// planted in place of the file is refused, a FIFO cannot hang the reader, and a write is
// all-or-nothing.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "common/result.h"

namespace anvil {

// Reads `name` relative to `dir_fd` (AT_FDCWD allowed). The last component is opened with
// O_NOFOLLOW (a symlink there is "denied"), the object must be a regular file ("invalid"
// otherwise), and a file over `max_bytes` is "limit". A missing file is "not_found". When
// `st_out` is non-null it receives the fstat of the opened file, so ownership checks are made
// on the object that was read, not on a second lookup of the name.
Result<std::string> ReadRegularFileNoFollow(int dir_fd, const std::string& name,
                                            std::size_t max_bytes, struct stat* st_out = nullptr);

// Reads an already opened file the same way (regular file only, at most `max_bytes`);
// `shown_name` names it in messages. For callers that open with openat2.
Result<std::string> ReadRegularFileFromFd(int fd, const std::string& shown_name,
                                          std::size_t max_bytes, struct stat* st_out = nullptr);

// Replaces `name` in `dir_fd` with `bytes` atomically: a temporary file in the same directory
// (O_EXCL, mode `mode`), full write, fsync, rename over the name, fsync of the directory. A crash
// leaves either the old file or the new one, never a torn one; on failure the temporary file is
// removed. `dir_fd` must be a directory opened O_RDONLY (not O_PATH, not AT_FDCWD): it is
// fsync'ed.
Status WriteFileAtomically(int dir_fd, const std::string& name, std::string_view bytes,
                           mode_t mode);

// The caller's home directory as Anvil's own state and config are found from it: $HOME when
// it is absolute, else the user database's entry for the effective uid; "" when neither is
// known. One rule for the grant store and the trusted keys.
std::string AnvilUserHome();
// The user database's home directory for the effective uid ("" when unknown), whatever $HOME
// says: a run started without HOME finds Anvil's state there.
std::string PasswdHome();

}  // namespace anvil
