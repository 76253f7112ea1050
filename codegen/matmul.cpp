// The "gemm" and "gemv" families (codegen/matmul.h): tile choice, keys, rendering and
// launch packing for templates/gemm.glsl and templates/gemv.glsl.
#include "codegen/matmul.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include "codegen/dtypes.h"
#include "codegen/internal.h"
#include "codegen/matmul_internal.h"

namespace mlx::core::vulkan::codegen {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
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

uint32_t dtype_bits(const std::string& dtype) {
  return static_cast<uint32_t>(dtype_info(dtype, "gemv").bits);
}

uint32_t lanes_if_aligned(uint32_t bits, std::initializer_list<int64_t> values) {
  uint32_t lanes = 128u / bits;
  for (int64_t v : values) {
    if (v % lanes != 0) {
      return 1;
    }
  }
  return lanes;
}

uint32_t gemv_rows(int64_t m) {
  uint32_t r = 1;
  while (r < m) {
    r *= 2;
  }
  return r;
}

namespace {

// Workgroups that keep a large GPU busy (an H200 has 132 multiprocessors); below this a
// smaller tile (gemm) or a split along k (gemv) pays.
constexpr int64_t kBusyGroups = 256;
constexpr int64_t kAxpySlices = 4;  // KS in gemv.glsl

int64_t float_bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return static_cast<int64_t>(b);
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

// The tile rule's candidates where the device reports its compute units: kCoopTiles and
// 128 x 128 x 16 (8 subgroups of 64 x 32), with what each costs by waves, measured on an
// H200 (132 multiprocessors; docs/matmul.md, "Tiles by waves" and "Two workgroups a
// multiprocessor"): workgroups resident a multiprocessor at once, and the time of one
// wave's k loop relative to the 128 x 128 x 32 tile's. The 128 x 128 x 16 tile's registers
// let two workgroups share a multiprocessor, each one's barriers and shared-memory loads
// covered by the other's multiply-adds: two take 1.63 times one 128 x 128 x 32 workgroup's
// time ([4096,4096] x [4096,4096]^T 650 -> 528 us). Alone on a multiprocessor it is the
// slower one (k steps of 16), so the grid rule below, which does not count waves, leaves it
// out, and the wave rule takes it only for products of at least 1024 rows and k of at least
// 4096: there it won or tied on every product measured (up to 19% faster), where with 768
// rows or fewer, or k of 3072 or less, it lost on most (up to 2x slower; Qwen3-0.6B's
// prefill, whose k are 1024 to 3072, 2-4% slower in all). A wave also pays a fixed
// kWaveOverheadK (launch, first loads, the epilogue's stores), counted in the same units as k.
// Other devices that report their compute units take the same figures until measured there
// (MLX_VK_AUTOTUNE=on times the candidates instead).
struct WaveTile {
  GemmTile tile;
  int resident;
  double cost;         // B as a weight's transpose (n rows of k)
  double cost_b_rows;  // B as stored (k rows of n)
  // The least rows (m) and depth (k) of a product the tile is a candidate for.
  int64_t min_m = 0, min_k = 0;
};
constexpr WaveTile kCoopWaveTiles[] = {{{128, 256, 16, 64, 64, true}, 1, 2.08, 1.86},
                                       {{128, 128, 16, 64, 32, true}, 2, 1.63, 1.63, 1024, 4096},
                                       {{128, 128, 32, 64, 32, true}, 1, 1.0, 1.0},
                                       {{64, 64, 32, 32, 32, true}, 2, 0.78, 0.78}};
constexpr double kWaveOverheadK = 256;

int64_t coop_groups(const GemmTile& t, const MatmulGeometry& g) {
  return ceil_div(std::max<int64_t>(g.m, 1), t.bm) * ceil_div(std::max<int64_t>(g.n, 1), t.bn) *
         std::max<int64_t>(g.batches, 1);
}

// The estimated time of a problem on kCoopWaveTiles[i], in units of the 128 x 128 x 32
// tile's time per value of k: waves of workgroups times one wave's time.
double coop_wave_estimate(size_t i, const MatmulGeometry& g, uint32_t compute_units) {
  const WaveTile& w = kCoopWaveTiles[i];
  int64_t waves = ceil_div(coop_groups(w.tile, g), int64_t{compute_units} * w.resident);
  double cost = g.b_t ? w.cost : w.cost_b_rows;
  return static_cast<double>(waves) * (cost * static_cast<double>(g.k) + kWaveOverheadK);
}

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

uint32_t gemv_vec(const std::string& dtype, const MatmulGeometry& g) {
  if (g.b_t) {
    return lanes_if_aligned(dtype_bits(dtype),
                            {g.k, static_cast<int64_t>(g.a_offset), g.lda, g.a_bs0, g.a_bs1,
                             static_cast<int64_t>(g.b_offset), g.ldb, g.b_bs0, g.b_bs1});
  }
  return lanes_if_aligned(dtype_bits(dtype), {g.n, static_cast<int64_t>(g.b_offset), g.ldb, g.b_bs0,
                                              g.b_bs1, static_cast<int64_t>(g.out_offset)});
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
  if (g.a_padded && (!g.a_t || g.lda < ceil_div(g.m, 8) * 8)) {
    throw std::invalid_argument("[launch] " + where +
                                ": a padded A must be transposed, with rows of at least m "
                                "rounded up to 8.");
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
  int64_t a_contig = !g.a_t ? g.k : g.a_padded ? ceil_div(g.m, 8) * 8 : g.m;
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
    if (g.bits == 0 && caps.compute_units > 0) {
      // Where the device says how many workgroups run at once: the tile of the fewest
      // estimated waves' time (the larger tile on a tie). A ragged row count can leave
      // the larger tile's last wave nearly empty or the smaller tile's many waves
      // half-used: [384, 4096] x [4096, 4096]^T took 135 us on 64 x 64 tiles and 86 on
      // 128 x 128 (H200).
      // MLX_VK_GEMM_TWO_RESIDENT=0 leaves out the 128x128x16 tile, the one with bounds
      // (measuring; the autotune's candidates keep it).
      static const bool two_resident = tuning_env("MLX_VK_GEMM_TWO_RESIDENT", 0, 1, 1) == 1;
      double best = 0;
      for (size_t i = 0; i < std::size(kCoopWaveTiles); ++i) {
        const WaveTile& w = kCoopWaveTiles[i];
        GemmTile t = w.tile;
        t.khr = khr;
        bool bounded = w.min_m > 0 || w.min_k > 0;
        if (g.m < w.min_m || g.k < w.min_k || (bounded && !two_resident)) {
          continue;
        }
        if (!coop_supported(t, caps, dtype) || !tile_fits(t, caps)) {
          continue;
        }
        double estimate = coop_wave_estimate(i, g, caps.compute_units);
        if (!chosen || estimate < best) {
          chosen = t;
          best = estimate;
        }
      }
      if (chosen) {
        return *chosen;
      }
    }
    // Elsewhere the largest tile that still gives enough workgroups to fill a large GPU.
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
    for (const WaveTile& w : kCoopWaveTiles) {
      add(w.tile);
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

namespace {

// The coop kernel checks only A's rows and the stores' rows when only M is ragged (a
// prompt's length): "edge=m" (docs/matmul.md, "Ragged rows: only rows checked"), for the
// gemm and the qmm tiles. MLX_VK_GEMM_EDGE_ROWS=0 checks everything instead (for measuring).
std::string edge_param(const MatmulGeometry& g, const GemmTile& tile) {
  bool ragged_nk = g.n % tile.bn != 0 || g.k % tile.bk != 0 || g.k == 0;
  bool ragged_m = g.m % tile.bm != 0;
  static const bool split = tuning_env("MLX_VK_GEMM_EDGE_ROWS", 0, 1, 1) == 1;
  return ragged_nk ? "1" : !ragged_m ? "0" : tile.coop && split ? "m" : "1";
}

}  // namespace

KernelKey gemm_key(const std::string& dtype, const MatmulGeometry& g, const GemmTile& tile) {
  KernelKey key{"gemm", {}};
  std::string edge = edge_param(g, tile);
  key.params = {
      {"dtype", dtype},        {"a_t", bit(g.a_t)},
      {"b_t", bit(g.b_t)},     {"edge", edge},
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
  const std::string& edge = key_param(key, "edge", where);
  if (edge == "m" && !t.coop) {
    throw std::invalid_argument("[render] " + where + ": edge=m is for coop tiles.");
  }
  defines.push_back(std::string("EDGE ") + (edge == "m" ? "0" : bit(flag(key, "edge", where))));
  defines.push_back(std::string("EDGE_ROWS ") + (edge == "m" ? "1" : "0"));
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
  return KernelKey{"qmm",
                   {{"bits", std::to_string(g.bits)},
                    {"dtype", dtype},
                    {"edge", edge_param(g, tile)},
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

}  // namespace mlx::core::vulkan::codegen
