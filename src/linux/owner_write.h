// A change the run makes after its command in a directory the command could write (moving a
// planted entry aside, removing a placeholder): a command of the same user can take the owner's
// write or search permission off that directory (`chmod 555 .` in the workspace), which would
// keep whatever it planted in place. The caller owns such a directory, so it may give the owner
// both back for the one change; the mode the command left is set again afterwards.
#pragma once

#include <functional>

namespace anvil {

// Runs `change` (0, or -1 with errno set: a system call's way) on an entry of the directory
// `dir` (any descriptor of it, O_PATH too). When it fails with EACCES or EPERM, the caller owns
// `dir`, and its owner lacks write or search permission, retries it once with both given to
// the owner, then sets the mode back. Returns the last result, errno as `change` left it.
int WithOwnerWrite(int dir, const std::function<int()>& change);

// For as long as it lives: the owner's read, write and search permission on the directory
// `dir` (any descriptor of it), when the caller owns it and the owner lacks one; the mode it had
// is set again at the end. For a check that must look at and change entries (Anvil.toml's).
class OwnerAccess {
 public:
  explicit OwnerAccess(int dir);
  ~OwnerAccess();
  OwnerAccess(const OwnerAccess&) = delete;
  OwnerAccess& operator=(const OwnerAccess&) = delete;

 private:
  int dir_ = -1;
  unsigned mode_ = 0;
  bool changed_ = false;
};

}  // namespace anvil
