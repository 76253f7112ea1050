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
// The engine defines BM, BN, BK, TM, TN (tile; codegen/matmul.cpp keeps BM * BK and
// BN * BK multiples of the workgroup), A_T, B_T, EDGE (0 when M, N and K are multiples of
// the tile: no bounds checks), ADDMM, IN0_* (A and B share the dtype) and OUT_*.
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

// codegen/matmul.cpp packs exactly these fields, each IDX_T. The batch index z splits
// into (z / nb1, z % nb1), the two collapsed batch dims of A and B (stride 0: broadcast).
layout(push_constant) uniform Params {
  IDX_T m;
  IDX_T n;
  IDX_T k;
  IDX_T a_offset;
  IDX_T b_offset;
  IDX_T out_offset;
  IDX_T lda;
  IDX_T ldb;
  IDX_T nb1;
  IDX_T a_bs0;
  IDX_T a_bs1;
  IDX_T b_bs0;
  IDX_T b_bs1;
  IDX_T alpha_bits;
  IDX_T beta_bits;
}
pc;

// +1: a column of the tile lands in distinct banks when A or B is stored transposed.
shared float As[BK][BM + 1];
shared float Bs[BK][BN + 1];

float ra[A_PER];
float rb[B_PER];

// Global -> registers for the tile at k0: consecutive invocations read consecutive
// elements of the operand's contiguous dimension.
void load_tiles(IDX_T a_base, IDX_T b_base, IDX_T row0, IDX_T col0, IDX_T k0, uint t) {
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
    ra[i] = inside ? float(IN0_LOAD(a[at])) : 0.0f;
#else
    ra[i] = float(IN0_LOAD(a[at]));
#endif
  }
  for (uint i = 0; i < B_PER; ++i) {
    uint e = t + i * WG;
#if B_T == 0
    uint nn = e % BN, kk = e / BN;
    IDX_T at = b_base + (k0 + IDX_T(kk)) * pc.ldb + col0 + IDX_T(nn);
#else
    uint kk = e % BK, nn = e / BK;
    IDX_T at = b_base + (col0 + IDX_T(nn)) * pc.ldb + k0 + IDX_T(kk);
#endif
#if EDGE
    bool inside = col0 + IDX_T(nn) < pc.n && k0 + IDX_T(kk) < pc.k;
    rb[i] = inside ? float(IN0_LOAD(b[at])) : 0.0f;
#else
    rb[i] = float(IN0_LOAD(b[at]));
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
  IDX_T row0 = IDX_T(gl_WorkGroupID.y) * BM;
  IDX_T col0 = IDX_T(gl_WorkGroupID.x) * BN;

  float acc[TM][TN];
  for (uint i = 0; i < TM; ++i) {
    for (uint j = 0; j < TN; ++j) {
      acc[i][j] = 0.0f;
    }
  }

  load_tiles(a_base, b_base, row0, col0, 0, t);
  store_tiles(t);
  barrier();
  for (IDX_T k0 = 0; k0 < pc.k; k0 += BK) {
    bool more = k0 + BK < pc.k;
    if (more) {
      load_tiles(a_base, b_base, row0, col0, k0 + BK, t);
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

  float alpha = uintBitsToFloat(uint(pc.alpha_bits));
#if ADDMM
  float beta = uintBitsToFloat(uint(pc.beta_bits));
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
      v += beta * float(IN0_LOAD(outv[at]));
#endif
      outv[at] = OUT_STORE(v);
    }
  }
}
