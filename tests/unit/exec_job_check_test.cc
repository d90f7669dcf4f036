// The exec broker's side of a sys.exec call (src/gateway/exec_request.h, exec_job_check.h,
// exec_job.h's JobOutcome): the call's wire form survives the trip, a malformed one is refused
// before anything else, the job's own check refuses each thing it re-checks beside the call that
// passes (and in its order), and the answer is decided from what the output pump saw.
#include "gateway/exec_job_check.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <string>
#include <vector>

#include "gateway/exec_job.h"
#include "gateway/exec_request.h"

namespace anvil::gateway {
namespace exec_job_check_test {
namespace {

using Args = std::vector<std::string>;

bool AllExist(const std::string&) { return true; }

const std::vector<ReadOp> kWholeWorkspace = {{ReadOpKind::kBindDir, ".", ""}};

ExecRequest Rg(Args args = {"-n", "needle"}) {
  ExecRequest r;
  r.program = "rg";
  r.args = std::move(args);
  r.read_plan = kWholeWorkspace;
  return r;
}

std::string Verdict(const Result<CheckedJob>& r) {
  return r ? std::string("accepted") : r.error().code + ": " + r.error().message;
}

// ---- the call's wire form --------------------------------------------------------------------

TEST(ExecCall, EveryFieldSurvivesTheWire) {
  ExecRequest r;
  r.program = "fd";
  r.args = {"-e", "", "a b", "--", "-x"};  // an empty arg and one that looks like a flag
  r.stdin_data = std::string("line\0with nul\n", 14);
  r.read_plan = {{ReadOpKind::kDir, ".", ""},
                 {ReadOpKind::kBindFile, "a.txt", ""},
                 {ReadOpKind::kSymlink, "l", "a.txt"}};
  ipc::Request wire = EncodeExecCall(r);
  EXPECT_EQ(wire.op, "exec");
  EXPECT_EQ(wire.id, 1u);
  auto back = DecodeExecCall(wire);
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(back->program, r.program);
  EXPECT_EQ(back->args, r.args);
  EXPECT_EQ(back->stdin_data, r.stdin_data);
  EXPECT_EQ(back->read_plan, r.read_plan);
}

TEST(ExecCall, NoArgsAndNoPlanSurviveTheWire) {
  ExecRequest r;
  r.program = "rg";
  auto back = DecodeExecCall(EncodeExecCall(r));
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_TRUE(back->args.empty());
  EXPECT_TRUE(back->read_plan.empty());
}

TEST(ExecCall, AMalformedCallIsRefusedWithoutLookingFurther) {
  const ipc::Request good = EncodeExecCall(Rg());
  struct Row {
    const char* name;
    void (*change)(ipc::Request&);
    const char* message;
  };
  const std::vector<Row> rows = {
      {"another op", [](ipc::Request& w) { w.op = "fs.read"; }, "malformed exec request"},
      {"a field short", [](ipc::Request& w) { w.args.pop_back(); }, "malformed exec request"},
      {"a field too many", [](ipc::Request& w) { w.args.push_back(""); }, "malformed exec request"},
      {"an arg count that is not a number", [](ipc::Request& w) { w.args[2] = "2x"; },
       "malformed exec request"},
      {"an empty arg count", [](ipc::Request& w) { w.args[2] = ""; }, "malformed exec request"},
      {"an arg count of seven digits", [](ipc::Request& w) { w.args[2] = "0000002"; },
       "malformed exec request"},
      {"a negative plan count", [](ipc::Request& w) { w.args[4] = "-2"; },
       "malformed exec request"},
      {"more args counted than sent", [](ipc::Request& w) { w.args[2] = "3"; },
       "malformed exec request"},
      {"an arg with a NUL in it", [](ipc::Request& w) { w.args[3] += std::string(1, '\0'); },
       "malformed exec request"},
      {"an odd plan",
       [](ipc::Request& w) {
         w.args[4] = "1";
         w.args[5] = "D.";
       },
       "sys.exec read plan: odd string count"},
      {"a plan entry without a kind", [](ipc::Request& w) { w.args[5] = std::string("\0", 1); },
       "sys.exec read plan: empty entry"},
  };
  ASSERT_TRUE(DecodeExecCall(good));
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    ipc::Request wire = good;
    row.change(wire);
    auto r = DecodeExecCall(wire);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, "invalid");
    EXPECT_EQ(r.error().message, row.message);
  }
}

// ---- the job's check -------------------------------------------------------------------------

TEST(ExecJobCheck, EachRecheckRefusesBesideTheCallThatPasses) {
  ExecLimits limits;
  limits.max_stdin_bytes = 4;
  struct Row {
    const char* name;
    ExecRequest request;
    const char* verdict;  // "accepted", or the start of "code: message"
  };
  auto with = [](ExecRequest r, auto change) {
    change(r);
    return r;
  };
  const std::vector<Row> rows = {
      {"rg with a pattern", Rg(), "accepted"},
      {"stdin at its cap", with(Rg(), [](auto& r) { r.stdin_data = "1234"; }), "accepted"},
      {"stdin over its cap", with(Rg(), [](auto& r) { r.stdin_data = "12345"; }),
       "limit: sys.exec stdin over 4 bytes"},
      {"a program not in the table", with(Rg(), [](auto& r) { r.program = "sh"; }),
       "denied: executable not in the policy table"},
      {"a path for a program", with(Rg(), [](auto& r) { r.program = "/usr/bin/rg"; }),
       "denied: executable not in the policy table"},
      {"a flag the table refuses", Rg({"--pre", "cat", "needle"}), "denied: "},
      {"a flag the table does not know", Rg({"--no-such-flag", "needle"}), "denied: "},
      {"no read plan", with(Rg(), [](auto& r) { r.read_plan.clear(); }),
       "invalid: sys.exec read plan: empty"},
      {"a plan that does not start at the root",
       with(Rg(),
            [](auto& r) {
              r.read_plan = {{ReadOpKind::kBindFile, "a.txt", ""}};
            }),
       "invalid: sys.exec read plan: the root must come first, once"},
      {"a plan naming a path outside the workspace",
       with(Rg(),
            [](auto& r) {
              r.read_plan.push_back({ReadOpKind::kBindFile, "../etc/passwd", ""});
            }),
       "invalid: sys.exec read plan: not a normalized workspace path"},
      // Order: the first failing check is the answer.
      {"stdin over its cap and a program not in the table",
       with(Rg(),
            [](auto& r) {
              r.stdin_data = "12345";
              r.program = "sh";
            }),
       "limit: "},
      {"a program not in the table and no read plan",
       with(Rg(),
            [](auto& r) {
              r.program = "sh";
              r.read_plan.clear();
            }),
       "denied: executable not in the policy table"},
      {"a refused flag and no read plan",
       with(Rg({"--pre", "cat", "needle"}), [](auto& r) { r.read_plan.clear(); }), "denied: "},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    std::string verdict = Verdict(CheckJob(row.request, limits, AllExist));
    EXPECT_EQ(verdict.rfind(row.verdict, 0), 0u) << verdict;
  }
}

TEST(ExecJobCheck, APassingCallCarriesTheCheckedArgvThePlanAndStdin) {
  ExecRequest r = Rg({"-n", "needle"});
  r.stdin_data = "in";
  auto job = CheckJob(r, ExecLimits{}, AllExist);
  ASSERT_TRUE(job) << job.error().ToString();
  ASSERT_NE(job->rule, nullptr);
  EXPECT_EQ(job->rule->name, "rg");
  EXPECT_EQ(job->argv.program_path, "/usr/bin/rg");
  ASSERT_FALSE(job->argv.argv.empty());
  EXPECT_EQ(job->argv.argv[0], "rg");
  EXPECT_EQ(job->argv.argv.back(), "needle");
  EXPECT_EQ(job->plan, kWholeWorkspace);
  EXPECT_EQ(job->stdin_data, "in");
}

TEST(ExecJobCheck, ATableToolThatIsNotInstalledIsNotFound) {
  auto job = CheckJob(Rg(), ExecLimits{}, [](const std::string&) { return false; });
  ASSERT_FALSE(job);
  EXPECT_EQ(job.error().code, "not_found");
}

// ---- the answer ------------------------------------------------------------------------------

TEST(ExecJobOutcome, IsDecidedFromWhatThePumpSaw) {
  auto pumped = [](std::string report) {
    PumpEnd end;
    end.result.stdout_data = "out";
    end.result.stderr_data = "err";
    end.report = std::move(report);
    return end;
  };
  struct Row {
    const char* name;
    PumpEnd end;
    std::vector<std::string> fields;  // ok: the six fields; error: code, message
    bool ok;
  };
  PumpEnd early = pumped("");
  early.done_status = 3 << 8;  // exit 3
  PumpEnd early_signal = pumped("");
  early_signal.done_status = SIGKILL;
  PumpEnd cancelled = pumped(R"({"outcome":"exited","exit_code":0})");
  cancelled.cancelled = true;
  PumpEnd capped = pumped(R"({"outcome":"signaled","exit_code":143})");
  capped.result.stdout_truncated = true;
  capped.result.limit = "stdout";
  PumpEnd capped_no_report = pumped("");
  capped_no_report.result.limit = "stderr";
  capped_no_report.result.stderr_truncated = true;
  PumpEnd backstop = pumped(R"({"outcome":"exited","exit_code":0})");
  backstop.backstop_hit = true;
  const std::vector<Row> rows = {
      {"init said the command exited 3", early, {"3", "out", "err", "0", "0", ""}, true},
      {"init said a signal ended it", early_signal, {"137", "out", "err", "0", "0", ""}, true},
      {"the runner's report: exited 0",
       pumped(R"({"outcome":"exited","exit_code":0})"),
       {"0", "out", "err", "0", "0", ""},
       true},
      {"the runner's report: exited 1",
       pumped(R"({"outcome":"exited","exit_code":1})"),
       {"1", "out", "err", "0", "0", ""},
       true},
      {"cancelled, whatever the report says",
       cancelled,
       {"cancelled", "sys.exec cancelled"},
       false},
      {"stopped at the stdout cap", capped, {"143", "out", "err", "1", "0", "stdout"}, true},
      {"stopped at the stderr cap, no report",
       capped_no_report,
       {"0", "out", "err", "0", "1", "stderr"},
       true},
      {"the runner timed the tool out",
       pumped(R"({"outcome":"timed_out"})"),
       {"timeout", "sys.exec rg passed its 1.5 s limit; the whole process tree was killed"},
       false},
      {"the backstop",
       backstop,
       {"timeout", "sys.exec rg passed its 1.5 s limit; the whole process tree was killed"},
       false},
      {"the set-up failed",
       pumped(R"({"outcome":"setup_failed","error":"landlock: no"})"),
       {"sandbox", "sys.exec did not run (fail closed): landlock: no"},
       false},
      {"no report",
       pumped(""),
       {"sandbox", "sys.exec did not run (fail closed): the runner ended without a report"},
       false},
      {"a report that is not JSON",
       pumped("{"),
       {"sandbox", "sys.exec did not run (fail closed): the runner ended without a report"},
       false},
      {"the tool could not start",
       pumped(R"({"outcome":"exec_failed","error":"ENOEXEC"})"),
       {"io", "sys.exec could not start rg: ENOEXEC"},
       false},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    ipc::Response r = JobOutcome(row.end, std::chrono::milliseconds(1500), "rg");
    EXPECT_EQ(r.id, 1u);
    EXPECT_EQ(r.ok, row.ok);
    EXPECT_EQ(r.fields, row.fields);
  }
}

TEST(ExecJobOutcome, TheAnswerSurvivesTheWire) {
  ExecResult result;
  result.code = 2;
  result.stdout_data = std::string("a\0b", 3);
  result.stderr_data = "e";
  result.stderr_truncated = true;
  result.limit = "stderr";
  auto back = DecodeExecAnswer(EncodeExecAnswer(result));
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(back->code, 2);
  EXPECT_EQ(back->stdout_data, result.stdout_data);
  EXPECT_EQ(back->stderr_data, "e");
  EXPECT_FALSE(back->stdout_truncated);
  EXPECT_TRUE(back->stderr_truncated);
  EXPECT_EQ(back->limit, "stderr");
  auto refused = DecodeExecAnswer(EncodeExecError(Error{"denied", "no", 0}));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "denied");
  EXPECT_EQ(refused.error().message, "no");
  auto short_answer = DecodeExecAnswer(ipc::Response{1, true, {"0"}});
  ASSERT_FALSE(short_answer);
  EXPECT_EQ(short_answer.error().code, "io");
}

}  // namespace
}  // namespace exec_job_check_test
}  // namespace anvil::gateway
