// export, import: moving a warm cache between machines.
#include <iostream>

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
  auto c = open_existing_cache(args);
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
  for (Command* c : {&exp, &imp}) {
    add_common(c->spec);
    out.push_back(std::move(*c));
  }
  return out;
}

}  // namespace spvdump
