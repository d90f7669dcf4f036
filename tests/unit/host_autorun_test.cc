// What the host runs from the home, and what a run must do about each place for its writable
// roots (policy/host_autorun.h): the places for each HOME, user-database home, XDG value and
// ZDOTDIR, then the plan, table by table, on a fake file system.
#include "policy/host_autorun.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "policy/sandbox_home.h"

namespace anvil {
namespace host_autorun_test {
namespace {

bool Has(const std::vector<std::string>& v, const std::string& p) {
  return std::find(v.begin(), v.end(), p) != v.end();
}

size_t CountOf(AutorunBase base) {
  return static_cast<size_t>(
      std::count_if(std::begin(kHostAutorun), std::end(kHostAutorun),
                    [base](const HostAutorun& e) { return e.base == base; }));
}

TEST(HostAutorun, EveryPlaceOfEveryHomeAndXdgValueIsListedOnce) {
  // Every place of the table and every credential location, in each home.
  // (.config/git/config is in both: the table has it for $XDG_CONFIG_HOME.)
  const size_t all = std::size(kHostAutorun) + std::size(kHomeCredentials) - 1;
  struct Row {
    const char* name;
    AutorunEnv env;
    std::vector<std::string> has, lacks;
    size_t count;
  } rows[] = {
      {"one home",
       {"/home/u", "", "", "", "", ""},
       {"/home/u/.profile", "/home/u/.bash_profile", "/home/u/.bash_login", "/home/u/.bashrc",
        "/home/u/.bash_logout", "/home/u/.zshenv", "/home/u/.zprofile", "/home/u/.zshrc",
        "/home/u/.zlogin", "/home/u/.zlogout", "/home/u/.config/fish", "/home/u/bin",
        "/home/u/.local/bin", "/home/u/.config/systemd", "/home/u/.config/autostart",
        "/home/u/.config/environment.d", "/home/u/.pam_environment", "/home/u/.xprofile",
        "/home/u/.xsessionrc", "/home/u/.local/share/anvil", "/home/u/.local/share/systemd",
        "/home/u/.local/share/dbus-1",
        // The red team's second round: completions, python's user site, editors, REPLs, ...
        "/home/u/.bash_completion", "/home/u/.local/share/bash-completion", "/home/u/.local/lib",
        "/home/u/.local/share/applications", "/home/u/.local/share/nvim", "/home/u/.config/nvim",
        "/home/u/.vimrc", "/home/u/.emacs.d", "/home/u/.ipython", "/home/u/.vscode",
        "/home/u/.gdbinit", "/home/u/.tmux.conf", "/home/u/.config/direnv",
        "/home/u/.config/git/gitk", "/home/u/.cargo/bin", "/home/u/.cargo/config.toml",
        "/home/u/.config/pip", "/home/u/.config/go",
        // ... and the credential locations, which a command must not make either.
        "/home/u/.ssh", "/home/u/.kube", "/home/u/.aws", "/home/u/.gnupg", "/home/u/.docker",
        "/home/u/.npmrc", "/home/u/.gitconfig", "/home/u/.Xauthority"},
       // Anvil's own (linux/trust_shield.h), caches, and histories (nothing runs them).
       {"/home/u/.config/anvil", "/home/u/.cache", "/home/u/.npm", "/home/u/.bash_history",
        "/home/u/.local/share/fish/fish_history"},
       all},
      {"the user database's home too (a login there reads its own)",
       {"/tmp/h", "/home/p", "", "", "", ""},
       {"/tmp/h/.bashrc", "/home/p/.bashrc", "/tmp/h/.local/bin", "/home/p/.local/bin",
        "/home/p/.config/autostart", "/home/p/.local/share/anvil", "/tmp/h/.kube", "/home/p/.kube"},
       {},
       2 * all},
      {"the same home twice is listed once", {"/home/u/", "/home//u", "", "", "", ""}, {}, {}, all},
      {"XDG values and ZDOTDIR add their own places",
       {"/home/u", "", "/x/cfg", "/x/data", "/x/zsh", ""},
       {"/x/cfg/fish", "/x/cfg/systemd", "/x/cfg/autostart", "/x/cfg/environment.d",
        "/x/data/anvil", "/x/data/systemd", "/x/zsh/.zshenv", "/x/zsh/.zshrc",
        "/home/u/.config/fish", "/home/u/.local/share/anvil", "/home/u/.zshrc"},
       {"/x/zsh/.bashrc", "/x/cfg/.bashrc", "/x/cfg/.kube", "/x/data/.kube"},
       all + CountOf(AutorunBase::kConfig) + CountOf(AutorunBase::kData) +
           CountOf(AutorunBase::kZsh)},
      {"relative and dotted values are ignored",
       {"/home/u", "", "cfg", "./data", "/home/u/../zsh", ""},
       {"/home/u/.config/fish"},
       {"cfg/fish", "/home/zsh/.zshrc"},
       all},
      {"no home: only what the environment names",
       {"", "", "/c", "", "", ""},
       {"/c/fish", "/c/systemd"},
       {},
       CountOf(AutorunBase::kConfig)},
      {"nothing at all", {"relative", "", "", "", "", ""}, {}, {}, 0},
  };
  for (const auto& row : rows) {
    const auto paths = HostAutorunPaths(row.env);
    EXPECT_EQ(paths.size(), row.count) << row.name;
    for (const auto& p : row.has) EXPECT_TRUE(Has(paths, p)) << row.name << ": " << p;
    for (const auto& p : row.lacks) EXPECT_FALSE(Has(paths, p)) << row.name << ": " << p;
    for (const auto& p : paths) {
      EXPECT_EQ(std::count(paths.begin(), paths.end(), p), 1) << row.name << ": " << p;
    }
  }
}

// The credential part of HostAutorunPaths: what a refused write calls a credential.
TEST(HostAutorun, HomeCredentialPathsAreTheCredentialPartOfEachHome) {
  const AutorunEnv env{"/home/u", "/home/p", "/x/cfg", "", "", ""};
  const auto creds = HomeCredentialPaths(env);
  EXPECT_EQ(creds.size(), 2 * std::size(kHomeCredentials));
  const auto all = HostAutorunPaths(env);
  for (const auto& c : creds) EXPECT_TRUE(Has(all, c)) << c;
  for (const char* c : {"/home/u/.kube", "/home/p/.ssh", "/home/u/.Xauthority",
                        "/home/p/.Xauthority", "/home/u/.config/gh"}) {
    EXPECT_TRUE(Has(creds, c)) << c;
  }
  // Not a credential: a startup file, an XDG place, a history.
  for (const char* c : {"/home/u/.bashrc", "/x/cfg/gh", "/home/u/.bash_history"}) {
    EXPECT_FALSE(Has(creds, c)) << c;
  }
  EXPECT_TRUE(HomeCredentialPaths({"relative", "", "", "", "", ""}).empty());
}

bool CleanRelative(std::string_view p) {
  if (p.empty() || p.front() == '/' || p.back() == '/' || p.find("//") != std::string_view::npos) {
    return false;
  }
  for (size_t start = 0; start <= p.size();) {
    size_t end = p.find('/', start);
    if (end == std::string_view::npos) end = p.size();
    const auto part = p.substr(start, end - start);
    if (part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

// The red team's third round: editors beside VS Code whose settings run a terminal profile or a
// task, or whose plugin directory runs code, were missing, so a writable root holding them (a
// workspace of $HOME, --writable-root ~/.config) let a command plant them. Each is a place now,
// in $XDG_CONFIG_HOME and $XDG_DATA_HOME too; a neighbour that runs nothing is not.
TEST(HostAutorun, EditorsBesideVsCodeAreListed) {
  const auto places = HostAutorunPaths({"/home/u", "", "/cfg", "/data", "", ""});
  for (const char* p : {"/home/u/.config/Cursor/User",
                        "/cfg/Cursor/User",
                        "/home/u/.config/Code - Insiders/User",
                        "/home/u/.vscode-insiders",
                        "/home/u/.vscode-server-insiders",
                        "/home/u/.config/Windsurf/User",
                        "/home/u/.windsurf",
                        "/home/u/.windsurf-server",
                        "/home/u/.codeium",
                        "/home/u/.config/sublime-text",
                        "/cfg/sublime-text",
                        "/home/u/.config/zed",
                        "/home/u/.local/share/zed",
                        "/data/zed",
                        "/home/u/.config/yazi",
                        "/home/u/.config/Positron/User",
                        "/home/u/.positron",
                        "/home/u/.kiro",
                        "/home/u/.config/Kiro/User",
                        "/home/u/.trae",
                        "/home/u/.config/Trae/User",
                        "/home/u/.vscodium-server",
                        "/home/u/.local/share/code-server"}) {
    EXPECT_TRUE(Has(places, p)) << p;
  }
  // Benign neighbours: an editor's cache and logs are not places of the table.
  for (const char* p : {"/home/u/.config/Cursor", "/home/u/.config/Cursor/logs",
                        "/home/u/.config/Code - Insiders", "/home/u/.config"}) {
    EXPECT_FALSE(Has(places, p)) << p;
  }
}

TEST(HostAutorun, EditorChoicesAndVcsToolsAreListed) {
  const auto places = HostAutorunPaths({"/home/u", "", "/cfg", "", "", ""});
  for (const char* p : {"/home/u/.selected_editor", "/home/u/.config/lazygit", "/cfg/lazygit",
                        "/home/u/.config/jj", "/cfg/jj", "/home/u/.jjconfig.toml", "/home/u/.tigrc",
                        "/home/u/.config/tig", "/home/u/.config/lf", "/cfg/lf"}) {
    EXPECT_TRUE(Has(places, p)) << p;
  }
  // Benign neighbours: what they write as they run (lf's and tig's history, jj's and lazygit's
  // state) lies elsewhere and is not a place of the table.
  for (const char* p : {"/home/u/.local/share/lf", "/home/u/.local/share/tig",
                        "/home/u/.local/state/lazygit", "/home/u/.editorconfig"}) {
    EXPECT_FALSE(Has(places, p)) << p;
  }
}

TEST(HostAutorun, TheTablesAreCleanRelativePathsEachOnce) {
  std::vector<std::string> seen;
  for (const auto& e : kHostAutorun) {
    EXPECT_TRUE(CleanRelative(e.path)) << e.path;
    EXPECT_FALSE(e.what.empty()) << e.path;
    const std::string key = std::to_string(static_cast<int>(e.base)) + ":" + std::string(e.path);
    EXPECT_FALSE(Has(seen, key)) << "twice: " << e.path;
    seen.push_back(key);
  }
  // A history is never shown, but a missing one is not held: a host shell writes its own.
  for (auto c : kHomeCredentials) {
    EXPECT_TRUE(CleanRelative(c)) << c;
    for (auto h : kHomeHistories) EXPECT_NE(c, h);
  }
  for (auto h : kHomeHistories) EXPECT_TRUE(CleanRelative(h)) << h;
}

// A file system of a few paths; every ancestor of one is a directory.
using Node = AutorunFs::Node;
using Kind = AutorunFs::Kind;
Node Dir() { return {Kind::kDirectory, 1, ""}; }
Node File(uint64_t links = 1) { return {Kind::kFile, links, ""}; }
Node Link(std::string target) { return {Kind::kSymlink, 1, std::move(target)}; }
Node Placeholder() { return Link(std::string(kAutorunPlaceholder)); }

struct FakeFs {
  std::map<std::string, Node> nodes;
  FakeFs(std::initializer_list<std::pair<const std::string, Node>> entries) : nodes(entries) {
    nodes["/"] = Dir();
    for (const auto& [path, node] : std::map<std::string, Node>(entries)) {
      for (auto slash = path.rfind('/'); slash != 0 && slash != std::string::npos;
           slash = path.rfind('/', slash - 1)) {
        nodes.emplace(path.substr(0, slash), Dir());
      }
    }
  }
  AutorunFs Fs() const {
    return {[this](const std::string& p) {
      auto it = nodes.find(p);
      return it == nodes.end() ? Node{} : it->second;
    }};
  }
};

struct Want {
  std::vector<AutorunMake> make;
  std::vector<std::string> read_only, pinned_dirs, pinned_links, placeholders;
};

void ExpectPlan(const AutorunShieldPlan& got, const Want& want, const std::string& name) {
  EXPECT_EQ(got.make, want.make) << name;
  EXPECT_EQ(got.read_only, want.read_only) << name;
  EXPECT_EQ(got.pinned_dirs, want.pinned_dirs) << name;
  EXPECT_EQ(got.pinned_links, want.pinned_links) << name;
  EXPECT_EQ(got.placeholders, want.placeholders) << name;
}

const std::vector<std::string> kPlaces = {"/home/u/.bashrc", "/home/u/.zshrc", "/home/u/.local/bin",
                                          "/home/u/.config/fish", "/home/u/.local/share/anvil"};

TEST(HostAutorunPlan, WhatEachWritableRootMustKeepMakeAndPin) {
  // A lived-in home: .bashrc, ~/.config/fish and ~/.local/bin exist; no .zshrc, no
  // ~/.local/share.
  const FakeFs lived({{"/home/u/.bashrc", File()},
                      {"/home/u/.config/fish/config.fish", File()},
                      {"/home/u/.local/bin/tool", File()},
                      {"/home/u/proj/x", File()}});
  // The same once a first round made the placeholders.
  const FakeFs placed({{"/home/u/.bashrc", File()},
                       {"/home/u/.config/fish/config.fish", File()},
                       {"/home/u/.local/bin/tool", File()},
                       {"/home/u/.zshrc", Placeholder()},
                       {"/home/u/.local/share/anvil", Placeholder()}});
  struct Row {
    const char* name;
    const FakeFs* fs;
    std::vector<std::string> roots;
    Want want;
  } rows[] = {
      {"a workspace below the home: nothing", &lived, {"/home/u/proj"}, {}},
      {"the home as workspace: existing places read-only, missing ones to make",
       &lived,
       {"/home/u"},
       {{{"/home/u", ".zshrc", false}, {"/home/u/.local", "share", true}},
        {"/home/u/.bashrc", "/home/u/.local/bin", "/home/u/.config/fish"},
        {"/home/u/.local", "/home/u/.config"},
        {},
        {}}},
      {"once made: the placeholders pinned",
       &placed,
       {"/home/u"},
       {{},
        {"/home/u/.bashrc", "/home/u/.local/bin", "/home/u/.config/fish"},
        {"/home/u/.local", "/home/u/.config", "/home/u/.local/share"},
        {"/home/u/.zshrc", "/home/u/.local/share/anvil"},
        {"/home/u/.zshrc", "/home/u/.local/share/anvil"}}},
      {"a root above the home: the home is pinned too",
       &placed,
       {"/home"},
       {{},
        {"/home/u/.bashrc", "/home/u/.local/bin", "/home/u/.config/fish"},
        {"/home/u", "/home/u/.local", "/home/u/.config", "/home/u/.local/share"},
        {"/home/u/.zshrc", "/home/u/.local/share/anvil"},
        {"/home/u/.zshrc", "/home/u/.local/share/anvil"}}},
      {"a root that is the place: the user's choice, it stays writable",
       &placed,
       {"/home/u", "/home/u/.local/bin"},
       {{},
        {"/home/u/.bashrc", "/home/u/.config/fish"},
        {"/home/u/.config", "/home/u/.local/share", "/home/u/.local"},
        {"/home/u/.zshrc", "/home/u/.local/share/anvil"},
        {"/home/u/.zshrc", "/home/u/.local/share/anvil"}}},
      {"a root inside a place: the place read-only around it",
       &placed,
       {"/home/u/.config/fish/functions", "/home/u"},
       {{},
        {"/home/u/.bashrc", "/home/u/.local/bin", "/home/u/.config/fish"},
        {"/home/u/.local", "/home/u/.config", "/home/u/.local/share"},
        {"/home/u/.zshrc", "/home/u/.local/share/anvil"},
        {"/home/u/.zshrc", "/home/u/.local/share/anvil"}}},
      {"a placeholder left where this run holds nothing: only to clean up",
       &placed,
       {"/home/u/proj"},
       {{}, {}, {}, {}, {"/home/u/.zshrc", "/home/u/.local/share/anvil"}}},
  };
  for (const auto& row : rows) {
    auto plan = PlanAutorunShield(kPlaces, row.roots, {}, row.fs->Fs());
    ASSERT_TRUE(plan) << row.name << ": " << plan.error().ToString();
    ExpectPlan(*plan, row.want, row.name);
  }
}

// A credential location is one more place: a missing one is taken for the run (the command
// cannot make ~/.kube/config), one that exists is kept read-only (and covered by the home view).
TEST(HostAutorunPlan, CredentialLocationsAreHeldLikeThePlacesTheHostRuns) {
  const FakeFs fs({{"/home/u/.aws/credentials", File()}, {"/home/u/.bashrc", File()}});
  const auto places = HostAutorunPaths({"/home/u", "", "", "", "", ""});
  ASSERT_TRUE(Has(places, "/home/u/.kube"));
  ASSERT_TRUE(Has(places, "/home/u/.cargo/credentials.toml"));
  auto plan = PlanAutorunShield(places, {"/home/u"}, {}, fs.Fs());
  ASSERT_TRUE(plan) << plan.error().ToString();
  auto makes = [&](const std::string& parent, const std::string& name, bool directory) {
    return std::find(plan->make.begin(), plan->make.end(), AutorunMake{parent, name, directory}) !=
           plan->make.end();
  };
  EXPECT_TRUE(makes("/home/u", ".kube", false));
  EXPECT_TRUE(makes("/home/u", ".ssh", false));
  EXPECT_TRUE(makes("/home/u", ".bash_completion", false));
  // On the way to .cargo/credentials.toml and .cargo/bin: a directory, made for the run.
  EXPECT_TRUE(makes("/home/u", ".cargo", true));
  EXPECT_TRUE(Has(plan->read_only, "/home/u/.aws"));
  EXPECT_TRUE(Has(plan->read_only, "/home/u/.bashrc"));
  // A history is not one of them, nor is a cache.
  EXPECT_FALSE(makes("/home/u", ".bash_history", false));
  EXPECT_FALSE(makes("/home/u", ".cache", false));
  // A workspace below the home: nothing at all.
  plan = PlanAutorunShield(places, {"/home/u/proj"}, {}, fs.Fs());
  ASSERT_TRUE(plan);
  ExpectPlan(*plan, {}, "a workspace below the home");
}

TEST(HostAutorunPlan, SymbolicLinksOnTheWayArePinnedAndWhereTheyLeadKept) {
  const FakeFs fs({{"/home/u/.bashrc", Link("dotfiles/bashrc")},
                   {"/home/u/dotfiles/bashrc", File()},
                   {"/home/u/.config", Link("/home/u/cfg")},
                   {"/home/u/cfg/fish/config.fish", File()},
                   {"/home/u/.zshrc", Link("/etc/skel/zshrc")},
                   {"/etc/skel/zshrc", File()},
                   {"/home/u/.profile", Link(".profile")},
                   {"/home/u/.local/bin", Link("../opt/bin")},
                   {"/home/u/opt/bin/tool", File()}});
  const std::vector<std::string> places = {"/home/u/.bashrc", "/home/u/.config/fish",
                                           "/home/u/.zshrc", "/home/u/.profile",
                                           "/home/u/.local/bin"};
  struct Row {
    const char* name;
    std::vector<std::string> roots;
    Want want;
  } rows[] = {
      {"the home as workspace: each link pinned, each target it holds read-only",
       {"/home/u"},
       {{},
        {"/home/u/dotfiles/bashrc", "/home/u/cfg/fish", "/home/u/opt/bin"},
        {"/home/u/dotfiles", "/home/u/cfg", "/home/u/.local", "/home/u/opt"},
        {"/home/u/.bashrc", "/home/u/.config", "/home/u/.zshrc", "/home/u/.profile",
         "/home/u/.local/bin"},
        {}}},
      {"a dotfiles repository as workspace: the file a link there leads to is kept",
       {"/home/u/dotfiles"},
       {{}, {"/home/u/dotfiles/bashrc"}, {}, {}, {}}},
  };
  for (const auto& row : rows) {
    auto plan = PlanAutorunShield(places, row.roots, {}, fs.Fs());
    ASSERT_TRUE(plan) << row.name << ": " << plan.error().ToString();
    ExpectPlan(*plan, row.want, row.name);
  }
}

TEST(HostAutorunPlan, LooksAtEachNameOncePerPlan) {
  // The places share their first components (/, the home, ~/.local): one lstat each per plan.
  const FakeFs fs({{"/home/u/.bashrc", File()}, {"/home/u/.local/bin", Dir()}});
  std::map<std::string, int> looks;
  AutorunFs counted{[&](const std::string& p) {
    ++looks[p];
    return fs.Fs().lstat(p);
  }};
  auto plan = PlanAutorunShield(kPlaces, {"/home/u"}, {}, counted);
  ASSERT_TRUE(plan);
  EXPECT_EQ(looks["/home"], 1);
  EXPECT_EQ(looks["/home/u"], 1);
  EXPECT_EQ(looks["/home/u/.local"], 1);
  for (const auto& [path, n] : looks) EXPECT_EQ(n, 1) << path;
  // The same plan as without the count.
  auto plain = PlanAutorunShield(kPlaces, {"/home/u"}, {}, fs.Fs());
  ASSERT_TRUE(plain);
  EXPECT_EQ(plan->read_only, plain->read_only);
  EXPECT_EQ(plan->make, plain->make);
  EXPECT_EQ(plan->pinned_dirs, plain->pinned_dirs);
}

TEST(HostAutorunPlan, OddHomesAreSettledOrRefused) {
  // A non-directory where the way goes on: the host finds nothing below it, and the command
  // must not replace it with a directory.
  {
    const FakeFs fs({{"/home/u/.config", File()}});
    auto plan = PlanAutorunShield({"/home/u/.config/fish"}, {"/home/u"}, {}, fs.Fs());
    ASSERT_TRUE(plan);
    ExpectPlan(*plan, {{}, {"/home/u/.config"}, {}, {}, {}}, "a file on the way");
  }
  // Another name of the same file could be written: kept, and listed for the caller to look
  // for its other names (linux/autorun_shield.h).
  {
    const FakeFs fs({{"/home/u/.bashrc", File(2)}});
    auto plan = PlanAutorunShield({"/home/u/.bashrc"}, {"/home/u"}, {}, fs.Fs());
    ASSERT_TRUE(plan) << plan.error().ToString();
    EXPECT_EQ(plan->read_only, (std::vector<std::string>{"/home/u/.bashrc"}));
    EXPECT_EQ(plan->hard_linked, (std::vector<AutorunHardLink>{{"/home/u/.bashrc", 2}}));
    // Not held by a root: none of the run's business.
    plan = PlanAutorunShield({"/home/u/.bashrc"}, {"/home/u/proj"}, {}, fs.Fs());
    ASSERT_TRUE(plan);
    EXPECT_TRUE(plan->hard_linked.empty());
  }
  // A name the caller could not make: the command cannot either.
  {
    const FakeFs fs({{"/home/u/x", File()}});
    auto plan = PlanAutorunShield({"/home/u/.zshrc"}, {"/home/u"}, {}, fs.Fs(), {"/home/u/.zshrc"});
    ASSERT_TRUE(plan);
    ExpectPlan(*plan, {}, "unmakeable");
  }
  // The view's private /tmp hides what a root above it would show.
  {
    const FakeFs fs({{"/tmp/h/.bashrc", File()}});
    auto plan = PlanAutorunShield({"/tmp/h/.bashrc"}, {"/"}, {"/tmp"}, fs.Fs());
    ASSERT_TRUE(plan);
    ExpectPlan(*plan, {}, "covered");
    plan = PlanAutorunShield({"/tmp/h/.bashrc"}, {"/tmp/h"}, {"/tmp"}, fs.Fs());
    ASSERT_TRUE(plan);
    ExpectPlan(*plan, {{}, {"/tmp/h/.bashrc"}, {}, {}, {}}, "a root inside /tmp");
  }
  // A loop of links: the host finds nothing; the links stay as they are.
  {
    const FakeFs fs(
        {{"/home/u/.bashrc", Link(".bash_loop")}, {"/home/u/.bash_loop", Link(".bashrc")}});
    auto plan = PlanAutorunShield({"/home/u/.bashrc"}, {"/home/u"}, {}, fs.Fs());
    ASSERT_TRUE(plan);
    EXPECT_TRUE(Has(plan->pinned_links, "/home/u/.bashrc"));
    EXPECT_TRUE(Has(plan->pinned_links, "/home/u/.bash_loop"));
    EXPECT_TRUE(plan->make.empty());
    EXPECT_TRUE(plan->read_only.empty());
  }
  // A dangling link of the user's: what it points to is made (and removed after) instead.
  {
    const FakeFs fs({{"/home/u/.bashrc", Link("gone/bashrc")}});
    auto plan = PlanAutorunShield({"/home/u/.bashrc"}, {"/home/u"}, {}, fs.Fs());
    ASSERT_TRUE(plan);
    ExpectPlan(*plan, {{{"/home/u", "gone", true}}, {}, {}, {"/home/u/.bashrc"}, {}},
               "a dangling link");
  }
}

}  // namespace
}  // namespace host_autorun_test
}  // namespace anvil
