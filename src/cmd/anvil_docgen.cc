// anvil-docgen OUTDIR: writes what users read about `anvil` besides --help, from the same flag
// tables (src/cli/commands.h): OUTDIR/man/man1/anvil.1 and anvil-COMMAND.1, and the shell
// completions OUTDIR/completions/{anvil (bash), _anvil (zsh), anvil.fish}. Run at build time;
// not installed.
#include <sys/stat.h>

#include <fstream>
#include <iostream>
#include <string>

#include "cli/command_docs.h"
#include "cli/commands.h"

#ifndef ANVIL_VERSION
#error "ANVIL_VERSION must come from CMake"
#endif

namespace {

bool Write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) std::cerr << "anvil-docgen: cannot write " << path << "\n";
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: anvil-docgen OUTDIR\n";
    return 2;
  }
  const std::string out = argv[1];
  for (const std::string& dir : {out, out + "/man", out + "/man/man1", out + "/completions"}) {
    ::mkdir(dir.c_str(), 0755);
  }
  const anvil::cli::ToolSpec tool = anvil::cli::AnvilTool(ANVIL_VERSION);
  bool ok = Write(out + "/man/man1/anvil.1", anvil::cli::RenderToolMan(tool));
  for (const auto& command : tool.commands) {
    ok = Write(out + "/man/man1/anvil-" + command.name + ".1",
               anvil::cli::RenderMan(tool, command)) &&
         ok;
  }
  ok = Write(out + "/completions/anvil", anvil::cli::RenderBashCompletion(tool)) && ok;
  ok = Write(out + "/completions/_anvil", anvil::cli::RenderZshCompletion(tool)) && ok;
  ok = Write(out + "/completions/anvil.fish", anvil::cli::RenderFishCompletion(tool)) && ok;
  return ok ? 0 : 1;
}
