// The "qmvc" family (codegen/matmul.h): quantized products of 2 to 16 rows on cooperative
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
// plus one uvec4 of padding, per subgroup.
int64_t stage_bytes(int64_t subgroups, int64_t chunk) {
  return subgroups * 2 * 16 * (chunk / 8 + 1) * 16;
}

// The cooperative-matrix path for the dtype: "khr" where the device has the KHR extension
// (faster than NV's on an H200, docs/matmul.md), "nv" for f16 on the NV one, "" if none.
std::string coop_path(const std::string& dtype, const DeviceCaps& caps) {
  if (dtype == "f16") {
    return caps.cooperative_matrix_khr ? "khr" : caps.cooperative_matrix ? "nv" : "";
  }
  return dtype == "bf16" && caps.cooperative_matrix_bf16 ? "khr" : "";
}

}  // namespace

bool qmvc_applies(const std::string& dtype, const MatmulGeometry& g, const DeviceCaps& caps) {
  if (g.m < 2 || g.m > 16 || !g.b_t || g.a_t || g.bits <= 0 || g.k <= 0 || g.k % kChunk != 0 ||
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
         stage_bytes(kSubgroups, kChunk) <= static_cast<int64_t>(caps.max_shared_memory);
}

bool qmvc_preferred(const std::string& dtype, const MatmulGeometry& g) {
  // Up to 8 rows qmv can run the product too; it wins for few rows, whose multiply-adds
  // are cheap, and more so for bf16, whose values qmvc must round to bf16 in integer
  // arithmetic (H100, docs/matmul.md). At 4 f16 rows qmvc is ~5% faster; qmv keeps them
  // for its f32 weights (qmvc rounds them to the dtype).
  return g.m >= (dtype == "bf16" ? 6 : 5);
}

KernelKey qmvc_key(const std::string& dtype, const MatmulGeometry& g, const DeviceCaps& caps) {
  bool wvec = g.bits % 4 == 0 && g.b_offset % 4 == 0 && g.ldb % 4 == 0 && g.b_bs0 % 4 == 0 &&
              g.b_bs1 % 4 == 0;
  return KernelKey{"qmvc",
                   {{"bits", std::to_string(g.bits)},
                    {"dtype", dtype},
                    {"gs", std::to_string(g.group_size)},
                    {"idx", geometry_idx64(g, 16, 16, kChunk) ? "64" : "32"},
                    {"kc", std::to_string(kChunk)},
                    {"path", coop_path(dtype, caps)},
                    {"sg", std::to_string(kSubgroups)},
                    {"wvec", wvec ? "1" : "0"}}};
}

KernelSource render_qmvc(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  check_params(key, {"bits", "dtype", "gs", "idx", "kc", "path", "sg", "wvec"}, where);
  const DtypeInfo& dt = float_dtype(key, where);
  bool idx64 = parse_idx(key, where);
  int bits = 0, gs = 0;
  parse_quant(key, where, bits, gs);
  const std::string dtype = dt.name;
  const std::string& path = key_param(key, "path", where);
  const std::string& sg_text = key_param(key, "sg", where);
  const std::string& kc_text = key_param(key, "kc", where);
  const std::string& wvec = key_param(key, "wvec", where);
  int64_t sg = std::atoll(sg_text.c_str());
  int64_t kc = std::atoll(kc_text.c_str());
  if ((path != "nv" && path != "khr") || (dtype != "f16" && !(path == "khr" && dtype == "bf16")) ||
      (sg != 1 && sg != 2 && sg != 4 && sg != 8) || std::to_string(sg) != sg_text ||
      (kc != 32 && kc != 64 && kc != 128) || std::to_string(kc) != kc_text ||
      (wvec != "0" && wvec != "1") || (wvec == "1" && bits % 4 != 0)) {
    throw std::invalid_argument("[render] " + where +
                                ": path must be nv (f16) or khr (f16, bf16), sg 1, 2, 4 or 8, kc "
                                "32, 64 or 128, wvec 0 or 1 (1 only for 4 or 8 bits).");
  }
  bool supported =
      path == "nv" ? caps.cooperative_matrix
                   : (dtype == "f16" ? caps.cooperative_matrix_khr : caps.cooperative_matrix_bf16);
  if (!supported || caps.subgroup_size != 32 ||
      stage_bytes(sg, kc) > static_cast<int64_t>(caps.max_shared_memory)) {
    throw std::runtime_error("[vulkan] " + where +
                             ": the device has no cooperative matrices for this dtype on 32-lane "
                             "subgroups, or too little shared memory.");
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
  // path comes from the device's caps; every other parameter from the geometry.
  KernelKey expect = qmvc_key(key_param(key, "dtype", where), g, DeviceCaps{});
  expect.params["path"] = key_param(key, "path", where);
  if (g.m < 2 || g.m > 16 || !g.b_t || g.a_t || g.k % kChunk != 0 || key != expect) {
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
