// 16-bit float storage types. Arithmetic happens in float32 and each result is rounded to
// nearest-even on store, which is what a GPU kernel computing in f32 does.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace mlx::core {

namespace detail {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

inline uint16_t float_to_half_bits(float f) {
  uint32_t x = float_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xffu) { // inf or nan; keep nan quiet
    return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
  }
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) {
    return static_cast<uint16_t>(sign | 0x7c00u);
  }
  if (e <= 0) { // subnormal or zero in half
    if (e < -10) {
      return static_cast<uint16_t>(sign);
    }
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (half_mant & 1u))) {
      ++half_mant;
    }
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) {
    ++half; // may carry into the exponent, which correctly rounds up to inf
  }
  return static_cast<uint16_t>(half);
}

inline float half_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    if (mant == 0) {
      return bits_float(sign);
    }
    float f = static_cast<float>(mant) * (1.0f / 16777216.0f); // mant * 2^-24
    return sign ? -f : f;
  }
  if (exp == 31) {
    return bits_float(sign | 0x7f800000u | (mant << 13));
  }
  return bits_float(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

inline uint16_t float_to_bfloat_bits(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) { // nan: keep it a quiet nan
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  }
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

inline float bfloat_bits_to_float(uint16_t b) {
  return bits_float(static_cast<uint32_t>(b) << 16);
}

} // namespace detail

struct float16_t {
  uint16_t bits_ = 0;

  float16_t() = default;
  float16_t(float f) : bits_(detail::float_to_half_bits(f)) {}
  float16_t(double d) : float16_t(static_cast<float>(d)) {}
  template <typename T>
    requires std::is_integral_v<T>
  float16_t(T v) : float16_t(static_cast<float>(v)) {}
  operator float() const { return detail::half_bits_to_float(bits_); }

  static float16_t from_bits(uint16_t b) {
    float16_t h;
    h.bits_ = b;
    return h;
  }
};

struct bfloat16_t {
  uint16_t bits_ = 0;

  bfloat16_t() = default;
  bfloat16_t(float f) : bits_(detail::float_to_bfloat_bits(f)) {}
  bfloat16_t(double d) : bfloat16_t(static_cast<float>(d)) {}
  template <typename T>
    requires std::is_integral_v<T>
  bfloat16_t(T v) : bfloat16_t(static_cast<float>(v)) {}
  operator float() const { return detail::bfloat_bits_to_float(bits_); }

  static bfloat16_t from_bits(uint16_t b) {
    bfloat16_t h;
    h.bits_ = b;
    return h;
  }
};

} // namespace mlx::core

template <>
class std::numeric_limits<mlx::core::float16_t> {
 public:
  static constexpr bool is_specialized = true;
  static mlx::core::float16_t lowest() { return mlx::core::float16_t::from_bits(0xfbffu); }
  static mlx::core::float16_t max() { return mlx::core::float16_t::from_bits(0x7bffu); }
  static mlx::core::float16_t min() { return mlx::core::float16_t::from_bits(0x0400u); }
  static mlx::core::float16_t epsilon() { return mlx::core::float16_t::from_bits(0x1400u); }
  static mlx::core::float16_t infinity() { return mlx::core::float16_t::from_bits(0x7c00u); }
  static mlx::core::float16_t quiet_NaN() { return mlx::core::float16_t::from_bits(0x7e00u); }
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
};

template <>
class std::numeric_limits<mlx::core::bfloat16_t> {
 public:
  static constexpr bool is_specialized = true;
  static mlx::core::bfloat16_t lowest() { return mlx::core::bfloat16_t::from_bits(0xff7fu); }
  static mlx::core::bfloat16_t max() { return mlx::core::bfloat16_t::from_bits(0x7f7fu); }
  static mlx::core::bfloat16_t min() { return mlx::core::bfloat16_t::from_bits(0x0080u); }
  static mlx::core::bfloat16_t epsilon() { return mlx::core::bfloat16_t::from_bits(0x3c00u); }
  static mlx::core::bfloat16_t infinity() { return mlx::core::bfloat16_t::from_bits(0x7f80u); }
  static mlx::core::bfloat16_t quiet_NaN() { return mlx::core::bfloat16_t::from_bits(0x7fc0u); }
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
};
