#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Scaled dot-product attention (fast::scaled_dot_product_attention), the "sdpa" family:
//   out[b, h, i] = sum_j softmax_j(scale * q[b, h, i] . k[b, h / G, j] + mask) v[b, h / G, j]
// with G query heads per KV head (GQA). A workgroup serves one (batch, KV head) and a
// block of its query rows r = g * Lq + i (the G heads that share the KV head, each with its
// Lq queries), so every K/V row it reads serves all of them. Scores and the softmax are f32
// whatever the dtype; the softmax is online (running max m, sum l and weighted sum of V),
// so no Lq x Lkv score matrix exists; the output is rounded once.
//
// MODE_VECTOR (decode, Lq <= 8): RB rows per workgroup; NT teams of TPR lanes take keys in
//   turn (lane slices of D and DV in registers, dot products summed over the team), then
//   the teams' (m, l, acc) combine through shared memory. With SPLIT, workgroups along z
//   each take a chunk of keys and write (m, l, acc) to an f32 scratch buffer; MODE_MERGE
//   then combines the chunks, one invocation per output element.
// MODE_ROWS (prefill): BQ rows per workgroup, keys in tiles of BK through shared memory,
//   register-tiled: each invocation computes a 4 x TK block of scores and accumulates a
//   4-row block of the output from P times the V tile (details at MODE_ROWS below).
//   Causal tiles past the block's last visible key are never loaded; only tiles that some
//   row does not fully see are masked per key.
//
// STEP 1 (vector mode, Lq = 1, no mask or sinks: fast::DecodeAttention) is one decode step
//   over a KV cache: the workgroup first rotates its query rows and the new key row (each
//   normalized first with QNORM / KNORM, rounded to the dtype after the norm and after the
//   rotation, exactly as the rope kernel), one workgroup writes the key and value rows into
//   the caches (bound again as KOut and VOut) at row clamp(start, 0, cap - 1), and
//   the chunk that attends that row takes it from shared memory instead of the cache.
//
// Masked positions (causal, or false in a bool mask) score LOWEST, the output dtype's
// lowest finite value, so a row that sees no key at all averages V uniformly, as MLX's
// composition (a where() with finfo.min, then softmax) does; keys past Lkv score -inf and never count. A sink (one
// logit per query head, no value) starts each row's state at m = sink, l = 1.
//
// The engine defines MODE, D, DV, TPR, RB (vector), BQ, BK, TK, QH, KVH and IN0_HALF (rows),
// MASK (MASK_NONE, MASK_CAUSAL, MASK_BOOL, MASK_ADD), SINKS, SPLIT, SUBGROUP, IN0_* (q, k,
// v), IN1_* (the mask), IN2_* (the sinks) and OUT_*. codegen/attention.cpp packs the push
// constants.
#define MODE_VECTOR 0
#define MODE_ROWS 1
#define MODE_MERGE 2
#define MODE_COOP 3
#define MASK_NONE 0
#define MASK_CAUSAL 1
#define MASK_BOOL 2
#define MASK_ADD 3
#ifndef MODE
#define MODE MODE_VECTOR
#endif
#ifndef D
#define D 128
#endif
#ifndef DV
#define DV D
#endif
#ifndef TPR
#define TPR 32
#endif
#ifndef RB
#define RB 1
#endif
#ifndef BQ
#define BQ 64
#define BK 32
#endif
#ifndef MASK
#define MASK MASK_NONE
#endif
#ifndef SINKS
#define SINKS 0
#endif
#ifndef SPLIT
#define SPLIT 0
#endif
#ifndef SUBGROUP
#define SUBGROUP 0
#endif
#ifndef STEP
#define STEP 0
#endif
#if SUBGROUP || MODE == MODE_COOP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#if MODE == MODE_COOP
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif

#include "include/operands.glsl"
#ifndef IN1_ST
#define IN1_ST float
#define IN1_LOAD(x) (x)
#endif
#ifndef IN2_ST
#define IN2_ST float
#define IN2_LOAD(x) (x)
#endif

layout(local_size_x_id = 0) in;
#define WGS gl_WorkGroupSize.x
#define NT (WGS / TPR)
#define DPL (D / TPR)
#define VPL (DV / TPR)
#ifndef LOWEST
#define LOWEST (-3.40282347e38)  // the output dtype's lowest finite value (f32 by default)
#endif
#define NEG_INF uintBitsToFloat(0xff800000u)

#if MODE == MODE_MERGE
layout(std430, set = 0, binding = 0) readonly buffer Partial {
  float part[];
};
#else
#if MODE == MODE_COOP
// 8 16-bit values per load: codegen/attention.cpp checks every offset and stride.
#define QKV_ST uvec4
#else
#define QKV_ST IN0_ST
#endif
layout(std430, set = 0, binding = 0) readonly buffer Q {
  QKV_ST qv[];
};
layout(std430, set = 0, binding = 1) readonly buffer K {
  QKV_ST kv[];
};
layout(std430, set = 0, binding = 2) readonly buffer V {
  QKV_ST vv[];
};
#if STEP
// The new key and value rows, the norm weights, the rope's position and the cache row.
layout(std430, set = 0, binding = 3) readonly buffer KRow {
  QKV_ST krv[];
};
layout(std430, set = 0, binding = 4) readonly buffer VRow {
  QKV_ST vrv[];
};
layout(std430, set = 0, binding = 6) readonly buffer QNormW {
  QKV_ST qwv[];
};
layout(std430, set = 0, binding = 7) readonly buffer KNormW {
  QKV_ST kwv[];
};
layout(std430, set = 0, binding = 8) readonly buffer Pos {
  int posv[];
};
layout(std430, set = 0, binding = 9) readonly buffer Start {
  int startv[];
};
// The caches again, for the new row's stores: K and V stay readonly (the row written is
// never read back from memory), which keeps their loads free to be reordered.
layout(std430, set = 0, binding = 10) writeonly buffer KOut {
  QKV_ST kout[];
};
layout(std430, set = 0, binding = 11) writeonly buffer VOut {
  QKV_ST vout[];
};
#else
layout(std430, set = 0, binding = 3) readonly buffer Mask {
  IN1_ST maskv[];
};
#endif
#endif
#if !STEP
layout(std430, set = 0, binding = 4) readonly buffer Sinks {
  IN2_ST sinkv[];
};
#endif
#if SPLIT == 2
// SPLIT 2: the workgroup that finishes a row block's last chunk merges the block's chunks
// (no merge launch). The chunks' states are read back by it, so the scratch is coherent;
// Counters holds one zero per row block, which that workgroup leaves at zero again (the
// runtime zeroes it once: mlx/backend/vulkan/attention.cpp).
#if STEP
#define FINAL_BINDING 12
#else
#define FINAL_BINDING 6
#endif
layout(std430, set = 0, binding = 5) coherent buffer Out {
  float outp[];
};
layout(std430, set = 0, binding = FINAL_BINDING) writeonly buffer Final {
  OUT_ST finv[];
};
layout(std430, set = 0, binding = FINAL_BINDING + 1) buffer Counters {
  uint ctr[];
};
#elif SPLIT
layout(std430, set = 0, binding = 5) writeonly buffer Out {
  float outp[];
};
#else
layout(std430, set = 0, binding = 5) writeonly buffer Out {
  OUT_ST outv[];
};
#endif

// codegen/attention.cpp packs exactly these fields (int32; larger spans take the
// composition). Strides are elements; d is contiguous in q, k and v.
layout(push_constant) uniform Params {
#if STEP
  int q_offset;
  int k_offset;
  int v_offset;
  int kr_offset;
  int vr_offset;
  int out_offset;
  int q_sb, q_sh, q_si;
  int k_sb, k_sh, k_sj;
  int v_sb, v_sh, v_sj;
  int kr_sb, kr_sh;
  int vr_sb, vr_sh;
  int qw_offset;
  int kw_offset;
  int pos_offset;
  int start_offset;
  int cap;  // cache rows
#else
  int q_offset;
  int k_offset;
  int v_offset;
  int m_offset;
  int s_offset;
  int out_offset;
  int q_sb, q_sh, q_si;
  int k_sb, k_sh, k_sj;
  int v_sb, v_sh, v_sj;
  int m_sb, m_sh, m_si, m_sj;
#endif
  int lq;
  int lkv;
  int hkv;
  int groups;  // G: query heads per KV head
  int scale_bits;
  int splits;
  int kchunk;  // keys per split
#if SPLIT == 2
  int fin_offset;  // the output's, in Final
#endif
}
pc;

// The score of key j for query row (b, h, i), after the mask.
float masked(float s, int b, int h, int i, int j) {
#if MASK == MASK_CAUSAL
  return j <= i + pc.lkv - pc.lq ? s : LOWEST;
#elif MASK == MASK_BOOL
  uint keep = uint(maskv[uint(pc.m_offset + b * pc.m_sb + h * pc.m_sh + i * pc.m_si + j * pc.m_sj)]);
  return keep != 0u ? s : LOWEST;
#elif MASK == MASK_ADD
  return s + float(IN1_LOAD(
                 maskv[uint(pc.m_offset + b * pc.m_sb + h * pc.m_sh + i * pc.m_si + j * pc.m_sj)]));
#else
  return s;
#endif
}

float sink_of(int h) {
#if SINKS
  return float(IN2_LOAD(sinkv[uint(pc.s_offset + h)]));
#else
  return NEG_INF;
#endif
}

// The output of a row from its combined state: o / l, with the sink as one more logit.
float finish(float o, float m, float l, int h) {
#if SINKS
  float sk = sink_of(h);
  float m2 = max(m, sk);
  float c = exp(m - m2);
  return (o * c) / (l * c + exp(sk - m2));
#else
  return o / l;
#endif
}

#if MODE == MODE_ROWS || MODE == MODE_COOP
// The first of the BQ query rows of this workgroup's block. Causal blocks late in a head
// see the most keys: where blocks do not span heads, they are numbered so the longest start
// first (the GPU hands out workgroups in order, and the short ones then fill the tail).
int first_row_of_block() {
  int blk = int(gl_WorkGroupID.y);
  if (MASK == MASK_CAUSAL && pc.lq % BQ == 0) {
    int per_head = pc.lq / BQ;
    blk = (blk % pc.groups) * per_head + per_head - 1 - blk / pc.groups;
  }
  return blk * BQ;
}

// Keys the block from row r0 can see: a causal block stops after its last row's last key
// (kmax), and keys below `full` are visible to all its rows (only the tiles past it are
// masked per key). A row that sees no key at all (causal with Lq > Lkv) averages every key,
// so a block holding one reads them all.
void visible_keys(int r0, int rows, out int kmax, out int full) {
  int last_row = min(r0 + BQ, rows) - 1;
  bool one_head = r0 / pc.lq == last_row / pc.lq;
  int max_i = one_head ? last_row % pc.lq : pc.lq - 1;
  int min_i = one_head ? r0 % pc.lq : 0;
  kmax = pc.lkv;
  full = pc.lkv;
  if (MASK == MASK_CAUSAL) {
    full = clamp(min_i + 1 + pc.lkv - pc.lq, 0, pc.lkv);
    if (min_i + pc.lkv - pc.lq >= 0) {
      kmax = min(max_i + 1 + pc.lkv - pc.lq, pc.lkv);
    }
  }
}
#endif

#if MODE != MODE_MERGE && MODE != MODE_COOP
#ifndef IN0_HALF
#define IN0_HALF 0  // 0: f32 operands, 1: f16, 2: bf16
#endif
// A quad of operand elements as stored: packed 16-bit bits, or f32.
#if IN0_HALF
#define RAW4 uvec2
#define RAW_ZERO uvec2(0u)
vec4 unpack4(uvec2 w) {
#if IN0_HALF == 1 && MLX_F16_HW
  return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
#elif IN0_HALF == 1
  return vec4(f16_bits_to_f32(w.x & 0xffffu), f16_bits_to_f32(w.x >> 16),
              f16_bits_to_f32(w.y & 0xffffu), f16_bits_to_f32(w.y >> 16));
#else
  return vec4(uintBitsToFloat(w.x << 16), uintBitsToFloat(w.x & 0xffff0000u),
              uintBitsToFloat(w.y << 16), uintBitsToFloat(w.y & 0xffff0000u));
#endif
}
#define LOAD4(buf, at)                                                             \
  uvec2(uint(buf[uint(at)]) | (uint(buf[uint((at) + 1)]) << 16),                     \
        uint(buf[uint((at) + 2)]) | (uint(buf[uint((at) + 3)]) << 16))
#else
#define RAW4 vec4
#define RAW_ZERO vec4(0.0f)
vec4 unpack4(vec4 w) {
  return w;
}
#define LOAD4(buf, at) \
  vec4(buf[uint(at)], buf[uint((at) + 1)], buf[uint((at) + 2)], buf[uint((at) + 3)])
#endif
// VEC: every quad of q, k and v starts at a multiple of 4 elements (offsets and strides
// are), so it is one 8- or 16-byte load through a second view of the binding.
#ifndef VEC
#define VEC 0
#endif
#if VEC
layout(std430, set = 0, binding = 0) readonly buffer Q4 {
  RAW4 qv4[];
};
layout(std430, set = 0, binding = 1) readonly buffer K4 {
  RAW4 kv4[];
};
layout(std430, set = 0, binding = 2) readonly buffer V4 {
  RAW4 vv4[];
};
#define LOAD_Q(at) qv4[uint(at) >> 2]
#define LOAD_K(at) kv4[uint(at) >> 2]
#define LOAD_V(at) vv4[uint(at) >> 2]
#else
#define LOAD_Q(at) LOAD4(qv, at)
#define LOAD_K(at) LOAD4(kv, at)
#define LOAD_V(at) LOAD4(vv, at)
#endif
#endif

#if MODE == MODE_MERGE
// One invocation per output element: the splits' states combined in one pass with a
// running max, MU splits at a time whose loads are all issued before any is used (a split
// per iteration waited a memory round trip each: 16.4 us for 64 splits on an H200).
#define MU 16
void main() {
  int idx = int(gl_WorkGroupID.y * gl_NumWorkGroups.x * WGS + gl_GlobalInvocationID.x);
  int rows = pc.hkv * pc.groups * pc.lq * pc.q_sb;  // q_sb carries the batch count here
  if (idx >= rows * DV) {
    return;
  }
  int row = idx / DV;
  int d = idx - row * DV;
  int h = (row / pc.lq) % (pc.hkv * pc.groups);
  int base = pc.q_offset + row * pc.splits * (DV + 2);  // q_offset: the scratch
  float m = NEG_INF;
  float l = 0.0f;
  float o = 0.0f;
  for (int s0 = 0; s0 < pc.splits; s0 += MU) {
    float ms[MU], ls[MU], os[MU];
    [[unroll]] for (int u = 0; u < MU; ++u) {
      int at = base + (s0 + u) * (DV + 2);
      bool live = s0 + u < pc.splits;
      ms[u] = live ? part[uint(at)] : NEG_INF;
      ls[u] = live ? part[uint(at + 1)] : 0.0f;
      os[u] = live ? part[uint(at + 2 + d)] : 0.0f;
    }
    float mc = m;
    [[unroll]] for (int u = 0; u < MU; ++u) {
      mc = max(mc, ms[u]);
    }
    if (mc == NEG_INF) {
      continue;  // no split has seen a key yet
    }
    float c = exp(m - mc);
    l *= c;
    o *= c;
    [[unroll]] for (int u = 0; u < MU; ++u) {
      float w = exp(ms[u] - mc);
      l += ls[u] * w;
      o += os[u] * w;
    }
    m = mc;
  }
  outv[uint(pc.out_offset + idx)] = OUT_STORE(finish(o, m, l, h));
}

#elif MODE == MODE_VECTOR
// KPS keys per team and step: their K and V rows are all loaded before any is used, so a
// workgroup has NT * KPS rows in flight, and the running max is rescaled once per step.
// Measured on an H200 (head dim 128, 32-lane teams, KV 131072): 1 key 0.17 of the
// bandwidth, 4 keys 0.31, 8 keys 0.55. KPS * DPL (a lane's K values in flight) stays at
// most 32 registers; without subgroups the team sums' shared slots (WGS * RB * KPS floats)
// keep it at 2.
// A power of two, so that the scores of a step sum as one transposed block (below).
// AHEAD (the transposed sums, below, with quads): each step's loads are issued during the
// step before's arithmetic. Not in a decode step of 8 rows: its prologue's registers and
// the loads ahead left 16 bytes in local memory on an H200 (mlx_vulkan_tests "*local
// memory*").
#define AHEAD (SUBGROUP && TPR >= RB && VEC && (!STEP || RB <= 4))
#ifndef KPS
#if !SUBGROUP
#define KPS 2
#elif 32 / DPL >= 8 && AHEAD
// With the next step's K and V in flight (AHEAD), 4 keys a step: on an H200 KV 131072 at
// 32/8 heads 166 -> 153 us, where 8 keys ahead took 177 registers and KV 8192 19.6 -> 22.0.
#define KPS 4
#elif 32 / DPL >= 8
#define KPS 8
#elif 32 / DPL >= 4
#define KPS 4
#elif 32 / DPL >= 2
#define KPS 2
#else
#define KPS 1
#endif
#endif
#define MR RB
#define TEAM_VALUES (RB * KPS)
#include "include/teams.glsl"

// TRANSPOSED: a step's RB x KPS team sums take about TEAM_VALUES shuffles and leave each lane
// the scores of a few keys of one row (include/team_transpose.glsl), so the mask, the row
// max and the exponentials run once per score rather than in all TPR lanes. The weights and
// each row's rescale reach the lanes' V updates through shared memory (two slots, so a step
// writes while no lane still reads the slot of the step before). A lane keeps the running
// max of its row and the running sum of its own keys' weights; both become every row's
// (m, l) in every lane after the loop, the state the rest of the kernel expects.
// The decode step (STEP) takes them too, with AHEAD: on an H200 an 8B-shaped step (4 rows)
// went 18.5 -> 14.2 us at 4096 keys, a 0.6B-shaped one (2 rows) 12.6 -> 12.0 us
// (docs/attention.md, "The decode step: transposed sums, loads ahead, a smaller merge batch").
#define TRANSPOSED (SUBGROUP && TPR >= RB)
#if TRANSPOSED
#include "include/team_transpose.glsl"
shared float step_p[2 * NT * TEAM_VALUES];
shared float step_c[2 * NT * RB];
#endif

shared float comb_m[NT];
shared float comb_l[NT];
#if STEP
// Also the step's query rows before the keys (RB * D values).
#define COMB_SIZE (NT * DV > RB * D ? NT * DV : RB * D)
#else
#define COMB_SIZE (NT * DV)
#endif
shared float comb_acc[COMB_SIZE];
#if SPLIT == 2
// MOPT outputs an invocation (8 teams of TPR lanes), MC splits a batch
// (codegen::merge_splits_per_batch: at most 64 of an invocation's values in flight), their
// (m, l) by row in comb_acc (free once the teams have combined: 2 RB MC <= NT DV).
#define MOPT ((RB * DV + TPR * 8 - 1) / (TPR * 8))
#define merge_m(i) comb_acc[i]
#define merge_l(i) comb_acc[RB * MC + (i)]
shared bool merge_here;
#endif

#if STEP
#include "include/sdpa_step.glsl"
#endif

float q_reg[RB][DPL];
float run_m[RB];
float run_l[RB];
float acc[RB][VPL];

void main() {
  uint t = gl_LocalInvocationID.x;
  uint team = team_index();
  uint lane = team_lane();
  int bk = int(gl_WorkGroupID.x);
  int b = bk / pc.hkv;
  int kvh = bk - b * pc.hkv;
  int rows = pc.groups * pc.lq;
  int r0 = int(gl_WorkGroupID.y) * RB;
  int split = int(gl_WorkGroupID.z);
  int kbeg = split * pc.kchunk;
  int kend = min(pc.lkv, kbeg + pc.kchunk);
  float scale = uintBitsToFloat(uint(pc.scale_bits));
#if STEP
  // The new row goes to cache row wrow; the chunk that holds it attends it from shared
  // memory (no other workgroup reads that row). With the row past the attended keys, the
  // first chunk's workgroups write it.
  int wrow = clamp(startv[uint(pc.start_offset)], 0, pc.cap - 1);
  bool fresh_here = wrow >= kbeg && wrow < kend;
  bool writer = gl_WorkGroupID.y == 0u && (fresh_here || (wrow >= pc.lkv && split == 0));
  step_rows(b, kvh, r0, rows, fresh_here || writer, writer, wrow);
#endif

  [[unroll]] for (uint r = 0; r < RB; ++r) {
    int rr = r0 + int(r);
    int g = rr / pc.lq;
    int i = rr - g * pc.lq;
    int h = kvh * pc.groups + g;
    [[unroll]] for (uint d = 0; d < DPL; ++d) {
#if STEP
      q_reg[r][d] = rr < rows ? scale * comb_acc[r * D + lane * DPL + d] : 0.0f;
#else
      q_reg[r][d] = rr < rows ? scale * float(IN0_LOAD(qv[uint(pc.q_offset + b * pc.q_sb + h * pc.q_sh +
                                                               i * pc.q_si + int(lane * DPL + d))]))
                              : 0.0f;
#endif
    }
    run_m[r] = NEG_INF;
    run_l[r] = 0.0f;
    [[unroll]] for (uint d = 0; d < VPL; ++d) {
      acc[r][d] = 0.0f;
    }
  }

#if STEP
  barrier();  // comb_acc is the teams' again
#endif

  // The same number of steps for every team: team_sum may hold barriers. Key u of a step
  // for team t is kbeg + (step * KPS + u) * NT + t, so the teams read adjacent rows.
  int steps = (kend - kbeg + int(NT * KPS) - 1) / int(NT * KPS);
#if TRANSPOSED
  // The row and first key of the scores this lane ends a step with.
  uint first = transposed_first(lane);
  uint own_r = first / KPS;
  uint own_u = first % KPS;
  int own_rr = r0 + int(own_r);
  int own_g = own_rr / pc.lq;
  int own_i = own_rr - own_g * pc.lq;
  int own_h = kvh * pc.groups + own_g;
  float m_own = NEG_INF;  // the running max of row own_r
  float l_own = 0.0f;     // the running sum of this lane's keys' weights
#endif
#if AHEAD
  // The K and V quads of step s as stored (a lane's KPS keys), requested before they are used.
  // Written out by the preprocessor, not a function: as one function for the loads before
  // and in the loop, NVIDIA's compiler made the kernel slower (H200: KV 131072 151 -> 185 us).
#if STEP
#define AHEAD_OK(j) ((j) < kend && !(fresh_here && (j) == wrow))  // the fresh row: after the loop
#else
#define AHEAD_OK(j) ((j) < kend)
#endif
#define LOAD_AHEAD(kq, vq, s)                                                                     \
  [[unroll]] for (uint u = 0; u < KPS; ++u) {                                                   \
    int j = kbeg + ((s) * int(KPS) + int(u)) * int(NT) + int(team);                             \
    bool ok = AHEAD_OK(j);                                                                      \
    int kat = pc.k_offset + b * pc.k_sb + kvh * pc.k_sh + j * pc.k_sj + int(lane * DPL);        \
    int vat = pc.v_offset + b * pc.v_sb + kvh * pc.v_sh + j * pc.v_sj + int(lane * VPL);        \
    [[unroll]] for (uint d = 0; d < DPL / 4; ++d) {                                             \
      kq[u][d] = ok ? LOAD_K(kat + int(4 * d)) : RAW_ZERO;                                       \
    }                                                                                           \
    [[unroll]] for (uint d = 0; d < VPL / 4; ++d) {                                             \
      vq[u][d] = ok ? LOAD_V(vat + int(4 * d)) : RAW_ZERO;                                       \
    }                                                                                           \
  }
  RAW4 k_next[KPS][DPL / 4];
  RAW4 v_next[KPS][VPL / 4];
  LOAD_AHEAD(k_next, v_next, 0)
#endif
  for (int step = 0; step < steps; ++step) {
    int js[KPS];
    bool valid[KPS];
    float kr[KPS][DPL];
    float vr[KPS][VPL];
#if AHEAD
    [[unroll]] for (uint u = 0; u < KPS; ++u) {
      [[unroll]] for (uint d = 0; d < DPL / 4; ++d) {
        vec4 w = unpack4(k_next[u][d]);
        kr[u][4 * d] = w.x;
        kr[u][4 * d + 1] = w.y;
        kr[u][4 * d + 2] = w.z;
        kr[u][4 * d + 3] = w.w;
      }
      [[unroll]] for (uint d = 0; d < VPL / 4; ++d) {
        vec4 w = unpack4(v_next[u][d]);
        vr[u][4 * d] = w.x;
        vr[u][4 * d + 1] = w.y;
        vr[u][4 * d + 2] = w.z;
        vr[u][4 * d + 3] = w.w;
      }
    }
    // Two steps ahead (a second set of quads) was slower: KV 8192 32/8 18.4 -> 19.9 us,
    // KV 131072 151 -> 158 on an H200 (docs/attention.md).
    if (step + 1 < steps) {
      LOAD_AHEAD(k_next, v_next, step + 1)
    }
#else
    [[unroll]] for (uint u = 0; u < KPS; ++u) {
      js[u] = kbeg + (step * int(KPS) + int(u)) * int(NT) + int(team);
      valid[u] = js[u] < kend;
#if STEP
      valid[u] = valid[u] && !(fresh_here && js[u] == wrow);  // taken after the loop
#endif
      int j = js[u];
#if VEC
      // Quads: one 8- or 16-byte load for four elements (codegen checks the alignment).
      int kat = pc.k_offset + b * pc.k_sb + kvh * pc.k_sh + j * pc.k_sj + int(lane * DPL);
      int vat = pc.v_offset + b * pc.v_sb + kvh * pc.v_sh + j * pc.v_sj + int(lane * VPL);
      [[unroll]] for (uint d = 0; d < DPL / 4; ++d) {
        vec4 w = valid[u] ? unpack4(LOAD_K(kat + int(4 * d))) : vec4(0.0f);
        kr[u][4 * d] = w.x;
        kr[u][4 * d + 1] = w.y;
        kr[u][4 * d + 2] = w.z;
        kr[u][4 * d + 3] = w.w;
      }
      [[unroll]] for (uint d = 0; d < VPL / 4; ++d) {
        vec4 w = valid[u] ? unpack4(LOAD_V(vat + int(4 * d))) : vec4(0.0f);
        vr[u][4 * d] = w.x;
        vr[u][4 * d + 1] = w.y;
        vr[u][4 * d + 2] = w.z;
        vr[u][4 * d + 3] = w.w;
      }
#else
      [[unroll]] for (uint d = 0; d < DPL; ++d) {
        kr[u][d] = valid[u] ? float(IN0_LOAD(kv[uint(pc.k_offset + b * pc.k_sb + kvh * pc.k_sh +
                                                     j * pc.k_sj + int(lane * DPL + d))]))
                            : 0.0f;
      }
      [[unroll]] for (uint d = 0; d < VPL; ++d) {
        vr[u][d] = valid[u] ? float(IN0_LOAD(vv[uint(pc.v_offset + b * pc.v_sb + kvh * pc.v_sh +
                                                     j * pc.v_sj + int(lane * VPL + d))]))
                            : 0.0f;
      }
#endif
    }
#endif
#if TRANSPOSED
    float sv[TEAM_VALUES];
    [[unroll]] for (uint r = 0; r < RB; ++r) {
      [[unroll]] for (uint u = 0; u < KPS; ++u) {
        float partial = 0.0f;
        [[unroll]] for (uint d = 0; d < DPL; ++d) {
          partial = fma(q_reg[r][d], kr[u][d], partial);
        }
        sv[r * KPS + u] = partial;
      }
    }
    team_sum_transposed(sv, lane);
    float m_new = m_own;
    [[unroll]] for (uint e = 0; e < TT_E; ++e) {
      int j = kbeg + (step * int(KPS) + int(own_u + e)) * int(NT) + int(team);
      bool ok = own_rr < rows && j < kend;
#if STEP
      ok = ok && !(fresh_here && j == wrow);  // taken after the loop
#endif
      // Keys past the chunk weigh nothing (-inf); masked keys score as the mask says.
      sv[e] = ok ? masked(sv[e], b, own_h, own_i, j) : NEG_INF;
      m_new = max(m_new, sv[e]);
    }
    for (uint o = TT_R; o < TPR / RB; o *= 2u) {
      m_new = max(m_new, subgroupShuffleXor(m_new, o));
    }
    // Only -inf so far (an additive mask): nothing to weigh yet, the state stays.
    bool none = m_new == NEG_INF;
    float c_own = none ? 1.0f : exp(m_own - m_new);
    l_own *= c_own;
    uint slot = uint(step & 1) * NT + team;
    bool writes = lane % TT_R == 0u;
    [[unroll]] for (uint e = 0; e < TT_E; ++e) {
      float p = none ? 0.0f : exp(sv[e] - m_new);
      l_own += p;
      if (writes) {
        step_p[slot * TEAM_VALUES + first + e] = p;
      }
    }
    if (writes && own_u == 0u) {
      step_c[slot * RB + own_r] = c_own;
    }
    m_own = m_new;
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    [[unroll]] for (uint r = 0; r < RB; ++r) {
      float c = step_c[slot * RB + r];
      [[unroll]] for (uint d = 0; d < VPL; ++d) {
        acc[r][d] *= c;
      }
      [[unroll]] for (uint u = 0; u < KPS; ++u) {
        float p = step_p[slot * TEAM_VALUES + r * KPS + u];
        [[unroll]] for (uint d = 0; d < VPL; ++d) {
          acc[r][d] = fma(p, vr[u][d], acc[r][d]);
        }
      }
    }
#else
    [[unroll]] for (uint r = 0; r < RB; ++r) {
      float sc[KPS];
      [[unroll]] for (uint u = 0; u < KPS; ++u) {
        float partial = 0.0f;
        [[unroll]] for (uint d = 0; d < DPL; ++d) {
          partial = fma(q_reg[r][d], kr[u][d], partial);
        }
        sc[u] = team_sum(partial, r * KPS + u);
      }
      int rr = r0 + int(r);
      if (rr >= rows) {
        continue;
      }
      int g = rr / pc.lq;
      int i = rr - g * pc.lq;
      // Keys past the chunk weigh nothing (-inf); masked keys score as the mask says.
      float m_new = run_m[r];
      [[unroll]] for (uint u = 0; u < KPS; ++u) {
        sc[u] = valid[u] ? masked(sc[u], b, kvh * pc.groups + g, i, js[u]) : NEG_INF;
        m_new = max(m_new, sc[u]);
      }
      if (m_new == NEG_INF) {
        continue;  // only -inf so far (an additive mask): nothing to weigh yet
      }
      float c = exp(run_m[r] - m_new);
      run_l[r] *= c;
      [[unroll]] for (uint d = 0; d < VPL; ++d) {
        acc[r][d] *= c;
      }
      [[unroll]] for (uint u = 0; u < KPS; ++u) {
        float p = exp(sc[u] - m_new);
        run_l[r] += p;
        [[unroll]] for (uint d = 0; d < VPL; ++d) {
          acc[r][d] = fma(p, vr[u][d], acc[r][d]);
        }
      }
      run_m[r] = m_new;
    }
#endif
  }
#if TRANSPOSED
  // Each row's weight sum over the lanes holding its keys, then every row's (m, l) in every
  // lane (the first lane of row r's block holds both).
  for (uint o = TT_R; o < TPR / RB; o *= 2u) {
    l_own += subgroupShuffleXor(l_own, o);
  }
  [[unroll]] for (uint r = 0; r < RB; ++r) {
    uint src = gl_SubgroupInvocationID - lane + r * (TPR / RB);
    run_m[r] = subgroupShuffle(m_own, src);
    run_l[r] = subgroupShuffle(l_own, src);
  }
#endif

#if STEP
  // The new row, from shared memory: every team scores it (team_sum is collective), team 0
  // weighs it.
  if (fresh_here) {
    [[unroll]] for (uint r = 0; r < RB; ++r) {
      float partial = 0.0f;
      [[unroll]] for (uint d = 0; d < DPL; ++d) {
        partial = fma(q_reg[r][d], fresh_k[lane * DPL + d], partial);
      }
      float sc = team_sum(partial, r * KPS);
      if (team != 0u || r0 + int(r) >= rows) {
        continue;
      }
      float m_new = max(run_m[r], sc);
      float c = exp(run_m[r] - m_new);
      float p = exp(sc - m_new);
      run_l[r] = run_l[r] * c + p;
      [[unroll]] for (uint d = 0; d < VPL; ++d) {
        acc[r][d] = fma(p, fresh_v[lane * VPL + d], acc[r][d] * c);
      }
      run_m[r] = m_new;
    }
  }
#endif

  // Combine the teams, row by row.
  [[unroll]] for (uint r = 0; r < RB; ++r) {
    if (lane == 0) {
      comb_m[team] = run_m[r];
      comb_l[team] = run_l[r];
    }
    [[unroll]] for (uint d = 0; d < VPL; ++d) {
      comb_acc[team * DV + lane * VPL + d] = acc[r][d];
    }
    barrier();
    int rr = r0 + int(r);
    if (rr < rows) {
      int g = rr / pc.lq;
      int i = rr - g * pc.lq;
      int h = kvh * pc.groups + g;
      int row = (b * pc.hkv * pc.groups + h) * pc.lq + i;
      float m = NEG_INF;
      for (uint q = 0; q < NT; ++q) {
        m = max(m, comb_m[q]);
      }
      for (uint d = t; d < DV; d += WGS) {
        float l = 0.0f;
        float o = 0.0f;
        if (m != NEG_INF) {
          for (uint q = 0; q < NT; ++q) {
            float w = exp(comb_m[q] - m);
            l += comb_l[q] * w;
            o += comb_acc[q * DV + d] * w;
          }
        }
#if SPLIT
        int at = pc.out_offset + (row * pc.splits + split) * (DV + 2);
        if (d == 0) {
          outp[uint(at)] = m;
          outp[uint(at + 1)] = l;
        }
        outp[uint(at + 2 + int(d))] = o;
#else
        outv[uint(pc.out_offset + row * DV + int(d))] = OUT_STORE(finish(o, m, l, h));
#endif
      }
    }
    barrier();
  }
#if SPLIT == 2
#include "include/sdpa_split_merge.glsl"
#endif
}

#elif MODE == MODE_ROWS
#include "include/sdpa_rows.glsl"
#else
#include "include/sdpa_coop.glsl"  // MODE_COOP
#endif
