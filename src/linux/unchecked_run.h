// One sandbox run's share of the record of unchecked subtrees (policy/unchecked_subtrees.h):
// before the run, the subtrees earlier runs left unchecked that lie in this run's writable
// roots (its git walk takes what they hold as the command's work), and a pending record of its
// own naming its whole roots, held under a lock while the run lasts; after it, what this run's
// check could not vouch for is added to the record and the pending one removed, or, when it
// vouched for everything, the subtrees it walked leave the record. An `anvil` that is killed
// (SIGKILL) before its check, or that cannot write what the check found (a full disk), leaves
// the pending record: its roots stay unchecked, never silently trusted.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "linux/sandbox_launch.h"
#include "policy/unchecked_subtrees.h"

namespace anvil {

// Whether `name` in `dir_fd` is held by a run still going (its write lock is taken, which
// needs a descriptor open for writing: a lock taken through a read-only one, as a sandboxed
// command seeing the state directory could, makes no record pass for live): for
// LoadUncheckedRecords.
bool UncheckedRecordIsLive(int dir_fd, const std::string& name);

// The records plugin admission refuses for: every record but the pending ones of runs still
// going (those are resolved by their own run). `gone`: as LoadUncheckedRecords'.
Result<std::vector<LoadedUncheckedRecord>> LoadSettledUncheckedRecords(
    const std::string& dir, std::vector<LoadedUncheckedRecord>* gone = nullptr);

class UncheckedRun {
 public:
  // Reads the records (an unreadable one fails the run: it may stand for an unchecked subtree)
  // and writes the pending one: a state directory that is not this user's, or that this user
  // may not write, holds no record for anyone (none is written); any other failure (a full
  // disk) fails the run, which would otherwise be invisible to the runs started meanwhile.
  static Result<UncheckedRun> Start(const std::vector<std::string>& roots);

  UncheckedRun(UncheckedRun&&) = default;
  UncheckedRun& operator=(UncheckedRun&&) = default;
  // A run that ends without Finish (a set-up failure, a command that could not be executed:
  // nothing ran) removes its pending record.
  ~UncheckedRun();

  // The subtrees of earlier records inside this run's roots.
  const std::vector<std::string>& Suspect() const { return suspect_; }

  // The pending records of the other runs still going whose roots overlap this run's, each with
  // what it takes as the user's (unset while it has not said: its command has not started); a
  // record that cannot be read stands for one that trusts nothing in this run's roots. Also the
  // records killed runs left that say what they trusted. For GitGuard::Prepare, asked once its
  // walk is done.
  std::vector<LiveRun> LiveOthers() const;

  // Says what this run takes as the user's (GitGuard::Trusted), before its command starts: the
  // pending record is replaced by one that holds it, locked as the old one was. A run without a
  // pending record (no state directory it can write) has nothing to say it in. An error when it
  // cannot be written: the run must not start (a run started meanwhile would trust what this
  // run's command makes).
  Status Publish(const RunTrust& trust);

  // Once the checks after the run are done: records what `out` says was left unchecked, or
  // resolves what this run walked when its check was complete (`git_checked`: the git check
  // ran); then removes the pending record, unless what was found could not be written (it
  // then stands for it, and out.git.check_error says so).
  void Finish(SandboxOutcome& out, bool git_checked);

  // In the sandbox's init, right after the clone: its copy of the pending record's descriptor
  // is closed (the lock stays with `anvil`'s), so that an `anvil` killed outright leaves the
  // record unlocked at once, not when the init's death signal has been delivered too.
  void CloseInChild() {
    pending_.clear();
    pending_fd_.Reset();
  }

 private:
  UncheckedRun() = default;

  std::string dir_;
  std::vector<std::string> roots_;
  std::vector<LoadedUncheckedRecord> loaded_;
  std::vector<std::string> suspect_;
  // Killed runs' pending records that say what those runs trusted: LiveOthers gives them as
  // runs still going (instead of suspect_, which takes everything below the roots' tops).
  std::vector<LiveRun> settled_trust_;
  std::string pending_;  // the pending record's name, "" when none could be written
  UniqueFd pending_fd_;  // holds its lock while the run lasts
};

}  // namespace anvil
