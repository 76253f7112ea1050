// Type promotion of the elementwise ops (MLX's table in mlx/dtype.cpp) and the errors they
// raise for bad input, both at the op layer and inside the kernels.
#include <doctest/doctest.h>

#include "elementwise/helpers.h"

using namespace elementwise_test;
using mlx_test::check_all_close;
using mlx_test::to_doubles;

TEST_CASE("binary ops promote dtypes with MLX's table and compute in the promoted type") {
  struct Case {
    mx::Dtype a, b, want;
  };
  std::vector<Case> cases = {
      {mx::uint8, mx::int8, mx::int16},         {mx::uint16, mx::int16, mx::int32},
      {mx::uint32, mx::int32, mx::int64},       {mx::uint64, mx::int32, mx::float32},
      {mx::uint64, mx::int64, mx::float32},     {mx::int32, mx::float16, mx::float16},
      {mx::int64, mx::bfloat16, mx::bfloat16},  {mx::bfloat16, mx::float16, mx::float32},
      {mx::float16, mx::float32, mx::float32},  {mx::float32, mx::float64, mx::float64},
      {mx::bool_, mx::bool_, mx::bool_},        {mx::bool_, mx::uint8, mx::uint8},
      {mx::int8, mx::complex64, mx::complex64}, {mx::float64, mx::complex64, mx::complex64},
  };
  for (auto& c : cases) {
    auto a = from_doubles({1}, c.a, {1});
    auto b = from_doubles({1}, c.b, {1});
    CHECK_MESSAGE(mx::add(a, b).dtype() == c.want, mx::dtype_to_string(c.a)
                                                       << " + " << mx::dtype_to_string(c.b));
    CHECK_MESSAGE(mx::add(b, a).dtype() == c.want, mx::dtype_to_string(c.b)
                                                       << " + " << mx::dtype_to_string(c.a));
  }
  // Values are converted before the op: uint8 200 + int8 -100 is an int16 100, not a wrap.
  auto s = mx::add(mx::array(uint8_t(200)), mx::array(int8_t(-100)));
  CHECK(s.dtype() == mx::int16);
  CHECK(s.item<int16_t>() == 100);
  // int32 + float16 rounds the int to float16 (2049 is not representable: 2048).
  auto h = mx::add(mx::array(2049), mx::array(0.0f, mx::float16));
  CHECK(h.dtype() == mx::float16);
  CHECK(static_cast<float>(h.item<mx::float16_t>()) == 2048.0f);
  // uint64 with a signed int goes through float32.
  auto f = mx::subtract(mx::array(uint64_t(5)), mx::array(7));
  CHECK(f.dtype() == mx::float32);
  CHECK(f.item<float>() == -2.0f);
}

TEST_CASE("divide and float-valued ops produce floats; predicates produce bool") {
  CHECK(mx::divide(mx::array(1), mx::array(2)).dtype() == mx::float32);
  CHECK(mx::divide(mx::array(int8_t(1)), mx::array(0.5f, mx::bfloat16)).dtype() == mx::bfloat16);
  // A C++ double is float32, as in MLX; float64 must be asked for.
  CHECK(mx::divide(mx::array(1.0), mx::array(2)).dtype() == mx::float32);
  CHECK(mx::divide(mx::array(1.0, mx::float64), mx::array(2)).dtype() == mx::float64);
  CHECK(mx::arctan2(mx::array(1), mx::array(true)).dtype() == mx::float32);
  CHECK(mx::floor_divide(mx::array(7), mx::array(2)).dtype() == mx::int32);
  CHECK(mx::floor_divide(mx::array(7.0f, mx::float16), mx::array(2)).dtype() == mx::float16);
  for (auto dt : mx::all_dtypes) {
    auto x = from_doubles({1}, dt, {1});
    CHECK_MESSAGE(mx::equal(x, x).dtype() == mx::bool_, mx::dtype_to_string(dt));
    CHECK_MESSAGE(mx::logical_and(x, x).dtype() == mx::bool_, mx::dtype_to_string(dt));
    CHECK_MESSAGE(mx::isnan(x).dtype() == mx::bool_, mx::dtype_to_string(dt));
  }
}

TEST_CASE("bitwise ops and shifts reject float, complex and non-integer promotions") {
  auto f = mx::array(1.0f);
  auto i = mx::array(1);
  CHECK_THROWS_WITH_AS(mx::bitwise_and(f, i), doctest::Contains("[bitwise_and]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::bitwise_or(i, f), doctest::Contains("[bitwise_or]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::bitwise_xor(complex_array({{1, 0}}), i),
                       doctest::Contains("[bitwise_xor]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::left_shift(f, i), doctest::Contains("[left_shift]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::bitwise_invert(f), doctest::Contains("[bitwise_invert]"),
                       std::invalid_argument);
  // uint64 with a signed integer promotes to float32: no bits to operate on.
  CHECK_THROWS_WITH_AS(mx::right_shift(mx::array(uint64_t(8)), i),
                       doctest::Contains("[right_shift]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::bitwise_and(mx::array(uint64_t(8)), mx::array(int8_t(1))),
                       doctest::Contains("[bitwise_and]"), std::invalid_argument);
}

TEST_CASE("negative of bool, complex-only restrictions and bad broadcasts throw with the op name") {
  CHECK_THROWS_WITH_AS(mx::negative(mx::array(true)), doctest::Contains("[negative]"),
                       std::invalid_argument);
  auto z = complex_array({{1, 1}});
  CHECK_THROWS_WITH_AS(mx::erf(z), doctest::Contains("[erf]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::erfinv(z), doctest::Contains("[erfinv]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::floor(z), doctest::Contains("[floor]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::ceil(z), doctest::Contains("[ceil]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::round(z), doctest::Contains("[round]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::remainder(z, z), doctest::Contains("[remainder]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::floor_divide(z, mx::array(1.0f)), doctest::Contains("[floor_divide]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::logaddexp(z, z), doctest::Contains("[logaddexp]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::arctan2(z, z), doctest::Contains("[arctan2]"), std::invalid_argument);
  auto a = mx::zeros({2, 3});
  auto b = mx::zeros({4});
  CHECK_THROWS_AS(mx::add(a, b), std::invalid_argument);
  CHECK_THROWS_AS(mx::where(mx::zeros({2}, mx::bool_), a, a), std::invalid_argument);
  CHECK_THROWS_AS(mx::divmod(a, b), std::invalid_argument);
}

TEST_CASE("a kernel given a dtype its op does not accept throws instead of computing garbage") {
  auto s = cpu_stream();
  auto f = mx::array({1.0f, 2.0f});
  mx::array bad_and(f.shape(), f.dtype(), std::make_shared<mx::Binary>(s, mx::BinaryOp::BitwiseAnd),
                    {f, f});
  CHECK_THROWS_WITH_AS(bad_and.eval(), doctest::Contains("[BitwiseAnd]"), std::invalid_argument);
  auto i = mx::array({1, 2});
  mx::array bad_exp(i.shape(), i.dtype(), std::make_shared<mx::Unary>(s, mx::UnaryOp::Exp), {i});
  CHECK_THROWS_WITH_AS(bad_exp.eval(), doctest::Contains("[Exp]"), std::invalid_argument);
  // Mismatched input dtypes and output dtypes are refused too.
  mx::array mixed(f.shape(), f.dtype(), std::make_shared<mx::Binary>(s, mx::BinaryOp::Add), {f, i});
  CHECK_THROWS_WITH_AS(mixed.eval(), doctest::Contains("[Add]"), std::invalid_argument);
  mx::array wrong_out(f.shape(), mx::int32, std::make_shared<mx::Binary>(s, mx::BinaryOp::Add),
                      {f, f});
  CHECK_THROWS_WITH_AS(wrong_out.eval(), doctest::Contains("[Add]"), std::invalid_argument);
  mx::array bad_cond(f.shape(), f.dtype(), std::make_shared<mx::Select>(s), {f, f, f});
  CHECK_THROWS_WITH_AS(bad_cond.eval(), doctest::Contains("[Select]"), std::invalid_argument);
}
