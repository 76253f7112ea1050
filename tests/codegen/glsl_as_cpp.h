// Compiles the scalar GLSL helpers of templates/include (math, erf, dtype conversions,
// integer ops) as C++, so their results can be checked against long double references and
// the CPU reference ops without a GPU. Those files are written in the common subset of GLSL
// and C++; this header supplies the few GLSL built-ins they use.
//
// What this cannot show: a GPU may fuse a * b + c into fma, flush f32 subnormals, or round
// division and sqrt within 2.5 ulp instead of exactly; tolerances in the tests leave room
// for that.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#define MLX_GLSL_AS_CPP 1
#define precise

// The GLSL files are included with internal linkage; each test uses only some functions.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"

namespace glsl {

using uint = uint32_t;

inline uint floatBitsToUint(float x) {
  return std::bit_cast<uint>(x);
}
inline float uintBitsToFloat(uint x) {
  return std::bit_cast<float>(x);
}
inline int floatBitsToInt(float x) {
  return std::bit_cast<int>(x);
}
// GLSL's clamp is min(max(x, lo), hi); with NaN either result is allowed, and the callers
// handle NaN themselves.
inline float clamp(float x, float lo, float hi) {
  return std::fmin(std::fmax(x, lo), hi);
}
inline float abs(float x) {
  return std::fabs(x);
}
inline float floor(float x) {
  return std::floor(x);
}
inline float sqrt(float x) {
  return std::sqrt(x);
}
inline bool isnan(float x) {
  return std::isnan(x);
}
inline float fma(float a, float b, float c) {
  return std::fma(a, b, c);  // one rounding, as on a device with DeviceCaps::fma_fused
}

inline void umulExtended(uint a, uint b, uint& hi, uint& lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint>(p >> 32);
  lo = static_cast<uint>(p);
}

struct vec2 {
  float x, y;
  vec2(float a, float b) : x(a), y(b) {}
};
struct uvec4 {
  uint x, y, z, w;
  uvec4(uint a, uint b, uint c, uint d) : x(a), y(b), z(c), w(d) {}
};

// Integers wrap like SPIR-V's (two's complement), without C++'s signed-overflow UB.
template <typename T>
struct Wrap {
  using U = std::make_unsigned_t<T>;
  T v;
  template <typename I>
  explicit Wrap(I x) : v(static_cast<T>(x)) {}
  friend Wrap operator+(Wrap a, Wrap b) {
    return Wrap(static_cast<T>(static_cast<U>(a.v) + static_cast<U>(b.v)));
  }
  friend Wrap operator-(Wrap a, Wrap b) {
    return Wrap(static_cast<T>(static_cast<U>(a.v) - static_cast<U>(b.v)));
  }
  friend Wrap operator*(Wrap a, Wrap b) {
    return Wrap(static_cast<T>(static_cast<U>(a.v) * static_cast<U>(b.v)));
  }
  friend Wrap operator/(Wrap a, Wrap b) {
    return Wrap(a.v / b.v);  // the GLSL code guards division by 0 and MIN / -1
  }
  friend Wrap operator&(Wrap a, Wrap b) {
    return Wrap(a.v & b.v);
  }
  friend Wrap operator<<(Wrap a, Wrap s) {
    return Wrap(static_cast<T>(static_cast<U>(a.v) << s.v));
  }
  friend Wrap operator>>(Wrap a, int s) {
    return Wrap(a.v >> s);
  }
  friend Wrap operator>>(Wrap a, Wrap s) {
    return Wrap(a.v >> s.v);
  }
  Wrap& operator+=(Wrap b) {
    return *this = *this + b;
  }
  Wrap& operator-=(Wrap b) {
    return *this = *this - b;
  }
  Wrap& operator*=(Wrap b) {
    return *this = *this * b;
  }
  friend bool operator==(Wrap a, Wrap b) {
    return a.v == b.v;
  }
  friend bool operator<(Wrap a, Wrap b) {
    return a.v < b.v;
  }
  friend bool operator>(Wrap a, Wrap b) {
    return a.v > b.v;
  }
  friend bool operator<=(Wrap a, Wrap b) {
    return a.v <= b.v;
  }
  friend bool operator>=(Wrap a, Wrap b) {
    return a.v >= b.v;
  }
};

// Internal linkage: several test files include this header.
namespace {
#define MLX_INT64 1
// The order matters (erf.glsl uses math.glsl).
// clang-format off
#include "templates/include/types.glsl"
#include "templates/include/math.glsl"
#include "templates/include/div.glsl"
#include "templates/include/erf.glsl"
// clang-format on
#undef MLX_INT64
}  // namespace

}  // namespace glsl

// One namespace per integer compute configuration: OP_T, signedness, dtype width. 8/16-bit
// dtypes compute in 32 bits, as on the GPU.

#define OP_T Wrap<int32_t>
#define OP_SIGNED 1
#define OP_BITS 8
namespace glsl::ops_i8 {
namespace {
#include "templates/include/int_ops.glsl"
}
}  // namespace glsl::ops_i8
#undef MLX_INT_OPS_GLSL
#undef OP_BITS
#define OP_BITS 16
namespace glsl::ops_i16 {
namespace {
#include "templates/include/int_ops.glsl"
}
}  // namespace glsl::ops_i16
#undef MLX_INT_OPS_GLSL
#undef OP_BITS
#define OP_BITS 32
namespace glsl::ops_i32 {
namespace {
#include "templates/include/int_ops.glsl"
}
}  // namespace glsl::ops_i32
#undef MLX_INT_OPS_GLSL
#undef OP_BITS
#undef OP_T
#define OP_T Wrap<int64_t>
#define OP_BITS 64
namespace glsl::ops_i64 {
namespace {
#include "templates/include/int_ops.glsl"
}
}  // namespace glsl::ops_i64
#undef MLX_INT_OPS_GLSL
#undef OP_BITS
#undef OP_T
#undef OP_SIGNED
#define OP_SIGNED 0
#define OP_T Wrap<uint32_t>
#define OP_BITS 8
namespace glsl::ops_u8 {
namespace {
#include "templates/include/int_ops.glsl"
}
}  // namespace glsl::ops_u8
#undef MLX_INT_OPS_GLSL
#undef OP_BITS
#define OP_BITS 16
namespace glsl::ops_u16 {
namespace {
#include "templates/include/int_ops.glsl"
}
}  // namespace glsl::ops_u16
#undef MLX_INT_OPS_GLSL
#undef OP_BITS
#define OP_BITS 32
namespace glsl::ops_u32 {
namespace {
#include "templates/include/int_ops.glsl"
}
}  // namespace glsl::ops_u32
#undef MLX_INT_OPS_GLSL
#undef OP_BITS
#undef OP_T
#define OP_T Wrap<uint64_t>
#define OP_BITS 64
namespace glsl::ops_u64 {
namespace {
#include "templates/include/int_ops.glsl"
}
}  // namespace glsl::ops_u64
#undef MLX_INT_OPS_GLSL
#undef OP_BITS
#undef OP_T
#undef OP_SIGNED

#pragma GCC diagnostic pop
