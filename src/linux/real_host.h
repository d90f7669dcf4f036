// The real host behind the views policy/ decides over: the file system of policy/
// sandbox_policy.h (HostFs) and policy/sandbox_home.h (HomeHost), and the environment of
// policy/host_autorun.h (AutorunEnv) read from this process. The decisions stay pure, tested
// over fakes; these are what the launcher and the front ends pass them.
#pragma once

#include "policy/host_autorun.h"
#include "policy/sandbox_home.h"
#include "policy/sandbox_policy.h"

namespace anvil {

// The real host, but for bound_unix_sockets, which the launcher sets from the kernel's socket
// table (linux/host_socket_facts.h, HostSocketLocator). `mounts`: the host's mount table as
// MountTableForAliases (policy/tree_alias.h) accepted it; the caller reads it and stops when it
// cannot be had, since without it no bind alias is found.
HostFs RealHostFs(std::vector<HostMount> mounts);

// lstat, realpath and a bounded directory listing of the real file system.
HomeHost RealHomeHost();

// $HOME, the user database's home, $XDG_CONFIG_HOME, $XDG_DATA_HOME and $ZDOTDIR of this
// process.
AutorunEnv AutorunEnvFromProcess();
// `env` with each directory resolved (realpath); one that does not resolve stays as it is.
AutorunEnv CanonicalAutorunEnv(const AutorunEnv& env);

}  // namespace anvil
