// take and take_along_axis: any integer index dtype, negative indices, broadcasting, and
// out-of-range indices raising a clear "[take]" error at eval on the CPU (GPU kernels read
// zeros: tests/gpu_diff/test_indexing.cpp).
#include <doctest/doctest.h>

#include "shape_test_utils.h"

namespace mx = mlx::core;
using shape_test::expect_positions;
using shape_test::kDtypes;
using shape_test::positions;
using shape_test::shares_buffer;

namespace {
const std::vector<mx::Dtype> kIndexDtypes = {mx::int8,  mx::int16,  mx::int32,  mx::int64,
                                             mx::uint8, mx::uint16, mx::uint32, mx::uint64};
}

TEST_CASE("take gathers along an axis for every value dtype") {
  for (auto dt : kDtypes) {
    auto a = positions({3, 4}, dt);
    auto idx = mx::array({2, 0, 2});
    expect_positions(mx::take(a, idx, 0), {3, 4}, dt, {8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11},
                     "rows");
    expect_positions(mx::take(a, idx, 1), {3, 3}, dt, {2, 0, 2, 6, 4, 6, 10, 8, 10}, "columns");
    // Index arrays keep their shape in the output: (3,) + (2,2) along axis 1 -> (3,2,2).
    auto idx2 = mx::array({3, 1, 0, 0}, {2, 2});
    expect_positions(mx::take(a, idx2, -1), {3, 2, 2}, dt, {3, 1, 0, 0, 7, 5, 4, 4, 11, 9, 8, 8},
                     "2-d indices, axis -1");
  }
}

TEST_CASE("take accepts every integer index dtype and wraps negative indices") {
  auto a = positions({5}, mx::float32);
  for (auto it : kIndexDtypes) {
    auto idx = mx::array({4, 0, 3}, it);
    expect_positions(mx::take(a, idx, 0), {3}, mx::float32, {4, 0, 3},
                     "index dtype " + mx::dtype_to_string(it));
  }
  for (auto it : {mx::int8, mx::int16, mx::int32, mx::int64}) {
    auto idx = mx::array({-1, -5, 2}, it);
    expect_positions(mx::take(a, idx, 0), {3}, mx::float32, {4, 0, 2},
                     "negative " + mx::dtype_to_string(it));
  }
}

TEST_CASE("take reads strided inputs and strided indices") {
  auto a = mx::transpose(positions({3, 4}, mx::int32));            // (4,3): a[i][j] = position 4j+i
  auto idx = mx::slice(mx::array({0, 9, 3, 9, 1}), {0}, {5}, {2}); // 0, 3, 1
  expect_positions(mx::take(a, idx, 0), {3, 3}, mx::int32, {0, 4, 8, 3, 7, 11, 1, 5, 9},
                   "transposed source");
  auto bidx = mx::broadcast_to(mx::array({2}), {2, 2});
  expect_positions(mx::take(a, bidx, 1), {4, 2, 2}, mx::int32,
                   {8, 8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 10, 11, 11, 11, 11}, "broadcast indices");
}

TEST_CASE("take of 0-d and empty indices") {
  auto a = positions({3, 2}, mx::int64);
  expect_positions(mx::take(a, mx::array(1), 0), {2}, mx::int64, {2, 3}, "0-d index");
  expect_positions(mx::take(a, mx::array(-1), 1), {3}, mx::int64, {1, 3, 5}, "0-d index, axis 1");
  auto none = mx::take(a, mx::zeros({0}, mx::int32), 0);
  expect_positions(none, {0, 2}, mx::int64, {}, "no indices");
  // Taking nothing from an empty axis is fine.
  auto empty = positions({0, 2}, mx::int64);
  expect_positions(mx::take(empty, mx::zeros({0}, mx::int32), 0), {0, 2}, mx::int64, {},
                   "empty from empty");
  expect_positions(mx::take(empty, mx::array({1}), 1), {0, 1}, mx::int64, {}, "empty rows");
}

TEST_CASE("take without an axis indexes the flattened array") {
  for (auto dt : {mx::int32, mx::float16, mx::bool_, mx::uint8, mx::int64, mx::float32}) {
    auto a = positions({2, 3}, dt);
    expect_positions(mx::take(a, mx::array({5, 0, -2})), {3}, dt, {5, 0, 4}, "flat take");
    expect_positions(mx::take(mx::transpose(a), mx::array({1, 2})), {2}, dt, {3, 1},
                     "flat take of transpose");
    expect_positions(mx::take(a, 4), {}, dt, {4}, "scalar flat take");
  }
  CHECK(mx::take(mx::array(7), mx::array({0, 0})).shape() == mx::Shape{2});
}

TEST_CASE("take with an int index drops the axis and is a view") {
  for (auto dt : {mx::int32, mx::float16, mx::bool_, mx::uint8, mx::int64, mx::float32}) {
    auto a = positions({3, 4}, dt);
    expect_positions(mx::take(a, 1, 0), {4}, dt, {4, 5, 6, 7}, "row 1");
    expect_positions(mx::take(a, -1, 1), {3}, dt, {3, 7, 11}, "last column");
  }
  auto a = positions({3, 4}, mx::float32);
  auto row = mx::take(a, 2, 0);
  row.eval();
  CHECK(shares_buffer(row, a));
  CHECK_THROWS_WITH_AS(mx::take(a, 3, 0), doctest::Contains("[take]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::take(a, -5, 1), doctest::Contains("[take]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::take(a, 12), doctest::Contains("[take]"), std::invalid_argument);
}

// On the CPU: GPU kernels cannot raise, and read zeros instead (docs/indexing.md,
// tests/gpu_diff/test_indexing.cpp).
TEST_CASE("take with out-of-range indices throws [take] at eval, not at the call") {
  auto cpu = mx::Device::cpu;
  auto a = positions({3, 4}, mx::int32);
  for (auto bad : {3, -4, 100}) {
    auto t = mx::take(a, mx::array({0, bad}), 0, cpu); // building the graph is fine
    CHECK_THROWS_WITH_AS(t.eval(), doctest::Contains("[take]"), std::invalid_argument);
  }
  auto big = mx::take(a, mx::array({uint64_t{1} << 63}, mx::uint64), 1, cpu);
  CHECK_THROWS_WITH_AS(big.eval(), doctest::Contains("[take]"), std::invalid_argument);
  auto u8 = mx::take(a, mx::array({200}, mx::uint8), 1, cpu);
  CHECK_THROWS_WITH_AS(u8.eval(), doctest::Contains("out of bounds"), std::invalid_argument);
  // An error in one graph does not poison later work.
  expect_positions(mx::take(a, mx::array({2}), 1), {3, 1}, mx::int32, {2, 6, 10}, "after error");
}

TEST_CASE("take rejects bad axes and non-integer indices at the call") {
  auto a = positions({3, 4}, mx::int32);
  CHECK_THROWS_WITH_AS(mx::take(a, mx::array({0}), 2), doctest::Contains("[take]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::take(a, mx::array({0.0f}), 0), doctest::Contains("[take]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::take(a, mx::array({true}), 0), doctest::Contains("[take]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::take(mx::array(1), mx::array({0}), 0), doctest::Contains("[take]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::take(positions({0, 3}, mx::int32), mx::array({0}), 0),
                       doctest::Contains("[take]"), std::invalid_argument);
}

TEST_CASE("take_along_axis picks one element per position along the axis") {
  for (auto dt : kDtypes) {
    auto a = positions({2, 3}, dt);
    auto idx = mx::array({2, 0, 1, 1}, {2, 2});
    // out[i][j] = a[i][idx[i][j]]
    expect_positions(mx::take_along_axis(a, idx, 1), {2, 2}, dt, {2, 0, 4, 4}, "axis 1");
    auto idx0 = mx::array({1, 0, -1}, {1, 3});
    // out[0][j] = a[idx0[0][j]][j]
    expect_positions(mx::take_along_axis(a, idx0, 0), {1, 3}, dt, {3, 1, 5}, "axis 0");
  }
}

TEST_CASE("take_along_axis broadcasts indices against the array outside the axis") {
  auto a = positions({2, 3}, mx::int32);
  // (1,2) indices broadcast over the 2 rows: out[i][j] = a[i][idx[0][j]].
  auto idx = mx::array({2, 1}, {1, 2}, mx::uint8);
  expect_positions(mx::take_along_axis(a, idx, 1), {2, 2}, mx::int32, {2, 1, 5, 4},
                   "indices broadcast over rows");
  // (2,1) array against (2,3) indices along axis 0... the array broadcasts too.
  auto col = positions({1, 3}, mx::int32);
  auto idx0 = mx::zeros({2, 3}, mx::int64);
  expect_positions(mx::take_along_axis(col, idx0, 0), {2, 3}, mx::int32, {0, 1, 2, 0, 1, 2},
                   "array broadcast");
  auto b = positions({2, 1}, mx::int32);
  auto idx1 = mx::array({0, 0, 0}, {1, 3});
  expect_positions(mx::take_along_axis(b, idx1, 1), {2, 3}, mx::int32, {0, 0, 0, 1, 1, 1},
                   "both broadcast");
  // Sorting-style use with a transposed array.
  auto t = mx::transpose(a); // (3,2): t[i][j] = 3j + i
  auto rev = mx::array({1, 0, 1, 0, 1, 0}, {3, 2});
  expect_positions(mx::take_along_axis(t, rev, 1), {3, 2}, mx::int32, {3, 0, 4, 1, 5, 2},
                   "transposed source");
}

TEST_CASE("take_along_axis validates at the call and bounds-checks at eval") {
  auto a = positions({2, 3}, mx::int32);
  CHECK_THROWS_WITH_AS(mx::take_along_axis(a, mx::array({0}), 1),
                       doctest::Contains("[take_along_axis]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::take_along_axis(a, mx::zeros({3, 1}, mx::int32), 1),
                       doctest::Contains("[take_along_axis]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::take_along_axis(a, mx::zeros({2, 1}, mx::float32), 1),
                       doctest::Contains("[take_along_axis]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::take_along_axis(a, mx::zeros({2, 1}, mx::int32), 2),
                       doctest::Contains("[take_along_axis]"), std::invalid_argument);
  // Bounds are checked at eval on the CPU (GPU kernels read zeros, docs/indexing.md).
  auto bad = mx::take_along_axis(a, mx::array({0, 3}, {2, 1}), 1, mx::Device::cpu);
  CHECK_THROWS_WITH_AS(bad.eval(), doctest::Contains("[take_along_axis]"), std::invalid_argument);
  auto neg = mx::take_along_axis(a, mx::array({-3, -4}, {2, 1}), 1, mx::Device::cpu);
  CHECK_THROWS_WITH_AS(neg.eval(), doctest::Contains("out of bounds"), std::invalid_argument);
}
