// compile() on the GPU: each fused group is one dispatch of a "fused" kernel (SwiGLU: one
// instead of three), a shapeless compile reuses one kernel for every shape, and fused
// results equal the unfused kernels' (the emitter uses the same per-op GLSL and rounds each
// node to its dtype; both sides run on the same device, so they agree exactly unless the
// driver contracts a multiply-add in one of them: the check allows 2 ulp of f32).
#include <doctest/doctest.h>

#include "harness.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/stats.h"

namespace mx = mlx::core;
using namespace gpu_diff;

namespace {

std::vector<mx::array> swiglu(const std::vector<mx::array>& in) {
  auto g = in[0];
  return {mx::multiply(mx::multiply(g, mx::sigmoid(g)), in[1])};
}

// Dispatches recorded while evaluating `make`'s outputs (inputs evaluated first).
uint64_t dispatches_of(const std::function<std::vector<mx::array>()>& make) {
  auto outs = make();
  uint64_t before = mx::vulkan::dispatch_count();
  mx::eval(outs);
  return mx::vulkan::dispatch_count() - before;
}

}  // namespace

TEST_CASE("a compiled SwiGLU is one fused dispatch and equals the unfused kernels") {
  if (!gpu_present())
    return;
  auto saved = mx::default_device();
  mx::set_default_device(mx::Device::gpu);
  auto cfun = mx::compile(swiglu, true);
  for (auto dt : {mx::float32, mx::bfloat16, mx::float16}) {
    for (int n : {7, 1000}) {
      CAPTURE(mx::dtype_to_string(dt));
      CAPTURE(n);
      auto g = mx::astype(mx::random::normal({2, n}), dt);
      auto u = mx::astype(mx::random::normal({2, n}), dt);
      mx::eval({g, u});
      CHECK(dispatches_of([&] { return cfun({g, u}); }) == 1);
      CHECK(dispatches_of([&] { return swiglu({g, u}); }) == 3);
      Tolerance tol = dt == mx::float32 ? Tolerance{2.4e-7, 1e-30} : Tolerance{0, 0};
      CHECK(all_close(cfun({g, u})[0], swiglu({g, u})[0], tol, "swiglu"));
    }
  }
  // Shapeless: a new shape of the same rank builds no new kernel.
  auto g = mx::ones({3, 5});
  mx::eval(cfun({g, g}));
  auto compiles = mx::vulkan::kernel_stats().compiles + mx::vulkan::kernel_stats().disk_hits;
  auto h = mx::ones({4, 9});
  mx::eval(cfun({h, h}));
  CHECK(mx::vulkan::kernel_stats().compiles + mx::vulkan::kernel_stats().disk_hits == compiles);
  mx::set_default_device(saved);
}

TEST_CASE("fused groups with broadcast and strided inputs, predicates and several outputs") {
  if (!gpu_present())
    return;
  auto saved = mx::default_device();
  mx::set_default_device(mx::Device::gpu);
  auto fn = [](const std::vector<mx::array>& in) {
    auto x = in[0];          // a transposed view
    auto b = in[1];          // a row broadcast against x
    auto y = mx::add(x, b);  // the broadcast stays a view: a fused input with stride 0
    auto t = mx::tanh(y);
    auto keep = mx::greater(t, mx::array(0.0f));
    return std::vector<mx::array>{mx::where(keep, t, mx::multiply(t, mx::array(0.1f))), t};
  };
  auto base = mx::random::normal({6, 5});
  auto x = mx::transpose(base);
  auto b = mx::random::normal({6});
  mx::eval({x, b});
  auto got = mx::compile(fn)({x, b});
  auto want = fn({x, b});
  CHECK(all_close(got[0], want[0], {2.4e-7, 1e-30}, "leaky tanh"));
  CHECK(all_close(got[1], want[1], {2.4e-7, 1e-30}, "tanh"));
  mx::set_default_device(saved);
}
