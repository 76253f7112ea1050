#version 450
#extension GL_GOOGLE_include_directive : require
// Scaled dot-product attention (fast::scaled_dot_product_attention), the "sdpa" family:
//   out[b, h, i] = sum_j softmax_j(scale * q[b, h, i] . k[b, h / G, j] + mask) v[b, h / G, j]
// with G query heads per KV head (GQA). A workgroup serves one (batch, KV head) and a
// block of its query rows r = g * Lq + i (the G heads that share the KV head, each with its
// Lq queries), so every K/V row it reads serves all of them. Scores and the softmax are f32
// whatever the dtype; the softmax is online (running max m, sum l and weighted sum of V),
// so no Lq x Lkv score matrix exists; the output is rounded once.
//
// MODE_VECTOR (decode, Lq <= 8): RB rows per workgroup; NT teams of TPR lanes take keys in
//   turn (lane slices of D and DV in registers, dot products summed over the team), then
//   the teams' (m, l, acc) combine through shared memory. With SPLIT, workgroups along z
//   each take a chunk of keys and write (m, l, acc) to an f32 scratch buffer; MODE_MERGE
//   then combines the chunks, one invocation per output element.
// MODE_ROWS (prefill): BQ rows per workgroup, keys in tiles of BK through shared memory: each
//   invocation computes scores of (row, key) pairs from shared Q and K, BQ invocations
//   update the rows' softmax state, and each invocation accumulates its (row, d) outputs
//   from shared V. Causal tiles past the block's last visible key are never loaded.
//
// Masked positions (causal, or false in a bool mask) score LOWEST, the output dtype's
// lowest finite value, so a row that sees no key at all averages V uniformly, as MLX's
// composition (a where() with finfo.min, then softmax) does; keys past Lkv score -inf and never count. A sink (one
// logit per query head, no value) starts each row's state at m = sink, l = 1.
//
// The engine defines MODE, D, DV, TPR, RB (vector), BQ and BK (rows), MASK (MASK_NONE,
// MASK_CAUSAL, MASK_BOOL, MASK_ADD), SINKS, SPLIT, SUBGROUP, IN0_* (q, k, v), IN1_* (the
// mask), IN2_* (the sinks) and OUT_*. codegen/attention.cpp packs the push constants.
#define MODE_VECTOR 0
#define MODE_ROWS 1
#define MODE_MERGE 2
#define MASK_NONE 0
#define MASK_CAUSAL 1
#define MASK_BOOL 2
#define MASK_ADD 3
#ifndef MODE
#define MODE MODE_VECTOR
#endif
#ifndef D
#define D 128
#endif
#ifndef DV
#define DV D
#endif
#ifndef TPR
#define TPR 32
#endif
#ifndef RB
#define RB 1
#endif
#ifndef BQ
#define BQ 16
#define BK 16
#endif
#ifndef MASK
#define MASK MASK_NONE
#endif
#ifndef SINKS
#define SINKS 0
#endif
#ifndef SPLIT
#define SPLIT 0
#endif
#ifndef SUBGROUP
#define SUBGROUP 0
#endif
#if SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

#include "include/operands.glsl"
#ifndef IN1_ST
#define IN1_ST float
#define IN1_LOAD(x) (x)
#endif
#ifndef IN2_ST
#define IN2_ST float
#define IN2_LOAD(x) (x)
#endif

layout(local_size_x_id = 0) in;
#define WGS gl_WorkGroupSize.x
#define NT (WGS / TPR)
#define DPL (D / TPR)
#define VPL (DV / TPR)
#ifndef LOWEST
#define LOWEST (-3.40282347e38)  // the output dtype's lowest finite value (f32 by default)
#endif
#define NEG_INF uintBitsToFloat(0xff800000u)

#if MODE == MODE_MERGE
layout(std430, set = 0, binding = 0) readonly buffer Partial {
  float part[];
};
#else
layout(std430, set = 0, binding = 0) readonly buffer Q {
  IN0_ST qv[];
};
layout(std430, set = 0, binding = 1) readonly buffer K {
  IN0_ST kv[];
};
layout(std430, set = 0, binding = 2) readonly buffer V {
  IN0_ST vv[];
};
layout(std430, set = 0, binding = 3) readonly buffer Mask {
  IN1_ST maskv[];
};
#endif
layout(std430, set = 0, binding = 4) readonly buffer Sinks {
  IN2_ST sinkv[];
};
#if SPLIT
layout(std430, set = 0, binding = 5) writeonly buffer Out {
  float outp[];
};
#else
layout(std430, set = 0, binding = 5) writeonly buffer Out {
  OUT_ST outv[];
};
#endif

// codegen/attention.cpp packs exactly these fields (int32; larger spans take the
// composition). Strides are elements; d is contiguous in q, k and v.
layout(push_constant) uniform Params {
  int q_offset;
  int k_offset;
  int v_offset;
  int m_offset;
  int s_offset;
  int out_offset;
  int q_sb, q_sh, q_si;
  int k_sb, k_sh, k_sj;
  int v_sb, v_sh, v_sj;
  int m_sb, m_sh, m_si, m_sj;
  int lq;
  int lkv;
  int hkv;
  int groups;  // G: query heads per KV head
  int scale_bits;
  int splits;
  int kchunk;  // keys per split
}
pc;

// The score of key j for query row (b, h, i), after the mask.
float masked(float s, int b, int h, int i, int j) {
#if MASK == MASK_CAUSAL
  return j <= i + pc.lkv - pc.lq ? s : LOWEST;
#elif MASK == MASK_BOOL
  uint keep = uint(maskv[uint(pc.m_offset + b * pc.m_sb + h * pc.m_sh + i * pc.m_si + j * pc.m_sj)]);
  return keep != 0u ? s : LOWEST;
#elif MASK == MASK_ADD
  return s + float(IN1_LOAD(
                 maskv[uint(pc.m_offset + b * pc.m_sb + h * pc.m_sh + i * pc.m_si + j * pc.m_sj)]));
#else
  return s;
#endif
}

float sink_of(int h) {
#if SINKS
  return float(IN2_LOAD(sinkv[uint(pc.s_offset + h)]));
#else
  return NEG_INF;
#endif
}

// The output of a row from its combined state: o / l, with the sink as one more logit.
float finish(float o, float m, float l, int h) {
#if SINKS
  float sk = sink_of(h);
  float m2 = max(m, sk);
  float c = exp(m - m2);
  return (o * c) / (l * c + exp(sk - m2));
#else
  return o / l;
#endif
}

#if MODE == MODE_MERGE
// One invocation per output element: the splits' states combined.
void main() {
  int idx = int(gl_WorkGroupID.y * gl_NumWorkGroups.x * WGS + gl_GlobalInvocationID.x);
  int rows = pc.hkv * pc.groups * pc.lq * pc.q_sb;  // q_sb carries the batch count here
  if (idx >= rows * DV) {
    return;
  }
  int row = idx / DV;
  int d = idx - row * DV;
  int h = (row / pc.lq) % (pc.hkv * pc.groups);
  int base = pc.q_offset + row * pc.splits * (DV + 2);  // q_offset: the scratch
  float m = NEG_INF;
  for (int s = 0; s < pc.splits; ++s) {
    m = max(m, part[uint(base + s * (DV + 2))]);
  }
  float l = 0.0f;
  float o = 0.0f;
  if (m != NEG_INF) {
    for (int s = 0; s < pc.splits; ++s) {
      int at = base + s * (DV + 2);
      float w = exp(part[uint(at)] - m);
      l += part[uint(at + 1)] * w;
      o += part[uint(at + 2 + d)] * w;
    }
  }
  outv[uint(pc.out_offset + idx)] = OUT_STORE(finish(o, m, l, h));
}

#elif MODE == MODE_VECTOR
#define MR RB
#include "include/teams.glsl"

shared float comb_m[NT];
shared float comb_l[NT];
shared float comb_acc[NT * DV];

float q_reg[RB][DPL];
float run_m[RB];
float run_l[RB];
float acc[RB][VPL];

void main() {
  uint t = gl_LocalInvocationID.x;
  uint team = team_index();
  uint lane = team_lane();
  int bk = int(gl_WorkGroupID.x);
  int b = bk / pc.hkv;
  int kvh = bk - b * pc.hkv;
  int rows = pc.groups * pc.lq;
  int r0 = int(gl_WorkGroupID.y) * RB;
  int split = int(gl_WorkGroupID.z);
  int kbeg = split * pc.kchunk;
  int kend = min(pc.lkv, kbeg + pc.kchunk);
  float scale = uintBitsToFloat(uint(pc.scale_bits));

  for (uint r = 0; r < RB; ++r) {
    int rr = r0 + int(r);
    int g = rr / pc.lq;
    int i = rr - g * pc.lq;
    int h = kvh * pc.groups + g;
    for (uint d = 0; d < DPL; ++d) {
      q_reg[r][d] = rr < rows ? scale * float(IN0_LOAD(qv[uint(pc.q_offset + b * pc.q_sb + h * pc.q_sh +
                                                               i * pc.q_si + int(lane * DPL + d))]))
                              : 0.0f;
    }
    run_m[r] = NEG_INF;
    run_l[r] = 0.0f;
    for (uint d = 0; d < VPL; ++d) {
      acc[r][d] = 0.0f;
    }
  }

  // The same number of steps for every team: team_sum may hold barriers.
  int steps = (kend - kbeg + int(NT) - 1) / int(NT);
  for (int step = 0; step < steps; ++step) {
    int j = kbeg + step * int(NT) + int(team);
    bool valid = j < kend;
    float kr[DPL];
    float vr[VPL];
    for (uint d = 0; d < DPL; ++d) {
      kr[d] = valid ? float(IN0_LOAD(kv[uint(pc.k_offset + b * pc.k_sb + kvh * pc.k_sh + j * pc.k_sj +
                                             int(lane * DPL + d))]))
                    : 0.0f;
    }
    for (uint d = 0; d < VPL; ++d) {
      vr[d] = valid ? float(IN0_LOAD(vv[uint(pc.v_offset + b * pc.v_sb + kvh * pc.v_sh + j * pc.v_sj +
                                             int(lane * VPL + d))]))
                    : 0.0f;
    }
    for (uint r = 0; r < RB; ++r) {
      float partial = 0.0f;
      for (uint d = 0; d < DPL; ++d) {
        partial = fma(q_reg[r][d], kr[d], partial);
      }
      float s = team_sum(partial, r);
      int rr = r0 + int(r);
      if (!valid || rr >= rows) {
        continue;
      }
      int g = rr / pc.lq;
      int i = rr - g * pc.lq;
      s = masked(s, b, kvh * pc.groups + g, i, j);
      float m_new = max(run_m[r], s);
      if (m_new == NEG_INF) {
        continue;  // only -inf so far (an additive mask): nothing to weigh yet
      }
      float c = exp(run_m[r] - m_new);
      float p = exp(s - m_new);
      run_l[r] = run_l[r] * c + p;
      for (uint d = 0; d < VPL; ++d) {
        acc[r][d] = acc[r][d] * c + p * vr[d];
      }
      run_m[r] = m_new;
    }
  }

  // Combine the teams, row by row.
  for (uint r = 0; r < RB; ++r) {
    if (lane == 0) {
      comb_m[team] = run_m[r];
      comb_l[team] = run_l[r];
    }
    for (uint d = 0; d < VPL; ++d) {
      comb_acc[team * DV + lane * VPL + d] = acc[r][d];
    }
    barrier();
    int rr = r0 + int(r);
    if (rr < rows) {
      int g = rr / pc.lq;
      int i = rr - g * pc.lq;
      int h = kvh * pc.groups + g;
      int row = (b * pc.hkv * pc.groups + h) * pc.lq + i;
      float m = NEG_INF;
      for (uint q = 0; q < NT; ++q) {
        m = max(m, comb_m[q]);
      }
      for (uint d = t; d < DV; d += WGS) {
        float l = 0.0f;
        float o = 0.0f;
        if (m != NEG_INF) {
          for (uint q = 0; q < NT; ++q) {
            float w = exp(comb_m[q] - m);
            l += comb_l[q] * w;
            o += comb_acc[q * DV + d] * w;
          }
        }
#if SPLIT
        int at = pc.out_offset + (row * pc.splits + split) * (DV + 2);
        if (d == 0) {
          outp[uint(at)] = m;
          outp[uint(at + 1)] = l;
        }
        outp[uint(at + 2 + int(d))] = o;
#else
        outv[uint(pc.out_offset + row * DV + int(d))] = OUT_STORE(finish(o, m, l, h));
#endif
      }
    }
    barrier();
  }
}

#else  // MODE_ROWS
shared float qs[BQ * D];
shared float ks[BK * D];
shared float vs[BK * DV];
shared float ss[BQ * BK];
shared float row_m[BQ];
shared float row_l[BQ];
shared float row_c[BQ];

#define OPT ((BQ * DV + WGS - 1) / WGS)
float o_reg[OPT];

void main() {
  uint t = gl_LocalInvocationID.x;
  int bk = int(gl_WorkGroupID.x);
  int b = bk / pc.hkv;
  int kvh = bk - b * pc.hkv;
  int rows = pc.groups * pc.lq;
  int r0 = int(gl_WorkGroupID.y) * BQ;
  float scale = uintBitsToFloat(uint(pc.scale_bits));

  for (uint e = t; e < BQ * D; e += WGS) {
    int rr = r0 + int(e / D);
    int g = rr / pc.lq;
    int i = rr - g * pc.lq;
    int h = kvh * pc.groups + g;
    qs[e] = rr < rows ? scale * float(IN0_LOAD(qv[uint(pc.q_offset + b * pc.q_sb + h * pc.q_sh +
                                                       i * pc.q_si + int(e % D))]))
                      : 0.0f;
  }
  if (t < BQ) {
    int rr = r0 + int(t);
    int g = rr / pc.lq;
    row_m[t] = SINKS == 1 && rr < rows ? sink_of(kvh * pc.groups + g) : NEG_INF;
    row_l[t] = SINKS == 1 && rr < rows ? 1.0f : 0.0f;
  }
  for (uint u = 0; u < OPT; ++u) {
    o_reg[u] = 0.0f;
  }

  // Keys this block can see: a causal block stops after its last row's last key.
  // A row that sees no key at all (causal with Lq > Lkv) averages every key, so a block
  // holding one reads them all.
  int last_row = min(r0 + BQ, rows) - 1;
  bool one_head = r0 / pc.lq == last_row / pc.lq;
  int max_i = one_head ? last_row % pc.lq : pc.lq - 1;
  int min_i = one_head ? r0 % pc.lq : 0;
  int kmax = pc.lkv;
  if (MASK == MASK_CAUSAL && min_i + pc.lkv - pc.lq >= 0) {
    kmax = min(max_i + 1 + pc.lkv - pc.lq, pc.lkv);
  }
  barrier();
  for (int k0 = 0; k0 < kmax; k0 += BK) {
    for (uint e = t; e < BK * D; e += WGS) {
      int j = k0 + int(e / D);
      ks[e] = j < pc.lkv ? float(IN0_LOAD(kv[uint(pc.k_offset + b * pc.k_sb + kvh * pc.k_sh +
                                                  j * pc.k_sj + int(e % D))]))
                         : 0.0f;
    }
    for (uint e = t; e < BK * DV; e += WGS) {
      int j = k0 + int(e / DV);
      vs[e] = j < pc.lkv ? float(IN0_LOAD(vv[uint(pc.v_offset + b * pc.v_sb + kvh * pc.v_sh +
                                                  j * pc.v_sj + int(e % DV))]))
                         : 0.0f;
    }
    barrier();
    for (uint e = t; e < BQ * BK; e += WGS) {
      uint row = e / BK;
      uint kk = e % BK;
      int rr = r0 + int(row);
      int j = k0 + int(kk);
      float s = NEG_INF;
      if (rr < rows && j < pc.lkv) {
        s = 0.0f;
        for (uint d = 0; d < D; ++d) {
          s = fma(qs[row * D + d], ks[kk * D + d], s);
        }
        int g = rr / pc.lq;
        s = masked(s, b, kvh * pc.groups + g, rr - g * pc.lq, j);
      }
      ss[e] = s;
    }
    barrier();
    if (t < BQ) {
      float m_old = row_m[t];
      float m_new = m_old;
      for (uint kk = 0; kk < BK; ++kk) {
        m_new = max(m_new, ss[t * BK + kk]);
      }
      float c = 1.0f;
      float sum = 0.0f;
      if (m_new != NEG_INF) {
        c = exp(m_old - m_new);
        for (uint kk = 0; kk < BK; ++kk) {
          float p = exp(ss[t * BK + kk] - m_new);
          ss[t * BK + kk] = p;
          sum += p;
        }
      } else {
        for (uint kk = 0; kk < BK; ++kk) {
          ss[t * BK + kk] = 0.0f;
        }
      }
      row_l[t] = row_l[t] * c + sum;
      row_m[t] = m_new;
      row_c[t] = c;
    }
    barrier();
    for (uint u = 0; u < OPT; ++u) {
      uint e = t + u * WGS;
      if (e < BQ * DV) {
        uint row = e / DV;
        uint d = e % DV;
        float o = o_reg[u] * row_c[row];
        for (uint kk = 0; kk < BK; ++kk) {
          o = fma(ss[row * BK + kk], vs[kk * DV + d], o);
        }
        o_reg[u] = o;
      }
    }
    barrier();
  }
  for (uint u = 0; u < OPT; ++u) {
    uint e = t + u * WGS;
    int rr = r0 + int(e / DV);
    if (e < BQ * DV && rr < rows) {
      int g = rr / pc.lq;
      int i = rr - g * pc.lq;
      int h = kvh * pc.groups + g;
      int row = (b * pc.hkv * pc.groups + h) * pc.lq + i;
      outv[uint(pc.out_offset + row * DV + int(e % DV))] = OUT_STORE(o_reg[u] / row_l[e / DV]);
    }
  }
}
#endif
