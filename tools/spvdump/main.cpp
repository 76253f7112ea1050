// spvdump: see every kernel the Vulkan backend generated, and manage the disk cache.
// docs/spvdump.md describes the subcommands; exit codes: 0 ok, 1 error, 2 usage.
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "lookup.h"

using namespace spvdump;

namespace {

std::vector<Command> all_commands() {
  std::vector<Command> all;
  for (auto group : {cache_commands(), spirv_commands(), gen_commands(), bundle_commands(),
                     prewarm_commands()}) {
    all.insert(all.end(), group.begin(), group.end());
  }
  return all;
}

std::string overview(const std::vector<Command>& commands) {
  std::string out =
      "usage: spvdump <command> [options]\n"
      "\n"
      "Inspect the kernels the mlx-vulkan backend generates and manage its disk cache.\n"
      "\n"
      "commands:\n";
  for (const auto& c : commands) {
    out += "  " + c.name + std::string(10 - std::min<size_t>(9, c.name.size()), ' ') + c.summary +
           "\n";
  }
  out +=
      "\n"
      "Run 'spvdump <command> --help' for a command's options.\n"
      "Exit codes: 0 ok, 1 error (unknown kernel, bad file, I/O), 2 usage.\n";
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto commands = all_commands();
  if (args.empty()) {
    std::cerr << overview(commands);
    return 2;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    if (args.size() > 1 && args[0] == "help") {
      args = {args[1], "--help"};
    } else {
      std::cout << overview(commands);
      return 0;
    }
  }
  const Command* command = nullptr;
  for (const auto& c : commands) {
    if (c.name == args[0]) {
      command = &c;
    }
  }
  if (!command) {
    std::cerr << "spvdump: unknown command '" << args[0] << "'\n\n" << overview(commands);
    return 2;
  }
  try {
    Args parsed(command->name, std::vector<std::string>(args.begin() + 1, args.end()),
                command->spec);
    if (parsed.flag("--help")) {
      std::cout << command->help;
      return 0;
    }
    return command->run(parsed);
  } catch (const UsageError& e) {
    std::cerr << "spvdump " << e.what() << "\n\n" << command->help;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "spvdump " << command->name << ": " << e.what() << "\n";
    return 1;
  }
}
