#version 450
#extension GL_GOOGLE_include_directive : require
// Scans (cumsum, cumprod, cummax, cummin) along one axis of a row-contiguous input, into a
// row-contiguous output of the same dtype and shape (docs/scan.md). Two shapes:
//
// MODE_COL 0 (rows): `count` rows of `len` contiguous elements, one workgroup per row. The
//   row is walked in chunks of CHUNK = WG * ROW_K elements, carrying the running prefix
//   from one chunk to the next (so any length works). Per chunk:
//     1. the workgroup loads the chunk coalesced (invocation t reads t, t + WG, ...) into
//        shared memory;
//     2. invocation t scans its own ROW_K consecutive elements there in registers;
//     3. the WG per-invocation totals are scanned in shared memory: NSEG invocations
//        fold a segment of SEG totals each, then every invocation folds the segments
//        and the totals before its own (at most NSEG - 1 + SEG - 1 values). Two
//        barriers instead of a log2(WG) ladder, and no subgroup ops, so the order of
//        invocations is the local index's on every device;
//     4. the finished values go back to the same shared slots and the workgroup stores
//        the chunk coalesced.
// MODE_COL 1 (columns): an [outer, len, inner] input scanned over len. The count =
//   outer * inner columns are tiled COLS at a time (neighbouring invocations take
//   neighbouring columns, so loads and stores are coalesced when inner >= COLS); the
//   ROWS = WG / COLS invocations of a column split each chunk of ROWS * COL_K elements
//   into ROWS runs of COL_K, and scan the runs' totals in shared memory. Short rows
//   (inner == 1) use this mode too: one column per row, a chunk covers the row.
//
// Segments (rows only; docs/scan.md): a row may be cut into `segs` segments of `seg`
// elements (the last shorter), one workgroup each, so few long rows (a vocabulary-wide
// cumsum) use more than one workgroup. Three launches: flag TOTALS stores each segment's
// combined total (out[row * segs + segment]); a plain exclusive scan of those totals gives
// each segment's carry; SEGMENTED 1 (a third binding) starts each segment's running value
// from its carry (flag CARRY_IN) instead of the identity. segs == 1 and seg == len is the
// plain row scan.
//
// reverse (scan from the end) and inclusive are push-constant flags, so they add no
// kernels. An exclusive scan stores the running value before folding the element in (the
// identity first). The engine defines ACC_T (the dtype's compute type: f32 for every
// float, 32 bits for 8/16-bit integers, which wrap and are truncated on store as on the
// CPU), ACC_INIT (the identity in the dtype's range: 0, 1, the lowest or highest value),
// ACC_COMBINE(a, b) (a comes first; max/min keep the first NaN, as the CPU does), ROW_K
// and COL_K. Float sums define COMPENSATED: the carry between chunks is a (hi, lo) pair
// updated with TwoSum, so the error of an output does not grow with the number of chunks
// before it (a plain f32 carry would add one rounding of the whole prefix per chunk).
// Defaults: f32 cumsum over rows.
#ifndef MODE_COL
#define MODE_COL 0
#endif
#ifndef ACC_T
#define ACC_T float
#define ACC_INIT 0.0f
#define ACC_COMBINE(a, b) ((a) + (b))
#define COMPENSATED 1
#endif
#ifndef COMPENSATED
#define COMPENSATED 0
#endif
#ifndef ROW_K
#define ROW_K 16u
#endif
#ifndef COL_K
#define COL_K 8u
#endif
#ifndef SEGMENTED
#define SEGMENTED 0
#endif

#include "include/operands.glsl"

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer In0 {
  IN0_ST in0[];
};
// Not restrict, like every output (include/elementwise.glsl).
layout(std430, set = 0, binding = 1) writeonly buffer Out {
  OUT_ST outv[];
};
#if SEGMENTED
layout(std430, set = 0, binding = 2) readonly buffer Carries {
  OUT_ST carries[];
};
#endif

// codegen/scan.cpp packs exactly these fields, each IDX_T.
layout(push_constant) uniform Params {
  IDX_T in0_offset;
  IDX_T out_offset;
  IDX_T len;    // elements along the scanned axis
  IDX_T count;  // ROW: rows; COL: outer * inner columns
  IDX_T inner;  // COL: stride of the scanned axis; ROW: 1
  IDX_T flags;  // bit 0: reverse, bit 1: inclusive, bit 2: TOTALS, bit 3: CARRY_IN
  IDX_T seg;    // ROW: elements per segment (len when unsegmented)
  IDX_T segs;   // ROW: segments per row
  IDX_T carry_offset;  // SEGMENTED: element 0 of the carries
}
pc;

const uint WG = gl_WorkGroupSize.x;

// The position along the axis of the k-th element in scan order.
IDX_T axis_pos(IDX_T k) {
  return (pc.flags & IDX_T(1)) != IDX_T(0) ? pc.len - IDX_T(1) - k : k;
}

bool inclusive() {
  return (pc.flags & IDX_T(2)) != IDX_T(0);
}

bool flag(int bit) {
  return (pc.flags & (IDX_T(1) << bit)) != IDX_T(0);
}

// The carry: the combined value of every chunk before the current one. Compensated float
// sums keep what rounding hi dropped in lo (Neumaier/TwoSum); `precise` stops the compiler
// from reassociating the error terms away.
struct Carry {
  ACC_T hi;
#if COMPENSATED
  float lo;
#endif
};

Carry carry_init() {
#if COMPENSATED
  return Carry(ACC_INIT, 0.0f);
#else
  return Carry(ACC_INIT);
#endif
}

// carry (+) local, the value stored for an element whose chunk-local prefix is `local`.
ACC_T with_carry(Carry c, ACC_T local) {
#if COMPENSATED
  // Once hi is inf or NaN, lo means nothing (inf - inf in TwoSum gave NaN): leave it out.
  precise float r = isinf(c.hi) || isnan(c.hi) ? c.hi + local : c.hi + (c.lo + local);
  return r;
#else
  return ACC_COMBINE(c.hi, local);
#endif
}

void carry_add(inout Carry c, ACC_T total) {
#if COMPENSATED
  precise float s = c.hi + total;
  precise float bp = s - c.hi;
  precise float err = (c.hi - (s - bp)) + (total - bp);
  c.lo = isinf(s) || isnan(s) ? 0.0f : c.lo + err;
  c.hi = s;
#else
  c.hi = ACC_COMBINE(c.hi, total);
#endif
}

#if MODE_COL == 0

const uint CHUNK = WG * ROW_K;
// Totals are scanned in segments of SEG (NSEG = WG / SEG of them).
const uint SEG = WG < 16u ? WG : 16u;
const uint NSEG = WG / SEG;

// One padding slot every 32 elements: invocation t reads slots t * ROW_K + i, which would
// otherwise fall in the same shared-memory bank for every t.
shared ACC_T stage[CHUNK + CHUNK / 32u];
// Padded the same way (one slot every 16): the NSEG folding invocations read 16 apart.
shared ACC_T totals[WG + WG / 16u];
shared ACC_T segments[NSEG];

uint slot(uint j) {
  return j + (j >> 5u);
}

uint tslot(uint q) {
  return q + (q >> 4u);
}

void main() {
  IDX_T g = IDX_T(gl_WorkGroupID.y) * IDX_T(gl_NumWorkGroups.x) + IDX_T(gl_WorkGroupID.x);
  IDX_T row = g / pc.segs;
  if (row >= pc.count) {
    return;  // uniform for the whole workgroup: no barrier is skipped by part of it
  }
  // This workgroup's segment: `len` elements from `start` of the row.
  IDX_T start = (g - row * pc.segs) * pc.seg;
  IDX_T len = min(pc.seg, pc.len - start);
  IDX_T base = pc.in0_offset + row * pc.len + start;
  IDX_T obase = pc.out_offset + row * pc.len + start;
  bool reverse = flag(0);
  bool totals_only = flag(2);
  uint t = gl_LocalInvocationID.x;
  bool incl = inclusive();
  Carry carry = carry_init();
#if SEGMENTED
  if (flag(3)) {
    carry.hi = ACC_T(IN0_LOAD(carries[uint(pc.carry_offset + g)]));
  }
#endif
  for (IDX_T c0 = IDX_T(0); c0 < len; c0 += IDX_T(CHUNK)) {
    // 1. Coalesced loads; past the end, the identity (an `if`, not ?:, so no load is
    // ever formed past the binding).
    for (uint i = 0u; i < ROW_K; ++i) {
      uint j = t + i * WG;
      IDX_T k = c0 + IDX_T(j);
      ACC_T x = ACC_INIT;
      if (k < len) {
        x = ACC_T(IN0_LOAD(in0[uint(base + (reverse ? len - IDX_T(1) - k : k))]));
      }
      stage[slot(j)] = x;
    }
    barrier();
    // 2. This invocation's ROW_K consecutive elements.
    ACC_T v[ROW_K];
    ACC_T total = ACC_INIT;
    for (uint i = 0u; i < ROW_K; ++i) {
      v[i] = stage[slot(t * ROW_K + i)];
      total = ACC_COMBINE(total, v[i]);
    }
    totals[tslot(t)] = total;
    barrier();
    // 3. Segment totals, then this invocation's exclusive prefix and the chunk's total.
    if (t < NSEG) {
      ACC_T s = ACC_INIT;
      for (uint q = t * SEG; q < t * SEG + SEG; ++q) {
        s = ACC_COMBINE(s, totals[tslot(q)]);
      }
      segments[t] = s;
    }
    barrier();
    // Loops of constant trip count, which the compilers unroll: llvmpipe (lavapipe) stops
    // an invocation after 65535 loop iterations in all, nested ones included, and with
    // variable bounds here a 4M-element row at WG 128 came back cut short (docs/scan.md).
    uint my_seg = t / SEG;
    ACC_T run = ACC_INIT;
    ACC_T chunk_total = ACC_INIT;
    for (uint q = 0u; q < NSEG; ++q) {
      ACC_T seg_total = segments[q];
      if (q < my_seg) {
        run = ACC_COMBINE(run, seg_total);
      }
      chunk_total = ACC_COMBINE(chunk_total, seg_total);
    }
    for (uint i = 0u; i < SEG; ++i) {
      uint q = my_seg * SEG + i;
      if (q < t) {
        run = ACC_COMBINE(run, totals[tslot(q)]);
      }
    }
    // 4. Finished values into this invocation's own slots (only it read them in 2).
    for (uint i = 0u; i < ROW_K; ++i) {
      ACC_T before = run;
      run = ACC_COMBINE(run, v[i]);
      stage[slot(t * ROW_K + i)] = with_carry(carry, incl ? run : before);
    }
    carry_add(carry, chunk_total);
    barrier();
    // 5. Coalesced stores. Each invocation stores the slots it loads in the next chunk,
    // and totals/segments were last read before the barrier above: the next chunk needs
    // no barrier before its loads.
    for (uint i = 0u; i < ROW_K; ++i) {
      uint j = t + i * WG;
      IDX_T k = c0 + IDX_T(j);
      if (k < len && !totals_only) {
        outv[uint(obase + (reverse ? len - IDX_T(1) - k : k))] = OUT_STORE(stage[slot(j)]);
      }
    }
  }
  if (totals_only && t == 0u) {
    outv[uint(pc.out_offset + g)] = OUT_STORE(with_carry(carry, ACC_INIT));
  }
}

#else  // MODE_COL

// A tile is COLS columns x ROWS runs; each run is COL_K consecutive elements of a chunk.
const uint COLS = WG < 32u ? WG : 32u;
const uint ROWS = WG / COLS;

shared ACC_T run_totals[WG];

void main() {
  IDX_T tile = IDX_T(gl_WorkGroupID.y) * IDX_T(gl_NumWorkGroups.x) + IDX_T(gl_WorkGroupID.x);
  uint c = gl_LocalInvocationID.x % COLS;
  uint r = gl_LocalInvocationID.x / COLS;
  IDX_T o = tile * IDX_T(COLS) + IDX_T(c);
  // Invocations past the last column still take part in every barrier.
  bool live = o < pc.count;
  IDX_T outer = live ? o / pc.inner : IDX_T(0);
  IDX_T col = outer * pc.len * pc.inner + (o - outer * pc.inner);
  IDX_T base = pc.in0_offset + col;
  IDX_T obase = pc.out_offset + col;
  bool incl = inclusive();
  Carry carry = carry_init();
  for (IDX_T c0 = IDX_T(0); c0 < pc.len; c0 += IDX_T(ROWS * COL_K)) {
    IDX_T k0 = c0 + IDX_T(r * COL_K);
    // All COL_K loads first (independent, so they are in flight together).
    ACC_T v[COL_K];
    ACC_T total = ACC_INIT;
    for (uint i = 0u; i < COL_K; ++i) {
      IDX_T k = k0 + IDX_T(i);
      v[i] = ACC_INIT;
      if (live && k < pc.len) {
        v[i] = ACC_T(IN0_LOAD(in0[uint(base + axis_pos(k) * pc.inner)]));
      }
      total = ACC_COMBINE(total, v[i]);
    }
    run_totals[r * COLS + c] = total;
    barrier();
    ACC_T run = ACC_INIT;
    for (uint q = 0u; q < r; ++q) {
      run = ACC_COMBINE(run, run_totals[q * COLS + c]);
    }
    ACC_T chunk_total = run;
    for (uint q = r; q < ROWS; ++q) {
      chunk_total = ACC_COMBINE(chunk_total, run_totals[q * COLS + c]);
    }
    for (uint i = 0u; i < COL_K; ++i) {
      IDX_T k = k0 + IDX_T(i);
      ACC_T before = run;
      run = ACC_COMBINE(run, v[i]);
      if (live && k < pc.len) {
        outv[uint(obase + axis_pos(k) * pc.inner)] =
            OUT_STORE(with_carry(carry, incl ? run : before));
      }
    }
    carry_add(carry, chunk_total);
    barrier();  // run_totals is rewritten by the next chunk
  }
}

#endif
