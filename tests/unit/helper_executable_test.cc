// Where Anvil looks for its helpers (beside itself only), and which paths to one it refuses:
// any step that someone other than root or the caller could write.
#include "linux/helper_executable.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

namespace anvil {
namespace helper_executable_test {
namespace {

TEST(HelperCandidates, TheInstalledLayoutFirstThenBesideTheProgramNeverPath) {
  ASSERT_EQ(InstalledHelperDir(), "../libexec/anvil");
  EXPECT_EQ(
      HelperCandidates("/usr/bin", "anvil-gateway"),
      (std::vector<std::string>{"/usr/libexec/anvil/anvil-gateway", "/usr/bin/anvil-gateway"}));
  // A helper starting another (the gateway its runner) runs from libexec/anvil/ itself.
  EXPECT_EQ(HelperCandidates("/opt/a/libexec/anvil", "anvil-exec-runner"),
            (std::vector<std::string>{"/opt/a/libexec/libexec/anvil/anvil-exec-runner",
                                      "/opt/a/libexec/anvil/anvil-exec-runner"}));
  // The build tree: everything in one directory.
  EXPECT_EQ(HelperCandidates("/src/build/dev", "anvil-proxy").back(), "/src/build/dev/anvil-proxy");
  EXPECT_EQ(HelperCandidates("/", "anvil-proxy"),
            (std::vector<std::string>{"/libexec/anvil/anvil-proxy", "/anvil-proxy"}));
  // Every candidate is absolute: nothing is ever looked up relative to the working directory.
  for (const char* dir : {"/usr/bin", "/", "/a/b/../c"}) {
    for (const auto& c : HelperCandidates(dir, "anvil-gateway")) EXPECT_EQ(c[0], '/') << c;
  }
}

constexpr mode_t kFile = S_IFREG, kDir = S_IFDIR;

// The helper first, then each directory up to /.
std::vector<PathStep> Chain(mode_t helper_mode, uid_t helper_uid, mode_t dir_mode, uid_t dir_uid) {
  return {{"/opt/anvil/libexec/anvil/anvil-gateway", helper_uid, kFile | helper_mode},
          {"/opt/anvil/libexec/anvil", dir_uid, kDir | dir_mode},
          {"/opt/anvil/libexec", 0, kDir | 0755},
          {"/opt/anvil", 0, kDir | 0755},
          {"/opt", 0, kDir | 0755},
          {"/", 0, kDir | 0755}};
}

TEST(CheckHelperPath, OnlyRootOrTheCallerMayBeAbleToReplaceAnyStep) {
  struct Row {
    const char* what;
    std::vector<PathStep> steps;
    uid_t euid;
    const char* refusal;  // nullptr: accepted
  };
  const Row rows[] = {
      {"installed by root, run by root", Chain(0755, 0, 0755, 0), 0, nullptr},
      {"installed by root, run by a user", Chain(0755, 0, 0755, 0), 1000, nullptr},
      {"the user's own build", Chain(0755, 1000, 0755, 1000), 1000, nullptr},
      {"a sticky world-writable directory (/tmp)", Chain(0755, 0, 01777, 0), 1000, nullptr},
      {"the helper writable by anyone", Chain(0757, 0, 0755, 0), 0, "writable by anyone"},
      {"the helper writable by its group", Chain(0775, 0, 0755, 0), 0, "writable by its group"},
      {"its directory writable by anyone", Chain(0755, 0, 0777, 0), 0, "writable by anyone"},
      {"its directory writable by its group", Chain(0755, 0, 0775, 0), 1000,
       "writable by its group"},
      {"a sticky directory writable by its owner only is fine", Chain(0755, 0, 01755, 0), 0,
       nullptr},
      {"the helper owned by another user, run by root", Chain(0755, 1000, 0755, 0), 0,
       "owned by uid 1000"},
      {"its directory owned by another user", Chain(0755, 0, 0755, 1001), 1000,
       "owned by uid 1001"},
      {"a sticky /tmp-like directory owned by another user", Chain(0755, 0, 01777, 1001), 1000,
       "owned by uid 1001"},
      {"an unmapped owner (nobody in a user namespace)", Chain(0755, 65534, 0755, 0), 0,
       "owned by uid 65534"},
      {"not executable", Chain(0644, 0, 0755, 0), 0, "not executable"},
  };
  for (const Row& row : rows) {
    auto s = CheckHelperPath(row.steps, row.euid);
    if (row.refusal == nullptr) {
      EXPECT_TRUE(s.has_value()) << row.what << ": " << s.error().ToString();
      continue;
    }
    ASSERT_FALSE(s.has_value()) << row.what;
    EXPECT_EQ(s.error().code, "sandbox") << row.what;
    EXPECT_NE(s.error().message.find(row.refusal), std::string::npos)
        << row.what << ": " << s.error().message;
    EXPECT_NE(s.error().message.find("(fix: "), std::string::npos) << s.error().message;
  }
  // A directory higher up counts as much as the helper's own.
  auto steps = Chain(0755, 0, 0755, 0);
  steps[3].mode = kDir | 0777;
  auto s = CheckHelperPath(steps, 0);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message.find("/opt/anvil is writable by anyone"), std::string::npos)
      << s.error().message;
  // A directory or a device where the helper should be.
  steps = Chain(0755, 0, 0755, 0);
  steps[0].mode = kDir | 0755;
  EXPECT_FALSE(CheckHelperPath(steps, 0).has_value());
}

}  // namespace
}  // namespace helper_executable_test
}  // namespace anvil
