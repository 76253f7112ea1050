#version 450
#extension GL_GOOGLE_include_directive : require
// Reductions (sum, prod, max, min, and, or) of a row-contiguous input, in one of two shapes
// (codegen/reduce.h picks one; see docs/reduce.md):
//
// MODE_ROW: the input is `rows` rows of `len` contiguous elements. Workgroup (r, s) folds
//   the s-th of `splits` slices of row r: each invocation strides through the slice (so
//   loads are coalesced), then the workgroup combines its partials in shared memory. With
//   splits == 1 it stores the finished value; otherwise it stores the partial in the
//   accumulator's type, and a second ROW launch over `splits`-long rows finishes the job
//   (this is how one long row, the all-reduce, uses the whole GPU).
// MODE_COL: the input is [outer, len, inner]; two invocations (the row groups, COL_RG)
//   fold the elements in[o][*][i] of a slice of `len`, every other row each (there are
//   `splits` slices; with more than one, each stores a partial at [o][slice][i] and a
//   second COL launch over [outer, splits, inner] finishes: a wide reduced axis over few
//   columns still fills the GPU). Neighbouring invocations read neighbouring i, so loads
//   stay coalesced.
//
// VEC > 1: loads are VEC-element vectors (16 bytes). ROW: each row and slice starts at a
//   multiple of VEC (codegen checks); COL: each invocation folds VEC adjacent columns.
//   Four loads are issued before they are folded, so each invocation keeps 64 bytes in
//   flight: with one scalar load at a time a GPU cannot cover its memory latency.
//
// The engine defines the op through ACC_T (accumulator type), ACC_INIT, TO_ACC(x) (input
// compute value -> accumulator), ACC_COMBINE(a, b) and FINISH(a) (accumulator -> output
// compute value). Float accumulators are f32 for every float dtype, integers wrap in their
// own width, max/min propagate NaN. Float sums define COMPENSATED: each invocation keeps
// Neumaier's running error term and the tree merges (sum, error) pairs with TwoSum, so the
// result is within about one f32 rounding per launch of the exact sum, whatever the length
// (a plain f32 sum of 1e8, 1000 ones and -1e8 gives 992, not 1000). Defaults: f32 sum
// over rows.
#ifndef MODE_COL
#define MODE_COL 0
#endif
#ifndef SUBGROUP
#define SUBGROUP 0
#endif
#if SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#ifndef COMPENSATED
#define COMPENSATED 0
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef ACC_T
#define ACC_T float
#define ACC_INIT 0.0f
#define TO_ACC(x) (x)
#define ACC_COMBINE(a, b) ((a) + (b))
#define FINISH(a) (a)
#endif

#include "include/operands.glsl"
#if VEC > 1
#include "include/lanes.glsl"
#endif

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer In0 {
  IN0_ST in0[];
};
// Not restrict, like every output (include/elementwise.glsl).
layout(std430, set = 0, binding = 1) writeonly buffer Out {
  OUT_ST outv[];
};
#if VEC > 1
layout(std430, set = 0, binding = 0) readonly buffer In0V {
  IN0_VT in0v[];
};
#endif

// codegen/reduce.cpp packs exactly these fields, each IDX_T.
layout(push_constant) uniform Params {
  IDX_T in0_offset;
  IDX_T out_offset;
  IDX_T len;     // elements folded into one output
  IDX_T count;   // ROW: rows; COL: outer * inner outputs
  IDX_T inner;   // COL: inner extent (stride of the reduced axis)
  IDX_T splits;  // slices per row / column (1: the output is final)
  IDX_T slice;   // elements (ROW) or rows (COL) per slice; a multiple of VEC for ROW
}
pc;

ACC_T load_acc(IDX_T i) {
  return TO_ACC(IN0_LOAD(in0[uint(i)]));
}

#if COMPENSATED
// (s, c) += x, Neumaier: c collects what rounding s dropped. `precise` keeps the compiler
// from reassociating or contracting these operations, which would cancel the error terms.
void add_compensated(inout float s, inout float c, float x) {
  precise float t = s + x;
  precise float e = abs(s) >= abs(x) ? (s - t) + x : (x - t) + s;
  c += e;
  s = t;
}
#define FOLD(s, c, x) add_compensated(s, c, x)
#else
#define FOLD(s, c, x) s = ACC_COMBINE(s, x)
#endif

#if MODE_COL
// Row groups per workgroup in column mode (codegen/reduce.cpp's kColRowGroups): two
// invocations share each column block, so the same (column, slice) grid keeps twice the
// loads in flight, and half the slices (so half the partials, finished in one launch)
// fill the GPU. Column sum f32 8192^2 on an H200: 80.3 -> 70.9 us.
#define COL_RG 2u
shared ACC_T col_s[gl_WorkGroupSize.x * VEC];
#if COMPENSATED
shared float col_c[gl_WorkGroupSize.x * VEC];
#endif
#endif
#if MODE_COL == 0
shared ACC_T partial[gl_WorkGroupSize.x];
#if COMPENSATED
shared float partial_c[gl_WorkGroupSize.x];
#endif
#endif

// (s1, c1) += (s2, c2): TwoSum when compensated, ACC_COMBINE otherwise.
void merge_pair(inout ACC_T s1, inout ACC_T c1, ACC_T s2, ACC_T c2) {
#if COMPENSATED
  precise float s = s1 + s2;
  precise float bp = s - s1;
  precise float err = (s1 - (s - bp)) + (s2 - bp);
  c1 += c2 + err;
  s1 = s;
#else
  s1 = ACC_COMBINE(s1, s2);
#endif
}

#if SUBGROUP
// Butterfly over the subgroup: every lane ends with the subgroup's combined pair.
void subgroup_fold(inout ACC_T s, inout ACC_T c) {
  for (uint off = gl_SubgroupSize / 2u; off > 0u; off >>= 1u) {
    ACC_T so = subgroupShuffleXor(s, off);
    ACC_T co = subgroupShuffleXor(c, off);
    merge_pair(s, c, so, co);
  }
}
#endif

#if VEC > 1
// Folds the VEC lanes of a vector into lane accumulators (COL) or one accumulator (ROW).
void fold_lanes(inout ACC_T s[VEC], inout ACC_T c[VEC], IN0_VT w) {
  for (uint j = 0u; j < VEC; ++j) {
    FOLD(s[j], c[j], TO_ACC(IN0_VLANE(w, j)));
  }
}
void fold_vector(inout ACC_T s, inout ACC_T c, IN0_VT w) {
  for (uint j = 0u; j < VEC; ++j) {
    FOLD(s, c, TO_ACC(IN0_VLANE(w, j)));
  }
}
#endif

// The linear workgroup index: large launches spread groups over y.
IDX_T group_index() {
  return IDX_T(gl_WorkGroupID.y) * IDX_T(gl_NumWorkGroups.x) + IDX_T(gl_WorkGroupID.x);
}

ACC_T finish_pair(ACC_T s, ACC_T c) {
#if COMPENSATED
  return isinf(s) || isnan(s) ? s : s + c;  // inf - inf in c would be NaN
#else
  return s;
#endif
}

void main() {
  uint t = gl_LocalInvocationID.x;
  IDX_T wg = IDX_T(gl_WorkGroupSize.x);
#if MODE_COL
  // Invocation (row group, column block, slice): VEC adjacent outputs (count % VEC == 0
  // when VEC > 1). The COL_RG row groups of a workgroup fold every COL_RG-th row of the
  // slice for the same columns and merge in shared memory.
  const uint CPW = gl_WorkGroupSize.x / COL_RG;  // columns (of VEC) per workgroup
  uint rg = t / CPW;
  uint tc = t - rg * CPW;
  IDX_T ncols = pc.count / VEC;
  IDX_T col_groups = (ncols + IDX_T(CPW) - 1) / IDX_T(CPW);
  IDX_T g = group_index();
  IDX_T s = g / col_groups;
  IDX_T c = (g - s * col_groups) * IDX_T(CPW) + IDX_T(tc);
  bool live = c < ncols && s < pc.splits;  // the others still reach the barrier
  IDX_T o = live ? c * VEC : IDX_T(0);
  IDX_T outer = o / pc.inner;
  IDX_T i = o - outer * pc.inner;
  IDX_T base = pc.in0_offset + outer * pc.len * pc.inner + i;
  const IDX_T RG = IDX_T(COL_RG);
  IDX_T r = s * pc.slice + IDX_T(rg);
  IDX_T r_end = live ? min(s * pc.slice + pc.slice, pc.len) : IDX_T(0);
  ACC_T acc[VEC], comp[VEC];
  for (uint j = 0u; j < VEC; ++j) {
    acc[j] = ACC_INIT;
    comp[j] = ACC_INIT;
  }
#if VEC > 1
  IDX_T vbase = base / VEC;
  IDX_T vstride = pc.inner / VEC;
  for (; r + 3 * RG < r_end; r += 4 * RG) {
    IN0_VT w0 = in0v[uint(vbase + r * vstride)];
    IN0_VT w1 = in0v[uint(vbase + (r + RG) * vstride)];
    IN0_VT w2 = in0v[uint(vbase + (r + 2 * RG) * vstride)];
    IN0_VT w3 = in0v[uint(vbase + (r + 3 * RG) * vstride)];
    fold_lanes(acc, comp, w0);
    fold_lanes(acc, comp, w1);
    fold_lanes(acc, comp, w2);
    fold_lanes(acc, comp, w3);
  }
  for (; r < r_end; r += RG) {
    fold_lanes(acc, comp, in0v[uint(vbase + r * vstride)]);
  }
#else
  for (; r + 3 * RG < r_end; r += 4 * RG) {
    ACC_T x0 = load_acc(base + r * pc.inner);
    ACC_T x1 = load_acc(base + (r + RG) * pc.inner);
    ACC_T x2 = load_acc(base + (r + 2 * RG) * pc.inner);
    ACC_T x3 = load_acc(base + (r + 3 * RG) * pc.inner);
    FOLD(acc[0], comp[0], x0);
    FOLD(acc[0], comp[0], x1);
    FOLD(acc[0], comp[0], x2);
    FOLD(acc[0], comp[0], x3);
  }
  for (; r < r_end; r += RG) {
    FOLD(acc[0], comp[0], load_acc(base + r * pc.inner));
  }
#endif
  for (uint j = 0u; j < VEC; ++j) {
    col_s[t * VEC + j] = acc[j];
#if COMPENSATED
    col_c[t * VEC + j] = comp[j];
#endif
  }
  barrier();
  if (rg != 0u || !live) {
    return;
  }
  for (uint k = 1u; k < COL_RG; ++k) {
    for (uint j = 0u; j < VEC; ++j) {
      uint at = (tc + k * CPW) * VEC + j;
#if COMPENSATED
      merge_pair(acc[j], comp[j], col_s[at], col_c[at]);
#else
      merge_pair(acc[j], comp[j], col_s[at], ACC_INIT);
#endif
    }
  }
  IDX_T dst = pc.out_offset + (outer * pc.splits + s) * pc.inner + i;
  for (uint j = 0u; j < VEC; ++j) {
    outv[uint(dst + IDX_T(j))] = OUT_STORE(FINISH(finish_pair(acc[j], comp[j])));
  }
#else
  IDX_T row = group_index();
  IDX_T r = row / pc.splits;
  IDX_T s = row - r * pc.splits;
  if (r >= pc.count) {
    return;  // uniform for the whole workgroup: no barrier is skipped by part of it
  }
  IDX_T begin = min(s * pc.slice, pc.len);
  IDX_T end = min(begin + pc.slice, pc.len);
  IDX_T base = pc.in0_offset + r * pc.len;
  ACC_T acc = ACC_INIT;
  ACC_T comp = ACC_INIT;
#if VEC > 1
  // Whole vectors of the slice, then (at a row's end only) the last len % VEC elements.
  IDX_T vbase = base / VEC;
  IDX_T q = begin / VEC + IDX_T(t);
  IDX_T q_end = end / VEC;
  for (; q + 3 * wg < q_end; q += 4 * wg) {
    IN0_VT w0 = in0v[uint(vbase + q)];
    IN0_VT w1 = in0v[uint(vbase + q + wg)];
    IN0_VT w2 = in0v[uint(vbase + q + 2 * wg)];
    IN0_VT w3 = in0v[uint(vbase + q + 3 * wg)];
    fold_vector(acc, comp, w0);
    fold_vector(acc, comp, w1);
    fold_vector(acc, comp, w2);
    fold_vector(acc, comp, w3);
  }
  for (; q < q_end; q += wg) {
    fold_vector(acc, comp, in0v[uint(vbase + q)]);
  }
  // (A slice clamped to the row's end starts there, past q_end * VEC: it folds nothing.)
  for (IDX_T j = max(q_end * VEC, begin) + IDX_T(t); j < end; j += wg) {
    FOLD(acc, comp, load_acc(base + j));
  }
#else
  IDX_T j = begin + IDX_T(t);
  for (; j + 3 * wg < end; j += 4 * wg) {
    ACC_T x0 = load_acc(base + j);
    ACC_T x1 = load_acc(base + j + wg);
    ACC_T x2 = load_acc(base + j + 2 * wg);
    ACC_T x3 = load_acc(base + j + 3 * wg);
    FOLD(acc, comp, x0);
    FOLD(acc, comp, x1);
    FOLD(acc, comp, x2);
    FOLD(acc, comp, x3);
  }
  for (; j < end; j += wg) {
    FOLD(acc, comp, load_acc(base + j));
  }
#endif
#if SUBGROUP
  // Each subgroup folds itself in registers; subgroup 0 then folds the subgroups' pairs.
  subgroup_fold(acc, comp);
  if (gl_SubgroupInvocationID == 0u) {
    partial[gl_SubgroupID] = acc;
#if COMPENSATED
    partial_c[gl_SubgroupID] = comp;
#endif
  }
  barrier();
  if (gl_SubgroupID == 0u) {
    ACC_T s = ACC_INIT, c = ACC_INIT;
    for (uint k = gl_SubgroupInvocationID; k < gl_NumSubgroups; k += gl_SubgroupSize) {
#if COMPENSATED
      merge_pair(s, c, partial[k], partial_c[k]);
#else
      merge_pair(s, c, partial[k], ACC_INIT);
#endif
    }
    subgroup_fold(s, c);
    // Lane 0 of subgroup 0 (which invocation that is, is the implementation's choice).
    if (gl_SubgroupInvocationID == 0u) {
#if COMPENSATED
      s = isinf(s) || isnan(s) ? s : s + c;
#endif
      outv[uint(pc.out_offset + row)] = OUT_STORE(FINISH(s));
    }
  }
#else
  partial[t] = acc;
#if COMPENSATED
  partial_c[t] = comp;
#endif
  barrier();
  for (uint w = gl_WorkGroupSize.x / 2u; w > 0u; w >>= 1u) {
    if (t < w) {
#if COMPENSATED
      // TwoSum: the exact error of s1 + s2 joins the two error terms.
      float s1 = partial[t], s2 = partial[t + w];
      precise float s = s1 + s2;
      precise float bp = s - s1;
      precise float err = (s1 - (s - bp)) + (s2 - bp);
      partial_c[t] += partial_c[t + w] + err;
      partial[t] = s;
#else
      partial[t] = ACC_COMBINE(partial[t], partial[t + w]);
#endif
    }
    barrier();
  }
  if (t == 0u) {
    ACC_T total = partial[0];
#if COMPENSATED
    total = isinf(total) || isnan(total) ? total : total + partial_c[0];
#endif
    outv[uint(pc.out_offset + row)] = OUT_STORE(FINISH(total));
  }
#endif  // SUBGROUP
#endif
}
