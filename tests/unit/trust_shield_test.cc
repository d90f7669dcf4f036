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
namespace trust_shield_test {
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

TrustDirName Own(const std::string& dir) { return {dir, dir, false}; }

// Each directory by its own name first, then by each name an alias gives it or its canonical
// form, the name it came from beside it; the admin layer marked by every name.
TEST(TrustShield, EachNameAnAliasGivesCarriesTheHostsName) {
  const std::vector<std::string> dirs = {"/home/u/.config/anvil", "/etc/anvil"};
  struct Row {
    std::vector<std::string> canonical;
    std::vector<TreeAlias> aliases;
    std::vector<TrustDirName> want;
  } rows[] = {
      // No alias: the own names only.
      {{"", ""},
       {},
       {{"/home/u/.config/anvil", "/home/u/.config/anvil", false},
        {"/etc/anvil", "/etc/anvil", true}}},
      // mount --bind / /tmp/x: both seen there; /etc/anvil's alias keeps the mark.
      {{"", ""},
       {{"/", "/tmp/x"}},
       {{"/home/u/.config/anvil", "/home/u/.config/anvil", false},
        {"/etc/anvil", "/etc/anvil", true},
        {"/tmp/x/home/u/.config/anvil", "/home/u/.config/anvil", false},
        {"/tmp/x/etc/anvil", "/etc/anvil", true}}},
      // The home's canonical form is what the mount table names (/home -> /data/home).
      {{"/data/home/u/.config/anvil", "/etc/anvil"},
       {{"/data/home/u", "/work/alias"}},
       {{"/home/u/.config/anvil", "/home/u/.config/anvil", false},
        {"/etc/anvil", "/etc/anvil", true},
        {"/work/alias/.config/anvil", "/data/home/u/.config/anvil", false}}},
      // An alias of /etc only: the admin layer's, marked.
      {{"", ""},
       {{"/etc", "/srv/etc"}},
       {{"/home/u/.config/anvil", "/home/u/.config/anvil", false},
        {"/etc/anvil", "/etc/anvil", true},
        {"/srv/etc/anvil", "/etc/anvil", true}}},
  };
  for (const auto& row : rows) {
    const auto got = TrustDirNames(dirs, row.canonical, row.aliases);
    ASSERT_EQ(got.size(), row.want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i], row.want[i]) << got[i].path << " from " << got[i].host;
    }
  }
}

// What a run does about a missing trust directory a writable root holds: the user's is made by
// its own name (through an alias, by the host's name), the admin layer by no name.
TEST(TrustShield, OnlyAUsersOwnDirectoryIsMadeAndByItsOwnName) {
  struct Row {
    TrustDirName name;
    MissingTrustDir want;
  } rows[] = {
      {{"/home/u/.config/anvil", "/home/u/.config/anvil", false}, MissingTrustDir::kMakeHere},
      {{"/work/alias/.config/anvil", "/home/u/.config/anvil", false},
       MissingTrustDir::kMakeHostName},
      {{"/etc/anvil", "/etc/anvil", true}, MissingTrustDir::kRefuse},
      {{"/tmp/x/etc/anvil", "/etc/anvil", true}, MissingTrustDir::kRefuse},
      // By the host's name alone, unmarked: still the admin layer.
      {{"/tmp/x/etc/anvil", "/etc/anvil", false}, MissingTrustDir::kRefuse},
      {{"/etc/anvil", "/etc/anvil", false}, MissingTrustDir::kRefuse},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(WhenTrustDirMissing(row.name), row.want) << row.name.path;
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
  auto shield = ShieldAnvilTrustDirs({Own(cfg)}, {base_ + "/home"}, {});
  ASSERT_TRUE(shield) << shield.error().ToString();
  struct stat st {};
  ASSERT_EQ(stat(cfg.c_str(), &st), 0) << "the missing directory was made";
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(shield->read_only, std::vector<std::string>{cfg});
  EXPECT_EQ(shield->pinned, std::vector<std::string>{base_ + "/home/.config"});
  // Benign: a root that does not hold it needs nothing and makes nothing.
  const std::string other = base_ + "/elsewhere/.config/anvil";
  auto none = ShieldAnvilTrustDirs({Own(other)}, {base_ + "/home"}, {});
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->read_only.empty());
  EXPECT_NE(stat(other.c_str(), &st), 0);
}

// A missing admin layer that a writable root shows by another name: refused naming both, and
// nothing is made, neither there nor another directory of the same call.
TEST_F(TrustShieldDirs, AMissingAdminLayerSeenThroughAnAliasIsRefusedAndNothingMade) {
  ASSERT_EQ(mkdir((base_ + "/ws").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((base_ + "/ws/etc").c_str(), 0755), 0);
  const std::string admin = base_ + "/ws/etc/anvil";  // as the alias shows /etc/anvil
  const std::string cfg = base_ + "/ws/.config/anvil";
  auto refused = ShieldAnvilTrustDirs({Own(cfg), {admin, "/etc/anvil", true}}, {base_ + "/ws"}, {});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "sandbox");
  EXPECT_NE(refused.error().message.find("/etc/anvil"), std::string::npos);
  EXPECT_NE(refused.error().message.find(admin), std::string::npos);
  EXPECT_NE(refused.error().message.find("fix:"), std::string::npos);
  struct stat st {};
  EXPECT_NE(stat(admin.c_str(), &st), 0) << "made through the alias's name";
  EXPECT_NE(stat(cfg.c_str(), &st), 0) << "made before the refusal";
  // Benign: present, it is kept read-only at the alias like any other.
  ASSERT_EQ(mkdir(admin.c_str(), 0755), 0);
  auto kept = ShieldAnvilTrustDirs({{admin, "/etc/anvil", true}}, {base_ + "/ws"}, {});
  ASSERT_TRUE(kept) << kept.error().ToString();
  EXPECT_EQ(kept->read_only, std::vector<std::string>{admin});
}

TEST_F(TrustShieldDirs, ASymlinkOnTheWayOrARootInsideIsRefused) {
  ASSERT_EQ(mkdir((base_ + "/home").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((base_ + "/real").c_str(), 0755), 0);
  ASSERT_EQ(symlink((base_ + "/real").c_str(), (base_ + "/home/.config").c_str()), 0);
  auto linked = ShieldAnvilTrustDirs({Own(base_ + "/home/.config/anvil")}, {base_ + "/home"}, {});
  ASSERT_FALSE(linked);
  EXPECT_EQ(linked.error().code, "sandbox");
  auto inside =
      ShieldAnvilTrustDirs({Own(base_ + "/real/anvil")}, {base_ + "/real/anvil/rules"}, {});
  ASSERT_FALSE(inside);
  EXPECT_EQ(inside.error().code, "invalid");
}

}  // namespace
}  // namespace trust_shield_test
}  // namespace anvil
