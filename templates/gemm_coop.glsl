#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
// The f16 GEMM on cooperative matrices (VK_NV_cooperative_matrix): the "gemm" family with
// mma=coopnv, the same operands, push constants and epilogue as gemm.glsl (read it first).
// A workgroup of 2 x 2 subgroups owns a BM x BN = 64 x 64 output tile; each subgroup a
// 32 x 32 quarter as 2 x 2 accumulators of 16 x 16 f32. BK = 32 steps of k pass through
// shared memory as f16 (A as m x k, B as k x n, whatever their layout in memory, so every
// fragment load is row-major); each step is 2 x 2 x 2 16x16x16 multiply-adds per subgroup.
// The accumulators go through shared memory to the epilogue, which rounds once and checks
// bounds, so any M, N and K work. Not yet run on a device: opt-in (MLX_VK_COOPMAT=on),
// docs/matmul.md.
//
// The engine defines A_T, B_T, ADDMM, IN0_* and OUT_* (f16), and the workgroup size
// (4 subgroups) as spec constant 0.
#ifndef A_T
#define A_T 0
#endif
#ifndef B_T
#define B_T 0
#endif
#ifndef ADDMM
#define ADDMM 0
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

#define BM 64
#define BN 64
#define BK 32
#define PAD 8  // f16 elements after each shared row (keeps 16-byte row alignment)
#define LDA (BK + PAD)
#define LDB (BN + PAD)

layout(local_size_x_id = 0) in;
#define WGS gl_WorkGroupSize.x

layout(std430, set = 0, binding = 0) readonly buffer A {
  IN0_ST a[];
};
layout(std430, set = 0, binding = 1) readonly buffer B {
  IN0_ST b[];
};
#if ADDMM
layout(std430, set = 0, binding = 2) buffer Out {
  OUT_ST outv[];
};
#else
layout(std430, set = 0, binding = 2) writeonly buffer Out {
  OUT_ST outv[];
};
#endif

#include "include/matmul_params.glsl"
// extra0 / extra1: alpha and beta as f32 bits.

shared float16_t as[BM * LDA];
shared float16_t bs[BK * LDB];
shared float cs[BM * BN];

float16_t load_a(IDX_T a_base, IDX_T m, IDX_T k) {
  if (m >= pc.m || k >= pc.k) {
    return float16_t(0.0);
  }
#if A_T == 0
  IDX_T at = a_base + m * pc.lda + k;
#else
  IDX_T at = a_base + k * pc.lda + m;
#endif
  return uint16BitsToFloat16(uint16_t(a[uint(at)]));
}

float16_t load_b(IDX_T b_base, IDX_T k, IDX_T n) {
  if (n >= pc.n || k >= pc.k) {
    return float16_t(0.0);
  }
#if B_T == 0
  IDX_T at = b_base + k * pc.ldb + n;
#else
  IDX_T at = b_base + n * pc.ldb + k;
#endif
  return uint16BitsToFloat16(uint16_t(b[uint(at)]));
}

void main() {
  uint t = gl_LocalInvocationID.x;
  uint sg = gl_SubgroupID;
  uint sg_m = sg / 2u;
  uint sg_n = sg % 2u;
  IDX_T z = IDX_T(gl_WorkGroupID.z);
  IDX_T outer = z / pc.nb1;
  IDX_T inner = z - outer * pc.nb1;
  IDX_T a_base = pc.a_offset + outer * pc.a_bs0 + inner * pc.a_bs1;
  IDX_T b_base = pc.b_offset + outer * pc.b_bs0 + inner * pc.b_bs1;
  IDX_T row0 = IDX_T(gl_WorkGroupID.y) * BM;
  IDX_T col0 = IDX_T(gl_WorkGroupID.x) * BN;

  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[2][2];
  for (uint i = 0; i < 2; ++i) {
    for (uint j = 0; j < 2; ++j) {
      acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    }
  }

  for (IDX_T k0 = 0; k0 < pc.k; k0 += BK) {
    // Consecutive invocations take consecutive elements of the operand's contiguous dim.
    for (uint e = t; e < BM * BK; e += WGS) {
#if A_T == 0
      uint mm = e / BK, kk = e % BK;
#else
      uint mm = e % BM, kk = e / BM;
#endif
      as[mm * LDA + kk] = load_a(a_base, row0 + IDX_T(mm), k0 + IDX_T(kk));
    }
    for (uint e = t; e < BK * BN; e += WGS) {
#if B_T == 0
      uint kk = e / BN, nn = e % BN;
#else
      uint kk = e % BK, nn = e / BK;
#endif
      bs[kk * LDB + nn] = load_b(b_base, k0 + IDX_T(kk), col0 + IDX_T(nn));
    }
    barrier();
    for (uint kk = 0; kk < BK; kk += 16) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[2];
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fb[2];
      for (uint i = 0; i < 2; ++i) {
        coopMatLoadNV(fa[i], as, (sg_m * 32u + i * 16u) * LDA + kk, uint(LDA), false);
      }
      for (uint j = 0; j < 2; ++j) {
        coopMatLoadNV(fb[j], bs, kk * LDB + sg_n * 32u + j * 16u, uint(LDB), false);
      }
      for (uint i = 0; i < 2; ++i) {
        for (uint j = 0; j < 2; ++j) {
          acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
        }
      }
    }
    barrier();
  }

  for (uint i = 0; i < 2; ++i) {
    for (uint j = 0; j < 2; ++j) {
      coopMatStoreNV(acc[i][j], cs, (sg_m * 32u + i * 16u) * BN + sg_n * 32u + j * 16u, uint(BN),
                     false);
    }
  }
  barrier();

  float alpha = uintBitsToFloat(uint(pc.extra0));
#if ADDMM
  float beta = uintBitsToFloat(uint(pc.extra1));
#endif
  IDX_T out_base = pc.out_offset + z * pc.m * pc.n;
  for (uint e = t; e < BM * BN; e += WGS) {
    IDX_T row = row0 + IDX_T(e / BN);
    IDX_T col = col0 + IDX_T(e % BN);
    if (row < pc.m && col < pc.n) {
      IDX_T at = out_base + row * pc.n + col;
      float v = alpha * cs[e];
#if ADDMM
      v += beta * float(IN0_LOAD(outv[uint(at)]));
#endif
      outv[uint(at)] = OUT_STORE(v);
    }
  }
}
