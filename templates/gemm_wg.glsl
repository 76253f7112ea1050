#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_EXT_control_flow_attributes : require
// The f16 / bf16 GEMM on workgroup-scope cooperative matrices (VK_NV_cooperative_matrix2):
// the "gemm" family with a "wgkhr" tile, the push constants of gemm.glsl (read it first).
//
// A workgroup owns a BM x BN output tile as ONE matrix that all its invocations hold
// together, and multiplies BM x BK by BK x BN matrices loaded from shared-memory stages
// filled as gemm_coop.glsl fills its own. How the sums are spread over the subgroups and
// which multiply instructions run is the driver's choice: that is what this path buys over
// gemm_coop.glsl, where each subgroup's 16 x 16 fragments pin the instruction
// (docs/matmul.md). Loading the operands straight from global memory instead was 10x slower
// on an H200.
//
// glslang 12 knows only subgroup scope, so the module is written with GL_NV_cooperative_matrix
// types of the tile's sizes and rewritten to KHR types of workgroup scope after compilation
// (codegen/coop_rewrite.h, coop_workgroup). Every operation is in uniform control flow, as
// workgroup-scope matrices require.
//
// The planner (codegen/matmul.cpp) takes this kernel only where M >= BM, N >= BN, K is a
// multiple of BK, nothing is added (no addmm) and every row and offset is on 16 bytes; the
// last row or column of tiles is moved back to end at M or N, so no load or store leaves
// the matrices (overlapping tiles write the same values twice). The sums are scaled by
// alpha and rounded once to the output dtype as a matrix.
//
// The engine defines A_T, B_T, BM, BN, BK, IN0_* / OUT_* (f16; bf16 through the rewrite,
// COOP_BF16) and WG_SIZE, the device's workgroup size for workgroup-scope matrices.
#ifndef A_T
#define A_T 0
#endif
#ifndef B_T
#define B_T 1
#endif
#ifndef BM
#define BM 128
#define BN 128
#define BK 32
#endif
#ifndef WG_SIZE
#define WG_SIZE 256
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

// A literal workgroup size: with the spec-constant form (local_size_x_id) NVIDIA's driver
// 580 crashes (SIGFPE in its SPIR-V front end) building workgroup-scope matrices.
layout(local_size_x = WG_SIZE) in;
#define WGS WG_SIZE

// Operands and output as 16-byte vectors of 8 values: every offset and stride below is in
// vectors (the planner checked they divide by 8).
layout(std430, set = 0, binding = 0) readonly buffer A {
  uvec4 a4[];
};
layout(std430, set = 0, binding = 1) readonly buffer B {
  uvec4 b4[];
};
layout(std430, set = 0, binding = 2) writeonly buffer Out {
  uvec4 o4[];
};

#include "include/matmul_params.glsl"
// extra0: alpha as f32 bits.

// Each operand's stage as rows of its contiguous dim, in uvec4s (8 values) + 1 of padding.
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

shared uvec4 as4[2 * A_STAGE];
shared uvec4 bs4[2 * B_STAGE];

void main() {
  uint t = gl_LocalInvocationID.x;
  IDX_T z = IDX_T(gl_WorkGroupID.z);
  IDX_T outer = z / pc.nb1;
  IDX_T inner = z - outer * pc.nb1;
  IDX_T a_base = pc.a_offset + outer * pc.a_bs0 + inner * pc.a_bs1;
  IDX_T b_base = pc.b_offset + outer * pc.b_bs0 + inner * pc.b_bs1;
  IDX_T row0 = min(IDX_T(gl_WorkGroupID.y) * BM, pc.m - BM);
  IDX_T col0 = min(IDX_T(gl_WorkGroupID.x) * BN, pc.n - BN);

  // Chunk c of a stage is row c / (COLS / 8), 8 values at column 8 * (c % (COLS / 8)):
  // its element index at k = 0 and its uvec4 in a stage.
  IDX_T a_at[A_CHUNKS];
  uint a_sh[A_CHUNKS];
  [[unroll]] for (uint i = 0; i < A_CHUNKS; ++i) {
    uint c = t + i * WGS;
    uint r = c / (A_COLS / 8), q = c % (A_COLS / 8);
#if A_T == 0
    a_at[i] = a_base + (row0 + IDX_T(r)) * pc.lda + IDX_T(q * 8);
#else
    a_at[i] = a_base + IDX_T(r) * pc.lda + row0 + IDX_T(q * 8);
#endif
    a_sh[i] = r * A_LD + q;
  }
  IDX_T b_at[B_CHUNKS];
  uint b_sh[B_CHUNKS];
  [[unroll]] for (uint i = 0; i < B_CHUNKS; ++i) {
    uint c = t + i * WGS;
    uint r = c / (B_COLS / 8), q = c % (B_COLS / 8);
#if B_T == 0
    b_at[i] = b_base + IDX_T(r) * pc.ldb + col0 + IDX_T(q * 8);
#else
    b_at[i] = b_base + (col0 + IDX_T(r)) * pc.ldb + IDX_T(q * 8);
#endif
    b_sh[i] = r * B_LD + q;
  }
  // How far one k step moves each operand's chunks.
#if A_T == 0
  IDX_T a_kstep = BK;
#else
  IDX_T a_kstep = BK * pc.lda;
#endif
#if B_T == 0
  IDX_T b_kstep = BK * pc.ldb;
#else
  IDX_T b_kstep = BK;
#endif
  IDX_T nk = pc.k / BK;

#define LOAD_STEP(ra, rb, step)                                      \
  [[unroll]] for (uint i = 0; i < A_CHUNKS; ++i) {                   \
    ra[i] = a4[uint((a_at[i] + (step) * a_kstep) / 8)];              \
  }                                                                  \
  [[unroll]] for (uint i = 0; i < B_CHUNKS; ++i) {                   \
    rb[i] = b4[uint((b_at[i] + (step) * b_kstep) / 8)];              \
  }
#define STORE_STEP(ra, rb, stage)                                    \
  [[unroll]] for (uint i = 0; i < A_CHUNKS; ++i) {                   \
    as4[(stage) * A_STAGE + a_sh[i]] = ra[i];                        \
  }                                                                  \
  [[unroll]] for (uint i = 0; i < B_CHUNKS; ++i) {                   \
    bs4[(stage) * B_STAGE + b_sh[i]] = rb[i];                        \
  }

  fcoopmatNV<32, gl_ScopeSubgroup, BM, BN> acc = fcoopmatNV<32, gl_ScopeSubgroup, BM, BN>(0.0);
  // A stored m-major is read column-major (a_t), B stored k-major column-major (b_t).
#define MULTIPLY_STEP(stage)                                         \
  {                                                                  \
    fcoopmatNV<16, gl_ScopeSubgroup, BM, BK> fa;                     \
    fcoopmatNV<16, gl_ScopeSubgroup, BK, BN> fb;                     \
    coopMatLoadNV(fa, as4, (stage) * A_STAGE, A_LD, A_T == 1);       \
    coopMatLoadNV(fb, bs4, (stage) * B_STAGE, B_LD, B_T == 1);       \
    acc = coopMatMulAddNV(fa, fb, acc);                              \
  }

  // gemm_coop.glsl's pipeline: two register sets keep the global loads three steps ahead
  // of the multiply-adds, two stages, one barrier a step.
  uvec4 ra0[A_CHUNKS], rb0[B_CHUNKS], ra1[A_CHUNKS], rb1[B_CHUNKS];
  LOAD_STEP(ra0, rb0, IDX_T(0));
  STORE_STEP(ra0, rb0, 0u);
  if (nk > 1) {
    LOAD_STEP(ra0, rb0, IDX_T(1));
  }
  if (nk > 2) {
    LOAD_STEP(ra1, rb1, IDX_T(2));
  }
  barrier();
  IDX_T kt = 0;
  for (; kt + 1 < nk; kt += 2) {
    STORE_STEP(ra0, rb0, 1u);
    if (kt + 3 < nk) {
      LOAD_STEP(ra0, rb0, kt + 3);
    }
    MULTIPLY_STEP(0u);
    barrier();
    if (kt + 2 < nk) {
      STORE_STEP(ra1, rb1, 0u);
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

  float alpha = uintBitsToFloat(uint(pc.extra0));
  if (alpha != 1.0) {
    acc = acc * alpha;
  }
  fcoopmatNV<16, gl_ScopeSubgroup, BM, BN> result = fcoopmatNV<16, gl_ScopeSubgroup, BM, BN>(acc);
  IDX_T out_at = pc.out_offset + z * pc.m * pc.n + row0 * pc.n + col0;
  coopMatStoreNV(result, o4, uint(out_at / 8), uint(pc.n / 8), false);
}
