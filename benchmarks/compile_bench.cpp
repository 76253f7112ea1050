// compile(): fused kernels against the unfused graphs and the device's own bandwidth
// (docs/compile.md, issue 15).
//
// 1. Inputs first, then the run's peak (bench_util.h: a read-dominated kernel and the copy
//    kernel on int64 arrays, GPU time).
// 2. Each case compiled and uncompiled: GPU time per call (timestamp queries, every kernel
//    of the call), best wall time per call, dispatches per call, GB/s of the bytes the fused
//    kernel must move (inputs read once, outputs written once) and its ratio to the peak:
//      - SwiGLU silu(g) * u on [4096, 14336] bf16 (target: fused >= 0.9 of the peak), and
//        g * u + g on the same tensors (cheap math: the fused kernel's memory path alone),
//      - exact GELU x * (1 + erf(x / sqrt(2))) / 2 on 256M f32 (target: >= 3x uncompiled),
//      - a seeded 20-op elementwise chain over two [4096, 4096] f32 inputs.
// 3. First call and warm start of a fused kernel, each in a child process (this binary with
//    --child) with a fresh kernel cache and the drivers' shader caches off: the cold child
//    traces, emits, compiles (glslang + pipeline) and runs; the warm child, same cache
//    directory, loads the kernel from the disk cache. Rows: the call itself (trace, or
//    replay), the first evaluation (render + compile or load + dispatch + run), the steady
//    call + evaluation after it, and the kernel library's compile / load times.
//
// Usage: compile_bench [--small]   (--small or COMPILE_BENCH_SMALL=1: sizes for a CPU driver
//        such as lavapipe; COMPILE_BENCH_ONLY=swiglu,gelu,chain,first runs a subset)
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "mlx/backend/gpu/available.h"
#include "mlx/backend/gpu/device_info.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/stats.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
namespace mx = mlx::core;
using Fn = std::function<std::vector<mx::array>(const std::vector<mx::array>&)>;

std::vector<mx::array> swiglu(const std::vector<mx::array>& in) {
  return {mx::multiply(mx::multiply(in[0], mx::sigmoid(in[0])), in[1])};
}

// Cheap math over SwiGLU's tensors: what the fused kernel's loads and stores reach when the
// arithmetic costs little.
std::vector<mx::array> muladd(const std::vector<mx::array>& in) {
  return {mx::add(mx::multiply(in[0], in[1]), in[0])};
}

std::vector<mx::array> gelu(const std::vector<mx::array>& in) {
  auto x = in[0];
  auto e = mx::erf(mx::divide(x, mx::array(std::sqrt(2.0f))));
  return {mx::divide(mx::multiply(x, mx::add(mx::array(1.0f), e)), mx::array(2.0f))};
}

// A fixed seeded chain of 20 elementwise ops over two inputs, values kept finite.
std::vector<mx::array> chain20(const std::vector<mx::array>& in) {
  uint64_t s = 0x9e3779b97f4a7c15ull;
  auto next = [&]() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return (s * 2685821657736338717ull) >> 33;
  };
  auto v = in[0];
  auto y = in[1];
  for (int i = 0; i < 20; ++i) {
    switch (next() % 8) {
      case 0:
        v = mx::add(v, y);
        break;
      case 1:
        v = mx::multiply(v, mx::array(0.75f));
        break;
      case 2:
        v = mx::tanh(v);
        break;
      case 3:
        v = mx::subtract(v, mx::multiply(y, mx::array(0.5f)));
        break;
      case 4:
        v = mx::maximum(v, y);
        break;
      case 5:
        v = mx::exp(mx::negative(mx::abs(v)));
        break;
      case 6:
        v = mx::where(mx::greater(v, y), v, mx::sigmoid(y));
        break;
      default:
        v = mx::square(v);
        break;
    }
  }
  return {v};
}

// Dispatches one evaluation of `make`'s outputs records.
uint64_t dispatches(const std::function<mx::array()>& make) {
  auto out = make();
  mx::synchronize();
  uint64_t before = mx::vulkan::dispatch_count();
  mx::eval({out});
  mx::synchronize();
  return mx::vulkan::dispatch_count() - before;
}

struct CaseRow {
  std::string name;
  double bytes;  // what the fused kernel must move
  bench::Timing compiled, plain;
  uint64_t compiled_dispatches = 0, plain_dispatches = 0;
};

void print_cases(const std::vector<CaseRow>& rows, double peak) {
  std::printf(
      "\n| case | bytes | compiled GPU (us) | uncompiled GPU (us) | compiled wall (us) | "
      "uncompiled wall (us) | dispatches (compiled / not) | speedup (GPU) | compiled GB/s | "
      "ratio to peak |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& r : rows) {
    double gbs = r.compiled.gpu_ms > 0 ? r.bytes / (r.compiled.gpu_ms * 1e-3) / 1e9 : 0;
    double speedup = r.compiled.gpu_ms > 0 ? r.plain.gpu_ms / r.compiled.gpu_ms : 0;
    std::printf(
        "| %s | %.1f MiB | %.1f | %.1f | %.1f | %.1f | %llu / %llu | %.2fx | %.0f | %.2f |\n",
        r.name.c_str(), r.bytes / (1 << 20), r.compiled.gpu_ms * 1e3, r.plain.gpu_ms * 1e3,
        r.compiled.wall_ms * 1e3, r.plain.wall_ms * 1e3,
        static_cast<unsigned long long>(r.compiled_dispatches),
        static_cast<unsigned long long>(r.plain_dispatches), speedup, gbs,
        peak > 0 ? gbs / peak : 0.0);
  }
}

// ---- first call and warm start, in a child process -----------------------------------------

// Runs the fused functions once each on fresh traces and writes one line per function:
// name, call ms, first evaluation ms, steady call + evaluation ms, compiles, disk hits,
// glslang ms, pipeline ms (compile), disk load ms, pipeline ms (disk).
int child(const std::string& out_path, bool small) {
  mx::set_default_device(mx::Device::gpu);
  int rows = small ? 64 : 4096, cols = small ? 1024 : 14336;
  auto g = bench::gpu_uniform({rows, cols}, 1, mx::bfloat16);
  auto u = bench::gpu_uniform({rows, cols}, 2, mx::bfloat16);
  auto x = bench::gpu_uniform({rows, cols}, 3);
  auto y = bench::gpu_uniform({rows, cols}, 4);
  mx::synchronize();
  std::ofstream out(out_path);
  struct Case {
    const char* name;
    Fn fn;
    std::vector<mx::array> in;
  };
  for (auto& c : std::vector<Case>{{"swiglu", swiglu, {g, u}}, {"chain20", chain20, {x, y}}}) {
    auto cfun = mx::compile(c.fn);
    auto s0 = mx::vulkan::kernel_stats();
    double t0 = bench::now_ms();
    auto outs = cfun(c.in);
    double call_ms = bench::now_ms() - t0;
    double t1 = bench::now_ms();
    mx::eval(outs);
    mx::synchronize();
    double first_ms = bench::now_ms() - t1;
    auto s1 = mx::vulkan::kernel_stats();
    double t2 = bench::now_ms();
    mx::eval(cfun(c.in));
    mx::synchronize();
    double steady_ms = bench::now_ms() - t2;
    out << c.name << " " << call_ms << " " << first_ms << " " << steady_ms << " "
        << s1.compiles - s0.compiles << " " << s1.disk_hits - s0.disk_hits << " "
        << s1.glslang_ms - s0.glslang_ms << " " << s1.compile_pipeline_ms - s0.compile_pipeline_ms
        << " " << s1.disk_load_ms - s0.disk_load_ms << " "
        << s1.disk_pipeline_ms - s0.disk_pipeline_ms << "\n";
  }
  return out ? 0 : 1;
}

// This binary with --child, our kernel cache at `cache_dir`, the drivers' caches off.
bool run_child(const fs::path& cache_dir, const fs::path& out, bool small) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    bool ours = false;
    for (const char* prefix : {"MLX_VK_CACHE", "MLX_VK_RECORD_KERNELS=", "__GL_SHADER_DISK_CACHE",
                               "MESA_SHADER_CACHE"}) {
      ours = ours || kv.starts_with(prefix);
    }
    if (!ours) {
      env_strings.push_back(kv);
    }
  }
  env_strings.push_back("MLX_VK_CACHE_DIR=" + cache_dir.string());
  env_strings.push_back("__GL_SHADER_DISK_CACHE=0");
  env_strings.push_back("MESA_SHADER_CACHE_DISABLE=true");
  std::vector<char*> envp;
  for (auto& s : env_strings) {
    envp.push_back(s.data());
  }
  envp.push_back(nullptr);
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::vector<std::string> args = {self, "--child", out.string()};
  if (small) {
    args.push_back("--small");
  }
  std::vector<char*> argv;
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  pid_t pid;
  if (posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv.data(), envp.data()) != 0) {
    return false;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void first_call_and_warm_start(bool small) {
  fs::path dir = fs::temp_directory_path() / ("compile_bench_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::printf(
      "\nFirst call and warm start (child processes, fresh kernel cache, driver caches off):\n"
      "| function | start | call: trace or replay (ms) | first eval (ms) | steady call + eval "
      "(ms) | kernels compiled / from disk | glslang (ms) | pipeline (ms) | disk load + "
      "pipeline (ms) |\n|---|---|---|---|---|---|---|---|---|\n");
  for (const char* start : {"cold", "warm"}) {
    fs::path out = dir / (std::string(start) + ".txt");
    if (!run_child(dir / "cache", out, small)) {
      std::printf("| (child failed) | %s | | | | | | | |\n", start);
      continue;
    }
    std::ifstream in(out);
    std::string name;
    double call, first, steady, glslang, pipeline, load, load_pipeline;
    unsigned long long compiles, disk;
    while (in >> name >> call >> first >> steady >> compiles >> disk >> glslang >> pipeline >>
           load >> load_pipeline) {
      std::printf("| %s | %s | %.2f | %.2f | %.2f | %llu / %llu | %.2f | %.2f | %.2f |\n",
                  name.c_str(), start, call, first, steady, compiles, disk, glslang, pipeline,
                  load + load_pipeline);
    }
  }
  fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  bool small =
      std::getenv("COMPILE_BENCH_SMALL") && std::string(std::getenv("COMPILE_BENCH_SMALL")) == "1";
  for (int i = 1; i < argc; ++i) {
    small = small || std::string(argv[i]) == "--small";
  }
  if (argc >= 3 && std::string(argv[1]) == "--child") {
    return child(argv[2], small);
  }
  if (!mx::gpu::is_available()) {
    std::fprintf(stderr, "compile_bench: no Vulkan device found\n");
    return 1;
  }
  mx::set_default_device(mx::Device::gpu);
  const auto& info = mx::gpu::device_info();
  std::printf("device: %s%s\n", std::get<std::string>(info.at("device_name")).c_str(),
              small ? " (--small sizes)" : "");
  mx::vulkan::set_profiling(true);
  if (!mx::vulkan::profiling_enabled()) {
    std::fprintf(stderr, "compile_bench: this device cannot time kernels; GPU times read 0\n");
  }
  const int batch = small ? 2 : 10, reps = small ? 2 : 5;

  // Every input first.
  int n64 = small ? 1 << 20 : 1 << 26;
  int rows = small ? 64 : 4096, cols = small ? 1024 : 14336;
  int64_t gelu_n = small ? int64_t{1} << 20 : int64_t{1} << 28;
  int side = small ? 512 : 4096;
  auto i64a = mx::astype(bench::gpu_uniform({n64}, 1), mx::int64);
  auto i64b = mx::astype(bench::gpu_uniform({n64}, 2), mx::int64);
  auto g = bench::gpu_uniform({rows, cols}, 3, mx::bfloat16);
  auto u = bench::gpu_uniform({rows, cols}, 4, mx::bfloat16);
  auto gx =
      mx::subtract(mx::multiply(bench::gpu_uniform({static_cast<int>(gelu_n)}, 5), mx::array(8.0f)),
                   mx::array(4.0f));
  auto cx = bench::gpu_uniform({side, side}, 6);
  auto cy = bench::gpu_uniform({side, side}, 7);
  mx::eval({i64a, i64b, gx});

  bench::warm_gpu(i64a, small ? 50 : 500);
  double peak = bench::measure_peak(i64a, i64b, batch, reps);

  std::vector<CaseRow> rows_out;
  auto run_case = [&](const char* name, double bytes, const Fn& fn, std::vector<mx::array> in) {
    auto cfun = mx::compile(fn);
    CaseRow r{name, bytes, {}, {}, 0, 0};
    auto compiled = [&] { return cfun(in)[0]; };
    auto plain = [&] { return fn(in)[0]; };
    r.compiled_dispatches = dispatches(compiled);
    r.plain_dispatches = dispatches(plain);
    r.compiled = bench::measure_op(compiled, batch, reps);
    r.plain = bench::measure_op(plain, batch, reps);
    rows_out.push_back(r);
  };
  if (bench::wanted("COMPILE_BENCH_ONLY", "swiglu")) {
    run_case("SwiGLU bf16", 3.0 * 2 * rows * cols, swiglu, {g, u});
    run_case("g * u + g bf16 (cheap math)", 3.0 * 2 * rows * cols, muladd, {g, u});
  }
  if (bench::wanted("COMPILE_BENCH_ONLY", "gelu")) {
    run_case("exact GELU f32", 2.0 * 4 * static_cast<double>(gelu_n), gelu, {gx});
  }
  if (bench::wanted("COMPILE_BENCH_ONLY", "chain")) {
    run_case("20-op chain f32", 3.0 * 4 * side * side, chain20, {cx, cy});
  }
  print_cases(rows_out, peak);
  if (bench::wanted("COMPILE_BENCH_ONLY", "first")) {
    first_call_and_warm_start(small);
  }
  return 0;
}
