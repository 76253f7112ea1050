#version 450
#extension GL_GOOGLE_include_directive : require
// Tiled matrix product, one output tile of BM x BN per workgroup:
//   out[b] = alpha * A[b] x B[b]            (ADDMM 0: alpha is 1)
//   out[b] = alpha * A[b] x B[b] + beta * out[b]   (ADDMM 1: out already holds C)
// A is M x K and B is K x N, each read through its strides with one dimension contiguous:
// A_T 0 reads A[m, k] at m * lda + k, A_T 1 at k * lda + m; B_T 0 reads B[k, n] at
// k * ldb + n, B_T 1 at n * ldb + k (a Linear layer's weight, [N, K] row-major). The output
// is row-contiguous, batch after batch.
//
// Each invocation owns TM x TN outputs, strided by BM / TM rows and BN / TN columns so
// that a subgroup reads consecutive shared-memory words (no bank conflicts) and stores
// consecutive columns (coalesced). Tiles of A and B go through shared memory as f32, BK
// steps of K at a time; the next tile's global loads are issued before the current tile
// is multiplied, so their latency hides behind the arithmetic. Products accumulate in f32
// whatever the dtype and are rounded once on store (as the CPU reference rounds once).
//
// QUANT 1 (the "qmm" family: quantized_matmul past 8 rows) reads B from MLX's affine
// quantized format instead: W holds BITS-bit values packed little-endian into uint32
// words, ldb words per row, with one scale and one bias per GS values of a row (their
// offsets take the alpha and beta fields). B_T 1 (transpose=true, the usual Linear
// layout) is B[k, n] = W[n, k]; B_T 0 is B[k, n] = W[k, n]. Each element is dequantized
// as it enters shared memory, so the inner loop is the plain GEMM's.
//
// The engine defines BM, BN, BK, TM, TN (tile; codegen/matmul.cpp keeps BM * BK and
// BN * BK multiples of the workgroup), A_T, B_T, EDGE (0 when M, N and K are multiples of
// the tile: no bounds checks), ADDMM, QUANT (with BITS and GS), IN0_* (A and B, or A and
// the scales and biases, share the dtype) and OUT_*.
#ifndef BM
#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4
#endif
#ifndef A_T
#define A_T 0
#endif
#ifndef B_T
#define B_T 0
#endif
#ifndef EDGE
#define EDGE 1
#endif
#ifndef ADDMM
#define ADDMM 0
#endif
#ifndef QUANT
#define QUANT 0
#endif
#if QUANT && !defined(BITS)
#define BITS 4
#define GS 64
#endif

#include "include/operands.glsl"

#define WG_M (BM / TM)
#define WG_N (BN / TN)
#define WG (WG_M * WG_N)
#define A_PER (BM * BK / WG)
#define B_PER (BN * BK / WG)

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer A {
  IN0_ST a[];
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
  IN0_ST b[];
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
#endif

#include "include/matmul_params.glsl"
// extra0 / extra1: alpha and beta as f32 bits; QUANT: the scales' and biases' offsets.

#if QUANT
// Element (r, c) of the quantized matrix whose row r starts at word w_row and whose
// scales and biases start s_row after their offsets: value c sits at bits [c * BITS, (c + 1) * BITS) of
// the row's little-endian bit stream (3, 5 and 6 bits may straddle two words).
float dequant(IDX_T w_row, IDX_T s_row, IDX_T c) {
  IDX_T bit = c * BITS;
  IDX_T word = w_row + (bit >> 5);
  uint shift = uint(bit & 31);
  uint v = wq[uint(word)] >> shift;
#if (32 % BITS) != 0
  if (shift + BITS > 32) {
    v |= wq[uint(word + 1)] << (32 - shift);
  }
#endif
  v &= (1u << BITS) - 1u;
  IDX_T g = s_row + c / GS;
  return float(IN0_LOAD(scales[uint(pc.extra0 + g)])) * float(v) +
         float(IN0_LOAD(qbiases[uint(pc.extra1 + g)]));
}
#endif

// +1: a column of the tile lands in distinct banks when A or B is stored transposed.
shared float As[BK][BM + 1];
shared float Bs[BK][BN + 1];

float ra[A_PER];
float rb[B_PER];

// Global -> registers for the tile at k0: consecutive invocations read consecutive
// elements of the operand's contiguous dimension.
void load_tiles(IDX_T a_base, IDX_T b_base, IDX_T s_base, IDX_T row0, IDX_T col0, IDX_T k0,
                uint t) {
  for (uint i = 0; i < A_PER; ++i) {
    uint e = t + i * WG;
#if A_T == 0
    uint kk = e % BK, mm = e / BK;
    IDX_T at = a_base + (row0 + IDX_T(mm)) * pc.lda + k0 + IDX_T(kk);
#else
    uint mm = e % BM, kk = e / BM;
    IDX_T at = a_base + (k0 + IDX_T(kk)) * pc.lda + row0 + IDX_T(mm);
#endif
#if EDGE
    bool inside = row0 + IDX_T(mm) < pc.m && k0 + IDX_T(kk) < pc.k;
    ra[i] = inside ? float(IN0_LOAD(a[uint(at)])) : 0.0f;
#else
    ra[i] = float(IN0_LOAD(a[uint(at)]));
#endif
  }
  for (uint i = 0; i < B_PER; ++i) {
    uint e = t + i * WG;
#if B_T == 0
    uint nn = e % BN, kk = e / BN;
#else
    uint kk = e % BK, nn = e / BK;
#endif
    IDX_T gk = k0 + IDX_T(kk), gn = col0 + IDX_T(nn);
#if EDGE
    if (gn >= pc.n || gk >= pc.k) {
      rb[i] = 0.0f;
      continue;
    }
#endif
#if QUANT && B_T == 1
    rb[i] = dequant(b_base + gn * pc.ldb, s_base + gn * (pc.ldb * 32 / BITS / GS), gk);
#elif QUANT
    rb[i] = dequant(b_base + gk * pc.ldb, s_base + gk * (pc.ldb * 32 / BITS / GS), gn);
#elif B_T == 0
    rb[i] = float(IN0_LOAD(b[uint(b_base + gk * pc.ldb + gn)]));
#else
    rb[i] = float(IN0_LOAD(b[uint(b_base + gn * pc.ldb + gk)]));
#endif
  }
}

void store_tiles(uint t) {
  for (uint i = 0; i < A_PER; ++i) {
    uint e = t + i * WG;
#if A_T == 0
    As[e % BK][e / BK] = ra[i];
#else
    As[e / BM][e % BM] = ra[i];
#endif
  }
  for (uint i = 0; i < B_PER; ++i) {
    uint e = t + i * WG;
#if B_T == 0
    Bs[e / BN][e % BN] = rb[i];
#else
    Bs[e % BK][e / BK] = rb[i];
#endif
  }
}

void main() {
  uint t = gl_LocalInvocationID.x;
  uint tn = t % WG_N;
  uint tm = t / WG_N;
  IDX_T z = IDX_T(gl_WorkGroupID.z);
  IDX_T outer = z / pc.nb1;
  IDX_T inner = z - outer * pc.nb1;
  IDX_T a_base = pc.a_offset + outer * pc.a_bs0 + inner * pc.a_bs1;
  IDX_T b_base = pc.b_offset + outer * pc.b_bs0 + inner * pc.b_bs1;
#if QUANT
  // Scales and biases are dense: one per GS values of each packed row.
  IDX_T s_base = (outer * pc.b_bs0 + inner * pc.b_bs1) * 32 / BITS / GS;
#else
  IDX_T s_base = 0;
#endif
  IDX_T row0 = IDX_T(gl_WorkGroupID.y) * BM;
  IDX_T col0 = IDX_T(gl_WorkGroupID.x) * BN;

  float acc[TM][TN];
  for (uint i = 0; i < TM; ++i) {
    for (uint j = 0; j < TN; ++j) {
      acc[i][j] = 0.0f;
    }
  }

  load_tiles(a_base, b_base, s_base, row0, col0, 0, t);
  store_tiles(t);
  barrier();
  for (IDX_T k0 = 0; k0 < pc.k; k0 += BK) {
    bool more = k0 + BK < pc.k;
    if (more) {
      load_tiles(a_base, b_base, s_base, row0, col0, k0 + BK, t);
    }
    for (uint kk = 0; kk < BK; ++kk) {
      float af[TM];
      float bf[TN];
      for (uint i = 0; i < TM; ++i) {
        af[i] = As[kk][tm + i * WG_M];
      }
      for (uint j = 0; j < TN; ++j) {
        bf[j] = Bs[kk][tn + j * WG_N];
      }
      for (uint i = 0; i < TM; ++i) {
        for (uint j = 0; j < TN; ++j) {
          acc[i][j] = fma(af[i], bf[j], acc[i][j]);
        }
      }
    }
    barrier();
    if (more) {
      store_tiles(t);
      barrier();
    }
  }

#if QUANT
  float alpha = 1.0f;
#else
  float alpha = uintBitsToFloat(uint(pc.extra0));
#endif
#if ADDMM
  float beta = uintBitsToFloat(uint(pc.extra1));
#endif
  IDX_T out_base = pc.out_offset + z * pc.m * pc.n;
  for (uint i = 0; i < TM; ++i) {
    IDX_T row = row0 + IDX_T(tm + i * WG_M);
    for (uint j = 0; j < TN; ++j) {
      IDX_T col = col0 + IDX_T(tn + j * WG_N);
#if EDGE
      if (row >= pc.m || col >= pc.n) {
        continue;
      }
#endif
      IDX_T at = out_base + row * pc.n + col;
      float v = alpha * acc[i][j];
#if ADDMM
      v += beta * float(IN0_LOAD(outv[uint(at)]));
#endif
      outv[uint(at)] = OUT_STORE(v);
    }
  }
}
