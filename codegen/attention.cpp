// The "sdpa" family (codegen/attention.h): variant choice, keys, rendering and launch
// packing for templates/sdpa.glsl.
#include "codegen/attention.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "codegen/dtypes.h"
#include "codegen/internal.h"

namespace mlx::core::vulkan::codegen {

namespace {

constexpr uint32_t kFields = 26;      // int32 push constants (sdpa.glsl's Params)
constexpr int64_t kTeams = 8;         // NT in the vector mode
constexpr int64_t kBusyGroups = 256;  // workgroups that keep a large GPU busy
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

int64_t shared_bytes(int64_t bq, int64_t d, int64_t dv) {
  return 4 * (bq * d + bq * d + bq * dv + bq * bq + 3 * bq);
}

// Query rows (and keys) per tile of the rows mode: 16, halved until the tiles fit.
int64_t rows_tile(const AttentionGeometry& g, const DeviceCaps& caps) {
  int64_t bq = 16;
  while (bq > 4 && shared_bytes(bq, g.d, g.dv) > static_cast<int64_t>(caps.max_shared_memory)) {
    bq /= 2;
  }
  return bq;
}

int64_t span(int64_t off, std::initializer_list<std::pair<int64_t, int64_t>> dims) {
  int64_t hi = off;
  for (auto [n, s] : dims) {
    hi += (n - 1) * s;
  }
  return hi;
}

const std::string& mask_param(const KernelKey& key, const std::string& where) {
  const std::string& m = key_param(key, "mask", where);
  if (m != "none" && m != "causal" && m != "bool" && m != "add") {
    throw std::invalid_argument("[render] " + where + ": mask must be none, causal, bool or add.");
  }
  return m;
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
  int64_t base = g.batch * g.hkv * ceil_div(rows(g), vector_rows(g));
  if (base >= kBusyGroups) {
    return 1;
  }
  // Chunks of at least 256 keys (32 steps of the 8 teams) keep the merge cheap.
  int64_t splits = std::clamp<int64_t>(ceil_div(2 * kBusyGroups, base), 1, ceil_div(g.lkv, 256));
  int64_t chunk = ceil_div(g.lkv, splits);
  return ceil_div(g.lkv, chunk);
}

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
    key.params["mode"] = "vector";
    key.params["rb"] = std::to_string(vector_rows(g));
    key.params["tpr"] = std::to_string(tpr);
    key.params["sg"] = caps.subgroup_shuffle && tpr <= caps.subgroup_size ? "1" : "0";
    key.params["split"] = attention_splits(g) > 1 ? "1" : "0";
  } else {
    key.params["mode"] = "rows";
    key.params["bq"] = std::to_string(rows_tile(g, caps));
  }
  return key;
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
      check_params(
          key, {"d", "dtype", "dv", "mask", "mdtype", "mode", "rb", "sdtype", "sg", "split", "tpr"},
          where);
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
      defines.push_back("SPLIT " + key_param(key, "split", where));
    } else if (mode == "rows") {
      check_params(key, {"bq", "d", "dtype", "dv", "mask", "mdtype", "mode", "sdtype"}, where);
      int bq = std::atoi(key_param(key, "bq", where).c_str());
      if (bq != 4 && bq != 8 && bq != 16) {
        throw std::invalid_argument("[render] " + where + ": bq must be 4, 8 or 16.");
      }
      if (shared_bytes(bq, d, dv) > static_cast<int64_t>(caps.max_shared_memory)) {
        throw std::runtime_error("[vulkan] " + where +
                                 ": the tiles need more shared memory than the device allows.");
      }
      defines.push_back("MODE MODE_ROWS");
      defines.push_back("BQ " + std::to_string(bq));
      defines.push_back("BK " + std::to_string(bq));
    } else {
      throw std::invalid_argument("[render] " + where + ": mode must be vector, rows or merge.");
    }
  }
  std::vector<std::string> all = storage_defines(dts, false, caps, where);
  all.insert(all.end(), defines.begin(), defines.end());
  KernelSource source = row_kernel_source("sdpa.glsl", all, 6, kFields, false, caps);
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
  Launch launch = pack_launch(source, fields, false, 1, where);
  int64_t gy;
  if (mode == "vector") {
    gy = ceil_div(rows(g), std::atoi(key_param(key, "rb", where).c_str()));
  } else {
    gy = ceil_div(rows(g), std::atoi(key_param(key, "bq", where).c_str()));
  }
  if (g.batch * g.hkv > kMaxGroups || gy > kMaxGroups || splits > kMaxGroups) {
    throw std::invalid_argument("[launch] " + where + ": too many workgroups for one launch.");
  }
  launch.groups = {static_cast<uint32_t>(g.batch * g.hkv), static_cast<uint32_t>(gy),
                   static_cast<uint32_t>(mode == "vector" ? splits : 1)};
  return launch;
}

}  // namespace mlx::core::vulkan::codegen
