// The array type itself: construction, metadata, item, flags and views.
#include <doctest/doctest.h>

#include "mlx/mlx.h"
#include "test_utils.h"

namespace mx = mlx::core;
using mlx_test::to_doubles;

TEST_CASE("scalar arrays hold one value of their C++ type") {
  mx::array a(3.5f);
  CHECK(a.dtype() == mx::float32);
  CHECK(a.ndim() == 0);
  CHECK(a.size() == 1);
  CHECK(a.nbytes() == 4);
  CHECK(a.item<float>() == 3.5f);
  mx::array b(7);
  CHECK(b.dtype() == mx::int32);
  CHECK(b.item<int>() == 7);
  mx::array c(true);
  CHECK(c.dtype() == mx::bool_);
  CHECK(c.item<bool>());
  mx::array d(2.5, mx::float16);
  CHECK(d.dtype() == mx::float16);
  CHECK(static_cast<float>(d.item<mx::float16_t>()) == 2.5f);
  mx::array e(std::complex<float>(1.0f, -2.0f));
  CHECK(e.dtype() == mx::complex64);
  CHECK(e.item<mx::complex64_t>().imag() == -2.0f);
}

TEST_CASE("arrays from lists, vectors and iterators keep shape, strides and values") {
  mx::array a({1.0f, 2.0f, 3.0f});
  CHECK(a.shape() == mx::Shape{3});
  CHECK(a.dtype() == mx::float32);
  mx::array b({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(b.dtype() == mx::int32);
  CHECK(b.shape() == mx::Shape{2, 3});
  CHECK(b.strides() == mx::Strides{3, 1});
  CHECK(b.shape(-1) == 3);
  CHECK(b.itemsize() == 4);
  CHECK(b.nbytes() == 24);
  CHECK(to_doubles(b) == std::vector<double>{1, 2, 3, 4, 5, 6});
  std::vector<int64_t> v{5, -6, 7, 8};
  mx::array c(v.begin(), {2, 2});
  CHECK(c.dtype() == mx::int64);
  CHECK(to_doubles(c) == std::vector<double>{5, -6, 7, 8});
  mx::array d({0, 1, 2}, mx::uint8);
  CHECK(d.dtype() == mx::uint8);
  mx::array e({1.5f, -2.25f}, {2}, mx::bfloat16);
  CHECK(to_doubles(e) == std::vector<double>{1.5, -2.25});
}

TEST_CASE("constructing with a shape that does not match the data throws") {
  CHECK_THROWS_AS(mx::array({1, 2, 3}, {2, 2}), std::invalid_argument);
  CHECK_THROWS_AS((mx::array(std::vector<float>{1}.begin(), {-1})), std::invalid_argument);
}

TEST_CASE("item requires exactly one element") {
  mx::array a({1.0f, 2.0f});
  CHECK_THROWS_WITH_AS(a.item<float>(), doctest::Contains("[item]"), std::invalid_argument);
}

TEST_CASE("row- and column-contiguity flags follow the layout") {
  mx::array a({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(a.flags().row_contiguous);
  CHECK_FALSE(a.flags().col_contiguous);
  CHECK(a.flags().contiguous);
  mx::array v({1, 2, 3});
  CHECK(v.flags().row_contiguous);
  CHECK(v.flags().col_contiguous);
  auto t = mx::transpose(a);
  t.eval();
  CHECK_FALSE(t.flags().row_contiguous);
  CHECK(t.flags().col_contiguous);
  CHECK(t.flags().contiguous);
  auto b = mx::broadcast_to(mx::array({1, 2, 3}), {4, 3});
  b.eval();
  CHECK_FALSE(b.flags().row_contiguous);
  CHECK(b.strides() == mx::Strides{0, 1});
}

TEST_CASE("half precision storage rounds to nearest even") {
  // 1 + 2^-11 lies exactly between two float16 values; the tie goes to the even one (1.0).
  CHECK(static_cast<float>(mx::float16_t(1.0f + 0x1.0p-11f)) == 1.0f);
  CHECK(static_cast<float>(mx::float16_t(1.0f + 3 * 0x1.0p-11f)) == 1.0f + 0x1.0p-9f);
  CHECK(static_cast<float>(mx::float16_t(65520.0f)) == INFINITY);  // rounds past max
  CHECK(static_cast<float>(mx::float16_t(65504.0f)) == 65504.0f);
  CHECK(static_cast<float>(mx::float16_t(0x1.0p-24f)) == 0x1.0p-24f);  // smallest subnormal
  CHECK(std::isnan(static_cast<float>(mx::float16_t(NAN))));
  CHECK(static_cast<float>(mx::bfloat16_t(1.0f + 0x1.0p-8f)) == 1.0f);
  CHECK(static_cast<float>(mx::bfloat16_t(1.0f + 3 * 0x1.0p-8f)) == 1.0f + 0x1.0p-6f);
  CHECK(std::isnan(static_cast<float>(mx::bfloat16_t(NAN))));
  CHECK(static_cast<float>(mx::bfloat16_t(-3.0e38f)) < -2.9e38f);
}

TEST_CASE("views share the data buffer without copying") {
  mx::array a({1, 2, 3, 4, 5, 6}, {2, 3});
  a.eval();
  auto r = mx::reshape(a, {3, 2});
  auto t = mx::transpose(a);
  auto b = mx::broadcast_to(mx::reshape(a, {1, 2, 3}), {4, 2, 3});
  auto s = mx::slice(a, {0, 1}, {2, 3});
  mx::eval({r, t, b, s});
  for (auto* v : {&r, &t, &b, &s}) {
    CHECK(v->buffer().ptr() == a.buffer().ptr());
  }
  CHECK(to_doubles(r) == std::vector<double>{1, 2, 3, 4, 5, 6});
  CHECK(to_doubles(t) == std::vector<double>{1, 4, 2, 5, 3, 6});
  CHECK(to_doubles(s) == std::vector<double>{2, 3, 5, 6});
}

TEST_CASE("reshape of a transposed view copies and keeps element order") {
  mx::array a({1, 2, 3, 4, 5, 6}, {2, 3});
  auto t = mx::transpose(a);
  auto r = mx::reshape(t, {6});
  CHECK(to_doubles(r) == std::vector<double>{1, 4, 2, 5, 3, 6});
}

TEST_CASE("printing an array shows its values and dtype") {
  std::ostringstream os;
  os << mx::array({1, 2, 3, 4}, {2, 2});
  CHECK(os.str() == "array([[1, 2],\n       [3, 4]], dtype=int32)");
  std::ostringstream os2;
  os2 << mx::array(true);
  CHECK(os2.str() == "array(true, dtype=bool)");
}
