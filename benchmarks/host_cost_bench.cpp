// Host cost per op for decode-sized ops: a dependent chain of N ops on small arrays is
// recorded with async_eval (graph walk + planning + encoding + submission, no waiting) and
// the time divided by N, best of several repetitions, kernels warm. A decode step is a few
// hundred such ops, so this (not the GPU time) bounds tokens per second for small models.
//
// Usage: host_cost_bench [chain length, default 2000]
#include <cstdlib>
#include <functional>

#include "bench_util.h"
#include "mlx/backend/gpu/available.h"

namespace mx = mlx::core;

namespace {

double chain_cost_us(const std::function<mx::array(const mx::array&)>& step, const mx::array& x0,
                     int count, int reps) {
  mx::eval(step(x0));  // kernels compiled, allocator warm
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto y = x0;
    for (int i = 0; i < count; ++i) {
      y = step(y);
    }
    mx::synchronize();
    double t0 = bench::now_ms();
    mx::async_eval(y);
    best = std::min(best, bench::now_ms() - t0);
    y.eval();
  }
  return best * 1e3 / count;
}

}  // namespace

int main(int argc, char** argv) {
  if (!mx::gpu::is_available()) {
    std::fprintf(stderr, "host_cost_bench: no Vulkan device found\n");
    return 1;
  }
  mx::set_default_device(mx::Device::gpu);
  int count = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int reps = 5;
  auto h =
      mx::astype(mx::random::uniform({1, 1024}, mx::float32, mx::random::key(1)), mx::bfloat16);
  auto w = mx::ones({1024}, mx::bfloat16);
  auto q = mx::astype(mx::random::uniform({1, 16, 1, 128}, mx::float32, mx::random::key(2)),
                      mx::bfloat16);
  auto pos = mx::array(7);
  mx::eval({h, w, q, pos});
  struct Row {
    const char* name;
    std::function<mx::array(const mx::array&)> step;
    mx::array x0;
  };
  std::vector<Row> rows = {
      {"add bf16 1x1024", [&](const mx::array& y) { return mx::add(y, h); }, h},
      {"rms_norm bf16 1x1024", [&](const mx::array& y) { return mx::fast::rms_norm(y, w, 1e-5f); },
       h},
      {"layer_norm bf16 1x1024",
       [&](const mx::array& y) { return mx::fast::layer_norm(y, w, std::nullopt, 1e-5f); }, h},
      {"softmax bf16 1x1024", [&](const mx::array& y) { return mx::softmax(y, -1); }, h},
      {"rope bf16 1x16x1x128 (int offset)",
       [&](const mx::array& y) { return mx::fast::rope(y, 128, false, 1e6f, 1.0f, 7); }, q},
      {"rope bf16 1x16x1x128 (array offset)",
       [&](const mx::array& y) { return mx::fast::rope(y, 128, false, 1e6f, 1.0f, pos); }, q},
      {"sum bf16 1x1024 (keepdims, then add)",
       [&](const mx::array& y) { return mx::add(mx::sum(y, -1, true), y); }, h},
  };
  std::printf("| op (chain of %d) | host us per op |\n|---|---|\n", count);
  for (auto& r : rows) {
    std::printf("| %s | %.2f |\n", r.name, chain_cost_us(r.step, r.x0, count, reps));
  }
  return 0;
}
