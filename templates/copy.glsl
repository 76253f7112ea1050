#version 450
#extension GL_GOOGLE_include_directive : require
// Copy with dtype conversion (astype, contiguous copies, broadcast fills):
// out[i] = CONVERT(in0[loc0(i)]). Float -> int saturates with NaN -> 0, any -> bool is != 0,
// 16-bit floats round to nearest-even on store (include/types.glsl).
// Defaults: f32 -> f32 over a contiguous input.
#ifndef NUM_IN
#define NUM_IN 1
#endif
#ifndef OP
#define OP(x) (x)
#endif

#include "include/elementwise.glsl"

#include "include/elementwise_main.glsl"
