#version 450
#extension GL_GOOGLE_include_directive : require
// Sorting along an axis (sort, argsort; partition and argpartition, whose sorted rows are
// valid partitions): a bitonic network over (key, index) pairs. Each value becomes an
// unsigned key whose order is the value's (floats: -0 as +0, NaN after everything, as
// MLX's NaN-last comparator), and ties order by the original index, so the result is the
// stable sort MLX gives. Rows are padded to P = 2^m with keys that sort last.
//
// Rows of `n` elements lie at in[(r / inner) * n * inner + p * inner + r % inner] (dense
// input; inner = 1 when the axis is last), and the output the same way. A row of at most B
// elements sorts in one workgroup in shared memory (STAGE_BLOCK with FIRST and FINAL).
// Longer rows take a chain of launches over scratch key and index buffers [rows][P]:
//   STAGE_BLOCK FIRST     each block of B elements sorted, direction alternating by block
//                         (so pairs of blocks form bitonic sequences);
//   STAGE_GLOBAL k, j     one compare-exchange per invocation at distance j >= B;
//   STAGE_BLOCK k         the steps j < B of merge k, inside each block; FINAL on the last.
// The engine defines STAGE, FIRST, FINAL (as push constants: see below), ARG (1: write the
// indices as uint32, else the values), KEY_T, KEY_MAX, MAKE_KEY(v) (the order-preserving key
// of a compute value), IN0_* (the input) and OUT_*. codegen/sort.cpp packs the constants.
#define STAGE_BLOCK 0
#define STAGE_GLOBAL 1
#ifndef STAGE
#define STAGE STAGE_BLOCK
#endif
#ifndef ARG
#define ARG 0
#endif
#ifndef B
#define B 1024
#endif

#include "include/operands.glsl"
#ifndef KEY_T
#define KEY_T uint
#define KEY_MAX 0xffffffffu
// f32: flip every bit of negatives, the sign bit of the rest; -0 counts as +0, NaN last.
#define MAKE_KEY(v) float_key(v)
#endif

uint float_key(float v) {
  if (isnan(v)) {
    return 0xffffffffu;
  }
  uint bits = floatBitsToUint(v == 0.0f ? 0.0f : v);
  return (bits & 0x80000000u) != 0u ? ~bits : (bits | 0x80000000u);
}

layout(local_size_x_id = 0) in;
#define WGS gl_WorkGroupSize.x
#define NO_INDEX 0xffffffffu

layout(std430, set = 0, binding = 0) readonly buffer In {
  IN0_ST inv[];
};
layout(std430, set = 0, binding = 1) buffer Keys {
  KEY_T keys[];
};
layout(std430, set = 0, binding = 2) buffer Idx {
  uint idxs[];
};
layout(std430, set = 0, binding = 3) writeonly buffer Out {
  OUT_ST outv[];
};

// codegen/sort.cpp packs exactly these fields (uint).
layout(push_constant) uniform Params {
  uint n;      // elements per row
  uint p;      // padded row length, a power of two
  uint inner;  // elements after the axis (1 when it is last)
  uint rows;
  uint in_offset;
  uint out_offset;
  uint k_lo;   // STAGE_BLOCK: merges k_lo, 2 k_lo, ... k_hi (steps j < B of each)
  uint k_hi;   // STAGE_GLOBAL: the merge k
  uint j;      // STAGE_GLOBAL: the distance
  uint flags;  // 1: FIRST (read the input), 2: FINAL (write the output)
}
pc;

uint element_at(uint r, uint pos) {
  return (r / pc.inner) * pc.n * pc.inner + pos * pc.inner + r % pc.inner;
}

bool greater(KEY_T ka, uint ia, KEY_T kb, uint ib) {
  return ka > kb || (ka == kb && ia > ib);
}

uint row_and_block(out uint block, uint blocks) {
  uint g = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  block = g % blocks;
  return g / blocks;
}

void write_output(uint r, uint pos, uint index) {
#if ARG
  outv[pc.out_offset + element_at(r, pos)] = OUT_STORE(index);
#else
  outv[pc.out_offset + element_at(r, pos)] = inv[pc.in_offset + element_at(r, index)];
#endif
}

#if STAGE == STAGE_BLOCK
shared KEY_T sk[B];
shared uint si[B];

void main() {
  uint len = min(pc.p, uint(B));  // elements of this block
  uint blocks = pc.p / len;
  uint block;
  uint r = row_and_block(block, blocks);
  if (r >= pc.rows) {
    return;
  }
  uint base = block * len;  // the block's first position in the row
  for (uint e = gl_LocalInvocationID.x; e < len; e += WGS) {
    uint pos = base + e;
    if ((pc.flags & 1u) != 0u) {
      bool real = pos < pc.n;
      sk[e] = real ? KEY_T(MAKE_KEY(IN0_LOAD(inv[pc.in_offset + element_at(r, pos)]))) : KEY_T(KEY_MAX);
      si[e] = real ? pos : NO_INDEX;
    } else {
      sk[e] = keys[r * pc.p + pos];
      si[e] = idxs[r * pc.p + pos];
    }
  }
  barrier();
  for (uint k = pc.k_lo; k <= pc.k_hi; k *= 2) {
    for (uint j = min(k / 2, len / 2); j > 0; j /= 2) {
      for (uint q = gl_LocalInvocationID.x; q < len / 2; q += WGS) {
        uint lo = (q / j) * 2 * j + q % j;
        uint hi = lo + j;
        bool up = ((base + lo) & k) == 0u;
        if (greater(sk[lo], si[lo], sk[hi], si[hi]) == up) {
          KEY_T tk = sk[lo];
          sk[lo] = sk[hi];
          sk[hi] = tk;
          uint ti = si[lo];
          si[lo] = si[hi];
          si[hi] = ti;
        }
      }
      barrier();
    }
  }
  for (uint e = gl_LocalInvocationID.x; e < len; e += WGS) {
    uint pos = base + e;
    if ((pc.flags & 2u) != 0u) {
      if (pos < pc.n) {
        write_output(r, pos, si[e]);
      }
    } else {
      keys[r * pc.p + pos] = sk[e];
      idxs[r * pc.p + pos] = si[e];
    }
  }
}

#else
// One compare-exchange of merge k at distance j per invocation.
void main() {
  uint g = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WGS +
           gl_LocalInvocationID.x;
  uint half_p = pc.p / 2;
  uint r = g / half_p;
  if (r >= pc.rows) {
    return;
  }
  uint q = g % half_p;
  uint lo = (q / pc.j) * 2 * pc.j + q % pc.j;
  uint hi = lo + pc.j;
  bool up = (lo & pc.k_hi) == 0u;
  uint a = r * pc.p + lo;
  uint b = r * pc.p + hi;
  KEY_T ka = keys[a];
  KEY_T kb = keys[b];
  uint ia = idxs[a];
  uint ib = idxs[b];
  if (greater(ka, ia, kb, ib) == up) {
    keys[a] = kb;
    keys[b] = ka;
    idxs[a] = ib;
    idxs[b] = ia;
  }
}
#endif
