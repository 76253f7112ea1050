// Op helpers for the op's compute type: float math, or integer ops on OP_T.
#ifndef MLX_OPS_GLSL
#define MLX_OPS_GLSL

#ifndef OP_KIND
#define OP_KIND KIND_FLOAT
#define OP_T float
#define OP_SIGNED 1
#define OP_BITS 32
#endif

#if OP_KIND == KIND_FLOAT
#include "include/math.glsl"
#include "include/div.glsl"
#include "include/erf.glsl"
#else
#include "include/int_ops.glsl"
#endif

#endif
