// Whether one plugin may run, and with what: the checks every front end (`anvil run`,
// `anvil serve`, `anvil mcp`) makes before a plugin host starts, in one place, because their
// order is a security property (threat model T8):
//   0. no sandboxed command's run left the workspace (or a subtree it holds, or the plugin's
//      directory) unchecked (CheckNothingUnchecked, policy/unchecked_subtrees.h): what lies
//      there may be the command's Anvil.toml, anvil.lock or code;
//   1. the manifest's entry file is a regular file inside the plugin (CheckManifestEntry);
//   2. anvil.lock, when it names the plugin, matches its files (CheckLock);
//   3. the signature, when there is one (or when one is required), is by a trusted key over
//      this manifest (CheckSignature): a forged origin refuses before anyone is asked;
//   4. the grant stored for this exact manifest hash and this copy (LookupGrant); without one,
//      the person must be asked (ConsentText), and only a yes (ApproveAdmission) admits it.
// The host is then handed the files that were checked (anvil.lock's, or the copy the grant was
// found for), so a swap after these checks runs nothing.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/result.h"
#include "policy/grant.h"
#include "policy/grant_store.h"
#include "policy/manifest.h"
#include "session/plugin_catalog.h"

namespace anvil::session {

enum class AdmissionVerdict {
  kAdmitted,      // `grant` is set: start the host with it and `pinned_files`
  kNeedsConsent,  // no grant for this manifest and copy: ask (ConsentText), then Approve
  kRefused,       // the files are not what they claim to be (steps 0-3, or a file of the copy that
                  // is not a plain file of the plugin, "denied"): never ask
  kFailed,        // the grant store or the plugin's files could not be read
};

// The check of AdmitPlugin that decided a verdict other than kAdmitted.
enum class AdmissionStep {
  kNone,
  kUnchecked,  // step 0
  kEntry,      // step 1
  kLock,       // step 2
  kSignature,  // step 3
  kGrant,      // step 4: the grant store, the copy's files, or no grant (kNeedsConsent)
};

struct Admission {
  AdmissionVerdict verdict = AdmissionVerdict::kFailed;
  AdmissionStep stopped_at = AdmissionStep::kNone;
  std::optional<Error> error;  // kRefused, kFailed
  std::string signer;          // the trusted key's name; empty when unsigned
  GrantLookup lookup;          // from kNeedsConsent on: previous grant, copy, other copy
  std::optional<Grant> grant;  // kAdmitted
  // The files the host may run (relative path -> SHA-256): anvil.lock's when it pins the
  // plugin, else the copy the grant was looked up for.
  std::map<std::string, std::string> pinned_files;
};

struct AdmissionRequest {
  std::string workspace;   // canonical
  std::string plugin_dir;  // canonical
  bool require_signed = false;
  // The catalog checked the entry file when it loaded the manifest (DiscoverPlugins); a front
  // end that loaded the manifest itself leaves this false.
  bool entry_checked = false;
};

// Step 0: "denied" naming the subtree and what to do, or an unreadable record ("invalid").
Status CheckNothingUnchecked(const AdmissionRequest& request);

// Steps 0-4. `store`: the user's grant store (GrantStore::Open).
Admission AdmitPlugin(const AdmissionRequest& request, const Manifest& manifest, GrantStore& store);

// After a yes (or --approve) to kNeedsConsent: records the manifest's requested permissions for
// this copy and admits the plugin with them. Any other verdict is left as it is.
Status ApproveAdmission(const AdmissionRequest& request, const Manifest& manifest,
                        GrantStore& store, Admission& admission);

// Why plugin `plugin_id` (in `plugin_dir`) is not admitted by `now` (any verdict but
// kAdmitted), for the user: the check that stopped it and the fix. `ran`: it was admitted
// earlier in this session (so a missing grant was revoked, not never given).
struct AdmissionLoss {
  std::string code;     // what a command refused for it is answered: consent_required, unavailable
  std::string reason;   // a few words: the reason recorded for its host's end (audit log)
  std::string message;  // "plugin ID ...", with what to do
};
AdmissionLoss DescribeAdmissionLoss(const std::string& plugin_id, const std::string& plugin_dir,
                                    const Admission& now, bool ran);

}  // namespace anvil::session
