#include "cli/doctor_command.h"

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "linux/helper_executable.h"
#include "linux/host_socket_facts.h"
#include "linux/kernel_probe.h"
#include "linux/seccomp.h"
#include "policy/display_text.h"
#include "policy/tree_alias.h"

namespace anvil::cli {
namespace {

struct HelperRow {
  std::string name;
  std::string path;   // where it was found ("" when not)
  std::string error;  // why it is refused or missing ("" when usable)
  std::string fix;
};

// "... fix: X" split into the error and X.
void SplitFix(std::string& error, std::string& fix) {
  // "... (fix: X)" or "...; fix: X)" or "... . fix: X": the fix on its own line.
  if (auto at = error.rfind("fix: "); at != std::string::npos) {
    fix = error.substr(at + 5);
    // The ")" closing "(fix: X)", not one of X's own.
    if (!fix.empty() && fix.back() == ')' &&
        std::count(fix.begin(), fix.end(), ')') > std::count(fix.begin(), fix.end(), '(')) {
      fix.pop_back();
    }
    error.erase(at);
    while (!error.empty() && (error.back() == ' ' || error.back() == '(' || error.back() == ';')) {
      error.pop_back();
    }
  }
}

// The host's mount table, which bind-alias protection needs (policy/tree_alias.h): the sandbox
// does not start without it.
struct MountTableRow {
  size_t mounts = 0;
  std::string error;  // "" when it can be had
  std::string fix;
};

MountTableRow ProbeMountTable() {
  MountTableRow row;
  auto table = MountTableForAliases(ReadHostMountInfo());
  if (table) {
    row.mounts = table->size();
  } else {
    row.error = table.error().message;
    SplitFix(row.error, row.fix);
  }
  return row;
}

// Every helper, looked up the way `anvil run`, `anvil serve` and `anvil sandbox` look them up.
std::vector<HelperRow> ProbeHelpers() {
  std::vector<HelperRow> rows;
  for (std::string_view name : kHelperNames) {
    HelperRow row{std::string(name), "", "", ""};
    if (auto found = FindHelper(name)) {
      row.path = found->path;
    } else {
      row.error = found.error().ToString();
      SplitFix(row.error, row.fix);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

CommandSpec DoctorSpec(bool& json) {
  CommandSpec spec;
  spec.echo = SanitizeFlagArgument;
  spec.name = "doctor";
  spec.program = "anvil doctor";
  spec.summary = "check which kernel sandbox layers work";
  spec.synopsis = "[--json]";
  spec.description =
      "Probe the kernel for every sandbox layer Anvil uses, check that the host's mount table\n"
      "(bind-alias protection) can be read, and find the helper executables Anvil starts.\n"
      "Exit 0 when untrusted plugins and commands can run with every required\n"
      "layer, 1 when they cannot (the output says which layer or helper, and how to fix it).";
  spec.flags = {
      Switch("--json",
             "print one JSON object: ok, landlock_abi, per layer its name,\n"
             "whether it is available and required, what was found, the fix and\n"
             "a shell command to check it by hand, and per helper where it was found",
             [&json] { json = true; }),
  };
  spec.examples = {
      "anvil doctor                       # a line per layer: ok, degraded, MISSING",
      "anvil doctor --json | jq .layers   # for scripts",
  };
  spec.style.see_help_hint = false;
  return spec;
}

CommandSpec DoctorCommandSpec() {
  static bool unused;
  return DoctorSpec(unused);
}

int RunDoctorCommand(const std::vector<std::string>& args) {
  bool json = false;
  const CommandSpec spec = DoctorSpec(json);
  auto parsed = ParseFlags(spec, args);
  if (!parsed) {
    std::cerr << "anvil doctor: " << parsed.error().ToString() << "\n";
    return 2;
  }
  if (parsed->help) {
    std::cout << RenderHelp(spec);
    return 0;
  }
  KernelProbe probe = ProbeKernel();
  const bool kernel_ok = probe.AllRequiredAvailable();
  const std::vector<HelperRow> helpers = ProbeHelpers();
  bool helpers_ok = true;
  for (const auto& h : helpers) helpers_ok = helpers_ok && h.error.empty();
  const MountTableRow mount_table = ProbeMountTable();
  const bool mounts_ok = mount_table.error.empty();
  const bool ok = kernel_ok && helpers_ok && mounts_ok;
  if (json) {
    nlohmann::json out;
    out["ok"] = ok;
    out["landlock_abi"] = probe.landlock_abi;
    for (const auto& l : probe.layers) {
      out["layers"].push_back({{"name", l.name},
                               {"available", l.available},
                               {"required", l.required},
                               {"detail", l.detail},
                               {"fix", l.fix},
                               {"check", l.check}});
    }
    for (const auto& h : helpers) {
      nlohmann::json row = {{"name", h.name}, {"ok", h.error.empty()}, {"path", h.path}};
      if (!h.error.empty()) row["error"] = h.error;
      if (!h.fix.empty()) row["fix"] = h.fix;
      out["helpers"].push_back(row);
    }
    nlohmann::json table = {{"ok", mounts_ok}, {"mounts", mount_table.mounts}};
    if (!mounts_ok) {
      table["error"] = mount_table.error;
      table["fix"] = mount_table.fix;
    }
    out["mount_table"] = table;
    std::cout << out.dump(2) << "\n";
    return ok ? 0 : 1;
  }
  for (const auto& l : probe.layers) {
    const char* mark = l.available ? "ok      " : (l.required ? "MISSING " : "degraded");
    std::cout << mark << "  " << l.name << ": " << l.detail << "\n";
    if (!l.available && !l.fix.empty()) std::cout << "          fix: " << l.fix << "\n";
    if (!l.available && !l.check.empty()) std::cout << "          check: " << l.check << "\n";
  }
  if (mounts_ok) {
    std::cout << "ok        mount table: /proc/self/mountinfo, " << mount_table.mounts
              << " mounts (bind-alias protection)\n";
  } else {
    std::cout << "MISSING   mount table: " << mount_table.error << "\n";
    if (!mount_table.fix.empty()) std::cout << "          fix: " << mount_table.fix << "\n";
  }
  for (const auto& h : helpers) {
    if (h.error.empty()) {
      std::cout << "ok        helper " << h.name << ": " << h.path << "\n";
      continue;
    }
    std::cout << "REFUSED   helper " << h.name << ": " << h.error << "\n";
    if (!h.fix.empty()) std::cout << "          fix: " << h.fix << "\n";
  }
  std::cout << "\n";
  if (ok) {
    std::cout << "Untrusted plugins and commands can run with every required layer.\n";
  } else if (!kernel_ok) {
    std::cout << "Untrusted plugins and commands will NOT run: a required layer is missing "
                 "(fail closed).\n";
  } else if (!mounts_ok) {
    std::cout << "Sandboxed commands will NOT run: bind-alias protection needs the mount table "
                 "(fail closed).\n";
  } else {
    std::cout << "Plugins and commands that need a helper will NOT run: a helper is missing or "
                 "could be replaced by someone other than root or you (fail closed).\n";
  }
  return ok ? 0 : 1;
}

}  // namespace anvil::cli
