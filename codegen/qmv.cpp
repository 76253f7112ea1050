// The "qmv" family (codegen/matmul.h): quantized matrix-vector products of up to 8 rows,
// templates/qmv.glsl, with the ops a decode step's products absorb (norm, residual, SwiGLU)
// and the prefetch of the next product's weights. Its key, rendering and launch.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "codegen/elementwise_ops.h"
#include "codegen/internal.h"
#include "codegen/matmul.h"
#include "codegen/matmul_internal.h"

namespace mlx::core::vulkan::codegen {

namespace {

// The prefetch (templates/include/prefetch.glsl): regions, push constants (pf_groups and
// two per region) and sectors per invocation (PF_LOADS).
constexpr uint32_t kPrefetchRegions = 3;
constexpr uint32_t kPrefetchFields = 1 + 2 * kPrefetchRegions;
constexpr uint64_t kPrefetchLoads = 4;

// X8's shared memory (templates/qmv.glsl): 4 x 16 bytes of bytes and 8 bytes of scale and
// sum a pack, and room for the team sums and the norm's per-subgroup sums beside them.
constexpr int64_t kX8PackBytes = 72;
constexpr int64_t kX8SharedSlack = 2048;
// The longest row X8 stages whole before its first product, in packs (K = 4096; qmv_key says
// why); longer ones stage it a step at a time, where they take X8.
constexpr int64_t kX8MaxPacks = 128;

// How a qmv launch shares out its work (docs/matmul.md).
struct QmvShares {
  uint32_t nc;  // columns per team
  uint32_t ks;  // teams ("parts") per column group, each reading every ks-th run of packs
};

// The row kernels' workgroup (256 invocations); MLX_VK_QMV_WG=128..1024 replaces it for
// measuring (a power of two within the device's limit; the key does not carry it, so keep
// a separate MLX_VK_CACHE_DIR per value).
uint32_t qmv_workgroup_size(const DeviceCaps& caps) {
  uint32_t wg = row_workgroup_size(caps);
  uint32_t forced = tuning_env("MLX_VK_QMV_WG", 0, 1024, 0);
  if (forced != 0 && (forced & (forced - 1)) == 0 && forced >= 64 &&
      forced <= std::max(caps.max_workgroup_invocations, wg)) {
    wg = forced;
  }
  return wg;
}

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
QmvShares qmv_shares(int64_t n, int64_t packs, uint32_t mr, uint32_t tpr, int bits, bool i8,
                     const DeviceCaps& caps) {
  int64_t teams = qmv_workgroup_size(caps) / tpr;
  QmvShares s{mr >= 8 ? 2u : 4u, 1};
  if (mr <= 1) {
    // Long rows split into 2 parts, except rows on integer dot products (i8) where the
    // grid is already large: an lm_head (N = 151936, K = 4096: ~4750 workgroups of 8 teams
    // of 4 columns) took 117.5 us in 2 parts and 94.4 whole (0.69 -> 0.85 of the read peak
    // on an H200), where q/k/v (N = 6144) gained from the split (9.1 -> 8.6) and the down
    // projection (N = 4096, K = 12288) more (17.6 -> 14.9). Longer rows keep their parts
    // and f16 pair sums (whole, they would take the f32 sums: not measured).
    // MLX_VK_QMV_SPLIT_BELOW moves the limit (workgroups, for measuring).
    static const uint32_t split_below = tuning_env("MLX_VK_QMV_SPLIT_BELOW", 1, 1u << 30, 1024);
    bool split = bits <= 4 && teams % 2 == 0 && packs >= 4 * int64_t{tpr} &&
                 (!i8 || ceil_div(n, teams * 4) < int64_t{split_below});
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

}  // namespace

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
  const int64_t wg_lanes = qmv_workgroup_size(caps);
  if (mr <= 1 && tpr == 32 && packs >= 32 && packs < 4 * 32 &&
      ceil_div(g.glu ? g.n / 2 : g.n, wg_lanes / 32 * 4) >= 1024) {
    tpr = 16;
  }
  tpr = tuning_env("MLX_VK_QMV_TPR", 4, 32, tpr);  // for measuring, as the overrides below
  bool sg = caps.subgroup_shuffle && tpr <= caps.subgroup_size;
  // One f16 or bf16 row of 4-bit packs as integer dot products against x staged in shared
  // memory as bytes (templates/qmv.glsl, X8), where the device has them and the staged row
  // fits beside the team sums (72 bytes a pack), for rows of at most 4096 values. On an
  // H200 (bf16, against the sums otherwise taken): K = 4096 products 10.9 -> 8.8 us (q/k/v
  // with the norm), [1,4096] x [14336,4096]^T 18.4 -> 15.0, the Qwen3-0.6B lm_head (K =
  // 1024) 43.0 -> 28.7; but K = 12288 (a down projection) 14.8 -> 16.5 and f16 K = 14336
  // 14.0 -> 18.0: every workgroup stages the whole row before its first product, and long
  // rows give fewer workgroups to hide that (docs/matmul.md). MLX_VK_QMV_I8=0 keeps the
  // other sums; MLX_VK_QMV_I8_PACKS moves the limit (in packs of 32, for measuring).
  // Longer rows of a huge output stage x a step at a time, each step's packs during the
  // step before (templates/qmv.glsl, X8_STREAM; below). MLX_VK_QMV_I8_STREAM=0 keeps them on
  // the other sums, 2 streams every i8 row (measuring).
  int64_t staged = packs * kX8PackBytes + kX8SharedSlack;
  uint32_t stream_env = tuning_env("MLX_VK_QMV_I8_STREAM", 0, 2, 1);
  bool long_row = packs > tuning_env("MLX_VK_QMV_I8_PACKS", 1, 1 << 20, kX8MaxPacks);
  bool i8 = (dtype == "f16" || dtype == "bf16") && g.bits == 4 && mr == 1 && vec == 8 && wvec &&
            sg && caps.subgroup_size >= 4 && caps.integer_dot_product &&
            staged <= int64_t{caps.max_shared_memory} && (!long_row || stream_env > 0) &&
            tuning_env("MLX_VK_QMV_I8", 0, 1, 1) == 1;
  // The parts, columns and packs in flight of a launch with or without i8 (qmv_shares
  // differs for huge outputs).
  struct Plan {
    QmvShares shares;
    uint32_t nc, u;
    int64_t per_lane;  // packs a lane takes of each column
  };
  auto plan = [&](bool with_i8) {
    QmvShares shares = qmv_shares(g.glu ? g.n / 2 : g.n, packs, mr, tpr, g.bits, with_i8, caps);
    // MLX_VK_QMV_KS / MLX_VK_QMV_U override the parts and packs in flight (for measuring).
    shares.ks = tuning_env("MLX_VK_QMV_KS", 1, 4, shares.ks);
    if ((wg_lanes / tpr) % shares.ks != 0 || shares.ks == 3) {
      throw std::invalid_argument("[quantized_matmul] MLX_VK_QMV_KS must divide the " +
                                  std::to_string(wg_lanes / tpr) + " teams of a workgroup.");
    }
    // A GLU team owns nc / 2 columns of each half: 2 of each where qmv_shares gives the half
    // 4 columns a team (an 8B-class gate/up with its norm 43.6 -> 37.4 us on an H200: x's
    // loads, norm and sums shared by 4 columns), else 1. MLX_VK_QMV_GLU_NC=2 or 4 forces one
    // (measuring).
    uint32_t nc = tuning_env("MLX_VK_QMV_NC", 1, 4, shares.nc);
    if (g.glu) {
      nc = tuning_env("MLX_VK_QMV_GLU_NC", 2, 4, shares.nc >= 4 ? 4 : 2) >= 4 ? 4 : 2;
    }
    // Packs in flight per lane: 4 across its columns and its column group's parts (H100, 8
    // bits in 2 parts of 2 columns: u 2 instead of 1 27.0 -> 32.2 us), but no more than a
    // lane has (a decode-sized K = 1024 gives each of 32 lanes one pack). Registers held for
    // packs a lane never loads cost occupancy: on an H200, U = 1 instead of 4 took the
    // Qwen3-0.6B q/k/v and gate/up products from 51 to 32 registers and 10.2 to 9.6 us.
    int64_t per_lane = std::max<int64_t>(1, packs / (tpr * shares.ks));
    uint32_t u = std::max<uint32_t>(1, 4 / (nc * shares.ks));
    while (u > 1 && u > per_lane) {
      u /= 2;
    }
    u = tuning_env("MLX_VK_QMV_U", 1, 4, u);
    return Plan{shares, nc, u, per_lane};
  };
  Plan p = plan(i8);
  // A long row streams only where it is read whole (ks 1: a huge output, qmv_shares): with
  // few workgroups a barrier a step lost to the other sums (H200, [1,14336] x
  // [4096,14336]^T 13.9 -> 21.2 us, the 8B down projection 14.7 -> 18.7), where a 14B-class
  // lm_head ([1,5120] x [151936,5120]^T) gained (182 -> 139). Elsewhere i8 is off for it,
  // and the launch is planned again without it.
  auto stream_fits = [&](const Plan& q) { return q.u == 1 && tpr * q.shares.ks * 4 <= wg_lanes; };
  if (i8 && long_row && !(stream_fits(p) && p.shares.ks == 1)) {
    i8 = false;
    p = plan(false);
  }
  const QmvShares& shares = p.shares;
  uint32_t nc = p.nc, u = p.u;
  int64_t per_lane = p.per_lane;
  bool stream = i8 && stream_fits(p) && (long_row || stream_env == 2);
  // f16 rows of 4-bit values summed in f16 pairs (templates/qmv.glsl, F16_DOT) where a
  // lane has packs to pipeline: the split rule's long rows (2 parts), no fused norm (its
  // weighed x would be rounded to f16 unnormalized), on devices with f16 arithmetic. On an
  // H200, [1,14336] x [4096,14336]^T 17.1-17.3 -> 14.9-15.0 us; the same for bf16 x
  // (converted to f16 with a power-of-two scale per pack) and for Qwen3-0.6B's short rows
  // was not faster (docs/matmul.md, "qmv's single row in f16 pairs").
  // bf16 x too where a lane has >= 3 steps: each pack's x converted to f16, summed again in
  // f32 where that is not exact (templates/qmv.glsl, X_BF16). On an H100, bf16 [1,14336] x
  // [4096,14336]^T 17.4-17.7 -> 15.8-16.0 us, but [1,4096] x [14336,4096]^T (2 steps a lane)
  // 18.8-18.9 -> 20.9-21.0. MLX_VK_QMV_F16_DOT=0 keeps the f32 sums (for measuring).
  bool f16_x = dtype == "f16" || (dtype == "bf16" && per_lane >= 3);
  // Several rows take them where a lane has >= 2 steps: 2 to 4 f16 rows, 2 bf16 rows, each
  // pack's values made once for all rows. On an H100 (4 bits, against the f32 sums):
  // f16 [M,14336] x [4096,14336]^T M = 2 / 3 / 4 27.8 / 35.5 / 42.2 -> 22.0 / 31.2 / 38.9
  // us, [M,4096] x [14336,4096]^T 34.8 / 43.1 / 48.6 -> 27.4 / 36.9 / 43.0; bf16 M = 2
  // 27.9 -> 25.5 and 35.0 -> 31.9, but bf16 M = 3 and 4 (35.8 -> 39.8, 42.6 -> 50.0) and
  // 8 rows of either (f16 79.1 -> 125.1) lost (docs/matmul.md).
  bool long_rows = mr == 1 ? shares.ks == 2 : per_lane >= 2 && (dtype == "f16" ? mr <= 4 : mr == 2);
  bool f16_dot = f16_x && long_rows && g.bits == 4 && vec == 8 && !g.prenorm && !g.glu &&
                 caps.shader_float16 && tuning_env("MLX_VK_QMV_F16_DOT", 0, 1, 1) == 1;
  return KernelKey{"qmv",
                   {{"bits", std::to_string(g.bits)},
                    {"dot", i8        ? "i8"
                            : f16_dot ? "f16"
                                      : "f32"},
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
                    {"stream", bit(stream)},
                    {"tpr", std::to_string(tpr)},
                    {"u", std::to_string(u)},
                    {"vec", std::to_string(vec)},
                    {"wvec", bit(wvec)},
                    {"xpacks", i8 ? std::to_string(packs) : "0"}}};
}

KernelSource render_qmv(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  check_params(key,
               {"bits", "dot", "dtype", "glu", "gs", "idx", "ks", "mr", "nc", "norm", "pf", "res",
                "sg", "stream", "tpr", "u", "vec", "wvec", "xpacks"},
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
  uint32_t wg = qmv_workgroup_size(caps);
  const std::string& dot = key_param(key, "dot", where);
  bool f16_dot = dot == "f16";
  bool i8 = dot == "i8";
  const std::string& xpacks = key_param(key, "xpacks", where);
  bool is16 = std::string(dt.name) == "f16" || std::string(dt.name) == "bf16";
  if (i8 != (xpacks != "0") ||
      (i8 &&
       (!is16 || bits != 4 || mr != "1" || vec != "8" || !wvec || !sg || caps.subgroup_size < 4 ||
        !caps.integer_dot_product || std::stoll(xpacks) < 1 ||
        std::stoll(xpacks) * kX8PackBytes + kX8SharedSlack > int64_t{caps.max_shared_memory}))) {
    throw std::invalid_argument("[render] " + where +
                                ": dot i8 (with xpacks, the row's packs, else 0) takes one f16 "
                                "or bf16 row of 4-bit values read as vectors, with subgroup "
                                "shuffles and integer dot products, whose staged row fits the "
                                "device's shared memory.");
  }
  if ((dot != "f32" && !f16_dot && !i8) ||
      (f16_dot && (!is16 || bits != 4 || vec != std::to_string(lanes) || norm || glu ||
                   !caps.shader_float16))) {
    throw std::invalid_argument("[render] " + where +
                                ": dot must be f32, or f16 for f16 or bf16 rows of 4-bit "
                                "values read as 16-byte vectors, unfused with a norm or SwiGLU, "
                                "on a device with f16 arithmetic.");
  }
  if (ks != "1" && ks != "2" && ks != "4") {
    throw std::invalid_argument("[render] " + where + ": ks must be 1, 2 or 4.");
  }
  if ((vec != "1" && vec != std::to_string(lanes)) ||
      (mr != "1" && mr != "2" && mr != "4" && mr != "8") || (nc != "1" && nc != "2" && nc != "4") ||
      tpr < 1 || tpr > 32 || (tpr & (tpr - 1)) != 0 || wg % (tpr * std::stoul(ks)) != 0 ||
      (sg && (!caps.subgroup_shuffle || tpr > caps.subgroup_size)) || (wvec && bits % 4 != 0) ||
      ((norm || res || glu || pf) && idx64) || (glu && ((nc != "2" && nc != "4") || res))) {
    throw std::invalid_argument(
        "[render] " + where +
        ": vec must be 1 or 16 bytes of lanes, mr 1, 2, 4 or 8, nc 1, 2 or 4, tpr a power "
        "of two up to 32 (the subgroup size with sg 1) whose teams split into ks parts, wvec 1 "
        "only for 4 or 8 bits, norm, res, glu and pf 1 only with idx 32, glu with nc 2 or 4 "
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
  bool stream = flag(key, "stream", where);
  if (stream && (!i8 || u != "1" || tpr * std::stoul(ks) * 4 > wg)) {
    throw std::invalid_argument("[render] " + where +
                                ": stream 1 takes dot i8 with u 1 and at most one group of 8 "
                                "values of x an invocation a step (tpr * ks * 4 <= " +
                                std::to_string(wg) + ").");
  }
  defines.push_back(std::string("X8_STREAM ") + bit(stream));
  defines.push_back(std::string("F16_DOT ") + bit(f16_dot));
  defines.push_back(std::string("X8 ") + bit(i8));
  defines.push_back("XPACKS " + xpacks);
  defines.push_back(std::string("X_BF16 ") + bit(f16_dot && std::string(dt.name) == "bf16"));
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
  KernelSource source = row_kernel_source("qmv.glsl", defines, buffers, fields, idx64, caps);
  source.workgroup_size = {wg, 1, 1};
  source.spec_constants = {{0, wg}};
  return source;
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
  expect.params["dot"] = key_param(key, "dot", where);
  expect.params["xpacks"] = key_param(key, "xpacks", where);
  expect.params["stream"] = key_param(key, "stream", where);
  bool i8_rows = key_param(key, "dot", where) != "i8" ||
                 key_param(key, "xpacks", where) == std::to_string(g.k / 32);
  if (!qmv_applies(g) || key != expect || !i8_rows) {
    throw std::invalid_argument("[launch] " + where + " does not match the geometry.");
  }
  int64_t tpr = std::stol(key_param(key, "tpr", where));
  int64_t nc = std::stol(key_param(key, "nc", where));
  // Column groups per workgroup: its teams, ks parts to a group.
  int64_t groups =
      static_cast<int64_t>(source.workgroup_size[0]) / tpr / std::stol(key_param(key, "ks", where));
  // A GLU group owns nc / 2 columns of both halves.
  int64_t gx = g.glu ? ceil_div(g.n / 2, groups * (nc / 2)) : ceil_div(g.n, groups * nc);
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
