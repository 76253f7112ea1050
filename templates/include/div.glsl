// Correctly rounded f32 division (m_div), in the same GLSL/C++ common subset as math.glsl,
// which must come first (include/ops.glsl; tests/codegen/glsl_as_cpp.h): Vulkan's own
// division is only within 2.5 ulp. Two ways to the CPU's bits, by device (m_div below).
#ifndef MLX_DIV_GLSL
#define MLX_DIV_GLSL

#if MLX_MATH_DIV
// ---- division -----------------------------------------------------------------------------

// The significand of a correctly rounded quotient: round(r / mb * 2^23) for r in [mb, 2 mb)
// (24-bit significands, so the result is in [2^23, 2^24]), given an estimate q within a few
// units of it. The remainder r * 2^23 - q * mb is below 2^31 in magnitude for such a q,
// so 32-bit arithmetic that wraps gives it exactly; it moves q to the floor of the
// quotient and decides the rounding (to nearest, ties to even).
uint m_div_significand(uint r, uint mb, uint q) {
  int rem = int((r << 23) - q * mb);
  // The estimate's error in whole units; the float division may be one off near an integer,
  // which the two steps below absorb.
  int d = int(floor(float(rem) / float(mb)));
  q = uint(int(q) + d);
  rem -= d * int(mb);
  if (rem < 0) {
    q -= 1u;
    rem += int(mb);
  }
  if (rem >= int(mb)) {
    q += 1u;
    rem -= int(mb);
  }
  uint twice = uint(rem) << 1;
  if (twice > mb || (twice == mb && (q & 1u) != 0u)) {
    q += 1u;
  }
  return q;
}

// a / b correctly rounded on any device. Vulkan's division is only within 2.5 ulp (NVIDIA's
// is not correctly rounded, and gives 0 for |b| > 2^126), and floor(a / b) turns one ulp
// into a whole unit. A float correction with an exact residual needs a fused multiply-add
// (without fma(), NVIDIA's compiler simplified it away; Vulkan does not promise that fma()
// is fused); integer arithmetic works everywhere: the hardware quotient of the two
// significands is only an estimate, which m_div_significand corrects with an exact integer
// remainder. (This replaced a 25-step long division, which made every division-heavy kernel
// compute-bound: exact GELU on an H200 4298 -> 2260 us, docs/compile.md.) Zero, infinite,
// NaN and subnormal operands, and subnormal results, go to the hardware division (GPUs
// flush subnormals anyway).
float m_div_int(float a, float b) {
  uint ua = floatBitsToUint(a);
  uint ub = floatBitsToUint(b);
  int ea = int((ua >> 23) & 0xffu);
  int eb = int((ub >> 23) & 0xffu);
  if (ea == 0 || ea == 255 || eb == 0 || eb == 255) {
    if (eb >= 253 && eb < 255) { // keep the divisor below 2^126 (inf / 3e38 must stay inf)
      a *= 0.25f;
      b *= 0.25f;
    }
    return a / b;
  }
  uint sign = (ua ^ ub) & 0x80000000u;
  uint ma = (ua & 0x007fffffu) | 0x00800000u;
  uint mb = (ub & 0x007fffffu) | 0x00800000u;
  int e = ea - eb + 127; // biased exponent of the quotient
  uint r = ma;
  if (r < mb) {
    r = r << 1;
    e -= 1;
  }
  // r / mb is in [1, 2): its float quotient times 2^23 is within a few units of the result.
  uint mant = m_div_significand(r, mb, uint(float(r) / float(mb) * 8388608.0f));
  if (mant == 0x01000000u) {
    mant = mant >> 1;
    e += 1;
  }
  if (e >= 255) {
    return uintBitsToFloat(sign | 0x7f800000u);
  }
  if (e <= 0) {
    return a / b;
  }
  return uintBitsToFloat(sign | (uint(e) << 23) | (mant & 0x007fffffu));
}

// a / b correctly rounded where fma() is one rounding (MLX_FMA_FUSED, DeviceCaps::fma_fused:
// drivers verified by tests/gpu_diff's division test): the reciprocal refined by a Newton
// step, then the quotient corrected by its exact remainder (Markstein), six instructions.
// Valid while 1 / b, the quotient and the remainder (about ulp(a)) are normal: m_div keeps
// the other operands on m_div_int. Exact GELU on an H200: 2267 -> 1433 us against
// m_div_int (docs/compile.md). Lavapipe's fma is not one rounding.
float m_div_fma(float a, float b) {
  float y = 1.0f / b;
  precise float e = fma(-b, y, 1.0f);
  precise float y1 = fma(e, y, y);
  precise float q = a * y1;
  precise float r = fma(-b, q, a);
  return fma(r, y1, q);
}

#ifndef MLX_FMA_FUSED
#define MLX_FMA_FUSED 0
#endif

float m_div(float a, float b) {
#if MLX_FMA_FUSED
  int ea = int((floatBitsToUint(a) >> 23) & 0xffu);
  int eb = int((floatBitsToUint(b) >> 23) & 0xffu);
  int e = ea - eb + 127; // the quotient's biased exponent, within one
  if (ea >= 26 && ea <= 254 && eb >= 2 && eb <= 252 && e >= 3 && e <= 252) {
    return m_div_fma(a, b);
  }
#endif
  return m_div_int(a, b);
}

// a / b for a divisor b = 2^e known when the kernel is made (codegen/fused.cpp), given
// r = 1 / b (exact) and t = 2^(max(e, 0) - 126): from |a| >= t the quotient a * r is a
// normal number, the same correctly rounded value m_div gives; below (results and inputs
// a device may flush to zero, zeros, NaN) m_div keeps the CPU's subnormals.
float m_div_pow2(float a, float b, float r, float t) {
  if (abs(a) >= t) {
    return a * r;
  }
  return m_div(a, b);
}
#endif // MLX_MATH_DIV

#endif
