// Timing helpers for benchmarks: wall-clock around batches of GPU work, synchronized, best of
// several repetitions (the minimum is the least disturbed measurement).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "mlx/mlx.h"

namespace bench {

namespace mx = mlx::core;

inline double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// Runs `make` `batch` times per submission (one command buffer), `reps` submissions, and
// returns the best per-op time in ms. The first (warm-up) submission also compiles kernels.
inline double time_gpu_op(const std::function<mx::array()>& make, int batch, int reps) {
  auto run_batch = [&] {
    std::vector<mx::array> outs;
    outs.reserve(batch);
    for (int i = 0; i < batch; ++i) {
      outs.push_back(make());
    }
    mx::eval(outs);
  };
  run_batch();  // warm-up: kernels, allocator cache
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    mx::synchronize();
    double t0 = now_ms();
    run_batch();
    best = std::min(best, (now_ms() - t0) / batch);
  }
  return best;
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

}  // namespace bench
