// The prologue of sdpa.glsl's decode step (STEP 1, fast::DecodeAttention): the new query
// and key rows normalized and rotated as the rope kernel does, and the new key and value
// rows written into the caches. Included by sdpa.glsl's vector mode only: it uses that
// template's bindings, push constants, teams and comb_acc.
#ifndef MLX_SDPA_STEP_GLSL
#define MLX_SDPA_STEP_GLSL

#include "include/rope_angle.glsl"
#ifndef QNORM
#define QNORM 0
#endif
#ifndef KNORM
#define KNORM 0
#endif
#ifndef TRADITIONAL
#define TRADITIONAL 0
#endif
// The engine defines ROPE_COEF (log2(base) / (D / 2)), ROPE_SCALE, Q_EPS and K_EPS as f32 bits.
shared float fresh_k[D];  // the new key row, rotated and rounded
shared float fresh_v[DV];
shared float step_inv[RB + 1];  // each row's rsqrt(mean(x^2) + eps)

// The rows' squares summed per row by the teams (team r takes row r, in passes), for the
// norms: RB query rows in comb_acc, then the key row.
void step_norm_stats() {
  uint team = team_index();
  uint lane = team_lane();
  for (uint pass = 0; pass < (RB + NT) / NT; ++pass) {
    uint r = pass * NT + team;
    float ss = 0.0f;
    bool normed = r < RB ? QNORM == 1 : (r == RB && KNORM == 1);
    if (normed) {
      for (uint e = lane; e < D; e += TPR) {
        float x = r < RB ? comb_acc[r * D + e] : fresh_k[e];
        ss = fma(x, x, ss);
      }
    }
    ss = team_sum(ss, 0u);
    if (normed && lane == 0u) {
      float eps = uintBitsToFloat(r < RB ? Q_EPS : K_EPS);
      step_inv[r] = inversesqrt(ss / float(D) + eps);
    }
  }
}

// Element e's value in the rows: query rows in comb_acc, then the key row.
float step_get(uint r, uint e) {
  return r < RB ? comb_acc[r * D + e] : fresh_k[e];
}
void step_set(uint r, uint e, float v) {
  if (r < RB) {
    comb_acc[r * D + e] = v;
  } else {
    fresh_k[e] = v;
  }
}

// Reads the new rows, normalizes and rotates them (the rope kernel's arithmetic), and has
// `writer` store the key and value rows at cache row `wrow`. Leaves the query rows in
// comb_acc and the key and value rows in fresh_k, fresh_v. Every invocation calls it.
void step_rows(int b, int kvh, int r0, int rows, bool need_kv, bool writer, int wrow) {
  uint t = gl_LocalInvocationID.x;
  // The norms' weights and the position are read with the rows, not after the barriers
  // that need them: each was a memory round trip on the step's critical path.
  float pos = float(posv[uint(pc.pos_offset)]) * uintBitsToFloat(ROPE_SCALE);
#if QNORM || KNORM
  const uint WPRE = ((RB + 1) * D + WGS - 1) / WGS;
  float wpre[WPRE];
  [[unroll]] for (uint i = 0; i < WPRE; ++i) {
    uint e = t + i * WGS;
    uint r = e / D;
    uint j = e % D;
    float w = 1.0f;
#if QNORM
    w = r < RB ? float(IN0_LOAD(qwv[uint(pc.qw_offset + int(j))])) : w;
#endif
#if KNORM
    w = r == RB ? float(IN0_LOAD(kwv[uint(pc.kw_offset + int(j))])) : w;
#endif
    wpre[i] = w;
  }
#endif
  for (uint e = t; e < RB * D; e += WGS) {
    int rr = r0 + int(e / D);
    int h = kvh * pc.groups + rr;  // Lq = 1: row rr is query head rr of the group
    comb_acc[e] = rr < rows ? float(IN0_LOAD(qv[uint(pc.q_offset + b * pc.q_sb + h * pc.q_sh +
                                                     int(e % D))]))
                            : 0.0f;
  }
  if (need_kv) {
    for (uint e = t; e < D; e += WGS) {
      fresh_k[e] = float(IN0_LOAD(krv[uint(pc.kr_offset + b * pc.kr_sb + kvh * pc.kr_sh + int(e))]));
    }
    for (uint e = t; e < DV; e += WGS) {
      fresh_v[e] = float(IN0_LOAD(vrv[uint(pc.vr_offset + b * pc.vr_sb + kvh * pc.vr_sh + int(e))]));
    }
  }
  barrier();
#if QNORM || KNORM
  step_norm_stats();
  barrier();
  // rms_norm's value, rounded to the dtype as the norm's output: x * inv * w.
  [[unroll]] for (uint i = 0; i < WPRE; ++i) {
    uint e = t + i * WGS;
    uint r = e / D;
    uint j = e % D;
    bool normed = e < (RB + 1) * D && (r < RB ? QNORM == 1 : KNORM == 1);
    if (normed) {
      step_set(r, j, OUT_ROUND(step_get(r, j) * step_inv[r] * wpre[i]));
    }
  }
  barrier();
#endif
  // The rotation: pair k of a row at the position's angle, rounded once.
  for (uint p = t; p < (RB + 1) * (D / 2); p += WGS) {
    uint r = p / (D / 2);
    uint k = p % (D / 2);
#if TRADITIONAL
    uint i1 = 2u * k, i2 = 2u * k + 1u;
#else
    uint i1 = k, i2 = k + D / 2;
#endif
    float x1 = step_get(r, i1);
    float x2 = step_get(r, i2);
    float sn, cs;
    sincos_reduced(pos * rope_inv_freq(float(k), uintBitsToFloat(ROPE_COEF)), sn, cs);
    step_set(r, i1, OUT_ROUND(x1 * cs - x2 * sn));
    step_set(r, i2, OUT_ROUND(x1 * sn + x2 * cs));
  }
  barrier();
  if (writer) {
    for (uint e = t; e < D; e += WGS) {
      kout[uint(pc.k_offset + b * pc.k_sb + kvh * pc.k_sh + wrow * pc.k_sj + int(e))] = OUT_STORE(fresh_k[e]);
    }
    for (uint e = t; e < DV; e += WGS) {
      vout[uint(pc.v_offset + b * pc.v_sb + kvh * pc.v_sh + wrow * pc.v_sj + int(e))] = OUT_STORE(fresh_v[e]);
    }
  }
}

#endif
