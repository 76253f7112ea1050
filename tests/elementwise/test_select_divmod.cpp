// where (Select) and divmod (DivMod, two sibling outputs) on the CPU.
#include <doctest/doctest.h>

#include "elementwise/helpers.h"

using namespace elementwise_test;
using mlx_test::check_all_close;
using mlx_test::rtol_for;
using mlx_test::to_doubles;

TEST_CASE("where picks x where the condition is true and y elsewhere, for every dtype") {
  Rng rng(31);
  auto cond = mx::array({true, false, false, true, true, false});
  for (auto dt : mx::all_dtypes) {
    auto x = random_values(6, dt, rng, 0, 100);
    auto y = random_values(6, dt, rng, 0, 100);
    auto out = mx::where(cond, from_doubles(x, dt), from_doubles(y, dt));
    CHECK(out.dtype() == dt);
    check_all_close(to_doubles(out), {x[0], y[1], y[2], x[3], x[4], y[5]}, 0, 0,
                    label("where", dt));
  }
}

TEST_CASE("where broadcasts condition, x and y together and promotes x with y") {
  auto cond = mx::array({true, false, true}, {3, 1});
  auto x = mx::array({1, 2, 3, 4}, mx::int8);  // shape {4}
  auto y = mx::array(0.5f);                    // 0-d float32
  auto out = mx::where(cond, x, y);
  CHECK(out.shape() == mx::Shape{3, 4});
  CHECK(out.dtype() == mx::float32);
  check_all_close(to_doubles(out), {1, 2, 3, 4, 0.5, 0.5, 0.5, 0.5, 1, 2, 3, 4}, 0, 0,
                  "broadcast where");
  // A non-bool condition is converted with astype (nonzero is true).
  auto c2 = mx::array({0.0f, -2.0f});
  check_all_close(to_doubles(mx::where(c2, mx::array(1), mx::array(9))), {9, 1}, 0, 0,
                  "float condition");
}

namespace {

template <typename H>
std::vector<uint16_t> half_bits(const mx::array& a) {
  std::vector<uint16_t> out;
  for (auto h : mlx_test::to_vector<H>(a))
    out.push_back(h.bits_);
  return out;
}

}  // namespace

TEST_CASE("where passes NaN, -0 and 16-bit float bit patterns through unchanged") {
  auto cond = mx::array({true, true, false, false});
  auto check_bits = [&](auto tag, mx::Dtype dt) {
    using H = typename decltype(tag)::type;
    // A NaN with payload bits, -0, and the largest finite value.
    std::vector<H> xs = {H::from_bits(0x7e01), H::from_bits(0x8000), H(1.0f), H(2.0f)};
    std::vector<H> ys = {H(3.0f), H(3.0f), std::numeric_limits<H>::max(), H::from_bits(0xffff)};
    auto x = mx::array(xs.begin(), {4}, dt);
    auto y = mx::array(ys.begin(), {4}, dt);
    auto got = half_bits<H>(mx::where(cond, x, y));
    CHECK_MESSAGE(
        got == (std::vector<uint16_t>{xs[0].bits_, xs[1].bits_, ys[2].bits_, ys[3].bits_}),
        label("where bits", dt));
  };
  check_bits(mx::TypeTag<mx::float16_t>{}, mx::float16);
  check_bits(mx::TypeTag<mx::bfloat16_t>{}, mx::bfloat16);
  auto f = mx::where(mx::array({true, false}), from_doubles({NaN, 1}, mx::float32),
                     from_doubles({1, -0.0}, mx::float32));
  auto v = mlx_test::to_vector<float>(f);
  CHECK(std::isnan(v[0]));
  CHECK(std::signbit(v[1]));
}

TEST_CASE("where on complex values and with an empty condition") {
  auto z = complex_array({{1, 2}, {3, 4}});
  auto w = complex_array({{-1, -2}, {-3, -4}});
  auto got = to_complex(mx::where(mx::array({false, true}), z, w));
  CHECK(got[0] == std::complex<double>(-1, -2));
  CHECK(got[1] == std::complex<double>(3, 4));
  auto e = mx::where(mx::zeros({0, 3}, mx::bool_), mx::array(1), mx::array(2));
  e.eval();
  CHECK(e.shape() == mx::Shape{0, 3});
}

TEST_CASE("divmod returns floor_divide and remainder as two sibling outputs") {
  auto a = mx::array({7, -7, 7, -7, 0, 5}, mx::int32);
  auto b = mx::array({2, 2, -2, -2, 3, 0}, mx::int32);
  auto qr = mx::divmod(a, b);
  REQUIRE(qr.size() == 2);
  CHECK(qr[0].siblings().size() == 1);
  CHECK(qr[0].siblings()[0].id() == qr[1].id());
  mx::eval({qr[0], qr[1]});
  CHECK(to_int64s(qr[0]) == iv({3, -4, -4, 3, 0, 0}));
  CHECK(to_int64s(qr[1]) == iv({1, 1, -1, -1, 0, 0}));
}

TEST_CASE("divmod evaluates correctly when only one of its outputs is kept alive") {
  auto a = mx::array({9, -9, 10}, mx::int16);
  auto b = mx::array({4, 4, -3}, mx::int16);
  auto q = mx::divmod(a, b)[0];  // the remainder array is dropped right away
  CHECK(to_int64s(q) == iv({2, -3, -4}));
  auto r = mx::divmod(a, b)[1];  // and here the quotient
  CHECK(to_int64s(r) == iv({1, 3, -2}));
  // Evaluating one output also computes the other, which stays readable.
  auto qr = mx::divmod(a, b);
  qr[1].eval();
  CHECK(qr[0].is_available());
  CHECK(to_int64s(qr[0]) == iv({2, -3, -4}));
}

TEST_CASE("divmod matches floor_divide and remainder for every real dtype and broadcast") {
  Rng rng(32);
  std::vector<mx::Dtype> dtypes = float_dtypes;
  dtypes.insert(dtypes.end(), int_dtypes.begin(), int_dtypes.end());
  dtypes.push_back(mx::bool_);
  for (auto dt : dtypes) {
    bool u = mx::is_unsigned(dt) || dt == mx::bool_;
    auto a = from_doubles(random_values(24, dt, rng, u ? 0 : -50, 50), dt, {4, 6});
    auto b = from_doubles(random_values(6, dt, rng, u ? 0 : -7, 7), dt, {1, 6});
    auto qr = mx::divmod(a, b);
    CHECK(qr[0].dtype() == dt);
    CHECK(qr[0].shape() == mx::Shape{4, 6});
    check_all_close(to_doubles(qr[0]), to_doubles(mx::floor_divide(a, b)), 0, 0,
                    label("divmod q", dt));
    check_all_close(to_doubles(qr[1]), to_doubles(mx::remainder(a, b)), 0, 0,
                    label("divmod r", dt));
  }
}

TEST_CASE("float divmod gives floor(a / b) and a remainder with the divisor's sign") {
  for (auto dt : float_dtypes) {
    auto a = from_doubles({7.5, -7.5, 7.5, 1, 0}, dt);
    auto b = from_doubles({2, 2, -2, 0, 0}, dt);
    auto qr = mx::divmod(a, b);
    check_all_close(to_doubles(qr[0]), {3, -4, -4, Inf, NaN}, 0, 0, label("divmod q", dt));
    check_all_close(to_doubles(qr[1]), {1.5, 0.5, -0.5, NaN, NaN}, 0, 0, label("divmod r", dt));
  }
}

TEST_CASE("divmod rejects complex inputs") {
  CHECK_THROWS_WITH_AS(mx::divmod(complex_array({{1, 1}}), mx::array(1.0f)),
                       doctest::Contains("[divmod]"), std::invalid_argument);
}
