// gather, scatter (and its reductions), put_along_axis, scatter_add_axis and slicing at an
// array start: MLX's semantics on the CPU reference (examples from MLX's documentation and
// tests), duplicates applied in order, every index dtype, negative indices, the bounds
// policy of docs/indexing.md (out-of-range indices raise "[op]" at eval; dynamic starts
// clamp) and MLX's argument errors at the call. tests/gpu_diff/test_indexing.cpp compares
// the GPU kernels with these.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "mlx/mlx.h"
#include "test_utils.h"

namespace mx = mlx::core;
using mlx_test::to_doubles;

namespace {

const auto cpu = mx::Device::cpu;

const std::vector<mx::Dtype> kIndexDtypes = {mx::int8,  mx::int16,  mx::int32,  mx::int64,
                                             mx::uint8, mx::uint16, mx::uint32, mx::uint64};

// 0, 1, 2, ... in `shape` and `dt`.
mx::array iota(const mx::Shape& shape, mx::Dtype dt = mx::float32) {
  int n = 1;
  for (auto d : shape) {
    n *= d;
  }
  return mx::reshape(mx::astype(mx::arange(n, cpu), dt, cpu), shape, cpu);
}

void expect(const mx::array& a, const mx::Shape& shape, const std::vector<double>& want,
            const std::string& what) {
  INFO(what);
  REQUIRE(a.shape() == shape);
  mlx_test::check_all_close(to_doubles(a), want, 0.0, 0.0, what);
}

}  // namespace

TEST_CASE("gather takes windows at index arrays (MLX's layout: indices shape + slice sizes)") {
  auto a = iota({4, 3});
  // One index array along axis 0, windows of one row: out (2,1,3).
  auto g = mx::gather(a, mx::array({2, 0}), 0, {1, 3}, cpu);
  expect(g, {2, 1, 3}, {6, 7, 8, 0, 1, 2}, "rows");
  // Windows of 2x2 starting at row idx, column 0.
  g = mx::gather(a, mx::array({1, -2}), 0, {2, 2}, cpu);
  expect(g, {2, 2, 2}, {3, 4, 6, 7, 6, 7, 9, 10}, "2x2 windows, negative index");
  // Two index arrays broadcast together: points (3,1), (0,1), windows 1x2 -> (2,1,2).
  g = mx::gather(a, {mx::array({3, 0}), mx::array({1})}, {0, 1}, {1, 2}, cpu);
  expect(g, {2, 1, 2}, {10, 11, 1, 2}, "two index arrays");
  // No index arrays: one window at the origin.
  g = mx::gather(a, std::vector<mx::array>{}, std::vector<int>{}, {2, 2}, cpu);
  expect(g, {2, 2}, {0, 1, 3, 4}, "no index arrays");
  // Index arrays keep their shape; a 0-d index gives no index dims.
  g = mx::gather(a, mx::array({0, 2, 1, 2}, {2, 2}), 1, {4, 1}, cpu);
  CHECK(g.shape() == mx::Shape{2, 2, 4, 1});
  g = mx::gather(a, mx::array(2), 0, {1, 3}, cpu);
  expect(g, {1, 3}, {6, 7, 8}, "0-d index");
  // Empty index arrays give an empty result.
  g = mx::gather(a, mx::zeros({0}, mx::int32, cpu), 0, {1, 3}, cpu);
  CHECK(g.shape() == mx::Shape{0, 1, 3});
  CHECK(to_doubles(g).empty());
}

TEST_CASE("gather, take and take_along_axis accept every integer index dtype") {
  auto a = iota({5, 2});
  for (auto dt : kIndexDtypes) {
    CAPTURE(mx::dtype_to_string(dt));
    expect(mx::gather(a, mx::astype(mx::array({4, 0}), dt, cpu), 0, {1, 2}, cpu), {2, 1, 2},
           {8, 9, 0, 1}, "gather");
    if (mx::is_signed_integral(dt)) {
      expect(mx::gather(a, mx::astype(mx::array({-1, -5}), dt, cpu), 0, {1, 1}, cpu), {2, 1, 1},
             {8, 0}, "negative");
    }
  }
  // Index arrays of different integer dtypes promote to one.
  auto g =
      mx::gather(a, {mx::array({4}, mx::uint8), mx::array({1}, mx::int16)}, {0, 1}, {1, 1}, cpu);
  expect(g, {1, 1, 1}, {9}, "mixed index dtypes");
}

TEST_CASE("gather raises [gather] at eval for an index whose window leaves the axis") {
  auto a = iota({4, 3});
  for (int bad : {4, -5, 100}) {
    auto g = mx::gather(a, mx::array({0, bad}), 0, {1, 3}, cpu);
    CHECK_THROWS_WITH_AS(g.eval(), doctest::Contains("[gather]"), std::invalid_argument);
  }
  // A window of 2 rows may start at 0..2 only.
  auto g = mx::gather(a, mx::array({3}), 0, {2, 3}, cpu);
  CHECK_THROWS_WITH_AS(g.eval(), doctest::Contains("out of bounds"), std::invalid_argument);
  expect(mx::gather(a, mx::array({2}), 0, {2, 1}, cpu), {1, 2, 1}, {6, 9}, "last window");
}

TEST_CASE("gather rejects bad arguments at the call as MLX does") {
  auto a = iota({4, 3});
  auto i = mx::array({0});
  auto throws = [](auto f, const char* what) {
    CHECK_THROWS_WITH_AS(f(), doctest::Contains(what), std::invalid_argument);
  };
  throws([&] { return mx::gather(a, {i, i, i}, {0, 1, 2}, {1, 1}, cpu); }, "[gather] too many");
  throws([&] { return mx::gather(a, {i, i}, {0, 0}, {1, 1}, cpu); }, "repeated axes");
  throws([&] { return mx::gather(a, i, -1, {1, 1}, cpu); }, "[gather] axes");
  throws([&] { return mx::gather(a, i, 2, {1, 1, 1}, cpu); }, "[gather] axes");
  throws([&] { return mx::gather(a, {i}, {0, 1}, {1, 1}, cpu); }, "number of index arrays");
  throws([&] { return mx::gather(a, mx::array({0.0f}), 0, {1, 1}, cpu); }, "integer dtype");
  throws([&] { return mx::gather(a, mx::array({true}), 0, {1, 1}, cpu); }, "integer dtype");
  throws([&] { return mx::gather(a, i, 0, {1}, cpu); }, "slice_sizes");
  throws([&] { return mx::gather(a, i, 0, {5, 1}, cpu); }, "slice sizes");
  throws([&] { return mx::gather(a, i, 0, {1, -1}, cpu); }, "slice sizes");
  throws(
      [&] {
        return mx::gather(a, {mx::array({0, 1}), mx::array({0, 1, 2})}, {0, 1}, {1, 1}, cpu);
      },
      "[gather]");
  throws([&] { return mx::gather(mx::zeros({0, 3}, cpu), i, 0, {1, 3}, cpu); }, "[gather]");
  // From an empty array with a zero total slice, any indices are fine.
  CHECK(mx::gather(mx::zeros({0, 3}, cpu), i, 1, {0, 1}, cpu).shape() == mx::Shape{1, 0, 1});
}

TEST_CASE("scatter writes windows at index arrays (MLX's documented examples)") {
  auto z = mx::zeros({4, 4}, cpu);
  // One row vector at (2, 0).
  auto out = mx::scatter(z, mx::array({2}),
                         mx::reshape(mx::arange(1, 3, mx::float32, cpu), {1, 1, 2}, cpu), 0, cpu);
  expect(out, {4, 4}, {0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0}, "one window");
  // Two windows: rows 2 and 0.
  out = mx::scatter(z, mx::array({2, 0}),
                    mx::reshape(mx::arange(1, 5, mx::float32, cpu), {2, 1, 2}, cpu), 0, cpu);
  expect(out, {4, 4}, {3, 4, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0}, "two windows");
  // Index arrays on two axes: windows at (2, 1) and (0, 2).
  out = mx::scatter(z, {mx::array({2, 0}), mx::array({1, 2})},
                    mx::reshape(mx::arange(1, 5, mx::float32, cpu), {2, 1, 2}, cpu), {0, 1}, cpu);
  expect(out, {4, 4}, {0, 0, 3, 4, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0}, "two axes");
  // No index arrays: the window lands at the origin.
  out = mx::scatter(z, std::vector<mx::array>{}, mx::ones({2, 1}, cpu), std::vector<int>{}, cpu);
  expect(out, {4, 4}, {1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "no index arrays");
}

TEST_CASE("scatter duplicates: a later update wins, reductions combine them all") {
  auto a = mx::array({10, 20, 30, 40, 50}, mx::int32);
  auto idx = mx::array({1, 3, 1, -4, 0});  // -4 is 1 again
  auto upd = mx::reshape(mx::array({1, 2, 3, 4, 5}, mx::int32), {5, 1}, cpu);
  expect(mx::scatter(a, idx, upd, 0, cpu), {5}, {5, 4, 30, 2, 50}, "scatter");
  expect(mx::scatter_add(a, idx, upd, 0, cpu), {5}, {15, 28, 30, 42, 50}, "scatter_add");
  expect(mx::scatter_prod(a, idx, upd, 0, cpu), {5}, {50, 240, 30, 80, 50}, "scatter_prod");
  expect(mx::scatter_max(a, idx, upd, 0, cpu), {5}, {10, 20, 30, 40, 50}, "scatter_max");
  expect(mx::scatter_min(a, idx, upd, 0, cpu), {5}, {5, 1, 30, 2, 50}, "scatter_min");
  // Integers wrap like the binary ops.
  auto i8 = mx::scatter_add(mx::array({120}, mx::int8), mx::array({0, 0}),
                            mx::array({5, 5}, {2, 1}, mx::int8), 0, cpu);
  expect(i8, {1}, {-126}, "int8 wraps");
  // bool: add is or, prod is and.
  auto b = mx::array({false, true});
  auto bi = mx::array({0, 1});
  auto bu = mx::array({true, false}, {2, 1});
  expect(mx::scatter_add(b, bi, bu, 0, cpu), {2}, {1, 1}, "bool add");
  expect(mx::scatter_prod(b, bi, bu, 0, cpu), {2}, {0, 0}, "bool prod");
}

TEST_CASE("scatter reductions on floats: order of the indices, NaN propagates in max/min") {
  float nan = std::numeric_limits<float>::quiet_NaN();
  auto a = mx::array({0.0f, 1.0f, nan});
  auto idx = mx::array({0, 0, 1, 2});
  auto upd = mx::reshape(mx::array({nan, 2.0f, 3.0f, 4.0f}), {4, 1}, cpu);
  auto mx_ = to_doubles(mx::scatter_max(a, idx, upd, 0, cpu));
  CHECK(std::isnan(mx_[0]));  // a NaN update wins whatever comes after it
  CHECK(mx_[1] == 3.0);
  CHECK(std::isnan(mx_[2]));  // a NaN already there stays
  auto mn = to_doubles(mx::scatter_min(a, idx, upd, 0, cpu));
  CHECK(std::isnan(mn[0]));
  CHECK(mn[1] == 1.0);
  // float16 sums round to float16 at every step, in index order: 2048 + 1 + 1 stays 2048.
  auto h = mx::scatter_add(mx::array({2048.0f}, mx::float16), mx::array({0, 0}),
                           mx::astype(mx::ones({2, 1}, cpu), mx::float16, cpu), 0, cpu);
  expect(h, {1}, {2048}, "float16 per-step rounding");
}

TEST_CASE("scatter raises [op] at eval for out-of-range indices and writes nothing") {
  auto a = mx::zeros({3, 2}, mx::int32, cpu);
  auto upd = mx::ones({2, 1, 2}, mx::int32, cpu);
  auto bad = mx::scatter_add(a, mx::array({0, 3}), upd, 0, cpu);
  CHECK_THROWS_WITH_AS(bad.eval(), doctest::Contains("[scatter_add]"), std::invalid_argument);
  // A window of 2 rows may start at row 0 or 1 only.
  auto wide = mx::scatter(a, mx::array({2}), mx::ones({1, 2, 2}, mx::int32, cpu), 0, cpu);
  CHECK_THROWS_WITH_AS(wide.eval(), doctest::Contains("out of bounds"), std::invalid_argument);
  expect(a, {3, 2}, {0, 0, 0, 0, 0, 0}, "source untouched");
}

TEST_CASE("scatter rejects bad arguments at the call") {
  auto a = mx::zeros({4, 3}, cpu);
  auto i = mx::array({0, 1});
  auto throws = [](auto f, const char* what) {
    CHECK_THROWS_WITH_AS(f(), doctest::Contains(what), std::invalid_argument);
  };
  throws([&] { return mx::scatter(a, i, mx::ones({2, 3}, cpu), 0, cpu); }, "dimensions");
  throws([&] { return mx::scatter(a, i, mx::ones({3, 1, 3}, cpu), 0, cpu); }, "index shape");
  throws([&] { return mx::scatter(a, i, mx::ones({2, 5, 3}, cpu), 0, cpu); }, "too large");
  throws(
      [&] {
        return mx::scatter_add(a, i, mx::ones({2, 1, 3}, cpu), -1, cpu);
      },
      "[scatter_add] axes");
  throws(
      [&] {
        return mx::scatter_max(a, mx::array({0.5f}), mx::ones({1, 1, 3}, cpu), 0, cpu);
      },
      "[scatter_max] indices must have an integer dtype");
  throws(
      [&] {
        return mx::scatter(a, {i, i}, mx::ones({2, 1, 1}, cpu), {1, 1}, cpu);
      },
      "repeated axes");
  // Updates are cast to a's dtype.
  auto out = mx::scatter(mx::zeros({2}, mx::int32, cpu), mx::array({1}), mx::array({2.75f}, {1, 1}),
                         0, cpu);
  CHECK(out.dtype() == mx::int32);
  expect(out, {2}, {0, 2}, "cast updates");
}

TEST_CASE("put_along_axis and scatter_add_axis (NumPy's put_along_axis example)") {
  auto a = mx::array({10, 30, 20, 60, 40, 50}, {2, 3}, mx::int32);
  auto ai = mx::argmax(a, 1, true, cpu);  // [[1], [0]]
  auto out = mx::put_along_axis(a, ai, mx::array(99), 1, cpu);
  expect(out, {2, 3}, {10, 99, 20, 99, 40, 50}, "put max");
  // Duplicates along the axis: put keeps the last, add sums all; negative indices wrap.
  auto idx = mx::array({0, 2, -3, 1, 1, 1}, {2, 3});
  auto vals = mx::array({1, 2, 3, 4, 5, 6}, {2, 3}, mx::int32);
  expect(mx::put_along_axis(a, idx, vals, 1, cpu), {2, 3}, {3, 30, 2, 60, 6, 50}, "put dups");
  expect(mx::scatter_add_axis(a, idx, vals, 1, cpu), {2, 3}, {14, 30, 22, 60, 55, 50}, "add dups");
  // Along axis 0, indices broadcast over the columns.
  auto col = mx::put_along_axis(a, mx::array({1}, {1, 1}), mx::array({7, 8, 9}, {1, 3}), 0, cpu);
  expect(col, {2, 3}, {10, 30, 20, 7, 8, 9}, "axis 0");
  auto bad = mx::put_along_axis(a, mx::array({3}, {1, 1}), mx::array(1), 1, cpu);
  CHECK_THROWS_WITH_AS(bad.eval(), doctest::Contains("[put_along_axis]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::put_along_axis(a, mx::array({0}), mx::array(1), 1, cpu),
                       doctest::Contains("[put_along_axis]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::scatter_add_axis(a, ai, mx::array(1), 2, cpu),
                       doctest::Contains("[scatter_add_axis]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      mx::put_along_axis(a, mx::astype(ai, mx::float32, cpu), mx::array(1), 1, cpu),
      doctest::Contains("integer dtype"), std::invalid_argument);
}

TEST_CASE("slice with an array start (MLX's test_dynamic_slicing)") {
  auto x = iota({4, 4, 4}, mx::int32);
  auto out = mx::slice(x, mx::array({1, 2, 3}), {0, 1, 2}, {3, 2, 1}, cpu);
  auto want = mx::slice(x, {1, 2, 3}, {4, 4, 4}, cpu);
  CHECK(mx::array_equal(out, want, cpu).item<bool>());
  auto y = iota({5, 6, 7, 8}, mx::int32);
  out = mx::slice(y, mx::array({1, 2, 3, 4}), {0, 1, 2, 3}, {2, 2, 2, 2}, cpu);
  CHECK(mx::array_equal(out, mx::slice(y, {1, 2, 3, 4}, {3, 4, 5, 6}, cpu), cpu).item<bool>());
  // MLX's docstring: axes not named start at 0.
  auto a = mx::array({1, 2, 3, 4, 5, 6}, {2, 3});
  expect(mx::slice(a, mx::array(1), {0}, {1, 2}, cpu), {1, 2}, {4, 5}, "axis 0");
  expect(mx::slice(a, mx::array(1), {1}, {2, 1}, cpu), {2, 1}, {2, 5}, "axis 1");
  expect(mx::slice(a, mx::array({1}), {-1}, {2, 1}, cpu), {2, 1}, {2, 5}, "negative axis");
  for (auto dt : kIndexDtypes) {
    CAPTURE(mx::dtype_to_string(dt));
    expect(mx::slice(a, mx::astype(mx::array(2), dt, cpu), {1}, {1, 1}, cpu), {1, 1}, {3},
           "start dtype");
  }
}

TEST_CASE("slice and slice_update clamp an array start so the window fits") {
  auto a = iota({6});
  // MLX reads out of bounds here; both devices clamp to [0, 6 - 2].
  expect(mx::slice(a, mx::array(5), {0}, {2}, cpu), {2}, {4, 5}, "past the end");
  expect(mx::slice(a, mx::array(100), {0}, {2}, cpu), {2}, {4, 5}, "far past the end");
  expect(mx::slice(a, mx::array(-1), {0}, {2}, cpu), {2}, {0, 1}, "negative start");
  expect(mx::slice(a, mx::array({-100}, mx::int8), {0}, {2}, cpu), {2}, {0, 1}, "int8 start");
  expect(mx::slice(a, mx::array({uint64_t{1} << 63}, mx::uint64), {0}, {3}, cpu), {3}, {3, 4, 5},
         "huge uint64 start");
  auto u = mx::slice_update(a, mx::array({-1.0f, -2.0f}), mx::array(9), {0}, cpu);
  expect(u, {6}, {0, 1, 2, 3, -1, -2}, "update past the end");
  u = mx::slice_update(a, mx::array({-1.0f, -2.0f}), mx::array(-3), {0}, cpu);
  expect(u, {6}, {-1, -2, 2, 3, 4, 5}, "update at a negative start");
}

TEST_CASE("slice_update with an array start writes the update (MLX's example)") {
  auto x = mx::zeros({4, 4, 4}, mx::int32, cpu);
  auto update = iota({3, 2, 1}, mx::int32) + mx::array(1);
  auto out = mx::slice_update(x, update, mx::array({1, 2, 3}), {0, 1, 2}, cpu);
  auto want = mx::slice_update(x, update, {1, 2, 3}, {4, 4, 4}, cpu);
  CHECK(mx::array_equal(out, want, cpu).item<bool>());
  // A KV-cache style write: (B, T, D) cache, one step (1, D) at position t on axis 1. The
  // update broadcasts over B; a leading dynamic axis would take extent 1.
  auto cache = mx::zeros({2, 5, 3}, cpu);
  auto step = mx::array({1.0f, 2.0f, 3.0f}, {1, 3});
  auto c = mx::slice_update(cache, step, mx::array(3), {1}, cpu);
  auto v = to_doubles(c);
  for (int b = 0; b < 2; ++b) {
    for (int t = 0; t < 5; ++t) {
      for (int d = 0; d < 3; ++d) {
        CHECK(v[(b * 5 + t) * 3 + d] == (t == 3 ? d + 1.0 : 0.0));
      }
    }
  }
  auto lead =
      mx::slice_update(mx::zeros({3, 2}, cpu), mx::array({5.0f, 6.0f}), mx::array(2), {0}, cpu);
  expect(lead, {3, 2}, {0, 0, 0, 0, 5, 6}, "leading dynamic axis of extent 1");
  // The update is cast to the source's dtype.
  auto cast =
      mx::slice_update(mx::zeros({3}, mx::int32, cpu), mx::array({2.5f}), mx::array(1), {0}, cpu);
  CHECK(cast.dtype() == mx::int32);
  expect(cast, {3}, {0, 2, 0}, "cast");
}

TEST_CASE("slice_update with an array start is in place when the source is donated") {
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == mx::Device::cpu ? "cpu" : "gpu");
    auto src = mx::add(mx::zeros({4, 8}, d), mx::array(1.0f), d);
    src.eval();
    const void* before = src.data<float>();
    auto out = mx::slice_update(src, mx::full({1, 8}, 5.0f, d), mx::array(2), {0}, d);
    src = mx::array(0.0f);  // drop our handle: the graph now holds the only reference
    out.eval();
    CHECK(out.data<float>() == before);
    auto v = to_doubles(out);
    CHECK(v[0] == 1.0);
    CHECK(v[16] == 5.0);
    // An update that is a view of src shares its buffer, so src is copied first.
    auto x = mx::astype(mx::arange(6, d), mx::float32, d);
    auto shifted = mx::slice_update(x, mx::slice(x, {0}, {5}, d), mx::array(1), {0}, d);
    x = mx::array(0.0f);
    expect(shifted, {6}, {0, 0, 1, 2, 3, 4}, "overlapping update");
  }
}

TEST_CASE("slice and slice_update with an array start reject bad arguments") {
  auto a = mx::zeros({3, 4}, cpu);
  auto throws = [](auto f, const char* what) {
    CHECK_THROWS_WITH_AS(f(), doctest::Contains(what), std::invalid_argument);
  };
  throws([&] { return mx::slice(a, mx::array({1, 2}), {0}, {1, 1}, cpu); }, "[slice]");
  throws([&] { return mx::slice(a, mx::array({1, 2, 0}), {0, 1, 0}, {1, 1}, cpu); }, "[slice]");
  throws([&] { return mx::slice(a, mx::array({1, 2}, {1, 2}), {0, 1}, {1, 1}, cpu); }, "0-d");
  throws([&] { return mx::slice(a, mx::array({1.0f}), {0}, {1, 1}, cpu); }, "integer dtype");
  throws([&] { return mx::slice(a, mx::array({1, 2}), {0, -2}, {1, 1}, cpu); }, "repeated");
  throws([&] { return mx::slice(a, mx::array(1), {2}, {1, 1}, cpu); }, "[slice]");
  throws([&] { return mx::slice(a, mx::array(1), {0}, {4, 1}, cpu); }, "does not fit");
  throws([&] { return mx::slice(a, mx::array(1), {0}, {1, -1}, cpu); }, "does not fit");
  throws([&] { return mx::slice(a, mx::array(1), {0}, {1}, cpu); }, "slice_size");
  throws(
      [&] {
        return mx::slice_update(a, mx::zeros({1, 3, 4}, cpu), mx::array(1), {0}, cpu);
      },
      "[slice_update]");
  throws(
      [&] {
        return mx::slice_update(a, mx::zeros({1, 5}, cpu), mx::array(1), {0}, cpu);
      },
      "does not fit");
  throws(
      [&] {
        return mx::slice_update(a, mx::zeros({1, 4}, cpu), mx::array(1.0f), {0}, cpu);
      },
      "[slice_update]");
}

TEST_CASE("braced starts still pick the static slice overloads") {
  auto a = iota({6});
  expect(mx::slice(a, {1}, {5}, {2}, cpu), {2}, {1, 3}, "slice with strides");
  expect(mx::slice_update(a, mx::array({9.0f}), {2}, {3}, cpu), {6}, {0, 1, 9, 3, 4, 5},
         "slice_update");
}
