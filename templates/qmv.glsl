#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Quantized matrix-vector products (the "qmv" family: quantized_matmul with transpose=true
// and M <= 8 rows, a decode step), bound by reading the packed weights once:
//   out[z, m, n] = sum_k x[uint(z, m, k)] * (scale[n, k / GS] * q[n, k] + bias[n, k / GS])
// W holds BITS-bit values packed little-endian into uint32 words, ldb words per row n
// (MLX's format, docs/quantization.md). A pack is 32 consecutive values of a row: BITS
// words, inside one group (GS is a multiple of 32). KS teams of TPR invocations (the
// "parts") own NC adjacent columns n: each lane reads whole packs of its NC columns, U * NC
// packs in flight, each part every KS-th run of TPR packs; a team sums its lanes with
// subgroup shuffles (SUBGROUP) or through shared memory, and the parts' sums meet in
// shared memory. A lane loads its 32 values of x once per pack and row, and converts and
// sums them once, for all NC columns (H100: M = 4 and 8 30% faster than one column per
// team). More columns per team share that work further, and parts restore the teams that
// fewer column groups lose: 4-bit [1,14336] x [4096,14336]^T 20.7 -> 18.2 us on an H100
// with NC 4 and KS 2 instead of NC 2 (codegen/qmv.cpp, docs/matmul.md).
//
// Per pack, with s and b its group's scale and bias:
//   sum_j x_j * (s * q_j + b) = s * sum_j x_j q_j + b * sum_j x_j
// so the inner loop is one multiply-add per value. Sums are f32 whatever the dtype; the
// output is rounded once. The multiply-adds and the values' extraction are most of the
// arithmetic, which bounds the 2- and 4-bit products as much as their reads do: values of
// 2 and 4 bits are split into bytes first (pack_value), 22.2 -> 20.8 us on an H100 for the
// product above.
//
// PRENORM 1 (the product of an rms_norm's output, mlx/fusion.h): x is the norm's input and
// the product is that of the normalized rows, x * inv * norm_w with inv = rsqrt(mean(x^2) +
// eps) per row. The lanes multiply x by norm_w, sum x^2 from the values they load anyway,
// and scale the team's sums by inv at the end: no extra pass over x and no launch for the
// norm. The normalized values are not rounded to the dtype in between (the unfused norm
// rounds its output), so a 16-bit product differs from the unfused one by about that
// rounding. A second pass that normalized and rounded first was 2x slower on an H100
// (14.3 us against 6.8 us for a Qwen3 q/k/v product).
//
// RESIDUAL 1 (an add that took the product over, mlx/fusion.h): an array of the output's
// shape is added to each sum before its one rounding.
//
// GLU 1 (silu(g) * u of the product's halves g = columns [0, N/2) and u = [N/2, N), as a
// compiled SwiGLU takes them, mlx/fusion.h): NC is 2 or 4 and a team owns columns n ..
// n + NC/2 - 1 of each half, so it finishes silu(g_n) * u_n itself; the output has N/2
// columns. Every node is rounded to the dtype as the unfused product and the compiled
// group round theirs. Two columns of each half share a lane's x (loaded, weighed by the
// norm and summed once) across 4 columns instead of 2: an 8B-class gate/up with its norm,
// bf16 [1,4096] x [24576,4096]^T, 43.6 -> 37.4 us on an H200 (docs/matmul.md).
//
// PREFETCH 1 (a decode step, whose next product the runtime knows): workgroups after the
// product's own bring the next product's weights into L2 (include/prefetch.glsl).
//
// F16_DOT 1 (f16 or bf16 rows of 4-bit values with packs to pipeline; codegen/qmv.cpp): each
// pack's sum_j x_j q_j is taken in f16 pairs, one f16 multiply-add per two values, the
// values made exact f16 integers by bit operations instead of one integer-to-float
// conversion and one f32 multiply-add each, and each lane requests its next packs before
// this step's arithmetic. Each half of a pair sums 16 products in f16 (each multiply-add
// rounds once, to 11 bits), and the pack's sum is then scaled in f32: the result may differ
// from the f32 sums by a few f16 units of the pack sums (docs/matmul.md). A pack whose f16
// sum is not finite (|x| in the hundreds) is summed again in f32, with every row and column
// of that step. On an H200 [1,14336] x [4096,14336]^T 17.1-17.3 -> 14.9-15.0 us. Several
// rows make each pack's values once for all of them: on an H100 f16 [2,14336] x
// [4096,14336]^T 27.8 -> 22.0 us, [4,14336] 42.2 -> 38.9 (docs/matmul.md).
// X_BF16 1 (a bf16 row with >= 3 steps a lane): x converted to f16 pairs, exact for
// 2^-17 <= |x| < 65520; a pack with a smaller nonzero |x| is summed again in f32 as well. On
// an H100 bf16 [1,14336] x [4096,14336]^T 17.4-17.7 -> 15.8-16.0 us.
//
// X8 1 (one f16 or bf16 row of 4-bit values, on devices with integer dot products): the
// workgroup first writes x (weighed by the norm weight with PRENORM) to shared memory as
// 8-bit integers in two parts, per pack of 32 values with m = max |x_j|:
//   x_j ~ m / (127 * 254) * (254 h_j + l_j),  h_j = round(127 x_j / m),
//   l_j = round(254 (127 x_j / m - h_j)),  both in [-127, 127]
// (an error of at most m / 64516 a value, below f16's and bf16's own steps at the block's
// largest value), with the pack's f32 sum of x. A lane then takes each pack's sum_j x_j q_j
// as 16 four-way integer dot products (two a word of W and a part: the word's even and odd
// values are its nibbles masked in place, the order in which x's bytes are stored), exact
// in int32, scaled once: about 2 operations a value where the f32 sums take ~5.
// XPACKS is the row's packs (the shared array's size).
//
// The engine defines BITS, GS, MR (rows held in registers: M rounded up to 1, 2, 4 or 8),
// NC (columns per team: 1, 2 or 4), U (packs in flight per lane and column), TPR, KS
// (parts per column group: 1, 2 or 4; WGS / TPR is a multiple of it), SUBGROUP, VEC (x's
// lanes in 16 bytes when its rows start at multiples of them, else 1), WVEC (1: a pack of
// 4 or 8 bits is read as uvec4 loads) and IN0_* (x, the scales and biases share the dtype)
// and OUT_*, X_F16_PAIRS (1: x is f16 read as 16-byte vectors). codegen/qmv.cpp packs
// the push constants.
#ifndef BITS
#define BITS 4
#define GS 64
#endif
#ifndef MR
#define MR 1
#endif
#ifndef NC
#define NC 1
#endif
#ifndef TPR
#define TPR 32
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef WVEC
#define WVEC 0
#endif
#ifndef X_F16_PAIRS
#define X_F16_PAIRS 0
#endif
#ifndef X_BF16
#define X_BF16 0
#endif
#ifndef SUBGROUP
#define SUBGROUP 0
#endif
#ifndef PRENORM
#define PRENORM 0
#endif
#ifndef RESIDUAL
#define RESIDUAL 0
#endif
#ifndef GLU
#define GLU 0
#endif
#ifndef PREFETCH
#define PREFETCH 0
#endif
#ifndef F16_DOT
#define F16_DOT 0
#endif
#ifndef X8
#define X8 0
#endif
// X8_STREAM (with X8): x is staged a step at a time, each step's packs of x during the step
// before (a barrier a step), instead of the whole row before the first product. codegen
// takes it for rows too long for that prologue (K > 4096) where the output is huge
// (thousands of workgroups cover each other's barriers; with few, it lost to the other
// sums: docs/matmul.md).
#ifndef X8_STREAM
#define X8_STREAM 0
#endif
#define X8_STEP_GROUPS (TPR * KS * 4)
// X8_AHEAD: with X8, each step's packs are requested before the step before's arithmetic,
// the first before x is staged.
#ifndef X8_AHEAD
#define X8_AHEAD X8
#endif
// With X8 the small loops over columns and packs are unrolled: left rolled, NVIDIA's compiler
// put 16-80 bytes of the i8 kernels (the residual's among them) in local memory (H200,
// `mlx_vulkan_tests -tc="*quantized single-row*"`); the other sums keep their loops as measured.
#if X8
#define X8_UNROLL [[unroll]]
#else
#define X8_UNROLL
#endif
#if X8
#extension GL_EXT_spirv_intrinsics : require
#if BITS != 4 || MR != 1 || !SUBGROUP || !WVEC || VEC != 8 || F16_DOT
#error "X8 takes one 16-bit row of 4-bit packs, read as vectors, with subgroup shuffles"
#endif
#if X8_STREAM && U != 1
#error "X8_STREAM takes one pack in flight"
#endif
// OpSDot (SPV_KHR_integer_dot_product): four signed bytes of a times four of b, summed
// (glslang 12 has no GL_EXT_integer_dot_product; the instruction is declared). The weights'
// nibbles (0-15) are the same as signed bytes, so the product needs no mixed-sign form
// (Vulkan reports the two forms' hardware acceleration separately).
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018],
                  id = 4450) int sdot4x8(uint a, uint b, spirv_literal int packed_format);
#endif
#if F16_DOT
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#ifndef GLU_SIGMOID
#define GLU_SIGMOID(x) m_sigmoid(x)
#endif
#if GLU
// The SwiGLU of the product's two halves (mlx/fusion.h): as the compiled elementwise group
// computes it, each node rounded to the dtype.
#define MLX_MATH_SELECTIVE 1
#define MLX_MATH_SIGMOID 1
#include "include/math.glsl"
#endif
#if SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

#include "include/operands.glsl"
#if VEC > 1
#include "include/lanes.glsl"
#endif

#ifndef U
#define U (4 / NC)  // packs in flight per lane and column (the engine may lower it)
#endif
#ifndef KS
#define KS 1
#endif
#define MASK ((1u << BITS) - 1u)

layout(local_size_x_id = 0) in;
#define WGS gl_WorkGroupSize.x

layout(std430, set = 0, binding = 0) readonly buffer X {
  IN0_ST x[];
};
#if VEC > 1
layout(std430, set = 0, binding = 0) readonly buffer XV {
  IN0_VT xv[];
};
#endif
layout(std430, set = 0, binding = 1) readonly buffer W {
  uint wq[];
};
#if WVEC
layout(std430, set = 0, binding = 1) readonly buffer WV {
  uvec4 wq4[];
};
#endif
layout(std430, set = 0, binding = 2) readonly buffer Scales {
  IN0_ST scales[];
};
layout(std430, set = 0, binding = 3) readonly buffer Biases {
  IN0_ST qbiases[];
};
layout(std430, set = 0, binding = 4) writeonly buffer Out {
  OUT_ST outv[];
};
#if PRENORM
layout(std430, set = 0, binding = 5) readonly buffer NormW {
  IN0_ST norm_w[];
};
#if VEC > 1
layout(std430, set = 0, binding = 5) readonly buffer NormWV {
  IN0_VT norm_wv[];
};
#endif
#define RESIDUAL_BINDING 6
#else
#define RESIDUAL_BINDING 5
#endif
#if RESIDUAL
layout(std430, set = 0, binding = RESIDUAL_BINDING) readonly buffer Residual {
  IN0_ST residual[];
};
#endif

#include "include/matmul_params.glsl"
#if PREFETCH
// PREFETCH 1: the launch also brings the next product's weights into L2 (the include's
// comment); its three regions bind after every other buffer.
#define PF_BINDING (RESIDUAL_BINDING + RESIDUAL)
#include "include/prefetch.glsl"
#endif
// b_* are in words; extra0 / extra1: the scales' and biases' offsets.

#define TEAM_VALUES (MR * NC)
#include "include/teams.glsl"
#if KS > 1
shared float ks_part[WGS / TPR][MR * NC + MR];
#endif

#include "include/quant_pack.glsl"

#if X8
#include "include/qmv_x8.glsl"
#endif

// x[uint(row, 32 * p + j)] for j < 32, as f32. The loops over xs here and in the f32 sums
// below are unrolled: left rolled, NVIDIA's compiler kept xs and a pack's position sums in
// local memory in some variants (bf16 [1,4096] x [4096,4096]^T with a residual: 87 us
// against 10.5 on an H200, docs/matmul.md). The f16 sums' loops stay rolled (faster so).
void load_x(IDX_T row, IDX_T p, out float xs[32]) {
#if VEC > 1
  IDX_T v0 = row / VEC + p * (32 / VEC);
  [[unroll]] for (uint q = 0; q < 32 / VEC; ++q) {
    IN0_VT raw = xv[uint(v0 + q)];
#if X_F16_PAIRS && MLX_F16_HW
    // f16 lanes two at a time, one conversion call per word instead of a lane extraction
    // and a conversion per value: 18.2 -> 17.7 us for the 4-bit product of an 8B-class
    // down projection on an H100, M = 8 84 -> 80 us (docs/matmul.md).
    [[unroll]] for (uint j = 0; j < VEC / 2; ++j) {
      vec2 pair = unpackHalf2x16(raw[j]);
      xs[q * VEC + 2 * j] = pair.x;
      xs[q * VEC + 2 * j + 1] = pair.y;
    }
#else
    [[unroll]] for (uint j = 0; j < VEC; ++j) {
      xs[q * VEC + j] = float(IN0_VLANE(raw, j));
    }
#endif
  }
#else
  [[unroll]] for (uint j = 0; j < 32; ++j) {
    xs[j] = float(IN0_LOAD(x[uint(row + p * 32 + j)]));
  }
#endif
}

#if PRENORM
// Adds the squares of xs to ss, then multiplies xs by the norm weight of values
// 32 * p .. 32 * p + 31. With VEC > 1 the weight's element 0 sits at a multiple of VEC
// (codegen checks).
void weigh_x(IDX_T p, inout float xs[32], inout float ss) {
#if VEC > 1
  IDX_T v0 = pc.norm_w_offset / VEC + p * (32 / VEC);
  for (uint q = 0; q < 32 / VEC; ++q) {
    IN0_VT raw = norm_wv[uint(v0 + q)];
    for (uint j = 0; j < VEC; ++j) {
      float v = xs[q * VEC + j];
      ss = fma(v, v, ss);
      xs[q * VEC + j] = v * float(IN0_VLANE(raw, j));
    }
  }
#else
  for (uint j = 0; j < 32; ++j) {
    ss = fma(xs[j], xs[j], ss);
    xs[j] *= float(IN0_LOAD(norm_w[uint(pc.norm_w_offset + p * 32 + j)]));
  }
#endif
}
#endif

// A lane's packs p0 + u * TPR * KS (u < U) of its NC columns, those before `packs`.
void load_packs(IDX_T p0, IDX_T packs, IDX_T cols[NC], IDX_T w_batch,
                inout uint words[U][NC][BITS]) {
  X8_UNROLL for (uint u = 0; u < U; ++u) {
    IDX_T p = p0 + IDX_T(u * TPR * KS);
    if (p < packs) {
      X8_UNROLL for (uint c = 0; c < NC; ++c) {
        IDX_T w_row = pc.b_offset + w_batch + cols[c] * pc.ldb;
#if WVEC
        IDX_T at = (w_row + p * BITS) / 4;
        for (uint q = 0; q < BITS / 4; ++q) {
          uvec4 v = wq4[uint(at + q)];
          words[u][c][4 * q] = v.x;
          words[u][c][4 * q + 1] = v.y;
          words[u][c][4 * q + 2] = v.z;
          words[u][c][4 * q + 3] = v.w;
        }
#else
        for (uint q = 0; q < BITS; ++q) {
          words[u][c][q] = wq[uint(w_row + p * BITS + q)];
        }
#endif
      }
    }
  }
}

#if F16_DOT
// x's pack p of `row` as 16 f16 pairs (x_{8k+i}, x_{8k+i+4}), index 4k + i: the order in
// which pack_values_f16 gives a word's values, two at a time, and xsum, their sum in f32.
// f16 x: the pairs come from the loaded words by 16-bit moves (no conversion to f32 and
// back). bf16 x (X_BF16): each value to f32 (a shift or a mask), then pairs to f16, exact
// for 2^-17 <= |x| < 65520 (bf16's 8 bits fit f16's 11 there) and infinite above, which the
// pack's sum then shows; `inexact` is set when a nonzero |x| is below 2^-17, and the pack is
// summed again in f32. Zeros are exact: with them counted too, a row of a ReLU's outputs
// would take both sums in most packs (the second comparison costs 15.6 -> 15.8-16.0 us on
// an H100 for the bf16 row below).
void load_x_pairs(IDX_T row, IDX_T p, out f16vec2 xp[16], out float xsum, inout bool inexact) {
  IDX_T v0 = row / VEC + p * (32 / VEC);
  xsum = 0.0f;
  for (uint k = 0; k < 4; ++k) {
    uvec4 raw = xv[uint(v0 + k)];
#if X_BF16
    // Values 8k .. 8k + 7: raw.x holds 0 and 1, raw.y 2 and 3, raw.z 4 and 5, raw.w 6 and 7.
    float v[8];
    v[0] = uintBitsToFloat(raw.x << 16);
    v[1] = uintBitsToFloat(raw.x & 0xffff0000u);
    v[2] = uintBitsToFloat(raw.y << 16);
    v[3] = uintBitsToFloat(raw.y & 0xffff0000u);
    v[4] = uintBitsToFloat(raw.z << 16);
    v[5] = uintBitsToFloat(raw.z & 0xffff0000u);
    v[6] = uintBitsToFloat(raw.w << 16);
    v[7] = uintBitsToFloat(raw.w & 0xffff0000u);
    for (uint i = 0; i < 4; ++i) {
      xp[4 * k + i] = f16vec2(v[i], v[i + 4]);
    }
    for (uint i = 0; i < 8; ++i) {
      xsum += v[i];
      inexact = inexact || (abs(v[i]) < 7.62939453e-6f && v[i] != 0.0f);  // 2^-17
    }
#else
    uint pr[4];
    pr[0] = (raw.x & 0xffffu) | (raw.z << 16);
    pr[1] = (raw.x >> 16) | (raw.z & 0xffff0000u);
    pr[2] = (raw.y & 0xffffu) | (raw.w << 16);
    pr[3] = (raw.y >> 16) | (raw.w & 0xffff0000u);
    for (uint i = 0; i < 4; ++i) {
      xp[4 * k + i] = unpackFloat2x16(pr[i]);
      vec2 f = vec2(xp[4 * k + i]);
      xsum += (f.x + f.y);
    }
#endif
  }
}

// One 4-bit pack's 32 values as 16 exact f16 pairs, qv[4k + i] = (q_{8k+i}, q_{8k+i+4}):
// word values i and i + 4 (bits 4i and 4i + 16) come out together, masked in place
// (positions 2 and 3 after one shift by 8) and ORed under the exponent of 1024, as the
// exact f16 pair 1024 + q (positions 0 and 2) or 1024 + 16 q (positions 1 and 3), which one
// exact add (or multiply-add) brings to q. `expo` is 0x64006400 held in a register, so that
// the mask and the OR are one three-input logic operation (with both as immediates
// NVIDIA's compiler emitted two).
void pack_values_f16(uint words[BITS], uint expo, out f16vec2 qv[16]) {
  const f16vec2 minus_off = f16vec2(-1024.0hf);
  const f16vec2 sixteenth = f16vec2(0.0625hf);
  const f16vec2 minus_off16 = f16vec2(-64.0hf);
  for (uint k = 0; k < 4; ++k) {
    uint w = words[k];
    uint w8 = w >> 8;
    qv[4 * k] = unpackFloat2x16((w & 0x000F000Fu) | expo) + minus_off;
    qv[4 * k + 1] = fma(unpackFloat2x16((w & 0x00F000F0u) | expo), sixteenth, minus_off16);
    qv[4 * k + 2] = unpackFloat2x16((w8 & 0x000F000Fu) | expo) + minus_off;
    qv[4 * k + 3] = fma(unpackFloat2x16((w8 & 0x00F000F0u) | expo), sixteenth, minus_off16);
  }
}

// sum_j x_j q_j of one pack from its pairs: one f16 multiply-add per two values.
float pairs_dot(f16vec2 xp[16], f16vec2 qv[16]) {
  f16vec2 acc = f16vec2(0.0hf);
  for (uint j = 0; j < 16; ++j) {
    acc = fma(xp[j], qv[j], acc);
  }
  vec2 sums = vec2(acc);
  return sums.x + sums.y;
}

#endif

void main() {
#if PREFETCH
  if (prefetch_workgroup()) {
    // A store never taken (m >= 1) keeps the loads.
    uint seen = prefetch_regions();
    if (seen == 0x9E3779B9u && pc.m == 0) {
      outv[uint(pc.out_offset)] = OUT_STORE(float(seen));
    }
    return;
  }
#endif
  // KS teams (the "parts") share a column group, each reading every KS-th run of TPR packs.
  uint team = team_index();
  uint part = team % KS;
  uint group = team / KS;
  uint lane = team_lane();
  IDX_T z = IDX_T(gl_WorkGroupID.z);
  IDX_T outer = z / pc.nb1;
  IDX_T inner = z - outer * pc.nb1;
  IDX_T a_base = pc.a_offset + outer * pc.a_bs0 + inner * pc.a_bs1;
  IDX_T w_batch = outer * pc.b_bs0 + inner * pc.b_bs1;
#if GLU
  // Columns col0 .. col0 + NC / 2 - 1 of the gate half, then the same of the up half; those
  // below N / 2 are stored (past it they repeat the last one).
  IDX_T half_n = pc.n / 2;
  IDX_T col0 = (IDX_T(gl_WorkGroupID.x) * IDX_T(WGS / TPR / KS) + IDX_T(group)) * IDX_T(NC / 2);
  IDX_T cols[NC];
  X8_UNROLL for (uint c = 0; c < NC / 2; ++c) {
    cols[c] = min(col0 + IDX_T(c), half_n - 1);
    cols[c + NC / 2] = cols[c] + half_n;
  }
#define OUT_COLS half_n
#define LIVE (col0 < half_n)
#else
  IDX_T col0 = (IDX_T(gl_WorkGroupID.x) * IDX_T(WGS / TPR / KS) + IDX_T(group)) * IDX_T(NC);
  // Columns past N repeat the last one (reads stay in bounds) and are never stored.
  IDX_T cols[NC];
  X8_UNROLL for (uint c = 0; c < NC; ++c) {
    cols[c] = min(col0 + IDX_T(c), pc.n - 1);
  }
#define OUT_COLS pc.n
#define LIVE (col0 < pc.n)
#endif

#define out_at(i, c) (z * pc.m * pc.n + IDX_T(i) * pc.n + col0 + IDX_T(c))
#if RESIDUAL
  // Loaded first, so the read is in flight during the product instead of after it.
  float res[MR][NC];
  X8_UNROLL for (uint i = 0; i < MR; ++i) {
    X8_UNROLL for (uint c = 0; c < NC; ++c) {
      bool inside = IDX_T(i) < pc.m && col0 + IDX_T(c) < pc.n;
      res[i][c] =
          inside ? float(IN0_LOAD(residual[uint(pc.residual_offset + out_at(i, c))])) : 0.0f;
    }
  }
#endif
  float acc[MR][NC];
  X8_UNROLL for (uint i = 0; i < MR; ++i) {
    X8_UNROLL for (uint c = 0; c < NC; ++c) {
      acc[i][c] = 0.0f;
    }
  }
  IDX_T packs = pc.k / 32;
  IDX_T groups_per_row = pc.k / GS;
#if PRENORM
  // Each lane loads every pack of x once per row (for all NC columns), so its squares of
  // the loaded values sum to its share of the row's.
  float ss[MR];
  for (uint i = 0; i < MR; ++i) {
    ss[i] = 0.0f;
  }
#endif
#if X8_AHEAD
  // The first step's packs are requested before x is staged, so they arrive during it.
  uint next[U][NC][BITS];
  if (LIVE) {
    load_packs(IDX_T(part * TPR + lane), packs, cols, w_batch, next);
  }
#endif
#if X8_STREAM
  // x staged a step ahead of its use (the loop below): the first step's packs now. Each
  // invocation stages at most one group of 8 values a step (codegen: TPR * KS * 4 <= WGS).
  uint x8_t = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
  float x8_part = 0.0f;
  if (x8_t < X8_STEP_GROUPS && x8_t < uint(pc.k) / 8u) {
    IN0_VT raw, wraw;
    load_x8_group(a_base, x8_t, raw, wraw);
    stage_x8_group(x8_t, raw, wraw, x8_part);
  }
  barrier();
#elif X8
  // Every invocation takes part (the staging ends with a barrier). The row's sum of squares
  // is whole in every lane: one lane of the column group's first part carries it into the
  // team sums below.
  float x8_ss = stage_x8(a_base);
#if PRENORM
  ss[0] = lane == 0u && part == 0u ? x8_ss : 0.0f;
#endif
#endif
#if X8_STREAM
  {
    // Steps in the same number for every invocation (a barrier ends each): step st's
    // products, then the next step's x staged, its loads requested before the products.
    IDX_T steps = (packs + IDX_T(TPR * KS - 1)) / IDX_T(TPR * KS);
    for (IDX_T st = 0; st < steps; ++st) {
      IDX_T p = IDX_T(part * TPR + lane) + st * IDX_T(TPR * KS);
      uint words[U][NC][BITS] = next;
      if (LIVE) {
        load_packs(p + IDX_T(TPR * KS), packs, cols, w_batch, next);
      }
      uint u = uint(st + 1) * X8_STEP_GROUPS + x8_t;
      bool stage_next = x8_t < X8_STEP_GROUPS && u < uint(pc.k) / 8u;
      IN0_VT raw, wraw;
      if (stage_next) {
        load_x8_group(a_base, u, raw, wraw);
      }
      if (LIVE && p < packs) {
        x8_step(words[0], p, cols, w_batch, groups_per_row, acc);
      }
      if (stage_next) {
        stage_x8_group(u, raw, wraw, x8_part);
      }
      barrier();
    }
  }
#if PRENORM
  float x8_ss = workgroup_ss(x8_part);
  ss[0] = lane == 0u && part == 0u ? x8_ss : 0.0f;
#endif
#else
  if (LIVE) {
#if F16_DOT
    // Each step's packs are requested before the step before's arithmetic. On an H200 this
    // alone (with the f32 sums) was slower: 80 registers, the rest spilled to shared memory.
    // With the f16 sums it is what made them faster (124 registers).
    // 0x64006400 where the compiler cannot fold it (k < 2^31): pack_values_f16's comment.
    uint expo = 0x64006400u | (uint(pc.k) >> 31);
    uint next[U][NC][BITS];
    load_packs(IDX_T(part * TPR + lane), packs, cols, w_batch, next);
#endif
    for (IDX_T p0 = IDX_T(part * TPR + lane); p0 < packs; p0 += IDX_T(TPR * KS * U)) {
#if F16_DOT || X8_AHEAD
      uint words[U][NC][BITS] = next;
      load_packs(p0 + IDX_T(TPR * KS * U), packs, cols, w_batch, next);
#else
      uint words[U][NC][BITS];
      load_packs(p0, packs, cols, w_batch, words);
#endif
      X8_UNROLL for (uint u = 0; u < U; ++u) {
        IDX_T p = p0 + IDX_T(u * TPR * KS);
        if (p >= packs) {
          break;
        }
#if X8
        x8_step(words[u], p, cols, w_batch, groups_per_row, acc);
#else
        // Scales and biases are dense, one per GS values of each packed row.
        float s[NC], b[NC];
        for (uint c = 0; c < NC; ++c) {
          IDX_T g = w_batch * 32 / BITS / GS + cols[c] * groups_per_row + p * 32 / GS;
          s[c] = float(IN0_LOAD(scales[uint(pc.extra0 + g)]));
          b[c] = float(IN0_LOAD(qbiases[uint(pc.extra1 + g)]));
        }
#if F16_DOT
        // The pack's values as f16 pairs, once for all rows.
        f16vec2 qv[NC][16];
        for (uint c = 0; c < NC; ++c) {
          pack_values_f16(words[u][c], expo, qv[c]);
        }
#elif MR > 1
        // The pack's values as floats once for all rows: extracting them per row made M = 4
        // and 8 cost 3x and 6.5x of M = 1 on an H200.
        float wv[NC][32];
        for (uint c = 0; c < NC; ++c) {
          for (uint j = 0; j < 32; ++j) {
            wv[c][j] = float(pack_value(words[u][c], j));
          }
        }
#define PACK_VALUE(c, j) wv[c][j]
#else
#define PACK_VALUE(c, j) float(pack_value(words[u][c], j))
#endif
#if F16_DOT
        // Every row's and column's pack sum in f16 first, then one test for the lot: a
        // pack whose f16 sum is not finite (an overflow; two halves gone to +inf and -inf
        // add to NaN), x holding a NaN, or bf16 x inexact in f16 sends all of them to the
        // f32 sums (rare), whose code then appears once instead of once a row and column.
        float qd[MR][NC], xsums[MR];
        bool redo = false;
        for (uint i = 0; i < MR; ++i) {
          xsums[i] = 0.0f;
          for (uint c = 0; c < NC; ++c) {
            qd[i][c] = 0.0f;
          }
          if (IDX_T(i) < pc.m) {
            f16vec2 xp[16];
            load_x_pairs(a_base + IDX_T(i) * pc.lda, p, xp, xsums[i], redo);
            for (uint c = 0; c < NC; ++c) {
              qd[i][c] = pairs_dot(xp, qv[c]);
              redo = redo || !(abs(qd[i][c]) < uintBitsToFloat(0x7f800000u));
            }
          }
        }
        if (redo) {
          for (uint i = 0; i < MR; ++i) {
            if (IDX_T(i) < pc.m) {
              float xs[32];
              load_x(a_base + IDX_T(i) * pc.lda, p, xs);
              for (uint c = 0; c < NC; ++c) {
                float qdot = 0.0f;
                for (uint j = 0; j < 32; ++j) {
                  qdot = fma(xs[j], float(pack_value(words[u][c], j)), qdot);
                }
                qd[i][c] = qdot;
              }
            }
          }
        }
        for (uint i = 0; i < MR; ++i) {
          for (uint c = 0; c < NC; ++c) {
            acc[i][c] = fma(s[c], qd[i][c], fma(b[c], xsums[i], acc[i][c]));
          }
        }
#else
        for (uint i = 0; i < MR; ++i) {
          if (IDX_T(i) < pc.m) {
            float xs[32];
            load_x(a_base + IDX_T(i) * pc.lda, p, xs);
#if PRENORM
            weigh_x(p, xs, ss[i]);
#endif
            float xsum = 0.0f;
            [[unroll]] for (uint j = 0; j < 32; ++j) {
              xsum += xs[j];
            }
            [[unroll]] for (uint c = 0; c < NC; ++c) {
#if MR == 1 && defined(PACK_POSITIONS)
              // Values scaled by their position in a 16-bit half (pack_value_scaled): one
              // sum per position, scaled once.
              float part[PACK_POSITIONS];
              [[unroll]] for (uint q = 0; q < PACK_POSITIONS; ++q) {
                part[q] = 0.0f;
              }
              [[unroll]] for (uint j = 0; j < 32; ++j) {
                uint q = pack_position(j);
                part[q] = fma(xs[j], pack_value_scaled(words[u][c], j), part[q]);
              }
              float qdot = part[0];
              [[unroll]] for (uint q = 1; q < PACK_POSITIONS; ++q) {
                qdot = fma(part[q], pack_position_scale(q), qdot);
              }
#else
              float qdot = 0.0f;
              [[unroll]] for (uint j = 0; j < 32; ++j) {
                qdot = fma(xs[j], PACK_VALUE(c, j), qdot);
              }
#endif
              acc[i][c] = fma(s[c], qdot, fma(b[c], xsum, acc[i][c]));
            }
          }
        }
#endif
#endif  // X8
      }
    }
  }
#endif  // X8_STREAM
#if KS > 1
  {
    // The parts of a column group each summed a share of the packs: their team sums meet
    // in shared memory, and the total is left in lane 0 of each part, the lane that stores
    // (so the epilogue below sums no team again).
    for (uint i = 0; i < MR; ++i) {
      for (uint c = 0; c < NC; ++c) {
        float t = team_sum(acc[i][c], i * NC + c);
        if (lane == 0) {
          ks_part[team][i * NC + c] = t;
        }
      }
#if PRENORM
#if !SUBGROUP
      barrier();  // slot 0 of the shared sums may still be read for acc[0][0] (NC 1)
#endif
      float t2 = team_sum(ss[i], 0);
      if (lane == 0) {
        ks_part[team][MR * NC + i] = t2;
      }
#endif
    }
    barrier();
    for (uint i = 0; i < MR; ++i) {
      for (uint c = 0; c < NC; ++c) {
        float t = 0.0f;
        for (uint q = 0; q < KS; ++q) {
          t += ks_part[group * KS + q][i * NC + c];
        }
        acc[i][c] = lane == 0 ? t : 0.0f;
      }
#if PRENORM
      float t2 = 0.0f;
      for (uint q = 0; q < KS; ++q) {
        t2 += ks_part[group * KS + q][MR * NC + i];
      }
      ss[i] = lane == 0 ? t2 : 0.0f;
#endif
    }
  }
#endif
#if KS > 1
  // Lane 0 holds each total already (the parts' sums above): a second team sum of the
  // other lanes' zeros cost each column group 5 shuffles and adds a value. Without it, on
  // an H100: [1,4096] x [14336,4096]^T 4-bit 18.9-19.0 -> 18.0 us (f16), 19.7 -> 18.7
  // (bf16); [1,14336] x [4096,14336]^T bf16 17.8-17.9 -> 17.4 (docs/matmul.md).
#define TEAM_TOTAL(v, slot) (v)
#else
#define TEAM_TOTAL(v, slot) team_sum(v, slot)
#endif
  for (uint i = 0; i < MR; ++i) {
#if PRENORM && KS > 1
    float inv = inversesqrt(ss[i] / float(pc.k) + uintBitsToFloat(uint(pc.eps_bits)));
#elif PRENORM
    // Without subgroups team_sum's shared slots are reused: barriers around this sum.
#if !SUBGROUP
    barrier();
#endif
    float inv = inversesqrt(team_sum(ss[i], 0) / float(pc.k) + uintBitsToFloat(uint(pc.eps_bits)));
#if !SUBGROUP
    barrier();
#endif
#else
    const float inv = 1.0f;
#endif
#if GLU
    for (uint c = 0; c < NC / 2; ++c) {
      float gate = OUT_ROUND(inv * TEAM_TOTAL(acc[i][c], i * NC + c));
      float up = OUT_ROUND(inv * TEAM_TOTAL(acc[i][c + NC / 2], i * NC + c + NC / 2));
      if (lane == 0 && part == 0 && IDX_T(i) < pc.m && col0 + IDX_T(c) < half_n) {
        precise float sig = OUT_ROUND(GLU_SIGMOID(gate));
        precise float silu = OUT_ROUND(gate * sig);
        precise float v = silu * up;
        outv[uint(pc.out_offset + z * pc.m * half_n + IDX_T(i) * half_n + col0 + IDX_T(c))] =
            OUT_STORE(v);
      }
    }
#else
    for (uint c = 0; c < NC; ++c) {
      float v = inv * TEAM_TOTAL(acc[i][c], i * NC + c);
      if (lane == 0 && part == 0 && IDX_T(i) < pc.m && col0 + IDX_T(c) < pc.n) {
#if RESIDUAL
        v += res[i][c];
#endif
        outv[uint(pc.out_offset + out_at(i, c))] = OUT_STORE(v);
      }
    }
#endif
  }
}
