#version 450
#extension GL_GOOGLE_include_directive : require
// A group of elementwise ops fused by compile() (the "fused" family; codegen/fused.cpp emits
// the group from its key, docs/compile.md). One invocation per output element (grid-stride
// over y): each input is loaded once, through its own strides (0 where broadcast), the ops
// run in tape order on compute values held in registers, each result rounded to its graph
// dtype (as the unfused kernels store and reload it), and every output is stored.
//
// The engine defines NUM_IN, NUM_OUT, RANK_MAX, FUSED_BUFFERS (the input and output buffer
// declarations, bindings 0 .. NUM_IN + NUM_OUT - 1), FUSED_BODY (the loads, ops and stores of
// element `i` with locations `loc`), and the ops' macros and math groups. The defaults: one
// f32 input, out = exp(in).
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

#define OP_KIND KIND_FLOAT
#define OP_T float
#define OP_SIGNED 1
#define OP_BITS 32
#include "include/operands.glsl"
#include "include/ops.glsl"

layout(local_size_x_id = 0) in;

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

// Where element i of the output shape sits in each input.
void fused_locate(int i, out uint loc[NUM_IN]) {
  int rank = meta[0];
  for (int k = 0; k < NUM_IN; ++k) {
    loc[k] = uint(meta[1 + rank + k * (rank + 1)]);
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
}

void main() {
  int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * uint(stride)); i < pc.size;
       i += stride * int(gl_NumWorkGroups.y)) {
    uint loc[NUM_IN];
    fused_locate(i, loc);
    FUSED_BODY
  }
}
