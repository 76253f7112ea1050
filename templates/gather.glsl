#version 450
#extension GL_GOOGLE_include_directive : require
// Reads at positions held in index arrays (take, take_along_axis, gather, slice at an array
// start). The output is row-contiguous; output coordinate c reads the source at
//   sum_d c[d] * src_stride[d] + sum_k v_k * axis_stride[k],
//   v_k = the index at idx_offset[k] + sum_d c[d] * idx_stride[d] (include/index_values.glsl).
// An out-of-range index (CLAMP 0) gives zeros, written only by the launch with pc.fill set.
//   ROWS 0: one invocation per output element, UNIT_T the element's storage type.
//   ROWS 1: the innermost dim is a run of the source; one workgroup per row (the rest of
//     the coordinate), copying UNIT_T vectors (uint, uvec2, uvec4: 4 to 16 bytes), so an
//     embedding lookup reads exactly the selected rows, 16 bytes per load.
// A launch reads only source elements in [win_lo, win_hi) (units, relative to the source's
// element 0): a source wider than one binding is read by several launches, one per window.
// Values are moved as bits, so every dtype of a width shares one kernel.
//
// Bindings: 0 source, 1 indices, 2 output, 3 meta (IDX_T):
//   [ndim, naxes, shape[ndim], src_stride[ndim], idx_stride[ndim],
//    then per axis: idx_offset, axis_stride, axis_size, limit]
// (ROWS 1: the dims of the row coordinate; source strides and offsets in units.)
#ifndef ROWS
#define ROWS 0
#endif
#ifndef UNIT_T
#define UNIT_T uint
#endif

#include "include/operands.glsl"
#include "include/index_values.glsl"

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer Src {
  UNIT_T src[];
};
layout(std430, set = 0, binding = 1) readonly buffer Idx {
  INDEX_ST idxv[];
};
layout(std430, set = 0, binding = 2) writeonly buffer Out {
  UNIT_T outv[];
};
layout(std430, set = 0, binding = 3) readonly buffer Meta {
  IDX_T meta[];
};

// codegen/indexing.cpp packs exactly these fields, each IDX_T.
layout(push_constant) uniform Params {
  IDX_T count;       // output elements (ROWS 0) or rows (ROWS 1)
  IDX_T row_len;     // units per row (ROWS 1)
  IDX_T src_offset;  // the source's element 0 in its binding (units; may be negative)
  IDX_T out_offset;  // units
  IDX_T win_lo;      // this launch's source window, units relative to element 0
  IDX_T win_hi;
  IDX_T fill;        // 1: this launch writes the zeros of out-of-range indices
}
pc;

// The source offset of coordinate r (row-major over the meta dims), and whether every
// index it uses is in range.
bool locate(IDX_T r, out IDX_T s) {
  uint nd = uint(meta[0]);
  uint na = uint(meta[1]);
  IDX_T rem = r;
  IDX_T src_pos = IDX_T(0);
  IDX_T idx_pos = IDX_T(0);
  for (uint d = nd; d-- > 0u;) {
    IDX_T ext = meta[2u + d];
    IDX_T c = rem % ext;
    rem /= ext;
    src_pos += c * meta[2u + nd + d];
    idx_pos += c * meta[2u + 2u * nd + d];
  }
  bool ok = true;
  uint a0 = 2u + 3u * nd;
  for (uint k = 0u; k < na; ++k) {
    uint m = a0 + 4u * k;
    IDX_T v;
    ok = resolve_index(INDEX_LOAD(idxv[uint(meta[m] + idx_pos)]), meta[m + 2u], meta[m + 3u], v) && ok;
    src_pos += v * meta[m + 1u];
  }
  s = src_pos;
  return ok;
}

void main() {
#if ROWS
  IDX_T row = IDX_T(gl_WorkGroupID.y) * IDX_T(gl_NumWorkGroups.x) + IDX_T(gl_WorkGroupID.x);
  if (row >= pc.count) {
    return;
  }
  IDX_T s;
  bool ok = locate(row, s);
  IDX_T o = pc.out_offset + row * pc.row_len;
  for (IDX_T u = IDX_T(gl_LocalInvocationID.x); u < pc.row_len; u += IDX_T(gl_WorkGroupSize.x)) {
    if (!ok) {
      if (pc.fill != IDX_T(0)) {
        outv[uint(o + u)] = UNIT_T(0);
      }
    } else {
      IDX_T e = s + u;
      if (e >= pc.win_lo && e < pc.win_hi) {
        outv[uint(o + u)] = src[uint(pc.src_offset + e)];
      }
    }
  }
#else
  IDX_T i = IDX_T(gl_WorkGroupID.y) * IDX_T(gl_NumWorkGroups.x) * IDX_T(gl_WorkGroupSize.x) +
            IDX_T(gl_GlobalInvocationID.x);
  if (i >= pc.count) {
    return;
  }
  IDX_T s;
  if (!locate(i, s)) {
    if (pc.fill != IDX_T(0)) {
      outv[uint(pc.out_offset + i)] = UNIT_T(0);
    }
    return;
  }
  if (s >= pc.win_lo && s < pc.win_hi) {
    outv[uint(pc.out_offset + i)] = src[uint(pc.src_offset + s)];
  }
#endif
}
