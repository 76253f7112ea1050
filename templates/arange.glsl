#version 450
#extension GL_GOOGLE_include_directive : require
// arange: element i of a 1-d output, the same function as the CPU reference
// (mlx/backend/cpu/arange.cpp, mlx/backend/common/arange.h), bit for bit:
//   KIND 0, integers: T(first + i * delta) in wrapping 64-bit arithmetic (done in 32-bit
//     halves), where first = T(start) and delta = T(start + step) - first (NumPy and MLX);
//   KIND 1-3, f32 / f16 / bf16: start + i * step in float-float arithmetic, rounded once to
//     f32 (then once more to f16 or bf16, as the CPU converts double -> float -> half).
//     The host splits start into s_hi + s_lo and step into d_a + d_b + d_lo (d_a and d_b
//     hold 12 significant bits each); i splits into three pieces of at most 11 bits, so the
//     six products of i's pieces with d_a and d_b are exact, and an error-free sum (TwoSum)
//     gathers them with i * d_lo, s_hi and s_lo. `precise` keeps the compiler from fusing
//     or reordering any of it.
// The output is written as 32-bit words whatever the dtype (1, 2, 4 or 8 bytes), so one
// pipeline serves every dtype and needs neither 8/16-bit storage nor shaderInt64. An
// invocation owns one word; a partial last word keeps the bytes past the output's end.
#include "include/types.glsl"

layout(local_size_x_id = 0) in;

// Not writeonly: a partial last word is read back to keep the bytes that are not the output's.
layout(std430, set = 0, binding = 0) buffer Out {
  uint outw[];
};

// codegen/arange.cpp packs exactly these fields. p0..p4: KIND 0: first (lo, hi), delta
// (lo, hi); KIND 1-3: the float bits of s_hi, s_lo, d_a, d_b, d_lo.
layout(push_constant) uniform Params {
  uint count;       // invocations (words) of this launch
  uint out_offset;  // the word at first_word in the output binding
  uint first_word;  // the first output word of this launch
  uint size;        // elements of the output
  uint width;       // bytes per element: 1, 2, 4 or 8
  uint kind;
  uint p0;
  uint p1;
  uint p2;
  uint p3;
  uint p4;
}
pc;

uint invocation() {
  return gl_WorkGroupID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x + gl_GlobalInvocationID.x;
}

// Knuth's TwoSum: s + e == a + b exactly.
void two_sum(float a, float b, out float s, out float e) {
  precise float sum = a + b;
  precise float bb = sum - a;
  precise float err = (a - (sum - bb)) + (b - bb);
  s = sum;
  e = err;
}

float float_value(uint i) {
  float s_hi = uintBitsToFloat(pc.p0);
  float s_lo = uintBitsToFloat(pc.p1);
  float d_a = uintBitsToFloat(pc.p2);
  float d_b = uintBitsToFloat(pc.p3);
  float d_lo = uintBitsToFloat(pc.p4);
  float i0 = float(i & 0x7ffu);
  float i1 = float(i & 0x3ff800u);
  float i2 = float(i & 0x7fc00000u);
  precise float t[9];
  t[0] = i2 * d_a;
  t[1] = i2 * d_b;
  t[2] = i1 * d_a;
  t[3] = i1 * d_b;
  t[4] = i0 * d_a;
  t[5] = i0 * d_b;
  t[6] = float(i) * d_lo;
  t[7] = s_hi;
  t[8] = s_lo;
  precise float s = t[0];
  precise float e = 0.0f;
  for (int k = 1; k < 9; ++k) {
    float err;
    two_sum(s, t[k], s, err);
    e += err;
  }
  precise float r = s + e;
  return isinf(s) ? s : r;  // an overflowing sum is inf, not inf - inf
}

// The low 32 bits of element i (KIND 0: the wrapped integer; else the float's bits).
uint element_bits(uint i) {
  if (pc.kind == 0u) {
    return pc.p0 + i * pc.p2;
  }
  float v = float_value(i);
  if (pc.kind == 1u) {
    return floatBitsToUint(v);
  }
  return pc.kind == 2u ? f32_to_f16_bits(v) : f32_to_bf16_bits(v);
}

void main() {
  uint t = invocation();
  if (t >= pc.count) {
    return;
  }
  uint g = pc.first_word + t;
  uint dst = pc.out_offset + t;
  if (pc.width == 8u) {
    // Word g is half g % 2 of 64-bit element g / 2 (integers only).
    uint i = g >> 1;
    uint mul_hi, mul_lo;
    umulExtended(i, pc.p2, mul_hi, mul_lo);
    uint lo = pc.p0 + mul_lo;
    uint carry = lo < mul_lo ? 1u : 0u;
    outw[dst] = (g & 1u) == 0u ? lo : pc.p1 + i * pc.p3 + mul_hi + carry;
    return;
  }
  uint per_word = 4u / pc.width;
  uint bits = 8u * pc.width;
  uint mask = bits == 32u ? 0xffffffffu : (1u << bits) - 1u;
  uint value = 0u;
  uint kept_mask = 0u;
  for (uint k = 0u; k < per_word; ++k) {
    uint i = g * per_word + k;
    if (i >= pc.size) {
      kept_mask |= mask << (bits * k);
    } else {
      value |= (element_bits(i) & mask) << (bits * k);
    }
  }
  if (kept_mask != 0u) {
    value |= outw[dst] & kept_mask;
  }
  outw[dst] = value;
}
