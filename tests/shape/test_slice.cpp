// slice (Python semantics, views), slice_update (a copy with the slice overwritten) and split.
#include <doctest/doctest.h>

#include "shape_test_utils.h"

namespace mx = mlx::core;
using shape_test::expect_positions;
using shape_test::expect_values;
using shape_test::kDtypes;
using shape_test::offset_from;
using shape_test::positions;
using shape_test::shares_buffer;

TEST_CASE("slice with positive steps selects Python-style ranges") {
  for (auto dt : kDtypes) {
    auto a = positions({10}, dt);
    expect_positions(mx::slice(a, {2}, {5}), {3}, dt, {2, 3, 4}, "[2:5]");
    expect_positions(mx::slice(a, {1}, {10}, {3}), {3}, dt, {1, 4, 7}, "[1:10:3]");
    expect_positions(mx::slice(a, {1}, {9}, {3}), {3}, dt, {1, 4, 7}, "[1:9:3]");
    expect_positions(mx::slice(a, {-3}, {10}), {3}, dt, {7, 8, 9}, "[-3:]");
    expect_positions(mx::slice(a, {-100}, {2}), {2}, dt, {0, 1}, "start clamps low");
    expect_positions(mx::slice(a, {8}, {100}), {2}, dt, {8, 9}, "stop clamps high");
    expect_positions(mx::slice(a, {2}, {-7}), {1}, dt, {2}, "[2:-7]");
    auto m = positions({3, 4}, dt);
    expect_positions(mx::slice(m, {1, 1}, {3, 4}, {1, 2}), {2, 2}, dt, {5, 7, 9, 11},
                     "2-d [1:, 1::2]");
  }
}

TEST_CASE("slice with negative steps walks backwards") {
  for (auto dt : kDtypes) {
    auto a = positions({6}, dt);
    // Python a[::-1] is start 5 (or -1), stop "before 0": -7 after adding 6 clamps to -1.
    expect_positions(mx::slice(a, {5}, {-7}, {-1}), {6}, dt, {5, 4, 3, 2, 1, 0}, "[::-1]");
    expect_positions(mx::slice(a, {-1}, {-100}, {-2}), {3}, dt, {5, 3, 1}, "[::-2]");
    expect_positions(mx::slice(a, {4}, {1}, {-1}), {3}, dt, {4, 3, 2}, "[4:1:-1]");
    expect_positions(mx::slice(a, {100}, {2}, {-3}), {1}, dt, {5}, "start clamps to n-1");
    expect_positions(mx::slice(a, {3}, {-6}, {-1}), {3}, dt, {3, 2, 1}, "[3:-6:-1]");
    auto m = positions({2, 3}, dt);
    expect_positions(mx::slice(m, {1, 2}, {-3, -4}, {-1, -1}), {2, 3}, dt, {5, 4, 3, 2, 1, 0},
                     "2-d reversed");
  }
}

TEST_CASE("empty slices are allowed") {
  for (auto dt : {mx::int32, mx::float16, mx::bool_}) {
    auto a = positions({5}, dt);
    expect_positions(mx::slice(a, {3}, {3}), {0}, dt, {}, "[3:3]");
    expect_positions(mx::slice(a, {4}, {1}), {0}, dt, {}, "[4:1]");
    expect_positions(mx::slice(a, {1}, {4}, {-1}), {0}, dt, {}, "[1:4:-1]");
    expect_positions(mx::slice(a, {7}, {9}), {0}, dt, {}, "past the end");
    auto m = positions({2, 3}, dt);
    expect_positions(mx::slice(m, {0, 2}, {2, 2}), {2, 0}, dt, {}, "empty column range");
  }
  auto e = positions({0, 3}, mx::int32);
  expect_positions(mx::slice(e, {0, 1}, {5, 3}), {0, 2}, mx::int32, {}, "slice of empty");
}

TEST_CASE("slice is a view: shared buffer, offset and scaled strides") {
  auto a = positions({4, 5}, mx::float32);
  auto s = mx::slice(a, {1, 2}, {3, 5}, {1, 2});
  s.eval();
  CHECK(shares_buffer(s, a));
  CHECK(offset_from(s, a) == 7);
  CHECK(s.strides() == mx::Strides{5, 2});
  CHECK(s.data<float>() == a.data<float>() + 7);
  // Negative steps give negative strides and an offset at the last element.
  auto r = mx::slice(a, {3, 4}, {-5, -6}, {-1, -1});
  r.eval();
  CHECK(shares_buffer(r, a));
  CHECK(offset_from(r, a) == 19);
  CHECK(r.strides() == mx::Strides{-5, -1});
  CHECK_FALSE(r.flags().contiguous);
  // A slice of a slice composes offsets and strides.
  auto rr = mx::slice(r, {1, 1}, {3, 5}, {1, 2});
  expect_positions(rr, {2, 2}, mx::float32, {13, 11, 8, 6}, "slice of reversed slice");
  CHECK(shares_buffer(rr, a));
  CHECK(offset_from(rr, a) == 13);
  auto back = mx::slice(r, {3, 4}, {-5, -6}, {-1, -1});
  std::vector<int64_t> all(20);
  for (int i = 0; i < 20; ++i)
    all[i] = i;
  expect_positions(back, {4, 5}, mx::float32, all, "double reversal restores order");
  CHECK(offset_from(back, a) == 0);
  // Full forward slices return the input itself.
  CHECK(mx::slice(a, {0, 0}, {4, 5}).id() == a.id());
  // Contiguous row slices keep the row-contiguous flag.
  auto rows = mx::slice(a, {1, 0}, {3, 5});
  rows.eval();
  CHECK(rows.flags().row_contiguous);
  CHECK(rows.data_size() == 10);
}

TEST_CASE("slice of a transposed array reads through both views") {
  for (auto dt : kDtypes) {
    auto a = positions({3, 4}, dt);
    auto t = mx::transpose(a); // (4, 3): t[i][j] = a[j][i] = position j*4 + i
    auto s = mx::slice(t, {1, 0}, {4, 3}, {2, 2});
    // rows 1, 3 and columns 0, 2 of t: positions 1, 9, 3, 11
    expect_positions(s, {2, 2}, dt, {1, 9, 3, 11}, "slice of transpose");
    CHECK(shares_buffer(s, a));
    auto r = mx::slice(t, {-1, 0}, {-5, 3}, {-1, 1});
    expect_positions(r, {4, 3}, dt, {3, 7, 11, 2, 6, 10, 1, 5, 9, 0, 4, 8},
                     "reversed rows of transpose");
  }
}

TEST_CASE("slice rejects zero steps and wrong argument lengths") {
  auto a = positions({3, 3}, mx::int32);
  CHECK_THROWS_WITH_AS(mx::slice(a, {0, 0}, {3, 3}, {1, 0}), doctest::Contains("[slice]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::slice(a, {0}, {3}), doctest::Contains("[slice]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::slice(a, {0, 0}, {3, 3}, {1}), doctest::Contains("[slice]"),
                       std::invalid_argument);
}

TEST_CASE("slice_update overwrites the slice of a copy of src") {
  for (auto dt : kDtypes) {
    auto src = positions({6}, dt);
    auto upd = mx::array({1, 1, 1}, dt);
    auto out = mx::slice_update(src, upd, {1}, {6}, {2});
    std::vector<double> want;
    for (int p = 0; p < 6; ++p)
      want.push_back(p % 2 == 1 ? 1 : shape_test::value_at(p, dt));
    expect_values(out, {6}, dt, want, "[1::2] = 1");
    // src is untouched.
    expect_positions(src, {6}, dt, {0, 1, 2, 3, 4, 5}, "src after update");
  }
  auto src = positions({3, 4}, mx::int32);
  // A 1-d update broadcasts over the rows of the slice.
  auto out = mx::slice_update(src, mx::array({-1, -2}), {0, 1}, {3, 3});
  expect_values(out, {3, 4}, mx::int32, {0, -1, -2, 3, 4, -1, -2, 7, 8, -1, -2, 11},
                "broadcast update");
  // Negative steps write backwards.
  auto rev = mx::slice_update(src, mx::array({90, 91, 92}, {3, 1}), {2, 3}, {-4, 4}, {-1, 1});
  expect_values(rev, {3, 4}, mx::int32, {0, 1, 2, 92, 4, 5, 6, 91, 8, 9, 10, 90}, "reversed rows");
  // The update's dtype is converted to src's.
  auto f = mx::slice_update(positions({4}, mx::float16), mx::array(2.5f), {1}, {3});
  expect_values(f, {4}, mx::float16, {0, 2.5, 2.5, 3}, "scalar float update");
  // A transposed src and a transposed update.
  auto t = mx::transpose(positions({2, 3}, mx::int32));                   // (3, 2)
  auto u = mx::transpose(mx::array({10, 20, 30, 40}, {2, 2}, mx::int32)); // [[10,30],[20,40]]
  auto tu = mx::slice_update(t, u, {1, 0}, {3, 2});
  expect_values(tu, {3, 2}, mx::int32, {0, 3, 10, 30, 20, 40}, "transposed src and update");
  // An update covering all of src replaces it.
  expect_values(mx::slice_update(src, mx::array(5), {0, 0}, {3, 4}), {3, 4}, mx::int32,
                std::vector<double>(12, 5), "full update");
  // An empty slice leaves src as it is.
  expect_positions(mx::slice_update(src, mx::array(5), {1, 2}, {1, 4}), {3, 4}, mx::int32,
                   {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, "empty slice");
}

TEST_CASE("slice_update of a temporary src writes in place without changing results") {
  auto make = [] { return mx::slice_update(mx::arange(6), mx::array({7, 8}), {2}, {4}); };
  auto out = mx::slice_update(make(), mx::array(9), {0}, {1});
  expect_values(out, {6}, mx::int32, {9, 1, 7, 8, 4, 5}, "chained updates");
}

TEST_CASE("slice_update writes into src's buffer only when nothing else can see it") {
  auto src = mx::arange(6);
  src.eval();
  const int* src_data = src.data<int>();
  auto out = mx::slice_update(src, mx::array({7, 8}), {1}, {3});
  src = mx::array(0); // drop our handle: the graph now holds the only reference
  expect_values(out, {6}, mx::int32, {0, 7, 8, 3, 4, 5}, "donated src");
  CHECK(out.data<int>() == src_data);

  // An update that is a view of src shares its buffer, so src must be copied first:
  // writing x[1:6] = x[0:5] in place would smear x[0] across the array.
  auto x = mx::arange(6);
  auto shifted = mx::slice_update(x, mx::slice(x, {0}, {5}), {1}, {6});
  x = mx::array(0);
  expect_values(shifted, {6}, mx::int32, {0, 0, 1, 2, 3, 4}, "overlapping update");
}

TEST_CASE("slice_update rejects bad updates and strides") {
  auto src = positions({3, 4}, mx::int32);
  CHECK_THROWS_WITH_AS(mx::slice_update(src, mx::array({1, 2, 3}), {0, 0}, {3, 2}),
                       doctest::Contains("[slice_update]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::slice_update(src, positions({1, 3, 2}, mx::int32), {0, 0}, {3, 2}),
                       doctest::Contains("[slice_update]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::slice_update(src, mx::array(1), {0, 0}, {3, 4}, {0, 1}),
                       doctest::Contains("[slice_update]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::slice_update(src, mx::array(1), {0}, {3}),
                       doctest::Contains("[slice_update]"), std::invalid_argument);
}

TEST_CASE("split into equal parts or at indices gives views") {
  for (auto dt : {mx::int32, mx::float16, mx::bool_, mx::uint8, mx::int64, mx::float32}) {
    auto a = positions({6, 2}, dt);
    auto parts = mx::split(a, 3);
    REQUIRE(parts.size() == 3);
    expect_positions(parts[0], {2, 2}, dt, {0, 1, 2, 3}, "equal part 0");
    expect_positions(parts[2], {2, 2}, dt, {8, 9, 10, 11}, "equal part 2");
    parts[1].eval();
    CHECK(shares_buffer(parts[1], a));
    auto cols = mx::split(a, 2, -1);
    REQUIRE(cols.size() == 2);
    expect_positions(cols[1], {6, 1}, dt, {1, 3, 5, 7, 9, 11}, "split columns");
    auto at = mx::split(a, mx::Shape{1, 4});
    REQUIRE(at.size() == 3);
    expect_positions(at[0], {1, 2}, dt, {0, 1}, "at [:1]");
    expect_positions(at[1], {3, 2}, dt, {2, 3, 4, 5, 6, 7}, "at [1:4]");
    expect_positions(at[2], {2, 2}, dt, {8, 9, 10, 11}, "at [4:]");
  }
  auto a = positions({5}, mx::int32);
  // NumPy semantics: negative indices count from the end, decreasing ones give empties.
  auto neg = mx::split(a, mx::Shape{-2}, 0);
  REQUIRE(neg.size() == 2);
  expect_positions(neg[0], {3}, mx::int32, {0, 1, 2}, "[:-2]");
  expect_positions(neg[1], {2}, mx::int32, {3, 4}, "[-2:]");
  auto dec = mx::split(a, mx::Shape{3, 1});
  REQUIRE(dec.size() == 3);
  CHECK(dec[1].shape() == mx::Shape{0});
  expect_positions(dec[2], {4}, mx::int32, {1, 2, 3, 4}, "[1:]");
  auto none = mx::split(a, mx::Shape{});
  REQUIRE(none.size() == 1);
  CHECK(none[0].id() == a.id());
  CHECK_THROWS_WITH_AS(mx::split(a, 2), doctest::Contains("[split]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::split(a, 0), doctest::Contains("[split]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::split(a, 5, 1), doctest::Contains("[split]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::split(mx::array(1), 1), doctest::Contains("[split]"),
                       std::invalid_argument);
}
