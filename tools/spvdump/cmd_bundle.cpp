// export, import, prewarm: moving a warm cache between machines.
#include <iostream>

#include "cache/recorder.h"
#include "commands.h"
#include "json.h"
#include "lookup.h"

namespace spvdump {

namespace {

std::string bad_json(const std::vector<cache::BadFile>& bad) {
  std::vector<std::string> items;
  for (const auto& b : bad) {
    items.push_back(JsonObject().add("path", b.path).add("reason", b.reason).str());
  }
  return json_array(items);
}

int run_export(const Args& args) {
  auto c = open_cache(args);
  auto report = c.export_bundle(args.positional()[0]);
  if (args.flag("--json")) {
    std::cout << JsonObject()
                     .add("bundle", args.positional()[0])
                     .add("kernels", report.kernels)
                     .add("pipeline_caches", report.pipeline_caches)
                     .add("bytes", report.bytes)
                     .add_raw("skipped", bad_json(report.skipped))
                     .str()
              << "\n";
    return 0;
  }
  for (const auto& s : report.skipped) {
    std::cout << "skipped " << s.path << ": " << s.reason << "\n";
  }
  std::cout << "exported " << report.kernels << " kernels and " << report.pipeline_caches
            << " pipeline caches (" << report.bytes << " bytes) to " << args.positional()[0]
            << "\n";
  return 0;
}

int run_import(const Args& args) {
  std::string fingerprint = args.option("--fingerprint").value_or("");
  auto c = open_cache(args, fingerprint);
  auto report = c.import_bundle(args.positional()[0]);
  if (args.flag("--json")) {
    std::cout << JsonObject()
                     .add("bundle", args.positional()[0])
                     .add("kernels", report.kernels)
                     .add("foreign_kernels", report.foreign_kernels)
                     .add("pipeline_caches", report.pipeline_caches)
                     .add("foreign_pipeline_caches", report.foreign_pipeline_caches)
                     .add_raw("bad", bad_json(report.bad))
                     .str()
              << "\n";
  } else {
    for (const auto& b : report.bad) {
      std::cout << "BAD " << b.path << ": " << b.reason << "\n";
    }
    std::cout << "imported " << report.kernels << " kernels";
    if (!fingerprint.empty()) {
      std::cout << " (" << report.foreign_kernels << " for other devices)";
    }
    std::cout << " and " << report.pipeline_caches << " pipeline caches; skipped "
              << report.foreign_pipeline_caches << " pipeline caches of other devices";
    if (fingerprint.empty() && report.foreign_pipeline_caches > 0) {
      std::cout << " (no --fingerprint given: every device counts as another)";
    }
    std::cout << "; " << report.bad.size() << " bad records\n";
  }
  return report.bad.empty() ? 0 : 1;
}

int run_prewarm(const Args& args) {
  // Reading the file first gives a clear error for a bad path even before the runtime
  // exists.
  auto keys = cache::read_recorded_keys(args.positional()[0]);
  throw ToolError(
      "prewarm needs the Vulkan runtime to build pipelines, and this spvdump "
      "is not built with it yet (" +
      std::to_string(keys.size()) +
      " keys read). Until then, run the workload once to fill the cache.");
}

}  // namespace

std::vector<Command> bundle_commands() {
  std::vector<Command> out;
  Command exp{"export",
              "write the whole cache into one bundle file",
              std::string("usage: spvdump export <bundle> [options]\n"
                          "\n"
                          "Writes every valid kernel and pipeline cache, for every device, "
                          "into <bundle>\n(atomically). Bad entries are skipped and "
                          "listed.\n"
                          "\n"
                          "options:\n"
                          "  --json           one JSON object\n") +
                  kDirHelp,
              {{"--json"}, {}, 1, 1},
              run_export};
  Command imp{"import",
              "add a bundle's entries to the cache",
              std::string("usage: spvdump import <bundle> [options]\n"
                          "\n"
                          "Checks the bundle's checksum, then validates and writes each "
                          "entry. Kernels of\nevery device are kept under their own device; "
                          "pipeline-cache data is written\nonly for the device named by "
                          "--fingerprint (a driver is never handed another\ndriver's data). "
                          "Exit code 1 when a record was bad.\n"
                          "\n"
                          "options:\n"
                          "  --fingerprint FP the fingerprint of this machine's device, as "
                          "in fingerprint.txt\n"
                          "  --json           one JSON object\n") +
                  kDirHelp,
              {{"--json"}, {"--fingerprint"}, 1, 1},
              run_import};
  Command pre{"prewarm",
              "build every kernel of a recorded key file (not yet available)",
              std::string("usage: spvdump prewarm <keys-file> [options]\n"
                          "\n"
                          "Compiles every key recorded with MLX_VK_RECORD_KERNELS=<file> "
                          "into the cache,\nSPIR-V and pipeline cache. Needs the Vulkan "
                          "runtime, which this build of spvdump\ndoes not include yet: it "
                          "exits with code 1.\n"
                          "\n"
                          "options:\n") +
                  kDirHelp,
              {{}, {}, 1, 1},
              run_prewarm};
  for (Command* c : {&exp, &imp, &pre}) {
    add_common(c->spec);
    out.push_back(std::move(*c));
  }
  return out;
}

}  // namespace spvdump
