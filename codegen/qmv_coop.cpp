// The "qmvc" family (codegen/matmul.h): quantized products of 1 to 16 rows on cooperative
// matrices, templates/qmv_coop.glsl. When it applies, its key, rendering and launch.
#include <algorithm>
#include <stdexcept>
#include <vector>

#include "codegen/internal.h"
#include "codegen/matmul.h"
#include "codegen/matmul_internal.h"

namespace mlx::core::vulkan::codegen {

namespace {

// Subgroups per workgroup and k values per subgroup chunk. 8 x 64 keeps 16 warps and
// 37 KB of stages per workgroup, and each lane one pack of W per chunk (docs/matmul.md).
constexpr int64_t kSubgroups = 8;
constexpr int64_t kChunk = 64;

// The template's shared memory: two stages (W and x) of 16 rows of kChunk 16-bit values
// plus one uvec4 of padding, per subgroup; with dq=magic also each subgroup's 16 scales
// and biases (f32), a 16 x 16 matrix of ones and one of row indices.
int64_t stage_bytes(int64_t subgroups, int64_t chunk, bool magic) {
  return subgroups * 2 * 16 * (chunk / 8 + 1) * 16 +
         (magic ? subgroups * 2 * 16 * 4 + 16 * 16 * 2 + 256 * 4 : 0);
}

// dq=magic (templates/qmv_coop.glsl, DQ_MAGIC): W's values as exact offset integers, the
// chunk's scale and bias applied in f32 by element of the accumulator, whose layout must be
// NVIDIA's. 4 bits, a chunk inside one group. At 16 rows the staged f16 kernel needs 149
// registers (one workgroup a multiprocessor) and was slower than the conversion path
// (H200: 48.6 against 41.4 us for [16,14336] x [4096,14336]^T); bf16's conversion path
// (its rounding in integers) is slower still. 8 bits in f16 measured no faster (48.3
// against 47.3 us at 8 rows, 132 registers), and bf16 cannot hold 8-bit values this way.
// f16 with W's rows on 16 bytes builds its fragments in registers (DQ_FRAG, no stages) and
// takes dq=magic at 9 to 16 rows too: on an H100 [16,14336] x [4096,14336]^T 41.3-41.5 ->
// 33.1-33.4 us against the conversion path (docs/matmul.md, "qmvc without stages").
bool w_rows_vec4(const MatmulGeometry& g) {
  return g.bits % 4 == 0 && g.b_offset % 4 == 0 && g.ldb % 4 == 0 && g.b_bs0 % 4 == 0 &&
         g.b_bs1 % 4 == 0;
}

bool magic_dequant(const std::string& dtype, const MatmulGeometry& g, const DeviceCaps& caps) {
  return caps.coop_acc_nv_layout && g.bits == 4 && g.group_size % kChunk == 0 &&
         (g.m <= 8 || dtype == "bf16" || (dtype == "f16" && w_rows_vec4(g)));
}

// The cooperative-matrix path for the dtype: "khr" where the device has the KHR extension
// (faster than NV's on an H200, docs/matmul.md), "nv" for f16 on the NV one, "" if none.
std::string coop_path(const std::string& dtype, const DeviceCaps& caps) {
  if (dtype == "f16") {
    return caps.cooperative_matrix_khr ? "khr" : caps.cooperative_matrix ? "nv" : "";
  }
  return dtype == "bf16" && caps.cooperative_matrix_bf16 ? "khr" : "";
}

// DQ_FRAG (templates/qmv_coop.glsl: f16, dq=magic, W's rows on 16 bytes) builds its
// fragments in registers; with the device's 16x8x16 shape it multiplies W (16 columns, as
// A) by x transposed (8 rows, as B), frag=n8: half the fragment products of a 16x16x16
// product whose rows 8..15 are zeros at <= 8 rows, 4 accumulator elements a lane instead
// of 8, and 2 columns' scales a lane instead of 4 (docs/matmul.md, "qmvc in 16x8
// fragments").
bool has_n8(const std::string& dtype, const DeviceCaps& caps) {
  return dtype == "f16" ? caps.coop_f16_n8 : dtype == "bf16" && caps.coop_bf16_n8;
}

bool frag_n8(const std::string& dtype, const MatmulGeometry& g, const DeviceCaps& caps) {
  return has_n8(dtype, caps) && magic_dequant(dtype, g, caps) && w_rows_vec4(g);
}

}  // namespace

bool qmvc_applies(const std::string& dtype, const MatmulGeometry& g, const DeviceCaps& caps) {
  if (g.m < 1 || g.m > 16 || !g.b_t || g.a_t || g.bits <= 0 || g.k <= 0 || g.k % kChunk != 0 ||
      g.n <= 0 || g.prenorm || g.residual || g.glu || coop_path(dtype, caps).empty()) {
    return false;
  }
  // The lane mappings assume 32-lane subgroups; x's rows are read as 16-byte vectors.
  for (int64_t v : {static_cast<int64_t>(g.a_offset), g.lda, g.a_bs0, g.a_bs1}) {
    if (v % 8 != 0) {
      return false;
    }
  }
  return caps.subgroup_size == 32 &&
         static_cast<uint64_t>(kSubgroups * 32) <= caps.max_workgroup_invocations &&
         stage_bytes(kSubgroups, kChunk, magic_dequant(dtype, g, caps)) <=
             static_cast<int64_t>(caps.max_shared_memory);
}

bool qmvc_preferred(const std::string& dtype, const MatmulGeometry& g, const DeviceCaps& caps) {
  // Up to 8 rows qmv can run the product too; it wins for few rows, whose multiply-adds
  // are cheap. With dq=magic (f32 scales and biases, as qmv) qmvc takes 3 rows and more
  // (H200, the loop of "qmvc's loads at the top of the body" in docs/matmul.md: 3 rows of
  // [3,14336] x [4096,14336]^T 21.8 against qmv's 31.3 us in f16, 26.6 against 36.1 in
  // bf16; at 2 rows qmv's 22.0 / 25.6 against 21.7 / 26.6, and 27.2 against 32.4 with
  // K = 4096). Otherwise qmvc rounds W's values to the dtype, in integer arithmetic for
  // bf16: 5 f16 rows and 6 bf16 rows (H100).
  if (magic_dequant(dtype, g, caps)) {
    return g.m >= 3;
  }
  return g.m >= (dtype == "bf16" ? 6 : 5);
}

KernelKey qmvc_key(const std::string& dtype, const MatmulGeometry& g, const DeviceCaps& caps) {
  bool wvec = w_rows_vec4(g);
  bool magic = magic_dequant(dtype, g, caps);
  return KernelKey{"qmvc",
                   {{"bits", std::to_string(g.bits)},
                    {"dq", magic ? "magic" : "convert"},
                    {"dtype", dtype},
                    {"frag", frag_n8(dtype, g, caps) ? "n8" : "n16"},
                    {"gs", std::to_string(g.group_size)},
                    {"idx", geometry_idx64(g, 16, 16, kChunk) ? "64" : "32"},
                    {"kc", std::to_string(kChunk)},
                    {"path", coop_path(dtype, caps)},
                    {"rows", magic && g.m <= 8 ? "8" : "16"},
                    {"sg", std::to_string(kSubgroups)},
                    {"wvec", wvec ? "1" : "0"}}};
}

KernelSource render_qmvc(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  check_params(
      key, {"bits", "dq", "dtype", "frag", "gs", "idx", "kc", "path", "rows", "sg", "wvec"}, where);
  const DtypeInfo& dt = float_dtype(key, where);
  bool idx64 = parse_idx(key, where);
  int bits = 0, gs = 0;
  parse_quant(key, where, bits, gs);
  const std::string dtype = dt.name;
  const std::string& path = key_param(key, "path", where);
  const std::string& sg_text = key_param(key, "sg", where);
  const std::string& kc_text = key_param(key, "kc", where);
  const std::string& wvec = key_param(key, "wvec", where);
  const std::string& dq = key_param(key, "dq", where);
  const std::string& rows = key_param(key, "rows", where);
  const std::string& frag = key_param(key, "frag", where);
  bool magic = dq == "magic";
  int64_t sg = std::atoll(sg_text.c_str());
  int64_t kc = std::atoll(kc_text.c_str());
  if ((path != "nv" && path != "khr") || (dtype != "f16" && !(path == "khr" && dtype == "bf16")) ||
      (sg != 1 && sg != 2 && sg != 4 && sg != 8) || std::to_string(sg) != sg_text ||
      (kc != 32 && kc != 64 && kc != 128) || std::to_string(kc) != kc_text ||
      (wvec != "0" && wvec != "1") || (wvec == "1" && bits % 4 != 0) ||
      (dq != "magic" && dq != "convert") || (rows != "8" && rows != "16") ||
      (!magic && rows != "16") || (magic && (bits != 4 || gs % kc != 0)) ||
      (frag != "n8" && frag != "n16") || (frag == "n8" && (!magic || wvec != "1"))) {
    throw std::invalid_argument(
        "[render] " + where +
        ": path must be nv (f16) or khr (f16, bf16), sg 1, 2, 4 or 8, kc 32, 64 or 128, wvec 0 "
        "or 1 (1 only for 4 or 8 bits), dq magic (4 bits, gs a multiple of kc) or convert, "
        "rows 8 (magic only) or 16, frag n16 or n8 (dq=magic and wvec=1 only).");
  }
  bool supported =
      path == "nv" ? caps.cooperative_matrix
                   : (dtype == "f16" ? caps.cooperative_matrix_khr : caps.cooperative_matrix_bf16);
  if (!supported || caps.subgroup_size != 32 || (magic && !caps.coop_acc_nv_layout) ||
      (frag == "n8" && !has_n8(dtype, caps)) ||
      stage_bytes(sg, kc, magic) > static_cast<int64_t>(caps.max_shared_memory)) {
    throw std::runtime_error("[vulkan] " + where +
                             ": the device has no cooperative matrices for this dtype on 32-lane "
                             "subgroups (or, for frag=n8, no 16x8x16 shape), or too little "
                             "shared memory.");
  }
  std::vector<std::string> defines =
      storage_defines({&dt, &dtype_info("u32", where)}, idx64, caps, where);
  defines.push_back(std::string("IDX64 ") + (idx64 ? "1" : "0"));
  add_input_defines("IN0_", dt, defines);
  add_output_defines(dt, defines);
  defines.push_back("BITS " + std::to_string(bits));
  defines.push_back("GS " + std::to_string(gs));
  defines.push_back("SG " + sg_text);
  defines.push_back("KC " + kc_text);
  defines.push_back("WVEC " + wvec);
  if (dtype == "bf16") {
    defines.push_back("COOP_BF16 1");
  }
  if (magic) {
    defines.push_back("DQ_MAGIC 1");
    defines.push_back(std::string("ROWS8 ") + (rows == "8" ? "1" : "0"));
  }
  if (frag == "n8") {
    defines.push_back("FRAG_N8 1");
  }
  // Chunks loaded ahead: 3 for the f16 fragments built in registers at <= 8 rows, else 2
  // (H200: f16 [4,14336] x [4096,14336]^T 23.6 us with 2, 22.0 with 3; bf16 26.9 with 2,
  // 32.7 with 3 at 209 registers; docs/matmul.md).
  bool in_registers = magic && bits == 4 && wvec == "1";
  defines.push_back(std::string("SETS ") +
                    (in_registers && dtype == "f16" && rows == "8" ? "3" : "2"));
  KernelSource source = row_kernel_source("qmv_coop.glsl", defines, 5, kFields, idx64, caps);
  source.coop_khr = path == "khr";
  source.coop_khr_bf16 = dtype == "bf16";
  uint32_t wg = static_cast<uint32_t>(sg) * 32;
  source.workgroup_size = {wg, 1, 1};
  source.spec_constants = {{0, wg}};
  return source;
}

Launch qmvc_launch(const KernelKey& key, const KernelSource& source, const MatmulGeometry& g) {
  const std::string where = "kernel " + key.canonical();
  check_geometry(g, where);
  // path and dq come from the device's caps; every other parameter from the geometry.
  KernelKey expect = qmvc_key(key_param(key, "dtype", where), g, DeviceCaps{});
  expect.params["path"] = key_param(key, "path", where);
  expect.params["dq"] = key_param(key, "dq", where);
  expect.params["rows"] = expect.params["dq"] == "magic" && g.m <= 8 ? "8" : "16";
  expect.params["frag"] = key_param(key, "frag", where);
  if (g.m < 1 || g.m > 16 || !g.b_t || g.a_t || g.k % kChunk != 0 || key != expect) {
    throw std::invalid_argument("[launch] " + where + " does not match the geometry.");
  }
  int64_t gx = (g.n + 15) / 16;
  constexpr int64_t kMax = 65535;
  if (gx > kMax || g.batches > kMax) {
    throw std::invalid_argument("[launch] " + where + ": too many workgroups for one launch.");
  }
  Launch launch = pack_launch(
      source,
      {g.m, g.n, g.k, static_cast<int64_t>(g.a_offset), static_cast<int64_t>(g.b_offset),
       static_cast<int64_t>(g.out_offset), g.lda, g.ldb, g.nb1, g.a_bs0, g.a_bs1, g.b_bs0, g.b_bs1,
       static_cast<int64_t>(g.scales_offset), static_cast<int64_t>(g.biases_offset)},
      parse_idx(key, where), 1, where);
  launch.groups = {static_cast<uint32_t>(gx), 1, static_cast<uint32_t>(g.batches)};
  return launch;
}

}  // namespace mlx::core::vulkan::codegen
