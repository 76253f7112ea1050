// list, show, stats, verify, clear: reading and tending the cache directory.
#include <iostream>
#include <map>

#include "cache/hash.h"
#include "cache/layout.h"
#include "cache/tuning.h"
#include "codegen/codegen.h"
#include "commands.h"
#include "json.h"
#include "lookup.h"
#include "text.h"

namespace spvdump {

namespace {

namespace codegen = mlx::core::vulkan::codegen;

std::string device_hash(const cache::KernelEntry& e) {
  return cache::to_hex(cache::fingerprint_hash(e.fingerprint));
}

std::string entry_json(const cache::KernelEntry& e, bool full) {
  JsonObject o;
  o.add("hash", cache::to_hex(e.hash))
      .add("key", e.key)
      .add("family", key_family(e.key))
      .add("device", device_hash(e))
      .add("fingerprint", e.fingerprint)
      .add("spirv_bytes", uint64_t{e.spirv.size() * 4})
      .add("glslang_ms", e.glslang_ms)
      .add("optimize_ms", e.optimize_ms)
      .add("pipeline_ms", e.pipeline_ms)
      .add("optimizer_level", static_cast<int>(e.optimizer_level))
      .add("created_ms", e.created_ms)
      .add("last_used_ms", e.last_used_ms);
  if (full) {
    o.add("template", e.template_name)
        .add("template_hash", cache::to_hex(e.template_hash))
        .add("compiler_version", e.compiler_version)
        .add_raw("defines", json_string_array(e.defines))
        .add("glsl", e.glsl);
  }
  return o.str();
}

// Kernel files that list() could not read, on stderr so that stdout stays a listing (or
// JSON). Like verify, exit 1 while bad files remain.
int report_bad(const std::vector<cache::BadFile>& bad) {
  for (const auto& b : bad) {
    std::cerr << "BAD " << b.path << ": " << b.reason << "\n";
  }
  if (bad.empty()) {
    return 0;
  }
  std::cerr << bad.size() << " bad kernel file" << (bad.size() == 1 ? "" : "s")
            << " not listed ('spvdump verify --remove-bad' removes them)\n";
  return 1;
}

int run_list(const Args& args) {
  auto c = open_existing_cache(args);
  auto family = args.option("--family");
  auto dtype = args.option("--dtype");
  auto grep = args.option("--grep");
  std::string device = args.option("--device").value_or("");
  std::vector<cache::KernelEntry> shown;
  std::vector<cache::BadFile> bad;
  for (auto& e : c.list(&bad)) {
    if ((family && key_family(e.key) != *family) || (dtype && !key_has_dtype(e.key, *dtype)) ||
        (grep && e.key.find(*grep) == std::string::npos) || !device_matches(e, device)) {
      continue;
    }
    shown.push_back(std::move(e));
  }
  if (args.flag("--json")) {
    std::vector<std::string> items;
    for (const auto& e : shown) {
      items.push_back(entry_json(e, false));
    }
    std::cout << json_array(items) << "\n";
    return report_bad(bad);
  }
  if (shown.empty()) {
    std::cout << "no cached kernels match in " << c.config().dir.string() << "\n";
    return report_bad(bad);
  }
  std::vector<std::vector<std::string>> rows = {
      {"HASH", "DEVICE", "SPIRV_BYTES", "COMPILE_MS", "PIPELINE_MS", "LAST_USED", "KEY"}};
  for (const auto& e : shown) {
    rows.push_back({cache::to_hex(e.hash), device_hash(e).substr(0, 8),
                    std::to_string(e.spirv.size() * 4), format_ms(e.glslang_ms + e.optimize_ms),
                    format_ms(e.pipeline_ms), format_time(e.last_used_ms), e.key});
  }
  std::cout << format_table(rows) << shown.size() << " kernel" << (shown.size() == 1 ? "" : "s")
            << "\n";
  return report_bad(bad);
}

int run_show(const Args& args) {
  auto c = open_existing_cache(args);
  auto e = resolve_entry(c, args.positional()[0], args.option("--device").value_or(""));
  if (args.flag("--json")) {
    std::cout << entry_json(e, true) << "\n";
    return 0;
  }
  std::cout << format_table({
      {"hash:", cache::to_hex(e.hash)},
      {"key:", e.key},
      {"device:", device_hash(e) + "  " + e.fingerprint},
      {"template:", e.template_name + " (hash " + cache::to_hex(e.template_hash) + ")"},
      {"compiler:", e.compiler_version},
      {"optimizer level:", std::to_string(e.optimizer_level)},
      {"glslang ms:", format_ms(e.glslang_ms)},
      {"optimize ms:", format_ms(e.optimize_ms)},
      {"pipeline ms:", format_ms(e.pipeline_ms)},
      {"created:", format_time(e.created_ms)},
      {"last used:", format_time(e.last_used_ms)},
      {"SPIR-V:", std::to_string(e.spirv.size()) + " words (" + std::to_string(e.spirv.size() * 4) +
                      " bytes)"},
  });
  std::cout << "defines:\n";
  for (const auto& d : e.defines) {
    std::cout << "  #define " << d << "\n";
  }
  if (e.glsl.empty()) {
    std::cout << "GLSL: not stored in the cache; 'spvdump gen " << e.key
              << "' renders it (with default device caps), 'spvdump glsl' decompiles it\n";
  } else {
    std::cout << "--- GLSL ---\n" << e.glsl << (e.glsl.ends_with("\n") ? "" : "\n");
  }
  return 0;
}

// The GEMM autotune's records (cache/tuning.h) of every device.
int run_tuning(const Args& args) {
  auto c = open_existing_cache(args);
  const auto& dir = c.config().dir;
  std::vector<std::string> items;
  std::vector<std::vector<std::string>> rows = {{"DEVICE", "CLASS", "CHOICE"}};
  for (const auto& f : cache::scan(dir)) {
    if (f.role != cache::FileRole::Tuning || !f.regular) {
      continue;
    }
    for (const auto& [cls, choice] : cache::read_tuning(dir, f.fingerprint_hash)) {
      std::string device = cache::to_hex(f.fingerprint_hash);
      items.push_back(
          JsonObject().add("device", device).add("class", cls).add("choice", choice).str());
      rows.push_back({device.substr(0, 8), cls, choice});
    }
  }
  if (args.flag("--json")) {
    std::cout << json_array(items) << "\n";
  } else if (rows.size() == 1) {
    std::cout << "no tuning records in " << dir.string() << "\n";
  } else {
    std::cout << format_table(rows);
  }
  return 0;
}

int run_stats(const Args& args) {
  auto c = open_existing_cache(args);
  const auto& config = c.config();
  struct Device {
    uint64_t kernels = 0;
    uint64_t bytes = 0;
    uint64_t pipeline_cache_bytes = 0;
  };
  std::map<uint64_t, Device> devices;
  uint64_t total = 0;
  uint64_t kernels = 0;
  for (const auto& f : cache::scan(config.dir)) {
    if (!f.regular) {
      continue;  // a FIFO or device under our name holds nothing; verify reports it
    }
    Device& d = devices[f.fingerprint_hash];
    d.bytes += f.size;
    total += f.size;
    if (f.role == cache::FileRole::Kernel) {
      ++d.kernels;
      ++kernels;
    } else if (f.role == cache::FileRole::PipelineCache) {
      d.pipeline_cache_bytes = f.size;
    }
  }
  auto fingerprint_of = [&](uint64_t h) {
    return cache::read_fingerprint(config.dir, h).value_or("(fingerprint.txt missing)");
  };
  if (args.flag("--json")) {
    std::vector<std::string> items;
    for (const auto& [h, d] : devices) {
      items.push_back(JsonObject()
                          .add("device", cache::to_hex(h))
                          .add("fingerprint", fingerprint_of(h))
                          .add("kernel_files", d.kernels)
                          .add("bytes", d.bytes)
                          .add("pipeline_cache_bytes", d.pipeline_cache_bytes)
                          .str());
    }
    std::cout << JsonObject()
                     .add("dir", config.dir.string())
                     .add("mode", cache::to_string(config.mode))
                     .add("max_bytes", config.max_bytes)
                     .add("bytes_on_disk", total)
                     .add("kernel_files", kernels)
                     .add_raw("devices", json_array(items))
                     .str()
              << "\n";
    return 0;
  }
  std::string cap = config.max_bytes ? std::to_string(config.max_bytes >> 20) + " MiB" : "none";
  std::cout << format_table({{"cache:", config.dir.string()},
                             {"mode:", cache::to_string(config.mode)},
                             {"size cap:", cap},
                             {"bytes on disk:", std::to_string(total)},
                             {"kernel files:", std::to_string(kernels)},
                             {"devices:", std::to_string(devices.size())}});
  if (!devices.empty()) {
    std::vector<std::vector<std::string>> rows = {
        {"DEVICE", "KERNELS", "BYTES", "PIPELINE_CACHE", "FINGERPRINT"}};
    for (const auto& [h, d] : devices) {
      rows.push_back({cache::to_hex(h).substr(0, 8), std::to_string(d.kernels),
                      std::to_string(d.bytes), std::to_string(d.pipeline_cache_bytes),
                      fingerprint_of(h)});
    }
    std::cout << "\n" << format_table(rows);
  }
  return 0;
}

int run_verify(const Args& args) {
  auto c = open_existing_cache(args);
  bool remove = args.flag("--remove-bad");
  auto report = c.verify(remove);
  if (args.flag("--deep")) {
    // The SPIR-V validator on every entry that passed the format checks.
    for (const auto& e : c.list()) {
      if (std::string error = codegen::validate_spirv(e.spirv); !error.empty()) {
        auto path =
            cache::kernel_path(c.config().dir, cache::fingerprint_hash(e.fingerprint), e.hash);
        report.bad.push_back({path.string(), "spirv-val: " + error});
        --report.ok;
        std::error_code ec;
        if (remove && std::filesystem::remove(path, ec)) {
          ++report.removed;
        }
      }
    }
  }
  if (args.flag("--json")) {
    std::vector<std::string> bad;
    for (const auto& b : report.bad) {
      bad.push_back(JsonObject().add("path", b.path).add("reason", b.reason).str());
    }
    std::cout << JsonObject()
                     .add("checked", report.checked)
                     .add("ok", report.ok)
                     .add_raw("bad", json_array(bad))
                     .add("removed", report.removed)
                     .str()
              << "\n";
  } else {
    for (const auto& b : report.bad) {
      std::cout << "BAD " << b.path << ": " << b.reason << "\n";
    }
    std::cout << "checked " << report.checked << " files: " << report.ok << " ok, "
              << report.bad.size() << " bad";
    if (remove) {
      std::cout << ", " << report.removed << " removed";
    }
    std::cout << "\n";
  }
  // Bad files make verify fail unless they were removed as asked.
  return report.bad.empty() || remove ? 0 : 1;
}

int run_clear(const Args& args) {
  auto c = open_existing_cache(args);
  uint64_t removed = c.clear();
  std::cout << "removed " << removed << " files from " << c.config().dir.string() << "\n";
  return 0;
}

}  // namespace

std::vector<Command> cache_commands() {
  std::vector<Command> out;

  Command list{"list",
               "list cached kernels (filter by family, dtype, text, device)",
               std::string("usage: spvdump list [options]\n"
                           "\n"
                           "Lists the valid cached kernels of every device, sorted by device "
                           "and key:\nhash, device, SPIR-V size, compile ms (glslang + "
                           "optimizer), pipeline ms, last use, key.\nKernel files that cannot "
                           "be read (damaged, or not regular files) are named on\nstderr, "
                           "and make the exit code 1.\n"
                           "\n"
                           "options:\n"
                           "  --family F       only keys of family F (e.g. binary)\n"
                           "  --dtype D        only keys with a parameter naming dtype D (e.g. "
                           "f16)\n"
                           "  --grep TEXT      only keys containing TEXT\n"
                           "  --device D       only devices whose hash starts with D or whose "
                           "fingerprint contains D\n"
                           "  --json           a JSON array instead of a table\n") +
                   kDirHelp,
               {{"--json"}, {"--family", "--dtype", "--grep", "--device"}, 0, 0},
               run_list};
  Command show{"show",
               "metadata and GLSL of one kernel",
               std::string("usage: spvdump show <key|hash-prefix> [options]\n"
                           "\n"
                           "Prints a cached kernel's metadata (key, device, template, "
                           "compiler, optimizer level,\ncompile times, dates, defines) and "
                           "its GLSL as generated.\n"
                           "\n"
                           "options:\n"
                           "  --device D       pick among devices (hash prefix or fingerprint "
                           "text)\n"
                           "  --json           one JSON object\n") +
                   kDirHelp,
               {{"--json"}, {"--device"}, 1, 1},
               run_show};
  Command stats{"stats",
                "size of the cache per device",
                std::string("usage: spvdump stats [options]\n"
                            "\n"
                            "Prints the cache root, mode, size cap, bytes on disk and, per "
                            "device, the kernel\nfiles, bytes and pipeline-cache size. "
                            "Hit/miss counters are per process: run the\nworkload with "
                            "MLX_VK_STATS=1 for those.\n"
                            "\n"
                            "options:\n"
                            "  --json           one JSON object\n") +
                    kDirHelp,
                {{"--json"}, {}, 0, 0},
                run_stats};
  Command verify{"verify",
                 "check every cache file; optionally remove bad ones",
                 std::string("usage: spvdump verify [options]\n"
                             "\n"
                             "Validates every file of the cache (header, checksum, device, "
                             "key hash, payload,\nSPIR-V header) and lists bad ones with the "
                             "reason, including entries that are\nnot regular files (a FIFO, "
                             "a socket, a device). Exit code 1 when bad files\nremain, or "
                             "when the directory does not exist.\n"
                             "\n"
                             "options:\n"
                             "  --remove-bad     delete bad files (and temp files left by "
                             "killed writers)\n"
                             "  --deep           also run the SPIR-V validator on every "
                             "kernel\n"
                             "  --json           one JSON object\n") +
                     kDirHelp,
                 {{"--json", "--remove-bad", "--deep"}, {}, 0, 0},
                 run_verify};
  Command clear{"clear",
                "remove every cached kernel and pipeline cache",
                std::string("usage: spvdump clear [options]\n"
                            "\n"
                            "Removes every file of the cache, for all devices. Files under "
                            "the root whose\nnames are not the cache's are left alone.\n"
                            "\n"
                            "options:\n") +
                    kDirHelp,
                {{}, {}, 0, 0},
                run_clear};
  Command tuning{"tuning",
                 "the GEMM autotune's records per device",
                 std::string("usage: spvdump tuning [options]\n"
                             "\n"
                             "Lists the tile the autotune chose for each problem class, per "
                             "device (MLX_VK_AUTOTUNE=on;\ndocs/matmul.md).\n"
                             "\n"
                             "options:\n"
                             "  --json           a JSON array instead of a table\n") +
                     kDirHelp,
                 {{"--json"}, {}, 0, 0},
                 run_tuning};
  for (Command* c : {&list, &show, &stats, &verify, &clear, &tuning}) {
    add_common(c->spec);
    out.push_back(std::move(*c));
  }
  return out;
}

}  // namespace spvdump
