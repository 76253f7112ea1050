// f32 math with the accuracy and IEEE special cases of the C library, built only from
// +, -, *, /, sqrt, floor and bit operations. Vulkan's built-in transcendentals are too loose
// for MLX's semantics (sin/cos have an absolute error of 2^-11, exp 3 + 2|x| ulp, pow is
// undefined for x < 0, inversesqrt for x <= 0), and a GPU result must match the CPU reference
// within float32 tolerance.
//
// This file is written in the common subset of GLSL and C++ (float literals carry 'f', no
// vectors except vec2, no out parameters), so tests/codegen compiles it as C++ and measures
// its error against long double references without a GPU.
#ifndef MLX_MATH_GLSL
#define MLX_MATH_GLSL

// Function groups. The engine defines MLX_MATH_SELECTIVE plus the groups an op needs
// (codegen/elementwise_ops.cpp), so glslang parses only those: parsing the whole file costs
// about 10 ms per kernel. Without MLX_MATH_SELECTIVE (a template compiled on its own, or the
// C++ tests) every group is in.
#ifdef MLX_MATH_SELECTIVE
#define MLX_MATH_ALL 0
#else
#define MLX_MATH_ALL 1
#endif
#ifndef MLX_MATH_EXP
#define MLX_MATH_EXP MLX_MATH_ALL
#endif
#ifndef MLX_MATH_LOG
#define MLX_MATH_LOG MLX_MATH_ALL
#endif
#ifndef MLX_MATH_TRIG
#define MLX_MATH_TRIG MLX_MATH_ALL
#endif
#ifndef MLX_MATH_ATAN
#define MLX_MATH_ATAN MLX_MATH_ALL
#endif
#ifndef MLX_MATH_HYPER
#define MLX_MATH_HYPER MLX_MATH_ALL
#endif
#ifndef MLX_MATH_SIGMOID
#define MLX_MATH_SIGMOID MLX_MATH_ALL
#endif
#ifndef MLX_MATH_FMOD
#define MLX_MATH_FMOD MLX_MATH_ALL
#endif
#ifndef MLX_MATH_POW
#define MLX_MATH_POW MLX_MATH_ALL
#endif
#ifndef MLX_MATH_LOGADDEXP
#define MLX_MATH_LOGADDEXP MLX_MATH_ALL
#endif
#ifndef MLX_MATH_ERF
#define MLX_MATH_ERF MLX_MATH_ALL
#endif
#ifndef MLX_MATH_ERFINV
#define MLX_MATH_ERFINV MLX_MATH_ALL
#endif
#ifndef MLX_MATH_DIV
#define MLX_MATH_DIV MLX_MATH_ALL
#endif
#ifndef MLX_MATH_FF
#define MLX_MATH_FF MLX_MATH_ALL
#endif
// What each group uses.
#if MLX_MATH_HYPER || MLX_MATH_LOGADDEXP || MLX_MATH_ERFINV
#undef MLX_MATH_LOG
#define MLX_MATH_LOG 1
#endif
#if MLX_MATH_HYPER || MLX_MATH_SIGMOID || MLX_MATH_POW || MLX_MATH_LOGADDEXP
#undef MLX_MATH_EXP
#define MLX_MATH_EXP 1
#endif
#if MLX_MATH_POW
#undef MLX_MATH_FF
#define MLX_MATH_FF 1
#endif

// ---- always: classification, sqrt, scaling, sign, maximum/minimum ---------------------

const float MLX_LN2_HI = 0.693359375f;     // ln 2 = MLX_LN2_HI + MLX_LN2_LO; k * HI is exact
const float MLX_LN2_LO = -2.12194440e-4f;
const float MLX_LOG2E = 1.44269504f;
const float MLX_PI = 3.14159265f;
const float MLX_PI_2 = 1.57079633f;
const float MLX_PI_4 = 0.785398163f;

bool m_isnan(float x) {
  return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u;
}

bool m_isinf(float x) {
  return (floatBitsToUint(x) & 0x7fffffffu) == 0x7f800000u;
}

float m_nan() {
  return uintBitsToFloat(0x7fc00000u);
}

float m_inf() {
  return uintBitsToFloat(0x7f800000u);
}

float m_copysign(float x, float s) {
  return uintBitsToFloat((floatBitsToUint(x) & 0x7fffffffu) | (floatBitsToUint(s) & 0x80000000u));
}

// sqrt with the C results at 0, inf and below 0 (Vulkan leaves those undefined).
float m_sqrt(float x) {
  if (x > 0.0f && !m_isinf(x)) {
    return sqrt(x);
  }
  if (x == 0.0f || (m_isinf(x) && x > 0.0f) || m_isnan(x)) {
    return x;
  }
  return m_nan();
}

float m_rsqrt(float x) {
  if (x > 0.0f && !m_isinf(x)) {
    return 1.0f / sqrt(x);
  }
  if (x == 0.0f) {
    return m_copysign(m_inf(), x);
  }
  if (m_isinf(x) && x > 0.0f) {
    return 0.0f;
  }
  return m_nan();
}

// 2^n  [-126, 127].
float m_pow2i(int n) {
  return uintBitsToFloat(uint(n + 127) << 23);
}

// x * 2^n  [-252, 254], in two steps so no intermediate power overflows.
float m_scale2(float x, int n) {
  int h = n / 2;
  return x * m_pow2i(h) * m_pow2i(n - h);
}

float m_sign(float x) {
  if (m_isnan(x)) {
    return x;
  }
  return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x); // zero keeps its sign
}

float m_maximum(float a, float b) {
  if (m_isnan(a)) {
    return a;
  }
  if (m_isnan(b)) {
    return b;
  }
  return a < b ? b : a; // max(-0, +0) is the first argument, as on the CPU
}

float m_minimum(float a, float b) {
  if (m_isnan(a)) {
    return a;
  }
  if (m_isnan(b)) {
    return b;
  }
  return b < a ? b : a;
}

#if MLX_MATH_FF
// ---- float-float arithmetic (pow) --------------------------------------------------------
// Error-free transformations; `precise` forbids the reassociation and contraction that
// would break them. Splitting into 12-bit halves makes products exact without fma.

vec2 m_split(float a) {
  precise float c = 4097.0f * a;
  precise float hi = c - (c - a);
  precise float lo = a - hi;
  return vec2(hi, lo);
}

// a * b = p + e exactly (|a|, |b| well inside the float range).
vec2 m_two_prod(float a, float b) {
  precise float p = a * b;
  vec2 as = m_split(a);
  vec2 bs = m_split(b);
  precise float e = ((as.x * bs.x - p) + as.x * bs.y + as.y * bs.x) + as.y * bs.y;
  return vec2(p, e);
}

// a + b = s + e exactly.
vec2 m_two_sum(float a, float b) {
  precise float s = a + b;
  precise float bb = s - a;
  precise float e = (a - (s - bb)) + (b - bb);
  return vec2(s, e);
}

#endif // MLX_MATH_FF

// ---- division: include/div.glsl (after this file) ----------------------------------------


// ---- exp ------------------------------------------------------------------------------

#if MLX_MATH_EXP
// e^r for |r| <= ln2 / 2 as 1 + r + r^2 q(r), q a degree-4 Chebyshev fit of
// (e^r - 1 - r) / r^2 (mpmath.chebyfit; its error times r^2 is under 1e-8): seven
// operations where the degree-9 Taylor series it replaced took nine multiply-adds.
float m_exp_poly(float r) {
  float q = 1.39261836e-3f;
  q = q * r + 8.36317905e-3f;
  q = q * r + 4.16665546e-2f;
  q = q * r + 1.66665770e-1f;
  q = q * r + 0.5f;
  return 1.0f + fma(r * r, q, r);
}

float m_exp(float x) {
  // Past [-104, 89] e^x is 0 or inf in f32, and the scaling below makes it so from the
  // clamped ends (e^-104 rounds to 0, e^89 overflows): no branches for the range.
  float xc = clamp(x, -104.0f, 89.0f);
  // k = round(x / ln 2) by the 1.5 * 2^23 shifter, whose low mantissa bits then hold k as
  // an integer: no floor and no float-to-int conversion (with the clamp, f32 exp of 256M
  // elements on an H200: 537-542 -> 521-530 us, docs/performance.md).
  precise float t = fma(xc, MLX_LOG2E, 12582912.0f);
  precise float k = t - 12582912.0f;  // precise: not simplified to x / ln 2
  int n = floatBitsToInt(t) - 0x4B400000;
  // x = k ln2 + r (Cody-Waite: k * MLX_LN2_HI is exact for |k| < 2^15).
  precise float r = (xc - k * MLX_LN2_HI) - k * MLX_LN2_LO;
  // e^r * 2^n in two factors, so that subnormal results round once and no factor overflows.
  int h = n >> 1;
  float y = m_exp_poly(r) * m_pow2i(h) * m_pow2i(n - h);
  return m_isnan(x) ? x : y;
}

// ---- 16-bit results ---------------------------------------------------------------------
// An f16/bf16 op computes in f32 and rounds once to its dtype, so its f32 routine only has
// to be well inside half an ulp of the 16-bit result (2^-12 relative for f16, 2^-9 for
// bf16) to give the correctly rounded value, or one ulp away next to a rounding midpoint.
// The hardware exp qualifies: Vulkan bounds it by 3 + 2|x| f32 ulp, at most 2^-15 relative
// for |x| <= 87. It costs a multiply and one transcendental instruction where m_exp costs
// a range reduction, a degree-9 polynomial and a scaling (a compiled bf16 SwiGLU on an H200:
// 151.6 -> 111.0 us, docs/compile.md). Large, infinite and NaN arguments, and subnormal
// results, take m_exp.
float m_exp16(float x) {
  if (!(abs(x) <= 87.0f)) {
    return m_exp(x);
  }
  return exp(x);
}

float m_exp2(float x) {
  if (m_isnan(x)) {
    return x;
  }
  if (x >= 128.0f) {
    return m_inf();
  }
  if (x < -150.0f) {
    return 0.0f;
  }
  float k = floor(x + 0.5f);
  return m_scale2(m_exp_poly((x - k) * 0.693147181f), int(k));
}

// e^x / 2 without overflowing e^x first (sinh and cosh near the top of the range).
float m_exp_half(float x) {
  if (x > 90.0f) {
    return m_inf();
  }
  float k = floor(x * MLX_LOG2E + 0.5f);
  precise float r = (x - k * MLX_LN2_HI) - k * MLX_LN2_LO;
  return m_scale2(m_exp_poly(r), int(k) - 1);
}

float m_expm1(float x) {
  if (abs(x) < 0.5f) {
    // Taylor series to x^9; exp(x) - 1 would cancel here.
    float p = 2.75573192e-6f;
    p = p * x + 2.48015873e-5f;
    p = p * x + 1.98412698e-4f;
    p = p * x + 1.38888889e-3f;
    p = p * x + 8.33333333e-3f;
    p = p * x + 4.16666667e-2f;
    p = p * x + 1.66666667e-1f;
    p = p * x + 0.5f;
    return x + x * x * p;
  }
  return m_exp(x) - 1.0f;
}
#endif // MLX_MATH_EXP

// ---- log ------------------------------------------------------------------------------

#if MLX_MATH_LOG
// For finite x > 0: (e, log(m)) with x = m * 2^e and m in [sqrt(1/2), sqrt(2)).
// log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.172: accurate near x = 1, where
// Vulkan's log only promises an absolute error of 2^-21.
vec2 m_log_parts(float x) {
  uint b = floatBitsToUint(x);
  int e = 0;
  if (b < 0x00800000u) { // subnormal: bring it into the normal range first
    b = floatBitsToUint(x * 8388608.0f);
    e = -23;
  }
  e += int(b >> 23) - 127;
  float m = uintBitsToFloat((b & 0x007fffffu) | 0x3f800000u);
  if (m > 1.41421356f) {
    m = m * 0.5f;
    e += 1;
  }
  float s = (m - 1.0f) / (m + 1.0f);
  float s2 = s * s;
  float p = 0.111111111f;
  p = p * s2 + 0.142857143f;
  p = p * s2 + 0.2f;
  p = p * s2 + 0.333333333f;
  return vec2(float(e), 2.0f * s + 2.0f * s * s2 * p);
}

// The inputs every logarithm answers without m_log_parts: NaN and +inf give themselves,
// negatives (and -inf) NaN, zero -inf.
bool m_log_is_edge(float x) {
  return m_isnan(x) || m_isinf(x) || x <= 0.0f;
}

float m_log_edge(float x) {
  if (m_isnan(x) || x > 0.0f) {
    return x;
  }
  return x < 0.0f ? m_nan() : -m_inf();
}

float m_log(float x) {
  if (m_log_is_edge(x)) {
    return m_log_edge(x);
  }
  vec2 p = m_log_parts(x);
  return p.x * MLX_LN2_HI + (p.y + p.x * MLX_LN2_LO);
}

float m_log2(float x) {
  if (m_log_is_edge(x)) {
    return m_log_edge(x);
  }
  vec2 p = m_log_parts(x);
  return p.x + p.y * MLX_LOG2E;
}

float m_log10(float x) {
  if (m_log_is_edge(x)) {
    return m_log_edge(x);
  }
  vec2 p = m_log_parts(x);
  return p.x * 0.301029996f + p.y * 0.434294482f;
}

float m_log1p(float x) {
  if (m_isnan(x) || (m_isinf(x) && x > 0.0f)) {
    return x;
  }
  if (x < -1.0f) {
    return m_nan();
  }
  if (x == -1.0f) {
    return -m_inf();
  }
  if (x >= 16777216.0f) { // 1 + x == x; also keeps x / (u - 1) away from huge divisors
    return m_log(x);
  }
  float u = 1.0f + x;
  if (u == 1.0f) {
    return x;
  }
  // log(u) * x / (u - 1) cancels the rounding error of 1 + x.
  return m_log(u) * (x / (u - 1.0f));
}
#endif // MLX_MATH_LOG

#if MLX_MATH_TRIG
// ---- trigonometric ----------------------------------------------------------------------

// 2/pi in 32-bit words: 2/pi = sum MLX_TWO_OVER_PI[i] * 2^(-32 (i + 1)).
const uint MLX_TWO_OVER_PI[8] = {0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u, 0xF534DDC0u,
                                 0xDB629599u, 0x3C439041u, 0xFE5163ABu, 0xDEBBC561u};

// Bits pos .. pos + 31 of the 160-bit number r (r[0] least significant).
uint m_bits32(uint r[5], int pos) {
  int w = pos >> 5;
  int sh = pos & 31;
  uint lo = w < 5 ? r[w] : 0u;
  uint hi = w + 1 < 5 ? r[w + 1] : 0u;
  return sh == 0 ? lo : (lo >> uint(sh)) | (hi << uint(32 - sh));
}

// Payne-Hanek reduction for finite |x| >= 2^13, where k pi/2 no longer splits exactly:
// multiplies the 24-bit significand by the 128 bits of 2/pi that matter for x's exponent,
// giving the exact quadrant and a 64-bit fraction. Returns (r, k mod 4) as below.
vec2 m_reduce_half_pi_large(float x) {
  uint b = floatBitsToUint(x) & 0x7fffffffu;
  int e = int(b >> 23) - 150; // |x| = m * 2^e
  uint m = (b & 0x007fffffu) | 0x00800000u;
  int w0 = e >= 2 ? (e - 2) / 32 : 0; // earlier words only add multiples of 4
  uint r[5] = {0u, 0u, 0u, 0u, 0u};
  for (int j = 0; j < 4; ++j) {
    uint hi;
    uint lo;
    umulExtended(m, MLX_TWO_OVER_PI[w0 + j], hi, lo);
    int k = 3 - j;
    uint t = r[k] + lo;
    uint carry = t < lo ? 1u : 0u;
    r[k] = t;
    t = r[k + 1] + hi;
    uint carry2 = t < hi ? 1u : 0u;
    t += carry;
    carry2 += t < carry ? 1u : 0u;
    r[k + 1] = t;
    for (int q = k + 2; q < 5; ++q) {
      r[q] += carry2;
      carry2 = (carry2 != 0u && r[q] == 0u) ? 1u : 0u;
    }
  }
  int point = 128 - (e - 32 * w0); // bit index of 2^0 in r
  uint quadrant = m_bits32(r, point) & 3u;
  uint fhi = m_bits32(r, point - 32);
  uint flo = m_bits32(r, point - 64);
  float sign = 1.0f;
  if (fhi >= 0x80000000u) { // fraction >= 1/2: take it from the next multiple, exactly
    quadrant += 1u;
    fhi = ~fhi;
    flo = ~flo + 1u;
    if (flo == 0u) {
      fhi += 1u;
    }
    sign = -1.0f;
  }
  float f = float(fhi) * 2.32830644e-10f + float(flo) * 5.42101086e-20f;
  float rr = sign * f * 1.57079633f;
  float q = float(quadrant & 3u);
  if (x < 0.0f) {
    rr = -rr;
    q = q == 0.0f ? 0.0f : 4.0f - q;
  }
  return vec2(rr, q);
}

// x = k pi/2 + r with |r| <= pi/4; returns (r, k mod 4). Below 2^13, pi/2 split in three
// parts (8, 11 and 24 significant bits) makes k * part exact (Cody-Waite).
vec2 m_reduce_half_pi(float x) {
  if (abs(x) >= 8192.0f) {
    return m_reduce_half_pi_large(x);
  }
  float k = floor(x * 0.636619772f + 0.5f);
  precise float r = ((x - k * 1.5703125f) - k * 4.83751296997070312e-4f) -
                    k * 7.54978995489188216e-8f;
  float q = k - 4.0f * floor(k * 0.25f);
  return vec2(r, q);
}

// sin and cos on [-pi/4, pi/4] (Taylor series; omitted terms below 3e-9 relative).
float m_sin_poly(float r) {
  float r2 = r * r;
  float p = 2.75573192e-6f;
  p = p * r2 - 1.98412698e-4f;
  p = p * r2 + 8.33333333e-3f;
  p = p * r2 - 1.66666667e-1f;
  return r + r * r2 * p;
}

float m_cos_poly(float r) {
  float r2 = r * r;
  float p = -2.75573192e-7f;
  p = p * r2 + 2.48015873e-5f;
  p = p * r2 - 1.38888889e-3f;
  p = p * r2 + 4.16666667e-2f;
  return 1.0f - 0.5f * r2 + r2 * r2 * p;
}

float m_sin(float x) {
  if (m_isnan(x) || m_isinf(x)) {
    return m_nan();
  }
  vec2 rq = m_reduce_half_pi(x);
  float v = (rq.y == 0.0f || rq.y == 2.0f) ? m_sin_poly(rq.x) : m_cos_poly(rq.x);
  return rq.y >= 2.0f ? -v : v;
}

float m_cos(float x) {
  if (m_isnan(x) || m_isinf(x)) {
    return m_nan();
  }
  vec2 rq = m_reduce_half_pi(x);
  float v = (rq.y == 0.0f || rq.y == 2.0f) ? m_cos_poly(rq.x) : m_sin_poly(rq.x);
  return (rq.y == 1.0f || rq.y == 2.0f) ? -v : v;
}

float m_tan(float x) {
  if (m_isnan(x) || m_isinf(x)) {
    return m_nan();
  }
  vec2 rq = m_reduce_half_pi(x);
  float s = m_sin_poly(rq.x);
  float c = m_cos_poly(rq.x);
  return (rq.y == 0.0f || rq.y == 2.0f) ? s / c : -c / s;
}
#endif // MLX_MATH_TRIG

#if MLX_MATH_ATAN
// ---- inverse trigonometric ------------------------------------------------------------

// atan for a in [0, 1]: shifted by pi/4 above tan(pi/8), then a Taylor series in
// |t| <= 0.4143 (the first omitted term is below 1e-8 relative).
float m_atan01(float a) {
  float base = 0.0f;
  float t = a;
  if (a > 0.414213562f) {
    t = (a - 1.0f) / (a + 1.0f);
    base = MLX_PI_4;
  }
  float t2 = t * t;
  float p = 5.88235294e-2f;
  p = p * t2 - 6.66666667e-2f;
  p = p * t2 + 7.69230769e-2f;
  p = p * t2 - 9.09090909e-2f;
  p = p * t2 + 1.11111111e-1f;
  p = p * t2 - 1.42857143e-1f;
  p = p * t2 + 2.0e-1f;
  p = p * t2 - 3.33333333e-1f;
  return base + (t + t * t2 * p);
}

float m_atan(float x) {
  if (m_isnan(x)) {
    return x;
  }
  float a = abs(x);
  float r = a > 1.0f ? MLX_PI_2 - m_atan01(1.0f / a) : m_atan01(a);
  return m_copysign(r, x);
}

// atan2 with C's special cases for zeros and infinities.
float m_atan2(float y, float x) {
  if (m_isnan(x) || m_isnan(y)) {
    return m_nan();
  }
  bool x_neg = (floatBitsToUint(x) & 0x80000000u) != 0u; // -0 counts as negative, as in C
  float ay = abs(y);
  float ax = abs(x);
  float r;
  if (ay == 0.0f) {
    r = x_neg ? MLX_PI : 0.0f;
  } else if (ax == 0.0f) {
    r = MLX_PI_2;
  } else if (m_isinf(ax) && m_isinf(ay)) {
    r = x_neg ? 3.0f * MLX_PI_4 : MLX_PI_4;
  } else if (m_isinf(ax)) {
    r = x_neg ? MLX_PI : 0.0f;
  } else if (m_isinf(ay)) {
    r = MLX_PI_2;
  } else {
    if (ax > 1e30f || ay > 1e30f) { // NVIDIA's division returns 0 for divisors above 2^126
      ax *= 5.42101086e-20f;         // 2^-64, exact for the larger operand
      ay *= 5.42101086e-20f;
    }
    float a = ay > ax ? MLX_PI_2 - m_atan01(ax / ay) : m_atan01(ay / ax);
    r = x_neg ? MLX_PI - a : a;
  }
  return m_copysign(r, y);
}

float m_asin(float x) {
  if (m_isnan(x) || abs(x) > 1.0f) {
    return m_nan();
  }
  // 1 - x and 1 + x are exact or nearly so, unlike 1 - x * x near |x| = 1.
  return m_atan2(x, sqrt((1.0f - x) * (1.0f + x)));
}

float m_acos(float x) {
  if (m_isnan(x) || abs(x) > 1.0f) {
    return m_nan();
  }
  return m_atan2(sqrt((1.0f - x) * (1.0f + x)), x);
}
#endif // MLX_MATH_ATAN

#if MLX_MATH_HYPER
// ---- hyperbolic -------------------------------------------------------------------------

float m_sinh(float x) {
  float a = abs(x);
  float r;
  if (a < 1.0f) {
    float e = m_expm1(a); // sinh = (e + e / (e + 1)) / 2 keeps small |x| accurate
    r = 0.5f * (e + e / (e + 1.0f));
  } else if (a < 88.0f) {
    float e = m_exp(a);
    r = 0.5f * (e - 1.0f / e);
  } else {
    r = m_exp_half(a);
  }
  return m_copysign(r, x);
}

float m_cosh(float x) {
  float a = abs(x);
  if (a < 88.0f) {
    float e = m_exp(a);
    return 0.5f * (e + 1.0f / e);
  }
  return m_exp_half(a);
}

float m_tanh(float x) {
  float a = abs(x);
  if (m_isnan(x)) {
    return x;
  }
  if (a > 9.0f) { // 1 - tanh(9) is below half an ulp of 1
    return m_copysign(1.0f, x);
  }
  float e = m_expm1(2.0f * a);
  return m_copysign(e / (e + 2.0f), x);
}

float m_asinh(float x) {
  float a = abs(x);
  float r;
  if (m_isnan(x) || m_isinf(x)) {
    return x;
  }
  if (a > 1e10f) {
    r = m_log(a) + 0.693147181f;
  } else {
    // log1p(a + a^2 / (1 + sqrt(1 + a^2))) stays accurate for small a
    float a2 = a * a;
    r = m_log1p(a + a2 / (1.0f + sqrt(1.0f + a2)));
  }
  return m_copysign(r, x);
}

float m_acosh(float x) {
  if (m_isnan(x) || (m_isinf(x) && x > 0.0f)) {
    return x;
  }
  if (x < 1.0f) {
    return m_nan();
  }
  if (x > 1e10f) {
    return m_log(x) + 0.693147181f;
  }
  float t = x - 1.0f; // exact; acosh(1 + t) = log1p(t + sqrt(2t + t^2))
  return m_log1p(t + sqrt(2.0f * t + t * t));
}

float m_atanh(float x) {
  float a = abs(x);
  if (m_isnan(x) || a > 1.0f) {
    return m_nan();
  }
  if (a == 1.0f) {
    return m_copysign(m_inf(), x);
  }
  return m_copysign(0.5f * m_log1p(2.0f * a / (1.0f - a)), x);
}
#endif // MLX_MATH_HYPER

#if MLX_MATH_SIGMOID
// Never computes exp of a large positive number, so it neither overflows nor loses 1 - s.
// One exponential for either sign: a branch on the sign computed m_exp twice in every
// subgroup that saw both signs (SwiGLU bf16 [4096, 14336], docs/compile.md).
// e = exp(-|x|), in [0, 1].
float m_sigmoid_of(float x, float e) {
  float s = 1.0f / (1.0f + e);
  return x >= 0.0f ? s : e * s;
}

float m_sigmoid(float x) {
  return m_sigmoid_of(x, m_exp(-abs(x)));
}

// m_sigmoid for 16-bit results, with e^-|x| = 2^(64 - |x| log2 e) * 2^-64 from the
// hardware exp2: the argument's rounding (at most 2^-18 of 64) and exp2's error (3 + 2|t|
// ulp, t <= 64) stay well inside 2^-12, and the shift by 64 keeps results down to 2^-190
// (subnormal ones included) out of exp2's own underflow, so unlike m_exp16 there is no
// branch to m_exp. That branch, per element, serialized a vector step's eight sigmoids
// behind convergence barriers on NVIDIA: a compiled bf16 SwiGLU's step went from 642 to 338
// instructions of machine code on an H100 (docs/compile.md).
float m_sigmoid16(float x) {
  float e = exp2(fma(-abs(x), 1.44269504f, 64.0f)) * 5.42101086e-20f;  // 2^-64
  return m_sigmoid_of(x, e);
}
#endif // MLX_MATH_SIGMOID

#if MLX_MATH_FMOD
// ---- remainder ------------------------------------------------------------------------

// C's fmod, exact: long division of the integer significands, one exponent step at a time.
float m_fmod(float x, float y) {
  uint ux = floatBitsToUint(x);
  uint uy = floatBitsToUint(y) & 0x7fffffffu;
  uint sx = ux & 0x80000000u;
  ux = ux & 0x7fffffffu;
  if (uy == 0u || ux >= 0x7f800000u || uy > 0x7f800000u) {
    return m_nan();
  }
  if (ux < uy) {
    return x;
  }
  if (ux == uy) {
    return uintBitsToFloat(sx);
  }
  int ex = int(ux >> 23);
  int ey = int(uy >> 23);
  uint mx = (ux & 0x007fffffu) | 0x00800000u;
  uint my = (uy & 0x007fffffu) | 0x00800000u;
  if (ex == 0) { // subnormal: normalize the significand
    ex = 1;
    mx = ux;
    while (mx < 0x00800000u) {
      mx = mx << 1;
      ex -= 1;
    }
  }
  if (ey == 0) {
    ey = 1;
    my = uy;
    while (my < 0x00800000u) {
      my = my << 1;
      ey -= 1;
    }
  }
  for (; ex > ey; ex--) {
    if (mx >= my) {
      mx -= my;
    }
    mx = mx << 1;
  }
  if (mx >= my) {
    mx -= my;
  }
  if (mx == 0u) {
    return uintBitsToFloat(sx);
  }
  while (mx < 0x00800000u) {
    mx = mx << 1;
    ex -= 1;
  }
  if (ex > 0) {
    return uintBitsToFloat(sx | (uint(ex) << 23) | (mx & 0x007fffffu));
  }
  return uintBitsToFloat(sx | (mx >> uint(1 - ex))); // exact: the remainder is representable
}

// Python's float remainder: the result takes the divisor's sign (a zero result too);
// remainder by 0, and of an infinity, is NaN.
float m_remainder(float a, float b) {
  float r = m_fmod(a, b);
  if (r == 0.0f) {
    return m_copysign(0.0f, b);
  }
  if ((r < 0.0f) != (b < 0.0f)) {
    r += b; // also keeps NaN
  }
  return r;
}
#endif // MLX_MATH_FMOD

#if MLX_MATH_POW
// log2(x) for finite x > 0 as hi + lo, good to about 2^-40 relative: pow needs
// y * log2(x) to an absolute 2^-24 for results up to 2^128.
vec2 m_log2_ff(float x) {
  uint b = floatBitsToUint(x);
  int e = 0;
  if (b < 0x00800000u) {
    b = floatBitsToUint(x * 8388608.0f);
    e = -23;
  }
  e += int(b >> 23) - 127;
  float m = uintBitsToFloat((b & 0x007fffffu) | 0x3f800000u);
  if (m > 1.41421356f) {
    m = m * 0.5f;
    e += 1;
  }
  // log(m) = log(1 + f) = 2 atanh(s), s = f / (2 + f), with s carried as s + ds.
  float f = m - 1.0f;
  precise float d = 2.0f + f;
  precise float d_err = f - (d - 2.0f); // d + d_err == 2 + f exactly
  float s = f / d;
  vec2 sd = m_two_prod(s, d);
  precise float residual = ((f - sd.x) - sd.y) - s * d_err;
  float ds = residual / d;
  float s2 = s * s;
  float p = 0.111111111f;
  p = p * s2 + 0.142857143f;
  p = p * s2 + 0.2f;
  p = p * s2 + 0.333333333f;
  float tail = 2.0f * s * s2 * p;
  // log2(m) = (2s + 2ds + tail) * log2(e), log2(e) = 1.44269502f + 1.92596299e-8f
  vec2 hi = m_two_prod(2.0f * s, 1.44269502f);
  float lo = hi.y + (2.0f * s * 1.92596299e-8f + (2.0f * ds + tail) * MLX_LOG2E);
  vec2 r = m_two_sum(float(e), hi.x);
  return m_two_sum(r.x, r.y + lo);
}

// C's pow, special cases included.
float m_pow(float x, float y) {
  if (y == 0.0f || x == 1.0f) {
    return 1.0f; // also for NaN in the other argument, as in C
  }
  if (m_isnan(x) || m_isnan(y)) {
    return m_nan();
  }
  float ay = abs(y);
  bool y_int = floor(y) == y;
  bool y_odd = y_int && ay < 16777216.0f && floor(ay * 0.5f) * 2.0f != ay;
  if (m_isinf(y)) {
    float ax = abs(x);
    if (ax == 1.0f) {
      return 1.0f;
    }
    return (y > 0.0f) == (ax > 1.0f) ? m_inf() : 0.0f;
  }
  if (x == 0.0f) {
    if (y < 0.0f) {
      return y_odd ? m_copysign(m_inf(), x) : m_inf();
    }
    return y_odd ? x : 0.0f;
  }
  if (m_isinf(x)) {
    float r = y > 0.0f ? m_inf() : 0.0f;
    return x < 0.0f && y_odd ? -r : r;
  }
  if (x < 0.0f && !y_int) {
    return m_nan();
  }
  float r;
  if (y_int && ay <= 8.0f) {
    // Small integer powers by squaring: exact whenever the result is representable.
    r = 1.0f;
    float base = abs(x);
    int n = int(ay);
    while (n > 0) {
      if ((n & 1) != 0) {
        r *= base;
      }
      n = n >> 1;
      if (n > 0) {
        base *= base;
      }
    }
    r = y < 0.0f ? 1.0f / r : r;
  } else {
    // |x|^y = 2^t, t = y log2|x| carried as hi + lo; 2^t = 2^k 2^(t - k).
    vec2 l = m_log2_ff(abs(x));
    float t_approx = y * l.x; // decides overflow before the exact product could overflow
    if (abs(x) == 1.0f) {
      r = 1.0f;
    } else if (t_approx > 129.0f) {
      r = m_inf();
    } else if (t_approx < -152.0f) {
      r = 0.0f;
    } else {
      vec2 t = m_two_prod(y, l.x);
      float t_lo = t.y + y * l.y;
      float k = floor(t.x + 0.5f);
      float frac = (t.x - k) + t_lo;
      r = m_scale2(m_exp_poly(frac * 0.693147181f), int(k));
    }
  }
  return x < 0.0f && y_odd ? -r : r;
}
#endif // MLX_MATH_POW

#if MLX_MATH_LOGADDEXP
// log(e^a + e^b) without overflow, in the CPU's order of operations (same signed zeros).
float m_logaddexp(float a, float b) {
  if (m_isnan(a) || m_isnan(b)) {
    return m_nan();
  }
  float hi = a < b ? b : a;
  float lo = a < b ? a : b;
  if (m_isinf(hi)) {
    return hi;
  }
  return hi + m_log1p(m_exp(lo - hi));
}
#endif // MLX_MATH_LOGADDEXP

#endif
