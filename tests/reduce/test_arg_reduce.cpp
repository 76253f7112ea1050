// argmax/argmin: first extreme, NaN as the extreme, uint32 output, every dtype, flattened
// and per-axis, keepdims, strided inputs and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "reduce_test_utils.h"

using namespace reduce_test;
using mlx_test::random_array;
using mlx_test::Rng;
using mlx_test::to_doubles;
using mlx_test::to_vector;

namespace {

// Index of the first extreme, NaN winning (NumPy's rule).
double ref_arg(const std::vector<double>& g, bool is_max) {
  size_t best = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]))
      return static_cast<double>(i);
    if (is_max ? g[i] > g[best] : g[i] < g[best])
      best = i;
  }
  return static_cast<double>(best);
}

}  // namespace

TEST_CASE("argmax and argmin match a first-extreme reference for every dtype and axis") {
  Rng rng(21);
  const std::vector<std::pair<mx::Shape, int>> cases = {
      {{7}, 0},        {{3, 4}, 0},    {{3, 4}, 1}, {{3, 4}, -1},  {{2, 3, 5}, 1},
      {{2, 3, 5}, -3}, {{4, 1, 3}, 1}, {{1}, 0},    {{2, 0, 3}, 2}};
  for (auto dt : real_dtypes()) {
    for (auto& [shape, axis] : cases) {
      for (bool keepdims : {false, true}) {
        // Few distinct values, so ties are common and "first" matters.
        auto x = random_array(shape, dt, rng, mx::is_unsigned(dt) ? 0 : -2, 3);
        auto xs = to_doubles(x);
        int ax = axis < 0 ? axis + static_cast<int>(shape.size()) : axis;
        auto oshape = keepdims ? keepdims_shape(shape, {ax}) : squeezed_shape(shape, {ax});
        for (bool is_max : {true, false}) {
          auto lbl = label(is_max ? "argmax" : "argmin", dt, shape, {axis}, keepdims);
          auto out = is_max ? mx::argmax(x, axis, keepdims) : mx::argmin(x, axis, keepdims);
          CHECK_MESSAGE(out.dtype() == mx::uint32, lbl);
          CHECK_MESSAGE(out.shape() == oshape, lbl);
          auto want = ref_reduce(xs, shape, {ax},
                                 [&](const std::vector<double>& g) { return ref_arg(g, is_max); });
          mlx_test::check_all_close(to_doubles(out), want, 0, 0, lbl);
        }
      }
    }
  }
}

TEST_CASE("argmax without an axis indexes the flattened array") {
  mx::array a({3, 9, 9, 1, 0, 9}, {2, 3}, mx::int32);
  CHECK(mx::argmax(a).item<uint32_t>() == 1u);
  CHECK(mx::argmin(a).item<uint32_t>() == 4u);
  CHECK(mx::argmax(a).ndim() == 0);
  CHECK(mx::argmax(a, true).shape() == mx::Shape{1, 1});
  CHECK(mx::argmax(mx::array(5.0f)).item<uint32_t>() == 0u);
  // Through a transposed view: the logical (row-major) order decides "first".
  auto t = mx::transpose(a);  // [[3, 1], [9, 0], [9, 9]]
  CHECK(mx::argmax(t).item<uint32_t>() == 2u);
  CHECK(to_vector<uint32_t>(mx::argmax(t, 0)) == std::vector<uint32_t>{1, 2});
  CHECK(to_vector<uint32_t>(mx::argmin(t, 1)) == std::vector<uint32_t>{1, 1, 0});
}

TEST_CASE("argmax and argmin treat NaN as the extreme and pick the first NaN") {
  float nan = std::numeric_limits<float>::quiet_NaN();
  float inf = std::numeric_limits<float>::infinity();
  mx::array a({1.0f, nan, 3.0f, nan});
  CHECK(mx::argmax(a).item<uint32_t>() == 1u);
  CHECK(mx::argmin(a).item<uint32_t>() == 1u);
  CHECK(mx::argmax(mx::array({nan, 1.0f})).item<uint32_t>() == 0u);
  CHECK(mx::argmax(mx::array({1.0f, inf, inf})).item<uint32_t>() == 1u);
  CHECK(mx::argmin(mx::array({1.0f, -inf, -inf})).item<uint32_t>() == 1u);
  auto h = mx::astype(mx::array({2.0f, 2.0f, nan}), mx::bfloat16);
  CHECK(mx::argmax(h).item<uint32_t>() == 2u);
}

TEST_CASE("argmax of an empty array and bad axes throw invalid_argument") {
  CHECK_THROWS_WITH_AS(mx::argmax(mx::zeros({0})), doctest::Contains("[argmax]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::argmin(mx::zeros({3, 0}), 1), doctest::Contains("[argmin]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::argmax(mx::zeros({3}), 1), doctest::Contains("[argmax]"),
                       std::invalid_argument);
  CHECK_THROWS_AS(mx::argmax(mx::array(1.0f), 0), std::invalid_argument);
  CHECK_THROWS_AS(mx::argmax(mx::array(std::complex<float>(1, 1))), std::invalid_argument);
  // An empty result needs no comparison: fine.
  CHECK(mx::argmax(mx::zeros({0, 3}), 1).shape() == mx::Shape{0});
}
