// What every kernel family shares about its operands: the storage type in the buffer, the
// compute type and the conversions between them for input 0 and the output (defaults: f32;
// OUT_ROUND rounds a compute value to the output dtype in registers),
// and the index type (IDX64: 64-bit index math, which needs shaderInt64).
#ifndef MLX_OPERANDS_GLSL
#define MLX_OPERANDS_GLSL

#ifndef IDX64
#define IDX64 0
#endif
#ifndef IN0_ST
#define IN0_ST float
#define IN0_CT float
#define IN0_LOAD(x) (x)
#endif
#ifndef OUT_ST
#define OUT_ST float
#define OUT_CT float
#define OUT_STORE(v) (v)
#define OUT_ROUND(v) (v)
#endif

#if IDX64
#undef MLX_INT64
#define MLX_INT64 1
#endif

#include "include/types.glsl"

#if IDX64
#define IDX_T int64_t
#define IDX_UT uint64_t
#else
#define IDX_T int
#define IDX_UT uint
#endif

#endif
