#version 450
#extension GL_GOOGLE_include_directive : require
// Row normalizations: `count` rows of `len` contiguous elements,
//   rms:     y = x * rsqrt(mean(x^2) + eps) * w
//   layer:   y = (x - mean(x)) * rsqrt(mean((x - mean(x))^2) + eps) * w + b
//   softmax: y = exp(x - max(x)) / sum(exp(x - max(x)))   (NaN propagates; a row with
//            +inf, or only -inf, gives NaN as the CPU, NumPy and MLX)
// in f32 whatever the storage dtype, rounded once on store (as the CPU reference).
//
// A row belongs to `tpr` invocations (a power of two up to the workgroup, chosen by
// codegen/fast.cpp from the row length), so one workgroup holds WG / tpr rows: short rows
// (a 128-wide head norm) do not leave most of a workgroup idle. Each invocation reads
// the vectors lane, lane + tpr, ... of its row (coalesced). When a row has at most
// tpr * MAX_STEPS vectors they stay in registers: one read of x, then the statistics and
// the store come from registers. Longer rows are read again for each pass (from cache).
//
// The engine defines: NORM_OP (OP_RMS, OP_LAYER or OP_SOFTMAX), VEC (elements per load:
// 1, or the dtype's lanes in 16 bytes, when x's and the output's rows start at multiples
// of it), SUBGROUP (row sums by subgroup shuffles), IN0_* (x, the weight and bias share
// its dtype) and OUT_*. Defaults: f32 rms, scalar.
#define OP_RMS 0
#define OP_LAYER 1
#define OP_SOFTMAX 2
#ifndef NORM_OP
#define NORM_OP OP_RMS
#endif
#define LAYER (NORM_OP == OP_LAYER)
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

// Vectors (elements without VEC) per invocation held in registers, packed as loaded: 64
// bytes, so each invocation keeps four 16-byte loads in flight. A GPU moves bytes in
// proportion to the bytes it has in flight: with two per invocation rms_norm bf16 4096^2
// ran at half of softmax f32's bandwidth on an H200 (same occupancy, 32 registers).
#define MAX_STEPS (VEC > 1 ? 4 : 16)
// 16-bit outputs stored as packed pairs (OUT_PACK2, types.glsl): rms_norm bf16 4096^2 28.4
// -> 27.1 us on an H200; layer_norm went 36.6 -> 41.6 (the held pair
// array costs it registers), so it keeps the per-lane stores.
#if defined(OUT_PACK2) && !LAYER
#define PACK_PAIRS 1
#else
#define PACK_PAIRS 0
#endif
#if VEC > 1
#define RAW_T IN0_VT
#define X(k, j) IN0_VLANE(xr[k], j)
#else
#define RAW_T float
#define X(k, j) xr[k]
#endif

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer In0 {
  IN0_ST in0[];
};
#if NORM_OP == OP_SOFTMAX
#define OUT_BINDING 1
#else
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
#if NORM_OP != OP_SOFTMAX
layout(std430, set = 0, binding = 1) readonly buffer WeightV {
  IN0_VT weightv[];
};
#endif
#if LAYER
layout(std430, set = 0, binding = 2) readonly buffer BiasV {
  IN0_VT biasv[];
};
#endif
#endif

// codegen/fast.cpp packs exactly these fields, each IDX_T.
layout(push_constant) uniform Params {
  IDX_T in0_offset;
  IDX_T w_offset;
  IDX_T b_offset;
  IDX_T out_offset;
  IDX_T len;
  IDX_T count;     // rows
  IDX_T w_stride;  // 1, or 0 for the scalar the op passes when it has no weight (the
                   // weight and bias fields are unused by softmax)
  IDX_T b_stride;
  IDX_T tpr;       // invocations per row: a power of two dividing the workgroup
  IDX_T eps_bits;  // eps as f32 bits
}
pc;

#if SUBGROUP
// One partial sum per subgroup, in two buffers that consecutive reductions alternate: the
// barrier of reduction k + 1 orders reduction k's reads before reduction k + 2 writes the
// same buffer, so no reduction waits for the previous one's readers first.
shared float red[2][gl_WorkGroupSize.x];
uint red_turn = 0u;  // the buffer the next reduction uses (uniform: every call is)
#else
shared float red[gl_WorkGroupSize.x];
#endif

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

// Softmax's max: NaN wins and stays.
float max_nan(float a, float b) {
  return (isnan(b) || b > a) && !isnan(a) ? b : a;
}

float combine(float a, float b, bool take_max) {
  return take_max ? max_nan(a, b) : a + b;
}

// The sum (or max) of v over the row's tpr lanes, in every lane. Called in uniform
// control flow.
float row_reduce(float v, bool take_max) {
  uint tpr = uint(pc.tpr);
#if SUBGROUP
  uint sgs = gl_SubgroupSize;
  for (uint off = 1u; off < min(tpr, sgs); off <<= 1u) {
    v = combine(v, subgroupShuffleXor(v, off), take_max);
  }
  if (tpr <= sgs) {
    return v;
  }
  uint buf = red_turn;
  red_turn ^= 1u;
  if (gl_SubgroupInvocationID == 0u) {
    red[buf][gl_SubgroupID] = v;
  }
  barrier();
  uint per = tpr / sgs;
  uint first = (gl_SubgroupID / per) * per;
  float r = red[buf][first];
  for (uint k = 1u; k < per; ++k) {
    r = combine(r, red[buf][first + k], take_max);
  }
  return r;
#else
  uint t = gl_LocalInvocationID.x;
  barrier();
  red[t] = v;
  barrier();
  for (uint w = tpr / 2u; w > 0u; w >>= 1u) {
    if (lane < w) {
      red[t] = combine(red[t], red[t + w], take_max);
    }
    barrier();
  }
  return red[t - lane];
#endif
}

float row_sum(float v) {
  return row_reduce(v, false);
}

float load_w(IDX_T j) {
#if NORM_OP == OP_SOFTMAX
  return 1.0f;
#else
  return IN0_LOAD(weight[uint(pc.w_offset + j * pc.w_stride)]);
#endif
}

float load_b(IDX_T j) {
#if LAYER
  return IN0_LOAD(bias[uint(pc.b_offset + j * pc.b_stride)]);
#else
  return 0.0f;
#endif
}

float load_x(IDX_T i) {
  return IN0_LOAD(in0[uint(i)]);
}

// y for an element with weight w and bias b, given the row's statistics (mu, inv): for
// softmax mu is the max and inv the reciprocal of the sum of exponentials.
float affine(float x, float w, float b, float mu, float inv) {
#if NORM_OP == OP_SOFTMAX
  return exp(x - mu) * inv;
#else
  return (x - mu) * inv * w + b;
#endif
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
    // Registers: one read of the row. Only x is held: the weight and bias are read at the
    // store, as vectors when dense (holding them too took the kernel to 48-64 registers on
    // an H200, half the workgroups per SM).
    RAW_T xr[MAX_STEPS];
#if VEC > 1
    // Dense, aligned weight and bias are read as vectors (uniform branches). rms_norm's
    // weight is loaded with x: read after the statistics it was a second memory round
    // trip on the critical path of a decode-sized norm (one 1024-row in a Qwen3 decode
    // step on an H100: 7.1 -> 6.3 us per call). layer_norm reads its weight and bias at the
    // store: holding both beside x cost it 10% on 4096^2 (38.4 -> 42.4 us).
    bool wvec = pc.w_stride == 1 && pc.w_offset % VEC == 0;
    bool bvec = pc.b_stride == 1 && pc.b_offset % VEC == 0;
#if NORM_OP == OP_RMS
    IN0_VT wr[MAX_STEPS];
#endif
#endif
    float s = 0.0f;
    for (uint k = 0u; k < MAX_STEPS; ++k) {
      IDX_T q = IDX_T(lane + k * tpr);
      bool in_row = live && q < nv;
#if VEC > 1
      xr[k] = in_row ? in0v[uint(base / VEC + q)] : IN0_VT(0);
#if NORM_OP == OP_RMS
      wr[k] = in_row && wvec ? weightv[uint(pc.w_offset / VEC + q)] : IN0_VT(0);
#endif
#else
      xr[k] = in_row ? load_x(base + q) : 0.0f;
#endif
      for (uint j = 0u; j < VEC; ++j) {
        float x = X(k, j);  // 0 outside the row
        s += LAYER ? x : x * x;
      }
    }
#if NORM_OP == OP_SOFTMAX
    float m = uintBitsToFloat(0xff800000u);
    for (uint k = 0u; k < MAX_STEPS; ++k) {
      bool in_row = IDX_T(lane + k * tpr) < nv;
      for (uint j = 0u; j < VEC; ++j) {
        m = in_row ? max_nan(m, X(k, j)) : m;
      }
    }
    mu = row_reduce(m, true);
    float e = 0.0f;
    for (uint k = 0u; k < MAX_STEPS; ++k) {
      bool in_row = IDX_T(lane + k * tpr) < nv;
      for (uint j = 0u; j < VEC; ++j) {
        e += in_row ? exp(X(k, j) - mu) : 0.0f;
      }
    }
    inv = 1.0f / row_sum(e);
#else
    s = row_sum(s);
#if LAYER
    mu = s / n;
    float d2 = 0.0f;
    for (uint k = 0u; k < MAX_STEPS; ++k) {
      bool in_row = IDX_T(lane + k * tpr) < nv;
      for (uint j = 0u; j < VEC; ++j) {
        float d = X(k, j) - mu;
        d2 += in_row ? d * d : 0.0f;
      }
    }
    s = row_sum(d2);
#endif
    inv = inversesqrt(s / n + eps);
#endif
    if (!live) {
      return;
    }
    for (uint k = 0u; k < MAX_STEPS; ++k) {
      IDX_T q = IDX_T(lane + k * tpr);
      if (q >= nv) {
        break;
      }
#if VEC > 1
#if LAYER
      IN0_VT wl = wvec ? weightv[uint(pc.w_offset / VEC + q)] : IN0_VT(0);
      IN0_VT bl = bvec ? biasv[uint(pc.b_offset / VEC + q)] : IN0_VT(0);
#endif
      OUT_VT o = OUT_VT(0);
#if PACK_PAIRS
      float y[VEC];
#endif
      for (uint j = 0u; j < VEC; ++j) {
        IDX_T el = q * VEC + IDX_T(j);
#if NORM_OP == OP_RMS
        float w = wvec ? IN0_VLANE(wr[k], j) : load_w(el);
#elif LAYER
        float w = wvec ? IN0_VLANE(wl, j) : load_w(el);
#else
        float w = 1.0f;
#endif
#if LAYER
        float b = bvec ? IN0_VLANE(bl, j) : load_b(el);
#else
        float b = 0.0f;
#endif
#if PACK_PAIRS
        y[j] = affine(X(k, j), w, b, mu, inv);
#else
        OUT_VSET(o, j, affine(X(k, j), w, b, mu, inv));
#endif
      }
#if PACK_PAIRS
      for (uint j = 0u; j < VEC; j += 2u) {
        o[j / 2u] = OUT_PACK2(y[j], y[j + 1u]);
      }
#endif
      outvv[uint(obase / VEC + q)] = o;
#else
      outv[uint(obase + q)] = OUT_STORE(affine(xr[k], load_w(q), load_b(q), mu, inv));
#endif
    }
    return;
  }

  // Long rows: element-wise passes over the row (lanes stride by tpr).
#if NORM_OP == OP_SOFTMAX
  float m = uintBitsToFloat(0xff800000u);
  for (IDX_T j = IDX_T(lane); live && j < pc.len; j += IDX_T(tpr)) {
    m = max_nan(m, load_x(base + j));
  }
  mu = row_reduce(m, true);
  float e = 0.0f;
  for (IDX_T j = IDX_T(lane); live && j < pc.len; j += IDX_T(tpr)) {
    e += exp(load_x(base + j) - mu);
  }
  inv = 1.0f / row_sum(e);
#else
  float s = 0.0f;
  for (IDX_T j = IDX_T(lane); live && j < pc.len; j += IDX_T(tpr)) {
    float x = load_x(base + j);
    s += LAYER ? x : x * x;
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
#endif
  for (IDX_T j = IDX_T(lane); live && j < pc.len; j += IDX_T(tpr)) {
    outv[uint(obase + j)] = OUT_STORE(affine(load_x(base + j), load_w(j), load_b(j), mu, inv));
  }
}
