// Kernels first needed inside the eval loop have their pipelines created on worker threads
// (kernel_library.h); the encoder records their dispatches when the batch is submitted
// (command_encoder.h). These cases check the values, that the dispatches really waited,
// and what a failed creation does.
//
// Each case uses kernels no other case of this binary builds (lavapipe: 40-400 ms each).
#include "vk_test.h"

#include <string>
#include <utility>

#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/kernel_library.h"

namespace mx = mlx::core;
namespace vk = mlx::core::vulkan;

namespace {

const mx::Device gpu = mx::Device::gpu;
const mx::Device cpu = mx::Device::cpu;

mx::array ramp(int n, mx::Dtype dt, int shift) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) {
    v[i] = (i * 7 + shift) % 23 - 11;
  }
  return mx::astype(mx::array(v.begin(), {n}, mx::int32), dt, cpu);
}

bool same(const mx::array& a, const mx::array& b) {
  return mx::array_equal(mx::astype(a, mx::float32, cpu), mx::astype(b, mx::float32, cpu), false,
                         cpu)
      .item<bool>();
}

}  // namespace

TEST_CASE("kernels one batch needs for the first time are created while it records") {
  VK_REQUIRE_DEVICE();
  auto a = ramp(37, mx::int16, 1), b = ramp(37, mx::int16, 5), c = ramp(37, mx::int8, 3);
  auto before = vk::encoder_stats();
  // Three new kernels (abs i8, maximum i16, square i16) in one batch.
  auto y1 = mx::abs(c, gpu);
  auto y2 = mx::maximum(a, b, gpu);
  auto y3 = mx::square(b, gpu);
  mx::eval({y1, y2, y3});
  auto after = vk::encoder_stats();
  // At least the first new kernel's dispatch waited for its pipeline (later ones may find
  // theirs ready, depending on timing).
  CHECK(after.deferred > before.deferred);
  CHECK(same(y1, mx::abs(c, cpu)));
  CHECK(same(y2, mx::maximum(a, b, cpu)));
  CHECK(same(y3, mx::square(b, cpu)));
  // The same graph again finds every pipeline built: nothing waits.
  auto again = vk::encoder_stats();
  auto z = mx::maximum(mx::abs(a, gpu), b, gpu);
  z.eval();
  CHECK(same(z, mx::maximum(mx::abs(a, cpu), b, cpu)));
  auto abs_i16_new = vk::encoder_stats().deferred - again.deferred;
  CHECK(abs_i16_new <= 1);  // abs on i16 is new; maximum i16 is built
}

TEST_CASE("a pipeline the driver fails to create fails the eval, naming it; a retry builds it") {
  VK_REQUIRE_DEVICE();
  auto ok = mx::add(ramp(29, mx::int32, 4), ramp(29, mx::int32, 9), gpu);
  ok.eval();  // an i32 add, built before the failures
  // At once (the op may see the failure at its dispatch), and after 300 ms (the dispatch
  // waits, so the submission reports it), each on a kernel new to the process.
  const std::pair<mx::Dtype, int> cases[] = {{mx::uint16, 0}, {mx::uint8, 300}};
  for (auto [dt, delay] : cases) {
    CAPTURE(delay);
    auto a = ramp(29, dt, 2);
    vk::fail_pipelines_for_testing("unary:", delay);
    auto before = vk::encoder_stats();
    auto bad = mx::negative(a, gpu);
    std::string what;
    try {
      mx::eval({bad, mx::add(ok, ok, gpu)});
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
    vk::fail_pipelines_for_testing("");
    CHECK(what.find("creating the pipeline of kernel unary:") != std::string::npos);
    CHECK(what.find("VK_ERROR_INITIALIZATION_FAILED") != std::string::npos);
    if (delay > 0) {
      CHECK(vk::encoder_stats().deferred > before.deferred);
    }
    // The key is forgotten, so the same op builds it again; other kernels are unaffected.
    auto retry = mx::negative(a, gpu);
    auto sum = mx::add(ramp(29, mx::int32, 4), ramp(29, mx::int32, 9), gpu);
    mx::eval({retry, sum});
    CHECK(same(retry, mx::negative(a, cpu)));
    CHECK(same(sum, ok));
  }
}

TEST_CASE("on the eval thread, a pipeline that fails at submission reaches the reader") {
  VK_REQUIRE_DEVICE();
  // async_eval records on the eval thread (docs/eval.md); a pipeline still in creation when
  // its dispatch is recorded fails at the batch's submission, after the tape ran.
  auto a = ramp(29, mx::int16, 3);
  vk::fail_pipelines_for_testing("unary:", 300);
  auto bad = mx::negative(a, gpu);
  mx::async_eval(bad);
  std::string what;
  try {
    bad.eval();
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  vk::fail_pipelines_for_testing("");
  CHECK(what.find("creating the pipeline of kernel unary:") != std::string::npos);
  // Reported once; the thread takes new work and the key builds again.
  auto retry = mx::negative(a, gpu);
  mx::async_eval(retry);
  CHECK(same(retry, mx::negative(a, cpu)));
}
