#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_EXT_control_flow_attributes : require
// The f16 GEMM and quantized GEMM on cooperative matrices (VK_NV_cooperative_matrix): the
// "gemm" and "qmm" families with a "coopnv" tile, the same push constants and epilogue
// rules as gemm.glsl (read it first).
//
// A workgroup owns a BM x BN output tile, each subgroup a WM x WN part of it as
// (WM / 16) x (WN / 16) accumulators of 16 x 16 f32. Steps of BK values of k pass through
// shared memory in two stages. The stages keep each operand's layout in memory (the
// contiguous dim stays contiguous, plus 16 bytes of padding per row so that the eight
// 16-byte rows a fragment load reads fall in different banks); a fragment of a transposed
// operand is loaded column-major instead of being transposed on the way in. Every loop over
// fragments and chunks is unrolled: left as loops, the driver kept the accumulators in
// local memory (35 against 143 TFLOPS on an H200, docs/matmul.md).
//
// The planner (codegen/matmul.cpp, coop_aligned) only picks this kernel when every row of
// A and B starts on 16 bytes and the contiguous extents are multiples of 8, so each
// invocation's chunk of 8 values is wholly inside or outside the matrix: EDGE checks rows
// and chunks, not elements. QUANT 1 reads B from MLX's packed format instead (gemm.glsl
// explains it), 8 values of one group per chunk: their words, scale and bias are loaded
// with the step's other loads and dequantized to f16 when the chunk is written to its
// stage. The accumulators leave through a 16 x 16 f32 staging area per subgroup (in A's
// stages) to the epilogue, which checks bounds, applies alpha / beta and rounds once.
//
// The engine defines A_T, B_T, ADDMM, EDGE, BM, BN, BK, WM, WN, QUANT (with BITS, GS),
// IN0_* and OUT_* (f16), and the workgroup size ((BM / WM) * (BN / WN) subgroups) as spec
// constant 0.
#ifndef A_T
#define A_T 0
#endif
#ifndef B_T
#define B_T 1
#endif
#ifndef ADDMM
#define ADDMM 0
#endif
#ifndef EDGE
#define EDGE 1
#endif
// EDGE_ROWS (with EDGE 0): only M is ragged, so only A's rows and the stores' rows are
// checked, not B's loads (H200, bf16 [448, 4096] x [4096, 4096]: 97.9 us with every check,
// 80.0 with these).
#ifndef EDGE_ROWS
#define EDGE_ROWS 0
#endif
#ifndef BM
#define BM 128
#define BN 128
#define BK 32
#define WM 64
#define WN 32
#endif
#ifndef QUANT
#define QUANT 0
#endif
// COOP_BF16: A and B are bf16 (only on the KHR path, whose rewrite makes the fragments bf16;
// the GLSL below still names them f16, as glslang 12 has no bf16 type).
#ifndef COOP_BF16
#define COOP_BF16 0
#endif
#if QUANT && !defined(BITS)
#define BITS 4
#define GS 64
#endif
#ifndef IN0_ST
#define MLX_STORAGE_16BIT 1
#define IN0_ST uint16_t
#define IN0_LOAD(x) f16_bits_to_f32(uint(x))
#define OUT_ST uint16_t
#define OUT_CT float
#define OUT_STORE(v) uint16_t(f32_to_f16_bits(v))
#endif

#include "include/operands.glsl"

layout(local_size_x_id = 0) in;
#define WGS gl_WorkGroupSize.x
#define SG_N (BN / WN)
#define FM (WM / 16)
#define FN (WN / 16)

// Each operand's stage as rows of its contiguous dim, in uvec4s (8 f16 values) + 1 of padding.
#if A_T == 0
#define A_ROWS BM
#define A_COLS BK
#else
#define A_ROWS BK
#define A_COLS BM
#endif
#if B_T == 0
#define B_ROWS BK
#define B_COLS BN
#else
#define B_ROWS BN
#define B_COLS BK
#endif
#define A_LD (A_COLS / 8 + 1)
#define B_LD (B_COLS / 8 + 1)
#define A_STAGE (A_ROWS * A_LD)
#define B_STAGE (B_ROWS * B_LD)
#define A_CHUNKS (A_ROWS * A_COLS / 8 / WGS)
#define B_CHUNKS (B_ROWS * B_COLS / 8 / WGS)

layout(std430, set = 0, binding = 0) readonly buffer A {
  uvec4 a4[];
};
#if QUANT
layout(std430, set = 0, binding = 1) readonly buffer W {
  uint wq[];
};
layout(std430, set = 0, binding = 2) readonly buffer Scales {
  IN0_ST scales[];
};
layout(std430, set = 0, binding = 3) readonly buffer Biases {
  IN0_ST qbiases[];
};
#define OUT_BINDING 4
#else
layout(std430, set = 0, binding = 1) readonly buffer B {
  uvec4 b4[];
};
#define OUT_BINDING 2
#endif
#if ADDMM
layout(std430, set = 0, binding = OUT_BINDING) buffer Out {
  OUT_ST outv[];
};
#else
layout(std430, set = 0, binding = OUT_BINDING) writeonly buffer Out {
  OUT_ST outv[];
};
// The same output as 8-byte quads of 16-bit values (f16 and bf16 are stored as uint16_t).
layout(std430, set = 0, binding = OUT_BINDING) writeonly buffer OutQ {
  uvec2 outq[];
};
#endif

#include "include/matmul_params.glsl"
// extra0 / extra1: alpha and beta as f32 bits; QUANT: the scales' and biases' offsets.

#if QUANT
// The 8 values of W's row `row` from column `col` (a multiple of 8, so they share one
// scale and bias and start on a byte) as loaded: the words holding them (BITS bytes of the
// row's little-endian bit stream, in at most two words) and the group's scale and bias,
// still as bits. Nothing here uses a loaded value, so the loads stay in flight while the
// multiply-adds of the steps before run; dequant_raw takes them when the chunk goes to its
// stage. Dequantizing at the load waited for every word there (docs/matmul.md).
uvec4 load_chunk_raw(IDX_T w_base, IDX_T s_base, IDX_T row, IDX_T col) {
  IDX_T bitpos = col * BITS;
  IDX_T word = w_base + row * pc.ldb + (bitpos >> 5);
  uvec4 raw = uvec4(wq[uint(word)], 0u, 0u, 0u);
#if BITS == 5 || BITS == 6 || BITS == 8
  raw.y = wq[uint(word + 1)];  // 40, 48 or 64 bits always reach the next word
#elif BITS == 3
  if ((bitpos & 31) + 24 > 32) {
    raw.y = wq[uint(word + 1)];
  }
#endif
  IDX_T g = s_base + row * (pc.ldb * 32 / BITS / GS) + col / GS;
  raw.z = uint(scales[uint(pc.extra0 + g)]);
  raw.w = uint(qbiases[uint(pc.extra1 + g)]);
  return raw;
}

// A loaded chunk (zeros for one outside the matrix, which give zeros) as 8 values
// scale * q + bias in f32, then f16 (or bf16) for the multiply-adds (a step coarser than
// gemm.glsl's f32 stage: tolerances in docs/matmul.md).
uvec4 dequant_raw(uvec4 raw, IDX_T col) {
#if BITS == 4 || BITS == 8
  const uint sh = 0u;  // 8 values of 4 or 8 bits from a multiple of 8 start on a word
#else
  uint sh = uint((col * BITS) & 31);
#endif
  uint lo = raw.x, hi = raw.y;
  float scale = float(IN0_LOAD(raw.z));
  float bias = float(IN0_LOAD(raw.w));
  const uint mask = (1u << BITS) - 1u;
  float v[8];
  [[unroll]] for (uint j = 0; j < 8u; ++j) {
    uint b = sh + j * BITS;
    uint q = b >= 32u ? hi >> (b - 32u) : (lo >> b) | (b + BITS > 32u ? hi << (32u - b) : 0u);
    v[j] = scale * float(q & mask) + bias;
  }
#if COOP_BF16
  // A finite scale and bias give no NaN (q >= 0): no NaN test then (types.glsl).
  if (finite_f32(scale) && finite_f32(bias)) {
    return pack_bf16x8_not_nan(v);
  }
  return uvec4(pack_bf16x2(v[0], v[1]), pack_bf16x2(v[2], v[3]), pack_bf16x2(v[4], v[5]),
               pack_bf16x2(v[6], v[7]));
#else
  return uvec4(packHalf2x16(vec2(v[0], v[1])), packHalf2x16(vec2(v[2], v[3])),
               packHalf2x16(vec2(v[4], v[5])), packHalf2x16(vec2(v[6], v[7])));
#endif
}
#endif

// B's fragments give their row count as a specialization constant (always 16), so that
// their type differs from A's: the KHR path (codegen/coop_rewrite.h) needs one use per type.
layout(constant_id = 1) const uint COOP_K = 16;

shared uvec4 as4[2 * A_STAGE];
shared uvec4 bs4[2 * B_STAGE];

// One of this invocation's chunks of an operand: where it is at k = 0 and where it goes in
// a stage. row and col are in the operand's stored layout (for a quantized B, W's rows and
// columns), counted from k = 0 along k.
struct Chunks {
  IDX_T at;        // element index of the chunk's first value (not used for a quantized B)
  IDX_T row;       // along the stage's rows
  IDX_T col;       // first column, along the stage's contiguous dim
  uint shared_at;  // uvec4 index within a stage
};

void main() {
  uint t = gl_LocalInvocationID.x;
  uint sg = gl_SubgroupID;
  uint sg_m = sg / SG_N;
  uint sg_n = sg % SG_N;
  IDX_T z = IDX_T(gl_WorkGroupID.z);
  IDX_T outer = z / pc.nb1;
  IDX_T inner = z - outer * pc.nb1;
  IDX_T a_base = pc.a_offset + outer * pc.a_bs0 + inner * pc.a_bs1;
  IDX_T b_base = pc.b_offset + outer * pc.b_bs0 + inner * pc.b_bs1;
#if QUANT
  // Scales and biases are dense: one per GS values of each packed row.
  IDX_T s_base = (outer * pc.b_bs0 + inner * pc.b_bs1) * 32 / BITS / GS;
#endif
  IDX_T row0 = IDX_T(gl_WorkGroupID.y) * BM;
  IDX_T col0 = IDX_T(gl_WorkGroupID.x) * BN;

  // Chunk c of a stage is row c / (COLS / 8), 8 values at column 8 * (c % (COLS / 8)).
  Chunks ca[A_CHUNKS];
  [[unroll]] for (uint i = 0; i < A_CHUNKS; ++i) {
    uint c = t + i * WGS;
    uint r = c / (A_COLS / 8), q = c % (A_COLS / 8);
#if A_T == 0
    ca[i].row = row0 + IDX_T(r);  // m
    ca[i].col = IDX_T(q * 8);     // k, from k0
#else
    ca[i].row = IDX_T(r);             // k, from k0
    ca[i].col = row0 + IDX_T(q * 8);  // m
#endif
    ca[i].at = a_base + ca[i].row * pc.lda + ca[i].col;
    ca[i].shared_at = r * A_LD + q;
  }
  Chunks cb[B_CHUNKS];
  [[unroll]] for (uint i = 0; i < B_CHUNKS; ++i) {
    uint c = t + i * WGS;
    uint r = c / (B_COLS / 8), q = c % (B_COLS / 8);
#if B_T == 0
    cb[i].row = IDX_T(r);             // k, from k0
    cb[i].col = col0 + IDX_T(q * 8);  // n
#else
    cb[i].row = col0 + IDX_T(r);  // n
    cb[i].col = IDX_T(q * 8);     // k, from k0
#endif
    cb[i].at = b_base + cb[i].row * pc.ldb + cb[i].col;
    cb[i].shared_at = r * B_LD + q;
  }
  // Index steps per k: along the contiguous dim (1) or the rows (the leading stride).
#if A_T == 0
  IDX_T a_kstep = 1;
#else
  IDX_T a_kstep = pc.lda;
#endif
#if B_T == 0
  IDX_T b_kstep = pc.ldb;
#else
  IDX_T b_kstep = 1;
#endif

  IDX_T nk = (pc.k + BK - 1) / BK;

  // Global loads of one k step into a register set; out-of-range chunks read as zeros.
#if EDGE
#if A_T == 0
#define A_IN(i, k0) (ca[i].row < pc.m && ca[i].col + k0 < pc.k)
#else
#define A_IN(i, k0) (ca[i].row + k0 < pc.k && ca[i].col < pc.m)
#endif
#if B_T == 0
#define B_IN(i, k0) (cb[i].row + k0 < pc.k && cb[i].col < pc.n)
#else
#define B_IN(i, k0) (cb[i].row < pc.n && cb[i].col + k0 < pc.k)
#endif
#elif EDGE_ROWS
#if A_T == 0
#define A_IN(i, k0) (ca[i].row < pc.m)
#else
#define A_IN(i, k0) (ca[i].col < pc.m)
#endif
#define B_IN(i, k0) true
#else
#define A_IN(i, k0) true
#define B_IN(i, k0) true
#endif
// B_CHUNK loads a chunk of B (raw, for a quantized B); B_STAGED(i, k0, r) is what goes
// to the stage.
#if QUANT && B_T == 0
#define B_CHUNK(i, k0) load_chunk_raw(b_base, s_base, cb[i].row + k0, cb[i].col)
#define B_STAGED(i, k0, r) dequant_raw(r, cb[i].col)
#elif QUANT
#define B_CHUNK(i, k0) load_chunk_raw(b_base, s_base, cb[i].row, cb[i].col + k0)
#define B_STAGED(i, k0, r) dequant_raw(r, cb[i].col + k0)
#else
#define B_CHUNK(i, k0) b4[uint((cb[i].at + k0 * b_kstep) / 8)]
#define B_STAGED(i, k0, r) (r)
#endif
#define LOAD_STEP(ra, rb, step)                                                    \
  {                                                                                \
    IDX_T k0 = (step) * BK;                                                        \
    [[unroll]] for (uint i = 0; i < A_CHUNKS; ++i) {                               \
      ra[i] = A_IN(i, k0) ? a4[uint((ca[i].at + k0 * a_kstep) / 8)] : uvec4(0);    \
    }                                                                              \
    [[unroll]] for (uint i = 0; i < B_CHUNKS; ++i) {                               \
      rb[i] = B_IN(i, k0) ? B_CHUNK(i, k0) : uvec4(0);                             \
    }                                                                              \
  }
#define STORE_STEP(ra, rb, stage, step)                                            \
  [[unroll]] for (uint i = 0; i < A_CHUNKS; ++i) {                                 \
    as4[(stage) * A_STAGE + ca[i].shared_at] = ra[i];                              \
  }                                                                                \
  [[unroll]] for (uint i = 0; i < B_CHUNKS; ++i) {                                 \
    bs4[(stage) * B_STAGE + cb[i].shared_at] = B_STAGED(i, (step) * BK, rb[i]);    \
  }

  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[FM][FN];
  [[unroll]] for (uint i = 0; i < FM; ++i) {
    [[unroll]] for (uint j = 0; j < FN; ++j) {
      acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    }
  }

  // The multiply-adds of one k step from a stage.
#if A_T == 0
#define LOAD_A(f, at, m_off, kk) coopMatLoadNV(f, as4, (at) + (m_off) * A_LD + (kk) / 8u, A_LD, false)
#else
#define LOAD_A(f, at, m_off, kk) coopMatLoadNV(f, as4, (at) + (kk) * A_LD + (m_off) / 8u, A_LD, true)
#endif
#if B_T == 0
#define LOAD_B(f, at, n_off, kk) coopMatLoadNV(f, bs4, (at) + (kk) * B_LD + (n_off) / 8u, B_LD, false)
#else
#define LOAD_B(f, at, n_off, kk) coopMatLoadNV(f, bs4, (at) + (n_off) * B_LD + (kk) / 8u, B_LD, true)
#endif
#define MULTIPLY_STEP(stage)                                                       \
  [[unroll]] for (uint kk = 0; kk < BK; kk += 16) {                                \
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[FM];                               \
    fcoopmatNV<16, gl_ScopeSubgroup, COOP_K, 16> fb[FN];                           \
    [[unroll]] for (uint i = 0; i < FM; ++i) {                                     \
      LOAD_A(fa[i], (stage) * A_STAGE, sg_m * WM + i * 16u, kk);                   \
    }                                                                              \
    [[unroll]] for (uint j = 0; j < FN; ++j) {                                     \
      LOAD_B(fb[j], (stage) * B_STAGE, sg_n * WN + j * 16u, kk);                   \
    }                                                                              \
    [[unroll]] for (uint i = 0; i < FM; ++i) {                                     \
      [[unroll]] for (uint j = 0; j < FN; ++j) {                                   \
        acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);                      \
      }                                                                            \
    }                                                                              \
  }

  // Two register sets keep global loads three steps ahead: step s writes the set holding
  // step s + 1 to the free stage, reloads that set with step s + 3, then multiplies, so
  // each load has two steps of multiply-adds to arrive in. The loop takes two whole steps
  // and an odd last step runs after it: with an exit between the two (the form before),
  // the first set's loads were dead on that exit and the compiler moved them past it
  // (H200: f16 4096^3 235 -> 243 TFLOPS without it; docs/matmul.md).
  uvec4 ra0[A_CHUNKS], rb0[B_CHUNKS], ra1[A_CHUNKS], rb1[B_CHUNKS];
  LOAD_STEP(ra0, rb0, IDX_T(0));
  STORE_STEP(ra0, rb0, 0u, IDX_T(0));
  if (nk > 1) {
    LOAD_STEP(ra0, rb0, IDX_T(1));
  }
  if (nk > 2) {
    LOAD_STEP(ra1, rb1, IDX_T(2));
  }
  barrier();
  IDX_T kt = 0;
  for (; kt + 1 < nk; kt += 2) {
    STORE_STEP(ra0, rb0, 1u, kt + 1);
    if (kt + 3 < nk) {
      LOAD_STEP(ra0, rb0, kt + 3);
    }
    MULTIPLY_STEP(0u);
    barrier();
    if (kt + 2 < nk) {
      STORE_STEP(ra1, rb1, 0u, kt + 2);
    }
    if (kt + 4 < nk) {
      LOAD_STEP(ra1, rb1, kt + 4);
    }
    MULTIPLY_STEP(1u);
    barrier();
  }
  if (kt < nk) {
    MULTIPLY_STEP(0u);
    barrier();
  }

  // Epilogue: each 16 x 16 accumulator through this subgroup's staging area (64 uvec4s of
  // the first stage, free after the last barrier), then bounds, alpha / beta, one rounding.
  // Without beta, and where N and the output's offset are multiples of 4, a lane takes 4
  // adjacent columns: one 16-byte read of the staging and one 8-byte store instead of four
  // of each (H100: f16 M=64 x [4096,4096]^T 37.5 -> 53.8 TFLOPS, 4096^3 +3-4%, Qwen3-0.6B's
  // 4096-token prefill 50.0-50.7 -> 48.1-48.6 ms of GPU time).
#if QUANT
  const float alpha = 1.0;
#else
  float alpha = uintBitsToFloat(uint(pc.extra0));
#endif
#if ADDMM
  float beta = uintBitsToFloat(uint(pc.extra1));
#endif
  IDX_T out_base = pc.out_offset + z * pc.m * pc.n;
  uint stage_at = sg * 64u;
  uint lane = gl_SubgroupInvocationID;
#if !ADDMM
  const bool quads = (pc.n & 3) == 0 && (out_base & 3) == 0;
#endif
  [[unroll]] for (uint i = 0; i < FM; ++i) {
    [[unroll]] for (uint j = 0; j < FN; ++j) {
      coopMatStoreNV(acc[i][j], as4, stage_at, 4u, false);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      IDX_T tile_row = row0 + IDX_T(sg_m * WM + i * 16u);
      IDX_T tile_col = col0 + IDX_T(sg_n * WN + j * 16u);
#if !ADDMM
      if (quads) {
        // Quad e: row e / 4, columns 4 (e % 4) .. + 3 (a quad is wholly inside N or past it).
        for (uint e = lane; e < 64u; e += gl_SubgroupSize) {
          IDX_T row = tile_row + IDX_T(e / 4u);
          IDX_T col = tile_col + IDX_T(4u * (e % 4u));
#if EDGE || EDGE_ROWS
          if (row >= pc.m || col >= pc.n) {
            continue;
          }
#endif
          vec4 q = alpha * uintBitsToFloat(as4[stage_at + e]);
          IDX_T at = out_base + row * pc.n + col;
          outq[uint(at / 4)] = uvec2(uint(OUT_STORE(q.x)) | (uint(OUT_STORE(q.y)) << 16),
                                     uint(OUT_STORE(q.z)) | (uint(OUT_STORE(q.w)) << 16));
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        continue;
      }
#endif
      for (uint e = lane; e < 256u; e += gl_SubgroupSize) {
        IDX_T row = tile_row + IDX_T(e / 16u);
        IDX_T col = tile_col + IDX_T(e % 16u);
#if EDGE || EDGE_ROWS
        if (row >= pc.m || col >= pc.n) {
          continue;
        }
#endif
        IDX_T at = out_base + row * pc.n + col;
        float v = alpha * uintBitsToFloat(as4[stage_at + e / 4u][e % 4u]);
#if ADDMM
        v += beta * float(IN0_LOAD(outv[uint(at)]));
#endif
        outv[uint(at)] = OUT_STORE(v);
      }
      subgroupMemoryBarrierShared();
      subgroupBarrier();
    }
  }
}
