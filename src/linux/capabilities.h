// Drops every capability (bounding, ambient, effective, permitted, inheritable) so that a
// command running as uid 0 — root on the host, or root of its own user namespace — gains no
// privilege from exec.
#pragma once

#include "common/result.h"

namespace anvil {

Status DropAllCapabilities();

}  // namespace anvil
