#version 450
#extension GL_GOOGLE_include_directive : require
// Binary elementwise op: out[i] = OP(in0[loc0(i)], in1[loc1(i)]); both inputs share one
// dtype (the op layer casts them first). Defaults: f32 add over contiguous inputs.
#ifndef NUM_IN
#define NUM_IN 2
#endif
#ifndef OP
#define OP(a, b) ((a) + (b))
#endif

#include "include/elementwise.glsl"
#include "include/ops.glsl"

#include "include/elementwise_main.glsl"
