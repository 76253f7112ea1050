// The composite ops of issue 14 on every test device (the GPU runs their parts' kernels):
// tile, repeat, meshgrid, nan_to_num, median, tensordot, outer, inner, trace and
// logcumsumexp, against values written out by hand or from independent loops, and MLX's
// errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "mlx/mlx.h"
#include "test_utils.h"

namespace mx = mlx::core;
using mlx_test::to_doubles;

namespace {

bool near(const std::vector<double>& a, const std::vector<double>& b, double tol = 1e-5) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    bool both_nan = std::isnan(a[i]) && std::isnan(b[i]);
    if (!both_nan && !(std::abs(a[i] - b[i]) <= tol * (1 + std::abs(b[i])))) {
      return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE("tile, repeat and meshgrid lay values out as MLX does") {
  auto x = mx::array({1, 2, 3, 4}, {2, 2}, mx::int32);
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == mx::Device::cpu ? "cpu" : "gpu");
    auto t = mx::tile(x, {1, 2}, d);
    CHECK(t.shape() == mx::Shape{2, 4});
    CHECK(to_doubles(t) == std::vector<double>{1, 2, 1, 2, 3, 4, 3, 4});
    auto t3 = mx::tile(mx::array({5, 6}), {2, 1, 2}, d);
    CHECK(t3.shape() == mx::Shape{2, 1, 4});
    CHECK(to_doubles(t3) == std::vector<double>{5, 6, 5, 6, 5, 6, 5, 6});
    CHECK(to_doubles(mx::repeat(x, 2, 1, d)) == std::vector<double>{1, 1, 2, 2, 3, 3, 4, 4});
    CHECK(to_doubles(mx::repeat(x, 2, 0, d)) == std::vector<double>{1, 2, 1, 2, 3, 4, 3, 4});
    CHECK(to_doubles(mx::repeat(x, 2, d)) == std::vector<double>{1, 1, 2, 2, 3, 3, 4, 4});
    CHECK(mx::repeat(x, 0, 1, d).shape() == mx::Shape{2, 0});
    auto g = mx::meshgrid({mx::array({1, 2, 3}), mx::array({7, 8})}, false, "xy", d);
    CHECK(g[0].shape() == mx::Shape{2, 3});
    CHECK(to_doubles(g[0]) == std::vector<double>{1, 2, 3, 1, 2, 3});
    CHECK(to_doubles(g[1]) == std::vector<double>{7, 7, 7, 8, 8, 8});
    auto ij = mx::meshgrid({mx::array({1, 2, 3}), mx::array({7, 8})}, false, "ij", d);
    CHECK(ij[0].shape() == mx::Shape{3, 2});
    CHECK(to_doubles(ij[1]) == std::vector<double>{7, 8, 7, 8, 7, 8});
    auto sp = mx::meshgrid({mx::array({1, 2, 3}), mx::array({7, 8})}, true, "ij", d);
    CHECK(sp[0].shape() == mx::Shape{3, 1});
    CHECK(sp[1].shape() == mx::Shape{1, 2});
  }
  CHECK_THROWS_WITH_AS(mx::repeat(x, -1, 0), "[repeat] Number of repeats cannot be negative",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::meshgrid({x}, false, "yx"),
                       "[meshgrid] Invalid indexing value. Valid values are 'xy' and 'ij'.",
                       std::invalid_argument);
}

TEST_CASE("nan_to_num and median follow MLX's rules") {
  float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == mx::Device::cpu ? "cpu" : "gpu");
    auto x = mx::array({nan, inf, -inf, 1.5f});
    CHECK(to_doubles(mx::nan_to_num(x, 0.0f, std::nullopt, std::nullopt, d)) ==
          std::vector<double>{0, std::numeric_limits<float>::max(),
                              -double(std::numeric_limits<float>::max()), 1.5});
    CHECK(to_doubles(mx::nan_to_num(mx::astype(x, mx::float16), 7.0f, 9.0f, -9.0f, d)) ==
          std::vector<double>{7, 9, -9, 1.5});
    CHECK(to_doubles(mx::nan_to_num(mx::astype(x, mx::float16), 0.0f, std::nullopt, std::nullopt,
                                    d)) == std::vector<double>{0, 65504, -65504, 1.5});
    auto m = mx::array({3.0f, 1.0f, 4.0f, 1.0f, 5.0f, 9.0f}, {2, 3});
    CHECK(to_doubles(mx::median(m, d)) == std::vector<double>{3.5});
    CHECK(to_doubles(mx::median(m, 1, false, d)) == std::vector<double>{3, 5});
    CHECK(to_doubles(mx::median(m, 0, true, d)) == std::vector<double>{2, 3, 6.5});
    CHECK(mx::median(m, 0, true, d).shape() == mx::Shape{1, 3});
    CHECK(mx::median(mx::array({1, 2}), d).dtype() == mx::float32);
    auto with_nan = mx::array({1.0f, nan, 2.0f, 3.0f}, {2, 2});
    auto md = to_doubles(mx::median(with_nan, 1, false, d));
    CHECK(std::isnan(md[0]));
    CHECK(md[1] == 2.5);
  }
  CHECK_THROWS_WITH_AS(mx::median(mx::zeros({2, 2}), std::vector<int>{0, 0}),
                       "[median] Received duplicate axis.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::median(mx::zeros({2, 0}), 1),
                       "[median] Cannot take median along empty axis.", std::invalid_argument);
}

TEST_CASE("tensordot, outer, inner and trace equal their loops") {
  mlx_test::Rng rng(3);
  auto a = mlx_test::random_array({2, 3, 4}, mx::float32, rng);
  auto b = mlx_test::random_array({3, 4, 5}, mx::float32, rng);
  auto av = to_doubles(a), bv = to_doubles(b);
  std::vector<double> want(2 * 5, 0.0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 5; ++j)
      for (int p = 0; p < 3; ++p)
        for (int q = 0; q < 4; ++q)
          want[i * 5 + j] += av[(i * 3 + p) * 4 + q] * bv[(p * 4 + q) * 5 + j];
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == mx::Device::cpu ? "cpu" : "gpu");
    auto t = mx::tensordot(a, b, 2, d);
    CHECK(t.shape() == mx::Shape{2, 5});
    CHECK(near(to_doubles(t), want));
    auto t2 = mx::tensordot(a, b, {1, 2}, {0, 1}, d);
    CHECK(near(to_doubles(t2), want));
    auto o = mx::outer(mx::array({1.0f, 2.0f}), mx::array({3.0f, 4.0f, 5.0f}), d);
    CHECK(o.shape() == mx::Shape{2, 3});
    CHECK(to_doubles(o) == std::vector<double>{3, 4, 5, 6, 8, 10});
    auto in = mx::inner(mx::array({1.0f, 2.0f, 3.0f}), mx::array({4.0f, 5.0f, 6.0f}), d);
    CHECK(to_doubles(in) == std::vector<double>{32});
    CHECK(to_doubles(mx::inner(mx::array(2.0f), mx::array({1.0f, 3.0f}), d)) ==
          std::vector<double>{2, 6});
    auto sq = mx::array({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f}, {3, 3});
    CHECK(to_doubles(mx::trace(sq, d)) == std::vector<double>{15});
    CHECK(to_doubles(mx::trace(sq, 1, 0, 1, d)) == std::vector<double>{8});
    CHECK(mx::trace(mx::astype(sq, mx::int32), 0, 0, 1, mx::float32, d).dtype() == mx::float32);
  }
  CHECK_THROWS_WITH_AS(mx::tensordot(a, b, 3),
                       "[tensordot] a and b must have the same shape on the contracted axes.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::inner(a, b), "[inner] a and b must have the same last dimension.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::trace(mx::zeros({3})),
                       "[trace] Array must have at least two dimensions, but got 1 dimensions.",
                       std::invalid_argument);
  CHECK_THROWS_AS(mx::trace(mx::zeros({3, 3}), 0, 0, 2), std::out_of_range);
}

TEST_CASE("logcumsumexp equals log(cumsum(exp)) in double, without overflow") {
  float ninf = -std::numeric_limits<float>::infinity();
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == mx::Device::cpu ? "cpu" : "gpu");
    auto x = mx::array({0.0f, 0.0f, 1000.0f, ninf, -2.0f});
    std::vector<double> want{0, std::log(2.0), 1000 + std::log1p(2 * std::exp(-1000.0)), 1000,
                             1000 + std::log1p(std::exp(-1002.0))};
    CHECK(near(to_doubles(mx::logcumsumexp(x, 0, false, true, d)), want));
    auto ex = to_doubles(mx::logcumsumexp(x, 0, false, false, d));
    CHECK(std::isinf(ex[0]));
    CHECK(ex[0] < 0);
    CHECK(near(std::vector<double>(ex.begin() + 1, ex.end()),
               std::vector<double>(want.begin(), want.end() - 1)));
    auto rev = to_doubles(mx::logcumsumexp(mx::array({1.0f, 2.0f}), 0, true, true, d));
    CHECK(near(rev, {std::log(std::exp(1.0) + std::exp(2.0)), 2.0}));
    auto m = mx::array({0.0f, 1.0f, 2.0f, 3.0f}, {2, 2});
    CHECK(near(to_doubles(mx::logcumsumexp(m, 0, false, true, d)),
               {0, 1, std::log(1 + std::exp(2.0)), std::log(std::exp(1.0) + std::exp(3.0))}));
  }
  CHECK_THROWS_WITH_AS(mx::logcumsumexp(mx::array({1, 2})),
                       "[logcumsumexp] needs a floating-point input, got int32.",
                       std::invalid_argument);
}

TEST_CASE("small compositions give MLX's values on every device") {
  float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == mx::Device::cpu ? "cpu" : "gpu");
    auto x = mx::array({-2.5f, -0.5f, 0.0f, 1.5f, inf, -inf, nan});
    CHECK(to_doubles(mx::isfinite(x, d)) == std::vector<double>{1, 1, 1, 1, 0, 0, 0});
    CHECK(to_doubles(mx::isposinf(x, d)) == std::vector<double>{0, 0, 0, 0, 1, 0, 0});
    CHECK(to_doubles(mx::isneginf(x, d)) == std::vector<double>{0, 0, 0, 0, 0, 1, 0});
    CHECK(to_doubles(mx::isfinite(mx::array({1, 2}), d)) == std::vector<double>{1, 1});
    auto t = to_doubles(mx::trunc(mx::array({-2.5f, -0.5f, 1.5f, 2.0f}), d));
    CHECK(t == std::vector<double>{-2, -0.0, 1, 2});
    CHECK(to_doubles(mx::reciprocal(mx::array({2, 4}), d)) == std::vector<double>{0.5, 0.25});
    CHECK(near(to_doubles(mx::degrees(mx::array({float(M_PI)}), d)), {180.0}));
    CHECK(near(to_doubles(mx::radians(mx::array({180.0f}), d)), {M_PI}));
    CHECK(to_doubles(mx::logical_xor(mx::array({0, 1, 2}), mx::array({1, 1, 0}), d)) ==
          std::vector<double>{1, 0, 1});
    auto m = mx::array({1, 2, 3, 4, 5, 6}, {2, 3}, mx::int32);
    CHECK(to_doubles(mx::flip(m, 1, d)) == std::vector<double>{3, 2, 1, 6, 5, 4});
    CHECK(to_doubles(mx::flip(m, d)) == std::vector<double>{6, 5, 4, 3, 2, 1});
    CHECK(to_doubles(mx::diff(mx::array({1, 4, 9, 16}), 1, -1, d)) == std::vector<double>{3, 5, 7});
    CHECK(to_doubles(mx::diff(mx::array({1, 4, 9, 16}), 2, -1, d)) == std::vector<double>{2, 2});
    auto k = mx::kron(mx::array({1, 2}), mx::array({1, 10, 100}), d);
    CHECK(to_doubles(k) == std::vector<double>{1, 10, 100, 2, 20, 200});
    auto k2 = mx::kron(mx::array({1, 2, 3, 4}, {2, 2}), mx::array({1, 1}, {1, 2}), d);
    CHECK(k2.shape() == mx::Shape{2, 4});
    CHECK(to_doubles(k2) == std::vector<double>{1, 1, 2, 2, 3, 3, 4, 4});
    auto z = mx::array({0, 3, 0, 4, 5, 0}, {2, 3}, mx::int32);
    CHECK(to_doubles(mx::count_nonzero(z, false, d)) == std::vector<double>{3});
    CHECK(to_doubles(mx::count_nonzero(z, 1, false, d)) == std::vector<double>{1, 2});
    auto parts = mx::unstack(m, 1, d);
    REQUIRE(parts.size() == 3);
    CHECK(to_doubles(parts[2]) == std::vector<double>{3, 6});
    CHECK(mx::unflatten(mx::zeros({2, 12}), 1, {3, -1}, d).shape() == mx::Shape{2, 3, 4});
    CHECK(mx::atleast_3d(mx::zeros({4}), d).shape() == mx::Shape{1, 4, 1});
    CHECK(mx::atleast_2d(mx::array(1.0f), d).shape() == mx::Shape{1, 1});
  }
  CHECK_THROWS_WITH_AS(mx::diff(mx::zeros({3}), -1), "[diff] Order `n` must be non-negative.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::kron(mx::zeros({0}), mx::zeros({2})),
                       "[kron] Input arrays cannot be empty.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::unflatten(mx::zeros({2}), 0, {}),
                       "[unflatten] Shape to unflatten to cannot be empty.", std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::trunc(mx::zeros({2}, mx::complex64)),
                       "[trunc] Not supported for complex64.", std::invalid_argument);
}
