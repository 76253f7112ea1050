#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
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
#ifndef PAIRS
#define PAIRS 0
#endif
#include "include/operands.glsl"

// The tile edge is the workgroup width; constant_id 1 rows of invocations step down it.
#define TILE 32
layout(local_size_x = TILE, local_size_y_id = 1) in;

#if PAIRS
layout(std430, set = 0, binding = 0) readonly buffer In0 {
  uint in0_words[];
};
layout(std430, set = 0, binding = 1) writeonly buffer Out {
  uint outv_words[];
};
#else
layout(std430, set = 0, binding = 0) readonly buffer In0 {
  IN0_ST in0[];
};
// Not restrict, like every output (include/elementwise.glsl).
layout(std430, set = 0, binding = 1) writeonly buffer Out {
  OUT_ST outv[];
};
#endif

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

#if PAIRS
// PAIRS 1: one 16-bit dtype moved as raw bits, two elements a word, through a 64 x 64 tile
// (codegen::padded_transpose_key: rows, offsets and strides even; with odd cols the last
// word of a row carries a padding element). An invocation reads the words of two
// consecutive n at one pair of m, a 2 x 2 block it transposes in registers, so both phases
// move 128 bytes a warp (the scalar kernel: 64) and touch shared memory once a word. The
// tile's words are XOR-swizzled by their row pair, so neither phase shares a bank.
#define PTILE (2 * TILE)
shared uint ptile[PTILE][TILE];

void main() {
  IDX_T b = IDX_T(gl_WorkGroupID.z);
  IDX_T m0 = IDX_T(gl_WorkGroupID.y) * PTILE;
  IDX_T n0 = IDX_T(gl_WorkGroupID.x) * PTILE;
  uint tx = gl_LocalInvocationID.x;
  IDX_T base = pc.in0_offset + b * pc.batch_stride;
  IDX_T m = m0 + IDX_T(2 * tx);
  // Every load of the tile issued before any is used (at least 4 rows of invocations:
  // Vulkan's 128-invocation minimum).
  uint w0[TILE / 4], w1[TILE / 4];
  [[unroll]] for (uint i = 0; i < TILE / 4; ++i) {
    uint p = gl_LocalInvocationID.y + i * gl_WorkGroupSize.y;
    IDX_T n = n0 + IDX_T(2 * p);
    bool inside = p < TILE && m < pc.rows && n < pc.cols;
    IDX_T at = base + m + n * pc.col_stride;
    w0[i] = inside ? in0_words[uint(at / 2)] : 0u;  // (m, n), (m + 1, n)
    w1[i] = inside && n + 1 < pc.cols ? in0_words[uint((at + pc.col_stride) / 2)] : 0u;
  }
  [[unroll]] for (uint i = 0; i < TILE / 4; ++i) {
    uint p = gl_LocalInvocationID.y + i * gl_WorkGroupSize.y;
    if (p < TILE) {
      ptile[2 * tx][p ^ tx] = (w0[i] & 0xffffu) | (w1[i] << 16);  // (m, n), (m, n + 1)
      ptile[2 * tx + 1][p ^ tx] = (w0[i] >> 16) | (w1[i] & 0xffff0000u);
    }
  }
  barrier();
  IDX_T out_base = pc.out_offset + b * pc.rows * pc.out_ld;
  for (uint r = gl_LocalInvocationID.y; r < PTILE; r += gl_WorkGroupSize.y) {
    IDX_T mr = m0 + IDX_T(r);
    IDX_T n = n0 + IDX_T(2 * tx);
    if (mr < pc.rows && n < pc.cols) {
      outv_words[uint((out_base + mr * pc.out_ld + n) / 2)] = ptile[r][tx ^ (r >> 1)];
    }
  }
}
#else
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
#endif
