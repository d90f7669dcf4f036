#include "linux/unchecked_run.h"

#include <utility>

namespace anvil {

Result<UncheckedRun> UncheckedRun::Start(const std::vector<std::string>& roots) {
  UncheckedRun run;
  run.dir_ = UncheckedRecordsDir();
  run.roots_ = roots;
  if (run.dir_.empty()) return run;  // no home: nothing was recorded, nothing can be
  auto loaded = LoadUncheckedRecords(run.dir_);
  if (!loaded) return tl::unexpected(loaded.error());
  run.loaded_ = std::move(*loaded);
  std::vector<UncheckedRecord> records;
  for (const auto& l : run.loaded_) records.push_back(l.record);
  run.suspect_ = SuspectUncheckedSubtrees(records, roots);
  return run;
}

void UncheckedRun::Finish(SandboxOutcome& out, bool git_checked) const {
  if (dir_.empty()) return;
  UncheckedFacts facts;
  facts.roots = roots_;
  for (const auto& u : out.git.unwalked) facts.unwalked.push_back({u.path, u.why});
  facts.unwalked_total = out.git.unwalked_total;
  facts.check_error = out.git.check_error;
  facts.quarantine_failures = out.git.quarantine_failures;
  for (const ConfigQuarantine& q : out.git.protected_names) {
    if (q.moved_to.empty()) facts.names_left.push_back({q.path, q.failure});
  }
  if (out.workspace_config && out.workspace_config->moved_to.empty()) {
    facts.names_left.push_back({out.workspace_config->path, out.workspace_config->failure});
  }
  if (auto record = UncheckedAfterRun(facts)) {
    if (auto s = SaveUncheckedRecord(dir_, *record); !s) {
      if (!out.git.check_error.empty()) out.git.check_error += "; ";
      out.git.check_error +=
          "the record that keeps plugins out of what was not checked could "
          "not be written (" +
          s.error().ToString() + ")";
    }
    return;
  }
  if (!git_checked) return;
  // Best effort: a record left in place only keeps refusing until a later run resolves it.
  for (const auto& l : loaded_) (void)ResolveUncheckedRecord(dir_, l, roots_);
}

}  // namespace anvil
