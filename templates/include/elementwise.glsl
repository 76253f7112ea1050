// Shared machinery of the elementwise families (unary, binary, select, copy): buffers,
// push constants, and where each input element of output element i lives.
//
// Layout (codegen/elementwise.h): each input is S (one element, broadcast), C (contiguous
// like the output: offset + i) or G (strided). With a G input, RANK says how its location
// is computed: 1, 2 or 3 (coordinates from push-constant dims) or 4 = any rank (shape and
// strides read from the meta buffer). IDX64 switches all index math to 64 bits.
//
// VEC > 1 (the vector path): each step covers VEC consecutive output elements, and every
// operand is read and written as one vector (IN<k>_VT, OUT_VT: 4 to 32 bytes) through a
// second view of the same binding. Codegen only picks it when each vector starts at a
// multiple of VEC elements, bindings start 32-byte aligned, and a G input's inner extent is
// a multiple of VEC with inner stride 1 (a vector load) or 0 (one element for all lanes).
//
// Bindings (set 0): inputs at 0..NUM_IN-1, output at NUM_IN, meta (RANK 4 only) at NUM_IN+1.
// Push constants: every field is IDX_T, in this order: size, out_offset, in<k>_offset for
// each input, ndim (RANK 4), dim1 (RANK 2, 3), dim2 (RANK 3), then RANK strides for each G
// input (RANK 1-3). codegen/elementwise.cpp packs exactly this.
#ifndef MLX_ELEMENTWISE_GLSL
#define MLX_ELEMENTWISE_GLSL

#define LAYOUT_S 0
#define LAYOUT_C 1
#define LAYOUT_G 2

#ifndef NUM_IN
#define NUM_IN 1
#endif
#ifndef RANK
#define RANK 0
#endif
#ifndef IN0_LAYOUT
#define IN0_LAYOUT LAYOUT_C
#endif
#ifndef IN1_LAYOUT
#define IN1_LAYOUT LAYOUT_C
#endif
#ifndef IN2_LAYOUT
#define IN2_LAYOUT LAYOUT_C
#endif
#ifndef VEC
#define VEC 0
#endif

// Defaults for inputs 1 and 2 (input 0 and the output: include/operands.glsl).
#ifndef IN1_ST
#define IN1_ST float
#define IN1_CT float
#define IN1_LOAD(x) (x)
#endif
#ifndef IN2_ST
#define IN2_ST float
#define IN2_CT float
#define IN2_LOAD(x) (x)
#endif

#include "include/operands.glsl"

layout(local_size_x_id = 0) in;
// Elements per invocation (constant_id 1): invocation t of group g handles
// g * WG * EPT + t + e * WG for e < EPT, so every load stays coalesced.
layout(constant_id = 1) const uint EPT = 1;

layout(std430, set = 0, binding = 0) readonly buffer In0 {
  IN0_ST in0[];
};
#if NUM_IN >= 2
layout(std430, set = 0, binding = 1) readonly buffer In1 {
  IN1_ST in1[];
};
#endif
#if NUM_IN >= 3
layout(std430, set = 0, binding = 2) readonly buffer In2 {
  IN2_ST in2[];
};
#endif
// Not restrict: a donated input may share the output's buffer.
layout(std430, set = 0, binding = NUM_IN) writeonly buffer Out {
  OUT_ST outv[];
};
#if VEC > 1
// Vector views of the same bindings: element e of a vectorized operand is lane e % VEC of
// vector e / VEC.
layout(std430, set = 0, binding = 0) readonly buffer In0V {
  IN0_VT in0v[];
};
#if NUM_IN >= 2
layout(std430, set = 0, binding = 1) readonly buffer In1V {
  IN1_VT in1v[];
};
#endif
#if NUM_IN >= 3
layout(std430, set = 0, binding = 2) readonly buffer In2V {
  IN2_VT in2v[];
};
#endif
layout(std430, set = 0, binding = NUM_IN) writeonly buffer OutV {
  OUT_VT outvv[];
};
#endif
#if RANK == 4
// shape[ndim], then ndim strides per input (inputs that are not G are ignored).
layout(std430, set = 0, binding = NUM_IN + 1) readonly buffer Meta {
  IDX_T meta[];
};
#endif

layout(push_constant) uniform Params {
  IDX_T size;
  IDX_T out_offset;
  IDX_T in0_offset;
#if NUM_IN >= 2
  IDX_T in1_offset;
#endif
#if NUM_IN >= 3
  IDX_T in2_offset;
#endif
#if RANK == 4
  IDX_T ndim;
#endif
#if RANK == 2 || RANK == 3
  IDX_T dim1;
#endif
#if RANK == 3
  IDX_T dim2;
#endif
#if RANK >= 1 && RANK <= 3 && IN0_LAYOUT == LAYOUT_G
  IDX_T in0_strides[RANK];
#endif
#if RANK >= 1 && RANK <= 3 && NUM_IN >= 2 && IN1_LAYOUT == LAYOUT_G
  IDX_T in1_strides[RANK];
#endif
#if RANK >= 1 && RANK <= 3 && NUM_IN >= 3 && IN2_LAYOUT == LAYOUT_G
  IDX_T in2_strides[RANK];
#endif
}
pc;

// Location of a strided input from the coordinates c0..c2 of element i.
#if RANK == 1
#define STRIDED(s) (c0 * s[0])
#elif RANK == 2
#define STRIDED(s) (c0 * s[0] + c1 * s[1])
#elif RANK == 3
#define STRIDED(s) (c0 * s[0] + c1 * s[1] + c2 * s[2])
#endif

// loc[k]: the element of input k that output element i reads. The math runs in IDX_T; the
// result is a 32-bit array index, since one binding never holds 2^32 elements
// (maxStorageBufferRange; elementwise_launch checks).
void locate(IDX_T i, out uint loc[NUM_IN]) {
  IDX_T l[NUM_IN];
#if RANK == 1
  IDX_T c0 = i;
#elif RANK == 2
  // Unsigned division is cheaper and the coordinates are never negative.
  IDX_T c1 = IDX_T(IDX_UT(i) % IDX_UT(pc.dim1));
  IDX_T c0 = IDX_T(IDX_UT(i) / IDX_UT(pc.dim1));
#elif RANK == 3
  IDX_UT t = IDX_UT(i) / IDX_UT(pc.dim2);
  IDX_T c2 = IDX_T(IDX_UT(i) % IDX_UT(pc.dim2));
  IDX_T c1 = IDX_T(t % IDX_UT(pc.dim1));
  IDX_T c0 = IDX_T(t / IDX_UT(pc.dim1));
#endif

#if IN0_LAYOUT == LAYOUT_S
  l[0] = pc.in0_offset;
#elif IN0_LAYOUT == LAYOUT_C
  l[0] = pc.in0_offset + i;
#elif RANK != 4
  l[0] = pc.in0_offset + STRIDED(pc.in0_strides);
#else
  l[0] = pc.in0_offset;
#endif
#if NUM_IN >= 2
#if IN1_LAYOUT == LAYOUT_S
  l[1] = pc.in1_offset;
#elif IN1_LAYOUT == LAYOUT_C
  l[1] = pc.in1_offset + i;
#elif RANK != 4
  l[1] = pc.in1_offset + STRIDED(pc.in1_strides);
#else
  l[1] = pc.in1_offset;
#endif
#endif
#if NUM_IN >= 3
#if IN2_LAYOUT == LAYOUT_S
  l[2] = pc.in2_offset;
#elif IN2_LAYOUT == LAYOUT_C
  l[2] = pc.in2_offset + i;
#elif RANK != 4
  l[2] = pc.in2_offset + STRIDED(pc.in2_strides);
#else
  l[2] = pc.in2_offset;
#endif
#endif

#if RANK == 4
  // Any rank: peel coordinates off the innermost dimension.
  uint ndim = uint(pc.ndim);
  IDX_UT rem = IDX_UT(i);
  for (uint d = ndim; d-- > 0u;) {
    IDX_UT extent = IDX_UT(meta[d]);
    IDX_T c = IDX_T(rem % extent);
    rem = rem / extent;
#if IN0_LAYOUT == LAYOUT_G
    l[0] += c * meta[ndim + d];
#endif
#if NUM_IN >= 2 && IN1_LAYOUT == LAYOUT_G
    l[1] += c * meta[2u * ndim + d];
#endif
#if NUM_IN >= 3 && IN2_LAYOUT == LAYOUT_G
    l[2] += c * meta[3u * ndim + d];
#endif
  }
#endif

  loc[0] = uint(l[0]);
#if NUM_IN >= 2
  loc[1] = uint(l[1]);
#endif
#if NUM_IN >= 3
  loc[2] = uint(l[2]);
#endif
}

#if VEC > 1
#include "include/lanes.glsl"

// Inner stride of each input: a G input with inner stride 0 gives all lanes one element.
#if IN0_LAYOUT == LAYOUT_G && RANK == 4
#define IN0_INNER meta[2u * uint(pc.ndim) - 1u]
#elif IN0_LAYOUT == LAYOUT_G
#define IN0_INNER pc.in0_strides[RANK - 1]
#else
#define IN0_INNER 1
#endif
#if NUM_IN >= 2 && IN1_LAYOUT == LAYOUT_G && RANK == 4
#define IN1_INNER meta[3u * uint(pc.ndim) - 1u]
#elif NUM_IN >= 2 && IN1_LAYOUT == LAYOUT_G
#define IN1_INNER pc.in1_strides[RANK - 1]
#else
#define IN1_INNER 1
#endif
#if NUM_IN >= 3 && IN2_LAYOUT == LAYOUT_G && RANK == 4
#define IN2_INNER meta[4u * uint(pc.ndim) - 1u]
#elif NUM_IN >= 3 && IN2_LAYOUT == LAYOUT_G
#define IN2_INNER pc.in2_strides[RANK - 1]
#else
#define IN2_INNER 1
#endif

// vload<K>(l, x): input K's values for the VEC lanes whose first element is at location l.
#define MLX_DEFINE_VLOAD(K)                                                    \
  void vload##K(uint l, out IN##K##_CT x[VEC]) {                               \
    if (IN##K##_LAYOUT == LAYOUT_S || IN##K##_INNER == 0) {                    \
      IN##K##_CT s = IN##K##_LOAD(in##K[l]);                                   \
      for (uint j = 0u; j < VEC; ++j) {                                        \
        x[j] = s;                                                              \
      }                                                                        \
    } else {                                                                   \
      IN##K##_VT w = in##K##v[l / VEC];                                        \
      for (uint j = 0u; j < VEC; ++j) {                                        \
        x[j] = IN##K##_VLANE(w, j);                                            \
      }                                                                        \
    }                                                                          \
  }
MLX_DEFINE_VLOAD(0)
#if NUM_IN >= 2
MLX_DEFINE_VLOAD(1)
#endif
#if NUM_IN >= 3
MLX_DEFINE_VLOAD(2)
#endif
#endif

#endif
