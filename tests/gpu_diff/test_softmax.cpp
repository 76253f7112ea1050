// softmax on the GPU (the "softmax" family) matches the CPU reference for f32, f16 and bf16,
// along any axis and layout (the op moves the axis last; other layouts are copied), for
// short and long rows, and for rows with NaN and infinities.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "harness.h"
#include "mlx/backend/vulkan/cpu_fallback.h"

namespace mx = mlx::core;
using namespace gpu_diff;

TEST_CASE("softmax matches the CPU over dtypes, axes and layouts") {
  if (!gpu_present())
    return;
  const std::vector<std::pair<mx::Shape, int>> cases = {
      {{7}, 0}, {{3, 5}, 1}, {{3, 5}, 0}, {{4, 3, 5}, 1}, {{67, 1031}, 1}, {{2, 5000}, -1}};
  for (auto dt : {mx::float32, mx::float16, mx::bfloat16}) {
    // Values in [-8, 8]: exp spans e^16; f32 math on the device, one rounding on store.
    Tolerance tol = dt == mx::float32 ? Tolerance{1e-5, 1e-7} : default_tolerance(dt);
    for (auto [shape, axis] : cases) {
      Op op = [=](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
        return mx::softmax(in[0], axis, false, s);
      };
      for (auto layout : {Layout::contiguous, Layout::transposed, Layout::broadcast}) {
        Case c{"softmax", {dt}, shape, layout, 9};
        CHECK_MESSAGE(run_case(c, op, {{-8, 8}}, tol), c.describe());
      }
    }
  }
}

TEST_CASE("softmax rows with NaN or infinities give what the CPU gives") {
  if (!gpu_present())
    return;
  float nan = std::nanf("");
  float inf = INFINITY;
  mx::array x({1.0f, 2.0f, nan, 0.0f, -inf, -inf, -inf, -inf, 1.0f, inf, 0.0f, -1.0f, -inf, 0.0f,
               1.0f, 2.0f},
              {4, 4});
  auto g = mlx_test::to_doubles(mx::softmax(x, -1, false, mx::Device::gpu));
  auto c = mlx_test::to_doubles(mx::softmax(x, -1, false, mx::Device::cpu));
  REQUIRE(g.size() == c.size());
  for (size_t i = 0; i < g.size(); ++i) {
    bool same = (std::isnan(g[i]) && std::isnan(c[i])) || std::abs(g[i] - c[i]) <= 1e-6;
    CHECK_MESSAGE(same, "element " << i << ": " << g[i] << " vs " << c[i]);
  }
}

TEST_CASE("softmax of operands wider than one binding runs on the GPU and matches") {
  size_t range = small_binding_range();
  if (!range)
    return;
  mx::vulkan::reset_fallback_counts();
  // One f32 row longer than a binding (statistics by the reduce family, the rest by
  // elementwise launches): against a double-precision loop, since a plain f32 sum of 2^25
  // terms on the CPU loses most of its digits.
  int n = static_cast<int>(range / 4) + 4099;
  auto x = small_ints(1, n, 61);
  auto got = gpu_eval_checked(
      [&] { return std::vector<mx::array>{mx::softmax(x, -1, false, mx::Device::gpu)}; },
      "long-row softmax")[0];
  auto xv = mlx_test::to_doubles(x);
  double top = *std::max_element(xv.begin(), xv.end());
  double sum = 0;
  for (double v : xv) {
    sum += std::exp(v - top);
  }
  auto g = mlx_test::to_doubles(got);
  size_t bad = g.size();
  for (size_t i = 0; i < g.size() && bad == g.size(); ++i) {
    if (!mlx_test::close(g[i], std::exp(xv[i] - top) / sum, 1e-5, 0)) {
      bad = i;
    }
  }
  CHECK_MESSAGE(bad == g.size(), "element " << bad << " differs from the double reference");
  // A transposed square just wider than a binding: copied dense in staged blocks first.
  int side = static_cast<int>(std::sqrt(range / 4.0)) + 64;
  auto sq = small_ints(side, side, 62);
  auto wide = gpu_eval_checked(
      [&] {
        return std::vector<mx::array>{
            mx::softmax(mx::transpose(sq, mx::Device::gpu), -1, false, mx::Device::gpu)};
      },
      "wide softmax")[0];
  auto want = mx::softmax(mx::transpose(sq, mx::Device::cpu), -1, false, mx::Device::cpu);
  CHECK(all_close(wide, want, {1e-5, 1e-7}, "transposed softmax"));
  CHECK(mx::vulkan::fallback_counts().empty());
}
