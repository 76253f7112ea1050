#version 450
#extension GL_GOOGLE_include_directive : require
// Writes at positions held in index arrays (scatter and its reductions, put_along_axis,
// scatter_add_axis, slice_update at an array start), into an output that already holds the
// source (a copy, or the donated source itself). Update (i, p, q): i < n an index
// position, p a coordinate over the outer window dims (not indexed), q over the inner ones
// (on indexed axes); it lands at
//   sum_k v_k * axis_stride[k] + <p, outer out strides> + <q, inner out strides>,
//   v_k = the index at idx_offset[k] + i * idx_mul_i + <p, outer idx strides>,
// and combines by OP(current, update) (OP(y, x) = x for a plain scatter). An update whose
// index is out of range (CLAMP 0) is dropped.
//   MODE 0 (each):   one invocation per update; no two updates meet (n == 1).
//   MODE 1 (seq):    one invocation per p, looping over i then q: duplicates combine in
//                    index order, as on the CPU, and no two invocations meet (they differ
//                    on a dim no index moves).
//   MODE 2 (atomic): one invocation per update, atomic on the element's 32-bit word
//                    (atomicAdd/Max/Min for 32-bit integers, else a compare-and-swap loop).
//
// Bindings: 0 output (read and written), 1 indices, 2 updates, 3 meta (IDX_T):
//   [n_outer, n_inner, naxes, outer: shape, out_stride, idx_stride, upd_stride (n_outer
//    each), inner: shape, out_stride, upd_stride (n_inner each), then per axis:
//    idx_offset, axis_stride, axis_size, limit]
#ifndef MODE
#define MODE 1
#endif
#ifndef OP
#define OP(y, x) ((y) + (x))
#endif
#ifndef NATIVE_ATOMIC
#define NATIVE_ATOMIC 0
#endif
#ifndef ELEM_BYTES
#define ELEM_BYTES 4
#define FROM_BITS(b) uintBitsToFloat(b)
#define TO_BITS(v) floatBitsToUint(v)
#endif

#include "include/operands.glsl"
#include "include/index_values.glsl"

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) buffer Out {
  OUT_ST outv[];
};
#if MODE == 2 && !NATIVE_ATOMIC
// The same binding as 32-bit words, for the compare-and-swap loop.
layout(std430, set = 0, binding = 0) buffer OutWords {
  uint outw[];
};
#endif
layout(std430, set = 0, binding = 1) readonly buffer Idx {
  INDEX_ST idxv[];
};
layout(std430, set = 0, binding = 2) readonly buffer Upd {
  IN0_ST upd[];
};
layout(std430, set = 0, binding = 3) readonly buffer Meta {
  IDX_T meta[];
};

// codegen/indexing.cpp packs exactly these fields, each IDX_T.
layout(push_constant) uniform Params {
  IDX_T count;  // invocations: n * P * Q (MODE 0, 2) or P (MODE 1)
  IDX_T n;
  IDX_T outer_size;  // P
  IDX_T inner_size;  // Q
  IDX_T idx_mul_i;
  IDX_T upd_mul_i;
  IDX_T upd_offset;
  IDX_T out_offset;
}
pc;

// NaN-propagating maximum / minimum of the current value y and the update x, as the CPU's
// Maximum / Minimum (a NaN already there stays, a NaN update wins).
float scatter_max_f(float y, float x) {
  return isnan(y) ? y : isnan(x) ? x : (y < x ? x : y);
}
float scatter_min_f(float y, float x) {
  return isnan(y) ? y : isnan(x) ? x : (x < y ? x : y);
}

// Offsets of outer coordinate p in the output, the index binding and the updates.
void outer_offsets(IDX_T p, out IDX_T o, out IDX_T ip, out IDX_T up) {
  uint no = uint(meta[0]);
  o = IDX_T(0);
  ip = IDX_T(0);
  up = IDX_T(0);
  for (uint d = no; d-- > 0u;) {
    IDX_T ext = meta[3u + d];
    IDX_T c = p % ext;
    p /= ext;
    o += c * meta[3u + no + d];
    ip += c * meta[3u + 2u * no + d];
    up += c * meta[3u + 3u * no + d];
  }
}

// Offsets of inner coordinate q in the output and the updates.
void inner_offsets(IDX_T q, out IDX_T o, out IDX_T up) {
  uint no = uint(meta[0]);
  uint ni = uint(meta[1]);
  uint b = 3u + 4u * no;
  o = IDX_T(0);
  up = IDX_T(0);
  for (uint d = ni; d-- > 0u;) {
    IDX_T ext = meta[b + d];
    IDX_T c = q % ext;
    q /= ext;
    o += c * meta[b + ni + d];
    up += c * meta[b + 2u * ni + d];
  }
}

// The output offset of window i (at outer index offset ip), false when an index is out of
// range.
bool window_base(IDX_T i, IDX_T ip, out IDX_T base) {
  uint no = uint(meta[0]);
  uint ni = uint(meta[1]);
  uint na = uint(meta[2]);
  uint a0 = 3u + 4u * no + 3u * ni;
  base = IDX_T(0);
  bool ok = true;
  for (uint k = 0u; k < na; ++k) {
    uint m = a0 + 4u * k;
    IDX_T v;
    ok = resolve_index(INDEX_LOAD(idxv[uint(meta[m] + i * pc.idx_mul_i + ip)]), meta[m + 2u], meta[m + 3u], v) && ok;
    base += v * meta[m + 1u];
  }
  return ok;
}

// Combines update x into output element e.
void apply(IDX_T e, IN0_CT x) {
#if MODE == 2
#if NATIVE_ATOMIC
  ATOMIC_OP(outv[uint(e)], x);
#else
  // The element's 32-bit word: other lanes of the word are kept as they are.
  uint byte_pos = uint(e) * uint(ELEM_BYTES);
  uint w = byte_pos >> 2u;
  uint shift = (byte_pos & 3u) * 8u;
  uint mask = (0xffffffffu >> (32u - uint(ELEM_BYTES) * 8u)) << shift;
  uint old = outw[w];
  for (;;) {
    IN0_CT y = FROM_BITS((old & mask) >> shift);
    uint nw = (old & ~mask) | ((uint(TO_BITS(OP(y, x))) << shift) & mask);
    uint prev = atomicCompSwap(outw[w], old, nw);
    if (prev == old) {
      break;
    }
    old = prev;
  }
#endif
#else
  IN0_CT y = IN0_LOAD(outv[uint(e)]);
  outv[uint(e)] = OUT_STORE(OP(y, x));
#endif
}

IN0_CT update_at(IDX_T pos) {
  return IN0_LOAD(upd[uint(pc.upd_offset + pos)]);
}

void main() {
  IDX_T t = IDX_T(gl_WorkGroupID.y) * IDX_T(gl_NumWorkGroups.x) * IDX_T(gl_WorkGroupSize.x) +
            IDX_T(gl_GlobalInvocationID.x);
  if (t >= pc.count) {
    return;
  }
#if MODE == 1
  IDX_T po, ip, pu;
  outer_offsets(t, po, ip, pu);
  for (IDX_T i = IDX_T(0); i < pc.n; ++i) {
    IDX_T base;
    if (!window_base(i, ip, base)) {
      continue;
    }
    for (IDX_T q = IDX_T(0); q < pc.inner_size; ++q) {
      IDX_T qo, qu;
      inner_offsets(q, qo, qu);
      apply(pc.out_offset + base + po + qo, update_at(i * pc.upd_mul_i + pu + qu));
    }
  }
#else
  IDX_T q = t % pc.inner_size;
  IDX_T r = t / pc.inner_size;
  IDX_T p = r % pc.outer_size;
  IDX_T i = r / pc.outer_size;
  IDX_T po, ip, pu, qo, qu;
  outer_offsets(p, po, ip, pu);
  inner_offsets(q, qo, qu);
  IDX_T base;
  if (window_base(i, ip, base)) {
    apply(pc.out_offset + base + po + qo, update_at(i * pc.upd_mul_i + pu + qu));
  }
#endif
}
