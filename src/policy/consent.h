// Consent (threat model T8): when a plugin's request needs the user's approval, and the words
// the user reads before giving it. Pure functions; the grant store (grant_store.h) remembers
// what was approved, the session asks.
//
// Every string here comes from a plugin manifest or from a file the user does not read by
// hand, so it is treated as hostile text aimed at the prompt itself: a manifest must not be able
// to print a fake "Approved." line, clear the screen, move the cursor over a line, or reverse
// the visual order of a glob with a bidi override.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "policy/display_text.h"
#include "policy/grant.h"

namespace anvil {

// SanitizeForDisplay (policy/display_text.h) is the sanitizer for every string shown here.

// Whether approving `requested` needs the user's consent, given the grant previously approved
// for the same workspace and plugin id under any manifest hash (GrantStore::FindLatest).
//  - No previous grant: always, even for an empty request. Loading a plugin for the first time
//    is a trust decision (it can read buffers and notify), and a repository's Anvil.toml can
//    name plugins to enable, so a first load must never be silent.
//  - Otherwise: consent is needed exactly when `requested` adds something: a glob, host or
//    executable not in the previous grant (compared as exact strings: "src/**" is not assumed
//    to be covered by "**", so any rewording asks again), or net.post turning on. A request
//    that only removes permissions needs none; the caller then stores the narrower grant under
//    the new hash.
bool NeedsConsent(const std::optional<Grant>& previous, const Grant& requested);

// The consent text for a grant, in plain words, one item per line (the caller prints its own
// heading naming the plugin above it):
//
//   Read files matching:
//     - "**" (every file in the workspace)
//   Write files matching:
//     - "notes/**"
//   Connect over HTTPS (port 443 only) to:
//     - api.example.com
//   Send POST requests (upload data): no
//   Run programs:
//     - rg
//
// An empty list reads "...: nothing". A write glob that names a protected path (.git, .anvil,
// anvil.lock, Anvil.toml) is flagged, because writing it can run code or change Anvil's own
// settings. Every plugin-supplied string goes through SanitizeForDisplay, and each starts
// after a fixed "    - " prefix, so no item can forge or hide a line. Ends with a newline.
std::string DescribeGrant(const Grant& grant);

}  // namespace anvil
