// Kernel cache: what a kernel's first use costs cold (render + glslang + optimizer +
// pipeline) and warm from the disk cache (render + load + pipeline from the persisted
// VkPipelineCache), per kernel and for the start-up of a workload using ~50 kernels.
//
// Every measurement runs in a child process (this binary re-run with --child-...), so that
// each start is real: empty memory cache, a fresh device, the pipeline cache loaded from
// disk. The caches live in temporary directories; the user's cache is never touched.
// Usage: cache_bench [reps] (default 3; each row is the best of the repetitions).
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/elementwise.h"
#include "mlx/backend/gpu/available.h"
#include "mlx/backend/vulkan/device.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/stats.h"
#include "mlx/mlx.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
namespace mx = mlx::core;
namespace vk = mlx::core::vulkan;
namespace codegen = mlx::core::vulkan::codegen;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// ---- the kernels measured one by one ------------------------------------------------------

codegen::KernelKey contiguous_key(const std::string& family, const std::string& op,
                                  std::vector<std::string> in, const std::string& out) {
  codegen::ElementwiseGeometry g;
  g.shape = {4096};
  for (size_t i = 0; i < in.size(); ++i) {
    g.in_strides.push_back({1});
    g.in_offsets.push_back(0);
  }
  return codegen::elementwise_key(family, op, in, out, g);
}

std::vector<codegen::KernelKey> single_kernels() {
  std::vector<codegen::KernelKey> keys;
  for (const char* op : {"Exp", "Log", "Sin", "Tanh", "Erf", "Sigmoid"}) {
    keys.push_back(contiguous_key("unary", op, {"f32"}, "f32"));
  }
  for (const char* op : {"Add", "Divide", "Power"}) {
    keys.push_back(contiguous_key("binary", op, {"f32", "f32"}, "f32"));
  }
  keys.push_back(contiguous_key("copy", "Copy", {"f32"}, "i32"));
  return keys;
}

// Child: first use of each kernel, timed around kernel_library().get. Device creation,
// the library (which loads the pipeline cache) and glslang's one-time initialization are
// done before the clock starts: they are not per-kernel costs.
int child_kernels(const std::string& out_path) {
  if (!mx::gpu::is_available()) {
    std::fprintf(stderr, "no Vulkan device: %s\n", vk::unavailable_reason().c_str());
    return 1;
  }
  auto& lib = vk::kernel_library();
  auto warmup = contiguous_key("unary", "Abs", {"f32"}, "f32");
  codegen::compile(warmup, codegen::render(warmup, vk::device().caps()));
  std::ofstream out(out_path);
  out << "device " << vk::device().name() << "\n";
  for (const auto& key : single_kernels()) {
    auto t0 = Clock::now();
    const vk::Kernel& k = lib.get(key);
    double total = ms_since(t0);
    out << "kernel " << key.canonical() << " " << total << " "
        << (k.origin == vk::KernelOrigin::Disk ? "disk" : "compiled") << " " << k.render_ms << " "
        << k.glslang_ms << " " << k.optimize_ms << " " << k.pipeline_ms << " " << k.disk_load_ms
        << "\n";
  }
  return 0;
}

// ---- the workload ---------------------------------------------------------------------------

// ~50 distinct kernels: f32 unary ops, f32 binary ops, comparisons and conversions, all on
// contiguous arrays, evaluated together as a program's first step would be.
std::vector<mx::array> workload_outputs() {
  std::vector<float> va(4096), vb(4096);
  for (size_t i = 0; i < va.size(); ++i) {
    va[i] = 0.25f + static_cast<float>(i % 97) * 0.01f;
    vb[i] = 1.5f - static_cast<float>(i % 13) * 0.05f;
  }
  mx::array a(va.begin(), {4096}, mx::float32), b(vb.begin(), {4096}, mx::float32);
  using U = mx::array (*)(const mx::array&, mx::StreamOrDevice);
  using B = mx::array (*)(const mx::array&, const mx::array&, mx::StreamOrDevice);
  std::vector<U> unary = {mx::abs,  mx::negative, mx::sign,    mx::sqrt,   mx::rsqrt, mx::square,
                          mx::exp,  mx::expm1,    mx::log,     mx::log1p,  mx::log2,  mx::log10,
                          mx::sin,  mx::cos,      mx::tan,     mx::arctan, mx::sinh,  mx::cosh,
                          mx::tanh, mx::arcsinh,  mx::sigmoid, mx::erf,    mx::floor, mx::ceil};
  std::vector<B> binary = {
      mx::add,       mx::subtract,  mx::multiply,   mx::divide,    mx::maximum,      mx::minimum,
      mx::power,     mx::logaddexp, mx::arctan2,    mx::remainder, mx::floor_divide, mx::equal,
      mx::not_equal, mx::less,      mx::less_equal, mx::greater,   mx::greater_equal};
  std::vector<mx::array> outs;
  for (auto f : unary) {
    outs.push_back(f(a, {}));
  }
  for (auto f : binary) {
    outs.push_back(f(a, b, {}));
  }
  outs.push_back(mx::round(a));
  auto ai = mx::astype(a, mx::int32);
  outs.push_back(ai);
  outs.push_back(mx::astype(ai, mx::float32));
  outs.push_back(mx::astype(a, mx::uint32));
  outs.push_back(mx::astype(a, mx::bool_));
  outs.push_back(mx::add(ai, ai));
  outs.push_back(mx::multiply(ai, ai));
  outs.push_back(mx::maximum(ai, ai));
  return outs;
}

int child_workload(const std::string& out_path, Clock::time_point start) {
  if (!mx::gpu::is_available()) {
    std::fprintf(stderr, "no Vulkan device: %s\n", vk::unavailable_reason().c_str());
    return 1;
  }
  auto device_ready = ms_since(start);
  auto outs = workload_outputs();
  mx::eval(outs);
  double total = ms_since(start);
  auto s = vk::kernel_stats();
  std::ofstream out(out_path);
  out << "device " << vk::device().name() << "\n"
      << "total_ms " << total << "\n"
      << "device_ms " << device_ready << "\n"
      << "compiles " << s.compiles << "\n"
      << "disk_hits " << s.disk_hits << "\n"
      << "compile_ms " << s.glslang_ms + s.optimize_ms + s.compile_pipeline_ms << "\n"
      << "disk_ms " << s.disk_load_ms + s.disk_pipeline_ms << "\n";
  return 0;
}

// ---- the parent ---------------------------------------------------------------------------

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "mlxvk-cache-bench-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) {
      std::perror("mkdtemp");
      std::exit(1);
    }
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Runs this binary with `args`, our cache at `cache_dir`, stdout/stderr into `log`.
// `driver_cache`: the drivers' own shader disk caches (Mesa, NVIDIA) in a private directory
// that lives as long as `cache_dir`, as on a real machine's second start; empty: off, so
// that a measurement owes nothing to them. Returns the process's wall time in ms, or -1.
double run_child(const std::vector<std::string>& args, const fs::path& cache_dir,
                 const fs::path& driver_cache, const fs::path& log) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    bool ours = false;
    for (const char* prefix : {"MLX_VK_CACHE", "MLX_VK_RECORD_KERNELS=", "MLX_VK_STATS=",
                               "__GL_SHADER_DISK_CACHE", "MESA_SHADER_CACHE"}) {
      ours = ours || kv.starts_with(prefix);
    }
    if (!ours) {
      env_strings.push_back(kv);
    }
  }
  env_strings.push_back("MLX_VK_CACHE_DIR=" + cache_dir.string());
  if (driver_cache.empty()) {
    env_strings.push_back("__GL_SHADER_DISK_CACHE=0");
    env_strings.push_back("MESA_SHADER_CACHE_DISABLE=true");
  } else {
    env_strings.push_back("__GL_SHADER_DISK_CACHE=1");
    env_strings.push_back("__GL_SHADER_DISK_CACHE_PATH=" + (driver_cache / "nv").string());
    env_strings.push_back("MESA_SHADER_CACHE_DISABLE=false");
    env_strings.push_back("MESA_SHADER_CACHE_DIR=" + (driver_cache / "mesa").string());
    fs::create_directories(driver_cache / "nv");
  }
  std::vector<char*> envp;
  for (auto& s : env_strings) {
    envp.push_back(s.data());
  }
  envp.push_back(nullptr);
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::vector<std::string> arg_strings = {self};
  arg_strings.insert(arg_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : arg_strings) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  auto t0 = Clock::now();
  pid_t pid;
  int rc = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return -1;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  double ms = ms_since(t0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ifstream in(log);
    std::fprintf(stderr, "child %s failed:\n%s\n", args[0].c_str(),
                 std::string(std::istreambuf_iterator<char>(in), {}).c_str());
    return -1;
  }
  return ms;
}

std::vector<std::string> read_lines(const fs::path& p) {
  std::vector<std::string> lines;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

struct KernelTimes {
  double total = 1e30, render = 0, glslang = 0, optimize = 0, pipeline = 0, load = 0;
  std::string origin;
};

// key -> times of one child run; "device" -> name in `device`.
std::map<std::string, KernelTimes> parse_kernels(const fs::path& p, std::string& device) {
  std::map<std::string, KernelTimes> out;
  for (const auto& line : read_lines(p)) {
    std::istringstream in(line);
    std::string tag;
    in >> tag;
    if (tag == "device") {
      std::getline(in >> std::ws, device);
    } else if (tag == "kernel") {
      std::string key;
      KernelTimes t;
      in >> key >> t.total >> t.origin >> t.render >> t.glslang >> t.optimize >> t.pipeline >>
          t.load;
      out[key] = t;
    }
  }
  return out;
}

std::map<std::string, std::string> parse_values(const fs::path& p) {
  std::map<std::string, std::string> out;
  for (const auto& line : read_lines(p)) {
    auto sp = line.find(' ');
    if (sp != std::string::npos) {
      out[line.substr(0, sp)] = line.substr(sp + 1);
    }
  }
  return out;
}

// The kernel's name in the table: family and op, plus dtypes.
std::string short_name(const std::string& key) {
  auto k = codegen::KernelKey::parse(key);
  std::string name = k.family + " " + k.params["op"];
  return name + " " + k.params["in"] + "->" + k.params["out"];
}

int run_parent(int reps) {
  std::map<std::string, KernelTimes> cold, warm;
  std::string device;
  std::printf(
      "Kernel cache benchmark: %d repetition(s), best of each; every run is a new "
      "process.\n",
      reps);
  // One kernel at a time, driver shader caches off: the cold/warm difference is ours.
  for (int r = 0; r < reps; ++r) {
    TempDir dir;
    fs::path cache = dir.path / "cache", out = dir.path / "out.txt", log = dir.path / "log.txt";
    for (bool is_warm : {false, true}) {
      if (run_child({"--child-kernels", out.string()}, cache, {}, log) < 0) {
        return 1;
      }
      for (auto& [key, t] : parse_kernels(out, device)) {
        auto& best = (is_warm ? warm : cold)[key];
        std::string want = is_warm ? "disk" : "compiled";
        if (t.origin != want) {
          std::fprintf(stderr, "%s: expected a %s kernel, got %s\n", key.c_str(), want.c_str(),
                       t.origin.c_str());
          return 1;
        }
        if (t.total < best.total) {
          best = t;
        }
      }
    }
  }

  std::printf("\ndevice: %s\n\n#### First use of one kernel (driver shader caches off)\n\n",
              device.c_str());
  std::printf(
      "| kernel | cold ms | render | glslang | optimizer | pipeline | warm ms | render | "
      "load | pipeline | warm/cold | warm without driver pipeline / cold |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  double sum_cold = 0, sum_warm = 0, sum_warm_ours = 0;
  for (const auto& [key, c] : cold) {
    const auto& w = warm[key];
    double ours = w.total - w.pipeline;
    sum_cold += c.total;
    sum_warm += w.total;
    sum_warm_ours += ours;
    std::printf(
        "| %s | %.2f | %.3f | %.2f | %.2f | %.2f | %.2f | %.3f | %.3f | %.2f | %.1f%% | %.1f%% "
        "|\n",
        short_name(key).c_str(), c.total, c.render, c.glslang, c.optimize, c.pipeline, w.total,
        w.render, w.load, w.pipeline, 100 * w.total / c.total, 100 * ours / c.total);
  }
  std::printf("| **all %zu** | %.1f | | | | | %.1f | | | | %.1f%% | %.1f%% |\n", cold.size(),
              sum_cold, sum_warm, 100 * sum_warm / sum_cold, 100 * sum_warm_ours / sum_cold);

  // The workload, per repetition in fresh directories: cold (our cache and the driver's
  // empty), warm (both as the cold run left them: a real second start), and warm with the
  // driver's cache off (what our cache alone gives).
  struct Start {
    double wall = 1e30, total = 0, device = 0, lib = 0;
    std::string compiles, disk_hits;
  };
  const char* names[3] = {"cold: empty caches", "warm: our cache + driver cache",
                          "warm: our cache, driver cache off"};
  Start best[3];
  for (int r = 0; r < reps; ++r) {
    TempDir dir;
    fs::path cache = dir.path / "cache", driver = dir.path / "driver";
    fs::path out = dir.path / "out.txt", log = dir.path / "log.txt";
    for (int run = 0; run < 3; ++run) {
      double wall =
          run_child({"--child-workload", out.string()}, cache, run < 2 ? driver : fs::path(), log);
      if (wall < 0) {
        return 1;
      }
      auto v = parse_values(out);
      if (wall < best[run].wall) {
        best[run] = {wall,
                     std::stod(v["total_ms"]),
                     std::stod(v["device_ms"]),
                     std::stod(run ? v["disk_ms"] : v["compile_ms"]),
                     v["compiles"],
                     v["disk_hits"]};
      }
    }
  }
  std::printf("\n#### Start-up of a workload using %s kernels\n\n", best[0].compiles.c_str());
  std::printf(
      "| run | process wall ms | warm/cold | in-process ms (start to results) | of "
      "which device init | kernel library ms | warm/cold | compiles | disk hits |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (int run = 0; run < 3; ++run) {
    std::printf("| %s | %.1f | %.1f%% | %.1f | %.1f | %.1f | %.1f%% | %s | %s |\n", names[run],
                best[run].wall, 100 * best[run].wall / best[0].wall, best[run].total,
                best[run].device, best[run].lib, 100 * best[run].lib / best[0].lib,
                best[run].compiles.c_str(), best[run].disk_hits.c_str());
  }
  std::printf(
      "\nOne kernel: cold = render + glslang + optimizer + vkCreateComputePipelines; warm = "
      "render + disk load + vkCreateComputePipelines with the persisted VkPipelineCache; "
      "\"warm without driver pipeline\" is the cache's own share (render, hash, load). "
      "Workload: kernel library ms = compile or disk-hit time inside the kernel library "
      "(MLX_VK_STATS); the rest of a start is device creation, uploads, dispatch and any "
      "compilation a driver defers to the first dispatch.\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto start = Clock::now();
  try {
    if (argc == 3 && std::string(argv[1]) == "--child-kernels") {
      return child_kernels(argv[2]);
    }
    if (argc == 3 && std::string(argv[1]) == "--child-workload") {
      return child_workload(argv[2], start);
    }
    int reps = 3;
    if (argc == 2) {
      reps = std::atoi(argv[1]);
    }
    if (argc > 2 || reps < 1) {
      std::fprintf(stderr, "usage: %s [repetitions >= 1]\n", argv[0]);
      return 2;
    }
    return run_parent(reps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cache_bench: %s\n", e.what());
    return 1;
  }
}
