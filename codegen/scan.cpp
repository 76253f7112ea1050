// The scan family: keys, rendering and launch packing for templates/scan.glsl.
#include "codegen/scan.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "codegen/dtypes.h"
#include "codegen/geometry.h"
#include "codegen/internal.h"

namespace mlx::core::vulkan::codegen {

namespace {

// Shared memory for the row mode's chunk: at most this many bytes, so a workgroup of 256
// leaves room for several resident workgroups per multiprocessor.
constexpr uint32_t kStageBytes = 16384;
constexpr uint32_t kMaxRowK = 16;   // elements per invocation per chunk (rows)
constexpr uint32_t kColK = 8;       // elements per invocation per chunk (columns)
constexpr uint32_t kTileCols = 32;  // columns per tile (templates/scan.glsl: COLS)
// The row mode's workgroup: one per row, so a smaller group means more rows in flight per
// multiprocessor. cumsum f32 8192^2 on an H200 (ROW_K 16): 256 -> 233.8 us, 128 -> 192.9,
// 64 -> 193.5; ROW_K 8 at 256: 210.2, ROW_K 32 at 128: 276.2 (142 registers).
constexpr uint32_t kRowWorkgroup = 128;

void check(const ScanGeometry& g, const std::string& where) {
  bool segmented = g.seg != 0 || g.segs != 1 || g.totals || g.carry_in;
  // segs segments of seg elements cover the row, and the last one is not empty.
  bool segments_ok =
      g.seg >= 0 && g.segs >= 1 &&
      (g.seg == 0 ? g.segs == 1
                  : g.seg * g.segs >= g.len && (g.segs - 1) * g.seg < std::max<int64_t>(g.len, 1));
  if (g.count < 0 || g.len < 0 || g.inner < 1 || (!g.columns && g.inner != 1) ||
      (g.columns && g.count % g.inner != 0) || !segments_ok || (g.columns && segmented) ||
      (g.totals && g.carry_in)) {
    throw std::invalid_argument("[scan] " + where + ": inconsistent scan geometry.");
  }
}

// Whether an index the kernel forms can pass 2^31 - 1: the data, plus headroom for the
// loop index one chunk past the end and a grid rounded up to 65535-wide rows (as
// codegen/reduce.cpp).
bool needs_64(const ScanGeometry& g) {
  uint64_t elems = static_cast<uint64_t>(g.count) * static_cast<uint64_t>(g.len);
  uint64_t parts = static_cast<uint64_t>(g.count) * static_cast<uint64_t>(g.segs);
  uint64_t reach = std::max({g.in_offset, g.out_offset, g.carry_offset}) + std::max(elems, parts);
  return 2 * reach + (uint64_t{1} << 17) >
         static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
}

// The identity of `op` in the dtype's own range: an exclusive scan stores it, so 8/16-bit
// max/min need their type's limits rather than the 32-bit compute type's.
std::string identity(const std::string& op, const DtypeInfo& dt) {
  if (op == "LogAddExp") {
    return "uintBitsToFloat(0xff800000u)";  // -inf
  }
  if ((op == "Max" || op == "Min") && (dt.kind == Kind::Int || dt.kind == Kind::Uint) &&
      dt.bits < 32) {
    bool max = op == "Max";
    if (dt.kind == Kind::Uint) {
      return max ? "0u" : (dt.bits == 8 ? "255u" : "65535u");
    }
    return max ? (dt.bits == 8 ? "(-128)" : "(-32768)") : (dt.bits == 8 ? "127" : "32767");
  }
  return reduce_identity(op, dt);
}

// a (+) b with a first in scan order.
std::string combine(const std::string& op, const DtypeInfo& dt) {
  if (op == "Sum") {
    return "((a) + (b))";
  }
  if (op == "Prod") {
    return "((a) * (b))";
  }
  if (op == "LogAddExp") {
    // log(e^a + e^b) = m + log(1 + e^(min - m)): NaN propagates, an infinite m is the answer.
    return "(isnan(a) || isnan(b) ? (a) + (b) : isinf(max((a), (b))) ? max((a), (b)) : "
           "max((a), (b)) + log(1.0 + exp(min((a), (b)) - max((a), (b)))))";
  }
  bool max = op == "Max";
  if (dt.kind == Kind::Float) {
    // The first NaN stays: a NaN `a` is never replaced, a NaN `b` replaces a number.
    return max ? "((isnan(b) || (b) > (a)) && !isnan(a) ? (b) : (a))"
               : "((isnan(b) || (b) < (a)) && !isnan(a) ? (b) : (a))";
  }
  return max ? "max((a), (b))" : "min((a), (b))";
}

struct Spec {
  std::string op;
  const DtypeInfo* dt;
  bool columns;
  bool idx64;
  bool carry_in = false;  // seg=1
};

Spec parse(const KernelKey& key, const std::string& where) {
  check_params(key, {"op", "dtype", "mode", "idx", "seg"}, where);
  Spec s;
  s.op = key_param(key, "op", where);
  if (s.op != "Sum" && s.op != "Prod" && s.op != "Max" && s.op != "Min" && s.op != "LogAddExp") {
    throw std::invalid_argument("[render] " + where + ": unknown scan '" + s.op +
                                "' (expected Sum, Prod, Max, Min or LogAddExp).");
  }
  s.dt = &dtype_info(key_param(key, "dtype", where), where);
  if (s.op == "LogAddExp" && s.dt->kind != Kind::Float) {
    throw std::invalid_argument("[render] " + where + ": LogAddExp needs a float dtype.");
  }
  s.columns = parse_columns(key, where);
  s.idx64 = parse_idx(key, where);
  auto seg = key.params.find("seg");
  s.carry_in = seg != key.params.end() && seg->second == "1";
  if (seg != key.params.end() && (seg->second != "1" || s.columns)) {
    throw std::invalid_argument("[render] " + where + ": seg must be 1, on rows.");
  }
  return s;
}

}  // namespace

KernelKey scan_key(const std::string& op, const std::string& dtype, const ScanGeometry& g) {
  check(g, op);
  KernelKey key;
  key.family = "scan";
  key.params["op"] = op;
  key.params["dtype"] = dtype;
  key.params["mode"] = g.columns ? "col" : "row";
  key.params["idx"] = needs_64(g) ? "64" : "32";
  if (g.carry_in) {
    key.params.emplace("seg", std::string(1, '1'));
  }
  return key;
}

KernelSource render_scan(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  Spec s = parse(key, where);
  const DtypeInfo& dt = *s.dt;
  std::vector<std::string> defines = storage_defines({&dt}, s.idx64, caps, where);
  defines.push_back("IDX64 " + std::string(s.idx64 ? "1" : "0"));
  defines.push_back("MODE_COL " + std::string(s.columns ? "1" : "0"));
  add_input_defines("IN0_", dt, defines);
  add_output_defines(dt, defines);
  // The accumulator is the compute type: f32 for 16-bit floats (one rounding per output),
  // 32 bits for 8/16-bit integers (wrapping, truncated on store like the CPU's uint64).
  defines.push_back(std::string("ACC_T ") + dt.compute);
  defines.push_back("ACC_INIT " + identity(s.op, dt));
  defines.push_back("ACC_COMBINE(a, b) " + combine(s.op, dt));
  defines.push_back("COMPENSATED " +
                    std::string(s.op == "Sum" && dt.kind == Kind::Float ? "1" : "0"));

  uint32_t wg = row_workgroup_size(caps);
  if (!s.columns) {
    wg = std::min(wg, kRowWorkgroup);
  }
  uint32_t acc_bytes = dt.bits == 64 ? 8 : 4;
  // Rows stage WG * ROW_K accumulators (plus a padding slot every 32), WG padded totals
  // and WG / 16 segment totals; halve ROW_K until that fits the budget and the device.
  uint32_t row_k = kMaxRowK;
  auto row_shared = [&](uint32_t k) {
    uint32_t chunk = wg * k;
    return (chunk + chunk / 32 + wg + wg / 16 + std::max(wg / 16, 1u)) * acc_bytes;
  };
  while (row_k > 1 &&
         (wg * row_k * acc_bytes > kStageBytes || row_shared(row_k) > caps.max_shared_memory)) {
    row_k /= 2;
  }
  defines.push_back("ROW_K " + std::to_string(row_k) + "u");
  defines.push_back("COL_K " + std::to_string(kColK) + "u");
  defines.push_back(std::string("SEGMENTED ") + (s.carry_in ? "1" : "0"));

  KernelSource source =
      row_kernel_source("scan.glsl", defines, s.carry_in ? 3 : 2, 9, s.idx64, caps);
  source.workgroup_size = {wg, 1, 1};
  source.spec_constants = {{0, wg}};
  return source;
}

Launch scan_launch(const KernelKey& key, const KernelSource& source, const ScanGeometry& g) {
  const std::string where = "kernel " + key.canonical();
  Spec s = parse(key, where);
  check(g, where);
  if (s.columns != g.columns || s.idx64 != needs_64(g) || s.carry_in != g.carry_in) {
    throw std::invalid_argument("[scan_launch] " + where +
                                " does not match the geometry (mode, index width or carries).");
  }
  int64_t flags =
      (g.reverse ? 1 : 0) | (g.inclusive ? 2 : 0) | (g.totals ? 4 : 0) | (g.carry_in ? 8 : 0);
  uint64_t cols = std::min<uint64_t>(source.workgroup_size[0], kTileCols);
  uint64_t groups = g.columns ? (static_cast<uint64_t>(g.count) + cols - 1) / cols
                              : static_cast<uint64_t>(g.count) * static_cast<uint64_t>(g.segs);
  int64_t seg = g.seg == 0 ? g.len : g.seg;
  return pack_launch(source,
                     {static_cast<int64_t>(g.in_offset), static_cast<int64_t>(g.out_offset), g.len,
                      g.count, g.inner, flags, seg, g.segs, static_cast<int64_t>(g.carry_offset)},
                     s.idx64, groups, where);
}

}  // namespace mlx::core::vulkan::codegen
