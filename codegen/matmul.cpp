// The "gemm" and "gemv" families (codegen/matmul.h): tile choice, keys, rendering and
// launch packing for templates/gemm.glsl and templates/gemv.glsl.
#include "codegen/matmul.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include "codegen/dtypes.h"
#include "codegen/elementwise_ops.h"
#include "codegen/internal.h"
#include "codegen/matmul_internal.h"

namespace mlx::core::vulkan::codegen {

namespace {

// Workgroups that keep a large GPU busy (an H200 has 132 multiprocessors); below this a
// smaller tile (gemm) or a split along k (gemv) pays.
constexpr int64_t kBusyGroups = 256;
constexpr int64_t kAxpySlices = 4;  // KS in gemv.glsl
// qmv's prefetch (templates/include/prefetch.glsl): regions, push constants (pf_groups and
// two per region) and sectors per invocation (PF_LOADS).
constexpr uint32_t kPrefetchRegions = 3;
constexpr uint32_t kPrefetchFields = 1 + 2 * kPrefetchRegions;
constexpr uint64_t kPrefetchLoads = 4;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

int64_t float_bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return static_cast<int64_t>(b);
}

bool flag(const KernelKey& key, const char* name, const std::string& where) {
  const std::string& v = key_param(key, name, where);
  if (v != "0" && v != "1") {
    throw std::invalid_argument("[render] " + where + ": " + name + " must be 0 or 1.");
  }
  return v == "1";
}

std::string bit(bool v) {
  return v ? "1" : "0";
}

// The cooperative-matrix tiles (templates/gemm_coop.glsl), tm x tn being each subgroup's
// part, largest first (measured on an H200, docs/matmul.md): 8 subgroups of 64 x 64 (k steps
// of 16 so that two stages fit 48 KB), 8 of 64 x 32, 4 of 32 x 32.
constexpr GemmTile kCoopTiles[] = {
    {128, 256, 16, 64, 64, true}, {128, 128, 32, 64, 32, true}, {64, 64, 32, 32, 32, true}};
// For a quantized B (qmm) the tall tile comes first: each dequantized value in shared memory
// then serves 256 rows instead of 128 (a 4096-token Qwen3-0.6B prefill: 67.5 -> 62.6 ms on
// an H200, docs/matmul.md).
constexpr GemmTile kCoopQuantTiles[] = {
    {256, 128, 16, 64, 64, true}, {128, 128, 32, 64, 32, true}, {64, 64, 32, 32, 32, true}};

GemmTile parse_tile(const std::string& text, const std::string& where) {
  GemmTile t{};
  bool nv = text.rfind("coopnv", 0) == 0;
  if (nv || text.rfind("coopkhr", 0) == 0) {
    t.coop = true;
    t.khr = !nv;
    // Each subgroup's part is whole 16 x 16 fragments; k steps are whole fragments too.
    if (std::sscanf(text.c_str() + (nv ? 6 : 7), "%dx%dx%dw%dx%d", &t.bm, &t.bn, &t.bk, &t.tm,
                    &t.tn) != 5 ||
        t.name() != text || t.tm < 16 || t.tn < 16 || t.tm % 16 != 0 || t.tn % 16 != 0 ||
        t.bm % t.tm != 0 || t.bn % t.tn != 0 || t.bk < 16 || t.bk % 16 != 0) {
      throw std::invalid_argument(
          "[render] " + where +
          ": a cooperative-matrix tile must be coopnv|coopkhr BMxBNxBKwWMxWN with "
          "WM, WN and BK multiples of 16 dividing the tile.");
    }
    return t;
  }
  if (std::sscanf(text.c_str(), "%dx%dx%dx%dx%d", &t.bm, &t.bn, &t.bk, &t.tm, &t.tn) != 5 ||
      t.name() != text || t.tm < 1 || t.tn < 1 || t.bm % t.tm != 0 || t.bn % t.tn != 0 ||
      t.bk < 1) {
    throw std::invalid_argument("[render] " + where + ": tile must be BMxBNxBKxTMxTN.");
  }
  int wg = (t.bm / t.tm) * (t.bn / t.tn);
  if ((t.bm * t.bk) % wg != 0 || (t.bn * t.bk) % wg != 0) {
    throw std::invalid_argument("[render] " + where +
                                ": the tile's A and B stages must divide among its invocations.");
  }
  return t;
}

int tile_invocations(const GemmTile& t) {
  return (t.bm / t.tm) * (t.bn / t.tn);
}

int64_t tile_shared_bytes(const GemmTile& t) {
  return int64_t{4} * t.bk * (t.bm + 1 + t.bn + 1);
}

int coop_subgroups(const GemmTile& t) {
  return (t.bm / t.tm) * (t.bn / t.tn);
}

// gemm_coop.glsl's two f16 stages of A and B, rows padded by 16 bytes, for the larger of
// the two orientations of each.
int64_t coop_shared_bytes(const GemmTile& t) {
  auto stage = [&](int64_t side) { return std::max(side * (t.bk + 8), t.bk * (side + 8)) * 2; };
  return 2 * (stage(t.bm) + stage(t.bn));
}

// Whether the device multiplies the dtype on the tile's cooperative-matrix path.
bool coop_supported(const GemmTile& t, const DeviceCaps& caps, const std::string& dtype) {
  if (!t.khr) {
    return dtype == "f16" && caps.cooperative_matrix;
  }
  return (dtype == "f16" && caps.cooperative_matrix_khr) ||
         (dtype == "bf16" && caps.cooperative_matrix_bf16);
}

bool tile_fits(const GemmTile& t, const DeviceCaps& caps) {
  if (t.coop) {
    bool path = t.khr ? caps.cooperative_matrix_khr || caps.cooperative_matrix_bf16
                      : caps.cooperative_matrix;
    uint32_t invocations = static_cast<uint32_t>(coop_subgroups(t)) * caps.subgroup_size;
    // Every invocation loads whole 8-value chunks of both stages, and the epilogue stages
    // 64 uvec4s per subgroup in A's two stages.
    int64_t a_stages = 2 * std::min(t.bm * (t.bk / 8 + 1), t.bk * (t.bm / 8 + 1));
    return path && invocations <= caps.max_workgroup_invocations &&
           (t.bm * t.bk / 8) % invocations == 0 && (t.bn * t.bk / 8) % invocations == 0 &&
           64 * coop_subgroups(t) <= a_stages &&
           coop_shared_bytes(t) <= static_cast<int64_t>(caps.max_shared_memory);
  }
  return static_cast<uint32_t>(tile_invocations(t)) <= caps.max_workgroup_invocations &&
         tile_shared_bytes(t) <= static_cast<int64_t>(caps.max_shared_memory);
}

uint32_t dtype_bits(const std::string& dtype) {
  return static_cast<uint32_t>(dtype_info(dtype, "gemv").bits);
}

// The lanes of a `bits`-wide dtype in 16 bytes when every listed value is a multiple of
// them, else 1.
uint32_t lanes_if_aligned(uint32_t bits, std::initializer_list<int64_t> values) {
  uint32_t lanes = 128u / bits;
  for (int64_t v : values) {
    if (v % lanes != 0) {
      return 1;
    }
  }
  return lanes;
}

uint32_t gemv_vec(const std::string& dtype, const MatmulGeometry& g) {
  if (g.b_t) {
    return lanes_if_aligned(dtype_bits(dtype),
                            {g.k, static_cast<int64_t>(g.a_offset), g.lda, g.a_bs0, g.a_bs1,
                             static_cast<int64_t>(g.b_offset), g.ldb, g.b_bs0, g.b_bs1});
  }
  return lanes_if_aligned(dtype_bits(dtype), {g.n, static_cast<int64_t>(g.b_offset), g.ldb, g.b_bs0,
                                              g.b_bs1, static_cast<int64_t>(g.out_offset)});
}

uint32_t gemv_rows(int64_t m) {
  uint32_t r = 1;
  while (r < m) {
    r *= 2;
  }
  return r;
}

// Lanes per column of the dot shape: a subgroup's width (at most 32), fewer for short k so
// that lanes are not left idle.
uint32_t gemv_tpr(const MatmulGeometry& g, uint32_t vec, const DeviceCaps& caps) {
  uint32_t tpr = caps.subgroup_shuffle ? std::min<uint32_t>(32, caps.subgroup_size) : 32;
  int64_t chunks = g.k / vec;
  while (tpr > 4 && chunks < int64_t{tpr} * 2) {
    tpr /= 2;
  }
  return tpr;
}

}  // namespace

// The largest element index any invocation computes, with m, n and k rounded up to whole
// tiles (out-of-range indices are formed before their bounds check).
bool geometry_idx64(const MatmulGeometry& g, int64_t bm, int64_t bn, int64_t bk) {
  int64_t m = ceil_div(std::max<int64_t>(g.m, 1), bm) * bm;
  int64_t n = ceil_div(std::max<int64_t>(g.n, 1), bn) * bn;
  int64_t k = ceil_div(std::max<int64_t>(g.k, 1), bk) * bk;
  int64_t outer = ceil_div(g.batches, g.nb1);
  auto batch_span = [&](int64_t bs0, int64_t bs1) { return outer * bs0 + g.nb1 * bs1; };
  uint64_t a = g.a_offset + static_cast<uint64_t>((g.a_t ? k : m) * g.lda + (g.a_t ? m : k) +
                                                  batch_span(g.a_bs0, g.a_bs1));
  uint64_t b = g.b_offset + static_cast<uint64_t>((g.b_t ? n : k) * g.ldb + (g.b_t ? k : n) +
                                                  batch_span(g.b_bs0, g.b_bs1));
  uint64_t out = g.out_offset + static_cast<uint64_t>(g.batches * m * n);
  // Scales and biases (quantized B) hold fewer elements than B has values.
  uint64_t s = std::max(g.scales_offset, g.biases_offset) + (b - g.b_offset);
  return reach_needs_64(std::max({a, b, out, s}));
}

void check_geometry(const MatmulGeometry& g, const std::string& where) {
  if (g.m < 0 || g.n < 0 || g.k < 0 || g.batches < 1 || g.nb1 < 1 || g.lda < 0 || g.ldb < 0 ||
      g.a_bs0 < 0 || g.a_bs1 < 0 || g.b_bs0 < 0 || g.b_bs1 < 0) {
    throw std::invalid_argument("[launch] " + where + ": inconsistent matmul geometry.");
  }
}

const DtypeInfo& float_dtype(const KernelKey& key, const std::string& where) {
  const DtypeInfo& dt = dtype_info(key_param(key, "dtype", where), where);
  if (dt.kind != Kind::Float) {
    throw std::invalid_argument("[render] " + where + ": needs a float dtype.");
  }
  return dt;
}

bool reach_needs_64(uint64_t reach) {
  return 2 * reach + (uint64_t{1} << 17) >
         static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
}

std::string GemmTile::name() const {
  if (coop) {
    return (khr ? "coopkhr" : "coopnv") + std::to_string(bm) + "x" + std::to_string(bn) + "x" +
           std::to_string(bk) + "w" + std::to_string(tm) + "x" + std::to_string(tn);
  }
  return std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + "x" +
         std::to_string(tm) + "x" + std::to_string(tn);
}

bool coop_aligned(const MatmulGeometry& g) {
  // 8 f16 values are 16 bytes: each chunk gemm_coop.glsl loads is one aligned vector, wholly
  // inside or outside the matrix. A quantized B is read by words instead, 8 values of one
  // group at a time (its groups of >= 32 values keep that aligned).
  int64_t a_contig = g.a_t ? g.m : g.k;
  std::vector<int64_t> values{a_contig, static_cast<int64_t>(g.a_offset), g.lda, g.a_bs0, g.a_bs1};
  if (g.bits == 0) {
    values.insert(values.end(),
                  {g.b_t ? g.k : g.n, static_cast<int64_t>(g.b_offset), g.ldb, g.b_bs0, g.b_bs1});
  }
  for (int64_t v : values) {
    if (v % 8 != 0) {
      return false;
    }
  }
  return true;
}

GemmTile gemm_tile(const MatmulGeometry& g, const DeviceCaps& caps, const std::string& dtype) {
  if (coop_aligned(g)) {
    // The KHR rewrite where the device has it (faster than the NV module on an H200:
    // docs/matmul.md), else NV for f16.
    bool khr = !(dtype == "f16" && caps.cooperative_matrix && !caps.cooperative_matrix_khr);
    std::optional<GemmTile> chosen;
    for (GemmTile t : g.bits > 0 ? kCoopQuantTiles : kCoopTiles) {
      t.khr = khr;
      if (!coop_supported(t, caps, dtype) || !tile_fits(t, caps)) {
        continue;
      }
      chosen = t;
      if (ceil_div(g.m, t.bm) * ceil_div(g.n, t.bn) * g.batches >= kBusyGroups / 2) {
        break;
      }
    }
    if (chosen) {
      return *chosen;
    }
  }
  // Each step halves the tile's side and so quarters its work: the largest tile that still
  // gives enough workgroups, else the smallest.
  static const GemmTile candidates[] = {
      {128, 128, 16, 8, 8}, {64, 64, 16, 4, 4}, {32, 32, 16, 2, 2}};
  // For devices that allow fewer than 256 invocations per workgroup.
  static const GemmTile narrow{32, 32, 16, 4, 4};
  const GemmTile* chosen = nullptr;
  for (const auto& t : candidates) {
    if (!tile_fits(t, caps)) {
      continue;
    }
    chosen = &t;
    int64_t groups = ceil_div(g.m, t.bm) * ceil_div(g.n, t.bn) * g.batches;
    if (groups >= kBusyGroups / 2) {
      break;
    }
  }
  if (chosen == nullptr && tile_fits(narrow, caps)) {
    chosen = &narrow;
  }
  if (chosen == nullptr) {
    throw std::runtime_error(
        "[vulkan] gemm: the device allows no GEMM tile (fewer than 64 invocations or 4 KB of "
        "shared memory per workgroup).");
  }
  return *chosen;
}

std::vector<GemmTile> gemm_tile_candidates(const MatmulGeometry& g, const DeviceCaps& caps,
                                           const std::string& dtype, size_t max_count) {
  GemmTile first = gemm_tile(g, caps, dtype);
  std::vector<GemmTile> out{first};
  auto add = [&](GemmTile t) {
    t.khr = first.khr;
    bool seen = false;
    for (const auto& o : out) {
      seen = seen || o.name() == t.name();
    }
    if (!seen && out.size() < max_count && gemm_tile_usable(t, g, caps, dtype)) {
      out.push_back(t);
    }
  };
  if (first.coop) {
    for (const GemmTile& t : g.bits > 0 ? kCoopQuantTiles : kCoopTiles) {
      add(t);
    }
    if (g.bits > 0) {
      for (const GemmTile& t : kCoopTiles) {
        add(t);
      }
    }
  } else {
    for (const GemmTile& t : {GemmTile{128, 128, 16, 8, 8}, GemmTile{64, 64, 16, 4, 4},
                              GemmTile{32, 32, 16, 2, 2}, GemmTile{32, 32, 16, 4, 4}}) {
      add(t);
    }
  }
  return out;
}

GemmTile parse_gemm_tile(const std::string& name) {
  return parse_tile(name, "tile " + name);
}

bool gemm_tile_usable(const GemmTile& t, const MatmulGeometry& g, const DeviceCaps& caps,
                      const std::string& dtype) {
  if (t.coop && (!coop_supported(t, caps, dtype) || !coop_aligned(g))) {
    return false;
  }
  return tile_fits(t, caps);
}

KernelKey gemm_key(const std::string& dtype, const MatmulGeometry& g, const GemmTile& tile) {
  KernelKey key{"gemm", {}};
  bool edge = g.m % tile.bm != 0 || g.n % tile.bn != 0 || g.k % tile.bk != 0 || g.k == 0;
  key.params = {
      {"dtype", dtype},        {"a_t", bit(g.a_t)},
      {"b_t", bit(g.b_t)},     {"edge", bit(edge)},
      {"addmm", bit(g.addmm)}, {"idx", geometry_idx64(g, tile.bm, tile.bn, tile.bk) ? "64" : "32"},
      {"tile", tile.name()}};
  return key;
}

namespace {

// gemm.glsl for a gemm key (quant false) or a qmm key (quant true).
KernelSource gemm_source(const KernelKey& key, const DeviceCaps& caps, bool quant) {
  const std::string where = "kernel " + key.canonical();
  if (quant) {
    check_params(key, {"bits", "dtype", "edge", "gs", "idx", "tile", "trans"}, where);
  } else {
    check_params(key, {"dtype", "a_t", "b_t", "edge", "addmm", "idx", "tile"}, where);
  }
  const DtypeInfo& dt = float_dtype(key, where);
  bool idx64 = parse_idx(key, where);
  GemmTile t = parse_tile(key_param(key, "tile", where), where);
  if (!tile_fits(t, caps)) {
    throw std::runtime_error("[vulkan] " + where +
                             ": the tile needs more invocations or shared memory than the "
                             "device allows.");
  }
  std::vector<const DtypeInfo*> dts{&dt};
  if (quant) {
    dts.push_back(&dtype_info("u32", where));
  }
  std::vector<std::string> defines = storage_defines(dts, idx64, caps, where);
  defines.push_back(std::string("IDX64 ") + bit(idx64));
  add_input_defines("IN0_", dt, defines);
  add_output_defines(dt, defines);
  // The operands (B in MLX's quantized format for qmm), the bounds checks and the tile.
  if (quant) {
    int bits = 0, gs = 0;
    parse_quant(key, where, bits, gs);
    defines.push_back("A_T 0");
    defines.push_back(std::string("B_T ") + bit(flag(key, "trans", where)));
    defines.push_back("ADDMM 0");
    defines.push_back("QUANT 1");
    defines.push_back("BITS " + std::to_string(bits));
    defines.push_back("GS " + std::to_string(gs));
  } else {
    defines.push_back(std::string("A_T ") + bit(flag(key, "a_t", where)));
    defines.push_back(std::string("B_T ") + bit(flag(key, "b_t", where)));
    defines.push_back(std::string("ADDMM ") + bit(flag(key, "addmm", where)));
  }
  defines.push_back(std::string("EDGE ") + bit(flag(key, "edge", where)));
  defines.push_back("BM " + std::to_string(t.bm));
  defines.push_back("BN " + std::to_string(t.bn));
  defines.push_back("BK " + std::to_string(t.bk));
  uint32_t buffers = quant ? 5 : 3;
  KernelSource source;
  uint32_t wg = 0;
  if (t.coop) {
    std::string dtype = dt.name;
    if (dtype != "f16" && !(t.khr && dtype == "bf16")) {
      throw std::invalid_argument("[render] " + where +
                                  ": a cooperative-matrix tile takes f16 keys (bf16 on coopkhr).");
    }
    if (!coop_supported(t, caps, dtype)) {
      throw std::runtime_error("[vulkan] " + where +
                               ": the device has no cooperative matrices for this dtype.");
    }
    if (dtype == "bf16") {
      defines.push_back("COOP_BF16 1");
    }
    defines.push_back("WM " + std::to_string(t.tm));
    defines.push_back("WN " + std::to_string(t.tn));
    source = row_kernel_source("gemm_coop.glsl", defines, buffers, kFields, idx64, caps);
    source.coop_khr = t.khr;
    source.coop_khr_bf16 = dtype == "bf16";
    wg = static_cast<uint32_t>(coop_subgroups(t)) * caps.subgroup_size;
  } else {
    defines.push_back("TM " + std::to_string(t.tm));
    defines.push_back("TN " + std::to_string(t.tn));
    source = row_kernel_source("gemm.glsl", defines, buffers, kFields, idx64, caps);
    wg = static_cast<uint32_t>(tile_invocations(t));
  }
  source.workgroup_size = {wg, 1, 1};
  source.spec_constants = {{0, wg}};
  return source;
}

Launch tiled_launch(const KernelKey& key, const KernelSource& source, const MatmulGeometry& g,
                    int64_t last0, int64_t last1) {
  const std::string where = "kernel " + key.canonical();
  GemmTile t = parse_tile(key_param(key, "tile", where), where);
  int64_t gx = ceil_div(g.n, t.bn), gy = ceil_div(g.m, t.bm);
  constexpr int64_t kMax = 65535;
  if (gx > kMax || gy > kMax || g.batches > kMax) {
    throw std::invalid_argument("[launch] " + where + ": too many workgroups for one launch.");
  }
  Launch launch =
      pack_launch(source,
                  {g.m, g.n, g.k, static_cast<int64_t>(g.a_offset),
                   static_cast<int64_t>(g.b_offset), static_cast<int64_t>(g.out_offset), g.lda,
                   g.ldb, g.nb1, g.a_bs0, g.a_bs1, g.b_bs0, g.b_bs1, last0, last1},
                  parse_idx(key, where), 1, where);
  launch.groups = {static_cast<uint32_t>(gx), static_cast<uint32_t>(gy),
                   static_cast<uint32_t>(g.batches)};
  return launch;
}

}  // namespace

KernelSource render_gemm(const KernelKey& key, const DeviceCaps& caps) {
  return gemm_source(key, caps, false);
}

KernelSource render_qmm(const KernelKey& key, const DeviceCaps& caps) {
  return gemm_source(key, caps, true);
}

KernelKey qmm_key(const std::string& dtype, const MatmulGeometry& g, const GemmTile& tile) {
  bool edge = g.m % tile.bm != 0 || g.n % tile.bn != 0 || g.k % tile.bk != 0 || g.k == 0;
  return KernelKey{"qmm",
                   {{"bits", std::to_string(g.bits)},
                    {"dtype", dtype},
                    {"edge", bit(edge)},
                    {"gs", std::to_string(g.group_size)},
                    {"idx", geometry_idx64(g, tile.bm, tile.bn, tile.bk) ? "64" : "32"},
                    {"tile", tile.name()},
                    {"trans", bit(g.b_t)}}};
}

Launch qmm_launch(const KernelKey& key, const KernelSource& source, const MatmulGeometry& g) {
  const std::string where = "kernel " + key.canonical();
  check_geometry(g, where);
  GemmTile t = parse_tile(key_param(key, "tile", where), where);
  if (g.a_t || key != qmm_key(key_param(key, "dtype", where), g, t)) {
    throw std::invalid_argument("[launch] " + where + " does not match the geometry.");
  }
  return tiled_launch(key, source, g, static_cast<int64_t>(g.scales_offset),
                      static_cast<int64_t>(g.biases_offset));
}

Launch gemm_launch(const KernelKey& key, const KernelSource& source, const MatmulGeometry& g) {
  const std::string where = "kernel " + key.canonical();
  check_geometry(g, where);
  GemmTile t = parse_tile(key_param(key, "tile", where), where);
  if (key != gemm_key(key_param(key, "dtype", where), g, t)) {
    throw std::invalid_argument("[launch] " + where + " does not match the geometry.");
  }
  return tiled_launch(key, source, g, float_bits(g.alpha), float_bits(g.beta));
}

bool gemv_applies(const MatmulGeometry& g) {
  return g.m >= 1 && g.m <= 8 && !g.addmm && g.alpha == 1.0f && !g.a_t && g.k > 0 && g.bits == 0;
}

// The axpy shape's k splits: enough workgroups for kBusyGroups (MLX_VK_GEMV_BUSY overrides
// it, for measuring: on an H100, [1,14336] x [14336,4096] f16 took 53.3-53.9 us at 256, 50.7
// at 128, 59.1-59.6 at 64 and 72.5-73.2 at 1024 or 4096; not changed without an H200 run).
int64_t gemv_splits(const MatmulGeometry& g, const std::string& dtype) {
  if (g.b_t) {
    return 1;
  }
  // Only the column groups and the batch give parallelism without a split.
  uint32_t vec = gemv_vec(dtype, g);
  int64_t columns_per_group = 256 / kAxpySlices;
  int64_t base = ceil_div(ceil_div(g.n, vec), columns_per_group) * g.batches;
  int64_t busy = tuning_env("MLX_VK_GEMV_BUSY", 1, 65536, static_cast<uint32_t>(kBusyGroups));
  if (base >= busy) {
    return 1;
  }
  int64_t want = ceil_div(2 * busy, base);
  int64_t splits = std::clamp<int64_t>(want, 1, std::max<int64_t>(1, g.k / 64));
  int64_t chunk = ceil_div(g.k, splits);
  return ceil_div(g.k, chunk);
}

KernelKey gemv_key(const std::string& dtype, const MatmulGeometry& g, const DeviceCaps& caps) {
  uint32_t vec = gemv_vec(dtype, g);
  uint32_t tpr = g.b_t ? gemv_tpr(g, vec, caps) : 0;
  bool sg = g.b_t && caps.subgroup_shuffle && tpr <= caps.subgroup_size;
  KernelKey key{"gemv", {}};
  key.params = {{"dtype", dtype},
                {"b_t", bit(g.b_t)},
                {"idx", geometry_idx64(g, 1, 1, 1) ? "64" : "32"},
                {"mr", std::to_string(gemv_rows(g.m))},
                {"sg", bit(sg)},
                {"split", bit(gemv_splits(g, dtype) > 1)},
                {"stage", "main"},
                {"tpr", std::to_string(tpr)},
                {"vec", std::to_string(vec)}};
  return key;
}

KernelKey gemv_finish_key(const std::string& dtype, const MatmulGeometry& g) {
  int64_t splits = gemv_splits(g, dtype);
  uint64_t reach =
      std::max(g.out_offset, g.a_offset) + static_cast<uint64_t>(g.batches * g.m * g.n * splits);
  return KernelKey{
      "gemv",
      {{"dtype", dtype}, {"idx", reach_needs_64(reach) ? "64" : "32"}, {"stage", "finish"}}};
}

KernelSource render_gemv(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  const DtypeInfo& dt = float_dtype(key, where);
  bool idx64 = parse_idx(key, where);
  const std::string& stage = key_param(key, "stage", where);
  std::vector<std::string> defines = storage_defines({&dt}, idx64, caps, where);
  defines.push_back(std::string("IDX64 ") + bit(idx64));
  add_input_defines("IN0_", dt, defines);
  add_output_defines(dt, defines);
  if (stage == "finish") {
    check_params(key, {"dtype", "idx", "stage"}, where);
    defines.push_back("STAGE_FINISH 1");
    return row_kernel_source("gemv.glsl", defines, 2, kFields, idx64, caps);
  }
  if (stage != "main") {
    throw std::invalid_argument("[render] " + where + ": stage must be main or finish.");
  }
  check_params(key, {"dtype", "b_t", "idx", "mr", "sg", "split", "stage", "tpr", "vec"}, where);
  bool b_t = flag(key, "b_t", where);
  bool sg = flag(key, "sg", where);
  bool split = flag(key, "split", where);
  const std::string& vec = key_param(key, "vec", where);
  const std::string& mr = key_param(key, "mr", where);
  const std::string& tpr = key_param(key, "tpr", where);
  uint32_t lanes = 128u / static_cast<uint32_t>(dt.bits);
  if ((vec != "1" && vec != std::to_string(lanes)) ||
      (mr != "1" && mr != "2" && mr != "4" && mr != "8")) {
    throw std::invalid_argument("[render] " + where +
                                ": vec must be 1 or 16 bytes of lanes, mr 1, 2, 4 or 8.");
  }
  uint32_t wg = row_workgroup_size(caps);
  if (b_t) {
    uint32_t t = static_cast<uint32_t>(std::stoul(tpr));
    if (t < 1 || t > 32 || (t & (t - 1)) != 0 || wg % t != 0 || split ||
        (sg && (!caps.subgroup_shuffle || t > caps.subgroup_size))) {
      throw std::invalid_argument("[render] " + where +
                                  ": tpr must be a power of two up to 32 (and the subgroup "
                                  "size with sg 1); the dot shape never splits.");
    }
  } else if (tpr != "0" || sg) {
    throw std::invalid_argument("[render] " + where + ": the axpy shape takes tpr 0, sg 0.");
  }
  defines.push_back(std::string("B_T ") + bit(b_t));
  defines.push_back("VEC " + vec);
  defines.push_back("MR " + mr);
  defines.push_back("TPR " + (b_t ? tpr : std::string("32")));
  defines.push_back("KS " + std::to_string(kAxpySlices));
  defines.push_back(std::string("SUBGROUP ") + bit(sg));
  defines.push_back(std::string("SPLIT ") + bit(split));
  if (vec != "1") {
    add_vector_operand_defines("IN0_", dt, lanes, false, defines);
    if (std::string(dt.name) == "f16") {
      defines.push_back("X_F16_PAIRS 1");
    }
  }
  return row_kernel_source("gemv.glsl", defines, 3, kFields, idx64, caps);
}

Launch gemv_launch(const KernelKey& key, const KernelSource& source, const MatmulGeometry& g) {
  const std::string where = "kernel " + key.canonical();
  check_geometry(g, where);
  const std::string& dtype = key_param(key, "dtype", where);
  bool idx64 = parse_idx(key, where);
  int64_t splits = gemv_splits(g, dtype);
  int64_t wg = source.workgroup_size[0];
  if (key_param(key, "stage", where) == "finish") {
    if (key != gemv_finish_key(dtype, g)) {
      throw std::invalid_argument("[launch] " + where + " does not match the geometry.");
    }
    // a_offset locates the partial sums and nb1 carries the batch count here (gemv.glsl's
    // finishing main).
    return pack_launch(source,
                       {g.m, g.n, g.k, static_cast<int64_t>(g.a_offset), 0,
                        static_cast<int64_t>(g.out_offset), 0, 0, g.batches, 0, 0, 0, 0, 0, splits},
                       idx64, static_cast<uint64_t>(ceil_div(g.batches * g.m * g.n, wg)), where);
  }
  // tpr and sg come from the device's caps; every other parameter from the geometry.
  KernelKey expect = gemv_key(dtype, g, DeviceCaps{});
  expect.params["tpr"] = key_param(key, "tpr", where);
  expect.params["sg"] = key_param(key, "sg", where);
  if (!gemv_applies(g) || key != expect) {
    throw std::invalid_argument("[launch] " + where + " does not match the geometry.");
  }
  int64_t kchunk = ceil_div(g.k, splits);
  Launch launch =
      pack_launch(source,
                  {g.m, g.n, g.k, static_cast<int64_t>(g.a_offset),
                   static_cast<int64_t>(g.b_offset), static_cast<int64_t>(g.out_offset), g.lda,
                   g.ldb, g.nb1, g.a_bs0, g.a_bs1, g.b_bs0, g.b_bs1, kchunk, splits},
                  idx64, 1, where);
  int64_t gx;
  if (g.b_t) {
    int64_t tpr = std::stol(key_param(key, "tpr", where));
    gx = ceil_div(g.n, wg / tpr);
  } else {
    int64_t vec = std::stol(key_param(key, "vec", where));
    gx = ceil_div(ceil_div(g.n, vec), wg / kAxpySlices);
  }
  constexpr int64_t kMax = 65535;
  if (gx > kMax || splits > kMax || g.batches > kMax) {
    throw std::invalid_argument("[launch] " + where + ": too many workgroups for one launch.");
  }
  launch.groups = {static_cast<uint32_t>(gx), static_cast<uint32_t>(splits),
                   static_cast<uint32_t>(g.batches)};
  return launch;
}

// ---- qmv ---------------------------------------------------------------------------------

bool qmv_applies(const MatmulGeometry& g) {
  return g.m >= 1 && g.m <= 8 && g.b_t && !g.a_t && g.bits > 0 && g.k > 0 && g.k % 32 == 0;
}

bool qmv_fusion_fits(uint32_t value_bits, const MatmulGeometry& g, const DeviceCaps&) {
  if (!qmv_applies(g) || (g.glu && (g.n % 2 != 0 || g.residual))) {
    return false;
  }
  // qmv_key's vec and idx, without building the key (this runs on every launch: the width
  // comes as a number, not a dtype name to look up).
  uint64_t vec = lanes_if_aligned(value_bits,
                                  {static_cast<int64_t>(g.a_offset), g.lda, g.a_bs0, g.a_bs1, g.k});
  uint64_t out_elems = static_cast<uint64_t>(g.batches * g.m * g.n);
  return !geometry_idx64(g, 1, 1, 1) && g.norm_w_offset % vec == 0 &&
         !reach_needs_64(g.norm_w_offset + static_cast<uint64_t>(g.k)) &&
         !reach_needs_64(g.residual_offset + out_elems);
}

bool qmv_prefetch_fits(const MatmulGeometry& g) {
  return qmv_applies(g) && g.batches == 1 && !geometry_idx64(g, 1, 1, 1);
}

// How a qmv launch shares out its work (docs/matmul.md).
struct QmvShares {
  uint32_t nc;  // columns per team
  uint32_t ks;  // teams ("parts") per column group, each reading every ks-th run of packs
};

// Up to 4 columns share each lane's x values (converted and summed once), as long as the
// launch keeps >= 128 workgroups (small products need the parallelism more), at most 2 with
// 8 rows (registers: MR * NC sums and U * NC packs of words). One row of <= 4 bits with
// >= 4 packs a lane takes 4 columns in 2 parts, the parts restoring the teams the columns
// take away (their arithmetic, not their reads, bounds these products); else 2 columns.
// One row on an H100, against 2 columns in one part: [1,14336] x [4096,14336]^T 20.7 ->
// 18.2 us at 4 bits (f16), 19.5 -> 17.7 bf16; [1,4096] x [14336,4096]^T 20.2 -> 19.9-20.0,
// [1,4096] x [4096,4096]^T 8.3-8.4 -> 8.0. On an H200 2 columns had taken the first from
// 25.2 to 22.5 us. 8 bits split measured 27.0 against 28.9 us on one H100 and 31.6
// against 29.2 on another, so it does not. M = 4 and 8 gained 30% from 4 and 2 columns
// on an H100; 2 parts made them slower there (45 -> 46-49 us, 4 bits, M = 4).
QmvShares qmv_shares(int64_t n, int64_t packs, uint32_t mr, uint32_t tpr, int bits,
                     const DeviceCaps& caps) {
  int64_t teams = row_workgroup_size(caps) / tpr;
  QmvShares s{mr >= 8 ? 2u : 4u, 1};
  if (mr <= 1) {
    bool split = bits <= 4 && teams % 2 == 0 && packs >= 4 * int64_t{tpr};
    s = split ? QmvShares{4, 2} : QmvShares{2, 1};
    // A huge output of short rows (an lm_head: K = 1024, N = 151936) keeps thousands of
    // workgroups with 4 columns, each lane's x values then serving 4 of them: 69.8 -> 59.3
    // us on an H100 (1 column: 94.5).
    if (!split && ceil_div(n, teams * 4) >= 1024) {
      s.nc = 4;
    }
  }
  while (s.nc > 1 && ceil_div(n, teams / s.ks * s.nc) < 128) {
    s.nc /= 2;
  }
  return s;
}

KernelKey qmv_key(const std::string& dtype, const MatmulGeometry& g, const DeviceCaps& caps) {
  // x's rows read as 16-byte vectors when they start at multiples of them; packs of 4 or 8
  // bits as uvec4 when every row of W starts at a multiple of 4 words.
  uint32_t vec = lanes_if_aligned(dtype_bits(dtype),
                                  {static_cast<int64_t>(g.a_offset), g.lda, g.a_bs0, g.a_bs1, g.k});
  bool wvec = g.bits % 4 == 0 && g.b_offset % 4 == 0 && g.ldb % 4 == 0 && g.b_bs0 % 4 == 0 &&
              g.b_bs1 % 4 == 0;
  uint32_t tpr = caps.subgroup_shuffle ? std::min<uint32_t>(32, caps.subgroup_size) : 32;
  int64_t packs = g.k / 32;
  while (tpr > 4 && packs < int64_t{tpr}) {
    tpr /= 2;
  }
  uint32_t mr = gemv_rows(g.m);
  // One row of a huge output with short rows (an lm_head: N = 151936, K = 1024, which takes
  // 4 columns a team in qmv_shares): 16-lane teams, each lane 2 packs a column. On an H100
  // the Qwen3-0.6B lm_head went 58.7-59.2 -> 54.8-55.4 us (8-lane teams in 2 parts:
  // 56.8-57.8; 8 columns a team: 61.1-61.4 at 32 lanes, 56.2-56.5 at 16).
  const int64_t wg_lanes = row_workgroup_size(caps);
  if (mr <= 1 && tpr == 32 && packs >= 32 && packs < 4 * 32 &&
      ceil_div(g.glu ? g.n / 2 : g.n, wg_lanes / 32 * 4) >= 1024) {
    tpr = 16;
  }
  bool sg = caps.subgroup_shuffle && tpr <= caps.subgroup_size;
  QmvShares shares = qmv_shares(g.glu ? g.n / 2 : g.n, packs, mr, tpr, g.bits, caps);
  // A GLU team owns one column of each half.
  uint32_t nc = g.glu ? 2 : shares.nc;
  // Packs in flight per lane: 4 across its columns and its column group's parts (H100, 8
  // bits in 2 parts of 2 columns: u 2 instead of 1 27.0 -> 32.2 us), but no more than a lane
  // has (a decode-sized K = 1024 gives each of 32 lanes one pack). Registers held for
  // packs a lane never loads cost occupancy: on an H200, U = 1 instead of 4 took the
  // Qwen3-0.6B q/k/v and gate/up products from 51 to 32 registers and 10.2 to 9.6 us.
  int64_t per_lane = std::max<int64_t>(1, packs / (tpr * shares.ks));
  uint32_t u = std::max<uint32_t>(1, 4 / (nc * shares.ks));
  while (u > 1 && u > per_lane) {
    u /= 2;
  }
  return KernelKey{"qmv",
                   {{"bits", std::to_string(g.bits)},
                    {"dtype", dtype},
                    {"glu", bit(g.glu)},
                    {"gs", std::to_string(g.group_size)},
                    {"idx", geometry_idx64(g, 1, 1, 1) ? "64" : "32"},
                    {"ks", std::to_string(shares.ks)},
                    {"mr", std::to_string(mr)},
                    {"nc", std::to_string(nc)},
                    {"norm", bit(g.prenorm)},
                    {"pf", bit(g.prefetch && qmv_prefetch_fits(g))},
                    {"res", bit(g.residual)},
                    {"sg", bit(sg)},
                    {"tpr", std::to_string(tpr)},
                    {"u", std::to_string(u)},
                    {"vec", std::to_string(vec)},
                    {"wvec", bit(wvec)}}};
}

KernelSource render_qmv(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  check_params(key,
               {"bits", "dtype", "glu", "gs", "idx", "ks", "mr", "nc", "norm", "pf", "res", "sg",
                "tpr", "u", "vec", "wvec"},
               where);
  const DtypeInfo& dt = float_dtype(key, where);
  bool idx64 = parse_idx(key, where);
  int bits = 0, gs = 0;
  parse_quant(key, where, bits, gs);
  bool sg = flag(key, "sg", where);
  bool wvec = flag(key, "wvec", where);
  bool norm = flag(key, "norm", where);
  bool res = flag(key, "res", where);
  bool glu = flag(key, "glu", where);
  bool pf = flag(key, "pf", where);
  const std::string& vec = key_param(key, "vec", where);
  const std::string& mr = key_param(key, "mr", where);
  const std::string& nc = key_param(key, "nc", where);
  uint32_t tpr = static_cast<uint32_t>(std::stoul(key_param(key, "tpr", where)));
  const std::string& ks = key_param(key, "ks", where);
  uint32_t lanes = 128u / static_cast<uint32_t>(dt.bits);
  uint32_t wg = row_workgroup_size(caps);
  if (ks != "1" && ks != "2" && ks != "4") {
    throw std::invalid_argument("[render] " + where + ": ks must be 1, 2 or 4.");
  }
  if ((vec != "1" && vec != std::to_string(lanes)) ||
      (mr != "1" && mr != "2" && mr != "4" && mr != "8") || (nc != "1" && nc != "2" && nc != "4") ||
      tpr < 1 || tpr > 32 || (tpr & (tpr - 1)) != 0 || wg % (tpr * std::stoul(ks)) != 0 ||
      (sg && (!caps.subgroup_shuffle || tpr > caps.subgroup_size)) || (wvec && bits % 4 != 0) ||
      ((norm || res || glu || pf) && idx64) || (glu && (nc != "2" || res))) {
    throw std::invalid_argument(
        "[render] " + where +
        ": vec must be 1 or 16 bytes of lanes, mr 1, 2, 4 or 8, nc 1, 2 "
        "or 4, tpr a "
        "power of two up to 32 (the subgroup size with sg 1) whose teams split into ks parts, "
        "wvec 1 "
        "only for 4 or 8 bits, norm, res, glu and pf 1 only with idx 32, glu with nc 2 "
        "and no res.");
  }
  std::vector<std::string> defines =
      storage_defines({&dt, &dtype_info("u32", where)}, idx64, caps, where);
  defines.push_back(std::string("IDX64 ") + bit(idx64));
  add_input_defines("IN0_", dt, defines);
  add_output_defines(dt, defines);
  defines.push_back("BITS " + std::to_string(bits));
  defines.push_back("GS " + std::to_string(gs));
  defines.push_back("MR " + mr);
  defines.push_back("NC " + nc);
  const std::string& u = key_param(key, "u", where);
  if (u != "1" && u != "2" && u != "4") {
    throw std::invalid_argument("[render] " + where + ": u must be 1, 2 or 4.");
  }
  defines.push_back("U " + u);
  defines.push_back("TPR " + std::to_string(tpr));
  defines.push_back("KS " + ks);
  defines.push_back(std::string("SUBGROUP ") + bit(sg));
  defines.push_back("VEC " + vec);
  defines.push_back(std::string("WVEC ") + bit(wvec));
  defines.push_back(std::string("PRENORM ") + bit(norm));
  defines.push_back(std::string("RESIDUAL ") + bit(res));
  defines.push_back(std::string("GLU ") + bit(glu));
  defines.push_back(std::string("PREFETCH ") + bit(pf));
  if (glu) {
    // The sigmoid the elementwise family uses for this dtype, so the epilogue computes what
    // the compiled SwiGLU it replaces would.
    defines.push_back("GLU_SIGMOID(x) " + elementwise_op("unary", "Sigmoid", {&dt}, where).body);
  }
  if (vec != "1") {
    add_vector_operand_defines("IN0_", dt, lanes, false, defines);
    if (std::string(dt.name) == "f16") {
      defines.push_back("X_F16_PAIRS 1");
    }
  }
  uint32_t buffers = 5 + (norm ? 1 : 0) + (res ? 1 : 0) + (pf ? kPrefetchRegions : 0);
  uint32_t fields = kFields + (norm ? 2 : 0) + (res ? 1 : 0) + (pf ? kPrefetchFields : 0);
  return row_kernel_source("qmv.glsl", defines, buffers, fields, idx64, caps);
}

Launch qmv_launch(const KernelKey& key, const KernelSource& source, const MatmulGeometry& g) {
  const std::string where = "kernel " + key.canonical();
  check_geometry(g, where);
  // tpr and sg come from the device's caps; every other parameter from the geometry.
  KernelKey expect =
      qmv_applies(g) ? qmv_key(key_param(key, "dtype", where), g, DeviceCaps{}) : KernelKey{};
  expect.params["tpr"] = key_param(key, "tpr", where);
  expect.params["sg"] = key_param(key, "sg", where);
  expect.params["nc"] = key_param(key, "nc", where);
  expect.params["u"] = key_param(key, "u", where);
  expect.params["ks"] = key_param(key, "ks", where);
  expect.params["pf"] = key_param(key, "pf", where);
  if (!qmv_applies(g) || key != expect) {
    throw std::invalid_argument("[launch] " + where + " does not match the geometry.");
  }
  int64_t tpr = std::stol(key_param(key, "tpr", where));
  int64_t nc = std::stol(key_param(key, "nc", where));
  // Column groups per workgroup: its teams, ks parts to a group.
  int64_t groups =
      static_cast<int64_t>(source.workgroup_size[0]) / tpr / std::stol(key_param(key, "ks", where));
  // A GLU group owns column n of both halves: n / 2 groups.
  int64_t gx = g.glu ? ceil_div(g.n / 2, groups) : ceil_div(g.n, groups * nc);
  constexpr int64_t kMax = 65535;
  if (gx > kMax || g.batches > kMax) {
    throw std::invalid_argument("[launch] " + where + ": too many workgroups for one launch.");
  }
  std::vector<int64_t> fields{g.m,
                              g.n,
                              g.k,
                              static_cast<int64_t>(g.a_offset),
                              static_cast<int64_t>(g.b_offset),
                              static_cast<int64_t>(g.out_offset),
                              g.lda,
                              g.ldb,
                              g.nb1,
                              g.a_bs0,
                              g.a_bs1,
                              g.b_bs0,
                              g.b_bs1,
                              static_cast<int64_t>(g.scales_offset),
                              static_cast<int64_t>(g.biases_offset)};
  if (g.prenorm) {
    uint32_t eps_bits = 0;
    std::memcpy(&eps_bits, &g.eps, 4);
    fields.push_back(static_cast<int64_t>(g.norm_w_offset));
    fields.push_back(eps_bits);
  }
  if (g.residual) {
    fields.push_back(static_cast<int64_t>(g.residual_offset));
  }
  bool pf = flag(key, "pf", where);
  if (pf) {
    // The product's own workgroups, then empty regions (add_prefetch sets them).
    if (!qmv_prefetch_fits(g)) {
      throw std::invalid_argument("[launch] " + where + ": pf 1 needs one batch and idx 32.");
    }
    fields.push_back(gx);
    fields.insert(fields.end(), kPrefetchFields - 1, 0);
  }
  Launch launch = pack_launch(source, fields, parse_idx(key, where), 1, where);
  launch.groups = {static_cast<uint32_t>(gx), 1, static_cast<uint32_t>(g.batches)};
  return launch;
}

std::array<uint32_t, 3> add_prefetch(const Launch& launch, uint32_t workgroup_size,
                                     std::span<const PrefetchRegion> regions,
                                     std::span<uint8_t> push) {
  constexpr size_t kRegionBytes = 4 * (kPrefetchFields - 1);
  // A pf 1 launch's pf_groups field (before the regions) holds its own workgroup count.
  uint32_t own = 0;
  if (push.size() == launch.push_constants.size() && push.size() >= kRegionBytes + 4) {
    std::memcpy(&own, launch.push_constants.data() + push.size() - kRegionBytes - 4, 4);
  }
  if (push.size() != launch.push_constants.size() || push.size() < kRegionBytes + 4 ||
      own != launch.groups[0] || regions.size() > kPrefetchRegions || workgroup_size == 0) {
    throw std::invalid_argument("[launch] add_prefetch: not a launch with prefetch regions.");
  }
  std::copy(launch.push_constants.begin(), launch.push_constants.end(), push.begin());
  uint32_t first[kPrefetchRegions] = {};
  uint32_t sectors[kPrefetchRegions] = {};
  uint64_t budget = kPrefetchBytes;
  uint64_t total = 0;
  for (size_t r = 0; r < regions.size(); ++r) {
    uint64_t bytes = std::min(regions[r].bytes, budget);
    uint64_t n = bytes / 32;
    // Word offsets are 32-bit in the kernel: a region beyond them is left out.
    if (n == 0 || regions[r].first_word + 8 * n > UINT32_MAX) {
      continue;
    }
    first[r] = static_cast<uint32_t>(regions[r].first_word);
    sectors[r] = static_cast<uint32_t>(n);
    budget -= 32 * n;
    total += n;
  }
  uint64_t per_group = uint64_t{workgroup_size} * kPrefetchLoads;
  uint64_t pf_groups = (total + per_group - 1) / per_group;
  // Past the grid's limit (what every device supports) the launch brings nothing in.
  constexpr uint64_t kMaxGroups = 65535;
  if (launch.groups[0] + pf_groups > kMaxGroups) {
    pf_groups = 0;
    std::fill(std::begin(sectors), std::end(sectors), 0u);
  }
  uint8_t* at = push.data() + push.size() - kRegionBytes;
  std::memcpy(at, first, sizeof(first));
  std::memcpy(at + sizeof(first), sectors, sizeof(sectors));
  std::array<uint32_t, 3> groups = launch.groups;
  groups[0] += static_cast<uint32_t>(pf_groups);
  return groups;
}

}  // namespace mlx::core::vulkan::codegen
