// The reduce, arg_reduce and softmax families against the device's own read bandwidth,
// measured in the same run (docs/performance.md).
//
// 1. Peak: our copy kernel and a read-dominated kernel (equal on int64 -> bool) on 1 GiB;
//    measured twice, the first pass also lifting the GPU out of its idle clocks.
// 2. Reductions: time, GB/s read and the ratio to the peak; the issue 11 shapes.
//
// Usage: reduce_bench
#include <cstdlib>

#include "bench_util.h"
#include "mlx/backend/gpu/available.h"
#include "mlx/backend/gpu/device_info.h"

namespace mx = mlx::core;
using bench::Row;
using bench::time_gpu_op;

namespace {

mx::array gpu_uniform(const mx::Shape& shape, int seed, mx::Dtype dt = mx::float32) {
  auto x = mx::astype(mx::random::uniform(shape, mx::float32, mx::random::key(seed)), dt);
  auto g = mx::copy(x, mx::Device::gpu);
  g.eval();
  return g;
}

}  // namespace

int main() {
  if (!mx::gpu::is_available()) {
    std::fprintf(stderr, "reduce_bench: no Vulkan device found\n");
    return 1;
  }
  mx::set_default_device(mx::Device::gpu);
  const auto& info = mx::gpu::device_info();
  std::printf("device: %s\n", std::get<std::string>(info.at("device_name")).c_str());
  const int batch = 10, reps = 5;

  // Peak read bandwidth: 2 x 512 MiB of int64 read, 64 MiB of bool written.
  double peak = 0, copy_gbs = 0;
  {
    int n = 1 << 26;
    auto a = mx::astype(gpu_uniform({n}, 1), mx::int64);
    auto b = mx::astype(gpu_uniform({n}, 2), mx::int64);
    mx::eval({a, b});
    for (int pass = 0; pass < 2; ++pass) {
      double ms = time_gpu_op([&] { return mx::equal(a, b); }, batch, reps);
      double read_gbs = 17.0 * n / (ms * 1e-3) / 1e9;
      double cms = time_gpu_op([&] { return mx::copy(a); }, batch, reps);
      copy_gbs = 16.0 * n / (cms * 1e-3) / 1e9;
      peak = std::max(read_gbs, copy_gbs);
      std::printf("pass %d: read kernel %.0f GB/s, copy kernel %.0f GB/s\n", pass, read_gbs,
                  copy_gbs);
    }
    std::printf("peak (best of the second pass): %.0f GB/s\n", peak);
  }

  std::vector<Row> rows;
  {
    auto x = gpu_uniform({1 << 28}, 3);  // 256M float32 = 1 GiB
    rows.push_back({"sum f32 256M (all)", 4.0 * (1 << 28),
                    time_gpu_op([&] { return mx::sum(x); }, batch, reps)});
  }
  {
    auto m = gpu_uniform({8192, 8192}, 4);
    double bytes = 4.0 * 8192 * 8192;
    rows.push_back({"row sum f32 8192x8192", bytes,
                    time_gpu_op([&] { return mx::sum(m, 1); }, batch, reps)});
    rows.push_back({"column sum f32 8192x8192", bytes,
                    time_gpu_op([&] { return mx::sum(m, 0); }, batch, reps)});
    rows.push_back({"max f32 8192x8192 (rows)", bytes,
                    time_gpu_op([&] { return mx::max(m, 1); }, batch, reps)});
  }
  {
    auto s = gpu_uniform({5, 4096, 4096}, 5);
    rows.push_back({"softmax f32 5x4096x4096", 2 * 4.0 * 5 * 4096 * 4096,
                    time_gpu_op([&] { return mx::softmax(s, -1); }, batch, reps)});
  }
  {
    auto l = gpu_uniform({512, 32000}, 6);
    rows.push_back({"argmax f32 512x32000", 4.0 * 512 * 32000,
                    time_gpu_op([&] { return mx::argmax(l, -1); }, batch, reps)});
  }
  {
    auto d1 = gpu_uniform({1, 1024}, 7);
    auto d16 = gpu_uniform({16, 1024}, 8);
    rows.push_back({"softmax f32 1x1024 (decode)", 2 * 4.0 * 1024,
                    time_gpu_op([&] { return mx::softmax(d1, -1); }, batch, reps)});
    rows.push_back({"softmax f32 16x1024", 2 * 4.0 * 16 * 1024,
                    time_gpu_op([&] { return mx::softmax(d16, -1); }, batch, reps)});
  }
  bench::print_table(rows, peak, copy_gbs);
  return 0;
}
