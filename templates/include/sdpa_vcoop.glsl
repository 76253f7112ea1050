// The vcoop mode of sdpa.glsl (MODE_VCOOP: decode on cooperative matrices). Included by
// sdpa.glsl only, after its bindings, push constants, masks and helpers (masked, finish,
// LOWEST, NEG_INF). docs/attention.md ("The vcoop mode") describes it.
#ifndef MLX_SDPA_VCOOP_GLSL
#define MLX_SDPA_VCOOP_GLSL

// Decode (Lq <= 8) with the scores and the V update on 16 x 16 fragments, for f16 (bf16
// through the KHR rewrite) with d a multiple of 32 and dv of 64, both up to 128. The vector
// mode's time went to instructions, not reads (an H200 ran it at 86% of its time with no
// cache read at all: docs/attention.md); here a lane loads exactly the 16-bit values its
// fragments hold, as 16-byte vectors, and the tensor cores do every multiply-add.
//
// A workgroup (NSG subgroups) owns RB <= 8 query rows of one (batch, KV head) and one chunk
// of keys (a split); subgroup s takes the chunk's blocks of 16 keys s, s + NSG, ... with its
// own online softmax, and the subgroups' states combine at the end (as the vector mode's
// teams). Per block, lane l (g = l / 4, t = l % 4), NVIDIA's layouts (checked at the start):
//   S (16 rows x 16 keys) = Q (A: rows x d) K^T (B: d x keys), D / 16 products. Element i
//     of an A or B fragment has k = 2t + i % 2 + 8 ((i / 2) % 2); the product sums over k,
//     so any permutation of d applied to Q and K alike serves: lane t's k values of chunk c
//     are d = t D/4 + 4c + i % 4, so a lane reads D/4 contiguous values of each of its two K
//     rows (keys g, g + 8: B's columns) and of its Q row g (A's row; rows 8..15 are zeros).
//   The softmax on S's elements in registers: element i < 4 is row g, key 2t + i % 2 +
//     8 ((i / 2) % 2); a row's four lanes agree on its max with two shuffles.
//   P (A: rows x keys) has S's element layout, so it is S's elements rounded, in place.
//   O (rows x dv) += P V (B: keys x dv), DV / 16 products. Element i of V's fragment f has
//     key 2t + i % 2 + 8 ((i / 2) % 2) (lane t's 4 rows of V) and column g + 8 (i / 4); any
//     permutation of dv serves too, undone at the end: lane g's columns of every fragment are
//     dv = g DV/8 + 2f + i / 4, so a lane reads DV/8 contiguous values of each of its 4 V rows.
// So a block is 16-byte loads (two K rows, four V rows a lane), D / 16 + DV / 16 multiply-
// adds, and four exponentials, a rescale and two shuffles a lane; rows past RB and past the
// query rows are zero in A, so their results are never read.
#ifndef COOP_BF16
#define COOP_BF16 0
#endif
#define NSG 4              // subgroups a workgroup
#define KQ (D / 32)        // uvec4s a lane loads from each of its two K rows (and Q row)
#define VQ (DV / 64)       // uvec4s from each of its four V rows
layout(constant_id = 1) const uint COOP_K = 16;  // B's rows: its type must differ from A's
#define FA fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define FB fcoopmatNV<16, gl_ScopeSubgroup, COOP_K, 16>
#define FC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

shared float ridx[256];    // the row of each element of a 16 x 16 matrix (layout check)
shared uvec4 probe16[32];  // element (r, c) of a 16 x 16 16-bit matrix is 16 r + c
shared float comb_m[NSG * RB];
shared float comb_l[NSG * RB];
shared float comb_o[NSG * RB * DV];

// The 16 bits of the integer v (< 257) in the dtype, and those of a fragment element (an
// f16 in the source, the dtype's bits once the KHR rewrite retypes bf16 matrices).
uint probe_bits(uint v) {
#if COOP_BF16
  return floatBitsToUint(float(v)) >> 16;
#else
  return packHalf2x16(vec2(float(v), 0.0)) & 0xFFFFu;
#endif
}
uint element_bits(float16_t v) {
  return uint(float16BitsToUint16(v));
}
uint pack2(float a, float b) {
#if COOP_BF16
  return pack_bf16x2(a, b);
#else
  return packHalf2x16(vec2(a, b));
#endif
}

// Whether the driver lays out A, B and the accumulator as the fragments below assume
// (NVIDIA's: element i of lane l is row l / 4 + 8 (i / 4), column 2 (l % 4) + i % 2 +
// 8 ((i / 2) % 2) of the accumulator and of A (column = k), and k the same, column
// l / 4 + 8 (i / 4) of B). Otherwise the kernel writes NaN, never quiet wrong values.
bool fragment_layout_ok(uint lane) {
  for (uint e = gl_LocalInvocationID.x; e < 256u; e += gl_WorkGroupSize.x) {
    ridx[e] = float(e / 16u);
  }
  for (uint e = gl_LocalInvocationID.x; e < 128u; e += gl_WorkGroupSize.x) {
    probe16[e / 4u][e % 4u] = probe_bits(2u * e) | (probe_bits(2u * e + 1u) << 16);
  }
  barrier();
  FC rowm, colm;
  FA pa;
  FB pb;
  coopMatLoadNV(rowm, ridx, 0, 16, false);
  coopMatLoadNV(colm, ridx, 0, 16, true);  // the transpose: element (r, c) is c
  coopMatLoadNV(pa, probe16, 0, 2, false);
  coopMatLoadNV(pb, probe16, 0, 2, true);  // B (k x n) stored [n][k]
  bool ok = rowm.length() == 8 && pa.length() == 8 && pb.length() == 8;
  for (int i = 0; i < rowm.length(); ++i) {
    uint r = lane / 4u + 8u * (uint(i) / 4u);
    uint c = 2u * (lane % 4u) + uint(i) % 2u + 8u * ((uint(i) / 2u) % 2u);
    ok = ok && uint(rowm[i]) == r && uint(colm[i]) == c &&
         element_bits(pa[i]) == probe_bits(16u * r + c) &&
         element_bits(pb[i]) == probe_bits(16u * r + c);
  }
  return subgroupAll(ok);
}

// One block's K and V rows as stored: k[h] is key g + 8 h (d from t D/4), v[r] key
// 2t + r % 2 + 8 (r / 2) (dv from g DV/8). Every load reads a row of the cache (a key past
// Lkv reads row Lkv - 1): its score is masked and its V row zeroed before use.
struct KVRegs {
  uvec4 k[2][KQ];
  uvec4 v[4][VQ];
};

void load_block(out KVRegs R, int kbase, int vbase, int j0, uint g, uint t) {
  [[unroll]] for (uint h = 0; h < 2; ++h) {
    int j = min(j0 + int(g + 8u * h), pc.lkv - 1);
    int at = kbase + j * pc.k_sj + int(t * (D / 4));
    [[unroll]] for (uint q = 0; q < KQ; ++q) {
      R.k[h][q] = kv[uint(at + int(8u * q)) / 8u];
    }
  }
  [[unroll]] for (uint r = 0; r < 4; ++r) {
    int j = min(j0 + int(2u * t + r % 2u + 8u * (r / 2u)), pc.lkv - 1);
    int at = vbase + j * pc.v_sj + int(g * (DV / 8));
    [[unroll]] for (uint q = 0; q < VQ; ++q) {
      R.v[r][q] = vv[uint(at + int(8u * q)) / 8u];
    }
  }
}

// Elements 0..3 of an A or B fragment of chunk c from a lane's 16-bit values w (values
// 4c .. 4c + 3 of them); 4..7 are the second K row's (B) or zeros (A: rows 8..15).
#define SET_LOW4(F, w, c)                                                        \
  {                                                                              \
    f16vec2 lo_ = unpackFloat2x16((w)[(c) / 2u][2u * ((c) % 2u)]);               \
    f16vec2 hi_ = unpackFloat2x16((w)[(c) / 2u][2u * ((c) % 2u) + 1u]);          \
    F[0] = lo_.x; F[1] = lo_.y; F[2] = hi_.x; F[3] = hi_.y;                      \
  }
#define SET_HIGH4(F, w, c)                                                       \
  {                                                                              \
    f16vec2 lo_ = unpackFloat2x16((w)[(c) / 2u][2u * ((c) % 2u)]);               \
    f16vec2 hi_ = unpackFloat2x16((w)[(c) / 2u][2u * ((c) % 2u) + 1u]);          \
    F[4] = lo_.x; F[5] = lo_.y; F[6] = hi_.x; F[7] = hi_.y;                      \
  }

void main() {
  uint sg = gl_SubgroupID;
  uint lane = gl_SubgroupInvocationID;
  uint g = lane / 4u;
  uint t = lane % 4u;
  int bk = int(gl_WorkGroupID.x);
  int b = bk / pc.hkv;
  int kvh = bk - b * pc.hkv;
  int rows = pc.groups * pc.lq;
  int r0 = int(gl_WorkGroupID.y) * RB;
  int split = int(gl_WorkGroupID.z);
  int kbeg = split * pc.kchunk;
  int kend = min(pc.lkv, kbeg + pc.kchunk);
  float scale = uintBitsToFloat(uint(pc.scale_bits));
  if (!fragment_layout_ok(lane)) {
    scale = uintBitsToFloat(0x7fc00000u);
  }

  // This lane's query row (A's row g) and what its mask needs; indices stay in range for
  // lanes past the rows, whose results are never read.
  int rr = r0 + int(g);
  bool row_ok = g < RB && rr < rows;
  int rc = min(rr, rows - 1);
  int qg = rc / pc.lq;
  int qi = rc - qg * pc.lq;
  int h = kvh * pc.groups + qg;

  FA qa[D / 16];
  {
    uvec4 qw[KQ];
    int at = pc.q_offset + b * pc.q_sb + h * pc.q_sh + qi * pc.q_si + int(t * (D / 4));
    [[unroll]] for (uint q = 0; q < KQ; ++q) {
      qw[q] = qv[uint(at + int(8u * q)) / 8u];
      if (!row_ok) {
        qw[q] = uvec4(0u);
      }
    }
    [[unroll]] for (uint c = 0; c < D / 16; ++c) {
      SET_LOW4(qa[c], qw, c)
      qa[c][4] = float16_t(0.0);
      qa[c][5] = float16_t(0.0);
      qa[c][6] = float16_t(0.0);
      qa[c][7] = float16_t(0.0);
    }
  }

  FC o[DV / 16];
  [[unroll]] for (uint f = 0; f < DV / 16; ++f) {
    o[f] = FC(0.0);
  }
  float m_run = NEG_INF;  // row g's running max (the row's four lanes agree)
  float l_run = 0.0f;     // this lane's part of row g's running sum
  int kbase = pc.k_offset + b * pc.k_sb + kvh * pc.k_sh;
  int vbase = pc.v_offset + b * pc.v_sb + kvh * pc.v_sh;
  int nblk = (kend - kbeg + 15) / 16;
  int blk = int(sg);
  KVRegs next;
  if (blk < nblk) {
    load_block(next, kbase, vbase, kbeg + 16 * blk, g, t);
  }
  for (; blk < nblk; blk += NSG) {
    int j0 = kbeg + 16 * blk;
    KVRegs R = next;
    if (blk + NSG < nblk) {
      load_block(next, kbase, vbase, j0 + 16 * NSG, g, t);  // in flight during this block
    }

    FC s = FC(0.0);
    [[unroll]] for (uint c = 0; c < D / 16; ++c) {
      FB kb;
      SET_LOW4(kb, R.k[0], c)
      SET_HIGH4(kb, R.k[1], c)
      s = coopMatMulAddNV(qa[c], kb, s);
    }

    float sc[4];
    float mx = NEG_INF;
    [[unroll]] for (uint i = 0; i < 4; ++i) {
      int j = j0 + int(2u * t + i % 2u + 8u * (i / 2u));
      // Keys past the chunk weigh nothing (-inf); masked keys score as the mask says.
      float v = masked(s[i] * scale, b, h, qi, min(j, pc.lkv - 1));
      sc[i] = row_ok && j < kend ? v : NEG_INF;
      mx = max(mx, sc[i]);
    }
    mx = max(mx, subgroupShuffleXor(mx, 1u));
    mx = max(mx, subgroupShuffleXor(mx, 2u));
    float m_new = max(m_run, mx);
    // Only -inf so far (an additive mask): nothing to weigh yet, the state stays.
    bool none = m_new == NEG_INF;
    float cf = none ? 1.0f : exp(m_run - m_new);
    float p[4];
    [[unroll]] for (uint i = 0; i < 4; ++i) {
      p[i] = none ? 0.0f : exp(sc[i] - m_new);
    }
    l_run = l_run * cf + ((p[0] + p[1]) + (p[2] + p[3]));
    m_run = m_new;
    FA pa;
    {
      f16vec2 p01 = unpackFloat2x16(pack2(p[0], p[1]));
      f16vec2 p23 = unpackFloat2x16(pack2(p[2], p[3]));
      pa[0] = p01.x;
      pa[1] = p01.y;
      pa[2] = p23.x;
      pa[3] = p23.y;
      pa[4] = float16_t(0.0);
      pa[5] = float16_t(0.0);
      pa[6] = float16_t(0.0);
      pa[7] = float16_t(0.0);
    }
    // V rows past the chunk are zeroed, so that 0 * inf or NaN cannot reach the output.
    if (j0 + 16 > kend) {
      [[unroll]] for (uint r = 0; r < 4; ++r) {
        if (j0 + int(2u * t + r % 2u + 8u * (r / 2u)) >= kend) {
          [[unroll]] for (uint q = 0; q < VQ; ++q) {
            R.v[r][q] = uvec4(0u);
          }
        }
      }
    }
    [[unroll]] for (uint f = 0; f < DV / 16; ++f) {
      FB vb;
      [[unroll]] for (uint i = 0; i < 8; ++i) {
        f16vec2 w = unpackFloat2x16(R.v[i % 4u][f / 4u][f % 4u]);
        vb[i] = i < 4u ? w.x : w.y;
      }
      [[unroll]] for (uint i = 0; i < 4; ++i) {
        o[f][i] *= cf;
      }
      o[f] = coopMatMulAddNV(pa, vb, o[f]);
    }
  }

  // The subgroups' states through shared memory (output columns back in dv order), then
  // one combine per (row, dv), as the vector mode's teams.
  l_run += subgroupShuffleXor(l_run, 1u);
  l_run += subgroupShuffleXor(l_run, 2u);
  if (g < RB) {
    uint at = sg * RB + g;
    if (t == 0u) {
      comb_m[at] = m_run;
      comb_l[at] = l_run;
    }
    [[unroll]] for (uint f = 0; f < DV / 16; ++f) {
      [[unroll]] for (uint i = 0; i < 4; ++i) {
        uint col = (2u * t + i % 2u) * (DV / 8) + 2u * f + (i / 2u) % 2u;
        comb_o[at * DV + col] = o[f][i];
      }
    }
  }
  barrier();
  for (uint e = gl_LocalInvocationID.x; e < RB * DV; e += gl_WorkGroupSize.x) {
    uint r = e / DV;
    uint d = e - r * DV;
    int orr = r0 + int(r);
    if (orr >= rows) {
      continue;
    }
    int og = orr / pc.lq;
    int oi = orr - og * pc.lq;
    int oh = kvh * pc.groups + og;
    int row = (b * pc.hkv * pc.groups + oh) * pc.lq + oi;
    float m = NEG_INF;
    [[unroll]] for (uint q = 0; q < NSG; ++q) {
      m = max(m, comb_m[q * RB + r]);
    }
    float l = 0.0f;
    float ov = 0.0f;
    if (m != NEG_INF) {
      [[unroll]] for (uint q = 0; q < NSG; ++q) {
        float w = exp(comb_m[q * RB + r] - m);
        l += comb_l[q * RB + r] * w;
        ov += comb_o[(q * RB + r) * DV + d] * w;
      }
    }
#if SPLIT
    int at = pc.out_offset + (row * pc.splits + split) * (DV + 2);
    if (d == 0u) {
      outp[uint(at)] = m;
      outp[uint(at + 1)] = l;
    }
    outp[uint(at + 2 + int(d))] = ov;
#else
    outv[uint(pc.out_offset + row * DV + int(d))] = OUT_STORE(finish(ov, m, l, oh));
#endif
  }
}

#endif  // MLX_SDPA_VCOOP_GLSL
