// Scalar definitions of every elementwise op: the reference semantics that the CPU
// backend runs and that GPU kernels reproduce. Each op is total: it is defined for every
// input value of every dtype it accepts (no C++ undefined behaviour, no SIGFPE).
//
// Types
//   Ops see the *compute* type: float for float16/bfloat16 (rounded to nearest-even on
//   store), the storage type otherwise. "int" below means any signed or unsigned integer
//   type; "float" means float/double (and so float16/bfloat16). Each op lists the compute
//   types it `accepts`; the op layer (mlx/ops_elementwise.cpp) promotes or rejects inputs
//   first, so a rejected type reaching a kernel is a programming error and throws.
//
// Integers
//   - add, subtract, multiply, negative, square and integer power wrap modulo 2^bits
//     (two's complement); the arithmetic is done in an unsigned type of at least
//     `unsigned int` width, so nothing overflows. abs(INT_MIN) == INT_MIN.
//   - floor_divide rounds toward -inf; remainder has the sign of the divisor (Python):
//     a == floor_divide(a, b) * b + remainder(a, b). Division by zero gives 0 for both;
//     INT_MIN / -1 wraps to INT_MIN with remainder 0.
//   - power(a, b) with b < 0 is 0, except a == 1 (-> 1) and a == -1 (-> +1 for even b,
//     -1 for odd b). power(0, 0) == 1.
//   - left_shift(a, s) and right_shift of unsigned a are 0 when s < 0 or s >= bits;
//     right_shift of signed a is arithmetic, and for s < 0 or s >= bits gives -1 when
//     a < 0, else 0.
//   - sign is -1/0/1 (0/1 for unsigned); floor, ceil and round are the identity.
// bool
//   add == logical or, subtract == xor, multiply == square == and, maximum == or,
//   minimum == and, floor_divide(a, b) == a && b, remainder == false,
//   power(a, b) == a || !b; sign and abs are the identity; bitwise_invert is logical not.
//   Shifts on bool are done as uint8 (the op layer casts).
// Floats
//   - IEEE / C++ <cmath> semantics: NaN propagates, x / 0 gives +-inf or NaN.
//   - maximum / minimum return NaN when either input is NaN.
//   - floor_divide(a, b) == floor(a / b). remainder(a, b) == fmod(a, b), plus b when the
//     nonzero result's sign differs from b's; a zero result takes b's sign (Python's float
//     %). remainder(a, 0) and remainder(+-inf, b) are NaN; remainder(-5, inf) == inf.
//   - round is half-to-even (nearbyint in the default rounding mode).
//   - sign(NaN) == NaN, sign(+-0) == +-0.
//   - sigmoid(x) = 1 / (1 + exp(-x)) for x >= 0 and exp(x) / (1 + exp(x)) otherwise, so
//     neither branch overflows.
//   - logaddexp(a, b) = max + log1p(exp(min - max)); NaN if either is NaN; when max is
//     +-inf the result is max (so both -inf gives -inf and both +inf gives +inf).
//   - erfinv(y): +-inf at y == +-1, NaN for |y| > 1 or NaN; otherwise Giles' polynomial
//     estimate refined by two Halley steps in double, so it is accurate to double precision
//     before rounding to the output type.
//   - arctan2 == std::atan2.
// Complex (complex64)
//   - add, subtract, multiply, divide, power, sqrt, exp, log, log10, sin..arctanh, negative,
//     square: std::complex. expm1 = exp(z) - 1, log1p = log(1 + z),
//     log2 = log(z) / log(2), rsqrt = 1 / sqrt(z), sigmoid = 1 / (1 + exp(-z)).
//   - abs(z) == (|z|, 0) (the op casts it to float32), sign(z) == z / |z| (0 for 0).
//   - Ordering (less, greater, maximum, minimum) is lexicographic: real part first, then
//     imaginary; maximum/minimum return an input with a NaN part if there is one.
//   - is_nan / is_inf check either part. floor, ceil, round, erf, erfinv, remainder,
//     floor_divide, logaddexp, arctan2 and bitwise ops do not accept complex.
// Predicates and logic
//   - Comparisons, logical_and/or/not, is_nan, is_inf and nan_equal output bool.
//   - logical ops treat any nonzero value as true (for complex: either part nonzero; NaN is
//     nonzero).
//   - nan_equal is equal except that NaN == NaN (per part for complex).
//   - is_nan / is_inf of integers and bool are false.
// Select
//   - where(c, x, y) is c ? x : y, element by element; c is bool.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "mlx/dtype_utils.h"

namespace mlx::core::cpu::elementwise {

// ---- Type classes of compute types --------------------------------------------------------

template <typename C>
inline constexpr bool is_bool_c = std::is_same_v<C, bool>;
template <typename C>
inline constexpr bool is_int_c = std::is_integral_v<C> && !is_bool_c<C>;
template <typename C>
inline constexpr bool is_float_c = std::is_floating_point_v<C>;
template <typename C>
inline constexpr bool is_complex_c = std::is_same_v<C, complex64_t>;
template <typename C>
inline constexpr bool is_real_c = !is_complex_c<C>;
template <typename C>
inline constexpr bool is_int_or_bool_c = std::is_integral_v<C>;
template <typename C>
inline constexpr bool is_inexact_c = is_float_c<C> || is_complex_c<C>;
template <typename C>
inline constexpr bool is_any_c = true;

using cfloat = std::complex<float>;

// ---- Integer helpers: wrapping arithmetic without undefined behaviour ---------------------

// An unsigned type at least as wide as `unsigned int`, so arithmetic on it never promotes
// to (signed) int, and wraps modulo 2^bits. Converting back to T is modular (C++20).
template <typename T>
using wrap_t =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <typename T>
T wrapping_add(T a, T b) {
  using U = wrap_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <typename T>
T wrapping_sub(T a, T b) {
  using U = wrap_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}
template <typename T>
T wrapping_mul(T a, T b) {
  using U = wrap_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}
template <typename T>
T wrapping_neg(T a) {
  return wrapping_sub(T(0), a);
}

template <typename T>
constexpr int bit_width_of() {
  return static_cast<int>(sizeof(T) * 8);
}

// True when a shift amount is negative or at least the bit width.
template <typename T>
bool shift_out_of_range(T s) {
  if constexpr (std::is_signed_v<T>) {
    if (s < 0) {
      return true;
    }
  }
  return static_cast<uint64_t>(s) >= static_cast<uint64_t>(bit_width_of<T>());
}

template <typename T>
T int_power(T base, T exponent) {
  if constexpr (std::is_signed_v<T>) {
    if (exponent < 0) {
      if (base == 1) {
        return 1;
      }
      if (base == -1) {
        return (exponent & 1) ? T(-1) : T(1);
      }
      return 0;
    }
  }
  using U = wrap_t<T>;
  U result = 1;
  U b = static_cast<U>(base);
  auto e = static_cast<std::make_unsigned_t<T>>(exponent);
  while (e) {
    if (e & 1u) {
      result = static_cast<U>(result * b);
    }
    b = static_cast<U>(b * b);
    e = static_cast<decltype(e)>(e >> 1);
  }
  return static_cast<T>(result);
}

// ---- Shared scalar helpers ------------------------------------------------------------------

template <typename C>
bool is_nonzero(C x) {
  if constexpr (is_complex_c<C>) {
    return x.real() != 0 || x.imag() != 0;
  } else if constexpr (is_bool_c<C>) {
    return x;
  } else {
    return x != C(0);
  }
}

template <typename C>
bool has_nan(C x) {
  if constexpr (is_complex_c<C>) {
    return std::isnan(x.real()) || std::isnan(x.imag());
  } else if constexpr (is_float_c<C>) {
    return std::isnan(x);
  } else {
    return false;
  }
}

// a < b; lexicographic (real, then imaginary) for complex.
template <typename C>
bool less_than(C a, C b) {
  if constexpr (is_complex_c<C>) {
    return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
  } else {
    return a < b;
  }
}
template <typename C>
bool less_equal_than(C a, C b) {
  if constexpr (is_complex_c<C>) {
    return a.real() < b.real() || (a.real() == b.real() && a.imag() <= b.imag());
  } else {
    return a <= b;
  }
}

// erfinv in double: Giles (2010) single-precision polynomial as the starting point, then
// Halley steps on erf(x) - y (using erfc near +-1, where erf loses the digits).
inline double erfinv_double(double y) {
  if (std::isnan(y) || y < -1.0 || y > 1.0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (y == 1.0 || y == -1.0) {
    return y * std::numeric_limits<double>::infinity();
  }
  if (y == 0.0) {
    return y;  // keeps the sign of zero
  }
  double w = -std::log((1.0 - y) * (1.0 + y));
  double p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  // Work on |y| so that erfc's residual form applies to both tails.
  double ay = std::abs(y);
  double x = std::abs(p * y);
  const double two_over_sqrt_pi = 1.1283791670955126;
  for (int i = 0; i < 2; ++i) {
    // erf(x) - ay, written as (1 - ay) - erfc(x) when ay > 0.5 (1 - ay is then exact).
    double r = ay <= 0.5 ? std::erf(x) - ay : (1.0 - ay) - std::erfc(x);
    double d = two_over_sqrt_pi * std::exp(-x * x);
    if (d == 0.0) {
      break;
    }
    x -= r / (d + x * r);  // Halley: f / (f' - f f'' / (2 f')) with f'' = -2 x f'
  }
  return y < 0 ? -x : x;
}

// ---- Unary ops -----------------------------------------------------------------------------
// Each op: `accepts<C>` (compute types it is defined for) and `operator()(C) -> C or bool`.

struct Abs {
  template <typename C>
  static constexpr bool accepts = is_any_c<C>;
  template <typename C>
  C operator()(C x) const {
    if constexpr (is_complex_c<C>) {
      return C(std::abs(cfloat(x)), 0.0f);
    } else if constexpr (is_bool_c<C> || std::is_unsigned_v<C>) {
      return x;
    } else if constexpr (is_int_c<C>) {
      return x < 0 ? wrapping_neg(x) : x;
    } else {
      return std::abs(x);
    }
  }
};

struct Negative {
  template <typename C>
  static constexpr bool accepts = !is_bool_c<C>;
  template <typename C>
  C operator()(C x) const {
    if constexpr (is_int_c<C>) {
      return wrapping_neg(x);
    } else {
      return C(-x);
    }
  }
};

struct Sign {
  template <typename C>
  static constexpr bool accepts = is_any_c<C>;
  template <typename C>
  C operator()(C x) const {
    if constexpr (is_complex_c<C>) {
      if (x.real() == 0 && x.imag() == 0) {
        return x;
      }
      return C(cfloat(x) / std::abs(cfloat(x)));
    } else if constexpr (is_bool_c<C> || std::is_unsigned_v<C>) {
      return x != 0 ? C(1) : C(0);
    } else if constexpr (is_int_c<C>) {
      return static_cast<C>((x > 0) - (x < 0));
    } else {
      return x > 0 ? C(1) : (x < 0 ? C(-1) : x);  // zero keeps its sign, NaN stays NaN
    }
  }
};

struct Square {
  template <typename C>
  static constexpr bool accepts = is_any_c<C>;
  template <typename C>
  C operator()(C x) const {
    if constexpr (is_bool_c<C>) {
      return x;
    } else if constexpr (is_int_c<C>) {
      return wrapping_mul(x, x);
    } else {
      return C(x * x);
    }
  }
};

// Float/complex functions with a std:: overload for both real and complex arguments.
#define MLX_CPU_INEXACT_UNARY(Name, expr)            \
  struct Name {                                      \
    template <typename C>                            \
    static constexpr bool accepts = is_inexact_c<C>; \
    template <typename C>                            \
    C operator()(C x) const {                        \
      if constexpr (is_complex_c<C>) {               \
        cfloat z = x;                                \
        return C(expr(z));                           \
      } else {                                       \
        return expr(x);                              \
      }                                              \
    }                                                \
  };
MLX_CPU_INEXACT_UNARY(Sqrt, std::sqrt)
MLX_CPU_INEXACT_UNARY(Exp, std::exp)
MLX_CPU_INEXACT_UNARY(Log, std::log)
MLX_CPU_INEXACT_UNARY(Log10, std::log10)
MLX_CPU_INEXACT_UNARY(Sin, std::sin)
MLX_CPU_INEXACT_UNARY(Cos, std::cos)
MLX_CPU_INEXACT_UNARY(Tan, std::tan)
MLX_CPU_INEXACT_UNARY(ArcSin, std::asin)
MLX_CPU_INEXACT_UNARY(ArcCos, std::acos)
MLX_CPU_INEXACT_UNARY(ArcTan, std::atan)
MLX_CPU_INEXACT_UNARY(Sinh, std::sinh)
MLX_CPU_INEXACT_UNARY(Cosh, std::cosh)
MLX_CPU_INEXACT_UNARY(Tanh, std::tanh)
MLX_CPU_INEXACT_UNARY(ArcSinh, std::asinh)
MLX_CPU_INEXACT_UNARY(ArcCosh, std::acosh)
MLX_CPU_INEXACT_UNARY(ArcTanh, std::atanh)
#undef MLX_CPU_INEXACT_UNARY

struct Rsqrt {
  template <typename C>
  static constexpr bool accepts = is_inexact_c<C>;
  template <typename C>
  C operator()(C x) const {
    if constexpr (is_complex_c<C>) {
      return C(cfloat(1.0f) / std::sqrt(cfloat(x)));
    } else {
      return C(1) / std::sqrt(x);
    }
  }
};

struct Expm1 {
  template <typename C>
  static constexpr bool accepts = is_inexact_c<C>;
  template <typename C>
  C operator()(C x) const {
    if constexpr (is_complex_c<C>) {
      return C(std::exp(cfloat(x)) - 1.0f);
    } else {
      return std::expm1(x);
    }
  }
};

struct Log1p {
  template <typename C>
  static constexpr bool accepts = is_inexact_c<C>;
  template <typename C>
  C operator()(C x) const {
    if constexpr (is_complex_c<C>) {
      return C(std::log(1.0f + cfloat(x)));
    } else {
      return std::log1p(x);
    }
  }
};

struct Log2 {
  template <typename C>
  static constexpr bool accepts = is_inexact_c<C>;
  template <typename C>
  C operator()(C x) const {
    if constexpr (is_complex_c<C>) {
      return C(std::log(cfloat(x)) / std::log(2.0f));
    } else {
      return std::log2(x);
    }
  }
};

struct Sigmoid {
  template <typename C>
  static constexpr bool accepts = is_inexact_c<C>;
  template <typename C>
  C operator()(C x) const {
    if constexpr (is_complex_c<C>) {
      return C(1.0f / (1.0f + std::exp(-cfloat(x))));
    } else {
      if (x >= 0) {
        return C(1) / (C(1) + std::exp(-x));
      }
      C e = std::exp(x);  // x < 0 or NaN: exp cannot overflow here
      return e / (C(1) + e);
    }
  }
};

struct Erf {
  template <typename C>
  static constexpr bool accepts = is_float_c<C>;
  template <typename C>
  C operator()(C x) const {
    return std::erf(x);
  }
};

struct ErfInv {
  template <typename C>
  static constexpr bool accepts = is_float_c<C>;
  template <typename C>
  C operator()(C x) const {
    return static_cast<C>(erfinv_double(static_cast<double>(x)));
  }
};

// Rounding ops: identity on integers and bool.
#define MLX_CPU_ROUNDING_UNARY(Name, expr)        \
  struct Name {                                   \
    template <typename C>                         \
    static constexpr bool accepts = is_real_c<C>; \
    template <typename C>                         \
    C operator()(C x) const {                     \
      if constexpr (is_float_c<C>) {              \
        return expr(x);                           \
      } else {                                    \
        return x;                                 \
      }                                           \
    }                                             \
  };
MLX_CPU_ROUNDING_UNARY(Floor, std::floor)
MLX_CPU_ROUNDING_UNARY(Ceil, std::ceil)
MLX_CPU_ROUNDING_UNARY(Round, std::nearbyint)
#undef MLX_CPU_ROUNDING_UNARY

struct LogicalNot {
  template <typename C>
  static constexpr bool accepts = is_any_c<C>;
  template <typename C>
  bool operator()(C x) const {
    return !is_nonzero(x);
  }
};

struct BitwiseInvert {
  template <typename C>
  static constexpr bool accepts = is_int_or_bool_c<C>;
  template <typename C>
  C operator()(C x) const {
    if constexpr (is_bool_c<C>) {
      return !x;
    } else {
      return static_cast<C>(~static_cast<wrap_t<C>>(x));
    }
  }
};

struct IsNan {
  template <typename C>
  static constexpr bool accepts = is_any_c<C>;
  template <typename C>
  bool operator()(C x) const {
    return has_nan(x);
  }
};

struct IsInf {
  template <typename C>
  static constexpr bool accepts = is_any_c<C>;
  template <typename C>
  bool operator()(C x) const {
    if constexpr (is_complex_c<C>) {
      return std::isinf(x.real()) || std::isinf(x.imag());
    } else if constexpr (is_float_c<C>) {
      return std::isinf(x);
    } else {
      return false;
    }
  }
};

// ---- Binary ops ----------------------------------------------------------------------------

struct Add {
  template <typename C>
  static constexpr bool accepts = is_any_c<C>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_bool_c<C>) {
      return a || b;
    } else if constexpr (is_int_c<C>) {
      return wrapping_add(a, b);
    } else {
      return C(a + b);
    }
  }
};

struct Subtract {
  template <typename C>
  static constexpr bool accepts = is_any_c<C>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_bool_c<C>) {
      return a != b;
    } else if constexpr (is_int_c<C>) {
      return wrapping_sub(a, b);
    } else {
      return C(a - b);
    }
  }
};

struct Multiply {
  template <typename C>
  static constexpr bool accepts = is_any_c<C>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_bool_c<C>) {
      return a && b;
    } else if constexpr (is_int_c<C>) {
      return wrapping_mul(a, b);
    } else {
      return C(a * b);
    }
  }
};

// Only produced for float and complex types (the op promotes integers first).
struct Divide {
  template <typename C>
  static constexpr bool accepts = is_inexact_c<C>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_complex_c<C>) {
      return C(cfloat(a) / cfloat(b));
    } else {
      return a / b;
    }
  }
};

struct FloorDivide {
  template <typename C>
  static constexpr bool accepts = is_real_c<C>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_bool_c<C>) {
      return a && b;
    } else if constexpr (is_float_c<C>) {
      return std::floor(a / b);
    } else {
      if (b == 0) {
        return 0;
      }
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) {
          return wrapping_neg(a);  // INT_MIN / -1 wraps to INT_MIN
        }
        C q = static_cast<C>(a / b);
        C r = static_cast<C>(a % b);
        return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<C>(q - 1) : q;
      } else {
        return static_cast<C>(a / b);
      }
    }
  }
};

struct Remainder {
  template <typename C>
  static constexpr bool accepts = is_real_c<C>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_bool_c<C>) {
      return false;
    } else if constexpr (is_float_c<C>) {
      C r = std::fmod(a, b);
      if (r != 0) {
        if ((r < 0) != (b < 0)) {
          r += b;
        }
        return r;  // also NaN (x % 0, inf % x, NaN inputs)
      }
      return std::copysign(C(0), b);
    } else {
      if (b == 0) {
        return 0;
      }
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) {
          return 0;  // avoids INT_MIN % -1, which traps
        }
        C r = static_cast<C>(a % b);
        // |r| < |b| with opposite signs, so r + b cannot overflow.
        return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<C>(r + b) : r;
      } else {
        return static_cast<C>(a % b);
      }
    }
  }
};

struct Power {
  template <typename C>
  static constexpr bool accepts = is_any_c<C>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_bool_c<C>) {
      return a || !b;
    } else if constexpr (is_int_c<C>) {
      return int_power(a, b);
    } else if constexpr (is_complex_c<C>) {
      return C(std::pow(cfloat(a), cfloat(b)));
    } else {
      return std::pow(a, b);
    }
  }
};

struct Maximum {
  template <typename C>
  static constexpr bool accepts = is_any_c<C>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_bool_c<C>) {
      return a || b;
    } else {
      if (has_nan(a)) {
        return a;
      }
      if (has_nan(b)) {
        return b;
      }
      return less_than(a, b) ? b : a;
    }
  }
};

struct Minimum {
  template <typename C>
  static constexpr bool accepts = is_any_c<C>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_bool_c<C>) {
      return a && b;
    } else {
      if (has_nan(a)) {
        return a;
      }
      if (has_nan(b)) {
        return b;
      }
      return less_than(b, a) ? b : a;
    }
  }
};

#define MLX_CPU_PREDICATE(Name, expr)            \
  struct Name {                                  \
    template <typename C>                        \
    static constexpr bool accepts = is_any_c<C>; \
    template <typename C>                        \
    bool operator()(C a, C b) const {            \
      return expr;                               \
    }                                            \
  };
MLX_CPU_PREDICATE(Equal, a == b)
MLX_CPU_PREDICATE(NotEqual, a != b)
MLX_CPU_PREDICATE(Less, less_than(a, b))
MLX_CPU_PREDICATE(LessEqual, less_equal_than(a, b))
MLX_CPU_PREDICATE(Greater, less_than(b, a))
MLX_CPU_PREDICATE(GreaterEqual, less_equal_than(b, a))
MLX_CPU_PREDICATE(LogicalAnd, is_nonzero(a) && is_nonzero(b))
MLX_CPU_PREDICATE(LogicalOr, is_nonzero(a) || is_nonzero(b))
#undef MLX_CPU_PREDICATE

struct NaNEqual {
  template <typename C>
  static constexpr bool accepts = is_any_c<C>;
  template <typename C>
  bool operator()(C a, C b) const {
    if constexpr (is_complex_c<C>) {
      return (*this)(a.real(), b.real()) && (*this)(a.imag(), b.imag());
    } else if constexpr (is_float_c<C>) {
      return a == b || (std::isnan(a) && std::isnan(b));
    } else {
      return a == b;
    }
  }
};

struct LogAddExp {
  template <typename C>
  static constexpr bool accepts = is_float_c<C>;
  template <typename C>
  C operator()(C a, C b) const {
    if (std::isnan(a) || std::isnan(b)) {
      return std::numeric_limits<C>::quiet_NaN();
    }
    C hi = a < b ? b : a;
    C lo = a < b ? a : b;
    if (std::isinf(hi)) {
      return hi;
    }
    return hi + std::log1p(std::exp(lo - hi));
  }
};

struct ArcTan2 {
  template <typename C>
  static constexpr bool accepts = is_float_c<C>;
  template <typename C>
  C operator()(C a, C b) const {
    return std::atan2(a, b);
  }
};

#define MLX_CPU_BITWISE(Name, op)                                                      \
  struct Name {                                                                        \
    template <typename C>                                                              \
    static constexpr bool accepts = is_int_or_bool_c<C>;                               \
    template <typename C>                                                              \
    C operator()(C a, C b) const {                                                     \
      if constexpr (is_bool_c<C>) {                                                    \
        return static_cast<bool>(a op b);                                              \
      } else {                                                                         \
        return static_cast<C>(static_cast<wrap_t<C>>(a) op static_cast<wrap_t<C>>(b)); \
      }                                                                                \
    }                                                                                  \
  };
MLX_CPU_BITWISE(BitwiseAnd, &)
MLX_CPU_BITWISE(BitwiseOr, |)
MLX_CPU_BITWISE(BitwiseXor, ^)
#undef MLX_CPU_BITWISE

struct LeftShift {
  template <typename C>
  static constexpr bool accepts = is_int_c<C>;
  template <typename C>
  C operator()(C a, C s) const {
    if (shift_out_of_range(s)) {
      return 0;
    }
    return static_cast<C>(static_cast<wrap_t<C>>(static_cast<wrap_t<C>>(a) << s));
  }
};

struct RightShift {
  template <typename C>
  static constexpr bool accepts = is_int_c<C>;
  template <typename C>
  C operator()(C a, C s) const {
    if (shift_out_of_range(s)) {
      if constexpr (std::is_signed_v<C>) {
        return a < 0 ? C(-1) : C(0);
      } else {
        return 0;
      }
    }
    return static_cast<C>(a >> s);  // arithmetic for negative signed values (C++20)
  }
};

}  // namespace mlx::core::cpu::elementwise
