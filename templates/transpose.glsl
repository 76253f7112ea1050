#version 450
#extension GL_GOOGLE_include_directive : require
// Copy (with dtype conversion) of a transposed view through a shared-memory tile:
//   out[out_offset + (b * rows + m) * out_ld + n] =
//       OP(in0[in0_offset + b * batch_stride + m + n * col_stride])
// out_ld is cols for a dense copy; larger for rows padded to an aligned start (the GEMM's
// operand copies, codegen::padded_transpose_launch), whose padding is left unwritten.
// The input is contiguous along m and the output along n, so a plain copy would read or
// write with a large stride; each workgroup instead reads a TILE x TILE block along m,
// then writes it along n. Defaults: f32 -> f32, 32-bit indexing.
#ifndef OP
#define OP(x) (x)
#endif
#include "include/operands.glsl"

// The tile edge is the workgroup width; constant_id 1 rows of invocations step down it.
#define TILE 32
layout(local_size_x = TILE, local_size_y_id = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer In0 {
  IN0_ST in0[];
};
// Not restrict, like every output (include/elementwise.glsl).
layout(std430, set = 0, binding = 1) writeonly buffer Out {
  OUT_ST outv[];
};

// codegen/transpose.cpp packs exactly these fields, each IDX_T.
layout(push_constant) uniform Params {
  IDX_T rows;          // m extent
  IDX_T cols;          // n extent
  IDX_T in0_offset;
  IDX_T out_offset;
  IDX_T col_stride;    // input stride of n
  IDX_T batch_stride;  // input stride of b
  IDX_T out_ld;        // output stride of m
}
pc;

// One padding column keeps the column reads of phase 2 off a single shared-memory bank.
shared OUT_CT tile[TILE][TILE + 1];

void main() {
  IDX_T b = IDX_T(gl_WorkGroupID.z);
  IDX_T m0 = IDX_T(gl_WorkGroupID.y) * TILE;
  IDX_T n0 = IDX_T(gl_WorkGroupID.x) * TILE;
  uint tx = gl_LocalInvocationID.x;
  // Phase 1: consecutive invocations read consecutive m (stride 1 in the input).
  IDX_T base = pc.in0_offset + b * pc.batch_stride;
  for (uint r = gl_LocalInvocationID.y; r < TILE; r += gl_WorkGroupSize.y) {
    IDX_T m = m0 + IDX_T(tx);
    IDX_T n = n0 + IDX_T(r);
    if (m < pc.rows && n < pc.cols) {
      tile[r][tx] = OP(IN0_LOAD(in0[uint(base + m + n * pc.col_stride)]));
    }
  }
  barrier();
  // Phase 2: consecutive invocations write consecutive n (stride 1 in the output).
  IDX_T out_base = pc.out_offset + b * pc.rows * pc.out_ld;
  for (uint r = gl_LocalInvocationID.y; r < TILE; r += gl_WorkGroupSize.y) {
    IDX_T m = m0 + IDX_T(r);
    IDX_T n = n0 + IDX_T(tx);
    if (m < pc.rows && n < pc.cols) {
      outv[uint(out_base + m * pc.out_ld + n)] = OUT_STORE(tile[tx][r]);
    }
  }
}
