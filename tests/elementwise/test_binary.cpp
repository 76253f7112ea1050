// Binary elementwise ops on the CPU: numerics against double/int64 references for every
// dtype each op accepts, and the integer and float edge cases of the documented semantics.
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

using BinaryFn = std::function<mx::array(const mx::array&, const mx::array&)>;

// The dtype 16-bit floats are computed in.
mx::Dtype compute_dtype(mx::Dtype dt) {
  return dt == mx::float16 || dt == mx::bfloat16 ? mx::float32 : dt;
}

double py_fmod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0) {
    return (r < 0) != (b < 0) ? r + b : r;
  }
  return std::isnan(r) ? r : std::copysign(0.0, b);
}

// A primitive node built directly, for kernel behaviour the op layer never reaches.
mx::array binary_node(mx::BinaryOp op, const mx::array& a, const mx::array& b, mx::Dtype out) {
  return mx::array(a.shape(), out, std::make_shared<mx::Binary>(cpu_stream(), op), {a, b});
}

}  // namespace

TEST_CASE("float binary ops match double references for float16, bfloat16, float32, float64") {
  // Reference: the double-precision result on the exact stored inputs, rounded once to the
  // dtype. Tolerance rtol_for(dtype) + atol_for(dtype), as in the unary test.
  struct Case {
    const char* name;
    BinaryFn op;
    std::function<double(double, double, mx::Dtype)> ref;
    double alo, ahi, blo, bhi;
  };
  std::vector<Case> cases = {
      {"add", [](auto& a, auto& b) { return mx::add(a, b); },
       [](double a, double b, mx::Dtype) { return a + b; }, -100, 100, -100, 100},
      {"subtract", [](auto& a, auto& b) { return mx::subtract(a, b); },
       [](double a, double b, mx::Dtype) { return a - b; }, -100, 100, -100, 100},
      {"multiply", [](auto& a, auto& b) { return mx::multiply(a, b); },
       [](double a, double b, mx::Dtype) { return a * b; }, -100, 100, -100, 100},
      {"divide", [](auto& a, auto& b) { return mx::divide(a, b); },
       [](double a, double b, mx::Dtype) { return a / b; }, -100, 100, 0.5, 50},
      {"power", [](auto& a, auto& b) { return mx::power(a, b); },
       [](double a, double b, mx::Dtype) { return std::pow(a, b); }, 0.25, 4, -3, 3},
      {"maximum", [](auto& a, auto& b) { return mx::maximum(a, b); },
       [](double a, double b, mx::Dtype) { return std::max(a, b); }, -10, 10, -10, 10},
      {"minimum", [](auto& a, auto& b) { return mx::minimum(a, b); },
       [](double a, double b, mx::Dtype) { return std::min(a, b); }, -10, 10, -10, 10},
      {"logaddexp", [](auto& a, auto& b) { return mx::logaddexp(a, b); },
       [](double a, double b, mx::Dtype) { return std::log(std::exp(a) + std::exp(b)); }, -20, 20,
       -20, 20},
      {"arctan2", [](auto& a, auto& b) { return mx::arctan2(a, b); },
       [](double a, double b, mx::Dtype) { return std::atan2(a, b); }, -4, 4, -4, 4},
      {"remainder", [](auto& a, auto& b) { return mx::remainder(a, b); },
       [](double a, double b, mx::Dtype) { return py_fmod(a, b); }, -20, 20, -5, 5},
      // floor(a / b) with a / b rounded to the compute dtype (float32 for 16-bit floats)
      // first: that division is part of the definition, and floor would turn a one-ulp
      // difference into a step of 1.
      {"floor_divide", [](auto& a, auto& b) { return mx::floor_divide(a, b); },
       [](double a, double b, mx::Dtype dt) {
         return std::floor(round_to(a / b, compute_dtype(dt)));
       },
       -20, 20, -5, 5},
  };
  Rng rng(21);
  for (auto& c : cases) {
    for (auto dt : float_dtypes) {
      auto a = random_values(48, dt, rng, c.alo, c.ahi);
      auto b = random_values(48, dt, rng, c.blo, c.bhi);
      std::vector<double> want;
      for (size_t i = 0; i < a.size(); ++i) {
        want.push_back(round_to(c.ref(a[i], b[i], dt), dt));
      }
      auto out = c.op(from_doubles(a, dt), from_doubles(b, dt));
      CHECK_MESSAGE(out.dtype() == dt, label(c.name, dt));
      check_all_close(to_doubles(out), want, rtol_for(dt), atol_for(dt), label(c.name, dt));
    }
  }
}

TEST_CASE("complex add, subtract, multiply, divide and power match std::complex<double>") {
  // complex64 runs in float: tolerance 1e-5 of |result| plus 1e-6 absolute (power: 1e-4,
  // since it goes through exp(b log a)).
  using Z = std::complex<double>;
  Rng rng(22);
  auto za = random_complex(24, rng, -3, 3);
  auto zb = random_complex(24, rng, -3, 3);
  auto a = complex_array(za), b = complex_array(zb);
  struct Case {
    const char* name;
    BinaryFn op;
    std::function<Z(Z, Z)> ref;
    double rtol;
  };
  std::vector<Case> cases = {
      {"add", [](auto& x, auto& y) { return mx::add(x, y); }, [](Z x, Z y) { return x + y; }, 1e-5},
      {"subtract", [](auto& x, auto& y) { return mx::subtract(x, y); },
       [](Z x, Z y) { return x - y; }, 1e-5},
      {"multiply", [](auto& x, auto& y) { return mx::multiply(x, y); },
       [](Z x, Z y) { return x * y; }, 1e-5},
      {"divide", [](auto& x, auto& y) { return mx::divide(x, y); }, [](Z x, Z y) { return x / y; },
       1e-5},
      {"power", [](auto& x, auto& y) { return mx::power(x, y); },
       [](Z x, Z y) { return std::pow(x, y); }, 1e-4},
  };
  for (auto& c : cases) {
    std::vector<Z> want;
    for (size_t i = 0; i < za.size(); ++i) {
      want.push_back(c.ref(za[i], zb[i]));
    }
    auto out = c.op(a, b);
    CHECK(out.dtype() == mx::complex64);
    check_complex_close(to_complex(out), want, c.rtol, 1e-6, c.name);
  }
  // Mixed real/complex promotes the real operand.
  auto mixed = to_complex(mx::add(complex_array({{1, 2}}), mx::array(3)));
  CHECK(mixed[0] == Z(4, 2));
}

TEST_CASE("integer add, subtract and multiply wrap modulo 2^bits for every integer dtype") {
  Rng rng(23);
  for (auto dt : int_dtypes) {
    auto va = random_ints(64, dt, rng);
    auto vb = random_ints(64, dt, rng);
    std::vector<int64_t> add_w, sub_w, mul_w;
    for (size_t i = 0; i < va.size(); ++i) {
      auto ua = static_cast<uint64_t>(va[i]), ub = static_cast<uint64_t>(vb[i]);
      add_w.push_back(wrap_bits(ua + ub, dt));
      sub_w.push_back(wrap_bits(ua - ub, dt));
      mul_w.push_back(wrap_bits(ua * ub, dt));
    }
    auto a = from_int64s(va, dt), b = from_int64s(vb, dt);
    CHECK_MESSAGE(to_int64s(mx::add(a, b)) == add_w, label("add", dt));
    CHECK_MESSAGE(to_int64s(mx::subtract(a, b)) == sub_w, label("subtract", dt));
    CHECK_MESSAGE(to_int64s(mx::multiply(a, b)) == mul_w, label("multiply", dt));
  }
  // Hand-checked: int8 127 + 1 == -128, uint8 0 - 1 == 255, int32 65536 * 65536 == 0.
  CHECK(mx::add(mx::array(int8_t(127)), mx::array(int8_t(1))).item<int8_t>() == -128);
  CHECK(mx::subtract(mx::array(uint8_t(0)), mx::array(uint8_t(1))).item<uint8_t>() == 255);
  CHECK(mx::multiply(mx::array(65536), mx::array(65536)).item<int32_t>() == 0);
  CHECK(mx::multiply(mx::array(uint16_t(65535)), mx::array(uint16_t(65535))).item<uint16_t>() == 1);
}

TEST_CASE("integer floor_divide and remainder follow Python semantics for every integer dtype") {
  Rng rng(24);
  for (auto dt : int_dtypes) {
    bool is_signed = mx::is_signed_integral(dt);
    auto va = random_ints(96, dt, rng);
    auto vb = random_ints(96, dt, rng);
    std::vector<int64_t> q_w, r_w;
    for (size_t i = 0; i < va.size(); ++i) {
      int64_t a = va[i], b = vb[i];
      if (b == 0) {
        q_w.push_back(0);
        r_w.push_back(0);
      } else if (!is_signed) {
        auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
        q_w.push_back(wrap_bits(ua / ub, dt));
        r_w.push_back(wrap_bits(ua % ub, dt));
      } else if (b == -1) {
        q_w.push_back(wrap_bits(0 - static_cast<uint64_t>(a), dt));
        r_w.push_back(0);
      } else {
        // Floor division from truncated division: step down when signs differ and the
        // division is inexact.
        int64_t q = a / b, r = a % b;
        if (r != 0 && ((r < 0) != (b < 0))) {
          q -= 1;
          r += b;
        }
        q_w.push_back(q);
        r_w.push_back(r);
      }
    }
    auto a = from_int64s(va, dt), b = from_int64s(vb, dt);
    CHECK_MESSAGE(to_int64s(mx::floor_divide(a, b)) == q_w, label("floor_divide", dt));
    CHECK_MESSAGE(to_int64s(mx::remainder(a, b)) == r_w, label("remainder", dt));
  }
  // Hand-checked Python values: -7 // 2 == -4, -7 % 2 == 1, 7 % -2 == -1, 7 // -2 == -4.
  auto a = mx::array({-7, 7, -7, 7}, mx::int32);
  auto b = mx::array({2, -2, -2, 2}, mx::int32);
  CHECK(to_int64s(mx::floor_divide(a, b)) == iv({-4, -4, 3, 3}));
  CHECK(to_int64s(mx::remainder(a, b)) == iv({1, -1, -1, 1}));
}

TEST_CASE("integer division by zero gives 0 and INT_MIN / -1 wraps to INT_MIN with remainder 0") {
  for (auto dt : signed_dtypes) {
    int bits = mx::size_of(dt) * 8;
    int64_t min = wrap_bits(uint64_t(1) << (bits - 1), dt);
    auto a = from_int64s({min, min, 5, -5, 0}, dt);
    auto b = from_int64s({-1, 0, 0, 0, 0}, dt);
    CHECK_MESSAGE(to_int64s(mx::floor_divide(a, b)) == iv({min, 0, 0, 0, 0}),
                  label("floor_divide", dt));
    CHECK_MESSAGE(to_int64s(mx::remainder(a, b)) == iv({0, 0, 0, 0, 0}), label("remainder", dt));
    auto qr = mx::divmod(a, b);
    CHECK_MESSAGE(to_int64s(qr[0]) == iv({min, 0, 0, 0, 0}), label("divmod q", dt));
    CHECK_MESSAGE(to_int64s(qr[1]) == iv({0, 0, 0, 0, 0}), label("divmod r", dt));
  }
  for (auto dt : {mx::uint8, mx::uint16, mx::uint32, mx::uint64}) {
    auto a = from_int64s({7, 0}, dt);
    auto z = from_int64s({0, 0}, dt);
    CHECK(to_int64s(mx::floor_divide(a, z)) == iv({0, 0}));
    CHECK(to_int64s(mx::remainder(a, z)) == iv({0, 0}));
  }
}

TEST_CASE("integer power is exact by squaring with wrap; negative exponents give 0 except 1, -1") {
  Rng rng(25);
  for (auto dt : int_dtypes) {
    bool is_signed = mx::is_signed_integral(dt);
    std::vector<int64_t> va, vb, want;
    for (int i = 0; i < 48; ++i) {
      int64_t base = static_cast<int64_t>(rng.next() % 13) - (is_signed ? 6 : 0);
      int64_t e = static_cast<int64_t>(rng.next() % 70) - (is_signed ? 4 : 0);
      va.push_back(base);
      vb.push_back(e);
      // Reference: repeated multiplication in uint64 (mod 2^64, hence mod 2^bits).
      uint64_t p = 1;
      if (e < 0) {
        p = base == 1 ? 1 : base == -1 ? ((-e) % 2 ? ~uint64_t(0) : 1) : 0;
      } else {
        for (int64_t k = 0; k < e; ++k)
          p *= static_cast<uint64_t>(base);
      }
      want.push_back(wrap_bits(p, dt));
    }
    auto out = mx::power(from_int64s(va, dt), from_int64s(vb, dt));
    CHECK(out.dtype() == dt);
    CHECK_MESSAGE(to_int64s(out) == want, label("power", dt));
  }
  CHECK(mx::power(mx::array(0), mx::array(0)).item<int32_t>() == 1);
  CHECK(mx::power(mx::array(2), mx::array(31)).item<int32_t>() ==
        std::numeric_limits<int32_t>::min());
  CHECK(mx::power(mx::array(3), mx::array(-2)).item<int32_t>() == 0);
  CHECK(mx::power(mx::array(-1), mx::array(-3)).item<int32_t>() == -1);
}

TEST_CASE("float power follows std::pow, including negative bases and NaN results") {
  auto a = from_doubles({-2, -2, 2, 0, -8, 1}, mx::float32);
  auto b = from_doubles({3, 0.5, -1, -1, 1.0 / 3, NaN}, mx::float32);
  check_all_close(to_doubles(mx::power(a, b)), {-8, NaN, 0.5, Inf, NaN, 1}, 0, 0, "pow");
}

TEST_CASE("shifts by negative amounts or by at least the bit width give 0, or -1 for negative >>") {
  Rng rng(26);
  for (auto dt : int_dtypes) {
    bool is_signed = mx::is_signed_integral(dt);
    int bits = mx::size_of(dt) * 8;
    auto va = random_ints(64, dt, rng);
    std::vector<int64_t> vs, lw, rw;
    for (size_t i = 0; i < va.size(); ++i) {
      int64_t s = static_cast<int64_t>(rng.next() % (bits + 6)) - (is_signed ? 3 : 0);
      vs.push_back(s);
      int64_t a = va[i];
      bool out_of_range = s < 0 || s >= bits;
      lw.push_back(out_of_range ? 0 : wrap_bits(static_cast<uint64_t>(a) << s, dt));
      if (is_signed) {
        // Arithmetic shift == floor(a / 2^s); -1 or 0 once every bit is shifted out.
        rw.push_back(out_of_range ? (a < 0 ? -1 : 0) : (a >> s));
      } else {
        rw.push_back(out_of_range ? 0 : wrap_bits(static_cast<uint64_t>(a) >> s, dt));
      }
    }
    auto a = from_int64s(va, dt), s = from_int64s(vs, dt);
    CHECK_MESSAGE(to_int64s(mx::left_shift(a, s)) == lw, label("left_shift", dt));
    CHECK_MESSAGE(to_int64s(mx::right_shift(a, s)) == rw, label("right_shift", dt));
  }
  // Hand-checked corners.
  CHECK(mx::left_shift(mx::array(1), mx::array(32)).item<int32_t>() == 0);
  CHECK(mx::left_shift(mx::array(1), mx::array(31)).item<int32_t>() ==
        std::numeric_limits<int32_t>::min());
  CHECK(mx::right_shift(mx::array(-8), mx::array(40)).item<int32_t>() == -1);
  CHECK(mx::right_shift(mx::array(-8), mx::array(-1)).item<int32_t>() == -1);
  CHECK(mx::right_shift(mx::array(-8), mx::array(1)).item<int32_t>() == -4);
  CHECK(mx::right_shift(mx::array(uint8_t(200)), mx::array(uint8_t(8))).item<uint8_t>() == 0);
  // bool operands shift as uint8.
  auto bs = mx::left_shift(mx::array(true), mx::array(true));
  CHECK(bs.dtype() == mx::uint8);
  CHECK(bs.item<uint8_t>() == 2);
}

TEST_CASE("bitwise and, or, xor match bit-pattern references for every integer dtype and bool") {
  Rng rng(27);
  for (auto dt : int_dtypes) {
    auto va = random_ints(40, dt, rng);
    auto vb = random_ints(40, dt, rng);
    std::vector<int64_t> aw, ow, xw;
    for (size_t i = 0; i < va.size(); ++i) {
      auto ua = static_cast<uint64_t>(va[i]), ub = static_cast<uint64_t>(vb[i]);
      aw.push_back(wrap_bits(ua & ub, dt));
      ow.push_back(wrap_bits(ua | ub, dt));
      xw.push_back(wrap_bits(ua ^ ub, dt));
    }
    auto a = from_int64s(va, dt), b = from_int64s(vb, dt);
    CHECK_MESSAGE(to_int64s(mx::bitwise_and(a, b)) == aw, label("bitwise_and", dt));
    CHECK_MESSAGE(to_int64s(mx::bitwise_or(a, b)) == ow, label("bitwise_or", dt));
    CHECK_MESSAGE(to_int64s(mx::bitwise_xor(a, b)) == xw, label("bitwise_xor", dt));
  }
  auto t = mx::array({true, true, false, false});
  auto f = mx::array({true, false, true, false});
  CHECK(mx::bitwise_and(t, f).dtype() == mx::bool_);
  CHECK(to_int64s(mx::bitwise_and(t, f)) == iv({1, 0, 0, 0}));
  CHECK(to_int64s(mx::bitwise_or(t, f)) == iv({1, 1, 1, 0}));
  CHECK(to_int64s(mx::bitwise_xor(t, f)) == iv({0, 1, 1, 0}));
}

TEST_CASE("comparisons, maximum and minimum match references for every real dtype") {
  Rng rng(28);
  std::vector<mx::Dtype> dtypes = float_dtypes;
  dtypes.insert(dtypes.end(), int_dtypes.begin(), int_dtypes.end());
  dtypes.push_back(mx::bool_);
  for (auto dt : dtypes) {
    std::vector<double> a, b;
    if (dt == mx::bool_) {
      for (int i = 0; i < 64; ++i) {
        a.push_back(static_cast<double>(rng.next() & 1));
        b.push_back(static_cast<double>(rng.next() & 1));
      }
    } else if (mx::is_integral(dt)) {
      // Small values (exact in double), with ties; the full range is covered by int64 below.
      bool u = mx::is_unsigned(dt);
      a = random_values(64, dt, rng, u ? 0 : -4, 4);
      b = random_values(64, dt, rng, u ? 0 : -4, 4);
    } else {
      a = random_values(64, dt, rng, -3, 3);
      b = random_values(64, dt, rng, -3, 3);
      a[0] = NaN, b[1] = NaN, a[2] = b[2] = NaN, a[3] = b[3] = 1.5, a[4] = Inf, b[5] = -Inf;
    }
    auto xa = from_doubles(a, dt), xb = from_doubles(b, dt);
    auto check_pred = [&](const char* what, mx::array out, auto pred) {
      CHECK(out.dtype() == mx::bool_);
      std::vector<int64_t> want;
      for (size_t i = 0; i < a.size(); ++i)
        want.push_back(pred(a[i], b[i]) ? 1 : 0);
      CHECK_MESSAGE(to_int64s(out) == want, label(what, dt));
    };
    check_pred("equal", mx::equal(xa, xb), [](double x, double y) { return x == y; });
    check_pred("not_equal", mx::not_equal(xa, xb), [](double x, double y) { return x != y; });
    check_pred("less", mx::less(xa, xb), [](double x, double y) { return x < y; });
    check_pred("less_equal", mx::less_equal(xa, xb), [](double x, double y) { return x <= y; });
    check_pred("greater", mx::greater(xa, xb), [](double x, double y) { return x > y; });
    check_pred("greater_equal", mx::greater_equal(xa, xb),
               [](double x, double y) { return x >= y; });
    std::vector<double> mx_w, mn_w;
    for (size_t i = 0; i < a.size(); ++i) {
      bool has_nan = std::isnan(a[i]) || std::isnan(b[i]);
      mx_w.push_back(has_nan ? NaN : std::max(a[i], b[i]));
      mn_w.push_back(has_nan ? NaN : std::min(a[i], b[i]));
    }
    check_all_close(to_doubles(mx::maximum(xa, xb)), mx_w, 0, 0, label("maximum", dt));
    check_all_close(to_doubles(mx::minimum(xa, xb)), mn_w, 0, 0, label("minimum", dt));
  }
  // Full-range 64-bit values, which double cannot hold exactly.
  auto big = mx::array({std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()},
                       {2}, mx::int64);
  auto big1 =
      mx::array({std::numeric_limits<int64_t>::max() - 1, std::numeric_limits<int64_t>::min() + 1},
                {2}, mx::int64);
  CHECK(to_int64s(mx::greater(big, big1)) == iv({1, 0}));
  CHECK(to_int64s(mx::maximum(big, big1)) ==
        iv({std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min() + 1}));
  auto ubig = from_int64s({-1, 0}, mx::uint64);  // 2^64 - 1 and 0
  CHECK(to_int64s(mx::less(from_int64s({-2, 0}, mx::uint64), ubig)) == iv({1, 0}));
}

TEST_CASE("maximum and minimum return NaN when either input is NaN") {
  for (auto dt : float_dtypes) {
    auto a = from_doubles({NaN, 1, NaN, -Inf}, dt);
    auto b = from_doubles({1, NaN, NaN, NaN}, dt);
    check_all_close(to_doubles(mx::maximum(a, b)), {NaN, NaN, NaN, NaN}, 0, 0,
                    label("maximum", dt));
    check_all_close(to_doubles(mx::minimum(a, b)), {NaN, NaN, NaN, NaN}, 0, 0,
                    label("minimum", dt));
  }
}

TEST_CASE("float remainder takes the divisor's sign, is NaN for a zero divisor or inf dividend") {
  for (auto dt : float_dtypes) {
    auto a = from_doubles({5.5, -5.5, 5.5, -5.5, 4, -4, 3, Inf, -5, 5, NaN}, dt);
    auto b = from_doubles({2, 2, -2, -2, 2, 2, 0, 2, Inf, -Inf, 1}, dt);
    auto r = to_doubles(mx::remainder(a, b));
    check_all_close(r, {1.5, 0.5, -0.5, -1.5, 0, 0, NaN, NaN, Inf, -Inf, NaN}, 0, 0,
                    label("remainder", dt));
    CHECK_FALSE(std::signbit(r[5]));  // -4 % 2 == +0, divisor positive
    auto neg_zero =
        to_doubles(mx::remainder(from_doubles({4}, dt, {1}), from_doubles({-2}, dt, {1})));
    CHECK(std::signbit(neg_zero[0]));  // 4 % -2 == -0
    auto q = to_doubles(mx::floor_divide(a, b));
    CHECK(q[0] == 2);
    CHECK(q[1] == -3);
    CHECK(q[6] == Inf);  // 3 // 0 == floor(inf)
  }
}

TEST_CASE("logaddexp is stable for large inputs and handles infinities and NaN") {
  for (auto dt : {mx::float32, mx::float64}) {
    auto a = from_doubles({1000, -1000, -Inf, Inf, -Inf, NaN, 0, 3}, dt);
    auto b = from_doubles({1000, -1000, -Inf, Inf, 2, 1, NaN, -Inf}, dt);
    double l2 = std::log(2.0);
    check_all_close(to_doubles(mx::logaddexp(a, b)),
                    {round_to(1000 + l2, dt), round_to(-1000 + l2, dt), -Inf, Inf, 2, NaN, NaN, 3},
                    rtol_for(dt), 0, label("logaddexp", dt));
  }
  // Integer inputs are promoted to float32.
  auto i = mx::logaddexp(mx::array(0), mx::array(0));
  CHECK(i.dtype() == mx::float32);
  CHECK(i.item<float>() == doctest::Approx(std::log(2.0)).epsilon(1e-6));
}

TEST_CASE("divide gives IEEE infinities and NaN for zero divisors") {
  auto a = from_doubles({1, -1, 0}, mx::float32);
  auto z = from_doubles({0, 0, 0}, mx::float32);
  check_all_close(to_doubles(mx::divide(a, z)), {Inf, -Inf, NaN}, 0, 0, "x / 0");
  // Integer division promotes to float32 first.
  auto d = mx::divide(mx::array(7), mx::array(2));
  CHECK(d.dtype() == mx::float32);
  CHECK(d.item<float>() == 3.5f);
}

TEST_CASE("logical_and and logical_or treat any nonzero value as true and output bool") {
  auto a = from_doubles({0, 0, 2, -3, NaN}, mx::float32);
  auto b = mx::array({0, 5, 0, 1, 0}, mx::int32);
  auto l_and = mx::logical_and(a, b);
  CHECK(l_and.dtype() == mx::bool_);
  CHECK(to_int64s(l_and) == iv({0, 0, 0, 1, 0}));
  CHECK(to_int64s(mx::logical_or(a, b)) == iv({0, 1, 1, 1, 1}));
  auto z = complex_array({{0, 0}, {0, 1}});
  CHECK(to_int64s(mx::logical_or(z, mx::array(false))) == iv({0, 1}));
}

TEST_CASE("bool arithmetic: add is or, subtract is xor, multiply is and, power is a or not b") {
  auto t = mx::array({true, true, false, false});
  auto f = mx::array({true, false, true, false});
  CHECK(mx::add(t, f).dtype() == mx::bool_);
  CHECK(to_int64s(mx::add(t, f)) == iv({1, 1, 1, 0}));
  CHECK(to_int64s(mx::subtract(t, f)) == iv({0, 1, 1, 0}));
  CHECK(to_int64s(mx::multiply(t, f)) == iv({1, 0, 0, 0}));
  CHECK(to_int64s(mx::maximum(t, f)) == iv({1, 1, 1, 0}));
  CHECK(to_int64s(mx::minimum(t, f)) == iv({1, 0, 0, 0}));
  CHECK(to_int64s(mx::power(t, f)) == iv({1, 1, 0, 1}));
  CHECK(to_int64s(mx::floor_divide(t, f)) == iv({1, 0, 0, 0}));
  CHECK(to_int64s(mx::remainder(t, f)) == iv({0, 0, 0, 0}));
}

TEST_CASE("complex comparisons are lexicographic and equality compares both parts") {
  auto a = complex_array({{1, 2}, {1, 2}, {1, 3}, {2, 0}, {NaN, 0}});
  auto b = complex_array({{1, 2}, {1, 3}, {1, 2}, {1, 5}, {NaN, 0}});
  CHECK(to_int64s(mx::equal(a, b)) == iv({1, 0, 0, 0, 0}));
  CHECK(to_int64s(mx::less(a, b)) == iv({0, 1, 0, 0, 0}));
  CHECK(to_int64s(mx::greater_equal(a, b)) == iv({1, 0, 1, 1, 0}));
  auto m = to_complex(mx::maximum(a, b));
  CHECK(m[1] == std::complex<double>(1, 3));
  CHECK(m[3] == std::complex<double>(2, 0));
  CHECK(std::isnan(m[4].real()));
}

TEST_CASE("nan_equal treats NaN as equal to NaN, per part for complex") {
  auto a = from_doubles({NaN, NaN, 1, 2}, mx::float32);
  auto b = from_doubles({NaN, 1, 1, 3}, mx::float32);
  CHECK(to_int64s(binary_node(mx::BinaryOp::NaNEqual, a, b, mx::bool_)) == iv({1, 0, 1, 0}));
  CHECK(to_int64s(mx::equal(a, b)) == iv({0, 0, 1, 0}));
  auto za = complex_array({{NaN, 1}, {NaN, 1}, {1, NaN}});
  auto zb = complex_array({{NaN, 1}, {NaN, 2}, {1, NaN}});
  CHECK(to_int64s(binary_node(mx::BinaryOp::NaNEqual, za, zb, mx::bool_)) == iv({1, 0, 1}));
  auto i = mx::array({1, 2}, mx::int32);
  CHECK(to_int64s(binary_node(mx::BinaryOp::NaNEqual, i, mx::array({1, 3}, mx::int32),
                              mx::bool_)) == iv({1, 0}));
}
