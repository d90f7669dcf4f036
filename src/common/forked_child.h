// The rest of a forked child that runs this program's own code without an exec (the exec
// broker and its warm jobs, forks of the gateway; `anvil run`'s gateway, a fork of `anvil`).
#pragma once

#include <unistd.h>

namespace anvil {

// `body`'s result is the child's exit status, taken with _exit: none of the parent's exit
// handlers or static destructors run in the child. An exception that escapes `body` ends the
// child (std::terminate, as in a program of its own) instead of unwinding into the frames and
// the catch handlers it shares with the parent, which would then run the parent's code there.
template <typename Body>
[[noreturn]] void RunForkedChild(Body&& body) noexcept {
  _exit(body());
}

}  // namespace anvil
