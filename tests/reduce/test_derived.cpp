// var and logsumexp: double references over every dtype and axis set, ddof, and the
// infinity/NaN rules of a stable logsumexp.
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

double ref_var(const std::vector<double>& g, int ddof) {
  double m = ref_sum(g) / g.size();
  double ss = 0;
  for (double v : g)
    ss += (v - m) * (v - m);
  return ss / (static_cast<double>(g.size()) - ddof);
}

double ref_logsumexp(const std::vector<double>& g) {
  double m = *std::max_element(g.begin(), g.end());
  double s = 0;
  for (double v : g)
    s += std::exp(v - m);
  return m + std::log(s);
}

// Cases with non-empty reductions (var and logsumexp of empty sets are NaN / an error).
bool has_empty_group(const ReduceCase& c) {
  for (int a : normalized(c.axes, static_cast<int>(c.shape.size()))) {
    if (c.shape[a] == 0)
      return true;
  }
  return shape_size(c.shape) == 0;
}

}  // namespace

TEST_CASE("var matches a two-pass double reference for every dtype, ddof 0 and 1") {
  Rng rng(5);
  for (auto dt : real_dtypes()) {
    for (auto& c : reduce_cases()) {
      if (has_empty_group(c))
        continue;
      for (int ddof : {0, 1}) {
        for (bool keepdims : {false, true}) {
          auto lbl = label("var ddof " + std::to_string(ddof), dt, c.shape, c.axes, keepdims);
          auto x = random_array(c.shape, dt, rng, mx::is_unsigned(dt) ? 0 : -4, 5);
          auto out = mx::var(x, c.axes, keepdims, ddof);
          auto axes = normalized(c.axes, static_cast<int>(c.shape.size()));
          CHECK_MESSAGE(out.dtype() == mx::at_least_float(dt), lbl);
          CHECK_MESSAGE(out.shape() == (keepdims ? keepdims_shape(c.shape, axes)
                                                 : squeezed_shape(c.shape, axes)),
                        lbl);
          auto want = ref_reduce(to_doubles(x), c.shape, axes,
                                 [&](const std::vector<double>& g) { return ref_var(g, ddof); });
          // A handful of roundings of the output dtype relative to the variance, plus an
          // absolute term for (near-)zero variances of short or constant groups.
          double rtol = 10 * rtol_for(mx::at_least_float(dt));
          mlx_test::check_all_close(to_doubles(out), want, rtol, rtol * 16, lbl);
        }
      }
    }
  }
}

TEST_CASE("var by hand: ddof, large offsets and n <= ddof") {
  mx::array a({1.0f, 2.0f, 3.0f, 4.0f});
  CHECK(mx::var(a).item<float>() == doctest::Approx(1.25));
  CHECK(mx::var(a, false, 1).item<float>() == doctest::Approx(5.0 / 3.0));
  // Two passes keep the precision that E[x^2] - E[x]^2 would lose at a large mean.
  mx::array b({10000.0f, 10001.0f, 10002.0f});
  CHECK(mx::var(b).item<float>() == doctest::Approx(2.0 / 3.0).epsilon(1e-5));
  // Dividing by n - ddof <= 0 gives inf (or NaN for zero spread), as NumPy.
  CHECK(std::isinf(mx::var(mx::array({1.0f, 2.0f}), false, 2).item<float>()));
  CHECK(std::isnan(mx::var(mx::array({1.0f}), false, 1).item<float>()));
  CHECK(mx::var(mx::array({1, 3}, mx::int32)).dtype() == mx::float32);
  CHECK(mx::var(mx::array({1.0f, 3.0f}, mx::float16)).dtype() == mx::float16);
}

TEST_CASE("logsumexp matches a stable double reference for every dtype") {
  Rng rng(11);
  for (auto dt : real_dtypes()) {
    for (auto& c : reduce_cases()) {
      if (has_empty_group(c))
        continue;
      for (bool keepdims : {false, true}) {
        auto lbl = label("logsumexp", dt, c.shape, c.axes, keepdims);
        auto x = random_array(c.shape, dt, rng, mx::is_unsigned(dt) ? 0 : -6, 6);
        auto out = mx::logsumexp(x, c.axes, keepdims);
        auto axes = normalized(c.axes, static_cast<int>(c.shape.size()));
        CHECK_MESSAGE(out.dtype() == mx::at_least_float(dt), lbl);
        CHECK_MESSAGE(out.shape() == (keepdims ? keepdims_shape(c.shape, axes)
                                               : squeezed_shape(c.shape, axes)),
                      lbl);
        auto want = ref_reduce(to_doubles(x), c.shape, axes, ref_logsumexp);
        // exp/log in float32 (a few ulps), then one rounding to the output dtype.
        double rtol = 2 * rtol_for(mx::at_least_float(dt));
        mlx_test::check_all_close(to_doubles(out), want, rtol, rtol, lbl);
      }
    }
  }
}

TEST_CASE("logsumexp is stable for large inputs and handles infinities and NaN") {
  float inf = std::numeric_limits<float>::infinity();
  float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(mx::logsumexp(mx::array({1000.0f, 1000.0f})).item<float>() ==
        doctest::Approx(1000.0 + std::log(2.0)));
  CHECK(mx::logsumexp(mx::array({-1000.0f, -1000.0f})).item<float>() ==
        doctest::Approx(-1000.0 + std::log(2.0)));
  CHECK(mx::logsumexp(mx::array({-inf, -inf})).item<float>() == -inf);
  CHECK(mx::logsumexp(mx::array({-inf, 0.0f})).item<float>() == 0.0f);
  CHECK(mx::logsumexp(mx::array({1.0f, inf})).item<float>() == inf);
  CHECK(std::isnan(mx::logsumexp(mx::array({1.0f, nan})).item<float>()));
  // Per row: one row of -inf, one ordinary row.
  mx::array m({-inf, -inf, 0.0f, 0.0f}, {2, 2});
  auto r = to_doubles(mx::logsumexp(m, 1));
  CHECK(r[0] == -inf);
  CHECK(r[1] == doctest::Approx(std::log(2.0)));
  CHECK(mx::logsumexp(m, 1, true).shape() == mx::Shape{2, 1});
}
