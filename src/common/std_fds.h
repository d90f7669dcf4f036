// Descriptors 0, 1 and 2 open before anything else is. An editor, a CI runner or a shell
// (`anvil run ... <&-`) may start a process with some of them closed; the first socket, pipe or
// file the process then opens lands on 0, 1 or 2, where a later dup2 onto "stdin" (a no-op when
// source and target are the same descriptor, so the close-on-exec flag stays set) or a write to
// "stderr" would silently lose the control channel or corrupt a file.
#pragma once

namespace anvil {

// Opens /dev/null (read-write) onto each of 0, 1, 2 that is closed. Call first thing in main.
// False when one could not be opened: the caller exits (125) rather than run with a descriptor
// slot that its own next open would fill.
bool EnsureStandardDescriptors();

}  // namespace anvil
