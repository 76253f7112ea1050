#version 450
#extension GL_GOOGLE_include_directive : require
// A group of elementwise ops fused by compile() (the "fused" family; codegen/fused.cpp emits
// the group from its key, docs/compile.md). Each input is loaded once per element, the ops
// run in tape order on compute values held in registers, each result rounded to its graph
// dtype (as the unfused kernels store and reload it), and every output is stored.
//
// Three layouts (the key's `layout` and `vec`):
//   - FUSED_LAYOUT 0: any strides; element i's location in each input comes from the shape
//     and that input's strides (0 where broadcast) in the meta buffer.
//   - FUSED_LAYOUT 1: every input is contiguous like the output (offset + i), one element
//     for all (offset), or row-strided (offset + (i / C) * row stride + i % C, C the last
//     dimension: a slice of a wider matrix's columns, such as either half of a stacked
//     gate/up product); FUSED_KINDS lists 1, 0 or 2 per input, and FUSED_ROWS says whether
//     any is row-strided (C and the row strides then follow the strides in the meta buffer).
//   - VEC > 1 (with FUSED_LAYOUT 1): steps of VEC elements, every contiguous or row-strided
//     input and every output read and written as one vector through a second view of its
//     binding (IN<k>_VT, OUT<j>_VT: 4 to 32 bytes; offsets, C and row strides are multiples
//     of VEC, bindings 32-byte aligned). The last partial step goes element by element.
//
// The engine defines NUM_IN, NUM_OUT, RANK_MAX, FUSED_BUFFERS (the buffer declarations,
// bindings 0 .. NUM_IN + NUM_OUT - 1), FUSED_BODY (loads, ops and stores of element `i` with
// locations `loc`), with VEC also FUSED_VSETUP (once per invocation), FUSED_VLOAD (the
// vectors of step `u` into slot `e`) and FUSED_VBODY (step `u` from slot `e`), and the ops'
// macros and math groups. The defaults: one f32 input, out = exp(in).
#ifndef NUM_IN
#define NUM_IN 1
#define NUM_OUT 1
#define RANK_MAX 8
#define FUSED_BUFFERS                                        \
  layout(std430, set = 0, binding = 0) readonly buffer I0 { \
    float in0[];                                             \
  };                                                         \
  layout(std430, set = 0, binding = 1) writeonly buffer O0 { \
    float out0[];                                            \
  };
#define FUSED_BODY             \
  float v0 = exp(in0[loc[0]]); \
  out0[pc.out_offset0 + i] = v0;
#endif
#ifndef FUSED_LAYOUT
#define FUSED_LAYOUT 0
#endif
#ifndef FUSED_ROWS
#define FUSED_ROWS 0
#endif
#ifndef VEC
#define VEC 0
#endif

#define OP_KIND KIND_FLOAT
#define OP_T float
#define OP_SIGNED 1
#define OP_BITS 32
#include "include/operands.glsl"
#include "include/ops.glsl"
#include "include/lanes.glsl"

// The integer helpers (include/int_ops.glsl), one copy per integer compute type the group
// uses, overloaded on it, go at the next line (codegen/fused.cpp).
// @FUSED_INT_OPS@

layout(local_size_x_id = 0) in;
// Vector steps per invocation (constant_id 1, at most FUSED_MAX_EPT): invocation t of group g
// takes steps g * WG * EPT + t + e * WG for e < EPT, loading all of them before computing.
layout(constant_id = 1) const int EPT = 1;
#define FUSED_MAX_EPT 8

FUSED_BUFFERS

// Shapes and strides: meta[0] = rank, meta[1 .. rank] = the shape, then for each input its
// element offset and `rank` strides (elements, possibly 0 or negative).
layout(std430, set = 0, binding = NUM_IN + NUM_OUT) readonly buffer Meta {
  int meta[];
};

// codegen/fused.cpp packs these: the element count and up to 4 output offsets.
layout(push_constant) uniform Params {
  int size;
  int out_offset0;
  int out_offset1;
  int out_offset2;
  int out_offset3;
}
pc;

int fused_offset(int k) {
  int rank = meta[0];
  return meta[1 + rank + k * (rank + 1)];
}

// Where element i of the output shape sits in each input.
#if FUSED_ROWS
// The row length C and input k's row stride, after the inputs' strides in the meta buffer.
int fused_cols() {
  int rank = meta[0];
  return meta[1 + rank + NUM_IN * (rank + 1)];
}
int fused_row_stride(int k) {
  int rank = meta[0];
  return meta[2 + rank + NUM_IN * (rank + 1) + k];
}
#endif

void fused_locate(int i, out uint loc[NUM_IN]) {
#if FUSED_LAYOUT
  const int kinds[NUM_IN] = int[](FUSED_KINDS);
#if FUSED_ROWS
  int cols = fused_cols();
#endif
  for (int k = 0; k < NUM_IN; ++k) {
#if FUSED_ROWS
    if (kinds[k] == 2) {
      loc[k] = uint(fused_offset(k) + (i / cols) * fused_row_stride(k) + i % cols);
      continue;
    }
#endif
    loc[k] = uint(fused_offset(k) + i * kinds[k]);
  }
#else
  int rank = meta[0];
  for (int k = 0; k < NUM_IN; ++k) {
    loc[k] = uint(fused_offset(k));
  }
  int rest = i;
  for (int d = rank - 1; d >= 0; --d) {
    int n = meta[1 + d];
    int c = rest % n;
    rest /= n;
    for (int k = 0; k < NUM_IN; ++k) {
      loc[k] = uint(int(loc[k]) + c * meta[1 + rank + k * (rank + 1) + 1 + d]);
    }
  }
#endif
}

void fused_element(int i) {
  uint loc[NUM_IN];
  fused_locate(i, loc);
  FUSED_BODY
}

void main() {
  int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  int first = int(gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * uint(stride));
  int total = stride * int(gl_NumWorkGroups.y);
#if VEC > 1
  // voff[k]: input k's first vector (contiguous inputs) or element (scalars).
  uint voff[NUM_IN];
  for (int k = 0; k < NUM_IN; ++k) {
    voff[k] = uint(fused_offset(k));
  }
#if FUSED_ROWS
  int cv = fused_cols() / VEC; // vectors per row of the row-strided inputs
#endif
  FUSED_VSETUP
  int full = pc.size / VEC;
  int wg = int(gl_WorkGroupSize.x);
  int group = int(gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x);
  int block = wg * EPT;
  int blocks = int(gl_NumWorkGroups.x * gl_NumWorkGroups.y) * block;
  for (int b = group * block + int(gl_LocalInvocationID.x); b < full; b += blocks) {
    for (int e = 0; e < EPT; ++e) {
      int u = b + e * wg;
      if (u < full) {
        FUSED_VLOAD
      }
    }
    for (int e = 0; e < EPT; ++e) {
      int u = b + e * wg;
      if (u < full) {
        FUSED_VBODY
      }
    }
  }
  int tail = full * VEC + first;
  if (tail < pc.size) {
    fused_element(tail);
  }
#else
  for (int i = first; i < pc.size; i += total) {
    fused_element(i);
  }
#endif
}
