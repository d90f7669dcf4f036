// A run's pending record (linux/unchecked_run.h): while the run lasts it keeps nobody out (its
// lock is held); a run that ends without its check (a set-up failure) removes it; an `anvil`
// killed before its check leaves it, and it then keeps plugins out of the whole roots until a
// run there checks them.
#include "linux/unchecked_run.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace anvil {
namespace unchecked_run_test {
namespace {

class UncheckedRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/anvil-unchecked-run-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    base_ = pattern;
    ws_ = base_ + "/ws";
    std::filesystem::create_directories(ws_);
    const char* old = std::getenv("XDG_STATE_HOME");
    if (old != nullptr) old_state_ = old;
    ::setenv("XDG_STATE_HOME", (base_ + "/state").c_str(), 1);
    dir_ = UncheckedRecordsDir();
    ASSERT_EQ(dir_, base_ + "/state/anvil/unchecked");
  }
  void TearDown() override {
    if (old_state_) {
      ::setenv("XDG_STATE_HOME", old_state_->c_str(), 1);
    } else {
      ::unsetenv("XDG_STATE_HOME");
    }
    std::filesystem::remove_all(base_);
  }
  size_t Settled() {
    auto loaded = LoadSettledUncheckedRecords(dir_);
    EXPECT_TRUE(loaded) << loaded.error().ToString();
    return loaded ? loaded->size() : 0;
  }
  size_t All() {
    auto loaded = LoadUncheckedRecords(dir_);
    EXPECT_TRUE(loaded) << loaded.error().ToString();
    return loaded ? loaded->size() : 0;
  }
  static SandboxOutcome Complete() {
    SandboxOutcome out;
    out.kind = SandboxOutcome::Kind::kExited;
    out.git.checked_after = true;
    return out;
  }

  std::string base_, ws_, dir_;
  std::optional<std::string> old_state_;
};

// Many runs starting at once: a reader (plugin admission, another run's start) never finds a
// pending record half made (empty, or not yet locked) and never fails for one.
TEST_F(UncheckedRunTest, RunsStartingAtOnceNeverShowAReaderAHalfMadeRecord) {
  std::vector<pid_t> starters;
  for (int p = 0; p < 4; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0; i < 150; ++i) {
        auto run = UncheckedRun::Start({ws_});
        if (!run) ::_exit(1);
        SandboxOutcome out = Complete();
        run->Finish(out, true);
      }
      ::_exit(0);
    }
    starters.push_back(pid);
  }
  int failures = 0;
  std::string first_failure;
  for (int i = 0; i < 600; ++i) {
    auto loaded = LoadSettledUncheckedRecords(dir_);
    if (!loaded) {
      ++failures;
      if (first_failure.empty()) first_failure = loaded.error().ToString();
    } else {
      EXPECT_TRUE(loaded->empty());
    }
  }
  for (pid_t pid : starters) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  EXPECT_EQ(failures, 0) << first_failure;
  EXPECT_EQ(All(), 0u);  // every run took its own record with it
}

TEST_F(UncheckedRunTest, APendingRecordKeepsOutNobodyWhileTheRunLastsAndGoesWithIt) {
  {
    auto run = UncheckedRun::Start({ws_});
    ASSERT_TRUE(run) << run.error().ToString();
    EXPECT_EQ(All(), 1u);      // written
    EXPECT_EQ(Settled(), 0u);  // but live: plugin admission and other runs leave it
    SandboxOutcome out = Complete();
    run->Finish(out, true);
    EXPECT_EQ(All(), 0u);
    EXPECT_TRUE(out.git.check_error.empty()) << out.git.check_error;
  }
  {
    auto run = UncheckedRun::Start({ws_});  // ended without Finish: nothing ran
    ASSERT_TRUE(run);
    EXPECT_EQ(All(), 1u);
  }
  EXPECT_EQ(All(), 0u);
}

// The attack: `anvil` killed after the command ran, before its check (or unable to write what
// the check found). What it leaves keeps plugins out of its roots until a run there resolves it.
TEST_F(UncheckedRunTest, AKilledRunLeavesItsRootsUnchecked) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto run = UncheckedRun::Start({ws_});
    ::_exit(run ? 0 : 1);  // no destructor, no Finish: as SIGKILL leaves it
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto loaded = LoadSettledUncheckedRecords(dir_);
  ASSERT_TRUE(loaded);
  ASSERT_EQ(loaded->size(), 1u);
  std::vector<UncheckedRecord> records{loaded->front().record};
  auto hit = UncheckedSubtreeFor(records, ws_ + "/proj", "");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->subtree.path, ws_);
  EXPECT_NE(hit->subtree.why.find("did not finish"), std::string::npos);
  // A run elsewhere resolves nothing here; a complete run over the workspace does.
  std::filesystem::create_directories(base_ + "/other");
  {
    auto run = UncheckedRun::Start({base_ + "/other"});
    ASSERT_TRUE(run);
    SandboxOutcome out = Complete();
    run->Finish(out, true);
  }
  EXPECT_EQ(Settled(), 1u);
  {
    auto run = UncheckedRun::Start({ws_});
    ASSERT_TRUE(run);
    EXPECT_EQ(run->Suspect(), std::vector<std::string>{ws_});
    SandboxOutcome out = Complete();
    run->Finish(out, true);
  }
  EXPECT_EQ(All(), 0u);
}

// What an incomplete check found replaces the pending record; a run whose check could not
// finish records it, and the next complete one there clears it.
// What another run still going takes as the user's: unset until it says it, then what it said,
// still live (it keeps nobody out) and still its lock's; only runs over overlapping roots, never
// the asking run's own record.
TEST_F(UncheckedRunTest, ARunSaysWhatItTrustsToTheRunsStartedMeanwhile) {
  std::filesystem::create_directories(ws_ + "/sub");
  auto first = UncheckedRun::Start({ws_});
  ASSERT_TRUE(first) << first.error().ToString();
  auto second = UncheckedRun::Start({ws_ + "/sub"});
  ASSERT_TRUE(second) << second.error().ToString();
  auto elsewhere = UncheckedRun::Start({base_ + "/other"});
  ASSERT_TRUE(elsewhere);
  auto live = second->LiveOthers();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].roots, std::vector<std::string>{ws_});
  EXPECT_FALSE(live[0].trusted);

  ASSERT_TRUE(first->Publish(RunTrust{{{7, 8}}, {ws_ + "/sub/Anvil.toml"}}));
  live = second->LiveOthers();
  ASSERT_EQ(live.size(), 1u);
  ASSERT_TRUE(live[0].trusted);
  EXPECT_EQ(live[0].trusted->ids, (std::vector<GitFileId>{{7, 8}}));
  EXPECT_EQ(live[0].trusted->names, std::vector<std::string>{ws_ + "/sub/Anvil.toml"});
  EXPECT_EQ(Settled(), 0u) << "a published record is still live";
  EXPECT_EQ(first->LiveOthers().size(), 1u);  // the second's, not its own
  EXPECT_TRUE(elsewhere->LiveOthers().empty());

  SandboxOutcome out = Complete();
  first->Finish(out, true);
  EXPECT_TRUE(second->LiveOthers().empty());
}

// Records of workspaces since removed (killed runs' in a temporary directory) are left out of
// every load; the next run's start removes them, so no later start reads them again. A record
// of a workspace that is still there stays, and still counts.
TEST_F(UncheckedRunTest, RecordsOfARemovedWorkspaceAreRemovedByTheNextStart) {
  const std::string removed = base_ + "/removed";
  std::filesystem::create_directories(removed);
  ASSERT_TRUE(SaveUncheckedRecord(dir_, {{removed}, {{removed + "/x", "a"}}}));
  ASSERT_TRUE(SaveUncheckedRecord(dir_, {{ws_}, {{ws_ + "/y", "b"}}}));
  std::filesystem::remove_all(removed);
  const std::string gone_file = dir_ + "/" + UncheckedRecordFileName({removed});
  ASSERT_TRUE(std::filesystem::exists(gone_file));
  EXPECT_EQ(All(), 1u);
  {
    auto run = UncheckedRun::Start({ws_});
    ASSERT_TRUE(run) << run.error().ToString();
    EXPECT_EQ(run->Suspect(), std::vector<std::string>{ws_ + "/y"});
    EXPECT_FALSE(std::filesystem::exists(gone_file));
  }
  EXPECT_EQ(All(), 1u);
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/" + UncheckedRecordFileName({ws_})));
}

// A workspace outside the temporary directories may be missing only for a while (a drive
// unmounted): its record is left out while it is missing, never removed, and applies again
// once the workspace is back.
TEST_F(UncheckedRunTest, ARecordOfAMissingWorkspaceElsewhereIsKeptForItsReturn) {
  const std::string cwd = std::filesystem::current_path();
  for (const char* tmp : {"/tmp/", "/var/tmp/", "/dev/shm/"}) {
    if (cwd.starts_with(tmp)) GTEST_SKIP() << "SKIPPED: the build is in a temporary directory";
  }
  std::string pattern_text = cwd + "/anvil-unchecked-away-XXXXXX";
  std::vector<char> pattern(pattern_text.begin(), pattern_text.end());
  pattern.push_back('\0');
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const std::string away = pattern.data();
  ASSERT_TRUE(SaveUncheckedRecord(dir_, {{away}, {{away + "/x", "a"}}}));
  const std::string file = dir_ + "/" + UncheckedRecordFileName({away});
  std::filesystem::rename(away, away + ".elsewhere");
  ASSERT_TRUE(SaveUncheckedRecord(dir_, {{ws_}, {{ws_ + "/y", "b"}}}));  // Save's sweep
  EXPECT_EQ(All(), 1u);
  {
    auto run = UncheckedRun::Start({ws_});  // the start's
    ASSERT_TRUE(run) << run.error().ToString();
  }
  EXPECT_TRUE(std::filesystem::exists(file));
  std::filesystem::rename(away + ".elsewhere", away);
  EXPECT_EQ(All(), 2u);
  std::filesystem::remove_all(away);
}

TEST_F(UncheckedRunTest, AnIncompleteCheckIsRecordedInsteadOfThePendingRecord) {
  auto run = UncheckedRun::Start({ws_});
  ASSERT_TRUE(run);
  SandboxOutcome out = Complete();
  out.git.unwalked = {{ws_ + "/deep", "past the 'depth' bound (3)"}};
  out.git.unwalked_total = 1;
  run->Finish(out, true);
  auto loaded = LoadSettledUncheckedRecords(dir_);
  ASSERT_TRUE(loaded);
  ASSERT_EQ(loaded->size(), 1u);
  ASSERT_EQ(loaded->front().record.subtrees.size(), 1u);
  EXPECT_EQ(loaded->front().record.subtrees[0].path, ws_ + "/deep");
}

// The attack: a sandboxed command whose view holds the state directory (a workspace of $HOME)
// sees the records read-only. A lock it takes through a read-only descriptor must not make a
// record pass for a live run's pending one, which plugin admission leaves out: a settled
// record, and the pending record an `anvil` killed before its check left, both keep counting.
TEST_F(UncheckedRunTest, ALockTakenThroughAReadOnlyDescriptorHidesNoRecord) {
  {
    auto run = UncheckedRun::Start({ws_});
    ASSERT_TRUE(run);
    SandboxOutcome out = Complete();
    out.git.unwalked = {{ws_ + "/deep", "past the 'depth' bound (3)"}};
    out.git.unwalked_total = 1;
    run->Finish(out, true);
  }
  std::filesystem::create_directories(base_ + "/other");
  const pid_t child = ::fork();  // an `anvil` killed before its check
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(UncheckedRun::Start({base_ + "/other"}) ? 0 : 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(Settled(), 2u);
  std::vector<int> held;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    if (!IsUncheckedRecordFileName(entry.path().filename().string())) continue;
    const int fd = ::open(entry.path().c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    held.push_back(fd);
    EXPECT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
    struct flock read_lock {};
    read_lock.l_type = F_RDLCK;
    read_lock.l_whence = SEEK_SET;
    EXPECT_EQ(::fcntl(fd, F_OFD_SETLK, &read_lock), 0);
    struct flock write_lock = read_lock;
    write_lock.l_type = F_WRLCK;
    EXPECT_NE(::fcntl(fd, F_OFD_SETLK, &write_lock), 0);  // needs a descriptor open to write
  }
  EXPECT_EQ(held.size(), 2u);
  EXPECT_EQ(Settled(), 2u);
  // Its lock does not keep a live run's pending record from being one either.
  {
    auto run = UncheckedRun::Start({ws_});
    ASSERT_TRUE(run);
    EXPECT_EQ(All(), 3u);
    EXPECT_EQ(Settled(), 2u);
  }
  for (int fd : held) ::close(fd);
}

}  // namespace
}  // namespace unchecked_run_test
}  // namespace anvil
