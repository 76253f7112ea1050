// arange's float arithmetic, shared by the CPU reference (backend/cpu/arange.cpp) and the
// Vulkan launch (backend/vulkan/random.cpp, whose kernel templates/arange.glsl repeats
// arange_float_value step for step), so both devices give the same bits.
//
// Element i of a float32, float16 or bfloat16 arange is start + i * step computed in
// float-float arithmetic and rounded once to float32 (then to the 16-bit type, as a double
// -> half conversion goes through float32). A GPU has no double in general, and a float32
// product i * step drifts by up to an ulp; this form is exact but for the tiny low parts
// (relative error below 2^-44 before the final rounding), so it gives the float32 nearest
// start + i * step, the value the double formula gives, except within 2^-44 of a rounding
// midpoint.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace mlx::core {

// start = s_hi + s_lo and step = d_a + d_b + d_lo (approximately: each low part is rounded),
// with d_a holding the top 12 significant bits of float(step) and d_b the other 12.
struct ArangeFloatSplit {
  float s_hi, s_lo, d_a, d_b, d_lo;
};

inline ArangeFloatSplit arange_float_split(double start, double step) {
  ArangeFloatSplit p;
  p.s_hi = static_cast<float>(start);
  p.s_lo = std::isfinite(p.s_hi) ? static_cast<float>(start - static_cast<double>(p.s_hi)) : 0.0f;
  float d_hi = static_cast<float>(step);
  if (std::isfinite(d_hi)) {
    p.d_lo = static_cast<float>(step - static_cast<double>(d_hi));
    p.d_a = std::bit_cast<float>(std::bit_cast<uint32_t>(d_hi) & 0xfffff000u);
    p.d_b = d_hi - p.d_a;  // exact: the low 12 bits of the significand
  } else {
    p.d_lo = 0.0f;
    p.d_a = d_hi;
    p.d_b = 0.0f;
  }
  return p;
}

namespace arange_detail {

// Knuth's TwoSum: s + e == a + b exactly. volatile keeps each operation a single rounded
// float operation (no contraction or reassociation), as `precise` does in the kernel.
inline void two_sum(float a, float b, float& s, float& e) {
  volatile float sum = a + b;
  volatile float bb = sum - a;
  volatile float t = sum - bb;
  e = (a - t) + (b - bb);
  s = sum;
}

}  // namespace arange_detail

// Element i (< 2^31) of a float arange: i splits into pieces of at most 11 bits, whose
// products with d_a and d_b (12 bits each) are exact; TwoSum gathers them with i * d_lo,
// s_hi and s_lo in this order, and the sum of the carried errors is added last.
inline float arange_float_value(const ArangeFloatSplit& p, uint32_t i) {
  float i0 = static_cast<float>(i & 0x7ffu);
  float i1 = static_cast<float>(i & 0x3ff800u);
  float i2 = static_cast<float>(i & 0x7fc00000u);
  volatile float q = static_cast<float>(i) * p.d_lo;
  const float t[9] = {i2 * p.d_a, i2 * p.d_b, i1 * p.d_a, i1 * p.d_b, i0 * p.d_a,
                      i0 * p.d_b, q,          p.s_hi,     p.s_lo};
  float s = t[0];
  volatile float e = 0.0f;
  for (int k = 1; k < 9; ++k) {
    float err;
    arange_detail::two_sum(s, t[k], s, err);
    e = e + err;
  }
  float r = s + e;
  return std::isinf(s) ? s : r;  // an overflowing sum is inf, not inf - inf
}

}  // namespace mlx::core
