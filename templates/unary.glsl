#version 450
#extension GL_GOOGLE_include_directive : require
// Unary elementwise op: out[i] = OP(in0[loc0(i)]).
// The engine defines OP(x) and the dtype/layout macros; the defaults (f32 negate over a
// contiguous input) keep this file a complete shader on its own.
#ifndef NUM_IN
#define NUM_IN 1
#endif
#ifndef OP
#define OP(x) (-(x))
#endif

#include "include/elementwise.glsl"
#include "include/ops.glsl"

#include "include/elementwise_main.glsl"
