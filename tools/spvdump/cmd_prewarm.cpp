// prewarm: build every kernel of a recorded key file on this machine's Vulkan device, so
// that both the SPIR-V entries and the pipeline-cache data are on disk before a workload
// starts. It goes through the runtime's own kernel library (memory -> disk -> compile), so
// what it writes is exactly what the runtime will look up.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "codegen/codegen.h"
#include "commands.h"
#include "json.h"
#include "lookup.h"
#include "mlx/backend/vulkan/device.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/stats.h"
#include "text.h"

namespace spvdump {

namespace {

namespace vk = mlx::core::vulkan;
namespace codegen = mlx::core::vulkan::codegen;

struct Line {
  size_t number = 0;  // 1-based line in the file
  std::string text;
};

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) {
    return "";
  }
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// The key lines of a recorded file (the format of MLX_VK_RECORD_KERNELS: one key a line,
// blank lines and '#' comments skipped), with their line numbers for messages.
std::vector<Line> read_key_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw ToolError("cannot read key file " + path + ": " + std::strerror(errno));
  }
  std::vector<Line> lines;
  std::string text;
  for (size_t n = 1; std::getline(in, text); ++n) {
    text = trim(text);
    if (!text.empty() && text[0] != '#') {
      lines.push_back({n, text});
    }
  }
  if (in.bad()) {
    throw ToolError("error reading key file " + path);
  }
  return lines;
}

struct Failure {
  size_t line = 0;
  std::string key;
  std::string reason;
};

// Progress on stderr: a bar redrawn in place on a terminal, one plain line per key
// otherwise (logs and CI keep every line).
class Progress {
 public:
  explicit Progress(size_t total) : total_(total), tty_(::isatty(2) == 1) {}

  // On a terminal, shows the key being built (a compile can take a while).
  void start(size_t index, const std::string& key) {
    if (tty_) {
      draw(index, key);
    }
  }

  void update(size_t done, const std::string& what, const std::string& key, double ms) {
    if (tty_) {
      draw(done, key);
    } else {
      std::fprintf(stderr, "[%zu/%zu] %s %s (%s ms)\n", done, total_, what.c_str(), key.c_str(),
                   format_ms(ms).c_str());
    }
    std::fflush(stderr);
  }

  void failed(const Failure& f) {
    if (tty_) {
      std::fprintf(stderr, "\r\033[K");
    }
    std::fprintf(stderr, "line %zu: %s: %s\n", f.line, f.key.c_str(), f.reason.c_str());
  }

  void finish() {
    if (tty_) {
      std::fprintf(stderr, "\r\033[K");
      std::fflush(stderr);
    }
  }

 private:
  void draw(size_t done, const std::string& key) {
    constexpr size_t kWidth = 30;
    size_t filled = total_ ? done * kWidth / total_ : kWidth;
    std::string shown = key.size() > 50 ? key.substr(0, 47) + "..." : key;
    std::fprintf(stderr, "\r\033[K[%s%s] %zu/%zu %s", std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), done, total_, shown.c_str());
    std::fflush(stderr);
  }

  size_t total_;
  bool tty_;
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int run_prewarm(const Args& args) {
  const std::string& file = args.positional()[0];
  auto lines = read_key_lines(file);

  // The runtime finds its cache through the environment; point it at the directory the
  // person chose, writable whatever MLX_VK_CACHE says, and do not record what we build
  // (the key file being read may be the recording file).
  cache::CacheConfig config = tool_config(args);
  ::setenv("MLX_VK_CACHE_DIR", config.dir.c_str(), 1);
  ::setenv("MLX_VK_CACHE", "readwrite", 1);
  ::unsetenv("MLX_VK_RECORD_KERNELS");

  std::vector<Failure> failures;
  std::vector<std::pair<Line, codegen::KernelKey>> keys;
  std::set<std::string> seen;
  for (const auto& line : lines) {
    try {
      auto key = codegen::KernelKey::parse(line.text);
      if (seen.insert(key.canonical()).second) {
        keys.emplace_back(line, std::move(key));
      }
    } catch (const std::exception& e) {
      failures.push_back({line.number, line.text, std::string("not a kernel key: ") + e.what()});
    }
  }

  vk::Device* device = keys.empty() ? nullptr : vk::device_or_null();
  if (!keys.empty() && !device) {
    throw ToolError("no Vulkan device to build pipelines on: " + vk::unavailable_reason());
  }

  // Workers take keys in turn: the kernel library builds different keys at the same time
  // (glslang, the optimizer and vkCreateComputePipelines are thread-safe), so a cold
  // prewarm takes about the longest chain of its keys instead of their sum.
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  if (auto j = args.option("--jobs")) {
    char* end = nullptr;
    long v = std::strtol(j->c_str(), &end, 10);
    if (end == j->c_str() || *end != '\0' || v < 1 || v > 256) {
      throw UsageError("--jobs takes a number of threads from 1 to 256, got '" + *j + "'");
    }
    jobs = static_cast<unsigned>(v);
  }
  jobs = static_cast<unsigned>(std::min<size_t>(jobs, std::max<size_t>(keys.size(), 1)));
  Progress progress(keys.size());
  for (const auto& f : failures) {
    progress.failed(f);
  }
  uint64_t compiled = 0, cached = 0;
  size_t done = 0;
  std::mutex mtx;  // the counters, failures and the progress output
  std::atomic<size_t> next{0};
  auto t_all = std::chrono::steady_clock::now();
  auto work = [&] {
    for (size_t i = next++; i < keys.size(); i = next++) {
      const auto& [line, key] = keys[i];
      {
        std::lock_guard lk(mtx);
        progress.start(done, key.canonical());
      }
      auto t0 = std::chrono::steady_clock::now();
      std::string what;
      std::optional<Failure> failure;
      try {
        const vk::Kernel& k = vk::kernel_library().get(key);
        what = k.origin == vk::KernelOrigin::Disk ? "cached  " : "compiled";
      } catch (const std::exception& e) {
        failure = Failure{line.number, line.text, e.what()};
        what = "FAILED  ";
      }
      double ms = ms_since(t0);
      std::lock_guard lk(mtx);
      if (failure) {
        failures.push_back(*failure);
        progress.failed(*failure);
      } else if (what == "cached  ") {
        ++cached;
      } else {
        ++compiled;
      }
      progress.update(++done, what, key.canonical(), ms);
    }
  };
  std::vector<std::thread> workers;
  for (unsigned t = 1; t < jobs; ++t) {
    workers.emplace_back(work);
  }
  work();
  for (auto& w : workers) {
    w.join();
  }
  double total_ms = ms_since(t_all);
  progress.finish();
  bool saved = device && vk::kernel_library().save_pipeline_cache();
  auto stats = vk::kernel_stats();

  if (args.flag("--json")) {
    std::vector<std::string> failed;
    for (const auto& f : failures) {
      failed.push_back(JsonObject()
                           .add("line", uint64_t{f.line})
                           .add("key", f.key)
                           .add("reason", f.reason)
                           .str());
    }
    std::cout << JsonObject()
                     .add("file", file)
                     .add("dir", config.dir.string())
                     .add("device", device ? device->name() : std::string())
                     .add("key_lines", uint64_t{lines.size()})
                     .add("compiled", compiled)
                     .add("cached", cached)
                     .add("failed", uint64_t{failures.size()})
                     .add("ms", total_ms)
                     .add("pipeline_cache_written", saved)
                     .add("kernel_files", stats.kernel_files)
                     .add("bytes_on_disk", stats.bytes_on_disk)
                     .add_raw("failures", json_array(failed))
                     .str()
              << "\n";
  } else {
    if (device) {
      std::cout << "device: " << device->name() << "\n";
    }
    std::cout << "cache: " << config.dir.string() << "\n";
    for (const auto& f : failures) {
      std::cout << "failed: line " << f.line << ": " << f.key << ": " << f.reason << "\n";
    }
    std::cout << "prewarm: " << compiled << " compiled, " << cached << " already cached, "
              << failures.size() << " failed (" << lines.size() << " key lines, "
              << format_ms(total_ms) << " ms, " << jobs << " jobs); pipeline cache " << (saved ? "written" : "unchanged")
              << "\n";
  }
  if (stats.store_failures > 0) {
    std::cerr << "spvdump prewarm: " << stats.store_failures << " kernels could not be written to "
              << config.dir.string() << " (see the warning above)\n";
    return 1;
  }
  return failures.empty() ? 0 : 1;
}

}  // namespace

std::vector<Command> prewarm_commands() {
  Command pre{"prewarm",
              "build every kernel of a recorded key file on this device",
              std::string("usage: spvdump prewarm <keys-file> [options]\n"
                          "\n"
                          "Builds every key of <keys-file> (as written by "
                          "MLX_VK_RECORD_KERNELS=<file>: one\ncanonical key a line, blank "
                          "lines and '#' comments ignored) on this machine's\nVulkan device "
                          "(MLX_VK_DEVICE picks another), through the runtime's kernel\n"
                          "library: each key is rendered, compiled and made into a pipeline, "
                          "so both the\nSPIR-V entry and the pipeline-cache data are written. "
                          "Keys already cached count\nas such. Progress goes to stderr (a bar "
                          "on a terminal), the summary to stdout.\nA line that is not a key, "
                          "or a key this device cannot build, counts as failed\nwith the "
                          "reason; exit code 1 when any failed.\n"
                          "\n"
                          "options:\n"
                          "  --jobs N         build N keys at a time (default: the number of "
                          "CPU threads)\n"
                          "  --json           the summary as one JSON object\n") +
                  kDirHelp,
              {{"--json"}, {"--jobs"}, 1, 1},
              run_prewarm};
  add_common(pre.spec);
  return {pre};
}

}  // namespace spvdump
