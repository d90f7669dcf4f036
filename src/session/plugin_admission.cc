#include "session/plugin_admission.h"

#include <utility>
#include <vector>

#include "linux/unchecked_run.h"
#include "policy/unchecked_subtrees.h"

namespace anvil::session {

namespace {

Admission Stopped(AdmissionVerdict verdict, Error error) {
  Admission a;
  a.verdict = verdict;
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
    return Stopped(AdmissionVerdict::kRefused, s.error());
  }
  if (!request.entry_checked) {
    if (auto entry = CheckManifestEntry(request.plugin_dir, manifest); !entry) {
      return Stopped(AdmissionVerdict::kRefused, entry.error());
    }
  }
  auto pinned = CheckLock(request.workspace, request.plugin_dir, manifest);
  if (!pinned) return Stopped(AdmissionVerdict::kRefused, pinned.error());
  auto signature = CheckSignature(request.plugin_dir, manifest, request.require_signed);
  if (!signature) return Stopped(AdmissionVerdict::kRefused, signature.error());
  auto lookup = LookupGrant(store, request.workspace, manifest, request.plugin_dir);
  if (!lookup) {
    // Hashing the copy refuses what is not a plain file of the plugin (a symlinked module):
    // a refusal like the steps above; anything else (the store, I/O) is a failure.
    return Stopped(
        lookup.error().code == "denied" ? AdmissionVerdict::kRefused : AdmissionVerdict::kFailed,
        lookup.error());
  }

  Admission a;
  a.signer = signature->signer;
  a.pinned_files = std::move(*pinned);
  // Not pinned by anvil.lock: the host still runs only the code the grant was found for.
  if (a.pinned_files.empty()) a.pinned_files = lookup->files;
  a.grant = lookup->grant;
  a.lookup = std::move(*lookup);
  a.verdict = a.grant ? AdmissionVerdict::kAdmitted : AdmissionVerdict::kNeedsConsent;
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
  return Ok();
}

}  // namespace anvil::session
