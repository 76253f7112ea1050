// softmax on the GPU (the "softmax" family) matches the CPU reference for f32, f16 and bf16,
// along any axis and layout (the op moves the axis last; other layouts are copied), for
// short and long rows, and for rows with NaN and infinities.
#include <doctest/doctest.h>

#include <cmath>

#include "harness.h"

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
