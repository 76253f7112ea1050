#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_EXT_control_flow_attributes : require
// qmvc with x staged and k split ("qmvc" with split=1): 4-bit quantized products of 1 to 8
// rows, W's values as exact offset integers (qmv_coop.glsl's DQ_MAGIC) in 16 x 8 fragments
// built in registers (its DQ_FRAG with FRAG_N8), for NVIDIA's accumulator layout.
//
//   out[z, m, n] = sum_k x[z, m, k] * (scale[n, k / GS] * q[n, k] + bias[n, k / GS])
//
// qmv_coop.glsl gives a workgroup 16 columns and all of k, so every workgroup reads all of
// x again and forms its pairs and its sums (x's bytes from L2 were twice W's, and the sums'
// fragment products half of all: docs/matmul.md, "qmvc's loads at the top of the body").
// Here a workgroup owns SG x 16 columns (16 a subgroup) and one range of k: split y of
// gl_NumWorkGroups.y, pc.split_chunks chunks of 64 values. At its start it stages x's rows
// of the range in shared memory once, already in the fragments' pair order, with each
// chunk's row sums beside them; each subgroup then runs its chunks reading only W's words,
// scales and biases from memory (three register sets, loaded three chunks ahead as in
// qmv_coop.glsl), x's pairs and sums from the stage. The workgroup writes its f32 partial
// sums; the last of a column block's splits to finish (a counter, as sdpa.glsl's SPLIT 2)
// adds the splits' partials in split order and rounds once.
//
// The engine defines GS (a multiple of 64), COOP_BF16, XCH (the stage's chunks: the most a
// split takes), IN0_* and OUT_* (f16 or bf16), and the workgroup size (SG subgroups of 32
// lanes) as spec constant 0. codegen/qmv_coop.cpp (qmvc_split) picks it where W's rows
// start on 16 bytes and x's on 16 bytes. The KHR path is this module rewritten
// (codegen/coop_rewrite.h).
#ifndef GS
#define GS 64
#endif
#ifndef SG
#define SG 8
#endif
#ifndef XCH
#define XCH 32
#endif
#ifndef COOP_BF16
#define COOP_BF16 0
#endif
// Chunks loaded ahead (register sets of W's words, scales and biases).
#ifndef SETS
#define SETS 4
#endif
#ifndef IN0_ST
#define MLX_STORAGE_16BIT 1
#define IN0_ST uint16_t
#define IN0_LOAD(x) f16_bits_to_f32(uint(x))
#define OUT_ST uint16_t
#define OUT_CT float
#define OUT_STORE(v) uint16_t(f32_to_f16_bits(v))
#endif
#define XSPLIT 1

#include "include/operands.glsl"

#define KC 64  // values of k a chunk: 8 words of W a column, 4 fragment products
#define BITS 4

layout(local_size_x_id = 0) in;
#define WGS gl_WorkGroupSize.x

layout(std430, set = 0, binding = 0) readonly buffer X {
  uvec4 x4[];
};
layout(std430, set = 0, binding = 1) readonly buffer W {
  uvec2 wq2[];
};
layout(std430, set = 0, binding = 2) readonly buffer Scales {
  IN0_ST scales[];
};
layout(std430, set = 0, binding = 3) readonly buffer Biases {
  IN0_ST qbiases[];
};
layout(std430, set = 0, binding = 4) writeonly buffer Out {
  OUT_ST outv[];
};
// The splits' partial sums, [z][split][m][n] in f32 from element pc.part_offset; the last
// workgroup of a column block reads the others', so the buffer is coherent.
layout(std430, set = 0, binding = 5) coherent buffer Partials {
  float part[];
};
// One zero a column block and batch, which the block's last workgroup leaves at zero
// again (the runtime zeroes the buffer once: mlx/backend/vulkan/kernels.cpp).
layout(std430, set = 0, binding = 6) buffer Counters {
  uint ctr[];
};

#include "include/matmul_params.glsl"
// b_* are in words; extra0 / extra1: the scales' and biases' offsets.

// B's fragments give their row count as a specialization constant (always 16), so that
// their type differs from A's: the KHR path (codegen/coop_rewrite.h) needs one use per type.
layout(constant_id = 1) const uint COOP_K = 16;

#if COOP_BF16
#define MAGIC 0x43004300u
#define OFF 128.0f
#else
#define MAGIC 0x64006400u
#define OFF 1024.0f
#endif

// The stage: x's 8 rows of the range, a row XCH chunks of 8 uvec4s plus one uvec4 of
// padding (so that the 8 rows a fragment reads fall on different banks). Within a chunk
// the 32 words are in lane order: word 8 t + 2 s + j holds the pair (values s and s + 4 of
// x's 8 values at W's word 2 t + j), the pair lane (g, t) gives B at fragment step s.
#define XROW (XCH * 8 + 1)
shared uvec4 xs4[8 * XROW];
shared float xsum[XCH * 8];  // [chunk][row]: the sum of x's 64 values
shared float ridx[128];      // element i of a 16 x 8 matrix is i (layout check)
shared uvec4 probe16[32];    // element (r, c) of a 16 x 16 f16 (bf16) matrix is 16 r + c
shared bool last_split;

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

// A pair of x's values (two 16-bit halves of a word) in f32, for the sums.
vec2 pair_f32(uint p) {
#if COOP_BF16
  return vec2(uintBitsToFloat(p << 16), uintBitsToFloat(p & 0xFFFF0000u));
#else
  return unpackHalf2x16(p);
#endif
}

// Halves s and s + 4 of 16 bytes of x (values s and s + 4 of one W word's 8), as one word.
uint x_pair(uvec4 v, uint s) {
  return pack32(u16vec2(unpack16(v[s / 2u])[s % 2u], unpack16(v[s / 2u + 2u])[s % 2u]));
}

// Values s and s + 4 of a word as the f16 pair OFF + q (qmv_coop.glsl's DQ_MAGIC).
#define W_PAIR(word, s) unpackFloat2x16((((word) >> (4u * (s))) & 0x000F000Fu) | magic)

// One chunk's loads from memory: the words of this lane's two W columns (g and g + 8: the
// A fragment's rows) and their scales and biases.
struct FragRegs {
  uvec2 wa;
  uvec2 wb;
  float s[2];
  float b[2];
};

void main() {
  uint sg = gl_SubgroupID;
  uint lane = gl_SubgroupInvocationID;
  uint lid = gl_LocalInvocationID.x;
  uint g = lane / 4u;
  uint t = lane % 4u;
  IDX_T z = IDX_T(gl_WorkGroupID.z);
  IDX_T outer = z / pc.nb1;
  IDX_T inner = z - outer * pc.nb1;
  IDX_T a_base = pc.a_offset + outer * pc.a_bs0 + inner * pc.a_bs1;
  IDX_T w_batch = outer * pc.b_bs0 + inner * pc.b_bs1;
  IDX_T block0 = IDX_T(gl_WorkGroupID.x) * (SG * 16);
  IDX_T col0 = block0 + IDX_T(sg * 16u);
  IDX_T groups_per_row = pc.k / GS;
  IDX_T splits = IDX_T(gl_NumWorkGroups.y);
  IDX_T split = IDX_T(gl_WorkGroupID.y);
  // This split's chunks: c0 .. c0 + nch - 1 of the row's k / 64.
  IDX_T c0 = split * pc.split_chunks;
  IDX_T nch = min(pc.split_chunks, pc.k / KC - c0);
  IDX_T clast = nch - 1;

  // Columns past N repeat the last one (reads stay in bounds; their outputs are never
  // stored).
  IDX_T na = min(col0 + IDX_T(g), pc.n - 1);
  IDX_T nb = min(col0 + IDX_T(g + 8u), pc.n - 1);
  IDX_T wa = (pc.b_offset + w_batch + na * pc.ldb) / 2 + IDX_T(t) + c0 * (KC / 16);  // uvec2s
  IDX_T wb = (pc.b_offset + w_batch + nb * pc.ldb) / 2 + IDX_T(t) + c0 * (KC / 16);
  IDX_T sa = w_batch * 32 / BITS / GS + na * groups_per_row + c0 * KC / GS;
  IDX_T sb = w_batch * 32 / BITS / GS + nb * groups_per_row + c0 * KC / GS;
  // MAGIC where the compiler cannot fold it (k < 2^31), so that the mask and the OR are one
  // three-input logic operation.
  uint magic = MAGIC | (uint(pc.k) >> 31);

#define LOAD_FRAG(R, c)                                                \
  {                                                                    \
    IDX_T cc = IDX_T(c);                                               \
    R.wa = wq2[uint(wa + cc * (KC / 16))];                             \
    R.wb = wq2[uint(wb + cc * (KC / 16))];                             \
    IDX_T gi = cc * KC / GS;                                           \
    R.s[0] = float(IN0_LOAD(scales[uint(pc.extra0 + sa + gi)]));       \
    R.s[1] = float(IN0_LOAD(scales[uint(pc.extra0 + sb + gi)]));       \
    R.b[0] = float(IN0_LOAD(qbiases[uint(pc.extra1 + sa + gi)]));      \
    R.b[1] = float(IN0_LOAD(qbiases[uint(pc.extra1 + sb + gi)]));      \
  }
  // The first SETS chunks' loads go out before x is staged, so that they arrive meanwhile.
  FragRegs r[SETS];
  [[unroll]] for (uint j = 0; j < SETS; ++j) {
    LOAD_FRAG(r[j], min(IDX_T(j), clast));
  }

  // The stage: item e = (row, chunk, t) pairs x's 16 values at W's words 2 t and 2 t + 1 of
  // the chunk into its 8 words, and sums them; the 4 lanes of a (row, chunk) are adjacent
  // and add their sums by shuffles. Rows past M repeat row M - 1 (their outputs are never
  // stored), chunks past this split's repeat its last (never read). All of a lane's loads
  // go out before the first is used (one round trip, where a loop waited for each).
#define STAGE_ITEMS ((32u * XCH + WGS - 1u) / WGS)
#define STAGE_BATCH 4u  // items whose loads are in flight at once (8 uvec4 registers)
  uint items = 32u * uint(pc.split_chunks);
  for (uint i0 = 0; i0 < STAGE_ITEMS; i0 += STAGE_BATCH) {
    uvec4 xv[STAGE_BATCH][2];
    [[unroll]] for (uint i = 0; i < STAGE_BATCH; ++i) {
      uint e = min(lid + WGS * (i0 + i), items - 1u);
      uint row = e / (4u * uint(pc.split_chunks));
      IDX_T c = min(IDX_T((e / 4u) % uint(pc.split_chunks)), clast);
      IDX_T xr = (a_base + min(IDX_T(row), pc.m - 1) * pc.lda) / 8 + (c0 + c) * (KC / 8) +
                 IDX_T(2u * t);
      xv[i][0] = x4[uint(xr)];
      xv[i][1] = x4[uint(xr + 1)];
    }
    [[unroll]] for (uint i = 0; i < STAGE_BATCH; ++i) {
      uint e = lid + WGS * (i0 + i);
      uint row = e / (4u * uint(pc.split_chunks));
      uint c = (e / 4u) % uint(pc.split_chunks);
      uint p[8];
      vec2 sum = vec2(0.0);
      [[unroll]] for (uint s = 0; s < 4u; ++s) {
        p[2u * s] = x_pair(xv[i][0], s);
        p[2u * s + 1u] = x_pair(xv[i][1], s);
        sum += pair_f32(p[2u * s]) + pair_f32(p[2u * s + 1u]);
      }
      float total = sum.x + sum.y;
      total += subgroupShuffleXor(total, 1u);
      total += subgroupShuffleXor(total, 2u);
      if (e < items) {
        uint at = row * XROW + c * 8u + 2u * t;
        xs4[at] = uvec4(p[0], p[1], p[2], p[3]);
        xs4[at + 1u] = uvec4(p[4], p[5], p[6], p[7]);
        if (t == 0u) {
          xsum[c * 8u + row] = total;
        }
      }
    }
  }
  // A check of the 16 x 8 fragments' layout the code below assumes (NVIDIA's 16 x 16 one
  // with B's column half: element i of lane (g, t) is (row g + 8 (i / 2), column 2 t + i % 2)
  // of the accumulator, (k 2 t + i % 2 + 8 (i / 2), column g) of B, and (row g + 8 (i / 4),
  // k 2 t + i % 2 + 8 ((i / 2) % 2)) of A); a driver that lays them out otherwise gets NaN
  // outputs.
  for (uint e = lid; e < 128u; e += WGS) {
    ridx[e] = float(e);
    probe16[e / 4u][e % 4u] = probe_bits(2u * e) | (probe_bits(2u * e + 1u) << 16);
  }
  barrier();
  bool layout_ok;
  {
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> pacc;
    fcoopmatNV<16, gl_ScopeSubgroup, COOP_K, 8> pb8;
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> pa;
    coopMatLoadNV(pacc, ridx, 0, 8, false);   // element (r, c) is 8 r + c
    coopMatLoadNV(pb8, probe16, 0, 2, true);  // B (k x n) stored [n][k]: element 16 n + k
    coopMatLoadNV(pa, probe16, 0, 2, false);  // element (r, k) is 16 r + k
    layout_ok = pacc.length() == 4 && pb8.length() == 4 && pa.length() == 8;
    for (int i = 0; i < pacc.length(); ++i) {
      uint r = g + 8u * (uint(i) / 2u);
      uint c = 2u * t + uint(i) % 2u;
      uint kk = 2u * t + uint(i) % 2u + 8u * (uint(i) / 2u);
      layout_ok = layout_ok && uint(pacc[i]) == 8u * r + c &&
                  element_bits(pb8[i]) == probe_bits(16u * g + kk);
    }
    for (int i = 0; i < pa.length(); ++i) {
      uint r = g + 8u * (uint(i) / 4u);
      uint kk = 2u * t + uint(i) % 2u + 8u * ((uint(i) / 2u) % 2u);
      layout_ok = layout_ok && element_bits(pa[i]) == probe_bits(16u * r + kk);
    }
    layout_ok = subgroupAll(layout_ok);
  }

  // W's 16 columns as A (lane (g, t): columns g and g + 8) times x's 8 rows as B (lane
  // (g, t): row g), four steps a chunk; then, per accumulator element i (column g +
  // 8 (i / 2), row 2 t + i % 2), s * cw + (b - OFF * s) * (the row's sum) in f32.
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> acc = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);
  uint xat = g * XROW + 2u * t;
#define MULT_FRAG(R, c)                                                              \
  {                                                                                  \
    uvec4 xa = xs4[xat + uint(c) * 8u];                                              \
    uvec4 xb = xs4[xat + uint(c) * 8u + 1u];                                         \
    vec2 rs = vec2(xsum[uint(c) * 8u + 2u * t], xsum[uint(c) * 8u + 2u * t + 1u]);   \
    uint xw[8] = uint[8](xa.x, xa.y, xa.z, xa.w, xb.x, xb.y, xb.z, xb.w);            \
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> cw = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0); \
    [[unroll]] for (uint ks = 0; ks < 4u; ++ks) {                                    \
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa;                                   \
      fcoopmatNV<16, gl_ScopeSubgroup, COOP_K, 8> fb;                                \
      f16vec2 a0 = W_PAIR(R.wa.x, ks);                                               \
      f16vec2 a1 = W_PAIR(R.wa.y, ks);                                               \
      f16vec2 b0 = W_PAIR(R.wb.x, ks);                                               \
      f16vec2 b1 = W_PAIR(R.wb.y, ks);                                               \
      fa[0] = a0.x; fa[1] = a0.y; fa[2] = a1.x; fa[3] = a1.y;                        \
      fa[4] = b0.x; fa[5] = b0.y; fa[6] = b1.x; fa[7] = b1.y;                        \
      f16vec2 x0 = unpackFloat2x16(xw[2u * ks]);                                     \
      f16vec2 x1 = unpackFloat2x16(xw[2u * ks + 1u]);                                \
      fb[0] = x0.x; fb[1] = x0.y; fb[2] = x1.x; fb[3] = x1.y;                        \
      cw = coopMatMulAddNV(fa, fb, cw);                                              \
    }                                                                                \
    [[unroll]] for (uint i = 0; i < 4u; ++i) {                                       \
      float s_ = R.s[i / 2u];                                                        \
      acc[i] = fma(s_, cw[i], fma(fma(-OFF, s_, R.b[i / 2u]), rs[i % 2u], acc[i]));  \
    }                                                                                \
  }
#ifdef FIXED_CHUNKS
  // A split's chunks known at compile time: the loop unrolled whole, so no register set is
  // carried around a loop (NVIDIA's compiler copied a set's fresh loads into the loop's
  // registers at the end of the body, which waited for them there: one memory round trip
  // an iteration).
  [[unroll]] for (uint j = 0; j < FIXED_CHUNKS; ++j) {
    MULT_FRAG(r[j % SETS], IDX_T(j));
    if (j + SETS < FIXED_CHUNKS) {
      LOAD_FRAG(r[j % SETS], min(IDX_T(j + SETS), clast));
    }
  }
#else
  // SETS whole chunks an iteration with no exit between them, the rest after the loop
  // (qmv_coop.glsl's CHUNK_LOOP: a set's loads then go out at the top of the body).
  IDX_T c = 0;
  for (; c + (SETS - 1) < nch; c += SETS) {
    [[unroll]] for (uint j = 0; j < SETS; ++j) {
      MULT_FRAG(r[j], c + IDX_T(j));
      LOAD_FRAG(r[j], min(c + IDX_T(j + SETS), clast));
    }
  }
  [[unroll]] for (uint j = 0; j + 1 < SETS; ++j) {
    if (c + IDX_T(j) < nch) {
      MULT_FRAG(r[j], c + IDX_T(j));
    }
  }
#endif

  // This split's partial sums, then the count: the last of the column block's splits adds
  // them in split order and rounds once.
  IDX_T part_base = pc.part_offset + (z * splits + split) * pc.m * pc.n;
  [[unroll]] for (uint i = 0; i < 4u; ++i) {
    IDX_T n = col0 + IDX_T(g + 8u * (i / 2u));
    IDX_T row = IDX_T(2u * t + i % 2u);
    if (row < pc.m && n < pc.n) {
      part[uint(part_base + row * pc.n + n)] = layout_ok ? acc[i] : uintBitsToFloat(0x7fc00000u);
    }
  }
  memoryBarrierBuffer();
  barrier();
  if (lid == 0u) {
    uint slot = uint(z) * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    last_split = atomicAdd(ctr[slot], 1u) == uint(splits - 1);
    if (last_split) {
      atomicExchange(ctr[slot], 0u);
    }
  }
  barrier();
  if (!last_split) {
    return;
  }
  memoryBarrierBuffer();
  IDX_T out_base = pc.out_offset + z * pc.m * pc.n;
  IDX_T z_parts = pc.part_offset + z * splits * pc.m * pc.n;
  for (uint e = lid; e < 8u * SG * 16u; e += WGS) {
    IDX_T row = IDX_T(e / (SG * 16u));
    IDX_T n = block0 + IDX_T(e % (SG * 16u));
    if (row < pc.m && n < pc.n) {
      float v = 0.0f;
      for (IDX_T s = 0; s < splits; ++s) {
        v += part[uint(z_parts + (s * pc.m + row) * pc.n + n)];
      }
      outv[uint(out_base + row * pc.n + n)] = OUT_STORE(v);
    }
  }
}
