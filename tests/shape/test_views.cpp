// View ops: reshape, flatten, transpose, swapaxes, moveaxis, squeeze, expand_dims,
// broadcast_to and as_strided. Values are checked over many dtypes, and every view is
// checked to read its input's buffer without a copy.
#include <doctest/doctest.h>

#include "shape_test_utils.h"

namespace mx = mlx::core;
using shape_test::expect_positions;
using shape_test::kDtypes;
using shape_test::offset_from;
using shape_test::positions;
using shape_test::shares_buffer;

TEST_CASE("transpose permutes dimensions, reversing them by default") {
  for (auto dt : kDtypes) {
    auto a = positions({2, 3}, dt);
    expect_positions(mx::transpose(a), {3, 2}, dt, {0, 3, 1, 4, 2, 5}, "2-d transpose");
    auto b = positions({2, 3, 4}, dt);
    // out[i][j][k] = b[j][k][i] for axes (1, 2, 0): position j*12 + k*4 + i.
    std::vector<int64_t> want;
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        for (int i = 0; i < 2; ++i)
          want.push_back(i * 12 + j * 4 + k);
    expect_positions(mx::transpose(b, {1, 2, 0}), {3, 4, 2}, dt, want, "3-d (1,2,0)");
    expect_positions(mx::transpose(b, {-2, -1, 0}), {3, 4, 2}, dt, want, "negative axes");
  }
}

TEST_CASE("transpose is a view with permuted strides and the same buffer") {
  auto a = positions({2, 3, 4}, mx::float32);
  auto t = mx::transpose(a, {2, 0, 1});
  t.eval();
  CHECK(shares_buffer(t, a));
  CHECK(t.data<float>() == a.data<float>());
  CHECK(t.strides() == mx::Strides{1, 12, 4});
  CHECK_FALSE(t.flags().row_contiguous);
  CHECK(t.flags().contiguous);
  // A view of a view: transposing back gives a row-contiguous view of the same data.
  auto back = mx::transpose(t, {1, 2, 0});
  expect_positions(
      back, {2, 3, 4}, mx::float32,
      [] {
        std::vector<int64_t> p(24);
        for (int i = 0; i < 24; ++i)
          p[i] = i;
        return p;
      }(),
      "transpose of a transpose");
  CHECK(shares_buffer(back, a));
  CHECK(back.flags().row_contiguous);
  // The identity permutation is the input itself.
  CHECK(mx::transpose(a, {0, 1, 2}).id() == a.id());
  // 0-d and 1-d transposes are identities.
  auto s = mx::array(5);
  CHECK(mx::transpose(s).item<int>() == 5);
  CHECK(mx::transpose(positions({3}, mx::int32)).shape() == mx::Shape{3});
}

TEST_CASE("transpose rejects axes that are not a permutation") {
  auto a = positions({2, 3}, mx::int32);
  CHECK_THROWS_WITH_AS(mx::transpose(a, {0}), doctest::Contains("[transpose]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::transpose(a, {0, 0}), doctest::Contains("[transpose]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::transpose(a, {0, 2}), doctest::Contains("[transpose]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::transpose(a, {1, -1}), doctest::Contains("[transpose]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::transpose(a, {0, 1, 2}), doctest::Contains("[transpose]"),
                       std::invalid_argument);
}

TEST_CASE("swapaxes and moveaxis are transposes") {
  for (auto dt : {mx::int32, mx::float16, mx::bool_, mx::uint8, mx::int64, mx::float32}) {
    auto a = positions({2, 3, 4}, dt);
    std::vector<int64_t> swapped;  // out[k][j][i] = a[i][j][k]
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 3; ++j)
        for (int i = 0; i < 2; ++i)
          swapped.push_back(i * 12 + j * 4 + k);
    expect_positions(mx::swapaxes(a, 0, -1), {4, 3, 2}, dt, swapped, "swapaxes(0,-1)");
    std::vector<int64_t> moved;  // moveaxis(0, 2): out[j][k][i] = a[i][j][k]
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        for (int i = 0; i < 2; ++i)
          moved.push_back(i * 12 + j * 4 + k);
    expect_positions(mx::moveaxis(a, 0, 2), {3, 4, 2}, dt, moved, "moveaxis(0,2)");
    std::vector<int64_t> moved_back;  // moveaxis(-1, 0): out[k][i][j] = a[i][j][k]
    for (int k = 0; k < 4; ++k)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
          moved_back.push_back(i * 12 + j * 4 + k);
    expect_positions(mx::moveaxis(a, -1, 0), {4, 2, 3}, dt, moved_back, "moveaxis(-1,0)");
  }
  auto a = positions({2, 3}, mx::int32);
  CHECK_THROWS_WITH_AS(mx::swapaxes(a, 0, 2), doctest::Contains("[swapaxes]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::moveaxis(a, -3, 0), doctest::Contains("[moveaxis]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::moveaxis(a, 0, 2), doctest::Contains("[moveaxis]"),
                       std::invalid_argument);
}

TEST_CASE("reshape of a contiguous array is a view; -1 infers one dimension") {
  for (auto dt : kDtypes) {
    auto a = positions({2, 6}, dt);
    auto r = mx::reshape(a, {3, -1});
    expect_positions(r, {3, 4}, dt, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, "reshape(3,-1)");
    CHECK(shares_buffer(r, a));
  }
  auto s = mx::reshape(mx::array(3.5f), {1, 1});
  CHECK(s.shape() == mx::Shape{1, 1});
  CHECK(s.item<float>() == 3.5f);
  auto e = mx::reshape(positions({0, 4}, mx::int32), {2, 0, 2});
  CHECK(e.shape() == mx::Shape{2, 0, 2});
  CHECK(mlx_test::to_doubles(e).empty());
  // As NumPy and MLX: -1 cannot be inferred for an empty array.
  CHECK_THROWS_WITH_AS(mx::reshape(positions({0, 4}, mx::int32), {2, 0, -1}),
                       doctest::Contains("[reshape]"), std::invalid_argument);
}

TEST_CASE("reshape of a transposed array copies when strides cannot express it") {
  auto a = positions({2, 3}, mx::int32);
  auto t = mx::transpose(a);  // (3, 2), strides (1, 3)
  auto r = mx::reshape(t, {6});
  expect_positions(r, {6}, mx::int32, {0, 3, 1, 4, 2, 5}, "flatten of transpose");
  CHECK_FALSE(shares_buffer(r, a));
  // Splitting a dimension of the transposed view needs no copy.
  auto r2 = mx::reshape(t, {3, 1, 2});
  expect_positions(r2, {3, 1, 2}, mx::int32, {0, 3, 1, 4, 2, 5}, "insert size-1 dim");
  CHECK(shares_buffer(r2, a));
}

TEST_CASE("reshape rejects size mismatches and bad dimensions") {
  auto a = positions({2, 3}, mx::float32);
  CHECK_THROWS_WITH_AS(mx::reshape(a, {4, 2}), doctest::Contains("[reshape]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::reshape(a, {-1, -1}), doctest::Contains("[reshape]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::reshape(a, {4, -1}), doctest::Contains("[reshape]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::reshape(a, {-2, 3}), doctest::Contains("[reshape]"),
                       std::invalid_argument);
}

TEST_CASE("flatten merges a range of axes") {
  for (auto dt : {mx::int32, mx::float16, mx::bool_, mx::uint8, mx::int64, mx::float32}) {
    auto a = positions({2, 3, 4}, dt);
    std::vector<int64_t> all(24);
    for (int i = 0; i < 24; ++i)
      all[i] = i;
    expect_positions(mx::flatten(a), {24}, dt, all, "flatten all");
    expect_positions(mx::flatten(a, 1, 2), {2, 12}, dt, all, "flatten(1,2)");
    expect_positions(mx::flatten(a, 0, -2), {6, 4}, dt, all, "flatten(0,-2)");
    CHECK(mx::flatten(a, 1, 1).id() == a.id());
  }
  auto s = mx::flatten(mx::array(7));
  CHECK(s.shape() == mx::Shape{1});
  CHECK(s.item<int>() == 7);
  auto t = mx::transpose(positions({2, 3}, mx::int32));
  expect_positions(mx::flatten(t), {6}, mx::int32, {0, 3, 1, 4, 2, 5}, "flatten transposed");
  auto a = positions({2, 3, 4}, mx::int32);
  CHECK_THROWS_WITH_AS(mx::flatten(a, 2, 1), doctest::Contains("[flatten]"), std::invalid_argument);
  // As MLX, an end axis past the last clamps to it (test_mlx_compat pins the full rule).
  CHECK(mx::flatten(a, 0, 3).shape() == mx::Shape{24});
  CHECK_THROWS_WITH_AS(mx::flatten(a, 3, 4), doctest::Contains("[flatten]"), std::invalid_argument);
}

TEST_CASE("squeeze removes only size-1 axes") {
  for (auto dt : {mx::int32, mx::float16, mx::bool_, mx::uint8, mx::int64, mx::float32}) {
    auto a = positions({1, 3, 1, 2}, dt);
    std::vector<int64_t> all{0, 1, 2, 3, 4, 5};
    expect_positions(mx::squeeze(a), {3, 2}, dt, all, "squeeze all");
    expect_positions(mx::squeeze(a, 0), {3, 1, 2}, dt, all, "squeeze(0)");
    expect_positions(mx::squeeze(a, -2), {1, 3, 2}, dt, all, "squeeze(-2)");
    expect_positions(mx::squeeze(a, {0, 2}), {3, 2}, dt, all, "squeeze({0,2})");
  }
  auto a = positions({1, 3, 1}, mx::float32);
  auto sq = mx::squeeze(a);
  sq.eval();
  CHECK(shares_buffer(sq, a));
  CHECK(mx::squeeze(mx::array(1)).shape() == mx::Shape{});
  CHECK(mx::squeeze(mx::reshape(mx::array(4), {1, 1})).item<int>() == 4);
  CHECK_THROWS_WITH_AS(mx::squeeze(a, 1), doctest::Contains("[squeeze]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::squeeze(a, 3), doctest::Contains("[squeeze]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::squeeze(a, {0, 0}), doctest::Contains("[squeeze]"),
                       std::invalid_argument);
}

TEST_CASE("expand_dims inserts axes, negative ones counted from the output's end") {
  for (auto dt : {mx::int32, mx::float16, mx::bool_, mx::uint8, mx::int64, mx::float32}) {
    auto a = positions({2, 3}, dt);
    std::vector<int64_t> all{0, 1, 2, 3, 4, 5};
    expect_positions(mx::expand_dims(a, 0), {1, 2, 3}, dt, all, "expand_dims(0)");
    expect_positions(mx::expand_dims(a, -1), {2, 3, 1}, dt, all, "expand_dims(-1)");
    expect_positions(mx::expand_dims(a, 1), {2, 1, 3}, dt, all, "expand_dims(1)");
    expect_positions(mx::expand_dims(a, {0, 3}), {1, 2, 3, 1}, dt, all, "expand_dims({0,3})");
    expect_positions(mx::expand_dims(a, {-1, 0}), {1, 2, 3, 1}, dt, all, "expand_dims({-1,0})");
    expect_positions(mx::expand_dims(a, {1, 2}), {2, 1, 1, 3}, dt, all, "expand_dims({1,2})");
  }
  auto s = mx::expand_dims(mx::array(2.0f), 0);
  CHECK(s.shape() == mx::Shape{1});
  // Expanding a transposed view keeps it a view.
  auto a = positions({2, 3}, mx::int32);
  auto e = mx::expand_dims(mx::transpose(a), 1);
  expect_positions(e, {3, 1, 2}, mx::int32, {0, 3, 1, 4, 2, 5}, "expand transposed");
  CHECK(shares_buffer(e, a));
  CHECK_THROWS_WITH_AS(mx::expand_dims(a, 3), doctest::Contains("[expand_dims]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::expand_dims(a, -4), doctest::Contains("[expand_dims]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::expand_dims(a, {1, 1}), doctest::Contains("[expand_dims]"),
                       std::invalid_argument);
}

TEST_CASE("broadcast_to is a zero-stride view") {
  for (auto dt : kDtypes) {
    auto a = positions({3, 1}, dt);
    auto b = mx::broadcast_to(a, {2, 3, 2});
    expect_positions(b, {2, 3, 2}, dt, {0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2}, "broadcast");
    CHECK(shares_buffer(b, a));
    CHECK(b.strides() == mx::Strides{0, 1, 0});
  }
  CHECK_THROWS_WITH_AS(mx::broadcast_to(positions({3}, mx::int32), {2, 2}),
                       doctest::Contains("[broadcast_to]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::broadcast_to(positions({2, 3}, mx::int32), {3}),
                       doctest::Contains("[broadcast_to]"), std::invalid_argument);
}

TEST_CASE("as_strided builds an arbitrary view of the same buffer") {
  for (auto dt : kDtypes) {
    auto a = positions({10}, dt);
    // Overlapping windows of 3, moving by 2, starting at element 1.
    auto w = mx::as_strided(a, {3, 3}, {2, 1}, 1);
    expect_positions(w, {3, 3}, dt, {1, 2, 3, 3, 4, 5, 5, 6, 7}, "windows");
    CHECK(shares_buffer(w, a));
    CHECK(offset_from(w, a) == 1);
    // A negative stride walks backwards from the offset.
    auto rev = mx::as_strided(a, {4}, {-2}, 9);
    expect_positions(rev, {4}, dt, {9, 7, 5, 3}, "backwards");
  }
  auto a = positions({2, 3}, mx::int32);
  // as_strided indexes the row-major elements even when the input is transposed (copied
  // to contiguous first).
  auto t = mx::as_strided(mx::transpose(a), {6}, {1}, 0);
  expect_positions(t, {6}, mx::int32, {0, 3, 1, 4, 2, 5}, "as_strided of transpose");
  CHECK_THROWS_WITH_AS(mx::as_strided(a, {3}, {3}, 0), doctest::Contains("[as_strided]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::as_strided(a, {2}, {1, 1}, 0), doctest::Contains("[as_strided]"),
                       std::invalid_argument);
}
