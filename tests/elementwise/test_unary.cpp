// Unary elementwise ops on the CPU: numerics against double-precision references for every
// dtype each op accepts, and the edge cases that the semantics block of
// mlx/backend/cpu/elementwise_ops.h defines.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "elementwise/helpers.h"

using namespace elementwise_test;
using mlx_test::check_all_close;
using mlx_test::rtol_for;
using mlx_test::to_doubles;

namespace {

using UnaryFn = std::function<mx::array(const mx::array&)>;

// erfinv by bisection on erf (erfc in the tails, where it keeps the digits): an
// independent reference for the kernel's polynomial + Halley implementation.
double erfinv_bisect(double y) {
  double ay = std::abs(y), lo = 0, hi = 10;
  for (int i = 0; i < 200; ++i) {
    double mid = 0.5 * (lo + hi);
    bool below = ay <= 0.5 ? std::erf(mid) < ay : std::erfc(mid) > 1 - ay;
    (below ? lo : hi) = mid;
  }
  return std::copysign(0.5 * (lo + hi), y);
}

struct FloatUnaryCase {
  const char* name;
  UnaryFn op;
  std::function<double(double)> ref;
  double lo, hi;  // input range, inside the function's domain
};

std::vector<FloatUnaryCase> float_unary_cases() {
  return {
      {"abs", [](auto& a) { return mx::abs(a); }, [](double x) { return std::abs(x); }, -10, 10},
      {"negative", [](auto& a) { return mx::negative(a); }, [](double x) { return -x; }, -10, 10},
      {"sign", [](auto& a) { return mx::sign(a); },
       [](double x) { return double((x > 0) - (x < 0)); }, -3, 3},
      {"square", [](auto& a) { return mx::square(a); }, [](double x) { return x * x; }, -10, 10},
      {"sqrt", [](auto& a) { return mx::sqrt(a); }, [](double x) { return std::sqrt(x); }, 0, 10},
      {"rsqrt", [](auto& a) { return mx::rsqrt(a); }, [](double x) { return 1 / std::sqrt(x); },
       0.1, 10},
      {"exp", [](auto& a) { return mx::exp(a); }, [](double x) { return std::exp(x); }, -10, 10},
      {"expm1", [](auto& a) { return mx::expm1(a); }, [](double x) { return std::expm1(x); }, -2,
       2},
      {"log", [](auto& a) { return mx::log(a); }, [](double x) { return std::log(x); }, 0.01, 100},
      {"log1p", [](auto& a) { return mx::log1p(a); }, [](double x) { return std::log1p(x); }, -0.9,
       10},
      {"log2", [](auto& a) { return mx::log2(a); }, [](double x) { return std::log2(x); }, 0.01,
       100},
      {"log10", [](auto& a) { return mx::log10(a); }, [](double x) { return std::log10(x); }, 0.01,
       100},
      {"sin", [](auto& a) { return mx::sin(a); }, [](double x) { return std::sin(x); }, -6, 6},
      {"cos", [](auto& a) { return mx::cos(a); }, [](double x) { return std::cos(x); }, -6, 6},
      {"tan", [](auto& a) { return mx::tan(a); }, [](double x) { return std::tan(x); }, -1.4, 1.4},
      {"arcsin", [](auto& a) { return mx::arcsin(a); }, [](double x) { return std::asin(x); }, -1,
       1},
      {"arccos", [](auto& a) { return mx::arccos(a); }, [](double x) { return std::acos(x); }, -1,
       1},
      {"arctan", [](auto& a) { return mx::arctan(a); }, [](double x) { return std::atan(x); }, -10,
       10},
      {"sinh", [](auto& a) { return mx::sinh(a); }, [](double x) { return std::sinh(x); }, -5, 5},
      {"cosh", [](auto& a) { return mx::cosh(a); }, [](double x) { return std::cosh(x); }, -5, 5},
      {"tanh", [](auto& a) { return mx::tanh(a); }, [](double x) { return std::tanh(x); }, -5, 5},
      {"arcsinh", [](auto& a) { return mx::arcsinh(a); }, [](double x) { return std::asinh(x); },
       -10, 10},
      {"arccosh", [](auto& a) { return mx::arccosh(a); }, [](double x) { return std::acosh(x); }, 1,
       10},
      {"arctanh", [](auto& a) { return mx::arctanh(a); }, [](double x) { return std::atanh(x); },
       -0.99, 0.99},
      {"sigmoid", [](auto& a) { return mx::sigmoid(a); },
       [](double x) { return 1 / (1 + std::exp(-x)); }, -20, 20},
      {"erf", [](auto& a) { return mx::erf(a); }, [](double x) { return std::erf(x); }, -3, 3},
      {"erfinv", [](auto& a) { return mx::erfinv(a); }, erfinv_bisect, -0.999, 0.999},
      {"floor", [](auto& a) { return mx::floor(a); }, [](double x) { return std::floor(x); }, -10,
       10},
      {"ceil", [](auto& a) { return mx::ceil(a); }, [](double x) { return std::ceil(x); }, -10, 10},
      {"round", [](auto& a) { return mx::round(a); }, [](double x) { return std::nearbyint(x); },
       -10, 10},
  };
}

}  // namespace

TEST_CASE("float unary ops match double references for float16, bfloat16, float32, float64") {
  // The reference is the std:: function in double on the exact stored input, rounded once to
  // the output dtype. The kernel computes 16-bit floats in float32, so it may differ by a few
  // ulps of the storage type: tolerance rtol_for(dtype) (f16 4e-3, bf16 3e-2, f32 2e-5,
  // f64 1e-12) plus atol_for(dtype) for subnormal results.
  Rng rng(11);
  for (auto& c : float_unary_cases()) {
    for (auto dt : float_dtypes) {
      auto x = random_values(48, dt, rng, c.lo, c.hi);
      std::vector<double> want;
      for (double v : x) {
        want.push_back(round_to(c.ref(v), dt));
      }
      auto out = c.op(from_doubles(x, dt));
      CHECK_MESSAGE(out.dtype() == dt, label(c.name, dt));
      check_all_close(to_doubles(out), want, rtol_for(dt), atol_for(dt), label(c.name, dt));
    }
  }
}

TEST_CASE("complex unary ops match std::complex<double> references") {
  // complex64 math runs in float: tolerance 1e-4 of |result| plus 1e-5 absolute, looser than
  // float32's 2e-5 because expm1/log1p/rsqrt/sigmoid are composed of several float ops.
  using Z = std::complex<double>;
  struct Case {
    const char* name;
    UnaryFn op;
    std::function<Z(Z)> ref;
  };
  std::vector<Case> cases = {
      {"negative", [](auto& a) { return mx::negative(a); }, [](Z z) { return -z; }},
      {"square", [](auto& a) { return mx::square(a); }, [](Z z) { return z * z; }},
      {"sign", [](auto& a) { return mx::sign(a); }, [](Z z) { return z / std::abs(z); }},
      {"sqrt", [](auto& a) { return mx::sqrt(a); }, [](Z z) { return std::sqrt(z); }},
      {"rsqrt", [](auto& a) { return mx::rsqrt(a); }, [](Z z) { return 1.0 / std::sqrt(z); }},
      {"exp", [](auto& a) { return mx::exp(a); }, [](Z z) { return std::exp(z); }},
      {"expm1", [](auto& a) { return mx::expm1(a); }, [](Z z) { return std::exp(z) - 1.0; }},
      {"log", [](auto& a) { return mx::log(a); }, [](Z z) { return std::log(z); }},
      {"log1p", [](auto& a) { return mx::log1p(a); }, [](Z z) { return std::log(1.0 + z); }},
      {"log2", [](auto& a) { return mx::log2(a); },
       [](Z z) { return std::log(z) / std::log(2.0); }},
      {"log10", [](auto& a) { return mx::log10(a); }, [](Z z) { return std::log10(z); }},
      {"sin", [](auto& a) { return mx::sin(a); }, [](Z z) { return std::sin(z); }},
      {"cos", [](auto& a) { return mx::cos(a); }, [](Z z) { return std::cos(z); }},
      {"tan", [](auto& a) { return mx::tan(a); }, [](Z z) { return std::tan(z); }},
      {"arcsin", [](auto& a) { return mx::arcsin(a); }, [](Z z) { return std::asin(z); }},
      {"arccos", [](auto& a) { return mx::arccos(a); }, [](Z z) { return std::acos(z); }},
      {"arctan", [](auto& a) { return mx::arctan(a); }, [](Z z) { return std::atan(z); }},
      {"sinh", [](auto& a) { return mx::sinh(a); }, [](Z z) { return std::sinh(z); }},
      {"cosh", [](auto& a) { return mx::cosh(a); }, [](Z z) { return std::cosh(z); }},
      {"tanh", [](auto& a) { return mx::tanh(a); }, [](Z z) { return std::tanh(z); }},
      {"arcsinh", [](auto& a) { return mx::arcsinh(a); }, [](Z z) { return std::asinh(z); }},
      {"arccosh", [](auto& a) { return mx::arccosh(a); }, [](Z z) { return std::acosh(z); }},
      {"arctanh", [](auto& a) { return mx::arctanh(a); }, [](Z z) { return std::atanh(z); }},
      {"sigmoid", [](auto& a) { return mx::sigmoid(a); },
       [](Z z) { return 1.0 / (1.0 + std::exp(-z)); }},
  };
  Rng rng(12);
  auto z = random_complex(24, rng, -2, 2);
  auto in = complex_array(z);
  for (auto& c : cases) {
    std::vector<Z> want;
    for (auto v : z) {
      want.push_back(c.ref(v));
    }
    auto out = c.op(in);
    CHECK_MESSAGE(out.dtype() == mx::complex64, c.name);
    check_complex_close(to_complex(out), want, 1e-4, 1e-5, c.name);
  }
}

TEST_CASE("abs of complex is the float32 magnitude and sign of complex 0 is 0") {
  auto z = complex_array({{3, 4}, {-5, 12}, {0, 0}, {0, -2}});
  auto a = mx::abs(z);
  CHECK(a.dtype() == mx::float32);
  check_all_close(to_doubles(a), {5, 13, 0, 2}, 0, 0, "abs complex");
  auto s = to_complex(mx::sign(z));
  CHECK(s[2] == std::complex<double>(0, 0));
  CHECK(s[3] == std::complex<double>(0, -1));
}

TEST_CASE("float unary special values follow IEEE: NaN propagates, domain errors give NaN") {
  for (auto dt : float_dtypes) {
    auto x = from_doubles({NaN, Inf, -Inf, 0.0, -1.0}, dt);
    auto chk = [&](const char* what, mx::array out, std::vector<double> want) {
      check_all_close(to_doubles(out), want, rtol_for(dt), 0, label(what, dt));
    };
    chk("exp", mx::exp(x), {NaN, Inf, 0, 1, round_to(std::exp(-1.0), dt)});
    chk("sqrt", mx::sqrt(x), {NaN, Inf, NaN, 0, NaN});
    chk("log", mx::log(x), {NaN, Inf, NaN, -Inf, NaN});
    chk("log1p", mx::log1p(x), {NaN, Inf, NaN, 0, -Inf});
    chk("sigmoid", mx::sigmoid(x), {NaN, 1, 0, 0.5, round_to(1 / (1 + std::exp(1.0)), dt)});
    chk("tanh", mx::tanh(x), {NaN, 1, -1, 0, round_to(std::tanh(-1.0), dt)});
    chk("abs", mx::abs(x), {NaN, Inf, Inf, 0, 1});
    chk("sign", mx::sign(x), {NaN, 1, -1, 0, -1});
    chk("floor", mx::floor(x), {NaN, Inf, -Inf, 0, -1});
    chk("round", mx::round(x), {NaN, Inf, -Inf, 0, -1});
    chk("erf", mx::erf(x), {NaN, 1, -1, 0, round_to(std::erf(-1.0), dt)});
    chk("square", mx::square(x), {NaN, Inf, Inf, 0, 1});
    chk("arctanh", mx::arctanh(from_doubles({1, -1, 2}, dt)), {Inf, -Inf, NaN});
    chk("arccosh", mx::arccosh(from_doubles({1, 0.5}, dt, {2})), {0, NaN});
  }
}

TEST_CASE("sign keeps the sign of zero and rounding ops keep -0") {
  auto x = from_doubles({-0.0, 0.0}, mx::float32);
  auto s = mlx_test::to_vector<float>(mx::sign(x));
  CHECK(std::signbit(s[0]));
  CHECK_FALSE(std::signbit(s[1]));
  auto r = mlx_test::to_vector<float>(mx::round(from_doubles({-0.4, -0.5}, mx::float32)));
  CHECK(r[0] == 0.0f);
  CHECK(std::signbit(r[0]));
  CHECK(std::signbit(r[1]));
}

TEST_CASE("round is half to even; floor and ceil round toward -inf and +inf") {
  for (auto dt : float_dtypes) {
    auto x = from_doubles({0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.25, -3.75}, dt);
    check_all_close(to_doubles(mx::round(x)), {0, 2, 2, -0.0, -2, -2, 3, -4}, 0, 0,
                    label("round", dt));
    check_all_close(to_doubles(mx::floor(x)), {0, 1, 2, -1, -2, -3, 3, -4}, 0, 0,
                    label("floor", dt));
    check_all_close(to_doubles(mx::ceil(x)), {1, 2, 3, -0.0, -1, -2, 4, -3}, 0, 0,
                    label("ceil", dt));
  }
  // Integer rounding is the identity and keeps the dtype.
  auto i = mx::array({-7, 0, 9}, mx::int32);
  auto r = mx::round(i);
  CHECK(r.dtype() == mx::int32);
  CHECK(to_int64s(r) == iv({-7, 0, 9}));
  CHECK(to_int64s(mx::floor(mx::array({-3, 250}, mx::uint8))) == iv({253, 250}));
}

TEST_CASE("erfinv matches known values, is +-inf at +-1 and NaN outside [-1, 1]") {
  auto x = from_doubles({0.5, -0.9, 0.999999, -1e-10, 0.0, 1.0, -1.0, 1.5, -2.0, NaN}, mx::float64);
  std::vector<double> want = {0.4769362762044699,
                              -1.1630871536766742,
                              3.4589107372754988,
                              -8.862269254527580e-11,
                              0.0,
                              Inf,
                              -Inf,
                              NaN,
                              NaN,
                              NaN};
  check_all_close(to_doubles(mx::erfinv(x)), want, 1e-12, 0, "erfinv float64");
  // Round trip in float32: erf(erfinv(y)) == y to float32 precision across (-1, 1).
  Rng rng(3);
  auto y = random_values(64, mx::float32, rng, -0.9999, 0.9999);
  auto back = to_doubles(mx::erf(mx::erfinv(from_doubles(y, mx::float32))));
  check_all_close(back, y, 2e-6, 1e-7, "erf(erfinv(y)) float32");
}

TEST_CASE("sigmoid does not overflow for inputs of large magnitude") {
  auto x = from_doubles({-1000, -100, -20, 20, 100, 1000}, mx::float32);
  auto got = to_doubles(mx::sigmoid(x));
  std::vector<double> want;
  for (double v : {-1000.0, -100.0, -20.0, 20.0, 100.0, 1000.0}) {
    want.push_back(round_to(1 / (1 + std::exp(-v)), mx::float32));
  }
  check_all_close(got, want, 2e-5, 1e-44, "sigmoid extremes");
  CHECK(got[1] > 0);  // exp(-100) / (1 + exp(-100)) is a normal float, not 0
}

TEST_CASE("integer abs, negative, square and bitwise_invert wrap for every integer dtype") {
  Rng rng(5);
  for (auto dt : int_dtypes) {
    auto v = random_ints(40, dt, rng);
    auto a = from_int64s(v, dt);
    std::vector<int64_t> abs_w, neg_w, sq_w, inv_w, sign_w;
    for (auto x : v) {
      uint64_t u = static_cast<uint64_t>(x);
      bool negative = mx::is_signed_integral(dt) && x < 0;
      abs_w.push_back(wrap_bits(negative ? 0 - u : u, dt));
      neg_w.push_back(wrap_bits(0 - u, dt));
      sq_w.push_back(wrap_bits(u * u, dt));
      inv_w.push_back(wrap_bits(~u, dt));
      sign_w.push_back(negative ? -1 : (x != 0 ? 1 : 0));
    }
    CHECK_MESSAGE(to_int64s(mx::abs(a)) == abs_w, label("abs", dt));
    CHECK_MESSAGE(to_int64s(mx::negative(a)) == neg_w, label("negative", dt));
    CHECK_MESSAGE(to_int64s(mx::square(a)) == sq_w, label("square", dt));
    CHECK_MESSAGE(to_int64s(mx::bitwise_invert(a)) == inv_w, label("bitwise_invert", dt));
    CHECK_MESSAGE(to_int64s(mx::sign(a)) == sign_w, label("sign", dt));
    CHECK_MESSAGE(mx::abs(a).dtype() == dt, label("abs dtype", dt));
  }
  // The hand-checked corner: abs(INT_MIN) == INT_MIN, -INT_MIN == INT_MIN.
  auto m = mx::array({std::numeric_limits<int32_t>::min()}, mx::int32);
  CHECK(mx::abs(m).item<int32_t>() == std::numeric_limits<int32_t>::min());
  CHECK(mx::negative(m).item<int32_t>() == std::numeric_limits<int32_t>::min());
  CHECK(mx::square(mx::array(int8_t(16))).item<int8_t>() == 0);
  CHECK(mx::negative(mx::array(uint8_t(1))).item<uint8_t>() == 255);
}

TEST_CASE("bool unary ops: logical_not and bitwise_invert negate; abs, sign, square keep it") {
  auto b = mx::array({true, false});
  CHECK(to_int64s(mx::logical_not(b)) == iv({0, 1}));
  CHECK(to_int64s(mx::bitwise_invert(b)) == iv({0, 1}));
  CHECK(mx::bitwise_invert(b).dtype() == mx::bool_);
  CHECK(to_int64s(mx::sign(b)) == iv({1, 0}));
  CHECK(to_int64s(mx::square(b)) == iv({1, 0}));
  CHECK(to_int64s(mx::abs(b)) == iv({1, 0}));
  CHECK(to_int64s(mx::floor(b)) == iv({1, 0}));
}

TEST_CASE("logical_not treats any nonzero value, NaN and complex parts included, as true") {
  for (auto dt : mx::all_dtypes) {
    if (dt == mx::complex64)
      continue;
    auto x = from_doubles({0, 1, 2}, dt);
    auto out = mx::logical_not(x);
    CHECK(out.dtype() == mx::bool_);
    CHECK_MESSAGE(to_int64s(out) == iv({1, 0, 0}), label("logical_not", dt));
  }
  CHECK(to_int64s(mx::logical_not(from_doubles({NaN, -0.0}, mx::float32))) == iv({0, 1}));
  CHECK(to_int64s(mx::logical_not(complex_array({{0, 0}, {0, 1}, {1, 0}}))) == iv({1, 0, 0}));
}

TEST_CASE("isnan and isinf check both parts of complex values and are false for integers") {
  for (auto dt : float_dtypes) {
    auto x = from_doubles({NaN, Inf, -Inf, 1.0, 0.0}, dt);
    CHECK_MESSAGE(to_int64s(mx::isnan(x)) == iv({1, 0, 0, 0, 0}), label("isnan", dt));
    CHECK_MESSAGE(to_int64s(mx::isinf(x)) == iv({0, 1, 1, 0, 0}), label("isinf", dt));
  }
  auto z = complex_array({{NaN, 0}, {0, NaN}, {Inf, 0}, {0, -Inf}, {1, 2}});
  CHECK(to_int64s(mx::isnan(z)) == iv({1, 1, 0, 0, 0}));
  CHECK(to_int64s(mx::isinf(z)) == iv({0, 0, 1, 1, 0}));
  // The kernel itself is defined for integers too (the op short-circuits to false).
  auto i = mx::array({1, -2, 0}, mx::int16);
  for (auto op : {mx::UnaryOp::IsNan, mx::UnaryOp::IsInf}) {
    mx::array out(i.shape(), mx::bool_, std::make_shared<mx::Unary>(cpu_stream(), op), {i});
    CHECK(to_int64s(out) == iv({0, 0, 0}));
  }
  CHECK(to_int64s(mx::isnan(mx::array({1, 2}, mx::int32))) == iv({0, 0}));
}

TEST_CASE("float unary ops promote integer and bool inputs to float32") {
  auto i = mx::array({1, 4, 9}, mx::int32);
  auto r = mx::sqrt(i);
  CHECK(r.dtype() == mx::float32);
  check_all_close(to_doubles(r), {1, 2, 3}, 0, 0, "sqrt int32");
  CHECK(mx::exp(mx::array({true, false})).dtype() == mx::float32);
  CHECK(mx::sin(mx::array({1}, mx::int64)).dtype() == mx::float32);
  CHECK(mx::sqrt(mx::array({1.0f}, mx::float16)).dtype() == mx::float16);
  CHECK(mx::erf(mx::array({1}, mx::uint8)).dtype() == mx::float32);
}
