// How a sandboxed command's program is looked up (once, outside) and which way it is started
// inside: by the looked-up path only when it names the opened file.
#include "linux/program_exec.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace anvil {
namespace program_exec_test {
namespace {

TEST(ChooseExecWay, ThePathOnlyWhenItNamesTheOpenedFile) {
  const FileId opened{8, 100};
  struct Row {
    std::optional<FileId> in_view;
    ExecWay way;
  };
  const Row rows[] = {
      {FileId{8, 100}, ExecWay::kPath},      // the same file: run by its path
      {FileId{8, 101}, ExecWay::kReplaced},  // another inode at the path: refused
      {FileId{9, 100}, ExecWay::kReplaced},  // same inode number, another file system
      {std::nullopt, ExecWay::kDescriptor},  // no path kept, or nothing there in the view
  };
  for (const Row& row : rows) EXPECT_EQ(ChooseExecWay(row.in_view, opened), row.way);
}

// A program looked up through a symbolic link whose directory the view does not show (a
// virtualenv's bin/python -> /usr/bin/python3): the opened file is the link's target, and
// running it would silently be another program (the system's Python, without the
// environment). Refused instead; by its path when the path is shown.
TEST(ChooseExecWay, ALinkWhoseDirectoryIsNotShownIsNeverRunAsItsTarget) {
  const FileId opened{8, 100};
  struct Row {
    std::optional<FileId> in_view;
    bool link, dir_in_view;
    ExecWay way;
  };
  const Row rows[] = {
      {FileId{8, 100}, true, true, ExecWay::kPath},        // the link shown: run by its path
      {std::nullopt, true, false, ExecWay::kHidden},       // its directory not shown: refused
      {std::nullopt, true, true, ExecWay::kDescriptor},    // shown, its target not: Landlock says
      {std::nullopt, false, false, ExecWay::kDescriptor},  // no link: the file itself
      {FileId{8, 101}, true, true, ExecWay::kReplaced},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(ChooseExecWay(row.in_view, opened, row.link, row.dir_in_view), row.way);
  }
}

// The report record has room for 239 bytes: a long directory once pushed the fix out of the
// message ("... (fix: --readable-r"). Now the path gives way, never the fix; a short one keeps
// every word.
TEST(NotInViewMessage, ALongPathGivesWayNeverTheFix) {
  const std::string shortdir = "/home/u/v2/bin";
  EXPECT_EQ(NotInViewMessage("python", shortdir, true, 239),
            "python: /home/u/v2/bin is not in the sandbox's view (the link there is not run as "
            "its target) (fix: --readable-root /home/u/v2/bin, or readable_roots in config.toml; "
            "an activated virtualenv is shown by itself)");
  for (size_t length : {60u, 110u, 150u, 200u, 239u, 400u, 4000u}) {
    std::string dir = "/home/u";
    while (dir.size() < length) dir += "/deeper";
    dir += "/env-name/bin";
    for (bool hidden : {false, true}) {
      const std::string m =
          NotInViewMessage("a-program-with-a-rather-long-name-indeed", dir, hidden, 239);
      EXPECT_LE(m.size(), 239u) << m;
      EXPECT_NE(m.find(" (fix: --readable-root /home/u/"), std::string::npos) << m;
      EXPECT_NE(m.find("/env-name/bin, or readable_roots in config.toml"), std::string::npos) << m;
      EXPECT_EQ(m.back(), ')') << m;
      if (dir.size() < 100) {
        EXPECT_NE(m.find("--readable-root " + dir + ","), std::string::npos) << m;
      }
    }
  }
}

// A virtualenv's or conda environment's program: its bin/ alone runs the system's python (the
// interpreter finds its environment through pyvenv.cfg or conda-meta beside bin/), so the fix
// names the environment. The real case's message (a home-length path, a full-path argv[0])
// keeps the hint to activate it; only the longest give it up, never the fix.
TEST(NotInViewMessage, AnEnvironmentsProgramNamesTheEnvironment) {
  struct Row {
    std::string program, dir, env;
    bool hidden;
    std::string want;
  };
  const std::vector<Row> rows = {
      {"/home/anviltest/venv/bin/python", "/home/anviltest/venv/bin", "/home/anviltest/venv", true,
       "/home/anviltest/venv/bin/python: its directory is not in the sandbox's view (fix: "
       "--readable-root /home/anviltest/venv, its environment, or readable_roots in config.toml; "
       "an activated environment is shown by itself)"},
      {"python", "/opt/conda/envs/ml/bin", "/opt/conda/envs/ml", false,
       "python: /opt/conda/envs/ml/bin is not in the sandbox's view (fix: --readable-root "
       "/opt/conda/envs/ml, its environment, or readable_roots in config.toml; an activated "
       "environment is shown by itself)"},
      // Not an environment: as before.
      {"tool", "/home/u/tools/bin", "", false,
       "tool: /home/u/tools/bin is not in the sandbox's view (fix: --readable-root "
       "/home/u/tools/bin, or readable_roots in config.toml; or --read-access full)"},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(NotInViewMessage(row.program, row.dir, row.hidden, 239, row.env), row.want);
  }
  for (size_t length : {60u, 110u, 150u, 200u, 239u, 400u}) {
    std::string env = "/home/u";
    while (env.size() < length) env += "/deeper";
    env += "/venv";
    const std::string m = NotInViewMessage(env + "/bin/python", env + "/bin", true, 239, env);
    EXPECT_LE(m.size(), 239u) << m;
    EXPECT_NE(m.find(" (fix: --readable-root /home/u/"), std::string::npos) << m;
    EXPECT_NE(m.find("/venv, its environment, or readable_roots in config.toml"), std::string::npos)
        << m;
    EXPECT_EQ(m.find("/venv/bin, its environment"), std::string::npos) << m;
    EXPECT_EQ(m.back(), ')') << m;
  }
}

TEST(ProgramEnvironment, AVirtualenvOrCondaEnvironmentHoldingTheDirectory) {
  char tmpl[] = "/tmp/anvil-progenv-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string base = tmpl;
  for (const std::string d : {"/venv", "/venv/bin", "/conda", "/conda/bin", "/conda/conda-meta",
                              "/plain", "/plain/bin", "/odd", "/odd/bin", "/odd/pyvenv.cfg"}) {
    ASSERT_EQ(mkdir((base + d).c_str(), 0755), 0) << d;
  }
  std::ofstream(base + "/venv/pyvenv.cfg") << "home = /usr/bin\n";
  EXPECT_EQ(ProgramEnvironment(base + "/venv/bin"), base + "/venv");
  EXPECT_EQ(ProgramEnvironment(base + "/conda/bin"), base + "/conda");
  EXPECT_EQ(ProgramEnvironment(base + "/plain/bin"), "");
  EXPECT_EQ(ProgramEnvironment(base + "/odd/bin"), "");  // a pyvenv.cfg that is no file
  EXPECT_EQ(ProgramEnvironment(base + "/venv"), "");
  EXPECT_EQ(ProgramEnvironment("/bin"), "");
  EXPECT_EQ(ProgramEnvironment("/"), "");
  EXPECT_EQ(ProgramEnvironment(""), "");
  std::filesystem::remove_all(base);
}

TEST(ProgramDirectory, AbsoluteFromTheWorkingDirectory) {
  EXPECT_EQ(ProgramDirectory("/home/u/v2/bin/python", "/ws"), "/home/u/v2/bin");
  EXPECT_EQ(ProgramDirectory("rel/tool", "/ws"), "/ws/rel");
  EXPECT_EQ(ProgramDirectory("./x.sh", "/ws"), "/ws");
  EXPECT_EQ(ProgramDirectory("/tool", "/ws"), "/");
  EXPECT_EQ(ProgramDirectory("", "/ws"), "");
}

class ResolveProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/anvil-resolve-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    for (const std::string sub : {"/scripts", "/bin", "/rel"}) {
      ASSERT_EQ(mkdir((dir_ + sub).c_str(), 0755), 0);
    }
    for (const std::string file : {"/x.sh", "/scripts/gen.sh", "/bin/tool", "/rel/tool2"}) {
      std::ofstream(dir_ + file) << "#!/bin/sh\n";
      chmod((dir_ + file).c_str(), 0755);
    }
    std::ofstream(dir_ + "/bin/plain") << "not executable\n";
  }
  void TearDown() override { ASSERT_EQ(std::system(("rm -rf '" + dir_ + "'").c_str()), 0); }
  std::string dir_;
};

TEST_F(ResolveProgramTest, ThePathIsTheOneTheLookupProduced) {
  struct Row {
    std::string command, path_env, path;
  };
  const Row rows[] = {
      {"./x.sh", "/usr/bin", "./x.sh"},                               // as typed
      {"scripts/gen.sh", "/usr/bin", "scripts/gen.sh"},               // as typed, from the cwd
      {dir_ + "/x.sh", "/usr/bin", dir_ + "/x.sh"},                   // absolute
      {"tool", "/nonexistent:" + dir_ + "/bin", dir_ + "/bin/tool"},  // PATH entry + name
      {"tool2", "/usr/bin:rel", "rel/tool2"},  // a relative PATH entry stays so
      {"x.sh", "/usr/bin::", "./x.sh"},        // an empty entry: the cwd
  };
  for (const Row& row : rows) {
    auto program = ResolveProgram(row.command, row.path_env, dir_);
    ASSERT_TRUE(program) << row.command << ": " << program.error().ToString();
    EXPECT_EQ(program->path, row.path) << row.command;
    struct stat by_fd {
    }, by_path{};
    ASSERT_EQ(fstat(program->fd.Get(), &by_fd), 0);
    ASSERT_EQ(stat((row.path[0] == '/' ? row.path : dir_ + "/" + row.path).c_str(), &by_path), 0);
    EXPECT_EQ(by_fd.st_ino, by_path.st_ino) << row.command;
  }
}

TEST_F(ResolveProgramTest, SaysWhetherThePathIsASymbolicLink) {
  ASSERT_EQ(symlink("tool", (dir_ + "/bin/lnk").c_str()), 0);
  auto link = ResolveProgram("lnk", dir_ + "/bin", dir_);
  ASSERT_TRUE(link) << link.error().ToString();
  EXPECT_TRUE(link->link);
  auto plain = ResolveProgram("tool", dir_ + "/bin", dir_);
  ASSERT_TRUE(plain) << plain.error().ToString();
  EXPECT_FALSE(plain->link);
}

TEST_F(ResolveProgramTest, MissingAndNonExecutableProgramsAreTheUsualErrors) {
  auto missing = ResolveProgram("nope", dir_ + "/bin", dir_);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, "not_found");
  auto plain = ResolveProgram("plain", dir_ + "/bin", dir_);
  ASSERT_FALSE(plain);
  EXPECT_EQ(plain.error().code, "not_executable");
  auto directory = ResolveProgram("./scripts", "", dir_);
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.error().code, "not_executable");
}

}  // namespace
}  // namespace program_exec_test
}  // namespace anvil

namespace anvil {
namespace program_exec_test {
namespace {

// A CMD that is no program gets its fix named; a real name gets nothing added.
TEST(NotFoundHint, NamesTheFixForWhatIsNoProgram) {
  struct Case {
    const char* command;
    const char* wants;  // "" when nothing is added
  } cases[] = {
      {"make", ""},
      {"my-tool", ""},
      {"cd", "shell builtin"},
      {"cd", "--workdir DIR"},
      {"source", "`bash -c 'source"},
      {"export", "`sh -c 'export"},
      {"FOO=1", "--setenv FOO=1"},
      {"A_B=x y", "--setenv A_B=x y"},
      {"make -v", "`-- sh -c 'make -v'`"},
      {"=x", ""},
  };
  for (const auto& c : cases) {
    const std::string hint = NotFoundHint(c.command);
    if (std::string(c.wants).empty()) {
      EXPECT_EQ(hint, "") << c.command;
    } else {
      EXPECT_NE(hint.find(c.wants), std::string::npos) << c.command << ": " << hint;
    }
  }
}

}  // namespace
}  // namespace program_exec_test
}  // namespace anvil
