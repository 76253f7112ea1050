// Weights brought into L2 by the product before (templates/include/prefetch.glsl,
// mlx/backend/vulkan/lookahead.h): a decode layer's chain of quantized products, each
// launch carrying workgroups that read the next product's weights and write nothing. The
// outputs must be bit for bit those of the same chain without prefetching (the product's
// own workgroups are the same code; the values of each fused product against the CPU are
// test_fusion.cpp's), and the launches that carried prefetch workgroups are counted. Off by
// default on lavapipe (a CPU device), so the tests force it on.
#include <doctest/doctest.h>

#include <cmath>

#include "fusion_util.h"
#include "harness.h"
#include "mlx/backend/gpu/eval.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/lookahead.h"
#include "mlx/primitives.h"

namespace mx = mlx::core;
using namespace gpu_diff;

namespace {

constexpr float kEps = 1e-6f;

struct Weights {
  mx::array w, scales, biases;
};

// A quantized n x k weight in device memory, written and complete before the chain runs.
Weights device_weights(int n, int k, uint64_t seed) {
  auto q = mx::quantize(uniform({n, k}, mx::bfloat16, seed), 64, 4, "affine", std::nullopt,
                        mx::Device::cpu);
  Weights w{on_device(q[0], mx::Device::gpu), on_device(q[1], mx::Device::gpu),
            on_device(q[2], mx::Device::gpu)};
  mx::synchronize();
  return w;
}

mx::array product(const mx::array& x, const Weights& w) {
  return mx::quantized_matmul(x, w.w, w.scales, w.biases, true, 64, 4, "affine", mx::Device::gpu);
}

// A decode layer's products: q/k/v of the norm, o with the residual, up of the second norm,
// down with the residual (fused as a decode step fuses them, mlx/fusion.h).
mx::array layer(const mx::array& x, const std::vector<Weights>& w, const mx::array& n1,
                const mx::array& n2, const mx::array* late_down_w) {
  auto gpu = mx::Device::gpu;
  auto qkv = product(mx::fast::rms_norm(x, n1, kEps, gpu), w[0]);
  auto h = mx::add(x, product(qkv, w[1]), gpu);
  auto up = product(mx::fast::rms_norm(h, n2, kEps, gpu), w[2]);
  Weights down = w[3];
  if (late_down_w != nullptr) {
    down.w = *late_down_w;
  }
  return mx::add(h, product(up, down), gpu);
}

// The layer evaluated with prefetching forced on or off: its output, and the launches that
// carried prefetch workgroups.
std::pair<mx::array, uint64_t> run_layer(bool prefetch, const mx::array& x,
                                         const std::vector<Weights>& w, const mx::array& n1,
                                         const mx::array& n2, bool late_down) {
  mx::vulkan::force_prefetch_weights(prefetch);
  uint64_t before = mx::vulkan::prefetch_launch_count();
  // late_down: the down product's weights are computed in the same eval, after the up
  // product runs (an add of zeros on the GPU), so the up product has nothing to bring in.
  std::optional<mx::array> late;
  if (late_down) {
    late = mx::add(w[3].w, mx::zeros_like(w[3].w, mx::Device::gpu), mx::Device::gpu);
  }
  auto out = layer(x, w, n1, n2, late ? &*late : nullptr);
  out.eval();
  mx::synchronize();
  uint64_t launches = mx::vulkan::prefetch_launch_count() - before;
  mx::vulkan::force_prefetch_weights(std::nullopt);
  return {on_device(out, mx::Device::cpu), launches};
}

}  // namespace

TEST_CASE(
    "a decode layer's products that bring the next one's weights into L2 give the same bits") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  const int H = 256, I = 512;
  std::vector<Weights> w = {device_weights(I, H, 1), device_weights(H, I, 2),
                            device_weights(I, H, 3), device_weights(H, I, 4)};
  auto n1 = on_device(uniform({H}, mx::bfloat16, 5), mx::Device::gpu);
  auto n2 = on_device(uniform({H}, mx::bfloat16, 6), mx::Device::gpu);
  for (bool late_down : {false, true}) {
    CAPTURE(late_down);
    auto x = on_device(uniform({1, H}, mx::bfloat16, 7 + late_down), mx::Device::gpu);
    auto [plain, plain_launches] = run_layer(false, x, w, n1, n2, late_down);
    auto [fetched, fetched_launches] = run_layer(true, x, w, n1, n2, late_down);
    CHECK(plain_launches == 0);
    // Each product but the last brings in the next one's weights, except the up product
    // when the down product's weights come later in the same eval.
    CHECK(fetched_launches == (late_down ? 2u : 3u));
    CHECK(mx::array_equal(fetched, plain).item<bool>());
  }
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["QuantizedMatmul"] == 0);
}

TEST_CASE("products that share a compiled function's primitive each find their own successor") {
  // A compiled function's calls with the same input shapes share its traced product. The
  // lookahead matches nodes by primitive: a product must get the node after its own, never
  // the one after an earlier node of the same primitive that has run (run_tape moves a node
  // out of the tape when it runs). The tape is made and "run" by hand here.
  const int H = 256, I = 512;
  auto q = mx::quantize(uniform({I, H}, mx::bfloat16, 21), 64, 4, "affine", std::nullopt,
                        mx::Device::cpu);
  Weights w{q[0], q[1], q[2]};
  auto f = mx::compile(
      [w](const std::vector<mx::array>& in) { return std::vector<mx::array>{product(in[0], w)}; },
      false);
  auto x = uniform({1, H}, mx::bfloat16, 22);
  auto a = f({x})[0];
  auto b = f({x})[0];
  REQUIRE(a.primitive_id() == b.primitive_id());
  mx::vulkan::force_prefetch_weights(true);
  std::vector<mx::array> tape = {a, b};
  mx::gpu::begin_tape(tape);
  CHECK(mx::vulkan::next_quantized_product(a.primitive()) == &tape[1]);  // a runs first
  auto ran_a = std::move(tape[0]);
  auto ran_b = std::move(tape[1]);
  // b runs: the match at a's entry has a successor that ran (b itself); b has none.
  CHECK(mx::vulkan::next_quantized_product(b.primitive()) == nullptr);
  mx::gpu::end_tape();
  // The same, with a never asking (a product that took another route leaves its entry).
  tape = {a, b};
  mx::gpu::begin_tape(tape);
  ran_a = std::move(tape[0]);
  ran_b = std::move(tape[1]);
  CHECK(mx::vulkan::next_quantized_product(b.primitive()) == nullptr);
  mx::gpu::end_tape();
  mx::vulkan::force_prefetch_weights(std::nullopt);
}
