// Helpers for the elementwise tests: dtype lists, rounding a double reference to a dtype,
// building strided views without the shape ops, and comparing against references.
#pragma once

#include <complex>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "mlx/primitives.h"
#include "test_utils.h"

namespace elementwise_test {

namespace mx = mlx::core;
using mlx_test::Rng;

// These tests check the CPU reference backend, whatever GPU the build has.
inline const bool cpu_is_default = [] {
  mx::set_default_device(mx::Device::cpu);
  return true;
}();

inline constexpr double Inf = std::numeric_limits<double>::infinity();
inline constexpr double NaN = std::numeric_limits<double>::quiet_NaN();

// An int64 vector literal usable inside doctest macros (braces alone do not protect commas).
inline std::vector<int64_t> iv(std::initializer_list<int64_t> v) {
  return v;
}

inline mx::Stream cpu_stream() {
  return mx::default_stream(mx::Device::cpu);
}

inline const std::vector<mx::Dtype> float_dtypes = {mx::float16, mx::bfloat16, mx::float32,
                                                    mx::float64};
inline const std::vector<mx::Dtype> int_dtypes = {mx::uint8, mx::uint16, mx::uint32, mx::uint64,
                                                  mx::int8,  mx::int16,  mx::int32,  mx::int64};
inline const std::vector<mx::Dtype> signed_dtypes = {mx::int8, mx::int16, mx::int32, mx::int64};

// The value `v` takes when stored in dtype `dt` (16-bit floats round to nearest-even).
inline double round_to(double v, mx::Dtype dt) {
  return mx::dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return mx::cast_value<double>(mx::cast_value<T>(v));
  });
}

// Reduces an exact integer result modulo 2^bits into dt's range (two's complement wrap),
// computed through uint64 so it is independent of the kernels' helpers.
inline double wrap_to(int64_t v, mx::Dtype dt) {
  int bits = mx::size_of(dt) * 8;
  uint64_t u = static_cast<uint64_t>(v);
  if (bits < 64) {
    u &= (uint64_t(1) << bits) - 1;
  }
  if (mx::is_unsigned(dt)) {
    return static_cast<double>(u);
  }
  if (bits < 64 && (u >> (bits - 1))) {
    return static_cast<double>(static_cast<int64_t>(u) - (int64_t(1) << bits));
  }
  return static_cast<double>(static_cast<int64_t>(u));
}

// Two's complement view of an integer dtype: the low `bits` of u, sign-extended for
// signed types. uint64 values are returned as their bit pattern.
inline int64_t wrap_bits(uint64_t u, mx::Dtype dt) {
  int bits = mx::size_of(dt) * 8;
  if (bits < 64) {
    u &= (uint64_t(1) << bits) - 1;
    if (mx::is_signed_integral(dt) && (u >> (bits - 1))) {
      u |= ~((uint64_t(1) << bits) - 1);
    }
  }
  return static_cast<int64_t>(u);
}

// Element values of an integer or bool array as int64 (uint64 as its bit pattern).
inline std::vector<int64_t> to_int64s(mx::array a) {
  a.eval();
  std::vector<int64_t> out;
  mx::dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      for (auto x : mlx_test::to_vector<T>(a)) {
        out.push_back(static_cast<int64_t>(x));
      }
    } else {
      FAIL("to_int64s needs an integer array, got " << mx::dtype_to_string(a.dtype()));
    }
  });
  return out;
}

// An integer array of dt from int64 values (bit patterns for uint64).
inline mx::array from_int64s(const std::vector<int64_t>& v, mx::Dtype dt) {
  return mx::array(v.begin(), {static_cast<int>(v.size())}, dt);
}

// n random values of integer dtype dt spread over its whole range, plus its extremes,
// 0, 1 and -1 (when representable) at the front.
inline std::vector<int64_t> random_ints(size_t n, mx::Dtype dt, Rng& rng) {
  int bits = mx::size_of(dt) * 8;
  std::vector<int64_t> v;
  if (mx::is_signed_integral(dt)) {
    v = {wrap_bits(uint64_t(1) << (bits - 1), dt), wrap_bits((uint64_t(1) << (bits - 1)) - 1, dt),
         0, 1, -1};
  } else {
    v = {0, 1, wrap_bits(~uint64_t(0), dt)};
  }
  while (v.size() < n) {
    // Mix full-range and small values so both wrap and ordinary cases appear.
    uint64_t r = rng.next();
    v.push_back(wrap_bits(v.size() % 2 ? r : (r % 17), dt) - (v.size() % 4 == 0 ? 8 : 0));
    v.back() = wrap_bits(static_cast<uint64_t>(v.back()), dt);
  }
  return v;
}

inline std::vector<double> round_all(std::vector<double> v, mx::Dtype dt) {
  for (auto& x : v) {
    x = round_to(x, dt);
  }
  return v;
}

// An array of dt holding `vals` (converted with cast_value: 16-bit floats round).
inline mx::array from_doubles(const std::vector<double>& vals, mx::Dtype dt, mx::Shape shape = {}) {
  if (shape.empty() && vals.size() != 1) {
    shape = {static_cast<int>(vals.size())};
  }
  return mx::array(vals.begin(), shape, dt);
}

// A view of `base`'s buffer with arbitrary shape, strides (in elements, may be negative or
// zero) and element offset, made without the shape ops so layout tests do not depend on
// them. The view is an evaluated leaf array.
inline mx::array make_view(mx::array base, mx::Shape shape, mx::Strides strides, int64_t offset) {
  base.eval();
  mx::array view(mx::allocator::malloc(0), shape, base.dtype());
  auto layout = mx::view_layout(shape, strides);
  view.copy_shared_buffer(base, strides, layout.flags, layout.data_size, offset);
  return view;
}

// Random doubles exactly representable in dt (drawn in [lo, hi), then rounded to dt).
inline std::vector<double> random_values(size_t n, mx::Dtype dt, Rng& rng, double lo, double hi) {
  std::vector<double> v(n);
  for (auto& x : v) {
    x = rng.uniform(lo, hi);
    if (mx::is_integral(dt)) {
      x = std::floor(x);
    }
    x = round_to(x, dt);
  }
  return v;
}

// Absolute tolerance used next to rtol_for(): the spacing of dt's smallest subnormals, so
// results that underflow compare sensibly.
inline double atol_for(mx::Dtype dt) {
  if (dt == mx::float16)
    return 6e-8;
  if (dt == mx::bfloat16 || dt == mx::float32 || dt == mx::complex64)
    return 1e-37;
  if (dt == mx::float64)
    return 1e-300;
  return 0.0;
}

inline std::string label(const std::string& what, mx::Dtype dt) {
  return what + " (" + mx::dtype_to_string(dt) + ")";
}

// Element values of a complex64 array, honouring strides.
inline std::vector<std::complex<double>> to_complex(mx::array a) {
  std::vector<std::complex<double>> out;
  for (auto& z : mlx_test::to_vector<mx::complex64_t>(a)) {
    out.emplace_back(z.real(), z.imag());
  }
  return out;
}

// Both parts agree within rtol of |want| plus atol (NaN matches NaN per part).
inline void check_complex_close(const std::vector<std::complex<double>>& got,
                                const std::vector<std::complex<double>>& want, double rtol,
                                double atol, const std::string& what) {
  REQUIRE_MESSAGE(got.size() == want.size(), what);
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok;
    if (std::isnan(want[i].real()) || std::isnan(want[i].imag())) {
      ok = std::isnan(got[i].real()) == std::isnan(want[i].real()) &&
           std::isnan(got[i].imag()) == std::isnan(want[i].imag());
    } else {
      ok = std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i]);
    }
    if (!ok) {
      FAIL_CHECK(what << ": element " << i << " is " << got[i] << ", expected " << want[i]);
      return;
    }
  }
}

inline std::vector<std::complex<double>> random_complex(size_t n, Rng& rng, double lo, double hi) {
  std::vector<std::complex<double>> v(n);
  for (auto& z : v) {
    // Parts rounded to float so the double reference sees exactly the stored inputs.
    z = {static_cast<float>(rng.uniform(lo, hi)), static_cast<float>(rng.uniform(lo, hi))};
  }
  return v;
}

inline mx::array complex_array(const std::vector<std::complex<double>>& v) {
  std::vector<mx::complex64_t> c;
  for (auto& z : v) {
    c.emplace_back(static_cast<float>(z.real()), static_cast<float>(z.imag()));
  }
  return mx::array(c.begin(), {static_cast<int>(c.size())}, mx::complex64);
}

}  // namespace elementwise_test
