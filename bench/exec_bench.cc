// sys.exec cost (issue 5): `rg PATTERN` over a generated 10,000-file workspace through the real
// gateway (gateway → exec broker → job → anvil-exec-runner → rg), against bare `rg` on the same
// tree in the same run; and the fixed cost per call (`rg` on a one-file workspace through the
// gateway minus bare). Requests are sent the way a plugin host sends them (a registered
// capability token on a passed connection); the host's own hop is the no-op round trip that
// gateway_bench measures (tens of µs). Prints medians and ratios; asserts nothing.
//
// The fixed-cost target (3 ms) was set on a machine where bare /bin/true took 0.4 ms and
// bwrap 3.4 ms; machines differ several-fold in process creation, so bare /bin/true (fork + exec
// + wait, the way bare rg is started) is measured in the same run, interleaved, and the fixed
// cost is also printed as a multiple of it beside the absolute figure (target: <= 3 / 0.4 =
// 7.5x).
//
// SETTLE_MS (default 50; 0 = back to back): a pause before every timed sample, bare or not, so
// that no sample pays for background work the previous one left (after an answer the broker
// warms the next sandbox and tears the last one down; with no pause that lands on whichever
// sample comes next, bare rg included). The pause does not count.
//
// LOOP (default 10; 0 = none): on the one-file workspace, also LOOP calls back to back with
// nothing between them, as a plugin's loop makes them, against LOOP bare rg in a row; the extra
// per call is printed with a 90% bootstrap interval over the rounds (target: <= 1 ms).
//
//   build/release/bench/exec_bench build/release [ROUNDS] [SETTLE_MS] [LOOP]
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_floors.h"
#include "fs/exec_read_plan.h"
#include "fs/workspace_root.h"
#include "ipc/capability_token.h"
#include "ipc/gateway_client.h"
#include "session/gateway_process.h"

using Clock = std::chrono::steady_clock;

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Bare /bin/true, started like bare rg (fork + exec + wait): this machine's process-creation
// anchor.
double BareTrue() {
  auto t0 = Clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    char name[] = "true";
    char* argv[] = {name, nullptr};
    execv("/bin/true", argv);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return Ms(Clock::now() - t0);
}

// Bare rg, started the cheapest way (fork + exec, output to /dev/null), cwd = the workspace.
double BareRg(const std::string& ws, const std::vector<std::string>& args) {
  auto t0 = Clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(ws.c_str()) != 0) _exit(127);
    FILE* null = std::freopen("/dev/null", "w", stdout);
    (void)null;
    std::vector<char*> argv;
    std::string rg = "rg", nc = "--no-config";
    argv.push_back(rg.data());
    argv.push_back(nc.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv("/usr/bin/rg", argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return Ms(Clock::now() - t0);
}

std::string MakeTree(const std::string& base, int files) {
  std::string ws = base;
  mkdir(ws.c_str(), 0755);
  for (int d = 0; d < 10; ++d) {
    for (int e = 0; e < 10; ++e) {
      std::string dir = ws + "/d" + std::to_string(d) + "/e" + std::to_string(e);
      std::string cmd = "mkdir -p '" + dir + "'";
      if (std::system(cmd.c_str()) != 0) return "";
      for (int f = 0; f < files / 100; ++f) {
        std::ofstream out(dir + "/f" + std::to_string(f) + ".txt");
        int n = (d * 10 + e) * (files / 100) + f;
        out << "line one of file " << n << "\nsome ordinary text here\n";
        if (n % 50 == 0) out << "the NEEDLE is here\n";
      }
    }
  }
  return ws;
}

}  // namespace

int main(int argc, char** argv) {
  std::string bin_dir = argc > 1 ? argv[1] : "build/release";
  int rounds = argc > 2 ? std::atoi(argv[2]) : 30;
  int settle_ms = argc > 3 ? std::atoi(argv[3]) : 50;
  int loop = argc > 4 ? std::atoi(argv[4]) : 10;
  auto settle = [&] {
    if (settle_ms > 0) usleep(static_cast<useconds_t>(settle_ms) * 1000);
  };
  char tmpl[] = "/tmp/anvil-exec-bench-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  std::string root = tmpl;
  std::string big = MakeTree(root + "/big", 10000);
  std::string small = root + "/small";
  mkdir(small.c_str(), 0755);
  std::ofstream(small + "/one.txt") << "the NEEDLE is here\n";
  if (big.empty()) return 1;
  // A workspace is not seconds old: let the tree's change times pass the read-plan cache's
  // trust margin (fs/exec_read_plan.h) before the first call, as in any real session.
  sleep(3);

  std::printf("sys.exec bench: %d rounds, rg %s, %d ms pause before each sample\n", rounds,
              "NEEDLE", settle_ms);
  std::fflush(stdout);  // before any fork: a child must not flush our buffer again
  struct Row {
    const char* name;
    double bare, gw;
  };
  std::vector<Row> rows;
  std::vector<double> bare_true;
  for (const auto& [name, ws] :
       {std::pair<const char*, std::string>{"10,000 files", big}, {"1 file (fixed cost)", small}}) {
    anvil::session::GatewayConfig config{
        bin_dir + "/anvil-gateway",
        ws,
        {"--runtime-dir", root + "/run-" + std::to_string(rows.size())}};
    auto gateway = anvil::session::GatewayProcess::Start(config);
    if (!gateway) {
      std::fprintf(stderr, "gateway: %s\n", gateway.error().ToString().c_str());
      return 1;
    }
    auto token = anvil::ipc::CapabilityToken::Generate();
    anvil::Grant grant;
    grant.fs_read = {"**"};
    grant.exec = {"rg"};
    if (!token || !(*gateway)->Register(*token, "bench.exec", getpid(), geteuid(), grant)) return 1;
    auto fd = (*gateway)->Connect();
    if (!fd) return 1;
    anvil::ipc::GatewayClient client(std::move(*fd), token->bytes());
    if (!client.Hello("bench.exec", (*gateway)->workspace())) return 1;
    std::string args = nlohmann::json(std::vector<std::string>{"NEEDLE"}).dump();
    std::vector<double> bare, gw;
    // Warm the page cache and both paths once.
    BareRg(ws, {"NEEDLE"});
    client.Call("exec", {"rg", args, ""});
    for (int i = 0; i < rounds; ++i) {
      // Alternate the order so that machine noise lands on both.
      if (i % 2 == 0) {
        settle();
        bare.push_back(BareRg(ws, {"NEEDLE"}));
      }
      settle();
      auto t0 = Clock::now();
      auto r = client.Call("exec", {"rg", args, ""});
      gw.push_back(Ms(Clock::now() - t0));
      if (!r || !r->ok) {
        std::fprintf(stderr, "exec failed: %s\n",
                     r ? r->ErrorText().c_str() : r.error().ToString().c_str());
        return 1;
      }
      if (i % 2 == 1) {
        settle();
        bare.push_back(BareRg(ws, {"NEEDLE"}));
      }
      settle();
      bare_true.push_back(BareTrue());
    }
    rows.push_back({name, Median(bare), Median(gw)});
    if (ws == small && loop > 0) {
      // Back to back, as a plugin loop calls: `loop` calls with nothing between them (each
      // pays whatever the previous one left: its sandbox's teardown, the next warm runner's
      // set-up), against `loop` bare rg one after the other; per call, rounds alternating.
      std::vector<double> loop_gw, loop_bare, loop_extra, loop_ratio;
      for (int i = 0; i < rounds; ++i) {
        double b = 0, g = 0;
        for (int half = 0; half < 2; ++half) {
          settle();
          auto t0 = Clock::now();
          if ((half + i) % 2 == 0) {
            for (int k = 0; k < loop; ++k) (void)BareRg(ws, {"NEEDLE"});
            b = Ms(Clock::now() - t0) / loop;
          } else {
            for (int k = 0; k < loop; ++k) {
              auto r = client.Call("exec", {"rg", args, ""});
              if (!r || !r->ok) {
                std::fprintf(stderr, "exec failed: %s\n",
                             r ? r->ErrorText().c_str() : r.error().ToString().c_str());
                return 1;
              }
            }
            g = Ms(Clock::now() - t0) / loop;
          }
        }
        loop_bare.push_back(b);
        loop_gw.push_back(g);
        loop_extra.push_back(g - b);
        loop_ratio.push_back(g / b);
      }
      auto extra = anvil::bench::Bootstrap(loop_extra);
      auto ratio = anvil::bench::Bootstrap(loop_ratio);
      std::printf(
          "back to back, %d calls in a row, per call: bare rg %.2f ms, sys.exec %.2f ms;\n"
          "  extra per call %.2f ms [90%%: %.2f, %.2f] (target <= 1 ms), ratio %.2f [%.2f, "
          "%.2f]\n",
          loop, Median(loop_bare), Median(loop_gw), extra.median, extra.low, extra.high,
          ratio.median, ratio.low, ratio.high);
      std::fflush(stdout);
    }
    (*gateway)->Stop();
  }
  std::printf("\n%-22s %12s %14s %8s %12s\n", "workspace", "bare rg ms", "sys.exec ms", "ratio",
              "extra ms");
  for (const auto& r : rows) {
    std::printf("%-22s %12.2f %14.2f %8.2f %12.2f\n", r.name, r.bare, r.gw, r.gw / r.bare,
                r.gw - r.bare);
  }
  const double anchor = Median(bare_true);
  const double fixed = rows.size() > 1 ? rows[1].gw - rows[1].bare : 0;
  std::printf(
      "\nbare /bin/true (fork + exec + wait) %.2f ms; fixed cost %.2f ms = %.1fx bare "
      "/bin/true\n",
      anchor, fixed, anchor > 0 ? fixed / anchor : 0);
  std::printf(
      "targets (issue 5): 10,000 files ratio <= 1.10; fixed cost (1-file extra) <= 3 ms absolute,\n"
      "  or <= 7.5x bare /bin/true anchor-scaled (3 ms / 0.4 ms on the issue's machine) = %.2f ms "
      "here\n",
      7.5 * anchor);
  // The gateway's share of a call's cost that depends on the workspace: the read plan (what of
  // the workspace the tool's view holds), from a fresh planner (the first call of a session: every
  // directory read, every file's link count looked at) and from the session's cache (directories
  // unchanged: one open and fstat each). Medians of ROUNDS.
  std::printf("\n%-26s %14s %14s %8s\n", "read plan (10,000 files)", "first call ms", "cached ms",
              "ops");
  auto ws_root = anvil::WorkspaceRoot::Open(big);
  if (!ws_root) return 1;
  for (const std::vector<std::string>& grant :
       {std::vector<std::string>{"**"}, {"d0/**"}, {"d0/e0/*.txt"}}) {
    std::vector<double> cold, warm;
    size_t ops = 0;
    for (int i = 0; i < rounds; ++i) {
      anvil::ExecReadPlanner fresh(*ws_root);
      auto t0 = Clock::now();
      auto plan = fresh.Plan(grant);
      cold.push_back(Ms(Clock::now() - t0));
      if (!plan) {
        std::fprintf(stderr, "plan: %s\n", plan.error().ToString().c_str());
        return 1;
      }
      ops = plan->size();
      t0 = Clock::now();
      plan = fresh.Plan(grant);
      warm.push_back(Ms(Clock::now() - t0));
    }
    std::printf("%-26s %14.2f %14.2f %8zu\n", grant[0].c_str(), Median(cold), Median(warm), ops);
  }
  std::string cleanup = "rm -rf '" + root + "'";
  return std::system(cleanup.c_str()) == 0 ? 0 : 1;
}
