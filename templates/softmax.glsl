#version 450
#extension GL_GOOGLE_include_directive : require
// Softmax over rows: `count` rows of `len` contiguous elements, one workgroup per row, in
// f32 whatever the storage type, rounded once on store (as the CPU reference):
//   m = max(x) (NaN propagates), e = exp(x - m), out = e / sum(e).
// Three passes over the row (max, sum, write); the row is in cache after the first.
// A row with +inf, or only -inf, gives NaN (inf - inf), as the CPU, NumPy and MLX.
// Defaults: f32 in and out.
#include "include/operands.glsl"

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer In0 {
  IN0_ST in0[];
};
layout(std430, set = 0, binding = 1) writeonly buffer Out {
  OUT_ST outv[];
};

// codegen/softmax.cpp packs exactly these fields, each IDX_T.
layout(push_constant) uniform Params {
  IDX_T in0_offset;
  IDX_T out_offset;
  IDX_T len;
  IDX_T count;
}
pc;

shared float red[gl_WorkGroupSize.x];

float load(IDX_T i) {
  return float(IN0_LOAD(in0[uint(i)]));
}

// The workgroup's combined value of `v`: the max (NaN wins) when take_max, else the sum.
float workgroup_reduce(float v, bool take_max) {
  uint t = gl_LocalInvocationID.x;
  red[t] = v;
  barrier();
  for (uint w = gl_WorkGroupSize.x / 2u; w > 0u; w >>= 1u) {
    if (t < w) {
      float a = red[t], b = red[t + w];
      red[t] = take_max ? ((isnan(b) || b > a) ? b : a) : a + b;
    }
    barrier();
  }
  float r = red[0];
  barrier();  // red is reused by the next call
  return r;
}

void main() {
  IDX_T row = IDX_T(gl_WorkGroupID.y) * IDX_T(gl_NumWorkGroups.x) + IDX_T(gl_WorkGroupID.x);
  if (row >= pc.count) {
    return;  // uniform for the whole workgroup
  }
  IDX_T base = pc.in0_offset + row * pc.len;
  IDX_T obase = pc.out_offset + row * pc.len;
  IDX_T t = IDX_T(gl_LocalInvocationID.x);
  IDX_T step = IDX_T(gl_WorkGroupSize.x);
  float m = uintBitsToFloat(0xff800000u);
  for (IDX_T j = t; j < pc.len; j += step) {
    float x = load(base + j);
    m = (isnan(x) || x > m) && !isnan(m) ? x : m;
  }
  m = workgroup_reduce(m, true);
  float s = 0.0f;
  for (IDX_T j = t; j < pc.len; j += step) {
    s += exp(load(base + j) - m);
  }
  s = workgroup_reduce(s, false);
  for (IDX_T j = t; j < pc.len; j += step) {
    outv[uint(obase + j)] = OUT_STORE(exp(load(base + j) - m) / s);
  }
}
