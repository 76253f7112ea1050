// cumsum, cumprod, cummax and cummin (MLX's Scan): values along any axis, reverse and
// exclusive scans, dtypes, NaN, the flattened overloads and bad axes. On the GPU device
// they take the logged CPU route for now (docs/ops.md).
#include <doctest/doctest.h>

#include <cmath>

#include "mlx/mlx.h"
#include "test_utils.h"

namespace mx = mlx::core;
using mlx_test::to_doubles;

TEST_CASE("cumsum, cumprod, cummax and cummin give running values along an axis") {
  for (auto d : mlx_test::test_devices()) {
    auto v = mx::array({1, 3, 2, 5});
    CHECK(to_doubles(mx::cumsum(v, 0, false, true, std::nullopt, d)) ==
          std::vector<double>{1, 4, 6, 11});
    CHECK(to_doubles(mx::cumprod(v, 0, false, true, std::nullopt, d)) ==
          std::vector<double>{1, 3, 6, 30});
    CHECK(to_doubles(mx::cummax(v, 0, false, true, d)) == std::vector<double>{1, 3, 3, 5});
    CHECK(to_doubles(mx::cummin(v, 0, false, true, d)) == std::vector<double>{1, 1, 1, 1});
    // Reverse scans from the end; exclusive starts from the identity.
    CHECK(to_doubles(mx::cumsum(v, 0, true, true, std::nullopt, d)) ==
          std::vector<double>{11, 10, 7, 5});
    CHECK(to_doubles(mx::cumsum(v, 0, false, false, std::nullopt, d)) ==
          std::vector<double>{0, 1, 4, 6});
    CHECK(to_doubles(mx::cumprod(v, 0, true, false, std::nullopt, d)) ==
          std::vector<double>{30, 10, 5, 1});
    auto ex = to_doubles(mx::cummax(mx::array({2.0f, 1.0f}), 0, false, false, d));
    CHECK(std::isinf(ex[0]));
    CHECK(ex[0] < 0);
    CHECK(ex[1] == 2.0);
    // Along axis 0 of a matrix, and through a transposed view.
    auto m = mx::reshape(mx::arange(6, d), {2, 3}, d);
    CHECK(to_doubles(mx::cumsum(m, 0, false, true, std::nullopt, d)) ==
          std::vector<double>{0, 1, 2, 3, 5, 7});
    CHECK(to_doubles(mx::cumsum(m, -1, false, true, std::nullopt, d)) ==
          std::vector<double>{0, 1, 3, 3, 7, 12});
    CHECK(to_doubles(mx::cumsum(mx::transpose(m, d), 1, false, true, std::nullopt, d)) ==
          std::vector<double>{0, 3, 1, 5, 2, 7});
    // Without an axis: over the flattened array.
    CHECK(to_doubles(mx::cumsum(m, false, true, std::nullopt, d)) ==
          std::vector<double>{0, 1, 3, 6, 10, 15});
    CHECK(to_doubles(mx::cummax(mx::array({3, 1, 4, 1, 5}), true, true, d)) ==
          std::vector<double>{5, 5, 5, 5, 5});
  }
}

TEST_CASE("scan dtypes follow MLX: bool sums count in int32, the dtype argument casts first") {
  auto b = mx::array({true, true, false, true});
  auto c = mx::cumsum(b, 0);
  CHECK(c.dtype() == mx::int32);
  CHECK(to_doubles(c) == std::vector<double>{1, 2, 2, 3});
  CHECK(mx::cumsum(mx::array({1, 2}), 0, false, true, mx::float32).dtype() == mx::float32);
  CHECK(mx::cummax(mx::array({1.0f}, mx::float16), 0).dtype() == mx::float16);
  // Integer sums wrap like sum does.
  auto w = mx::cumsum(mx::array({int8_t{100}, int8_t{100}}, mx::int8), 0);
  CHECK(w.dtype() == mx::int8);
  CHECK(to_doubles(w) == std::vector<double>{100, -56});
}

TEST_CASE("float cumsum keeps growing past 2^24 terms and cummax propagates NaN") {
  auto ones = mx::full({20000000}, 1.0f, mx::Device::cpu);
  auto c = mx::cumsum(ones, 0, false, true, std::nullopt, mx::Device::cpu);
  c.eval();
  CHECK(c.data<float>()[19999999] == 20000000.0f);
  float nan = std::nanf("");
  auto m = to_doubles(mx::cummax(mx::array({1.0f, nan, 3.0f}), 0));
  CHECK(m[0] == 1.0);
  CHECK(std::isnan(m[1]));
  CHECK(std::isnan(m[2]));
}

TEST_CASE("scans reject bad axes, 0-d arrays and complex inputs") {
  auto v = mx::array({1, 2});
  CHECK_THROWS_WITH_AS(mx::cumsum(v, 1), doctest::Contains("[cumsum]"), std::invalid_argument);
  CHECK_THROWS_AS(mx::cummax(v, -2), std::invalid_argument);
  CHECK_THROWS_AS(mx::cumprod(mx::array(3), 0), std::invalid_argument);
  CHECK_THROWS_AS(mx::cummin(mx::array(std::complex<float>(1, 1)), 0), std::invalid_argument);
  // The flattened overloads accept a 0-d array (it flattens to one element).
  CHECK(to_doubles(mx::cumsum(mx::array(4))) == std::vector<double>{4});
}
