#version 450
#extension GL_GOOGLE_include_directive : require
// Rotary position embedding of x viewed as [B, N, T, d] (N: the dims between the batch
// and the positions, e.g. heads). Row (b, n, t) sits at position offset[b] + t; pair k
// (k < dims / 2) of a row is
//   traditional: (2k, 2k + 1)   otherwise: (k, k + dims / 2)
// and rotates by theta = (offset[b] + t) * scale * inv_freq(k), where inv_freq(k) is
// 2^(-k * log2(base) / (dims / 2)) or 1 / freqs[k]; elements past `dims` pass through.
// The angle and the rotation are f32 whatever the storage dtype, rounded once on store.
//
// Invocation (b, t, chunk of HPI heads, unit u): the angles depend on (b, t, k) only, so
// one invocation computes VEC pairs' sin/cos once and rotates them in HPI rows, whose
// loads it issues together. Unit u < dims / (2 * VEC) handles VEC pairs read as two
// VEC-element vectors: elements [u*VEC, u*VEC + VEC) and [half + u*VEC, ...) (the two
// halves), or [2*u*VEC, 2*u*VEC + VEC) and the next VEC (traditional: adjacent pairs).
// Units past that copy one passed-through element of each row.
//
// The engine defines: TRADITIONAL, FREQS (1: a freqs binding), VEC (1, 2, 4 or 8),
// IN0_*/OUT_* (one float dtype). Defaults: f32, halves, computed frequencies, scalar.
#ifndef TRADITIONAL
#define TRADITIONAL 0
#endif
#ifndef FREQS
#define FREQS 0
#endif
#ifndef VEC
#define VEC 1
#endif

// Rows (heads) per invocation.
#define HPI 4

#include "include/operands.glsl"
#if VEC > 1
#include "include/lanes.glsl"
#endif

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer In0 {
  IN0_ST in0[];
};
layout(std430, set = 0, binding = 1) readonly buffer Offsets {
  int offsets[];
};
#if FREQS
layout(std430, set = 0, binding = 2) readonly buffer Freqs {
  float freqs[];
};
#define OUT_BINDING 3
#else
#define OUT_BINDING 2
#endif
layout(std430, set = 0, binding = OUT_BINDING) writeonly buffer Out {
  OUT_ST outv[];
};
#if VEC > 1
layout(std430, set = 0, binding = 0) readonly buffer In0V {
  IN0_VT in0v[];
};
layout(std430, set = 0, binding = OUT_BINDING) writeonly buffer OutV {
  OUT_VT outvv[];
};
#endif

// codegen/fast.cpp packs exactly these fields, each IDX_T.
layout(push_constant) uniform Params {
  IDX_T in0_offset;  // element (b0, 0, 0, 0)
  IDX_T out_offset;
  IDX_T offsets_offset;
  IDX_T freqs_offset;
  IDX_T b0;          // the launch's first batch entry (its offset's index)
  IDX_T batches;     // batch entries in this launch
  IDX_T heads;       // N
  IDX_T t_len;       // T
  IDX_T d;           // row length
  IDX_T half_dims;   // dims / 2
  IDX_T off_stride;  // 1: one offset per batch entry; 0: one for all
  IDX_T scale_bits;  // f32 bits of scale
  IDX_T coef_bits;   // f32 bits of log2(base) / half_dims
}
pc;

// sin and cos of theta after reducing it to [-pi, pi] in two steps (2 pi = HI + LO, HI
// with few bits so k * HI is exact): GPU sin/cos lose accuracy for large arguments, and
// positions reach 10^5.
void sincos_reduced(float theta, out float s, out float c) {
  const float HI = 6.28125;
  const float LO = 1.9353071795864769e-3;
  float k = round(theta * 0.15915494309189535);
  precise float r = fma(-k, HI, theta);
  r = fma(-k, LO, r);
  s = sin(r);
  c = cos(r);
}

float inv_freq(IDX_T k) {
#if FREQS
  return 1.0f / freqs[uint(pc.freqs_offset + k)];
#else
  return exp2(-float(k) * uintBitsToFloat(uint(pc.coef_bits)));
#endif
}

void main() {
  uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  IDX_T gid = IDX_T(group) * IDX_T(gl_WorkGroupSize.x) + IDX_T(gl_LocalInvocationID.x);
  IDX_T units = pc.half_dims / VEC;
  IDX_T per_row = units + (pc.d - 2 * pc.half_dims);
  IDX_T chunks = (pc.heads + HPI - 1) / HPI;
  IDX_T rest = gid / per_row;
  IDX_T u = gid - rest * per_row;
  IDX_T bt = rest / chunks;
  IDX_T n0 = (rest - bt * chunks) * HPI;
  if (bt >= pc.batches * pc.t_len) {
    return;
  }
  IDX_T b = bt / pc.t_len;
  IDX_T t = bt - b * pc.t_len;
  // Row (b, n, t) of the launch starts at element row_start(n).
  IDX_T first_row = (b * pc.heads + n0) * pc.t_len + t;
  IDX_T row_step = pc.t_len * pc.d;  // from head n to n + 1
  IDX_T base = pc.in0_offset + first_row * pc.d;
  IDX_T obase = pc.out_offset + first_row * pc.d;
  uint nh = uint(min(IDX_T(HPI), pc.heads - n0));
  if (u >= units) {
    IDX_T j = 2 * pc.half_dims + (u - units);
    for (uint h = 0u; h < nh; ++h) {
      outv[uint(obase + IDX_T(h) * row_step + j)] =
          OUT_STORE(IN0_LOAD(in0[uint(base + IDX_T(h) * row_step + j)]));
    }
    return;
  }
  int off = offsets[uint(pc.offsets_offset + (pc.b0 + b) * pc.off_stride)];
  // As the CPU: the integer position, then one rounding to f32 (exact below 2^24).
  float pos = float(off + int(t)) * uintBitsToFloat(uint(pc.scale_bits));
#if TRADITIONAL
  IDX_T first = 2 * u * VEC;
  IDX_T second = first + VEC;
#else
  IDX_T first = u * VEC;
  IDX_T second = pc.half_dims + first;
#endif
  float sn[VEC], cs[VEC];
  for (uint p = 0u; p < VEC; ++p) {
    sincos_reduced(pos * inv_freq(u * VEC + IDX_T(p)), sn[p], cs[p]);
  }
  // Every row's loads first, so they are in flight together.
#if VEC > 1
  IN0_VT wa[HPI], wb[HPI];
  for (uint h = 0u; h < HPI; ++h) {
    if (h < nh) {
      wa[h] = in0v[uint((base + IDX_T(h) * row_step + first) / VEC)];
      wb[h] = in0v[uint((base + IDX_T(h) * row_step + second) / VEC)];
    }
  }
#else
  float wa[HPI], wb[HPI];
  for (uint h = 0u; h < HPI; ++h) {
    if (h < nh) {
      wa[h] = IN0_LOAD(in0[uint(base + IDX_T(h) * row_step + first)]);
      wb[h] = IN0_LOAD(in0[uint(base + IDX_T(h) * row_step + second)]);
    }
  }
#endif
  for (uint h = 0u; h < nh; ++h) {
    float a[VEC], c[VEC];
#if VEC > 1
    for (uint j = 0u; j < VEC; ++j) {
      a[j] = IN0_VLANE(wa[h], j);
      c[j] = IN0_VLANE(wb[h], j);
    }
#else
    a[0] = wa[h];
    c[0] = wb[h];
#endif
    // x1/x2 of pair p: the two halves' lane p, or (traditional) elements 2p, 2p + 1 of
    // the span a ++ c.
    float y1[VEC], y2[VEC];
    for (uint p = 0u; p < VEC; ++p) {
#if TRADITIONAL
      uint e1 = 2u * p, e2 = 2u * p + 1u;
      float x1 = e1 < VEC ? a[e1] : c[e1 - VEC];
      float x2 = e2 < VEC ? a[e2] : c[e2 - VEC];
#else
      float x1 = a[p];
      float x2 = c[p];
#endif
      y1[p] = x1 * cs[p] - x2 * sn[p];
      y2[p] = x1 * sn[p] + x2 * cs[p];
    }
#if TRADITIONAL
    // Back to element order: pair p is elements 2p, 2p + 1 of the 2 * VEC span.
    float e[2 * VEC];
    for (uint p = 0u; p < VEC; ++p) {
      e[2u * p] = y1[p];
      e[2u * p + 1u] = y2[p];
    }
    for (uint j = 0u; j < VEC; ++j) {
      y1[j] = e[j];
      y2[j] = e[VEC + j];
    }
#endif
    IDX_T ob = obase + IDX_T(h) * row_step;
#if VEC > 1
    OUT_VT oa = OUT_VT(0), oc = OUT_VT(0);
    for (uint j = 0u; j < VEC; ++j) {
      OUT_VSET(oa, j, y1[j]);
      OUT_VSET(oc, j, y2[j]);
    }
    outvv[uint((ob + first) / VEC)] = oa;
    outvv[uint((ob + second) / VEC)] = oc;
#else
    outv[uint(ob + first)] = OUT_STORE(y1[0]);
    outv[uint(ob + second)] = OUT_STORE(y2[0]);
#endif
  }
}
