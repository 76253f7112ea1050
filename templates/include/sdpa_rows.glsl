// The rows mode of sdpa.glsl (MODE_ROWS: prefill with register tiles, on any device).
// Included by sdpa.glsl only, after its bindings, push constants, masks and helpers
// (first_row_of_block, visible_keys, masked, sink_of, the q/k/v loads). docs/attention.md
// describes the mode.
#ifndef MLX_SDPA_ROWS_GLSL
#define MLX_SDPA_ROWS_GLSL

// Register-tiled flash attention. Each invocation owns TR = 4 query rows of the block (rows
// rg + RG * i: a subgroup's row groups then read consecutive rows of the Q tile, in distinct
// banks) and, per tile of BK keys, TK keys (lane + LPR * j: consecutive lanes read
// consecutive K rows). LPR invocations share a row group: they agree on the rows' running
// max through LPR-lane reductions (subgroup shuffles, or shared memory), each keeps its own
// part of the rows' sum l (added up once at the end), and each owns NQ quads of the rows'
// output columns (lane + LPR * q), accumulated in registers from P (shared memory) times
// the V tile. Tiles are staged in shared memory as 4-element quads: Q once, K then V
// through one buffer (prefetched into registers a phase ahead, so global latency hides
// behind the arithmetic). QH / KVH keep Q / K and V as 16-bit bits there (converted at each
// read) when f32 tiles would not fit; codegen/attention.cpp chooses the tiles.
#ifndef TK
#define TK 4
#endif
#ifndef QH
#define QH 0
#endif
#ifndef KVH
#define KVH 0
#endif
#define TR 4
#define LPR (BK / TK)
#define RG (BQ / TR)
#define RWG (RG * LPR)
#define DM (D > DV ? D : DV)
#define QS (D / 4 + 1)   // row stride of the Q tile in quads (+1: rows start in distinct banks)
#define KS (DM / 4 + 1)  // of the K/V tile
#define PS (BQ / 4 + 1)  // of the P tile: one row of BQ probabilities per key
#define NQ ((DV / 4 + LPR - 1) / LPR)      // output quads per invocation and row
#define KQ ((BK * D / 4 + RWG - 1) / RWG)   // K quads each invocation stages
#define VQ ((BK * DV / 4 + RWG - 1) / RWG)  // V quads


#if QH
shared uvec2 qs[BQ * QS];
#define Q_STORE(w) (w)
#define Q_READ(x) unpack4(x)
#else
shared vec4 qs[BQ * QS];
#define Q_STORE(w) unpack4(w)
#define Q_READ(x) (x)
#endif
#if KVH
shared uvec2 kvs[BK * KS];
#define KV_STORE(w) (w)
#define KV_READ(x) unpack4(x)
#else
shared vec4 kvs[BK * KS];
#define KV_STORE(w) unpack4(w)
#define KV_READ(x) (x)
#endif
shared vec4 ps[BK * PS];
#if !SUBGROUP
shared float red[BQ * LPR];
#endif

uint rg;    // row group: rows rg + RG * i of the block
uint lane;  // within the row group

// Max (take_max) or sum of each row's value over the LPR invocations of its row group.
// Every invocation must call it (the shared-memory version has barriers).
void group_reduce(inout float v[TR], bool take_max) {
#if SUBGROUP
  [[unroll]] for (uint i = 0; i < TR; ++i) {
    [[unroll]] for (uint o = 1; o < LPR; o *= 2) {
      float w = subgroupShuffleXor(v[i], o);
      v[i] = take_max ? max(v[i], w) : v[i] + w;
    }
  }
#else
  [[unroll]] for (uint i = 0; i < TR; ++i) {
    red[(rg * TR + i) * LPR + lane] = v[i];
  }
  barrier();
  [[unroll]] for (uint i = 0; i < TR; ++i) {
    float a = red[(rg * TR + i) * LPR];
    for (uint u = 1; u < LPR; ++u) {
      float w = red[(rg * TR + i) * LPR + u];
      a = take_max ? max(a, w) : a + w;
    }
    v[i] = a;
  }
  barrier();
#endif
}

RAW4 kreg[KQ];
RAW4 vreg[VQ];

// Global -> registers: quads of the K (or V) rows k0 .. k0 + BK. Every load reads a row of
// the cache (rows past Lkv read row Lkv - 1): loads under a condition, with zeros in the
// other branch, made NVIDIA's compiler copy the loaded registers into the loop's own soon
// after the loads, waiting for them there (its machine code, H100). A K row past Lkv only
// gives scores the mask replaces (such a tile is an edge tile); V's are zeroed as they are
// stored (their probabilities are 0, and 0 * inf or NaN would not be).
void fetch_k(int base, int k0) {
  [[unroll]] for (uint u = 0; u < KQ; ++u) {
    uint e = gl_LocalInvocationID.x + u * RWG;
    int j = min(k0 + int(e / (D / 4)), pc.lkv - 1);
    kreg[u] = KQ * RWG == BK * D / 4 || e < BK * D / 4
                  ? LOAD_K(base + j * pc.k_sj + int(e % (D / 4)) * 4)
                  : RAW_ZERO;
  }
}
void fetch_v(int base, int k0) {
  [[unroll]] for (uint u = 0; u < VQ; ++u) {
    uint e = gl_LocalInvocationID.x + u * RWG;
    int j = min(k0 + int(e / (DV / 4)), pc.lkv - 1);
    vreg[u] = VQ * RWG == BK * DV / 4 || e < BK * DV / 4
                  ? LOAD_V(base + j * pc.v_sj + int(e % (DV / 4)) * 4)
                  : RAW_ZERO;
  }
}
void store_k() {
  [[unroll]] for (uint u = 0; u < KQ; ++u) {
    uint e = gl_LocalInvocationID.x + u * RWG;
    if (KQ * RWG == BK * D / 4 || e < BK * D / 4) {
      kvs[(e / (D / 4)) * KS + e % (D / 4)] = KV_STORE(kreg[u]);
    }
  }
}
// V rows k0 .. k0 + BK; rows past Lkv as zeros (one branch for the workgroup).
void store_v(int k0) {
  if (k0 + BK > pc.lkv) {
    [[unroll]] for (uint u = 0; u < VQ; ++u) {
      uint e = gl_LocalInvocationID.x + u * RWG;
      if (VQ * RWG == BK * DV / 4 || e < BK * DV / 4) {
        kvs[(e / (DV / 4)) * KS + e % (DV / 4)] =
            KV_STORE(k0 + int(e / (DV / 4)) < pc.lkv ? vreg[u] : RAW_ZERO);
      }
    }
  } else {
    [[unroll]] for (uint u = 0; u < VQ; ++u) {
      uint e = gl_LocalInvocationID.x + u * RWG;
      if (VQ * RWG == BK * DV / 4 || e < BK * DV / 4) {
        kvs[(e / (DV / 4)) * KS + e % (DV / 4)] = KV_STORE(vreg[u]);
      }
    }
  }
}

void main() {
  // With subgroups, row groups follow subgroup IDs so a group's lanes are one shuffle
  // cluster (LPR divides the subgroup size). Staging uses the local ID.
#if SUBGROUP
  uint t = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
#else
  uint t = gl_LocalInvocationID.x;
#endif
  rg = t / LPR;
  lane = t % LPR;
  int bk = int(gl_WorkGroupID.x);
  int b = bk / pc.hkv;
  int kvh = bk - b * pc.hkv;
  int rows = pc.groups * pc.lq;
  int r0 = first_row_of_block();
  float scale = uintBitsToFloat(uint(pc.scale_bits));
  int kbase = pc.k_offset + b * pc.k_sb + kvh * pc.k_sh;
  int vbase = pc.v_offset + b * pc.v_sb + kvh * pc.v_sh;

  for (uint e = gl_LocalInvocationID.x; e < BQ * D / 4; e += RWG) {
    uint r = e / (D / 4);
    uint dq = e % (D / 4);
    int rr = r0 + int(r);
    RAW4 w = RAW_ZERO;
    if (rr < rows) {
      int g = rr / pc.lq;
      int i = rr - g * pc.lq;
      w = LOAD_Q(pc.q_offset + b * pc.q_sb + (kvh * pc.groups + g) * pc.q_sh + i * pc.q_si +
                        int(dq) * 4);
    }
    qs[r * QS + dq] = Q_STORE(w);
  }

  // The rows' state: running max m (agreed by the row group), this invocation's part of
  // the sum l, its output quads; where the row's mask starts and its last causal key.
  float m[TR];
  float l[TR];
  vec4 o[TR][NQ];
  int lim[TR];
  int mrow[TR];
  bool valid[TR];
  [[unroll]] for (uint i = 0; i < TR; ++i) {
    int rr = r0 + int(rg + RG * i);
    int g = rr / pc.lq;
    int qi = rr - g * pc.lq;
    int h = kvh * pc.groups + g;
    valid[i] = rr < rows;
    lim[i] = qi + pc.lkv - pc.lq;
    mrow[i] = pc.m_offset + b * pc.m_sb + h * pc.m_sh + qi * pc.m_si;
    m[i] = SINKS == 1 && valid[i] ? sink_of(h) : NEG_INF;
    l[i] = SINKS == 1 && valid[i] && lane == 0 ? 1.0f : 0.0f;
    [[unroll]] for (uint q = 0; q < NQ; ++q) {
      o[i][q] = vec4(0.0f);
    }
  }

  int kmax, full;
  visible_keys(r0, rows, kmax, full);

  fetch_k(kbase, 0);
  for (int k0 = 0; k0 < kmax; k0 += BK) {
    store_k();
    barrier();  // K (and, the first time, Q) visible
    fetch_v(vbase, k0);

    // S = Q K^T for the invocation's TR x TK block, over D in quads.
    float s[TR][TK];
    [[unroll]] for (uint i = 0; i < TR; ++i) {
      [[unroll]] for (uint j = 0; j < TK; ++j) {
        s[i][j] = 0.0f;
      }
    }
    for (uint d4 = 0; d4 < D / 4; ++d4) {
      vec4 qf[TR];
      [[unroll]] for (uint i = 0; i < TR; ++i) {
        qf[i] = Q_READ(qs[(rg + RG * i) * QS + d4]);
      }
      [[unroll]] for (uint j = 0; j < TK; ++j) {
        vec4 kf = KV_READ(kvs[(lane + LPR * j) * KS + d4]);
        [[unroll]] for (uint i = 0; i < TR; ++i) {
          float a = s[i][j];
          a = fma(qf[i].x, kf.x, a);
          a = fma(qf[i].y, kf.y, a);
          a = fma(qf[i].z, kf.z, a);
          a = fma(qf[i].w, kf.w, a);
          s[i][j] = a;
        }
      }
    }

    // Scale and mask; per key only on tiles some row does not fully see.
    // One branch for the tile (edge is the same for the workgroup), not one per score.
    bool edge = MASK == MASK_BOOL || MASK == MASK_ADD || k0 + BK > full;
    if (edge) {
      [[unroll]] for (uint i = 0; i < TR; ++i) {
        [[unroll]] for (uint j = 0; j < TK; ++j) {
          float x = s[i][j] * scale;
          int kj = k0 + int(lane + LPR * j);
          if (kj >= pc.lkv) {
            x = NEG_INF;
          } else if (valid[i]) {
#if MASK == MASK_CAUSAL
            x = kj <= lim[i] ? x : LOWEST;
#elif MASK == MASK_BOOL
            x = uint(maskv[uint(mrow[i] + kj * pc.m_sj)]) != 0u ? x : LOWEST;
#elif MASK == MASK_ADD
            x += float(IN1_LOAD(maskv[uint(mrow[i] + kj * pc.m_sj)]));
#endif
          }
          s[i][j] = x;
        }
      }
    } else {
      [[unroll]] for (uint i = 0; i < TR; ++i) {
        [[unroll]] for (uint j = 0; j < TK; ++j) {
          s[i][j] *= scale;
        }
      }
    }
    float mt[TR];
    [[unroll]] for (uint i = 0; i < TR; ++i) {
      mt[i] = NEG_INF;
      [[unroll]] for (uint j = 0; j < TK; ++j) {
        mt[i] = max(mt[i], s[i][j]);
      }
    }
    group_reduce(mt, true);

    // Online softmax: rescale the state to the new max, P to shared memory. While a row has
    // seen only -inf (an additive mask), its state stays 0: exp(-inf - 0) = 0.
    vec4 pq[TK];
    [[unroll]] for (uint i = 0; i < TR; ++i) {
      float m_new = max(m[i], mt[i]);
      float base = m_new == NEG_INF ? 0.0f : m_new;
      float sum = 0.0f;
      [[unroll]] for (uint j = 0; j < TK; ++j) {
        float p = exp(s[i][j] - base);
        pq[j][i] = p;
        sum += p;
      }
      float c = exp(m[i] - base);
      m[i] = m_new;
      l[i] = l[i] * c + sum;
      if (c != 1.0f) {  // the max has moved (rarely, once the rows have seen a few tiles)
        [[unroll]] for (uint q = 0; q < NQ; ++q) {
          o[i][q] *= c;
        }
      }
    }
    [[unroll]] for (uint j = 0; j < TK; ++j) {
      ps[(lane + LPR * j) * PS + rg] = pq[j];
    }
    barrier();  // P visible, K no longer read
    store_v(k0);
    barrier();  // V visible
    // Even past kmax (unused, its rows clamped to the cache): under a condition of its
    // own the loads again went through copies.
    fetch_k(kbase, k0 + BK);

    // O += P V for the invocation's rows and quads.
    for (uint kk = 0; kk < BK; ++kk) {
      vec4 p = ps[kk * PS + rg];
      [[unroll]] for (uint q = 0; q < NQ; ++q) {
        uint dq = lane + LPR * q;
        if (NQ * LPR == DV / 4 || dq < DV / 4) {
          vec4 v = KV_READ(kvs[kk * KS + dq]);
          o[0][q] = fma(vec4(p.x), v, o[0][q]);
          o[1][q] = fma(vec4(p.y), v, o[1][q]);
          o[2][q] = fma(vec4(p.z), v, o[2][q]);
          o[3][q] = fma(vec4(p.w), v, o[3][q]);
        }
      }
    }
    barrier();  // V and P no longer read
  }

  group_reduce(l, false);
  [[unroll]] for (uint i = 0; i < TR; ++i) {
    int rr = r0 + int(rg + RG * i);
    if (!valid[i]) {
      continue;
    }
    int g = rr / pc.lq;
    int qi = rr - g * pc.lq;
    int row = (b * pc.hkv * pc.groups + kvh * pc.groups + g) * pc.lq + qi;
    [[unroll]] for (uint q = 0; q < NQ; ++q) {
      uint dq = lane + LPR * q;
      if (NQ * LPR == DV / 4 || dq < DV / 4) {
        int at = pc.out_offset + row * DV + int(dq) * 4;
        vec4 r = o[i][q] / l[i];
        outv[uint(at)] = OUT_STORE(r.x);
        outv[uint(at + 1)] = OUT_STORE(r.y);
        outv[uint(at + 2)] = OUT_STORE(r.z);
        outv[uint(at + 3)] = OUT_STORE(r.w);
      }
    }
  }
}

#endif
