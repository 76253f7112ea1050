// The "sdpa" family (codegen/attention.h): variant choice, keys, rendering and launch
// packing for templates/sdpa.glsl.
#include "codegen/attention.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>

#include "codegen/dtypes.h"
#include "codegen/fast.h"
#include "codegen/internal.h"

namespace mlx::core::vulkan::codegen {

namespace {

constexpr uint32_t kFields = 26;      // int32 push constants (sdpa.glsl's Params)
constexpr uint32_t kStepFields = 31;  // the same with STEP 1
constexpr int64_t kTeams = 8;         // NT in the vector mode
constexpr int64_t kBusyGroups = 256;  // workgroups that keep a large GPU busy
constexpr int64_t kStepKeys = 64;     // keys a vector-mode workgroup takes per step, at most
constexpr int64_t kMaxGroups = 65535;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

uint32_t pow2_at_least(int64_t v) {
  uint32_t p = 1;
  while (p < v) {
    p *= 2;
  }
  return p;
}

int64_t float_bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return static_cast<int64_t>(b);
}

int64_t rows(const AttentionGeometry& g) {
  return g.groups * g.lq;
}

// Lanes per team in the vector mode: the widest power of two (up to the subgroup with
// shuffles, else 32) that divides both head dims.
uint32_t vector_tpr(const AttentionGeometry& g, const DeviceCaps& caps) {
  uint32_t tpr = caps.subgroup_shuffle ? std::min<uint32_t>(32, caps.subgroup_size) : 32;
  while (tpr > 1 &&
         (g.d % tpr != 0 || g.dv % tpr != 0 || tpr * kTeams > caps.max_workgroup_invocations)) {
    tpr /= 2;
  }
  return tpr;
}

uint32_t vector_rows(const AttentionGeometry& g) {
  return pow2_at_least(std::min<int64_t>(8, rows(g)));
}

// The rows mode's tiles (sdpa.glsl MODE_ROWS): BQ query rows and BK keys per step; each
// invocation owns 4 rows x TK keys of the scores and 4 rows x ceil(dv / 4 / lanes) quads
// of the output, lanes = BK / TK invocations per row group, (BQ / 4) * lanes invocations.
// qh / kvh: Q / K and V staged as 16-bit bits (16-bit dtypes only).
struct RowsTile {
  int64_t bq, bk, tk;
  bool qh, kvh;
};

int64_t rows_lanes(const RowsTile& t) {
  return t.bk / t.tk;
}

int64_t rows_invocations(const RowsTile& t) {
  return t.bq / 4 * rows_lanes(t);
}

// Output quads per invocation and row.
int64_t rows_out_quads(const RowsTile& t, int64_t dv) {
  return ceil_div(dv / 4, rows_lanes(t));
}

// Mirrors the template's shared arrays: Q, K/V (rows padded by one quad), P, and the
// reduction scratch without subgroups.
int64_t rows_shared_bytes(const RowsTile& t, int64_t d, int64_t dv, bool sg) {
  int64_t dm = std::max(d, dv);
  return t.bq * (d / 4 + 1) * (t.qh ? 8 : 16) + t.bk * (dm / 4 + 1) * (t.kvh ? 8 : 16) +
         t.bk * (t.bq / 4 + 1) * 16 + (sg ? 0 : t.bq * rows_lanes(t) * 4);
}

// Whether the row reductions use subgroup shuffles: a row group's lanes must be one
// cluster of a subgroup.
bool rows_subgroup(const RowsTile& t, const DeviceCaps& caps) {
  return caps.subgroup_shuffle && rows_lanes(t) <= caps.subgroup_size &&
         rows_invocations(t) % caps.subgroup_size == 0;
}

// The first tile that fits the device. Why these: with 4 x 4 score blocks and 4-row output
// blocks an invocation does 16 (QK) or 4 x 4 (PV) FMAs per 8 (or 5) 16-byte shared loads,
// few enough that a big GPU's shared memory keeps up with its FMA units; 64 rows x 32 keys
// on 128 invocations reuse each K/V row 64 times and keep ~150 registers per invocation
// (64 output accumulators), so ~3 workgroups share an SM. f32 tiles avoid a conversion per
// read; when they do not fit (NVIDIA's 48 KiB: d = 128 16-bit needs 59 KiB), Q is kept as
// 16-bit bits (one conversion per 4 FMAs of QK), then K/V too. Smaller row blocks serve
// f32 and d = 256 (at most 64 accumulators: dv <= 16 x lanes); the last tile fits 16 KiB,
// Vulkan's minimum, for any head dim.
RowsTile rows_tile(const std::string& dtype, const AttentionGeometry& g, const DeviceCaps& caps) {
  struct Shape {
    int64_t bq, tk, lanes;
  };
  constexpr Shape kShapes[] = {{64, 4, 8}, {32, 4, 8}, {32, 2, 16}, {16, 1, 16}};
  bool half = dtype_info(dtype, "sdpa").bits == 16;
  std::vector<std::pair<bool, bool>> storage{{false, false}};
  if (half) {
    storage.push_back({true, false});
    storage.push_back({true, true});
  }
  for (const Shape& s : kShapes) {
    for (auto [qh, kvh] : storage) {
      RowsTile t{s.bq, s.tk * s.lanes, s.tk, qh, kvh};
      if (rows_out_quads(t, g.dv) <= 4 &&
          rows_invocations(t) <= static_cast<int64_t>(caps.max_workgroup_invocations) &&
          rows_shared_bytes(t, g.d, g.dv, rows_subgroup(t, caps)) <=
              static_cast<int64_t>(caps.max_shared_memory)) {
        return t;
      }
    }
  }
  return RowsTile{4, 8, 1, half, half};
}

// The coop mode (sdpa.glsl MODE_COOP): 64 query rows on 4 subgroups of 32 lanes, 32 keys
// per tile. Mirrors the template's shared arrays (templates/include/sdpa_coop.glsl): the
// Q tile, later K and V side by side (two buffers with the register softmax); S (without
// it), P, a factor per row and the row-index matrix.
constexpr int64_t kCoopRows = 64, kCoopKeys = 32;
int64_t coop_shared_bytes(int64_t d, int64_t dv, bool reg_softmax, int64_t bq = kCoopRows) {
  int64_t kld = std::max(d, dv) / 8 + 1;
  // The softmax in registers stages no S but keeps two K/V buffers, which hold Q first and
  // stage the output at the end (at least S's size: D = DV = 16).
  int64_t s_bytes = 4 * bq * (kCoopKeys + 4);
  int64_t tiles_and_s = reg_softmax ? std::max(16 * std::max(4 * kCoopKeys, bq) * kld, s_bytes)
                                    : 16 * std::max(bq, 2 * kCoopKeys) * kld + s_bytes;
  return tiles_and_s + 16 * bq * (kCoopKeys / 8 + 1) + 4 * bq + 4 * 256;
}

// The coop mode's query rows a workgroup: 128 (8 subgroups sharing each K/V tile) with the
// register softmax where its arrays fit, else 64 (4 subgroups). Each K/V tile then serves
// twice the rows for the same loads and stores (H200, causal f16 L = 4096 hd128 32/8:
// 126.5 -> 194.4 TFLOPS; docs/attention.md). MLX_VK_SDPA_COOP_ROWS=64 keeps 64 (measuring).
int64_t coop_rows(int64_t d, int64_t dv, const DeviceCaps& caps) {
  static const bool wide = tuning_env("MLX_VK_SDPA_COOP_ROWS", 64, 128, 128) == 128;
  if (wide && caps.coop_acc_nv_layout && caps.max_workgroup_invocations >= 8 * 32 &&
      coop_shared_bytes(d, dv, true, 128) <= static_cast<int64_t>(caps.max_shared_memory)) {
    return 128;
  }
  return kCoopRows;
}

// Whether every offset and stride of q, k and v is a multiple of n elements (strides of
// dims of size 1 never move).
bool strides_multiple_of(const AttentionGeometry& g, int64_t n) {
  auto ok = [n](int64_t size, int64_t stride) { return size == 1 || stride % n == 0; };
  int64_t heads = g.hkv * g.groups;
  return g.q_offset % n == 0 && g.k_offset % n == 0 && g.v_offset % n == 0 && ok(g.batch, g.q_sb) &&
         ok(heads, g.q_sh) && ok(g.lq, g.q_si) && ok(g.batch, g.k_sb) && ok(g.hkv, g.k_sh) &&
         ok(g.lkv, g.k_sj) && ok(g.batch, g.v_sb) && ok(g.hkv, g.v_sh) && ok(g.lkv, g.v_sj);
}

// The cooperative-matrix path for a prefill ("nv", "khr"), or "" for the rows mode: f16 (bf16
// on KHR) with head dims that are multiples of 16 up to 128, 32-lane subgroups with
// shuffles, 16-byte aligned rows, and the tiles within the device's shared memory. KHR is
// preferred where the device has it, as for the GEMM (docs/matmul.md).
std::string coop_path(const std::string& dtype, const AttentionGeometry& g,
                      const DeviceCaps& caps) {
  if (g.d % 16 != 0 || g.dv % 16 != 0 || g.d > 128 || g.dv > 128 || caps.subgroup_size != 32 ||
      !caps.subgroup_shuffle || caps.max_workgroup_invocations < 4 * 32 ||
      coop_shared_bytes(g.d, g.dv, caps.coop_acc_nv_layout) >
          static_cast<int64_t>(caps.max_shared_memory) ||
      !strides_multiple_of(g, 8)) {
    return "";
  }
  if (dtype == "bf16") {
    return caps.cooperative_matrix_bf16 ? "khr" : "";
  }
  if (dtype == "f16") {
    return caps.cooperative_matrix_khr ? "khr" : caps.cooperative_matrix ? "nv" : "";
  }
  return "";
}

// Whether every 4-element quad of q, k and v starts at a multiple of 4 elements, so the
// rows mode loads each as one vector.
bool rows_vector_loads(const AttentionGeometry& g) {
  return strides_multiple_of(g, 4);
}

int64_t span(int64_t off, std::initializer_list<std::pair<int64_t, int64_t>> dims) {
  int64_t hi = off;
  for (auto [n, s] : dims) {
    hi += (n - 1) * s;
  }
  return hi;
}

std::string hex_bits(float v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08x", static_cast<uint32_t>(float_bits(v)));
  return buf;
}

// A key's f32 given as hex bits, as a GLSL uint literal.
std::string bits_literal(const KernelKey& key, const char* name, const std::string& where) {
  const std::string& v = key_param(key, name, where);
  if (v.size() != 8 || v.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw std::invalid_argument("[render] " + where + ": " + name +
                                " must be 8 lowercase hex digits (f32 bits).");
  }
  return "0x" + v + "u";
}

// Keys a team takes per step in the vector mode (sdpa.glsl KPS): a power of two with at
// most 32 of a lane's K values in flight, up to 8; 2 without shuffles.
int64_t vector_keys_per_step(const AttentionGeometry& g, uint32_t tpr, bool sg) {
  int64_t kps = 8;
  while (sg && kps > 1 && kps * (g.d / tpr) > 32) {
    kps /= 2;
  }
  return sg ? kps : 2;
}

// Floats of the team sums (include/teams.glsl): one slot with shuffles, else WGS x RB x
// KPS.
int64_t team_sum_floats(const AttentionGeometry& g, uint32_t tpr, uint32_t rb, bool sg) {
  return sg ? 1 : int64_t{tpr} * kTeams * rb * vector_keys_per_step(g, tpr, sg);
}

// Floats of the transposed sums' two slots of weights and rescale factors (with shuffles,
// TPR >= RB; KPS counted at its largest, without AHEAD).
int64_t transposed_floats(const AttentionGeometry& g, uint32_t tpr, uint32_t rb, bool sg) {
  bool transposed = sg && tpr >= rb;
  return transposed ? 2 * kTeams * rb * vector_keys_per_step(g, tpr, sg) + 2 * kTeams * rb : 0;
}

// Shared memory of the step kernel's vector mode (sdpa.glsl): the teams' states (or the
// query rows), the new rows, the norm statistics, the transposed sums' slots and, without
// shuffles, the team sums.
int64_t step_shared_bytes(const AttentionGeometry& g, uint32_t tpr, uint32_t rb, bool sg) {
  return 4 * (2 * kTeams + std::max(kTeams * g.dv, int64_t{rb} * g.d) + g.d + g.dv + rb + 1 +
              team_sum_floats(g, tpr, rb, sg) + transposed_floats(g, tpr, rb, sg) +
              1 /* split=2's flag */);
}

// Shared memory of the plain vector mode (sdpa.glsl, no STEP), its arrays mirrored: the
// teams' (m, l) and outputs, the transposed sums' slots, and the team sums without shuffles
// (include/teams.glsl).
int64_t vector_shared_bytes(const AttentionGeometry& g, uint32_t tpr, uint32_t rb, bool sg) {
  return 4 * (2 * kTeams + kTeams * g.dv + team_sum_floats(g, tpr, rb, sg) + 1 /* split=2 */ +
              transposed_floats(g, tpr, rb, sg));
}

const std::string& mask_param(const KernelKey& key, const std::string& where) {
  const std::string& m = key_param(key, "mask", where);
  if (m != "none" && m != "causal" && m != "bool" && m != "add") {
    throw std::invalid_argument("[render] " + where + ": mask must be none, causal, bool or add.");
  }
  return m;
}

// A launch that merges in its last workgroups counts one row block per counter.
void check_merge_slots(const KernelKey& key, int64_t row_blocks, const std::string& where) {
  if (key_param(key, "split", where) == "2" && row_blocks > kMergeSlots * 8) {
    throw std::invalid_argument("[launch] " + where +
                                ": more row blocks than the merge's counters (split=2).");
  }
}

void add_operand(const std::string& prefix, const std::string& name, const std::string& where,
                 std::vector<const DtypeInfo*>& dts, std::vector<std::string>& defines) {
  const DtypeInfo& dt = dtype_info(name, where);
  dts.push_back(&dt);
  add_input_defines(prefix, dt, defines);
}

}  // namespace

bool attention_supported(const AttentionGeometry& g) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max() / 2;
  bool dims = g.d % 8 == 0 && g.dv % 8 == 0 && g.d >= 8 && g.dv >= 8 && g.d <= 256 && g.dv <= 256;
  int64_t heads = g.hkv * g.groups;
  int64_t reach = std::max(
      {span(g.q_offset, {{g.batch, g.q_sb}, {heads, g.q_sh}, {g.lq, g.q_si}, {g.d, 1}}),
       span(g.k_offset, {{g.batch, g.k_sb}, {g.hkv, g.k_sh}, {g.lkv, g.k_sj}, {g.d, 1}}),
       span(g.v_offset, {{g.batch, g.v_sb}, {g.hkv, g.v_sh}, {g.lkv, g.v_sj}, {g.dv, 1}}),
       span(g.m_offset, {{g.batch, g.m_sb}, {heads, g.m_sh}, {g.lq, g.m_si}, {g.lkv, g.m_sj}}),
       g.out_offset +
           g.batch * heads * g.lq * g.dv * (attention_splits(g) > 1 ? attention_splits(g) + 1 : 1) +
           2 * g.batch * heads * g.lq * attention_splits(g)});
  return dims && reach < kMax && g.batch * g.hkv <= kMaxGroups && g.lkv >= 1 && g.lq >= 1;
}

bool attention_vector(const AttentionGeometry& g) {
  return g.lq <= 8;
}

int64_t attention_splits(const AttentionGeometry& g) {
  if (!attention_vector(g)) {
    return 1;
  }
  // MLX_VK_SDPA_BUSY, _WHOLE_STEPS and _SPLIT_STEPS move the rule's numbers (measuring).
  static const int64_t busy = tuning_env("MLX_VK_SDPA_BUSY", 8, 4096, kBusyGroups);
  static const int64_t whole = tuning_env("MLX_VK_SDPA_WHOLE_STEPS", 1, 1024, 4);
  static const int64_t min_per = tuning_env("MLX_VK_SDPA_SPLIT_STEPS", 1, 1024, 1);
  int64_t base = g.batch * g.hkv * ceil_div(rows(g), vector_rows(g));
  if (base >= busy) {
    return 1;
  }
  // A workgroup takes at most 64 keys a step (NT = 8 teams x KPS <= 8 keys; 64 exactly at
  // head dim 128 on 32-lane teams). Counted in such steps, the keys go to about kBusyGroups
  // workgroups (up to ~1.5x, as `per` is rounded to the nearest), at most `per` steps each:
  // 4224 keys take 33 splits of 128 keys (2 steps), not 32 of 132 keys of which every one
  // takes a third step of 4 keys. The launch's chunk stays ceil(Lkv / splits) keys. A cache
  // of at most 4 steps is not split: the merge launch costs about what 3 steps do. Measured
  // on an H200: docs/attention.md, "The split and the merge".
  int64_t steps = ceil_div(g.lkv, kStepKeys);
  if (steps <= whole) {
    return 1;
  }
  int64_t target = std::min(ceil_div(busy, base), steps);
  int64_t per = std::max<int64_t>(min_per, (steps + target / 2) / target);
  return ceil_div(steps, per);
}

bool attention_merge_fits(const AttentionGeometry& g) {
  // Row blocks counted at vector_rows; a workgroup with fewer rows (shared memory) makes
  // at most 8x as many, which the counters' buffer holds (kMergeSlots * 8).
  return attention_splits(g) > 1 &&
         g.batch * g.hkv * ceil_div(rows(g), vector_rows(g)) <= kMergeSlots;
}

int64_t merge_splits_per_batch(int64_t rb, int64_t dv, int64_t tpr, bool step) {
  int64_t outputs = ceil_div(rb * dv, tpr * kTeams);  // MOPT
  // 64 values in flight, at most 32 splits: 64 splits of one output each measured slower
  // than the merge launch (H100, Qwen3-0.6B's decode at 4096 keys: 1.29 against 1.20 ms a
  // token), 32 faster (docs/attention.md). 32 in a decode step: Qwen3-8B's (2 outputs an
  // invocation, 9 splits) took 20.4 us with 32 splits a batch, 15.4 with 16, and 10.8 + 5.3
  // with the merge launch (H200).
  int64_t in_flight = std::clamp<int64_t>((step ? 32 : 64) / outputs, 1, 32);
  return std::min(in_flight, 4 * dv / rb);
}

namespace {

// The vector key's split: "0" (one chunk), "2" (merged in the launch, where one batch of
// the merge's loads holds every split: measured no slower than the merge launch there, and
// slower where it took two; docs/attention.md) or "1" (a merge launch).
const char* vector_split(const AttentionGeometry& g, int64_t rb, int64_t tpr, bool step) {
  int64_t splits = attention_splits(g);
  if (splits <= 1) {
    return "0";
  }
  bool inline_merge =
      attention_merge_fits(g) && splits <= merge_splits_per_batch(rb, g.dv, tpr, step);
  return inline_merge ? "2" : "1";
}

}  // namespace

KernelKey attention_key(const std::string& dtype, const AttentionGeometry& g,
                        const DeviceCaps& caps) {
  KernelKey key{"sdpa",
                {{"d", std::to_string(g.d)},
                 {"dtype", dtype},
                 {"dv", std::to_string(g.dv)},
                 {"mask", g.mask},
                 {"mdtype", g.mask_dtype.empty() ? "-" : g.mask_dtype},
                 {"sdtype", g.sinks_dtype.empty() ? "-" : g.sinks_dtype}}};
  if (attention_vector(g)) {
    uint32_t tpr = vector_tpr(g, caps);
    bool sg = caps.subgroup_shuffle && tpr <= caps.subgroup_size;
    // Fewer rows a workgroup where its arrays would not fit (without shuffles the team sums
    // take WGS x RB x KPS floats: head dim 256 with 8 rows needs 16.1 KiB, past a 16 KiB
    // device). The launch reads RB from the key.
    uint32_t rb = vector_rows(g);
    while (rb > 1 &&
           vector_shared_bytes(g, tpr, rb, sg) > static_cast<int64_t>(caps.max_shared_memory)) {
      rb /= 2;
    }
    key.params["mode"] = "vector";
    key.params["rb"] = std::to_string(rb);
    key.params["tpr"] = std::to_string(tpr);
    key.params["sg"] = sg ? "1" : "0";
    key.params["split"] = vector_split(g, rb, tpr, false);
    // Each lane's d / tpr and dv / tpr elements of a K and V row as 4-element vectors.
    bool quads = (g.d / tpr) % 4 == 0 && (g.dv / tpr) % 4 == 0 && rows_vector_loads(g);
    key.params["vec"] = quads ? "1" : "0";
  } else if (std::string path = coop_path(dtype, g, caps); !path.empty()) {
    key.params["mode"] = "coop";
    key.params["bq"] = std::to_string(coop_rows(g.d, g.dv, caps));
    key.params["bk"] = std::to_string(kCoopKeys);
    key.params["path"] = path;
    // The softmax on the score accumulators in registers, or through shared memory.
    key.params["sm"] = caps.coop_acc_nv_layout ? "reg" : "shared";
  } else {
    RowsTile t = rows_tile(dtype, g, caps);
    key.params["mode"] = "rows";
    key.params["bq"] = std::to_string(t.bq);
    key.params["bk"] = std::to_string(t.bk);
    key.params["tk"] = std::to_string(t.tk);
    key.params["qh"] = t.qh ? "1" : "0";
    key.params["kvh"] = t.kvh ? "1" : "0";
    key.params["sg"] = rows_subgroup(t, caps) ? "1" : "0";
    key.params["vec"] = rows_vector_loads(g) ? "1" : "0";
  }
  return key;
}

bool attention_step_supported(const AttentionGeometry& g, const AttentionStep& st,
                              const DeviceCaps& caps) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max() / 2;
  if (!attention_supported(g) || g.lq != 1 || g.mask != "none" || !g.sinks_dtype.empty() ||
      st.cap < g.lkv) {
    return false;
  }
  int64_t reach =
      std::max({span(g.k_offset, {{g.batch, g.k_sb}, {g.hkv, g.k_sh}, {st.cap, g.k_sj}, {g.d, 1}}),
                span(g.v_offset, {{g.batch, g.v_sb}, {g.hkv, g.v_sh}, {st.cap, g.v_sj}, {g.dv, 1}}),
                span(st.kr_offset, {{g.batch, st.kr_sb}, {g.hkv, st.kr_sh}, {g.d, 1}}),
                span(st.vr_offset, {{g.batch, st.vr_sb}, {g.hkv, st.vr_sh}, {g.dv, 1}}),
                st.qw_offset + g.d, st.kw_offset + g.d, st.pos_offset, st.start_offset});
  uint32_t tpr = vector_tpr(g, caps);
  bool sg = caps.subgroup_shuffle && tpr <= caps.subgroup_size;
  return reach < kMax && step_shared_bytes(g, tpr, vector_rows(g), sg) <=
                             static_cast<int64_t>(caps.max_shared_memory);
}

KernelKey attention_step_key(const std::string& dtype, const AttentionGeometry& g,
                             const AttentionStep& st, const DeviceCaps& caps) {
  KernelKey key = attention_key(dtype, g, caps);
  // Its merge batch is smaller (merge_splits_per_batch), so fewer splits merge in the launch.
  key.params["split"] =
      vector_split(g, std::stoll(key.params["rb"]), std::stoll(key.params["tpr"]), true);
  key.params["step"] = "1";
  key.params["qn"] = st.q_norm ? "1" : "0";
  key.params["kn"] = st.k_norm ? "1" : "0";
  key.params["trad"] = st.traditional ? "1" : "0";
  key.params["coef"] = hex_bits(rope_coefficient(st.base, g.d / 2));
  key.params["rscale"] = hex_bits(st.rope_scale);
  key.params["qeps"] = hex_bits(st.q_norm ? st.q_eps : 0.0f);
  key.params["keps"] = hex_bits(st.k_norm ? st.k_eps : 0.0f);
  return key;
}

Launch attention_step_launch(const KernelKey& key, const KernelSource& source,
                             const AttentionGeometry& g, const AttentionStep& st) {
  const std::string where = "kernel " + key.canonical();
  int64_t splits = attention_splits(g);
  std::vector<int64_t> fields{g.q_offset,
                              g.k_offset,
                              g.v_offset,
                              st.kr_offset,
                              st.vr_offset,
                              g.out_offset,
                              g.q_sb,
                              g.q_sh,
                              g.q_si,
                              g.k_sb,
                              g.k_sh,
                              g.k_sj,
                              g.v_sb,
                              g.v_sh,
                              g.v_sj,
                              st.kr_sb,
                              st.kr_sh,
                              st.vr_sb,
                              st.vr_sh,
                              st.qw_offset,
                              st.kw_offset,
                              st.pos_offset,
                              st.start_offset,
                              st.cap,
                              g.lq,
                              g.lkv,
                              g.hkv,
                              g.groups,
                              float_bits(g.scale),
                              splits,
                              ceil_div(g.lkv, splits)};
  if (key_param(key, "split", where) == "2") {
    fields.push_back(g.fin_offset);
  }
  Launch launch = pack_launch(source, fields, false, 1, where);
  int64_t gy = ceil_div(rows(g), std::atoi(key_param(key, "rb", where).c_str()));
  check_merge_slots(key, g.batch * g.hkv * gy, where);
  if (g.batch * g.hkv > kMaxGroups || gy > kMaxGroups || splits > kMaxGroups) {
    throw std::invalid_argument("[launch] " + where + ": too many workgroups for one launch.");
  }
  launch.groups = {static_cast<uint32_t>(g.batch * g.hkv), static_cast<uint32_t>(gy),
                   static_cast<uint32_t>(splits)};
  return launch;
}

void set_attention_length(Launch& launch, const KernelKey& key, const AttentionGeometry& g) {
  // No key text is built here: this runs on every decode step's launches.
  auto mode = key.params.find("mode");
  bool vector = mode != key.params.end() && mode->second == "vector";
  bool merge = mode != key.params.end() && mode->second == "merge";
  bool step = key.params.count("step") != 0;
  size_t fields =
      (step ? kStepFields : kFields) + (vector && key.params.at("split") == "2" ? 1 : 0);
  if ((!vector && !merge) || launch.push_constants.size() != 4 * fields) {
    throw std::invalid_argument("[launch] " + key.canonical() +
                                ": only a vector or merge launch takes another key length.");
  }
  // Field indices of lkv, splits and kchunk in sdpa.glsl's Params (int32 each).
  const size_t lkv_at = step ? 25 : 20;
  const size_t splits_at = step ? 29 : 24;
  int64_t splits = attention_splits(g);
  auto set = [&](size_t field, int64_t v) {
    int32_t w = static_cast<int32_t>(v);
    std::memcpy(launch.push_constants.data() + 4 * field, &w, 4);
  };
  set(lkv_at, g.lkv);
  set(splits_at, splits);
  set(splits_at + 1, ceil_div(g.lkv, splits));
  if (vector) {
    launch.groups[2] = static_cast<uint32_t>(splits);
  }
}

KernelKey attention_merge_key(const std::string& dtype, const AttentionGeometry& g) {
  return KernelKey{"sdpa",
                   {{"dtype", dtype},
                    {"dv", std::to_string(g.dv)},
                    {"mode", "merge"},
                    {"sdtype", g.sinks_dtype.empty() ? "-" : g.sinks_dtype}}};
}

KernelSource render_attention(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  const std::string& mode = key_param(key, "mode", where);
  const DtypeInfo& dt = dtype_info(key_param(key, "dtype", where), where);
  if (dt.kind != Kind::Float) {
    throw std::invalid_argument("[render] " + where + ": needs a float dtype.");
  }
  int dv = std::atoi(key_param(key, "dv", where).c_str());
  if (dv < 8 || dv > 256 || dv % 8 != 0) {
    throw std::invalid_argument("[render] " + where + ": dv must be a multiple of 8 up to 256.");
  }
  std::vector<const DtypeInfo*> dts{&dt};
  std::vector<std::string> defines;
  add_input_defines("IN0_", dt, defines);
  add_output_defines(dt, defines);
  defines.push_back("DV " + std::to_string(dv));
  // The score of a masked key: the dtype's lowest finite value, as MLX's composition.
  defines.push_back(std::string("LOWEST ") +
                    (dt.bits == 16 && std::string(dt.name) == "f16" ? "(-65504.0)"
                     : std::string(dt.name) == "bf16"               ? "(-3.38953139e38)"
                                                                    : "(-3.40282347e38)"));
  const std::string& sdtype = key_param(key, "sdtype", where);
  if (sdtype != "-") {
    add_operand("IN2_", sdtype, where, dts, defines);
    defines.push_back("SINKS 1");
  }
  uint32_t wg = row_workgroup_size(caps);
  if (mode == "merge") {
    check_params(key, {"dtype", "dv", "mode", "sdtype"}, where);
    defines.push_back("MODE MODE_MERGE");
    defines.push_back("D 8");
  } else {
    int d = std::atoi(key_param(key, "d", where).c_str());
    if (d < 8 || d > 256 || d % 8 != 0) {
      throw std::invalid_argument("[render] " + where + ": d must be a multiple of 8 up to 256.");
    }
    defines.push_back("D " + std::to_string(d));
    const std::string& mask = mask_param(key, where);
    const std::string& mdtype = key_param(key, "mdtype", where);
    defines.push_back("MASK MASK_" + std::string(mask == "none"     ? "NONE"
                                                 : mask == "causal" ? "CAUSAL"
                                                 : mask == "bool"   ? "BOOL"
                                                                    : "ADD"));
    bool array_mask = mask == "bool" || mask == "add";
    if ((mask == "bool") != (mdtype == "b") || array_mask == (mdtype == "-")) {
      throw std::invalid_argument("[render] " + where +
                                  ": mdtype is b for a bool mask, a float dtype for an additive "
                                  "one and - otherwise.");
    }
    if (mdtype != "-") {
      add_operand("IN1_", mdtype, where, dts, defines);
    }
    if (mode == "vector") {
      std::set<std::string> known{"d",  "dtype",  "dv", "mask",  "mdtype", "mode",
                                  "rb", "sdtype", "sg", "split", "tpr",    "vec"};
      bool step = key.params.count("step") != 0;
      if (step) {
        known.insert({"coef", "keps", "kn", "qeps", "qn", "rscale", "step", "trad"});
      }
      check_params(key, known, where);
      if (step) {
        if (key_param(key, "step", where) != "1" || mask != "none" || sdtype != "-") {
          throw std::invalid_argument("[render] " + where + ": step 1 takes no mask and no sinks.");
        }
        defines.push_back("STEP 1");
        defines.push_back(std::string("QNORM ") + (key_param(key, "qn", where) == "1" ? "1" : "0"));
        defines.push_back(std::string("KNORM ") + (key_param(key, "kn", where) == "1" ? "1" : "0"));
        defines.push_back(std::string("TRADITIONAL ") +
                          (key_param(key, "trad", where) == "1" ? "1" : "0"));
        defines.push_back("ROPE_COEF " + bits_literal(key, "coef", where));
        defines.push_back("ROPE_SCALE " + bits_literal(key, "rscale", where));
        defines.push_back("Q_EPS " + bits_literal(key, "qeps", where));
        defines.push_back("K_EPS " + bits_literal(key, "keps", where));
      }
      uint32_t tpr = static_cast<uint32_t>(std::atoi(key_param(key, "tpr", where).c_str()));
      int rb = std::atoi(key_param(key, "rb", where).c_str());
      bool sg = key_param(key, "sg", where) == "1";
      if (tpr < 1 || tpr > 32 || (tpr & (tpr - 1)) != 0 || d % tpr != 0 || dv % tpr != 0 ||
          (rb != 1 && rb != 2 && rb != 4 && rb != 8) ||
          (sg && (!caps.subgroup_shuffle || tpr > caps.subgroup_size))) {
        throw std::invalid_argument("[render] " + where +
                                    ": tpr must be a power of two dividing d and dv (at most the "
                                    "subgroup with sg 1), rb 1, 2, 4 or 8.");
      }
      wg = tpr * static_cast<uint32_t>(kTeams);
      defines.push_back("MODE MODE_VECTOR");
      defines.push_back("TPR " + std::to_string(tpr));
      defines.push_back("RB " + std::to_string(rb));
      defines.push_back(std::string("SUBGROUP ") + (sg ? "1" : "0"));
      const std::string& split = key_param(key, "split", where);
      if (split != "0" && split != "1" && split != "2") {
        throw std::invalid_argument("[render] " + where + ": split must be 0, 1 or 2.");
      }
      defines.push_back("SPLIT " + split);
      if (split == "2") {
        defines.push_back("MC " + std::to_string(merge_splits_per_batch(rb, dv, tpr, step)));
      }
      bool quads = key_param(key, "vec", where) == "1";
      if (quads && ((d / tpr) % 4 != 0 || (dv / tpr) % 4 != 0)) {
        throw std::invalid_argument("[render] " + where +
                                    ": vec 1 needs d / tpr and dv / tpr multiples of 4.");
      }
      defines.push_back(std::string("VEC ") + (quads ? "1" : "0"));
      defines.push_back(std::string("IN0_HALF ") + (dt.bits != 16                   ? "0"
                                                    : std::string(dt.name) == "f16" ? "1"
                                                                                    : "2"));
    } else if (mode == "rows") {
      check_params(key,
                   {"bk", "bq", "d", "dtype", "dv", "kvh", "mask", "mdtype", "mode", "qh", "sdtype",
                    "sg", "tk", "vec"},
                   where);
      RowsTile t{std::atoi(key_param(key, "bq", where).c_str()),
                 std::atoi(key_param(key, "bk", where).c_str()),
                 std::atoi(key_param(key, "tk", where).c_str()), key_param(key, "qh", where) == "1",
                 key_param(key, "kvh", where) == "1"};
      bool sg = key_param(key, "sg", where) == "1";
      auto pow2 = [](int64_t v) { return v > 0 && (v & (v - 1)) == 0; };
      if (t.bq < 4 || t.bq % 4 != 0 || !pow2(t.tk) || t.tk > 8 || t.bk % t.tk != 0 ||
          !pow2(rows_lanes(t)) || rows_lanes(t) > 64 || ((t.qh || t.kvh) && dt.bits != 16)) {
        throw std::invalid_argument("[render] " + where +
                                    ": bq must be a multiple of 4, tk a power of two up to 8, "
                                    "bk / tk a power of two up to 64, qh and kvh 1 only for "
                                    "16-bit dtypes.");
      }
      if (rows_invocations(t) > static_cast<int64_t>(caps.max_workgroup_invocations) ||
          (sg && !rows_subgroup(t, caps))) {
        throw std::invalid_argument("[render] " + where +
                                    ": the workgroup or its subgroup use does not fit the device.");
      }
      if (rows_shared_bytes(t, d, dv, sg) > static_cast<int64_t>(caps.max_shared_memory)) {
        throw std::runtime_error("[vulkan] " + where +
                                 ": the tiles need more shared memory than the device allows.");
      }
      wg = static_cast<uint32_t>(rows_invocations(t));
      defines.push_back("MODE MODE_ROWS");
      defines.push_back("BQ " + std::to_string(t.bq));
      defines.push_back("BK " + std::to_string(t.bk));
      defines.push_back("TK " + std::to_string(t.tk));
      defines.push_back(std::string("QH ") + (t.qh ? "1" : "0"));
      defines.push_back(std::string("KVH ") + (t.kvh ? "1" : "0"));
      defines.push_back(std::string("SUBGROUP ") + (sg ? "1" : "0"));
      defines.push_back(std::string("VEC ") + (key_param(key, "vec", where) == "1" ? "1" : "0"));
      defines.push_back(std::string("IN0_HALF ") + (dt.bits != 16                   ? "0"
                                                    : std::string(dt.name) == "f16" ? "1"
                                                                                    : "2"));
    } else if (mode == "coop") {
      check_params(
          key, {"bk", "bq", "d", "dtype", "dv", "mask", "mdtype", "mode", "path", "sdtype", "sm"},
          where);
      // sm: reg (the softmax on the accumulators' elements) or shared; absent is shared.
      const std::string sm = key.params.count("sm") ? key.params.at("sm") : "shared";
      const std::string& path = key_param(key, "path", where);
      std::string dtype = dt.name;
      const std::string& bq_text = key_param(key, "bq", where);
      const int64_t bq = bq_text == "128" ? 128 : kCoopRows;
      if ((bq_text != "64" && !(bq_text == "128" && sm == "reg")) ||
          key_param(key, "bk", where) != std::to_string(kCoopKeys) || d % 16 != 0 || dv % 16 != 0 ||
          d > 128 || dv > 128 || (path != "nv" && path != "khr") ||
          (sm != "reg" && sm != "shared") ||
          (dtype != "f16" && !(dtype == "bf16" && path == "khr"))) {
        throw std::invalid_argument("[render] " + where +
                                    ": coop takes bq 64 (128 with sm reg), bk 32, d and dv "
                                    "multiples of 16 up to "
                                    "128, f16 (bf16 on path khr), sm reg or shared.");
      }
      bool have = path == "nv" ? caps.cooperative_matrix
                               : (dtype == "f16" ? caps.cooperative_matrix_khr
                                                 : caps.cooperative_matrix_bf16);
      if (!have || caps.subgroup_size != 32 || !caps.subgroup_shuffle ||
          caps.max_workgroup_invocations < static_cast<uint32_t>(bq / 16 * 32) ||
          coop_shared_bytes(d, dv, sm == "reg", bq) >
              static_cast<int64_t>(caps.max_shared_memory)) {
        throw std::runtime_error("[vulkan] " + where +
                                 ": the device has no cooperative matrices for this kernel.");
      }
      if (sm == "reg" && !caps.coop_acc_nv_layout) {
        throw std::runtime_error("[vulkan] " + where +
                                 ": sm=reg needs accumulators laid out as NVIDIA's driver lays "
                                 "them out (DeviceCaps::coop_acc_nv_layout).");
      }
      wg = static_cast<uint32_t>(bq / 16) * caps.subgroup_size;
      defines.push_back("MODE MODE_COOP");
      defines.push_back("BQ " + std::to_string(bq));
      defines.push_back("BK " + std::to_string(kCoopKeys));
      defines.push_back(std::string("COOP_BF16 ") + (dtype == "bf16" ? "1" : "0"));
      defines.push_back(std::string("COOP_REG_SOFTMAX ") + (sm == "reg" ? "1" : "0"));
    } else {
      throw std::invalid_argument("[render] " + where +
                                  ": mode must be vector, rows, coop or merge.");
    }
  }
  std::vector<std::string> all = storage_defines(dts, false, caps, where);
  all.insert(all.end(), defines.begin(), defines.end());
  bool step = mode == "vector" && key.params.count("step") != 0;
  // split=2 binds the output and the counters after the others and takes fin_offset.
  bool inline_merge = mode == "vector" && key_param(key, "split", where) == "2";
  uint32_t buffers = (step ? 12 : 6) + (inline_merge ? 2 : 0);
  uint32_t fields = (step ? kStepFields : kFields) + (inline_merge ? 1 : 0);
  KernelSource source = row_kernel_source("sdpa.glsl", all, buffers, fields, false, caps);
  if (mode == "coop") {
    source.coop_khr = key_param(key, "path", where) == "khr";
    source.coop_khr_bf16 = std::string(dt.name) == "bf16";
  }
  source.workgroup_size = {wg, 1, 1};
  source.spec_constants = {{0, wg}};
  return source;
}

Launch attention_launch(const KernelKey& key, const KernelSource& source,
                        const AttentionGeometry& g) {
  const std::string where = "kernel " + key.canonical();
  const std::string& mode = key_param(key, "mode", where);
  int64_t splits = attention_splits(g);
  int64_t kchunk = ceil_div(g.lkv, splits);
  bool merge = mode == "merge";
  std::vector<int64_t> fields{g.q_offset,
                              g.k_offset,
                              g.v_offset,
                              g.m_offset,
                              g.s_offset,
                              g.out_offset,
                              merge ? g.batch : g.q_sb,
                              g.q_sh,
                              g.q_si,
                              g.k_sb,
                              g.k_sh,
                              g.k_sj,
                              g.v_sb,
                              g.v_sh,
                              g.v_sj,
                              g.m_sb,
                              g.m_sh,
                              g.m_si,
                              g.m_sj,
                              g.lq,
                              g.lkv,
                              g.hkv,
                              g.groups,
                              float_bits(g.scale),
                              splits,
                              kchunk};
  if (merge) {
    return pack_launch(
        source, fields, false,
        static_cast<uint64_t>(ceil_div(g.batch * g.hkv * rows(g) * g.dv, source.workgroup_size[0])),
        where);
  }
  if (mode == "vector" && key_param(key, "split", where) == "2") {
    fields.push_back(g.fin_offset);
  }
  Launch launch = pack_launch(source, fields, false, 1, where);
  int64_t gy;
  if (mode == "vector") {
    gy = ceil_div(rows(g), std::atoi(key_param(key, "rb", where).c_str()));
  } else {
    gy = ceil_div(rows(g), std::atoi(key_param(key, "bq", where).c_str()));
  }
  if (mode == "vector") {
    check_merge_slots(key, g.batch * g.hkv * gy, where);
  }
  if (g.batch * g.hkv > kMaxGroups || gy > kMaxGroups || splits > kMaxGroups) {
    throw std::invalid_argument("[launch] " + where + ": too many workgroups for one launch.");
  }
  launch.groups = {static_cast<uint32_t>(g.batch * g.hkv), static_cast<uint32_t>(gy),
                   static_cast<uint32_t>(mode == "vector" ? splits : 1)};
  return launch;
}

}  // namespace mlx::core::vulkan::codegen
