#version 450
#extension GL_GOOGLE_include_directive : require
// Matrix products with few rows (M <= 8: a decode step's activations), which read the
// matrix B exactly once and are bound by that read:
//   out[b] = A[b] x B[b],   A: M x K with k contiguous (A[m, k] at m * lda + k).
// Two shapes of B, chosen by B_T:
//   B_T 1 ("dot", a Linear weight [N, K]): B[k, n] at n * ldb + k. A team of TPR
//     invocations owns one column n; each lane reads 16-byte vectors of that row of B, U
//     of them in flight, and the team sums its lanes with subgroup shuffles (SUBGROUP) or
//     through shared memory.
//   B_T 0 ("axpy", [K, N]): B[k, n] at k * ldb + n. An invocation owns VEC consecutive
//     columns and one of KS slices of k; the slices are summed through shared memory.
//     When K is long, workgroups also split k (SPLIT 1): each writes f32 partial sums
//     [batch][split][M][N] to a scratch buffer and a second launch of this template
//     (STAGE_FINISH) adds them and rounds once.
// Products accumulate in f32 whatever the dtype, rounded once on store. The engine defines
// VEC (the dtype's lanes in 16 bytes when every row start is a multiple of it, else 1), MR
// (rows held in registers: M rounded up to 1, 2, 4 or 8), TPR, KS, SUBGROUP, SPLIT,
// STAGE_FINISH, IN0_* (A and B share the dtype) and OUT_*. codegen/matmul.cpp packs the
// push constants.
#ifndef B_T
#define B_T 1
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef MR
#define MR 1
#endif
#ifndef TPR
#define TPR 32
#endif
#ifndef KS
#define KS 4
#endif
#ifndef SPLIT
#define SPLIT 0
#endif
#ifndef STAGE_FINISH
#define STAGE_FINISH 0
#endif
#ifndef SUBGROUP
#define SUBGROUP 0
#endif
#if SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

#include "include/operands.glsl"
#if VEC > 1
#include "include/lanes.glsl"
#endif

// Vectors of B in flight per invocation (64 bytes at VEC > 1).
#define U 4

layout(local_size_x_id = 0) in;
#define WGS gl_WorkGroupSize.x

#if STAGE_FINISH
layout(std430, set = 0, binding = 0) readonly buffer Partial {
  float part[];
};
layout(std430, set = 0, binding = 1) writeonly buffer Out {
  OUT_ST outv[];
};
#else
layout(std430, set = 0, binding = 0) readonly buffer A {
  IN0_ST a[];
};
layout(std430, set = 0, binding = 1) readonly buffer B {
  IN0_ST b[];
};
#if VEC > 1
layout(std430, set = 0, binding = 0) readonly buffer AV {
  IN0_VT av[];
};
layout(std430, set = 0, binding = 1) readonly buffer BV {
  IN0_VT bv[];
};
#endif
#if SPLIT
layout(std430, set = 0, binding = 2) writeonly buffer Partial {
  float part[];
};
#else
layout(std430, set = 0, binding = 2) writeonly buffer Out {
  OUT_ST outv[];
};
#endif
#endif

#include "include/matmul_params.glsl"
// extra0 / extra1 (B_T 0): rows of k per split, and the splits (workgroups along k; SPLIT
// 1 when more than one).
#define KCHUNK pc.extra0
#define SPLITS pc.extra1

#if STAGE_FINISH
// One invocation per output element: the sum of its splits' partials (bound at 0, from
// element a_offset), rounded once.
void main() {
  IDX_T idx = IDX_T(gl_WorkGroupID.y) * IDX_T(gl_NumWorkGroups.x) * IDX_T(WGS) +
              IDX_T(gl_GlobalInvocationID.x);
  IDX_T per = pc.m * pc.n;
  IDX_T batches = pc.nb1;  // the launch passes the batch count here
  if (idx >= batches * per) {
    return;
  }
  IDX_T z = idx / per;
  IDX_T r = idx - z * per;
  // Neumaier's compensated sum: a long k keeps the accuracy of one rounding (each split's
  // partial is already far from f32's 2^24 limit; their running total may not be).
  float s = 0.0f;
  float c = 0.0f;
  for (IDX_T g = 0; g < SPLITS; ++g) {
    float v = part[uint(pc.a_offset + (z * SPLITS + g) * per + r)];
    precise float t = s + v;
    precise float lost = abs(s) >= abs(v) ? (s - t) + v : (v - t) + s;
    c += lost;
    s = t;
  }
  outv[uint(pc.out_offset + idx)] = OUT_STORE(s + c);
}
#else

float acc[MR][VEC];

#if B_T == 1
#include "include/teams.glsl"
#else
shared float red[WGS * VEC];
#endif

void main() {
  uint t = gl_LocalInvocationID.x;
  IDX_T z = IDX_T(gl_WorkGroupID.z);
  IDX_T outer = z / pc.nb1;
  IDX_T inner = z - outer * pc.nb1;
  IDX_T a_base = pc.a_offset + outer * pc.a_bs0 + inner * pc.a_bs1;
  IDX_T b_base = pc.b_offset + outer * pc.b_bs0 + inner * pc.b_bs1;
  for (uint i = 0; i < MR; ++i) {
    for (uint j = 0; j < VEC; ++j) {
      acc[i][j] = 0.0f;
    }
  }

#if B_T == 1
  // ---- dot: a team of TPR lanes per column n ----
  uint team = team_index();
  uint lane = team_lane();
  IDX_T col = IDX_T(gl_WorkGroupID.x) * IDX_T(WGS / TPR) + IDX_T(team);
  bool live = col < pc.n;
  IDX_T chunks = pc.k / VEC;  // VEC divides K (codegen/matmul.cpp)
  if (live) {
    IDX_T brow = (b_base + col * pc.ldb) / VEC;
    for (IDX_T c0 = IDX_T(lane); c0 < chunks; c0 += IDX_T(TPR * U)) {
#if VEC > 1
      IN0_VT w[U];
#else
      float w[U];  // 16-bit storage types cannot live in registers
#endif
      for (uint u = 0; u < U; ++u) {
        IDX_T c = c0 + IDX_T(u * TPR);
        if (c < chunks) {
#if VEC > 1
          w[u] = bv[uint(brow + c)];
#else
          w[u] = float(IN0_LOAD(b[uint(brow + c)]));
#endif
        }
      }
      for (uint u = 0; u < U; ++u) {
        IDX_T c = c0 + IDX_T(u * TPR);
        if (c >= chunks) {
          break;
        }
        for (uint i = 0; i < MR; ++i) {
          if (IDX_T(i) < pc.m) {
#if VEC > 1
            IN0_VT x = av[uint((a_base + IDX_T(i) * pc.lda) / VEC + c)];
            for (uint j = 0; j < VEC; ++j) {
              acc[i][0] = fma(float(IN0_VLANE(x, j)), float(IN0_VLANE(w[u], j)), acc[i][0]);
            }
#else
            float x = float(IN0_LOAD(a[uint(a_base + IDX_T(i) * pc.lda + c)]));
            acc[i][0] = fma(x, w[u], acc[i][0]);
#endif
          }
        }
      }
    }
  }
  IDX_T out_base = pc.out_offset + z * pc.m * pc.n;
  for (uint i = 0; i < MR; ++i) {
    float s = team_sum(acc[i][0], i);
    if (live && lane == 0 && IDX_T(i) < pc.m) {
      outv[uint(out_base + IDX_T(i) * pc.n + col)] = OUT_STORE(s);
    }
  }
#else
  // ---- axpy: VEC columns and one k slice per invocation ----
  uint nt = t % (WGS / KS);
  uint ks = t / (WGS / KS);
  IDX_T nv = IDX_T(gl_WorkGroupID.x) * IDX_T(WGS / KS) + IDX_T(nt);  // column vector
  bool live = nv * VEC < pc.n;
  IDX_T g = IDX_T(gl_WorkGroupID.y);
  IDX_T k_begin = g * KCHUNK;
  IDX_T k_end = min(pc.k, k_begin + KCHUNK);
  if (live) {
    for (IDX_T k0 = k_begin + IDX_T(ks); k0 < k_end; k0 += IDX_T(KS * U)) {
#if VEC > 1
      IN0_VT w[U];
#else
      float w[U];  // 16-bit storage types cannot live in registers
#endif
      for (uint u = 0; u < U; ++u) {
        IDX_T kk = k0 + IDX_T(u * KS);
        if (kk < k_end) {
#if VEC > 1
          w[u] = bv[uint((b_base + kk * pc.ldb) / VEC + nv)];
#else
          w[u] = float(IN0_LOAD(b[uint(b_base + kk * pc.ldb + nv)]));
#endif
        }
      }
      for (uint u = 0; u < U; ++u) {
        IDX_T kk = k0 + IDX_T(u * KS);
        if (kk >= k_end) {
          break;
        }
        for (uint i = 0; i < MR; ++i) {
          if (IDX_T(i) < pc.m) {
            float x = float(IN0_LOAD(a[uint(a_base + IDX_T(i) * pc.lda + kk)]));
            for (uint j = 0; j < VEC; ++j) {
#if VEC > 1
              acc[i][j] = fma(x, float(IN0_VLANE(w[u], j)), acc[i][j]);
#else
              acc[i][j] = fma(x, w[u], acc[i][j]);
#endif
            }
          }
        }
      }
    }
  }
  for (uint i = 0; i < MR; ++i) {
    for (uint j = 0; j < VEC; ++j) {
      red[t * VEC + j] = acc[i][j];
    }
    barrier();
    if (ks == 0 && live && IDX_T(i) < pc.m) {
      for (uint j = 0; j < VEC; ++j) {
        float s = 0.0f;
        for (uint q = 0; q < KS; ++q) {
          s += red[(q * (WGS / KS) + nt) * VEC + j];
        }
        IDX_T col = nv * VEC + IDX_T(j);
#if SPLIT
        part[uint(pc.out_offset + ((z * SPLITS + g) * pc.m + IDX_T(i)) * pc.n + col)] = s;
#else
        outv[uint(pc.out_offset + (z * pc.m + IDX_T(i)) * pc.n + col)] = OUT_STORE(s);
#endif
      }
    }
    barrier();
  }
#endif
}
#endif
