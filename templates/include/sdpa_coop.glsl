// The coop mode of sdpa.glsl (MODE_COOP: prefill on cooperative matrices). Included by
// sdpa.glsl only, after its bindings, push constants, masks and helpers (first_row_of_block,
// visible_keys, sink_of, LOWEST, NEG_INF). docs/attention.md describes the mode.
#ifndef MLX_SDPA_COOP_GLSL
#define MLX_SDPA_COOP_GLSL

// Flash attention on cooperative matrices (prefill, d and dv multiples of 16 up to 128,
// f16, or bf16 through the KHR rewrite: codegen/coop_rewrite.h). A workgroup of BQ / 16
// subgroups (32 lanes each; BQ 64, or 128 with the register softmax) owns BQ query rows of
// one (batch, KV head), a subgroup 16 of them: its Q fragments stay in registers for the
// whole kernel and its output as DV / 16 accumulators of 16 x 16 f32. Per tile of BK keys:
//   0. K (BK x D) and V (BK x DV), loaded into registers during the previous tile, go to
//      shared memory, and the next tile's loads are issued (so global latency hides behind
//      a whole tile of work);
//   1. S = Q K^T as BK / 16 accumulators (a K fragment, K being rows of keys, loads
//      column-major as the B operand);
//   2. the online softmax, scaled and masked as in MODE_ROWS (running max m and each
//      lane's part of the sum l): with COOP_REG_SOFTMAX on the accumulators' elements in
//      registers (NVIDIA's layout), else through shared memory, two lanes per row; P goes
//      to shared memory as 16-bit values;
//   3. the output accumulators are rescaled by their rows' factors;
//   4. O += P V.
// Shared-memory traffic bounds this kernel more than the multiply-adds do: reading S as
// 16-byte vectors and then keeping it in registers took an H100 from 79 to 95-98 TFLOPS
// (causal f16 L=4096 hd128), and with S out of shared memory, two K/V buffers (one
// barrier a tile instead of two) to 101.
// The end divides by l and rounds once. Masks, sinks, causal tile skipping and the block
// order are MODE_ROWS's. codegen/attention.cpp picks this mode (docs/attention.md).
#ifndef COOP_BF16
#define COOP_BF16 0
#endif
#ifndef COOP_REG_SOFTMAX
#define COOP_REG_SOFTMAX 0
#endif
#define SGS (BQ / 16)               // subgroups of 16 rows
#define WGI (SGS * 32)              // invocations
#define KPL (BK / 2)                // keys per lane in the softmax: 2 lanes per row
#define DM (D > DV ? D : DV)
#define KLD (DM / 8 + 1)            // row stride of the Q, K and V tiles in uvec4s (+1: banks)
#define SLD (BK + 4)                // row stride of S in floats (16-byte multiple)
#define PLD (BK / 8 + 1)            // row stride of P in uvec4s
#define TILE_ROWS (BQ > 2 * BK ? BQ : 2 * BK)
#define KC ((BK * (D / 8) + WGI - 1) / WGI)   // K chunks each invocation stages per tile
#define VC ((BK * (DV / 8) + WGI - 1) / WGI)  // V chunks
layout(constant_id = 1) const uint COOP_K = 16;  // B's rows: its type must differ from A's
#define FA fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define FB fcoopmatNV<16, gl_ScopeSubgroup, COOP_K, 16>
#define FC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

#if COOP_REG_SOFTMAX
// Q first (its BQ rows across both buffers); then two buffers of K (rows 0..BK) and V
// (BK..2 BK): the next tile is stored into one while the other is read, so a tile costs one
// workgroup barrier (H100: 97.0 -> 101.9 TFLOPS, causal f16 L=4096). They stage the output
// at the end. The output's staging (SGS * 16 * SLD floats) needs more than the buffers when
// D and DV are 16.
#define KV_ROWS (2 * BK)
#define KV_BUFS ((2 * KV_ROWS > BQ ? 2 * KV_ROWS : BQ) * KLD)
#define OUT_STAGE (SGS * 16 * SLD / 4)
shared uvec4 tile4[KV_BUFS > OUT_STAGE ? KV_BUFS : OUT_STAGE];
#define STAGE4 tile4
#else
shared uvec4 tile4[TILE_ROWS * KLD];   // Q first; then K (rows 0..BK) and V (BK..2 BK)
shared uvec4 ss4[SGS * 16 * SLD / 4];  // each subgroup's 16 x BK scores; the output at the end
#define STAGE4 ss4
#endif
shared uvec4 ps4[SGS * 16 * PLD];     // each subgroup's 16 x BK probabilities, 16-bit
shared float rowf[BQ];                // per row: this tile's rescale factor, then 1 / l
shared float ridx[256];               // the row of each element of a 16 x 16 matrix

uint pack2(float a, float b) {
#if COOP_BF16
  return pack_bf16x2(a, b);
#else
  return packHalf2x16(vec2(a, b));
#endif
}

// Rows j0 .. j0 + BK of K and V into registers, then into the tile (its buffer at kvo).
// Every load reads a row of the cache (a row past Lkv reads row Lkv - 1): a load under a
// condition, with zeros in its other branch, made NVIDIA's compiler copy each loaded
// register into the loop's own right after the loads, which waited for them there and
// undid the prefetch (its machine code, H200). A K row past Lkv only gives scores the
// mask replaces (such a tile is an edge tile); V's rows past Lkv are zeroed as the tile is
// stored, so that 0 * inf or NaN cannot reach the output.
// Chunk e of the K tile is row e / (D / 8), 8 values at 8 * (e % (D / 8)); V alike.
uvec4 rk[KC];
uvec4 rv[VC];
void fetch_kv(int kbase, int vbase, int j0) {
  [[unroll]] for (uint u = 0; u < KC; ++u) {
    uint e = gl_LocalInvocationID.x + u * WGI;
    int kj = min(j0 + int(e / (D / 8)), pc.lkv - 1);
    rk[u] = KC * WGI == BK * (D / 8) || e < BK * (D / 8) ? kv[uint(kbase + kj * pc.k_sj + int(e % (D / 8)) * 8) / 8u] : uvec4(0u);
  }
  [[unroll]] for (uint u = 0; u < VC; ++u) {
    uint e = gl_LocalInvocationID.x + u * WGI;
    int kj = min(j0 + int(e / (DV / 8)), pc.lkv - 1);
    rv[u] = VC * WGI == BK * (DV / 8) || e < BK * (DV / 8) ? vv[uint(vbase + kj * pc.v_sj + int(e % (DV / 8)) * 8) / 8u] : uvec4(0u);
  }
}
// The tile of rows j0 .. j0 + BK, fetched by fetch_kv, into the buffer at kvo.
void store_kv(uint kvo, int j0) {
  [[unroll]] for (uint u = 0; u < KC; ++u) {
    uint e = gl_LocalInvocationID.x + u * WGI;
    if (KC * WGI == BK * (D / 8) || e < BK * (D / 8)) {
      tile4[kvo + (e / (D / 8)) * KLD + e % (D / 8)] = rk[u];
    }
  }
  bool tail = j0 + BK > pc.lkv;  // the same for the whole workgroup
  [[unroll]] for (uint u = 0; u < VC; ++u) {
    uint e = gl_LocalInvocationID.x + u * WGI;
    if (VC * WGI == BK * (DV / 8) || e < BK * (DV / 8)) {
      uvec4 w = rv[u];
      if (tail && j0 + int(e / (DV / 8)) >= pc.lkv) {
        w = uvec4(0u);
      }
      tile4[kvo + (BK + e / (DV / 8)) * KLD + e % (DV / 8)] = w;
    }
  }
}

// A query row's softmax state and what its mask needs.
struct CoopRow {
  bool valid;
  int h;     // query head
  int lim;   // last key a causal mask lets it see
  int mrow;  // its row of the mask array
  float m;   // running max
  float l;   // this lane's part of the running sum
};

CoopRow coop_row(int r0, int rows, int b, int kvh, uint r, bool first_lane) {
  CoopRow c;
  int rr = r0 + int(r);
  c.valid = rr < rows;
  int g = rr / pc.lq;
  int qi = rr - g * pc.lq;
  c.h = kvh * pc.groups + g;
  c.lim = qi + pc.lkv - pc.lq;
  c.mrow = pc.m_offset + b * pc.m_sb + c.h * pc.m_sh + qi * pc.m_si;
  c.m = SINKS == 1 && c.valid ? sink_of(c.h) : NEG_INF;
  c.l = SINKS == 1 && c.valid && first_lane ? 1.0f : 0.0f;
  return c;
}

// Score v of key kj for a row, scaled, with the mask applied (keys past Lkv weigh nothing).
float coop_masked(float v, int kj, CoopRow c) {
  if (kj >= pc.lkv) {
    return NEG_INF;
  }
  if (c.valid) {
#if MASK == MASK_CAUSAL
    v = kj <= c.lim ? v : LOWEST;
#elif MASK == MASK_BOOL
    v = uint(maskv[uint(c.mrow + kj * pc.m_sj)]) != 0u ? v : LOWEST;
#elif MASK == MASK_ADD
    v += float(IN1_LOAD(maskv[uint(c.mrow + kj * pc.m_sj)]));
#endif
  }
  return v;
}

void main() {
  uint sg = gl_SubgroupID;
  uint lane = gl_SubgroupInvocationID;
  uint row = lane / 2u;   // this lane's row of the subgroup's 16 in the softmax
  uint part = lane % 2u;  // and its half of the tile's keys
  int bk = int(gl_WorkGroupID.x);
  int b = bk / pc.hkv;
  int kvh = bk - b * pc.hkv;
  int rows = pc.groups * pc.lq;
  int r0 = first_row_of_block();
  float scale = uintBitsToFloat(uint(pc.scale_bits));
  int kbase = pc.k_offset + b * pc.k_sb + kvh * pc.k_sh;
  int vbase = pc.v_offset + b * pc.v_sb + kvh * pc.v_sh;

  // Q's rows (zeros past the last) and the row-index matrix.
  for (uint e = gl_LocalInvocationID.x; e < BQ * (D / 8); e += gl_WorkGroupSize.x) {
    uint r = e / (D / 8), c = e % (D / 8);
    int rr = r0 + int(r);
    uvec4 w = uvec4(0u);
    if (rr < rows) {
      int g = rr / pc.lq;
      int i = rr - g * pc.lq;
      w = qv[uint(pc.q_offset + b * pc.q_sb + (kvh * pc.groups + g) * pc.q_sh + i * pc.q_si +
                  int(c) * 8) / 8u];
    }
    tile4[r * KLD + c] = w;
  }
  for (uint e = gl_LocalInvocationID.x; e < 256u; e += gl_WorkGroupSize.x) {
    ridx[e] = float(e / 16u);
  }
  barrier();
  FA fq[D / 16];
  [[unroll]] for (uint k = 0; k < D / 16; ++k) {
    coopMatLoadNV(fq[k], tile4, sg * 16u * KLD + k * 2u, KLD, false);
  }
  FC rowm;
  coopMatLoadNV(rowm, ridx, 0, 16, false);
#if COOP_REG_SOFTMAX
  // The softmax runs on the scores in registers (COOP_REG_SOFTMAX, NVIDIA: codegen sets it
  // from DeviceCaps::coop_acc_nv_layout): element i of lane t of an accumulator is row
  // t / 4 + 8 (i / 4), column 2 (t % 4) + i % 2 + 8 ((i / 2) % 2) (read back on an H100,
  // NV and KHR paths), so a row is 4 adjacent lanes whose partial max and sum meet by two
  // shuffles. Checked here against the row and column matrices: a driver that lays them
  // out otherwise gets NaN outputs (tests/gpu_diff fails loudly), never quiet wrong values.
  {
    FC colm;
    coopMatLoadNV(colm, ridx, 0, 16, true);  // the transpose: element (r, c) is c
    bool mine = rowm.length() == 8;
    for (int i = 0; i < rowm.length(); ++i) {
      uint want_r = lane / 4u + 8u * (uint(i) / 4u);
      uint want_c = 2u * (lane % 4u) + uint(i) % 2u + 8u * ((uint(i) / 2u) % 2u);
      mine = mine && uint(rowm[i]) == want_r && uint(colm[i]) == want_c;
    }
    if (!subgroupAll(mine)) {
      scale = uintBitsToFloat(0x7fc00000u);
    }
  }
#endif
  FC o[DV / 16];
  [[unroll]] for (uint n = 0; n < DV / 16; ++n) {
    o[n] = FC(0.0);
  }

  // This lane's rows and their states (m shared by a row's lanes, l in parts): through
  // shared memory row lane / 2 (ra); in registers rows lane / 4 and lane / 4 + 8 (ra, rb).
#if COOP_REG_SOFTMAX
  CoopRow ra = coop_row(r0, rows, b, kvh, sg * 16u + lane / 4u, lane % 4u == 0u);
  CoopRow rb = coop_row(r0, rows, b, kvh, sg * 16u + lane / 4u + 8u, lane % 4u == 0u);
#else
  CoopRow ra = coop_row(r0, rows, b, kvh, sg * 16u + row, part == 0u);
#endif

  int kmax, full;
  visible_keys(r0, rows, kmax, full);

  uint s_at = sg * 16u * SLD;
  uint p_at = sg * 16u * PLD;
  fetch_kv(kbase, vbase, 0);
#if COOP_REG_SOFTMAX
  barrier();  // Q is in registers: the buffers are free
  store_kv(0u, 0);
  barrier();
  if (BK < kmax) {
    fetch_kv(kbase, vbase, BK);
  }
  uint kvo = 0u;  // the buffer of this tile
#else
  const uint kvo = 0u;
#endif
  for (int k0 = 0; k0 < kmax; k0 += BK) {
#if !COOP_REG_SOFTMAX
    barrier();  // the tile is free: Q loaded into registers, or the last K and V read
    store_kv(0u, k0);
    barrier();
    if (k0 + BK < kmax) {
      fetch_kv(kbase, vbase, k0 + BK);
    }
#endif

    // 1. S = Q K^T.
    FC sf[BK / 16];
    [[unroll]] for (uint n = 0; n < BK / 16; ++n) {
      sf[n] = FC(0.0);
    }
    [[unroll]] for (uint k = 0; k < D / 16; ++k) {
      [[unroll]] for (uint n = 0; n < BK / 16; ++n) {
        FB fk;
        coopMatLoadNV(fk, tile4, kvo + n * 16u * KLD + k * 2u, KLD, true);
        sf[n] = coopMatMulAddNV(fq[k], fk, sf[n]);
      }
    }
    bool edge = MASK == MASK_BOOL || MASK == MASK_ADD || k0 + BK > full;
#if COOP_REG_SOFTMAX
    {
      // 2. Scale, mask and the online softmax on the accumulators' elements.
      // One branch for the tile (edge is the same for the workgroup), not one per score:
      // inside the loop NVIDIA's compiler tested and branched per element.
      if (edge) {
        [[unroll]] for (uint n = 0; n < BK / 16; ++n) {
          [[unroll]] for (int i = 0; i < 8; ++i) {
            int kj = k0 + int(n * 16u + 2u * (lane % 4u)) + (i & 1) + 8 * ((i >> 1) & 1);
            sf[n][i] = coop_masked(sf[n][i] * scale, kj, (i & 4) != 0 ? rb : ra);
          }
        }
      } else {
        [[unroll]] for (uint n = 0; n < BK / 16; ++n) {
          [[unroll]] for (int i = 0; i < 8; ++i) {
            sf[n][i] *= scale;
          }
        }
      }
      float mta = NEG_INF, mtb = NEG_INF;
      [[unroll]] for (uint n = 0; n < BK / 16; ++n) {
        [[unroll]] for (int i = 0; i < 8; ++i) {
          if ((i & 4) != 0) {  // row rb
            mtb = max(mtb, sf[n][i]);
          } else {
            mta = max(mta, sf[n][i]);
          }
        }
      }
      mta = max(mta, subgroupShuffleXor(mta, 1u));
      mta = max(mta, subgroupShuffleXor(mta, 2u));
      mtb = max(mtb, subgroupShuffleXor(mtb, 1u));
      mtb = max(mtb, subgroupShuffleXor(mtb, 2u));
      float mna = max(ra.m, mta), mnb = max(rb.m, mtb);
      float basea = mna == NEG_INF ? 0.0f : mna;
      float baseb = mnb == NEG_INF ? 0.0f : mnb;
      float suma = 0.0f, sumb = 0.0f;
      // P as 16-bit pairs of adjacent keys: row t / 4 (+ 8), keys 2 (t % 4) (+ 8) of each
      // 16, so word t % 4 of uvec4 2 n (+ 1) of the row.
      [[unroll]] for (uint n = 0; n < BK / 16; ++n) {
        [[unroll]] for (int i = 0; i < 8; i += 2) {
          bool lower = (i & 4) != 0;
          float base = lower ? baseb : basea;
          float p0 = exp(sf[n][i] - base);
          float p1 = exp(sf[n][i + 1] - base);
          if (lower) {
            sumb += p0 + p1;
          } else {
            suma += p0 + p1;
          }
          uint prow = lane / 4u + (lower ? 8u : 0u);
          ps4[p_at + prow * PLD + 2u * n + uint((i >> 1) & 1)][lane % 4u] = pack2(p0, p1);
        }
      }
      float ca = exp(ra.m - basea), cb = exp(rb.m - baseb);
      ra.m = mna;
      rb.m = mnb;
      ra.l = ra.l * ca + suma;
      rb.l = rb.l * cb + sumb;
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      // 3. Rescale the output rows to the new max.
      [[unroll]] for (uint n = 0; n < DV / 16; ++n) {
        [[unroll]] for (int i = 0; i < 8; ++i) {
          o[n][i] *= (i & 4) != 0 ? cb : ca;
        }
      }
    }
#else
    {
      [[unroll]] for (uint n = 0; n < BK / 16; ++n) {
        coopMatStoreNV(sf[n], ss4, (s_at + n * 16u) / 4u, SLD / 4u, false);
      }
      subgroupMemoryBarrierShared();
      subgroupBarrier();

      // 2. Scale, mask and the online softmax for this lane's KPL keys of its row.
      vec4 sv[KPL / 4];
      [[unroll]] for (uint u = 0; u < KPL / 4; ++u) {
        sv[u] = uintBitsToFloat(ss4[(s_at + row * SLD + part * KPL) / 4u + u]);
      }
      float x[KPL];
      float mt = NEG_INF;
      [[unroll]] for (uint u = 0; u < KPL; ++u) {
        float v = sv[u / 4u][u % 4u] * scale;
        if (edge) {
          v = coop_masked(v, k0 + int(part * KPL + u), ra);
        }
        x[u] = v;
        mt = max(mt, v);
      }
      mt = max(mt, subgroupShuffleXor(mt, 1u));
      float m_new = max(ra.m, mt);
      float base = m_new == NEG_INF ? 0.0f : m_new;
      float sum = 0.0f;
      [[unroll]] for (uint u = 0; u < KPL; u += 8u) {
        float p[8];
        [[unroll]] for (uint w = 0; w < 8u; ++w) {
          p[w] = exp(x[u + w] - base);
          sum += p[w];
        }
        ps4[p_at + row * PLD + (part * KPL + u) / 8u] =
            uvec4(pack2(p[0], p[1]), pack2(p[2], p[3]), pack2(p[4], p[5]), pack2(p[6], p[7]));
      }
      float c = exp(ra.m - base);
      ra.m = m_new;
      ra.l = ra.l * c + sum;
      if (part == 0u) {
        rowf[sg * 16u + row] = c;
      }
      subgroupMemoryBarrierShared();
      subgroupBarrier();

      // 3. Rescale the output rows to the new max.
      float fac[16];
      for (int i = 0; i < rowm.length(); ++i) {
        fac[i] = rowf[sg * 16u + uint(rowm[i])];
      }
      [[unroll]] for (uint n = 0; n < DV / 16; ++n) {
        for (int i = 0; i < o[n].length(); ++i) {
          o[n][i] *= fac[i];
        }
      }
    }
#endif

    // 4. O += P V.
    [[unroll]] for (uint k = 0; k < BK / 16; ++k) {
      FA fp;
      coopMatLoadNV(fp, ps4, p_at + k * 2u, PLD, false);
      [[unroll]] for (uint n = 0; n < DV / 16; ++n) {
        FB fv;
        coopMatLoadNV(fv, tile4, kvo + (BK + k * 16u) * KLD + n * 2u, KLD, false);
        o[n] = coopMatMulAddNV(fp, fv, o[n]);
      }
    }
#if COOP_REG_SOFTMAX
    // The next tile into the other buffer (no subgroup still reads it: each passed the
    // last barrier after its reads of the tile before), one barrier, then the tile after.
    kvo = KV_ROWS * KLD - kvo;
    // The tile after is fetched even past kmax (its rows clamped to the cache, unused):
    // under a condition of its own the loads again went through copies.
    if (k0 + BK < kmax) {
      store_kv(kvo, k0 + BK);
      barrier();
      fetch_kv(kbase, vbase, k0 + 2 * BK);
    }
#endif
  }
#if COOP_REG_SOFTMAX
  barrier();  // the buffers become the output's staging
#endif

  // The end: l summed over the row's two lanes; each output accumulator through this
  // subgroup's scores area, divided by l and rounded once.
#if COOP_REG_SOFTMAX
  {
    ra.l += subgroupShuffleXor(ra.l, 1u);
    ra.l += subgroupShuffleXor(ra.l, 2u);
    rb.l += subgroupShuffleXor(rb.l, 1u);
    rb.l += subgroupShuffleXor(rb.l, 2u);
    if (lane % 4u == 0u) {
      rowf[sg * 16u + lane / 4u] = 1.0f / ra.l;
      rowf[sg * 16u + lane / 4u + 8u] = 1.0f / rb.l;
    }
  }
#else
  {
    ra.l += subgroupShuffleXor(ra.l, 1u);
    if (part == 0u) {
      rowf[sg * 16u + row] = 1.0f / ra.l;
    }
  }
#endif
  [[unroll]] for (uint n = 0; n < DV / 16; ++n) {
    coopMatStoreNV(o[n], STAGE4, s_at / 4u, SLD / 4u, false);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    for (uint e = lane; e < 256u; e += gl_SubgroupSize) {
      uint r = e / 16u, cc = e % 16u;
      int orow = r0 + int(sg * 16u + r);
      if (orow < rows) {
        int g = orow / pc.lq;
        int i = orow - g * pc.lq;
        int out_row = (b * pc.hkv * pc.groups + kvh * pc.groups + g) * pc.lq + i;
        float v = uintBitsToFloat(STAGE4[(s_at + r * SLD + cc) / 4u][cc % 4u]) * rowf[sg * 16u + r];
        outv[uint(pc.out_offset + out_row * DV + int(n * 16u + cc))] = OUT_STORE(v);
      }
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
  }
}

#endif
