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

// Host us per op (recording and submitting the chain), and wall us per op until the chain's
// result is ready: where the wall exceeds the host cost, the GPU is the limit, and the
// wall per op is the GPU's cost of one dependent dispatch of that kind (launch, barrier
// and the kernel's own latency).
struct ChainCost {
  double host_us, wall_us;
};

ChainCost chain_cost_us(const std::function<mx::array(const mx::array&)>& step, const mx::array& x0,
                        int count, int reps) {
  // Recorded on this thread: with the eval thread (docs/eval.md) async_eval would return
  // after queuing, and the same recording would happen out of sight.
  bench::EvalThreadOff inline_recording;
  mx::eval(step(x0));  // kernels compiled, allocator warm
  ChainCost best{1e30, 1e30};
  for (int r = 0; r < reps; ++r) {
    auto y = x0;
    for (int i = 0; i < count; ++i) {
      y = step(y);
    }
    mx::synchronize();
    double t0 = bench::now_ms();
    mx::async_eval(y);
    best.host_us = std::min(best.host_us, bench::now_ms() - t0);
    y.eval();
    best.wall_us = std::min(best.wall_us, bench::now_ms() - t0);
  }
  return {best.host_us * 1e3 / count, best.wall_us * 1e3 / count};
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
  auto wq = mx::quantize(
      mx::astype(mx::random::uniform({1024, 1024}, mx::float32, mx::random::key(3)), mx::bfloat16),
      64, 4);
  mx::eval({h, w, q, pos});
  mx::eval(wq);
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
      {"quantized_matmul bf16 1x1024 x q4 [1024,1024]^T",
       [&](const mx::array& y) {
         return mx::quantized_matmul(y, wq[0], wq[1], wq[2], true, 64, 4);
       },
       h},
      {"sum bf16 1x1024 (keepdims, then add)",
       [&](const mx::array& y) { return mx::add(mx::sum(y, -1, true), y); }, h},
  };
  std::printf("| op (chain of %d) | host us per op | wall us per op |\n|---|---|---|\n", count);
  for (auto& r : rows) {
    auto c = chain_cost_us(r.step, r.x0, count, reps);
    std::printf("| %s | %.2f | %.2f |\n", r.name, c.host_us, c.wall_us);
  }
  return 0;
}
