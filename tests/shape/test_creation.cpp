// Creation ops: arange (every overload, MLX/NumPy semantics), eye, identity, full.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "shape_test_utils.h"

namespace mx = mlx::core;
using shape_test::expect_values;

TEST_CASE("arange int overloads produce int32 ranges of size ceil((stop-start)/step)") {
  expect_values(mx::arange(5), {5}, mx::int32, {0, 1, 2, 3, 4}, "arange(5)");
  expect_values(mx::arange(2, 6), {4}, mx::int32, {2, 3, 4, 5}, "arange(2, 6)");
  expect_values(mx::arange(1, 10, 3), {3}, mx::int32, {1, 4, 7}, "arange(1, 10, 3)");
  expect_values(mx::arange(1, 11, 3), {4}, mx::int32, {1, 4, 7, 10}, "arange(1, 11, 3)");
  expect_values(mx::arange(10, 1, -3), {3}, mx::int32, {10, 7, 4}, "arange(10, 1, -3)");
  expect_values(mx::arange(-2, 2), {4}, mx::int32, {-2, -1, 0, 1}, "arange(-2, 2)");
}

TEST_CASE("arange double overloads default to float32") {
  expect_values(mx::arange(4.0), {4}, mx::float32, {0, 1, 2, 3}, "arange(4.0)");
  expect_values(mx::arange(1.0, 3.0), {2}, mx::float32, {1, 2}, "arange(1.0, 3.0)");
  expect_values(mx::arange(0.0, 1.0, 0.25), {4}, mx::float32, {0, 0.25, 0.5, 0.75},
                "arange(0, 1, 0.25)");
  expect_values(mx::arange(1.0, 0.0, -0.5), {2}, mx::float32, {1, 0.5}, "arange(1, 0, -0.5)");
  // ceil((2.5 - 0) / 1) = 3 elements.
  expect_values(mx::arange(2.5), {3}, mx::float32, {0, 1, 2}, "arange(2.5)");
}

TEST_CASE("arange with an explicit dtype fills that dtype") {
  for (auto dt :
       {mx::uint8, mx::int8, mx::int64, mx::uint32, mx::float16, mx::bfloat16, mx::float64}) {
    expect_values(mx::arange(2.0, 7.0, dt), {5}, dt, {2, 3, 4, 5, 6},
                  "arange(2, 7) " + mx::dtype_to_string(dt));
    expect_values(mx::arange(4.0, dt), {4}, dt, {0, 1, 2, 3},
                  "arange(4) " + mx::dtype_to_string(dt));
  }
  expect_values(mx::arange(-3.0, 3.0, 2.0, mx::int8), {3}, mx::int8, {-3, -1, 1},
                "negative int8 range");
  expect_values(mx::arange(0.5, 3.0, 1.0, mx::float16), {3}, mx::float16, {0.5, 1.5, 2.5},
                "float16 halves");
}

TEST_CASE("arange into an integer dtype steps by the difference of the first two cast values") {
  // NumPy and MLX: size ceil(5 / 1.5) = 4, values int(0) + i * (int(1.5) - int(0)).
  expect_values(mx::arange(0.0, 5.0, 1.5, mx::int32), {4}, mx::int32, {0, 1, 2, 3},
                "arange(0, 5, 1.5, int32)");
}

TEST_CASE("arange of long float ranges does not drift") {
  auto a = mx::arange(0.0, 1000.0, 0.1);
  REQUIRE(a.shape() == mx::Shape{10000});
  auto v = mlx_test::to_vector<float>(a);
  for (int i : {0, 1, 7, 4999, 9999}) {
    CHECK(v[i] == static_cast<float>(i * 0.1));
  }
}

TEST_CASE("arange of empty ranges is an empty 1-d array") {
  expect_values(mx::arange(3, 3), {0}, mx::int32, {}, "arange(3, 3)");
  expect_values(mx::arange(5, 1), {0}, mx::int32, {}, "stop below start");
  expect_values(mx::arange(1, 5, -1), {0}, mx::int32, {}, "wrong-direction step");
  expect_values(mx::arange(0.0), {0}, mx::float32, {}, "arange(0.0)");
}

TEST_CASE("arange with an infinite step has at most one element") {
  double inf = std::numeric_limits<double>::infinity();
  expect_values(mx::arange(2.0, 5.0, inf), {1}, mx::float32, {2}, "+inf step, start < stop");
  expect_values(mx::arange(2.0, -5.0, inf), {0}, mx::float32, {}, "+inf step, start > stop");
  expect_values(mx::arange(2.0, -5.0, -inf), {1}, mx::float32, {2}, "-inf step, start > stop");
}

TEST_CASE("arange rejects a zero step, bool, NaN, infinite bounds and huge sizes") {
  double nan = std::numeric_limits<double>::quiet_NaN();
  double inf = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH_AS(mx::arange(0, 5, 0), doctest::Contains("[arange]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::arange(0.0, 5.0, 0.0), doctest::Contains("step"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::arange(5.0, mx::bool_), doctest::Contains("[arange]"),
                       std::invalid_argument);
  CHECK_THROWS_AS(mx::arange(nan, 5.0), std::invalid_argument);
  CHECK_THROWS_AS(mx::arange(0.0, nan), std::invalid_argument);
  CHECK_THROWS_AS(mx::arange(0.0, 5.0, nan), std::invalid_argument);
  CHECK_THROWS_AS(mx::arange(0.0, inf), std::invalid_argument);
  CHECK_THROWS_AS(mx::arange(-inf, 0.0), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::arange(0.0, 1e10), doctest::Contains("[arange]"), std::invalid_argument);
}

TEST_CASE("eye places ones on the k-th diagonal of an n x m matrix") {
  expect_values(mx::eye(3), {3, 3}, mx::float32, {1, 0, 0, 0, 1, 0, 0, 0, 1}, "eye(3)");
  expect_values(mx::eye(2, 4, 1), {2, 4}, mx::float32, {0, 1, 0, 0, 0, 0, 1, 0}, "eye(2,4,1)");
  expect_values(mx::eye(4, 2, -1), {4, 2}, mx::float32, {0, 0, 1, 0, 0, 1, 0, 0}, "eye(4,2,-1)");
  expect_values(mx::eye(4, 3), {4, 3}, mx::float32, {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0},
                "tall eye(4,3)");
  expect_values(mx::eye(2, 5, 2), {2, 5}, mx::float32, {0, 0, 1, 0, 0, 0, 0, 0, 1, 0},
                "wide eye(2,5,2)");
  expect_values(mx::eye(1, 5, 4), {1, 5}, mx::float32, {0, 0, 0, 0, 1}, "single one");
  expect_values(mx::eye(3, 3, 3), {3, 3}, mx::float32, std::vector<double>(9, 0),
                "k past the last column");
  expect_values(mx::eye(3, 3, -3), {3, 3}, mx::float32, std::vector<double>(9, 0),
                "k past the last row");
  expect_values(mx::eye(0), {0, 0}, mx::float32, {}, "eye(0)");
  expect_values(mx::eye(2, 0), {2, 0}, mx::float32, {}, "eye(2, 0)");
}

TEST_CASE("eye and identity honour the dtype") {
  for (auto dt : {mx::bool_, mx::uint8, mx::int32, mx::int64, mx::float16, mx::bfloat16}) {
    expect_values(mx::eye(2, 3, 0, dt), {2, 3}, dt, {1, 0, 0, 0, 1, 0},
                  "eye " + mx::dtype_to_string(dt));
    expect_values(mx::identity(2, dt), {2, 2}, dt, {1, 0, 0, 1},
                  "identity " + mx::dtype_to_string(dt));
  }
  expect_values(mx::identity(2), {2, 2}, mx::float32, {1, 0, 0, 1}, "identity default dtype");
}

TEST_CASE("eye rejects negative sizes") {
  CHECK_THROWS_WITH_AS(mx::eye(-1), doctest::Contains("[eye]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::eye(2, -3), doctest::Contains("[eye]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::identity(-2), doctest::Contains("[eye]"), std::invalid_argument);
}

TEST_CASE("full, zeros and ones broadcast one value to the shape") {
  expect_values(mx::full({2, 2}, 7, mx::int64), {2, 2}, mx::int64, {7, 7, 7, 7}, "full");
  expect_values(mx::full({3}, mx::array({1, 2, 3}, mx::uint8)), {3}, mx::uint8, {1, 2, 3},
                "full from an array");
  expect_values(mx::zeros({2}, mx::float16), {2}, mx::float16, {0, 0}, "zeros");
  expect_values(mx::ones({0, 3}), {0, 3}, mx::float32, {}, "empty ones");
  expect_values(mx::ones_like(mx::zeros({1, 2}, mx::bool_)), {1, 2}, mx::bool_, {1, 1},
                "ones_like bool");
  CHECK_THROWS_WITH_AS(mx::zeros({-1}), doctest::Contains("[full]"), std::invalid_argument);
}
