// Indexing kernels (the gather and scatter families, docs/indexing.md) against the device's
// own bandwidth (docs/performance.md).
//
// 1. The bandwidth peak of the run: our copy kernel and a read-dominated kernel (equal on
//    int64 -> bool) on 128 MiB arrays (matmul_bench uses 512 MiB; a batch of ten copies
//    of these fits the 2 GiB a lavapipe device gives), freed before the table is made.
// 2. Embedding lookups: take of 1 and 512 rows from a [151936, 1024] bf16 table (the row
//    layout: one workgroup per row, 16-byte vectors). Bytes moved: the rows read and
//    written; the table is never read beyond them.
// 3. A KV-cache decode step: slice_update of [1, 8, 1, 128] bf16 into a donated
//    [1, 8, 4096, 128] cache at an array position (one "each" scatter launch, in place),
//    and the matching read of one position (slice at an array start). GPU time per step
//    from the profiler over a loop that moves the position (no kernel is built after the
//    first step).
//
// Usage: indexing_bench
#include "bench_util.h"
#include "mlx/backend/gpu/available.h"
#include "mlx/backend/gpu/device_info.h"

namespace mx = mlx::core;
using bench::measure_op;
using bench::TimedRow;

int main() {
  if (!mx::gpu::is_available()) {
    std::fprintf(stderr, "indexing_bench: no Vulkan device found\n");
    return 1;
  }
  mx::set_default_device(mx::Device::gpu);
  const auto& info = mx::gpu::device_info();
  std::printf("device: %s\n", std::get<std::string>(info.at("device_name")).c_str());
  mx::vulkan::set_profiling(true);
  if (!mx::vulkan::profiling_enabled()) {
    std::fprintf(stderr, "indexing_bench: this device cannot time kernels; GPU times read 0\n");
  }
  const int batch = 10, reps = 5;

  int n = 1 << 24;
  auto i64a = mx::astype(bench::gpu_uniform({n}, 1), mx::int64);
  auto i64b = mx::astype(bench::gpu_uniform({n}, 2), mx::int64);
  mx::eval({i64a, i64b});
  bench::warm_gpu(i64a, 500);
  double peak = bench::measure_peak(i64a, i64b, batch, reps);
  i64a = mx::array(0);
  i64b = mx::array(0);
  mx::synchronize();

  std::vector<TimedRow> rows;
  const int V = 151936, D = 1024;
  // Made in bf16 directly (a random f32 table would need 1.2 GiB of temporaries).
  auto rows_v = mx::astype(mx::remainder(mx::arange(V), mx::array(61)), mx::bfloat16);
  auto cols_v = mx::astype(mx::remainder(mx::arange(D), mx::array(67)), mx::bfloat16);
  auto table = mx::add(mx::reshape(rows_v, {V, 1}), mx::reshape(cols_v, {1, D}));
  table.eval();
  for (int count : {1, 512}) {
    auto ids =
        mx::astype(mx::multiply(mx::random::uniform({count}, mx::float32, mx::random::key(4)),
                                mx::array(V - 1.0f)),
                   mx::int32);
    ids.eval();
    std::string name = "take " + std::to_string(count) + " rows of bf16 [151936,1024]";
    rows.push_back({name, 2.0 * 2.0 * count * D,
                    measure_op([&] { return mx::take(table, ids, 0); }, batch, reps)});
  }

  // Decode steps: the cache is replaced each step, so the update is in place.
  const int H = 8, T = 4096, Dh = 128, steps = 200;
  auto cache = mx::zeros({1, H, T, Dh}, mx::bfloat16);
  auto kv = bench::gpu_uniform({1, H, 1, Dh}, 5, mx::bfloat16);
  cache.eval();
  auto run_steps = [&](bool read) {
    std::vector<mx::array> reads;
    for (int t = 0; t < steps; ++t) {
      auto pos = mx::array(t % T);
      if (read) {
        reads.push_back(mx::slice(cache, pos, {2}, {1, H, 1, Dh}));
      } else {
        cache = mx::slice_update(cache, kv, pos, {2});
        cache.eval();
      }
    }
    mx::eval(reads);
    mx::synchronize();
  };
  for (bool read : {false, true}) {
    run_steps(read);  // warm-up: kernels and the memo
    mx::vulkan::reset_kernel_times();
    double t0 = bench::now_ms();
    run_steps(read);
    double wall = (bench::now_ms() - t0) / steps;
    bench::Timing t{wall, mx::vulkan::gpu_busy_us() / 1000.0 / steps};
    rows.push_back({read ? "slice at array start [1,8,1,128] of a [1,8,4096,128] bf16 cache"
                         : "slice_update [1,8,1,128] into a donated [1,8,4096,128] bf16 cache",
                    2.0 * 2.0 * H * Dh, t});
  }
  bench::print_timed_table(rows, peak);
  return 0;
}
