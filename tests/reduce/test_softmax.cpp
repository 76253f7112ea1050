// softmax: double references over float dtypes, last and other axes, several axes,
// strided inputs, extreme values, 0-d and empty inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "reduce_test_utils.h"

using namespace reduce_test;
using mlx_test::random_array;
using mlx_test::Rng;
using mlx_test::rtol_for;
using mlx_test::to_doubles;

namespace {

// Reference softmax over sorted axes, in the input's row-major order.
std::vector<double> ref_softmax(const std::vector<double>& x, const mx::Shape& shape,
                                const std::vector<int>& axes) {
  auto oshape = keepdims_shape(shape, axes);
  int nd = static_cast<int>(shape.size());
  auto out_index = [&](size_t i) {
    size_t rem = i, out = 0, ostride = 1;
    for (int d = nd - 1; d >= 0; --d) {
      size_t idx = rem % shape[d];
      rem /= shape[d];
      out += (oshape[d] == 1 ? 0 : idx) * ostride;
      ostride *= oshape[d];
    }
    return out;
  };
  size_t groups = shape_size(oshape);
  std::vector<double> m(groups, -std::numeric_limits<double>::infinity()), s(groups, 0);
  for (size_t i = 0; i < x.size(); ++i)
    m[out_index(i)] = std::max(m[out_index(i)], x[i]);
  for (size_t i = 0; i < x.size(); ++i)
    s[out_index(i)] += std::exp(x[i] - m[out_index(i)]);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = std::exp(x[i] - m[out_index(i)]) / s[out_index(i)];
  return y;
}

}  // namespace

TEST_CASE("softmax matches a double reference for float dtypes over single and multiple axes") {
  Rng rng(31);
  const std::vector<ReduceCase> cases = {
      {{7}, {0}},       {{3, 5}, {1}},       {{3, 5}, {-1}},        {{3, 5}, {0}},
      {{2, 3, 4}, {1}}, {{2, 3, 4}, {0, 2}}, {{2, 3, 4}, {-1, -2}}, {{2, 3, 4}, {0, 1, 2}},
      {{4, 1}, {1}},    {{1, 9}, {1}},       {{2, 0, 3}, {2}},      {{2, 0, 3}, {1}}};
  for (auto dt : {mx::float16, mx::bfloat16, mx::float32, mx::float64}) {
    for (auto& c : cases) {
      for (bool precise : {false, true}) {
        auto lbl = label(precise ? "softmax precise" : "softmax", dt, c.shape, c.axes, false);
        auto x = random_array(c.shape, dt, rng, -6, 6);
        auto out = mx::softmax(x, c.axes, precise);
        CHECK_MESSAGE(out.dtype() == dt, lbl);
        CHECK_MESSAGE(out.shape() == c.shape, lbl);
        auto want = ref_softmax(to_doubles(x), c.shape,
                                normalized(c.axes, static_cast<int>(c.shape.size())));
        // float32 (or double) arithmetic and one rounding to the output dtype.
        double rtol = 2 * rtol_for(dt);
        mlx_test::check_all_close(to_doubles(out), want, rtol, rtol * 1e-3, lbl);
      }
    }
  }
}

TEST_CASE("softmax of integers is float32; the overloads cover one axis and all axes") {
  mx::array a({1, 2, 3}, mx::int32);
  auto s = mx::softmax(a);
  CHECK(s.dtype() == mx::float32);
  auto want = ref_softmax({1, 2, 3}, {3}, {0});
  mlx_test::check_all_close(to_doubles(s), want, 2e-6, 1e-7, "softmax int32");
  mlx_test::check_all_close(to_doubles(mx::softmax(a, 0)), want, 2e-6, 1e-7, "softmax axis 0");
  mx::array m({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2});
  auto all = to_doubles(mx::softmax(m));
  double total = 0;
  for (double v : all)
    total += v;
  CHECK(total == doctest::Approx(1.0));
  CHECK(all[3] > all[0]);
}

TEST_CASE("softmax is stable for large inputs and follows NumPy for infinities") {
  float inf = std::numeric_limits<float>::infinity();
  auto big = to_doubles(mx::softmax(mx::array({1000.0f, 1000.0f, 999.0f}), 0));
  CHECK(big[0] == doctest::Approx(std::exp(1.0) / (2 * std::exp(1.0) + 1)));
  CHECK(big[2] == doctest::Approx(1.0 / (2 * std::exp(1.0) + 1)));
  auto neg = to_doubles(mx::softmax(mx::array({-inf, 0.0f, 0.0f}), 0));
  CHECK(neg[0] == 0.0);
  CHECK(neg[1] == doctest::Approx(0.5));
  // A row of only -inf is 0/0 and a row with +inf has inf - inf: NaN, as NumPy.
  auto all_neg = to_doubles(mx::softmax(mx::array({-inf, -inf}), 0));
  CHECK(std::isnan(all_neg[0]));
  CHECK(std::isnan(to_doubles(mx::softmax(mx::array({1.0f, inf}), 0))[1]));
}

TEST_CASE("softmax reads transposed and broadcast inputs and keeps the input's layout") {
  Rng rng(41);
  auto x = random_array({4, 6}, mx::float32, rng);
  auto t = mx::transpose(x);  // (6, 4), non-contiguous
  auto want = ref_softmax(to_doubles(t), {6, 4}, {1});
  mlx_test::check_all_close(to_doubles(mx::softmax(t, -1)), want, 4e-5, 1e-7,
                            "softmax of transposed");
  auto b = mx::broadcast_to(mx::array({0.0f, 1.0f}), {3, 2});
  auto bs = to_doubles(mx::softmax(b, 1));
  for (int r = 0; r < 3; ++r) {
    CHECK(bs[r * 2 + 1] == doctest::Approx(std::exp(1.0) / (1 + std::exp(1.0))));
  }
}

TEST_CASE("softmax of a 0-d array is 1; empty arrays give empty results") {
  CHECK(mx::softmax(mx::array(3.5f)).item<float>() == 1.0f);
  CHECK(mx::softmax(mx::zeros({0, 4}), -1).shape() == mx::Shape{0, 4});
  CHECK(mx::softmax(mx::zeros({3, 0}), -1).size() == 0);
}

TEST_CASE("softmax rejects bad axes and complex inputs") {
  CHECK_THROWS_WITH_AS(mx::softmax(mx::ones({2, 2}), 2), doctest::Contains("[softmax]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::softmax(mx::ones({2, 2}), {0, 0}), doctest::Contains("[softmax]"),
                       std::invalid_argument);
  CHECK_THROWS_AS(mx::softmax(mx::array(std::complex<float>(1, 0)), std::vector<int>{}),
                  std::invalid_argument);
}
