// The subcommands. Each has its own help text and argument spec; run() returns the exit
// code (0 ok, 1 error) and throws UsageError (exit 2) or ToolError (exit 1).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "args.h"

namespace spvdump {

struct Command {
  std::string name;
  std::string summary;  // one line, for `spvdump --help`
  std::string help;     // the full text of `spvdump <name> --help`
  ArgSpec spec;
  std::function<int(const Args&)> run;
};

// Options every subcommand takes.
inline void add_common(ArgSpec& spec) {
  spec.options.insert("--dir");
}

inline const char* kDirHelp =
    "  --dir DIR        the cache root (default: MLX_VK_CACHE_DIR, else\n"
    "                   $XDG_CACHE_HOME/mlx-vulkan, else ~/.cache/mlx-vulkan)\n";

std::vector<Command> cache_commands();    // list, show, stats, verify, clear, tuning
std::vector<Command> bundle_commands();   // export, import
std::vector<Command> prewarm_commands();  // prewarm (needs the Vulkan runtime)
std::vector<Command> spirv_commands();    // dis, reflect, glsl
std::vector<Command> gen_commands();      // gen

}  // namespace spvdump
