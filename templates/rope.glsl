#version 450
#extension GL_GOOGLE_include_directive : require
// Rotary position embedding over rows: `count` rows of `d` contiguous elements, row r at
// position t = r % t_len of batch entry r / per_batch. Pair k (k < dims / 2) of a row is
//   traditional: (2k, 2k + 1)   otherwise: (k, k + dims / 2)
// and rotates by theta = (offset[b] + t) * scale * inv_freq(k), where inv_freq(k) is
// 2^(-k * log2(base) / (dims / 2)) or 1 / freqs[k]; elements past `dims` pass through.
// The angle and the rotation are f32 whatever the storage dtype, rounded once on store.
//
// Invocation u of a row handles VEC pairs read as two VEC-element vectors: elements
// [u*VEC, u*VEC + VEC) and [half + u*VEC, ...) (the two halves), or [2*u*VEC, 2*u*VEC + VEC)
// and the next VEC (traditional: adjacent pairs). Invocations past dims / (2 * VEC) copy
// one passed-through element each.
//
// INTO 1 writes row t of each block of t_len rows to row clamp(start) + t of the output's
// block of out_rows rows (a slice_update of the rope's output at an array start, a KV cache
// update; the output holds the source already).
//
// PRENORM 1 applies rms_norm(x, norm_w, eps) to each row first (the rope of an rms_norm's
// output, mlx/fusion.h): rows then have no passed-through part, the units invocations of
// a row (a power of two dividing the subgroup size) sum its squares with subgroup shuffles,
// and each normalized value is rounded to the dtype as the norm's output would be.
//
// The engine defines: TRADITIONAL, FREQS (1: a freqs binding), PRENORM, VEC (1 or 2 or 4),
// IN0_*/OUT_* (one float dtype). Defaults: f32, halves, computed frequencies, scalar.
#ifndef TRADITIONAL
#define TRADITIONAL 0
#endif
#ifndef FREQS
#define FREQS 0
#endif
#ifndef PRENORM
#define PRENORM 0
#endif
#ifndef INTO
#define INTO 0
#endif
#ifndef VEC
#define VEC 1
#endif
#if PRENORM
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

#include "include/operands.glsl"
#include "include/rope_angle.glsl"
#if VEC > 1
#include "include/lanes.glsl"
#endif

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer In0 {
  IN0_ST in0[];
};
layout(std430, set = 0, binding = 1) readonly buffer Offsets {
  int offsets[];
};
#if FREQS
layout(std430, set = 0, binding = 2) readonly buffer Freqs {
  float freqs[];
};
#define NORM_BINDING 3
#else
#define NORM_BINDING 2
#endif
#if PRENORM
layout(std430, set = 0, binding = NORM_BINDING) readonly buffer NormW {
  IN0_ST norm_w[];
};
#define START_BINDING (NORM_BINDING + 1)
#else
#define START_BINDING NORM_BINDING
#endif
#if INTO
layout(std430, set = 0, binding = START_BINDING) readonly buffer Start {
  int starts[];
};
#define OUT_BINDING (START_BINDING + 1)
#else
#define OUT_BINDING START_BINDING
#endif
layout(std430, set = 0, binding = OUT_BINDING) writeonly buffer Out {
  OUT_ST outv[];
};
#if VEC > 1
layout(std430, set = 0, binding = 0) readonly buffer In0V {
  IN0_VT in0v[];
};
layout(std430, set = 0, binding = OUT_BINDING) writeonly buffer OutV {
  OUT_VT outvv[];
};
#endif

// codegen/fast.cpp packs exactly these fields, each IDX_T.
layout(push_constant) uniform Params {
  IDX_T in0_offset;
  IDX_T out_offset;
  IDX_T offsets_offset;
  IDX_T freqs_offset;
  IDX_T row0;        // the launch's first row within x (positions and batch entries)
  IDX_T count;       // rows in this launch
  IDX_T d;           // row length
  IDX_T half_dims;   // dims / 2
  IDX_T t_len;       // positions per batch entry (x.shape(-2))
  IDX_T per_batch;   // rows per batch entry
  IDX_T off_stride;  // 1: one offset per batch entry; 0: one for all
  IDX_T scale_bits;  // f32 bits of scale
  IDX_T coef_bits;   // f32 bits of log2(base) / half_dims
  IDX_T norm_w_offset;  // PRENORM: the norm weight's element 0
  IDX_T eps_bits;       // PRENORM: f32 bits of the norm's eps
#if INTO
  IDX_T out_rows;      // rows of each output block (the slice_update's axis)
  IDX_T start_offset;  // the start's element
#endif
}
pc;

float inv_freq(IDX_T k) {
#if FREQS
  return 1.0f / freqs[uint(pc.freqs_offset + k)];
#else
  return rope_inv_freq(float(k), uintBitsToFloat(uint(pc.coef_bits)));
#endif
}

#if PRENORM
// The row's sum of squares over its `units` invocations: lanes u ^ o of one row (units is
// a power of two dividing the subgroup size, and rows start at multiples of it).
float row_sum_squares(float s, IDX_T units) {
  for (uint o = 1u; o < uint(units); o <<= 1) {
    s += subgroupShuffleXor(s, o);
  }
  return s;
}

// rms_norm's value for element j of the row: x * inv * w, rounded to the dtype.
float normed(float x, float inv, IDX_T j) {
  return OUT_ROUND(x * inv * IN0_LOAD(norm_w[uint(pc.norm_w_offset + j)]));
}
#endif

void main() {
  uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
#if PRENORM
  // Rows follow subgroup lanes, so each row's invocations are one shuffle cluster.
  uint local = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
#else
  uint local = gl_LocalInvocationID.x;
#endif
  IDX_T gid = IDX_T(group) * IDX_T(gl_WorkGroupSize.x) + IDX_T(local);
  IDX_T units = pc.half_dims / VEC;
  IDX_T per_row = units + (pc.d - 2 * pc.half_dims);
  IDX_T row = gid / per_row;
  if (row >= pc.count) {
    return;
  }
  IDX_T u = gid - row * per_row;
  IDX_T base = pc.in0_offset + row * pc.d;
#if INTO
  // Row t of block k goes to row clamp(start) + t of the output's block k (one launch).
  IDX_T block = row / pc.t_len;
  IDX_T first_row = IDX_T(clamp(starts[uint(pc.start_offset)], 0, int(pc.out_rows - pc.t_len)));
  IDX_T obase = pc.out_offset + (block * pc.out_rows + first_row + (row - block * pc.t_len)) * pc.d;
#else
  IDX_T obase = pc.out_offset + row * pc.d;
#endif
  if (u >= units) {
    IDX_T j = 2 * pc.half_dims + (u - units);
    outv[uint(obase + j)] = OUT_STORE(IN0_LOAD(in0[uint(base + j)]));
    return;
  }
  IDX_T xrow = pc.row0 + row;
  IDX_T b = xrow / pc.per_batch;
  int off = offsets[uint(pc.offsets_offset + b * pc.off_stride)];
  // As the CPU: the integer position, then one rounding to f32 (exact below 2^24).
  float pos = float(off + int(xrow % pc.t_len)) * uintBitsToFloat(uint(pc.scale_bits));
#if TRADITIONAL
  IDX_T first = 2 * u * VEC;
  IDX_T second = first + VEC;
#else
  IDX_T first = u * VEC;
  IDX_T second = pc.half_dims + first;
#endif
  float a[VEC], c[VEC];
#if VEC > 1
  IN0_VT wa = in0v[uint((base + first) / VEC)];
  IN0_VT wb = in0v[uint((base + second) / VEC)];
  for (uint j = 0u; j < VEC; ++j) {
    a[j] = IN0_VLANE(wa, j);
    c[j] = IN0_VLANE(wb, j);
  }
#else
  a[0] = IN0_LOAD(in0[uint(base + first)]);
  c[0] = IN0_LOAD(in0[uint(base + second)]);
#endif
#if PRENORM
  float ss = 0.0f;
  for (uint j = 0u; j < VEC; ++j) {
    ss += a[j] * a[j] + c[j] * c[j];
  }
  float inv = inversesqrt(row_sum_squares(ss, units) / float(pc.d) +
                          uintBitsToFloat(uint(pc.eps_bits)));
  for (uint j = 0u; j < VEC; ++j) {
    a[j] = normed(a[j], inv, first + IDX_T(j));
    c[j] = normed(c[j], inv, second + IDX_T(j));
  }
#endif
  // x1/x2 of pair p: the two halves' lane p, or (traditional) lanes 2p, 2p + 1 of a then c.
  float y1[VEC], y2[VEC];
  for (uint p = 0u; p < VEC; ++p) {
#if TRADITIONAL
    uint e1 = 2u * p, e2 = 2u * p + 1u;  // in the span a ++ c
    float x1 = e1 < VEC ? a[e1] : c[e1 - VEC];
    float x2 = e2 < VEC ? a[e2] : c[e2 - VEC];
    IDX_T k = u * VEC + IDX_T(p);
#else
    float x1 = a[p];
    float x2 = c[p];
    IDX_T k = first + IDX_T(p);
#endif
    float s, co;
    sincos_reduced(pos * inv_freq(k), s, co);
    y1[p] = x1 * co - x2 * s;
    y2[p] = x1 * s + x2 * co;
  }
#if TRADITIONAL
  // Back to element order: pair p is elements 2p, 2p + 1 of the 2 * VEC span.
  float e[2 * VEC];
  for (uint p = 0u; p < VEC; ++p) {
    e[2u * p] = y1[p];
    e[2u * p + 1u] = y2[p];
  }
  for (uint j = 0u; j < VEC; ++j) {
    y1[j] = e[j];
    y2[j] = e[VEC + j];
  }
#endif
#if VEC > 1
  OUT_VT oa = OUT_VT(0), ob = OUT_VT(0);
#ifdef OUT_PACK2
  for (uint j = 0u; j < VEC; j += 2u) {
    oa[j / 2u] = OUT_PACK2(y1[j], y1[j + 1u]);
    ob[j / 2u] = OUT_PACK2(y2[j], y2[j + 1u]);
  }
#else
  for (uint j = 0u; j < VEC; ++j) {
    OUT_VSET(oa, j, y1[j]);
    OUT_VSET(ob, j, y2[j]);
  }
#endif
  outvv[uint((obase + first) / VEC)] = oa;
  outvv[uint((obase + second) / VEC)] = ob;
#else
  outv[uint(obase + first)] = OUT_STORE(y1[0]);
  outv[uint(obase + second)] = OUT_STORE(y2[0]);
#endif
}
