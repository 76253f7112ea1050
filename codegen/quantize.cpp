// The "quant" family (codegen/quantize.h): keys, rendering and launch packing for
// templates/quantize.glsl.
#include "codegen/quantize.h"

#include <algorithm>
#include <stdexcept>

#include "codegen/dtypes.h"
#include "codegen/internal.h"

namespace mlx::core::vulkan::codegen {

namespace {

bool op_is_quantize(const KernelKey& key, const std::string& where) {
  const std::string& op = key_param(key, "op", where);
  if (op != "dequantize" && op != "quantize") {
    throw std::invalid_argument("[render] " + where + ": op must be dequantize or quantize.");
  }
  return op == "quantize";
}

bool geometry_idx64(const QuantGeometry& g) {
  uint64_t values = static_cast<uint64_t>(std::max(g.rows, g.src_rows) * g.k);
  return reach_needs_64(std::max({g.w_offset, g.out_offset, g.scales_offset, g.biases_offset}) +
                        values);
}

// Chunks of 8 values (dequantize) or groups (quantize): the launch's count.
int64_t work_items(const QuantGeometry& g, bool quantize) {
  return g.rows * (g.k / (quantize ? g.group_size : 8));
}

// Invocations: one per group (quantize), one per kDequantChunks chunks (dequantize).
constexpr int64_t kDequantChunks = 4;  // DEQ_CHUNKS in templates/quantize.glsl
int64_t invocations(const QuantGeometry& g, bool quantize) {
  int64_t items = work_items(g, quantize);
  return quantize ? items : (items + kDequantChunks - 1) / kDequantChunks;
}

}  // namespace

KernelKey quant_key(const std::string& op, const std::string& dtype, const QuantGeometry& g) {
  KernelKey key{"quant",
                {{"bits", std::to_string(g.bits)},
                 {"dtype", dtype},
                 {"gs", std::to_string(g.group_size)},
                 {"idx", geometry_idx64(g) ? "64" : "32"},
                 {"op", op}}};
  if (!g.ids.empty()) {
    key.params["ids"] = g.ids;
  }
  if (op == "dequantize") {
    // Each chunk of 8 values as 16-byte stores where the output's offset allows.
    key.params.emplace("round", std::string(1, g.round_once ? '1' : '2'));
    key.params.emplace("vec", std::string(1, g.out_offset % 8 == 0 ? '1' : '0'));
    if (g.transpose_out) {
      key.params.emplace("tr", "1");
    }
  }
  return key;
}

void parse_quant(const KernelKey& key, const std::string& where, int& bits, int& gs) {
  bits = std::atoi(key_param(key, "bits", where).c_str());
  gs = std::atoi(key_param(key, "gs", where).c_str());
  bool bits_ok = bits == 2 || bits == 3 || bits == 4 || bits == 5 || bits == 6 || bits == 8;
  if (!bits_ok || (gs != 32 && gs != 64 && gs != 128) ||
      key_param(key, "bits", where) != std::to_string(bits) ||
      key_param(key, "gs", where) != std::to_string(gs)) {
    throw std::invalid_argument("[render] " + where +
                                ": bits must be 2, 3, 4, 5, 6 or 8 and gs 32, 64 or 128.");
  }
}

KernelSource render_quant(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  check_params(key, {"bits", "dtype", "gs", "ids", "idx", "op", "round", "tr", "vec"}, where);
  const DtypeInfo& dt = dtype_info(key_param(key, "dtype", where), where);
  if (dt.kind != Kind::Float) {
    throw std::invalid_argument("[render] " + where + ": needs a float dtype.");
  }
  bool quantize = op_is_quantize(key, where);
  bool idx64 = parse_idx(key, where);
  int bits = 0, gs = 0;
  parse_quant(key, where, bits, gs);
  std::vector<std::string> defines =
      storage_defines({&dt, &dtype_info("u32", where)}, idx64, caps, where);
  defines.push_back(std::string("IDX64 ") + (idx64 ? "1" : "0"));
  add_input_defines("IN0_", dt, defines);
  add_output_defines(dt, defines);
  defines.push_back(std::string("QUANT_OP ") + (quantize ? "1" : "0"));
  defines.push_back("BITS " + std::to_string(bits));
  defines.push_back("GS " + std::to_string(gs));
  if (!quantize) {
    const std::string& vec = key_param(key, "vec", where);
    if (vec != "0" && vec != "1") {
      throw std::invalid_argument("[render] " + where + ": vec must be 0 or 1.");
    }
    const std::string& round = key_param(key, "round", where);
    if (round != "1" && round != "2") {
      throw std::invalid_argument("[render] " + where + ": round must be 1 or 2.");
    }
    defines.push_back("VEC_OUT " + vec);
    defines.push_back("OUT_WIDTH " + std::to_string(dt.bits));
    defines.push_back(std::string("OUT_F16 ") + (std::string(dt.name) == "f16" ? "1" : "0"));
    defines.push_back(std::string("ROUND_ONCE ") + (round == "1" ? "1" : "0"));
    defines.push_back("DEQ_CHUNKS " + std::to_string(kDequantChunks));
    if (key.params.count("tr")) {
      if (key_param(key, "tr", where) != "1" || vec != "1" || key.params.count("ids")) {
        throw std::invalid_argument("[render] " + where + ": tr=1 needs vec=1 and no ids.");
      }
      defines.push_back("TRANS_OUT 1");
    }
  }
  bool ids = key.params.count("ids") != 0;
  if (ids) {
    const std::string& t = key_param(key, "ids", where);
    if (quantize || (t != "i32" && t != "u32")) {
      throw std::invalid_argument("[render] " + where +
                                  ": ids (i32 or u32) only for op=dequantize.");
    }
    defines.push_back("IDS 1");
    defines.push_back(std::string("IDS_UNSIGNED ") + (t == "u32" ? "1" : "0"));
  }
  return row_kernel_source("quantize.glsl", defines, ids ? 5 : 4, ids ? 8 : 6, idx64, caps);
}

Launch quant_launch(const KernelKey& key, const KernelSource& source, const QuantGeometry& g) {
  const std::string where = "kernel " + key.canonical();
  bool quantize = op_is_quantize(key, where);
  if (g.rows < 0 || g.k < 0 || g.k % g.group_size != 0 ||
      key != quant_key(key_param(key, "op", where), key_param(key, "dtype", where), g)) {
    throw std::invalid_argument("[launch] " + where + " does not match the geometry.");
  }
  int64_t count = work_items(g, quantize);
  uint64_t wg = source.workgroup_size[0];
  uint64_t groups = (static_cast<uint64_t>(invocations(g, quantize)) + wg - 1) / wg;
  if (g.transpose_out) {
    if (quantize || !g.ids.empty() || g.rows % 8 != 0 || g.out_offset % 8 != 0) {
      throw std::invalid_argument("[launch] " + where +
                                  ": a transposed dequantize needs rows and the output's "
                                  "offset in multiples of 8, and no ids.");
    }
    // 32 invocations a block of 32 rows x 8 chunks (templates/quantize.glsl, TRANS_OUT).
    uint64_t blocks =
        ((static_cast<uint64_t>(g.rows) + 31) / 32) * ((static_cast<uint64_t>(g.k) / 8 + 7) / 8);
    groups = (blocks * 32 + wg - 1) / wg;
  }
  std::vector<int64_t> fields{count,
                              g.k,
                              static_cast<int64_t>(g.w_offset),
                              static_cast<int64_t>(g.scales_offset),
                              static_cast<int64_t>(g.biases_offset),
                              static_cast<int64_t>(g.out_offset)};
  if (!g.ids.empty()) {
    fields.push_back(g.src_rows);
    fields.push_back(static_cast<int64_t>(g.ids_offset));
  }
  return pack_launch(source, fields, parse_idx(key, where), groups, where);
}

}  // namespace mlx::core::vulkan::codegen
