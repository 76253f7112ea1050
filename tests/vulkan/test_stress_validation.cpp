// A small mixed workload (elementwise chains, donated in-place updates, transposed copies,
// slices and concatenation, full(), random draws, CPU-route ops in between, two streams and
// async_eval) checked for values. Under the "vulkan_stress_validation" ctest entry it runs
// with the Khronos validation layer and synchronization validation on, and any validation
// message, error or warning, fails it (issue 10): the layers report nothing today, and every
// new kernel family must keep it so.
#include <cstdlib>

#include "mlx/backend/vulkan/device.h"
#include "vk_test.h"

namespace mx = mlx::core;
using mlx_test::to_doubles;

namespace {

bool expect_validation() {
  const char* v = std::getenv("MLX_VK_EXPECT_VALIDATION");
  return v && std::string(v) == "1";
}

// One round of the workload on stream s; returns values the CPU can check.
mx::array round_of_work(int i, mx::StreamOrDevice s) {
  auto base = mx::astype(mx::reshape(mx::arange(0, 96, s), {8, 12}, s), mx::float32, s);
  auto t = mx::add(mx::transpose(base, s), mx::array(float(i)), s);  // transposed read
  auto c = mx::copy(t, s);                                           // tiled transpose copy
  auto x = mx::exp(mx::multiply(c, mx::array(0.01f), s), s);
  auto h = mx::astype(x, mx::float16, s);
  auto back = mx::astype(h, mx::float32, s);
  // In-place update of a donated buffer, then a strided slice and a concatenation.
  auto upd = mx::slice_update(mx::zeros({12, 8}, s), mx::ones({2, 8}, s), {3, 0}, {5, 8}, s);
  auto joined = mx::concatenate({mx::slice(back, {0, 0}, {12, 8}, {1, 2}, s), upd}, 1, s);
  auto r = mx::random::uniform({12, 12}, mx::random::key(i), s);
  auto mixed = mx::where(mx::greater(r, mx::array(0.5f), s), joined, mx::negative(joined, s), s);
  // A CPU-route op in the middle of GPU work (the reduction leaves and re-enters the GPU).
  auto total = mx::sum(mixed, 1, true, s);
  return mx::add(mixed, total, s);
}

}  // namespace

TEST_CASE("a mixed workload on two streams is right and raises no validation message") {
  VK_REQUIRE_DEVICE();
  auto& dev = mx::vulkan::device("stress test");
  if (expect_validation()) {
    REQUIRE_MESSAGE(dev.validation_enabled(),
                    "the validation layer is not on: install vulkan-validationlayers");
  }
  size_t errors0 = dev.validation_errors();
  size_t warnings0 = dev.validation_warnings();
  auto s0 = mx::default_stream(mx::Device::gpu);
  auto s1 = mx::new_stream(mx::Device::gpu);
  mx::Device cpu = mx::Device::cpu;
  for (int i = 0; i < 12; ++i) {
    auto a = round_of_work(i, i % 2 ? s1 : s0);
    auto b = round_of_work(i, cpu);  // the reference, on the CPU
    if (i % 3 == 0) {
      mx::async_eval(a);
    }
    auto got = to_doubles(a);
    auto want = to_doubles(b);
    REQUIRE(got.size() == want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      // float16 round trip and exp: a few float16 ulps.
      CHECK_MESSAGE(mlx_test::close(got[k], want[k], 4e-3, 1e-3),
                    "round " << i << " element " << k);
    }
  }
  mx::synchronize(s0);
  mx::synchronize(s1);
  if (dev.validation_enabled()) {
    CHECK(dev.validation_errors() == errors0);
    CHECK(dev.validation_warnings() == warnings0);
  }
}
