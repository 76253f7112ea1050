// Sorting (the sort family) on the rows against the bandwidth peak measured in the
// same run: argsort f32 of 1x151936 and 64x151936, topk (k = 50) of 1x151936, and
// categorical sampling of 1x151936 logits (issue 14's sampling row: Gumbel-max, a random
// draw, the arithmetic and an argmax). Bytes moved: the input read and the output written
// once (the chain itself moves more: the ratio says how far the network is from a single
// pass). docs/sort.md, docs/random.md.
#include "bench_util.h"
#include "mlx/backend/gpu/available.h"
#include "mlx/backend/gpu/device_info.h"

namespace mx = mlx::core;
using bench::measure_op;
using bench::TimedRow;

int main() {
  if (!mx::gpu::is_available()) {
    std::fprintf(stderr, "sort_bench: no Vulkan device found\n");
    return 1;
  }
  mx::set_default_device(mx::Device::gpu);
  const auto& info = mx::gpu::device_info();
  std::printf("device: %s\n", std::get<std::string>(info.at("device_name")).c_str());
  mx::vulkan::set_profiling(true);
  const int batch = 10, reps = 5;
  int n = 1 << 26;
  auto i64a = mx::astype(bench::gpu_uniform({n}, 1), mx::int64);
  auto i64b = mx::astype(bench::gpu_uniform({n}, 2), mx::int64);
  auto row = bench::gpu_uniform({1, 151936}, 3);
  auto rows = bench::gpu_uniform({64, 151936}, 4);
  bench::warm_gpu(i64a, 500);
  double peak = bench::measure_peak(i64a, i64b, batch, reps);
  std::vector<TimedRow> out;
  out.push_back({"argsort f32 1x151936", 8.0 * 151936,
                 measure_op([&] { return mx::argsort(row, -1); }, batch, reps)});
  out.push_back({"argsort f32 64x151936", 8.0 * 64 * 151936,
                 measure_op([&] { return mx::argsort(rows, -1); }, batch, reps)});
  out.push_back({"topk 50 f32 1x151936", 4.0 * 151936,
                 measure_op([&] { return mx::topk(row, 50, -1); }, batch, reps)});
  auto key = mx::random::key(7);
  key.eval();
  out.push_back({"categorical 1x151936", 4.0 * 151936,
                 measure_op([&] { return mx::random::categorical(row, -1, key); }, batch, reps)});
  bench::print_timed_table(out, peak);
  return 0;
}
