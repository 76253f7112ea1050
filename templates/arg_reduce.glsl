#version 450
#extension GL_GOOGLE_include_directive : require
// argmax / argmin: the uint32 index of the first extreme along one axis of a row-contiguous
// input (docs/reduce.md). MODE_COL 0: `count` rows of `len` contiguous elements, one
// workgroup per row, a shared-memory tree of (value, index) pairs; MODE_COL 1: an
// [outer, len, inner] input, one invocation per output. NaN counts as the extreme (the
// first NaN wins), and ties keep the smaller index, as the CPU reference. The engine
// defines ARGMAX (1: max, 0: min), V_T (the compute type) and V_INIT (the identity);
// IS_NAN(v) is false for integer types.
//
// STAGE (rows only) splits long rows over several workgroups, as reduce.glsl does:
// STAGE_SPLIT folds slice s of row r (workgroup r * splits + s) and stores its best index
// (global within the row; ~0u for an empty slice) and that element's value (in V_T, at
// binding 2); STAGE_FINISH reads those pairs, `len` = splits per row, input 0 being the
// values and binding 2 the indices, and stores the winner's global index. Slices are in
// index order, so the first extreme of a row is the first extreme among its slices.
// VEC > 1 (rows only): rows start at multiples of
// VEC and are read as 16-byte vectors, four in flight per invocation, as reduce.glsl.
// Defaults: f32 argmax over rows.
#ifndef MODE_COL
#define MODE_COL 0
#endif
#ifndef ARGMAX
#define ARGMAX 1
#endif
#ifndef V_T
#define V_T float
#define V_INIT uintBitsToFloat(0xff800000u)
#define IS_NAN(v) isnan(v)
#endif

#ifndef VEC
#define VEC 1
#endif
// SUBGROUP 1 (rows): each subgroup finds its pair by a butterfly of shuffles and subgroup
// 0 folds the subgroups' pairs, one barrier instead of log2(WG) rounds of a shared tree.
#ifndef SUBGROUP
#define SUBGROUP 0
#endif
#if SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#define STAGE_ONE 0
#define STAGE_SPLIT 1
#define STAGE_FINISH 2
#ifndef STAGE
#define STAGE STAGE_ONE
#endif

#include "include/operands.glsl"
#if VEC > 1
#include "include/lanes.glsl"
#endif

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer In0 {
  IN0_ST in0[];
};
layout(std430, set = 0, binding = 1) writeonly buffer Out {
  uint outv[];
};
#if STAGE == STAGE_SPLIT
layout(std430, set = 0, binding = 2) writeonly buffer PartValues {
  V_T part_values[];
};
#elif STAGE == STAGE_FINISH
layout(std430, set = 0, binding = 2) readonly buffer PartIndices {
  uint part_indices[];
};
#endif
#if VEC > 1
layout(std430, set = 0, binding = 0) readonly buffer In0V {
  IN0_VT in0v[];
};
#endif

// codegen/arg_reduce.cpp packs exactly these fields, each IDX_T.
layout(push_constant) uniform Params {
  IDX_T in0_offset;
  IDX_T out_offset;
  IDX_T len;
  IDX_T count;  // ROW: rows; COL: outer * inner
  IDX_T inner;  // COL: stride of the reduced axis
  IDX_T splits;  // STAGE_SPLIT: slices per row
  IDX_T slice;   // STAGE_SPLIT: elements per slice, a multiple of VEC
  IDX_T aux_offset;  // binding 2's element 0
}
pc;

// Whether (vb, ib) should replace (va, ia).
bool better(V_T va, uint ia, V_T vb, uint ib) {
  if (IS_NAN(va)) {
    return IS_NAN(vb) && ib < ia;
  }
  if (IS_NAN(vb)) {
    return true;
  }
#if ARGMAX
  return vb > va || (vb == va && ib < ia);
#else
  return vb < va || (vb == va && ib < ia);
#endif
}

// Folds candidate (x, i) into (v, idx).
void consider(inout V_T v, inout uint idx, V_T x, uint i) {
  if (better(v, idx, x, i)) {
    v = x;
    idx = i;
  }
}

#if VEC > 1
// Whether b, later in index order than a, replaces a: strictly more extreme, or a NaN
// when a is not one (the first NaN stays). Cheaper than better(): no index comparison.
bool later_wins(V_T a, V_T b) {
#if ARGMAX
  return !(a >= b) && !IS_NAN(a);
#else
  return !(a <= b) && !IS_NAN(a);
#endif
}

// The first extreme of the 4 * VEC elements of four vectors (w[k] lane j is element
// k * stride + j, in index order), folded into (v, idx). A tree of pairwise picks: the
// comparisons form a chain of depth log2(4 * VEC) instead of 4 * VEC, and need no index
// comparison; only the tree's winner meets the running pair through better(). On an H100
// the chain made argmax f32 512x32000 bound by issue, not by memory.
void consider_four(inout V_T v, inout uint idx, IN0_VT w0, IN0_VT w1, IN0_VT w2, IN0_VT w3,
                   uint first, uint stride, uint valid) {
  V_T tv[4 * VEC];
  uint ti[4 * VEC];
  for (uint j = 0u; j < VEC; ++j) {
    // Vectors past `valid` hold V_INIT: later than every real element, so never picked
    // over one (a tie keeps the earlier).
    tv[j] = V_T(IN0_VLANE(w0, j));
    tv[VEC + j] = valid > 1u ? V_T(IN0_VLANE(w1, j)) : V_INIT;
    tv[2u * VEC + j] = valid > 2u ? V_T(IN0_VLANE(w2, j)) : V_INIT;
    tv[3u * VEC + j] = valid > 3u ? V_T(IN0_VLANE(w3, j)) : V_INIT;
    ti[j] = j;
    ti[VEC + j] = stride + j;
    ti[2u * VEC + j] = 2u * stride + j;
    ti[3u * VEC + j] = 3u * stride + j;
  }
  for (uint s = 1u; s < 4u * VEC; s <<= 1u) {
    for (uint e = 0u; e < 4u * VEC; e += 2u * s) {
      bool take = later_wins(tv[e], tv[e + s]);
      tv[e] = take ? tv[e + s] : tv[e];
      ti[e] = take ? ti[e + s] : ti[e];
    }
  }
  consider(v, idx, tv[0], first + ti[0]);
}
#endif

#if MODE_COL == 0
shared V_T best_v[gl_WorkGroupSize.x];
shared uint best_i[gl_WorkGroupSize.x];
#endif

#if SUBGROUP
// Every lane ends with its subgroup's best pair: better() orders pairs totally (value,
// NaN first, then the smaller index), so the butterfly's order does not matter.
void subgroup_best(inout V_T v, inout uint idx) {
  for (uint off = gl_SubgroupSize / 2u; off > 0u; off >>= 1u) {
    V_T ov = subgroupShuffleXor(v, off);
    uint oi = subgroupShuffleXor(idx, off);
    consider(v, idx, ov, oi);
  }
}
#endif

void main() {
  V_T v = V_INIT;
  uint idx = 0xffffffffu;
#if MODE_COL
  IDX_T o = IDX_T(gl_WorkGroupID.y) * IDX_T(gl_NumWorkGroups.x * gl_WorkGroupSize.x) +
            IDX_T(gl_GlobalInvocationID.x);
  if (o >= pc.count) {
    return;
  }
  IDX_T outer = o / pc.inner;
  IDX_T base = pc.in0_offset + outer * pc.len * pc.inner + (o - outer * pc.inner);
  for (IDX_T r = 0; r < pc.len; ++r) {
    V_T x = V_T(IN0_LOAD(in0[uint(base + r * pc.inner)]));
    if (better(v, idx, x, uint(r))) {
      v = x;
      idx = uint(r);
    }
  }
  outv[uint(pc.out_offset + o)] = idx;
#else
  IDX_T g = IDX_T(gl_WorkGroupID.y) * IDX_T(gl_NumWorkGroups.x) + IDX_T(gl_WorkGroupID.x);
  IDX_T row = g / pc.splits;
  if (row >= pc.count) {
    return;  // uniform for the whole workgroup
  }
  IDX_T base = pc.in0_offset + row * pc.len;
  uint t = gl_LocalInvocationID.x;
  IDX_T wg = IDX_T(gl_WorkGroupSize.x);
  // This workgroup's elements [begin, end) of the row.
  IDX_T begin = min((g - row * pc.splits) * pc.slice, pc.len);
  IDX_T end = min(begin + pc.slice, pc.len);
#if STAGE == STAGE_FINISH
  for (IDX_T j = IDX_T(t); j < pc.len; j += wg) {
    uint i = part_indices[uint(pc.aux_offset + row * pc.len + j)];
    consider(v, idx, V_T(IN0_LOAD(in0[uint(base + j)])), i);
  }
#else
  IDX_T j0 = begin;
#if VEC > 1
  IDX_T vbase = base / VEC;
  IDX_T q = begin / VEC + IDX_T(t);
  IDX_T q_end = end / VEC;
  for (; q + 3 * wg < q_end; q += 4 * wg) {
    IN0_VT w0 = in0v[uint(vbase + q)];
    IN0_VT w1 = in0v[uint(vbase + q + wg)];
    IN0_VT w2 = in0v[uint(vbase + q + 2 * wg)];
    IN0_VT w3 = in0v[uint(vbase + q + 3 * wg)];
    consider_four(v, idx, w0, w1, w2, w3, uint(q * VEC), uint(wg * VEC), 4u);
  }
  if (q < q_end) {
    // This invocation's last 1-3 vectors as one more tree, not a chain of single ones:
    // argmax f32 512x32000 on an H200 21.0 -> 20.0 us, 1x151936 10.0 -> 9.2.
    uint valid = uint(min((q_end - q + wg - 1) / wg, IDX_T(4)));
    IN0_VT w0 = in0v[uint(vbase + q)];
    IN0_VT w1 = valid > 1u ? in0v[uint(vbase + q + wg)] : IN0_VT(0);
    IN0_VT w2 = valid > 2u ? in0v[uint(vbase + q + 2 * wg)] : IN0_VT(0);
    consider_four(v, idx, w0, w1, w2, IN0_VT(0), uint(q * VEC), uint(wg * VEC), valid);
  }
  j0 = max(q_end * VEC, begin);  // the last len % VEC elements of a row
#endif
  for (IDX_T j = j0 + IDX_T(t); j < end; j += wg) {
    consider(v, idx, V_T(IN0_LOAD(in0[uint(base + j)])), uint(j));
  }
#endif
#if SUBGROUP
  subgroup_best(v, idx);
  if (gl_SubgroupInvocationID == 0u) {
    best_v[gl_SubgroupID] = v;
    best_i[gl_SubgroupID] = idx;
  }
  barrier();
  if (gl_SubgroupID != 0u) {
    return;
  }
  v = V_INIT;
  idx = 0xffffffffu;
  for (uint k = gl_SubgroupInvocationID; k < gl_NumSubgroups; k += gl_SubgroupSize) {
    consider(v, idx, best_v[k], best_i[k]);
  }
  subgroup_best(v, idx);
  if (gl_SubgroupInvocationID == 0u) {
#else
  best_v[t] = v;
  best_i[t] = idx;
  barrier();
  for (uint w = gl_WorkGroupSize.x / 2u; w > 0u; w >>= 1u) {
    if (t < w && better(best_v[t], best_i[t], best_v[t + w], best_i[t + w])) {
      best_v[t] = best_v[t + w];
      best_i[t] = best_i[t + w];
    }
    barrier();
  }
  if (t == 0u) {
    v = best_v[0];
    idx = best_i[0];
#endif
#if STAGE == STAGE_SPLIT
    outv[uint(pc.out_offset + g)] = idx;
    part_values[uint(pc.aux_offset + g)] = v;
#else
    outv[uint(pc.out_offset + row)] = idx;
#endif
  }
#endif
}
