#include "session/plugin_admission.h"

#include <utility>
#include <vector>

#include "fs/workspace_path.h"
#include "linux/unchecked_run.h"
#include "policy/display_text.h"
#include "policy/unchecked_subtrees.h"

namespace anvil::session {

namespace {

Admission Stopped(AdmissionVerdict verdict, AdmissionStep step, Error error) {
  Admission a;
  a.verdict = verdict;
  a.stopped_at = step;
  a.error = std::move(error);
  return a;
}

}  // namespace

Status CheckNothingUnchecked(const AdmissionRequest& request) {
  const std::string dir = UncheckedRecordsDir();
  if (dir.empty()) return Ok();
  ANVIL_TRY(loaded, LoadSettledUncheckedRecords(dir));
  std::vector<UncheckedRecord> records;
  for (auto& l : *loaded) records.push_back(std::move(l.record));
  if (auto hit = UncheckedSubtreeFor(records, request.workspace, request.plugin_dir)) {
    return Fail("denied", UncheckedRefusal(*hit));
  }
  return Ok();
}

Admission AdmitPlugin(const AdmissionRequest& request, const Manifest& manifest,
                      GrantStore& store) {
  // First: nothing of a workspace a sandboxed command left unchecked is trusted.
  if (auto s = CheckNothingUnchecked(request); !s) {
    return Stopped(AdmissionVerdict::kRefused, AdmissionStep::kUnchecked, s.error());
  }
  if (!request.entry_checked) {
    if (auto entry = CheckManifestEntry(request.plugin_dir, manifest); !entry) {
      return Stopped(AdmissionVerdict::kRefused, AdmissionStep::kEntry, entry.error());
    }
  }
  auto pinned = CheckLock(request.workspace, request.plugin_dir, manifest);
  if (!pinned) return Stopped(AdmissionVerdict::kRefused, AdmissionStep::kLock, pinned.error());
  auto signature = CheckSignature(request.plugin_dir, manifest, request.require_signed);
  if (!signature) {
    return Stopped(AdmissionVerdict::kRefused, AdmissionStep::kSignature, signature.error());
  }
  auto lookup = LookupGrant(store, request.workspace, manifest, request.plugin_dir);
  if (!lookup) {
    // Hashing the copy refuses what is not a plain file of the plugin (a symlinked module):
    // a refusal like the steps above; anything else (the store, I/O) is a failure.
    return Stopped(
        lookup.error().code == "denied" ? AdmissionVerdict::kRefused : AdmissionVerdict::kFailed,
        AdmissionStep::kGrant, lookup.error());
  }

  Admission a;
  a.signer = signature->signer;
  a.pinned_files = std::move(*pinned);
  // Not pinned by anvil.lock: the host still runs only the code the grant was found for.
  if (a.pinned_files.empty()) a.pinned_files = lookup->files;
  a.grant = lookup->grant;
  a.lookup = std::move(*lookup);
  a.verdict = a.grant ? AdmissionVerdict::kAdmitted : AdmissionVerdict::kNeedsConsent;
  a.stopped_at = a.grant ? AdmissionStep::kNone : AdmissionStep::kGrant;
  return a;
}

Status ApproveAdmission(const AdmissionRequest& request, const Manifest& manifest,
                        GrantStore& store, Admission& admission) {
  if (admission.verdict != AdmissionVerdict::kNeedsConsent) return Ok();
  if (auto s = store.Approve(request.workspace, manifest.id, manifest.sha256, manifest.requested,
                             admission.lookup.copy);
      !s) {
    admission.verdict = AdmissionVerdict::kFailed;
    admission.error = s.error();
    return s;
  }
  admission.grant = manifest.requested;
  admission.lookup.grant = manifest.requested;
  admission.verdict = AdmissionVerdict::kAdmitted;
  admission.stopped_at = AdmissionStep::kNone;
  return Ok();
}

AdmissionLoss DescribeAdmissionLoss(const std::string& plugin_id, const std::string& plugin_dir,
                                    const Admission& now, bool ran) {
  const std::string plugin = "plugin " + plugin_id;
  // A command to paste: the directory as one word a shell reads back as exactly it, and shows
  // nothing a terminal acts on (escaping it again for display would change what it runs).
  const std::string ask = "ask with anvil/requestConsent, or run `anvil plugin approve " +
                          PasteableShellWord(plugin_dir) + "`";
  const std::string error = now.error ? now.error->ToString() : std::string("no reason given");
  if (now.verdict == AdmissionVerdict::kNeedsConsent) {
    if (now.lookup.other_copy) {
      const std::string where = now.lookup.other_copy->empty()
                                    ? std::string("an earlier copy")
                                    : "the copy in " + QuotePathForMessage(*now.lookup.other_copy);
      return {"consent_required", "code not approved",
              plugin + " has code that was not approved in this workspace (the approval is for " +
                  where + "); it does not run until this code is approved (" + ask + ")"};
    }
    if (now.lookup.previous) {
      return {"consent_required", "manifest asks for more",
              plugin +
                  "'s manifest changed and asks for more than was approved; it does not "
                  "run until the new manifest is approved (" +
                  ask + ")"};
    }
    if (ran) {
      return {"consent_required", "grant revoked",
              plugin + "'s grant in this workspace was revoked; to let it run again, " + ask};
    }
    return {"consent_required", "not granted",
            plugin + " is not granted in this workspace yet (" + ask + ")"};
  }
  switch (now.stopped_at) {
    case AdmissionStep::kUnchecked:
      return {"unavailable", "refused: workspace unchecked", plugin + " is refused: " + error};
    case AdmissionStep::kEntry:
      return {"unavailable", "refused: entry file",
              plugin + " is refused: its entry file: " + error +
                  " (fix: make the manifest's entry a plain file inside the plugin, then "
                  "anvil/reload)"};
    case AdmissionStep::kLock:
      return {"unavailable", "refused by anvil.lock", plugin + " is refused: " + error};
    case AdmissionStep::kSignature:
      return {"unavailable", "refused: signature",
              plugin +
                  " is refused: its signature does not verify against your trusted "
                  "keys: " +
                  error};
    case AdmissionStep::kGrant:
    case AdmissionStep::kNone:
      break;
  }
  if (now.verdict == AdmissionVerdict::kRefused) {
    return {"unavailable", "refused: plugin files", plugin + " is refused: " + error};
  }
  return {"unavailable", "grant store unreadable",
          plugin + " cannot be admitted: the grant store or its files could not be read: " + error};
}

}  // namespace anvil::session
