// policy/trust_state_paths.h: which writes are writes of Anvil's trust state (table-tested,
// each refusal beside its benign neighbour).
#include "policy/trust_state_paths.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace anvil {
namespace trust_state_paths_test {
namespace {

TEST(TrustStatePaths, TheDirectoriesInTheWorkspace) {
  using V = std::vector<std::string>;
  EXPECT_EQ(TrustStateInWorkspace("/home/u", {"/home/u/.config/anvil", "/home/u/.local/state/anvil",
                                              "/etc/anvil", "/other/anvil"}),
            (V{".config/anvil", ".local/state/anvil"}));
  // The workspace inside one: all of it.
  EXPECT_EQ(TrustStateInWorkspace("/home/u/.config/anvil/x", {"/home/u/.config/anvil"}), (V{"."}));
  EXPECT_EQ(TrustStateInWorkspace("/", {"/etc/anvil"}), (V{"etc/anvil"}));
  // Named twice (as named and as resolved): once.
  EXPECT_EQ(TrustStateInWorkspace("/w", {"/w/s/anvil", "/w/s/anvil"}), (V{"s/anvil"}));
  // Not a component prefix, relative: none.
  EXPECT_EQ(TrustStateInWorkspace("/home/u", {"/home/user/.config/anvil", "home/u/x"}), V{});
  EXPECT_EQ(TrustStateInWorkspace("/w", {}), V{});
}

TEST(TrustStatePaths, WritesAtBeneathOrHoldingTheStateAreRefused) {
  const std::vector<std::string> trust = {".local/state/anvil", "cfg/anvil"};
  struct Row {
    const char* path;
    bool or_above;
    bool refused;
  } rows[] = {
      {".local/state/anvil/grants.json", false, true},
      {".local/state/anvil", false, true},
      {".local/state/anvil/audit/x.jsonl", false, true},
      {".LOCAL/State/ANVIL/grants.json", false, true},   // a case-folding file system
      {".local/state/anvil./grants.json", false, true},  // trailing dot (SMB, NTFS)
      {"cfg/anvil/trusted-keys/k.pub", false, true},
      {".local/state", true, true},  // a move or removal takes it along
      {".local", true, true},
      {".", true, true},
      {"cfg", true, true},
      // Benign neighbours.
      {".local/state", false, false},  // making the parent: harmless
      {".local/state/anvil-notes", false, false},
      {".local/state/other/x", true, false},
      {".local/share/x", true, false},
      {"cfg/anvil2", true, false},
      {"anvil", true, false},
      {"README.md", false, false},
  };
  for (const Row& row : rows) {
    auto s = CheckTrustStateWrite(trust, "fs.write", row.path, row.or_above);
    EXPECT_EQ(!s, row.refused) << row.path << " or_above=" << row.or_above;
    if (!s) {
      EXPECT_EQ(s.error().code, "denied");
      EXPECT_NE(s.error().message.find("fix:"), std::string::npos);
    }
  }
  // The workspace inside the trust state: every write.
  EXPECT_FALSE(CheckTrustStateWrite({"."}, "fs.write", "a/b", false));
  // None in the workspace: every write passes.
  EXPECT_TRUE(CheckTrustStateWrite({}, "fs.remove", ".", true));
}

}  // namespace
}  // namespace trust_state_paths_test
}  // namespace anvil
