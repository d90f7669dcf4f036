// Which directories are Anvil's own trust state for an environment, and what a run must do
// about each (linux/trust_shield.h).
#include "linux/trust_shield.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

namespace anvil {
namespace {

TEST(TrustShield, EveryPlaceARunMayReadIsListedAndRelativeValuesIgnored) {
  struct Row {
    TrustEnv env;
    std::vector<std::string> want;
  } rows[] = {
      {{"/home/u", "", "", ""},
       {"/home/u/.config/anvil", "/home/u/.local/state/anvil", "/etc/anvil"}},
      // Another run may use other XDG values or no HOME: every place is kept.
      {{"/home/u", "/c", "/s/", ""},
       {"/c/anvil", "/s/anvil", "/home/u/.config/anvil", "/home/u/.local/state/anvil",
        "/etc/anvil"}},
      {{"", "", "", "/home/p"},
       {"/home/p/.config/anvil", "/home/p/.local/state/anvil", "/etc/anvil"}},
      {{"/home/u", "", "", "/home/u"},
       {"/home/u/.config/anvil", "/home/u/.local/state/anvil", "/etc/anvil"}},
      {{"/tmp/h", "", "", "/home/p"},
       {"/tmp/h/.config/anvil", "/tmp/h/.local/state/anvil", "/home/p/.config/anvil",
        "/home/p/.local/state/anvil", "/etc/anvil"}},
      {{"/home/u", "rel", "./x", ""},
       {"/home/u/.config/anvil", "/home/u/.local/state/anvil", "/etc/anvil"}},
      {{"", "", "", ""}, {"/etc/anvil"}},
      {{"relative", "", "", ""}, {"/etc/anvil"}},
      {{"/home//u/", "", "", ""},
       {"/home/u/.config/anvil", "/home/u/.local/state/anvil", "/etc/anvil"}},
      {{"/home/u/../v", "", "", ""}, {"/etc/anvil"}},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(AnvilTrustDirs(row.env), row.want) << row.env.home << " " << row.env.xdg_config_home;
  }
}

class TrustShieldDirs : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/var/tmp/anvil-trust-unit-XXXXXX";
    ASSERT_NE(mkdtemp(t), nullptr);
    base_ = t;
  }
  void TearDown() override { std::filesystem::remove_all(base_); }
  std::string base_;
};

TEST_F(TrustShieldDirs, AHeldDirectoryIsMadeKeptReadOnlyAndItsWayPinned) {
  const std::string cfg = base_ + "/home/.config/anvil";
  ASSERT_EQ(mkdir((base_ + "/home").c_str(), 0755), 0);
  auto shield = ShieldAnvilTrustDirs({cfg}, {base_ + "/home"}, {});
  ASSERT_TRUE(shield) << shield.error().ToString();
  struct stat st {};
  ASSERT_EQ(stat(cfg.c_str(), &st), 0) << "the missing directory was made";
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(shield->read_only, std::vector<std::string>{cfg});
  EXPECT_EQ(shield->pinned, std::vector<std::string>{base_ + "/home/.config"});
  // Benign: a root that does not hold it needs nothing and makes nothing.
  const std::string other = base_ + "/elsewhere/.config/anvil";
  auto none = ShieldAnvilTrustDirs({other}, {base_ + "/home"}, {});
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->read_only.empty());
  EXPECT_NE(stat(other.c_str(), &st), 0);
}

TEST_F(TrustShieldDirs, ASymlinkOnTheWayOrARootInsideIsRefused) {
  ASSERT_EQ(mkdir((base_ + "/home").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((base_ + "/real").c_str(), 0755), 0);
  ASSERT_EQ(symlink((base_ + "/real").c_str(), (base_ + "/home/.config").c_str()), 0);
  auto linked = ShieldAnvilTrustDirs({base_ + "/home/.config/anvil"}, {base_ + "/home"}, {});
  ASSERT_FALSE(linked);
  EXPECT_EQ(linked.error().code, "sandbox");
  auto inside = ShieldAnvilTrustDirs({base_ + "/real/anvil"}, {base_ + "/real/anvil/rules"}, {});
  ASSERT_FALSE(inside);
  EXPECT_EQ(inside.error().code, "invalid");
}

}  // namespace
}  // namespace anvil
