#version 450
#extension GL_GOOGLE_include_directive : require
// where(cond, x, y): out[i] = cond ? x : y, with a bool condition (uint8 0/1 in memory).
// Defaults: f32 values with a f32 stand-in condition, all contiguous.
#ifndef NUM_IN
#define NUM_IN 3
#endif
#ifndef OP
#define OP(c, x, y) ((c) != IN0_CT(0) ? (x) : (y))
#endif

#include "include/elementwise.glsl"

#include "include/elementwise_main.glsl"
