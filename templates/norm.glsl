#version 450
#extension GL_GOOGLE_include_directive : require
// rms_norm and layer_norm over rows: `count` rows of `len` contiguous elements,
//   rms:   y = x * rsqrt(mean(x^2) + eps) * w
//   layer: y = (x - mean(x)) * rsqrt(mean((x - mean(x))^2) + eps) * w + b
// in f32 whatever the storage dtype, rounded once on store (as the CPU reference).
//
// A row belongs to `tpr` invocations (a power of two up to the workgroup, chosen by
// codegen/fast.cpp from the row length), so one workgroup holds WG / tpr rows: short rows
// (a 128-wide head norm) do not leave most of a workgroup idle. Each invocation reads
// the vectors lane, lane + tpr, ... of its row (coalesced). When a row has at most
// tpr * MAX_STEPS vectors they stay in registers: one read of x, then the statistics and
// the store come from registers. Longer rows are read again for each pass (from cache).
//
// The engine defines: LAYER (0: rms), VEC (elements per load, 1 or 4: x and the output
// rows then start at multiples of VEC), SUBGROUP (row sums by subgroup shuffles),
// IN0_* (x, the weight and bias share its dtype) and OUT_*. Defaults: f32 rms, scalar.
#ifndef LAYER
#define LAYER 0
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef SUBGROUP
#define SUBGROUP 0
#endif
#if SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

#include "include/operands.glsl"
#if VEC > 1
#include "include/lanes.glsl"
#endif

// Vectors per invocation held in registers (16 f32 values with VEC 4).
#define MAX_STEPS (VEC > 1 ? 4 : 8)

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer In0 {
  IN0_ST in0[];
};
layout(std430, set = 0, binding = 1) readonly buffer Weight {
  IN0_ST weight[];
};
#if LAYER
layout(std430, set = 0, binding = 2) readonly buffer Bias {
  IN0_ST bias[];
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
  IDX_T in0_offset;
  IDX_T w_offset;
  IDX_T b_offset;
  IDX_T out_offset;
  IDX_T len;
  IDX_T count;     // rows
  IDX_T w_stride;  // 1, or 0 for the scalar the op passes when it has no weight
  IDX_T b_stride;
  IDX_T tpr;       // invocations per row: a power of two dividing the workgroup
  IDX_T eps_bits;  // eps as f32 bits
}
pc;

shared float red[gl_WorkGroupSize.x];

// Where this invocation sits: the row within the workgroup and the lane within the row.
// With subgroups, rows follow subgroup IDs (a row owns tpr / size whole subgroups, or
// size / tpr rows share one), so a row's lanes are always one shuffle cluster.
uint row_in_group;
uint lane;

void locate() {
  uint tpr = uint(pc.tpr);
#if SUBGROUP
  uint sgs = gl_SubgroupSize;
  if (tpr >= sgs) {
    row_in_group = gl_SubgroupID / (tpr / sgs);
    lane = (gl_SubgroupID % (tpr / sgs)) * sgs + gl_SubgroupInvocationID;
  } else {
    row_in_group = gl_SubgroupID * (sgs / tpr) + gl_SubgroupInvocationID / tpr;
    lane = gl_SubgroupInvocationID % tpr;
  }
#else
  row_in_group = gl_LocalInvocationID.x / tpr;
  lane = gl_LocalInvocationID.x % tpr;
#endif
}

// The sum of v over the row's tpr lanes, in every lane. Called in uniform control flow.
float row_sum(float v) {
  uint tpr = uint(pc.tpr);
#if SUBGROUP
  uint sgs = gl_SubgroupSize;
  for (uint off = 1u; off < min(tpr, sgs); off <<= 1u) {
    v += subgroupShuffleXor(v, off);
  }
  if (tpr <= sgs) {
    return v;
  }
  barrier();  // the previous call's readers are done with red
  if (gl_SubgroupInvocationID == 0u) {
    red[gl_SubgroupID] = v;
  }
  barrier();
  uint per = tpr / sgs;
  uint first = (gl_SubgroupID / per) * per;
  float s = 0.0f;
  for (uint k = 0u; k < per; ++k) {
    s += red[first + k];
  }
  return s;
#else
  uint t = gl_LocalInvocationID.x;
  barrier();
  red[t] = v;
  barrier();
  for (uint w = tpr / 2u; w > 0u; w >>= 1u) {
    if (lane < w) {
      red[t] += red[t + w];
    }
    barrier();
  }
  return red[t - lane];
#endif
}

float load_x(IDX_T i) {
  return IN0_LOAD(in0[uint(i)]);
}

// y for element j of the row with statistics (mu, inv).
float affine(float x, IDX_T j, float mu, float inv) {
  float y = (x - mu) * inv * IN0_LOAD(weight[uint(pc.w_offset + j * pc.w_stride)]);
#if LAYER
  y += IN0_LOAD(bias[uint(pc.b_offset + j * pc.b_stride)]);
#endif
  return y;
}

void main() {
  locate();
  uint tpr = uint(pc.tpr);
  uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  IDX_T row = IDX_T(group) * IDX_T(gl_WorkGroupSize.x / tpr) + IDX_T(row_in_group);
  bool live = row < pc.count;  // dead invocations still join every row_sum
  IDX_T base = pc.in0_offset + row * pc.len;
  IDX_T obase = pc.out_offset + row * pc.len;
  IDX_T nv = pc.len / VEC;  // vectors per row
  float n = float(pc.len);
  float eps = uintBitsToFloat(uint(pc.eps_bits));
  float mu = 0.0f;
  float inv;

  if (nv <= IDX_T(tpr * MAX_STEPS)) {
    // Registers: one read of the row.
    float v[MAX_STEPS * VEC];
    float s = 0.0f;
    for (uint k = 0u; k < MAX_STEPS; ++k) {
      IDX_T q = IDX_T(lane + k * tpr);
      bool in_row = live && q < nv;
#if VEC > 1
      IN0_VT w = in_row ? in0v[uint(base / VEC + q)] : IN0_VT(0);
      for (uint j = 0u; j < VEC; ++j) {
        v[k * VEC + j] = in_row ? IN0_VLANE(w, j) : 0.0f;
        s += LAYER != 0 ? v[k * VEC + j] : v[k * VEC + j] * v[k * VEC + j];
      }
#else
      v[k] = in_row ? load_x(base + q) : 0.0f;
      s += LAYER != 0 ? v[k] : v[k] * v[k];
#endif
    }
    s = row_sum(s);
#if LAYER
    mu = s / n;
    float d2 = 0.0f;
    for (uint k = 0u; k < MAX_STEPS; ++k) {
      bool in_row = IDX_T(lane + k * tpr) < nv;
      for (uint j = 0u; j < VEC; ++j) {
        float d = v[k * VEC + j] - mu;
        d2 += in_row ? d * d : 0.0f;
      }
    }
    s = row_sum(d2);
#endif
    inv = inversesqrt(s / n + eps);
    if (!live) {
      return;
    }
    for (uint k = 0u; k < MAX_STEPS; ++k) {
      IDX_T q = IDX_T(lane + k * tpr);
      if (q >= nv) {
        break;
      }
#if VEC > 1
      OUT_VT w = OUT_VT(0);
      for (uint j = 0u; j < VEC; ++j) {
        OUT_VSET(w, j, affine(v[k * VEC + j], q * VEC + IDX_T(j), mu, inv));
      }
      outvv[uint(obase / VEC + q)] = w;
#else
      outv[uint(obase + q)] = OUT_STORE(affine(v[k], q, mu, inv));
#endif
    }
    return;
  }

  // Long rows: element-wise passes over the row (lanes stride by tpr).
  float s = 0.0f;
  for (IDX_T j = IDX_T(lane); live && j < pc.len; j += IDX_T(tpr)) {
    float x = load_x(base + j);
    s += LAYER != 0 ? x : x * x;
  }
  s = row_sum(s);
#if LAYER
  mu = s / n;
  float d2 = 0.0f;
  for (IDX_T j = IDX_T(lane); live && j < pc.len; j += IDX_T(tpr)) {
    float d = load_x(base + j) - mu;
    d2 += d * d;
  }
  s = row_sum(d2);
#endif
  inv = inversesqrt(s / n + eps);
  for (IDX_T j = IDX_T(lane); live && j < pc.len; j += IDX_T(tpr)) {
    outv[uint(obase + j)] = OUT_STORE(affine(load_x(base + j), j, mu, inv));
  }
}
