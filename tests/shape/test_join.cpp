// concatenate and stack: axis handling, dtype promotion, non-contiguous inputs, errors.
#include <doctest/doctest.h>

#include "shape_test_utils.h"

namespace mx = mlx::core;
using shape_test::expect_positions;
using shape_test::expect_values;
using shape_test::kDtypes;
using shape_test::positions;

TEST_CASE("concatenate joins along an axis, negative axes included") {
  for (auto dt : kDtypes) {
    auto a = positions({2, 2}, dt);                                        // positions 0..3
    auto b = mx::reshape(mx::slice(positions({8}, dt), {4}, {8}), {2, 2}); // positions 4..7
    expect_positions(mx::concatenate({a, b}, 0), {4, 2}, dt, {0, 1, 2, 3, 4, 5, 6, 7}, "axis 0");
    expect_positions(mx::concatenate({a, b}, 1), {2, 4}, dt, {0, 1, 4, 5, 2, 3, 6, 7}, "axis 1");
    expect_positions(mx::concatenate({a, b, a}, -1), {2, 6}, dt,
                     {0, 1, 4, 5, 0, 1, 2, 3, 6, 7, 2, 3}, "axis -1, three inputs");
  }
}

TEST_CASE("concatenate of non-contiguous inputs reads through their views") {
  for (auto dt : kDtypes) {
    auto a = positions({2, 3}, dt);
    auto t = mx::transpose(a);                                             // (3,2): 0 3 / 1 4 / 2 5
    auto r = mx::slice(positions({3, 2}, dt), {2, 1}, {-4, -3}, {-1, -1}); // 5 4 / 3 2 / 1 0
    auto bcast = mx::broadcast_to(mx::slice(positions({2}, dt), {1}, {2}), {3, 1}); // 1 / 1 / 1
    expect_positions(mx::concatenate({t, r, bcast}, 1), {3, 5}, dt,
                     {0, 3, 5, 4, 1, 1, 4, 3, 2, 1, 2, 5, 1, 0, 1},
                     "transposed + reversed + bcast");
    expect_positions(mx::concatenate({t, r}, 0), {6, 2}, dt, {0, 3, 1, 4, 2, 5, 5, 4, 3, 2, 1, 0},
                     "axis 0 of views");
  }
}

TEST_CASE("concatenate promotes dtypes across inputs") {
  auto a = mx::array({1, 2}, mx::uint8);
  auto b = mx::array({-3}, mx::int8);
  auto c = mx::array({0.5f});
  expect_values(mx::concatenate({a, b}, 0), {3}, mx::int16, {1, 2, -3}, "uint8 + int8");
  expect_values(mx::concatenate({a, b, c}, 0), {4}, mx::float32, {1, 2, -3, 0.5}, "ints + float32");
  expect_values(mx::concatenate({mx::array({true}), a}, 0), {3}, mx::uint8, {1, 1, 2},
                "bool + uint8");
  expect_values(mx::concatenate({mx::array({1.5f}, mx::float16), mx::array({2, 3}, mx::int64)}, 0),
                {3}, mx::float16, {1.5, 2, 3}, "float16 + int64");
}

TEST_CASE("concatenate handles empty inputs and a single input") {
  auto a = positions({2, 3}, mx::int32);
  auto e = positions({0, 3}, mx::int32);
  expect_positions(mx::concatenate({e, a, e}, 0), {2, 3}, mx::int32, {0, 1, 2, 3, 4, 5},
                   "empty pieces");
  expect_positions(mx::concatenate({e, e}, 0), {0, 3}, mx::int32, {}, "all empty");
  auto one = mx::concatenate({a}, 1);
  expect_positions(one, {2, 3}, mx::int32, {0, 1, 2, 3, 4, 5}, "single input");
}

TEST_CASE("concatenate without an axis flattens every input") {
  auto a = positions({2, 2}, mx::int32);
  auto t = mx::transpose(a);
  expect_values(mx::concatenate({a, t, mx::array(9)}), {9}, mx::int32, {0, 1, 2, 3, 0, 2, 1, 3, 9},
                "flattened, with a transposed and a 0-d input");
}

TEST_CASE("concatenate rejects bad axes, mismatched shapes and no inputs") {
  auto a = positions({2, 3}, mx::int32);
  auto b = positions({2, 4}, mx::int32);
  CHECK_THROWS_WITH_AS(mx::concatenate({a, b}, 0), doctest::Contains("[concatenate]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::concatenate({a, positions({6}, mx::int32)}, 0),
                       doctest::Contains("[concatenate]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::concatenate({a, a}, 2), doctest::Contains("[concatenate]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::concatenate({a, a}, -3), doctest::Contains("[concatenate]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::concatenate({}, 0), doctest::Contains("[concatenate]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::concatenate({mx::array(1), mx::array(2)}, 0),
                       doctest::Contains("[concatenate]"), std::invalid_argument);
  // Concatenating along axis 1 only requires axis 0 to match.
  CHECK(mx::concatenate({a, b}, 1).shape() == mx::Shape{2, 7});
}

TEST_CASE("stack joins equal shapes along a new axis") {
  for (auto dt : kDtypes) {
    auto a = positions({2, 2}, dt);
    auto b = mx::transpose(a);
    expect_positions(mx::stack({a, b}), {2, 2, 2}, dt, {0, 1, 2, 3, 0, 2, 1, 3}, "axis 0");
    expect_positions(mx::stack({a, b}, 1), {2, 2, 2}, dt, {0, 1, 0, 2, 2, 3, 1, 3}, "axis 1");
    expect_positions(mx::stack({a, b}, -1), {2, 2, 2}, dt, {0, 0, 1, 2, 2, 1, 3, 3}, "axis -1");
  }
  expect_values(mx::stack({mx::array(1), mx::array(2.5f)}), {2}, mx::float32, {1, 2.5},
                "0-d inputs, promoted");
  auto a = positions({2}, mx::int32);
  CHECK_THROWS_WITH_AS(mx::stack({a, positions({3}, mx::int32)}), doctest::Contains("[stack]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::stack({a, a}, 2), doctest::Contains("[stack]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::stack({}), doctest::Contains("[stack]"), std::invalid_argument);
}
