// Timing helpers for benchmarks: wall-clock around batches of GPU work, synchronized, best of
// several repetitions (the minimum is the least disturbed measurement).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "mlx/backend/vulkan/profile.h"
#include "mlx/eval_worker.h"
#include "mlx/mlx.h"

namespace bench {

namespace mx = mlx::core;

// Turns the eval thread (mlx/eval_worker.h) off for a scope: host-cost timings record on the
// timing thread, as they did before the thread existed.
struct EvalThreadOff {
  EvalThreadOff() : was(mx::detail::eval_thread_enabled()) {
    mx::detail::set_eval_thread(false);
  }
  ~EvalThreadOff() {
    mx::detail::set_eval_thread(was);
  }
  EvalThreadOff(const EvalThreadOff&) = delete;
  EvalThreadOff& operator=(const EvalThreadOff&) = delete;
  bool was;
};

inline double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// Makes `batch` ops and evaluates them together (one submission unless a limit splits it).
inline void run_batch(const std::function<mx::array()>& make, int batch) {
  std::vector<mx::array> outs;
  outs.reserve(batch);
  for (int i = 0; i < batch; ++i) {
    outs.push_back(make());
  }
  mx::eval(outs);
}

// Runs `make` `batch` times per submission (one command buffer), `reps` submissions, and
// returns the best per-op time in ms. The first (warm-up) submission also compiles kernels.
inline double time_gpu_op(const std::function<mx::array()>& make, int batch, int reps) {
  // Warm-up: kernels, allocator cache, and at least 100 ms of back-to-back work so the GPU
  // leaves its idle clocks before anything is timed (a fresh or idle H200 runs its SMs at
  // a fraction of their clock, which slows compute-bound kernels several times).
  double warm_start = now_ms();
  do {
    run_batch(make, batch);
  } while (now_ms() - warm_start < 100.0);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    mx::synchronize();
    double t0 = now_ms();
    run_batch(make, batch);
    best = std::min(best, (now_ms() - t0) / batch);
  }
  return best;
}

// Wall time and GPU time (timestamp queries, mlx/backend/vulkan/profile.h) per op, in ms.
struct Timing {
  double wall_ms = 0;
  double gpu_ms = 0;        // the median batch's GPU busy time per op; 0 when not profiling
  double gpu_worst_ms = 0;  // the slowest batch's, per op
  double stream_ms = 0;     // the median batch's GPU time per op in a stream; 0 if not measured
};

// Whether measure_op also times each row in a stream: the batch's command buffers timed by
// two timestamps each (vulkan::set_batch_profiling) and none around the kernels. NVIDIA's
// per-kernel timestamps serialize the kernels and add ~3 us to each (a one-element copy
// measures 3.2-3.3 us); in a stream, independent ops overlap one's ramp with the last's
// tail, as torch's CUDA events around a batch of back-to-back ops time them
// (benchmarks/peers/). Dependent ops (the chained rows) still wait at their barriers. On for
// reduce_bench and attention_bench, BENCH_STREAM=1 turns it on elsewhere, =0 off.
inline bool& stream_timing() {
  static bool on = [] {
    const char* v = std::getenv("BENCH_STREAM");
    return v && std::string(v) == "1";
  }();
  return on;
}
inline void set_stream_timing_default(bool on) {
  const char* v = std::getenv("BENCH_STREAM");
  if (!v || !*v) {
    stream_timing() = on;
  }
}

// Batches of `make` for at least `warm_ms`, then on while they still get faster: until
// three batches in a row are no more than 3% faster than the best before them, at most
// 2 s in all. A fixed warm-up was not enough: after seconds of host work an H200 sat at
// 345 MHz and, under load, took 0.1-0.7 s to climb, resting at 570-870 MHz on the way in
// one process (nvidia-smi; docs/performance.md, "The GPU's clocks, not the buffers"). At
// least one batch runs.
inline void warm_until_steady(const std::function<mx::array()>& make, int batch, double warm_ms,
                              bool until_steady = true) {
  const double start = now_ms();
  double best = 1e30;
  int steady = 0;
  do {
    double t0 = now_ms();
    run_batch(make, batch);
    mx::synchronize();
    double took = now_ms() - t0;
    steady = took < 0.97 * best ? 0 : steady + 1;
    best = std::min(best, took);
  } while (now_ms() - start < warm_ms || (until_steady && steady < 3 && now_ms() - start < 2000.0));
}

// Like time_gpu_op, and also the GPU time per op from the profiler (turn it on first with
// vulkan::set_profiling(true)): the GPU busy time (union of the kernels' intervals) of each
// of `reps` batches of `batch` ops, after a warm-up (warm_until_steady). gpu_ms is the
// median batch's, so one stalled batch does not move it (on an H200 one of five batches of a
// 151 us lm_head once took 636 us; docs/performance.md, "Benchmark method: the median
// batch"). A sweep that keeps the GPU busy between its rows may pass a shorter warm-up;
// until_steady false stops it at warm_ms (at least one batch).
inline Timing measure_op(const std::function<mx::array()>& make, int batch, int reps,
                         double warm_ms = 200.0, bool until_steady = true) {
  warm_until_steady(make, batch, warm_ms, until_steady);
  Timing t{1e30, 0, 0};
  std::vector<double> busy_ms;
  for (int r = 0; r < reps; ++r) {
    mx::synchronize();
    mx::vulkan::reset_kernel_times();
    double t0 = now_ms();
    run_batch(make, batch);
    mx::synchronize();
    t.wall_ms = std::min(t.wall_ms, (now_ms() - t0) / batch);
    // The union of the kernels' intervals, not their total: the ops of a batch are
    // independent and their timestamp intervals overlap.
    busy_ms.push_back(mx::vulkan::gpu_busy_us() / 1000.0 / batch);
  }
  if (std::getenv("BENCH_KERNELS")) {  // the launches of the last batch, and their times
    std::printf("%s", mx::vulkan::profile_report().c_str());
  }
  std::sort(busy_ms.begin(), busy_ms.end());
  t.gpu_ms = busy_ms[busy_ms.size() / 2];
  t.gpu_worst_ms = busy_ms.back();
  if (stream_timing()) {
    const bool kernels = mx::vulkan::profiling_enabled();
    mx::vulkan::set_profiling(false);  // per-kernel timestamps win over batch ones
    mx::vulkan::set_batch_profiling(true);
    std::vector<double> stream_ms;
    for (int r = 0; r < reps; ++r) {
      mx::synchronize();
      mx::vulkan::reset_kernel_times();
      run_batch(make, batch);
      mx::synchronize();
      stream_ms.push_back(mx::vulkan::gpu_busy_us() / 1000.0 / batch);
    }
    mx::vulkan::set_batch_profiling(false);
    mx::vulkan::set_profiling(kernels);
    std::sort(stream_ms.begin(), stream_ms.end());
    t.stream_ms = stream_ms[stream_ms.size() / 2];
  }
  return t;
}

// A uniform [0, 1) array in `dt`, drawn on the CPU and copied to the GPU, evaluated.
inline mx::array gpu_uniform(const mx::Shape& shape, int seed, mx::Dtype dt = mx::float32) {
  auto x = mx::astype(mx::random::uniform(shape, mx::float32, mx::random::key(seed)), dt);
  auto g = mx::copy(x, mx::Device::gpu);
  g.eval();
  return g;
}

// Counts from a comma-separated environment variable (e.g. "2,4,8"), each 1..most; `out`
// keeps its defaults when the variable is unset. False (after a message) when malformed.
inline bool env_counts(const char* name, int most, std::vector<int>& out) {
  const char* list = std::getenv(name);
  if (!list || !*list) {
    return true;
  }
  out.clear();
  for (const char* at = list; *at;) {
    char* end = nullptr;
    long v = std::strtol(at, &end, 10);
    if (end == at || v < 1 || v > most || (*end != ',' && *end != '\0')) {
      std::fprintf(stderr, "%s takes comma-separated counts 1..%d\n", name, most);
      return false;
    }
    out.push_back(static_cast<int>(v));
    at = *end == ',' ? end + 1 : end;
  }
  return true;
}

// Whether `block` is in the comma-separated list of environment variable `env` (every
// block when it is unset or empty).
inline bool wanted(const char* env, const std::string& block) {
  const char* only = std::getenv(env);
  if (!only || !*only) {
    return true;
  }
  std::string list = std::string(",") + only + ",";
  return list.find("," + block + ",") != std::string::npos;
}

// The run's bandwidth peak in GB/s (GPU time): a read-dominated kernel (equal on int64 ->
// bool: 17 bytes per element) and the copy kernel (16 bytes per element) over the two
// int64 arrays; prints both and returns the larger. Warm the GPU first (warm_gpu).
inline double measure_peak(const mx::array& i64a, const mx::array& i64b, int batch, int reps) {
  double n = static_cast<double>(i64a.size());
  double read_gbs = 17.0 * n /
                    (measure_op([&] { return mx::equal(i64a, i64b); }, batch, reps).gpu_ms * 1e-3) /
                    1e9;
  double copy_gbs =
      16.0 * n / (measure_op([&] { return mx::copy(i64a); }, batch, reps).gpu_ms * 1e-3) / 1e9;
  std::printf("peak (GPU time): read kernel %.0f GB/s, copy kernel %.0f GB/s\n", read_gbs,
              copy_gbs);
  return std::max(read_gbs, copy_gbs);
}

struct Row {
  std::string name;
  double bytes;
  double ms;
};

// One row per op: ratio to the run's peak, and to the run's copy-kernel bandwidth (the
// reference issue 3's target is stated against).
inline void print_table(const std::vector<Row>& rows, double peak_gbs, double copy_gbs) {
  std::printf("\n| op | bytes moved | time (us) | GB/s | ratio to peak | ratio to copy |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (auto& r : rows) {
    double gbs = r.bytes / (r.ms * 1e-3) / 1e9;
    std::printf("| %s | %.0f MiB | %.1f | %.0f | %.2f | %.2f |\n", r.name.c_str(),
                r.bytes / (1 << 20), r.ms * 1e3, gbs, gbs / peak_gbs, gbs / copy_gbs);
  }
}

// Back-to-back copies of `a` for `ms` milliseconds: lifts the GPU out of its idle clocks
// before a peak is measured (making inputs on the CPU lets them drop).
inline void warm_gpu(const mx::array& a, double ms) {
  double start = now_ms();
  while (now_ms() - start < ms) {
    std::vector<mx::array> outs;
    for (int i = 0; i < 10; ++i) {
      outs.push_back(mx::copy(a));
    }
    mx::eval(outs);
    mx::synchronize();
  }
}

struct TimedRow {
  std::string name;
  double bytes;
  Timing t;
};

// Rows with both times; GB/s and the ratio use the GPU time (the kernels alone), which is
// what a peak measured the same way compares with.
// With stream times (stream_timing), two more columns: the GPU time per op in a stream and
// its ratio to the peak.
inline void print_timed_table(const std::vector<TimedRow>& rows, double peak_gbs) {
  bool stream = std::any_of(rows.begin(), rows.end(), [](auto& r) { return r.t.stream_ms > 0; });
  std::printf(
      "\n| op | bytes moved | GPU time (us) | wall per op (us) | GB/s (GPU) | ratio to peak |%s\n",
      stream ? " GPU in a stream (us) | ratio to peak (stream) |" : "");
  std::printf("|---|---|---|---|---|---|%s\n", stream ? "---|---|" : "");
  for (auto& r : rows) {
    double gbs = r.t.gpu_ms > 0 ? r.bytes / (r.t.gpu_ms * 1e-3) / 1e9 : 0;
    // A batch more than 1.5x the median is shown: a stall, not the kernel's speed.
    char worst[48] = "";
    if (r.t.gpu_worst_ms > 1.5 * r.t.gpu_ms) {
      std::snprintf(worst, sizeof(worst), " (one batch %.1f)", r.t.gpu_worst_ms * 1e3);
    }
    std::printf("| %s | %.2f MiB | %.1f%s | %.1f | %.0f | %.2f |", r.name.c_str(),
                r.bytes / (1 << 20), r.t.gpu_ms * 1e3, worst, r.t.wall_ms * 1e3, gbs,
                gbs / peak_gbs);
    if (stream) {
      double sgbs = r.t.stream_ms > 0 ? r.bytes / (r.t.stream_ms * 1e-3) / 1e9 : 0;
      std::printf(" %.1f | %.2f |", r.t.stream_ms * 1e3, sgbs / peak_gbs);
    }
    std::printf("\n");
  }
}

}  // namespace bench
