// Storage extensions and dtype conversions shared by every kernel family.
// The engine sets MLX_STORAGE_8BIT / MLX_STORAGE_16BIT / MLX_INT64 when a kernel touches
// those types (and only when the device has the matching feature).
//
// Storage vs compute types: 8/16-bit integers and bool are stored in their own width and
// computed in 32 bits (results are truncated on store, which wraps like C++); f16 and bf16
// are stored as uint16 bit patterns, computed in f32 and rounded to nearest-even once, on
// store, with the exact bit manipulation of mlx/types/half_types.h, so GPU and CPU agree.
// Same GLSL/C++ common subset as math.glsl.
#ifndef MLX_TYPES_GLSL
#define MLX_TYPES_GLSL

#ifndef MLX_STORAGE_8BIT
#define MLX_STORAGE_8BIT 0
#endif
#ifndef MLX_STORAGE_16BIT
#define MLX_STORAGE_16BIT 0
#endif
#ifndef MLX_INT64
#define MLX_INT64 0
#endif

// (MLX_GLSL_AS_CPP: tests/codegen compiles the conversions below as C++.)
#ifndef MLX_GLSL_AS_CPP
#if MLX_STORAGE_8BIT
#extension GL_EXT_shader_8bit_storage : require
#endif
#if MLX_STORAGE_16BIT
#extension GL_EXT_shader_16bit_storage : require
#endif
#if MLX_INT64
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#endif

// Kinds of compute type, for OP_KIND.
#define KIND_BOOL 0
#define KIND_UINT 1
#define KIND_INT 2
#define KIND_FLOAT 3

#ifndef MLX_F16_HW
#define MLX_F16_HW 0
#endif
// IEEE half bits -> f32 (exact).
float f16_bits_to_f32_sw(uint h) {
  uint sign = (h & 0x8000u) << 16;
  uint e = (h >> 10) & 0x1fu;
  uint m = h & 0x3ffu;
  if (e == 0u) {
    if (m == 0u) {
      return uintBitsToFloat(sign);
    }
    float f = float(m) * 5.96046448e-8f; // m * 2^-24, exact
    return sign != 0u ? -f : f;
  }
  if (e == 31u) {
    return uintBitsToFloat(sign | 0x7f800000u | (m << 13));
  }
  return uintBitsToFloat(sign | ((e + 112u) << 23) | (m << 13));
}

// f32 -> IEEE half bits, round to nearest-even; NaN stays a quiet NaN.
uint f32_to_f16_bits_sw(float f) {
  uint x = floatBitsToUint(f);
  uint sign = (x >> 16) & 0x8000u;
  uint e32 = (x >> 23) & 0xffu;
  uint mant = x & 0x7fffffu;
  if (e32 == 0xffu) {
    return sign | 0x7c00u | (mant != 0u ? (0x200u | (mant >> 13)) : 0u);
  }
  int e = int(e32) - 112;
  if (e >= 31) {
    return sign | 0x7c00u;
  }
  if (e <= 0) { // half subnormal or zero
    if (e < -10) {
      return sign;
    }
    mant = mant | 0x800000u;
    uint shift = uint(14 - e);
    uint hm = mant >> shift;
    uint rem = mant & ((1u << shift) - 1u);
    uint halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (hm & 1u) != 0u)) {
      hm += 1u;
    }
    return sign | hm;
  }
  uint h = sign | (uint(e) << 10) | (mant >> 13);
  uint rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) {
    h += 1u; // a carry into the exponent correctly rounds up to inf
  }
  return h;
}

#if MLX_F16_HW
// The hardware's conversions, where codegen knows them exact (DeviceCaps::f16_hw_convert).
float f16_bits_to_f32(uint h) {
  return unpackHalf2x16(h).x;
}
uint f32_to_f16_bits(float f) {
  return packHalf2x16(vec2(f, 0.0f)) & 0xffffu;
}
#else
float f16_bits_to_f32(uint h) {
  return f16_bits_to_f32_sw(h);
}
uint f32_to_f16_bits(float f) {
  return f32_to_f16_bits_sw(f);
}
#endif

// f32 -> f16 -> f32 in registers, as a store and reload would give. Always the exact
// routines: NVIDIA's compiler (H100, driver 580) turns unpackHalf2x16(packHalf2x16(x))
// within one kernel into something that is not a round to nearest-even (results 1 ulp off
// a real store and reload), although either conversion alone is exact.
float f16_round(float f) {
  return f16_bits_to_f32_sw(f32_to_f16_bits_sw(f));
}

// The same in a few integer operations where f is a zero or lies in f16's normal range
// below the overflow point ([2^-14, 65520) in magnitude: the 13 dropped bits rounded to
// nearest-even in place), else f16_round. Zeros take the short path too: the dequantize
// kernel meets one in most subgroups (q = 0), and a subgroup that branches to f16_round
// for one lane waits for it (the f16 op took 120 us on an H200 with zeros sent there).
float f16_round_fast(float f) {
  uint x = floatBitsToUint(f);
  uint a = x & 0x7fffffffu;
  if (a < 0x477ff000u && (a >= 0x38800000u || a == 0u)) {
    return uintBitsToFloat((x + 0xfffu + ((x >> 13) & 1u)) & 0xffffe000u);
  }
  return f16_round(f);
}

float bf16_bits_to_f32(uint b) {
  return uintBitsToFloat(b << 16);
}

// f32 -> bfloat16 bits, round to nearest-even; NaN stays a quiet NaN.
uint f32_to_bf16_bits(float f) {
  uint x = floatBitsToUint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    return (x >> 16) | 0x40u;
  }
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}

// f32 -> bf16 -> f32 in registers, as a store and reload would give: the rounding of
// f32_to_bf16_bits with the low half cleared in place (no shift down and back up, no
// branch), so a fused group's bf16 intermediates cost four integer operations each. A NaN
// is returned as it came (still a NaN, which is all a later op or store sees of it), so
// NVIDIA folds the choice into a predicated mask: five instructions instead of six.
float bf16_round(float f) {
  uint x = floatBitsToUint(f);
  float r = uintBitsToFloat((x + 0x7fffu + ((x >> 16) & 1u)) & 0xffff0000u);
  return isnan(f) ? f : r;
}

// Two values as one word of 16-bit lanes, lo in the low half: the vector stores pack pairs
// (one shift-and-merge per pair) instead of inserting each lane under masks. bf16: per
// value one bit-field extract and one 3-input add, as f32_to_bf16_bits rounds (same NaN).
// rms_norm bf16 4096^2 on an H200: 28.3 -> 27.2 us.
uint pack_bf16x2(float lo, float hi) {
  uint a = floatBitsToUint(lo), b = floatBitsToUint(hi);
  a = isnan(lo) ? a | 0x400000u : a + 0x7fffu + ((a >> 16) & 1u);
  b = isnan(hi) ? b | 0x400000u : b + 0x7fffu + ((b >> 16) & 1u);
  return (a >> 16) | (b & 0xffff0000u);
}
// Whether f is neither NaN nor infinite (a comparison with NaN is false).
bool finite_f32(float f) {
  return abs(f) <= 3.4028234664e38;
}
// 8 values that are not NaN (finite or infinite) as bf16, two a word, rounded as
// f32_to_bf16_bits rounds but without its NaN test, which the rounding add maps correctly
// for them. A NaN must not come here: NVIDIA's arithmetic NaN, 0x7fffffff, would carry into
// the sign bit (-0). Dequantizing with a finite scale and bias gives no NaN (q >= 0), and
// skipping the test there took a bf16 transposed dequantize from 57.6-58.5 to 53.0-53.4 us
// (H200, docs/matmul.md).
uint pack_bf16x2_not_nan(float lo, float hi) {
  uint a = floatBitsToUint(lo), b = floatBitsToUint(hi);
  a += 0x7fffu + ((a >> 16) & 1u);
  b += 0x7fffu + ((b >> 16) & 1u);
  return (a >> 16) | (b & 0xffff0000u);
}
uvec4 pack_bf16x8_not_nan(float v[8]) {
  return uvec4(pack_bf16x2_not_nan(v[0], v[1]), pack_bf16x2_not_nan(v[2], v[3]),
               pack_bf16x2_not_nan(v[4], v[5]), pack_bf16x2_not_nan(v[6], v[7]));
}
uint pack_f16x2(float lo, float hi) {
#if MLX_F16_HW
  return packHalf2x16(vec2(lo, hi));
#else
  return f32_to_f16_bits(lo) | (f32_to_f16_bits(hi) << 16);
#endif
}

bool f32_bits_isnan(float x) {
  return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u;
}

// Float -> integer casts saturate and map NaN to 0 (mlx/dtype_utils.h: cast_value).
// hi is the type's maximum rounded to float; since no float lies between max and hi, the
// comparison x >= hi matches the CPU's comparison in double.
int float_to_int_sat(float x, float lo, float hi, int ilo, int ihi) {
  if (f32_bits_isnan(x)) {
    return 0;
  }
  if (x <= lo) {
    return ilo;
  }
  if (x >= hi) {
    return ihi;
  }
  return int(x);
}

uint float_to_uint_sat(float x, float hi, uint uhi) {
  if (f32_bits_isnan(x) || x <= 0.0f) {
    return 0u;
  }
  if (x >= hi) {
    return uhi;
  }
  return uint(x);
}

int float_to_i8(float x) {
  return float_to_int_sat(x, -128.0f, 127.0f, -128, 127);
}
int float_to_i16(float x) {
  return float_to_int_sat(x, -32768.0f, 32767.0f, -32768, 32767);
}
int float_to_i32(float x) {
  return float_to_int_sat(x, -2147483648.0f, 2147483648.0f, -2147483647 - 1, 2147483647);
}
uint float_to_u8(float x) {
  return float_to_uint_sat(x, 255.0f, 255u);
}
uint float_to_u16(float x) {
  return float_to_uint_sat(x, 65535.0f, 65535u);
}
uint float_to_u32(float x) {
  return float_to_uint_sat(x, 4294967296.0f, 4294967295u);
}

#if MLX_INT64
int64_t float_to_i64(float x) {
  if (f32_bits_isnan(x)) {
    return int64_t(0);
  }
  if (x <= -9223372036854775808.0f) {
    return -9223372036854775807l - 1l;
  }
  if (x >= 9223372036854775808.0f) {
    return 9223372036854775807l;
  }
  return int64_t(x);
}
uint64_t float_to_u64(float x) {
  if (f32_bits_isnan(x) || x <= 0.0f) {
    return uint64_t(0);
  }
  if (x >= 18446744073709551616.0f) {
    return 18446744073709551615ul;
  }
  return uint64_t(x);
}
#endif

#endif
