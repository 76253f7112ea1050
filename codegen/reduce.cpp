// The reduce family: keys, rendering and launch packing for templates/reduce.glsl.
#include "codegen/reduce.h"

#include <algorithm>
#include <limits>
#include <set>
#include <stdexcept>

#include "codegen/dtypes.h"
#include "codegen/geometry.h"
#include "codegen/internal.h"

namespace mlx::core::vulkan::codegen {

namespace {

constexpr uint32_t kWorkgroupSize = 256;  // a power of two: the shared-memory tree halves it
constexpr uint64_t kMaxGroups = 65535;    // the minimum maxComputeWorkGroupCount
// A GPU is full at about this many workgroups of 256 (an H200 runs ~16 per SM x 132 SMs).
constexpr int64_t kTargetGroups = 1024;
constexpr uint64_t kColRowGroups = 2;  // templates/reduce.glsl's COL_RG
constexpr int64_t kMinSlice = 4096;    // elements: below this a slice is mostly overhead

const std::set<std::string> kOps{"Sum", "Prod", "Max", "Min", "And", "Or"};

bool logical(const std::string& op) {
  return op == "And" || op == "Or";
}

// The accumulator: "f32" for floats, "b" for and/or, and for integers the dtype widened to
// 32 bits (partials of 8/16-bit max/min must hold the 32-bit identity an empty slice
// stores).
const DtypeInfo& acc_info(const std::string& op, const DtypeInfo& out, const std::string& where) {
  if (logical(op)) {
    return dtype_info("b", where);
  }
  if (out.kind == Kind::Float) {
    return dtype_info("f32", where);
  }
  if (out.kind != Kind::Bool && out.bits < 32) {
    return dtype_info(out.kind == Kind::Int ? "i32" : "u32", where);
  }
  return out;
}

}  // namespace

std::string reduce_identity(const std::string& op, const DtypeInfo& acc) {
  std::string t = acc.compute;
  bool is64 = acc.bits == 64;
  if (op == "Sum" || op == "Or") {
    return acc.kind == Kind::Float ? "0.0f" : t + "(0)";
  }
  if (op == "Prod" || op == "And") {
    return acc.kind == Kind::Float ? "1.0f" : t + "(1)";
  }
  bool max = op == "Max";
  switch (acc.kind) {
    case Kind::Float:
      return max ? "uintBitsToFloat(0xff800000u)" : "uintBitsToFloat(0x7f800000u)";
    case Kind::Bool:
      return max ? "0u" : "1u";
    case Kind::Uint:
      if (max) {
        return t + "(0)";
      }
      // No 64-bit literals: defines are injected before the int64 extension is enabled.
      return is64 ? "(~uint64_t(0))" : "0xffffffffu";
    case Kind::Int:
      if (is64) {
        return max ? "(int64_t(1) << 63)" : "(~(int64_t(1) << 63))";
      }
      return max ? "int(0x80000000u)" : "int(0x7fffffffu)";
  }
  return t + "(0)";
}

void check_params(const KernelKey& key, const std::set<std::string>& known,
                  const std::string& where) {
  for (const auto& [name, value] : key.params) {
    if (!known.count(name)) {
      throw std::invalid_argument("[render] " + where + ": unknown parameter '" + name + "'.");
    }
  }
}

bool parse_idx(const KernelKey& key, const std::string& where) {
  const std::string& idx = key_param(key, "idx", where);
  if (idx != "32" && idx != "64") {
    throw std::invalid_argument("[render] " + where + ": idx must be 32 or 64.");
  }
  return idx == "64";
}

bool parse_columns(const KernelKey& key, const std::string& where) {
  const std::string& mode = key_param(key, "mode", where);
  if (mode != "row" && mode != "col") {
    throw std::invalid_argument("[render] " + where + ": mode must be row or col.");
  }
  return mode == "col";
}

namespace {

std::string combine(const std::string& op, const DtypeInfo& acc) {
  if (op == "Sum") {
    return "((a) + (b))";
  }
  if (op == "Prod") {
    return "((a) * (b))";
  }
  if (op == "And") {
    return "((a) & (b))";
  }
  if (op == "Or") {
    return "((a) | (b))";
  }
  bool max = op == "Max";
  if (acc.kind == Kind::Float) {
    // NaN wins and stays: a NaN `a` is never replaced, a NaN `b` always replaces.
    return max ? "((isnan(b) || (b) > (a)) ? (b) : (a))" : "((isnan(b) || (b) < (a)) ? (b) : (a))";
  }
  return max ? "max((a), (b))" : "min((a), (b))";
}

struct Spec {
  std::string op;
  const DtypeInfo* in;
  const DtypeInfo* out;
  bool columns;
  bool idx64;
};

Spec parse(const KernelKey& key, const std::string& where) {
  check_params(key, {"op", "in", "out", "mode", "idx", "sg", "vec"}, where);
  Spec s;
  s.op = key_param(key, "op", where);
  if (!kOps.count(s.op)) {
    throw std::invalid_argument("[render] " + where + ": unknown reduction '" + s.op +
                                "' (expected Sum, Prod, Max, Min, And or Or).");
  }
  s.in = &dtype_info(key_param(key, "in", where), where);
  s.out = &dtype_info(key_param(key, "out", where), where);
  s.columns = parse_columns(key, where);
  s.idx64 = parse_idx(key, where);
  // in == out (one launch), or one side is the accumulator: a partial launch stores it,
  // the launch that finishes partials reads it.
  bool ok = logical(s.op) ? s.out->kind == Kind::Bool
                          : (s.in == s.out || s.in == &acc_info(s.op, *s.out, where) ||
                             s.out == &acc_info(s.op, *s.in, where));
  if (!ok) {
    throw std::invalid_argument("[render] " + where + ": " + s.op + " of " + s.in->name +
                                " cannot produce " + s.out->name + ".");
  }
  return s;
}

// The key's "vec": 1, or the dtype's lanes per 16-byte vector.
uint32_t parse_vec(const KernelKey& key, const DtypeInfo& in, const std::string& where) {
  const std::string& v = key_param(key, "vec", where);
  uint32_t lanes = 128u / static_cast<uint32_t>(in.bits);
  if (v != "1" && v != std::to_string(lanes)) {
    throw std::invalid_argument("[render] " + where + ": vec must be 1 or " +
                                std::to_string(lanes) + ".");
  }
  return v == "1" ? 1 : lanes;
}

// Whether an index the kernel forms can pass 2^31 - 1. Not only the data: a slice's end
// (up to twice the row), a loop index one stride past the end, and the workgroup index of
// a grid rounded up to 65535-wide rows all go further, so 32-bit math needs headroom.
bool geometry_idx64(const ReduceGeometry& g) {
  uint64_t reach = g.in_offset + static_cast<uint64_t>(g.count) * static_cast<uint64_t>(g.len);
  uint64_t outs = g.out_offset + static_cast<uint64_t>(g.count) * g.splits;
  return std::max(2 * reach, 2 * outs) + (uint64_t{1} << 17) >
         static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
}

void check(const ReduceGeometry& g, const std::string& where) {
  if (g.count < 0 || g.len < 0 || g.inner < 1 || g.splits < 1 ||
      (g.columns && g.count % g.inner != 0)) {
    throw std::invalid_argument("[reduce] " + where + ": inconsistent reduce geometry.");
  }
}

// Elements per 16-byte vector load when every vector the kernel reads is aligned: the
// binding's element 0 and each row (rows) or the inner extent (columns) at multiples of it.
uint32_t vector_lanes(const DtypeInfo& in, const ReduceGeometry& g) {
  uint32_t lanes = 128u / static_cast<uint32_t>(in.bits);
  bool aligned = g.in_offset % lanes == 0 &&
                 (g.columns ? g.inner % lanes == 0 : (g.count <= 1 || g.len % lanes == 0));
  return aligned && g.len > 0 ? lanes : 1;
}

// Elements (rows) or rows (columns) per slice: rows keep slices whole vectors.
int64_t slice_length(const ReduceGeometry& g, uint32_t vec) {
  int64_t slice = (g.len + g.splits - 1) / g.splits;
  if (!g.columns && vec > 1) {
    slice = (slice + vec - 1) / vec * vec;
  }
  return std::max<int64_t>(slice, 1);
}

}  // namespace

int64_t reduce_column_splits(int64_t count, int64_t len) {
  // Enough (column, slice) pairs to fill a GPU, each slice at least kMinRows rows; each
  // pair is kColRowGroups invocations (templates/reduce.glsl). Counted in columns: with
  // 16-byte loads an invocation folds 4-16 of them. On an H200, f32 8192^2 (32 slices of
  // 256 rows at this target): 70.9 us with two row groups, 80.3 with one at twice the
  // target (64 slices: the finish then took a split launch of its own, 3 launches); two
  // row groups at 2x the target 80.2, four row groups 73.9, eight at 2x 76.3.
  constexpr int64_t kTargetInvocations = kTargetGroups * kWorkgroupSize;
  constexpr int64_t kMinRows = 32;
  if (count <= 0 || count >= kTargetInvocations || len < 2 * kMinRows) {
    return 1;
  }
  int64_t want = std::min((kTargetInvocations + count - 1) / count, len / kMinRows);
  int64_t rows = (len + want - 1) / want;
  return (len + rows - 1) / rows;
}

int64_t reduce_splits(int64_t rows, int64_t len) {
  if (rows <= 0 || len <= kMinSlice || rows >= kTargetGroups) {
    return 1;
  }
  int64_t want = std::min((kTargetGroups + rows - 1) / rows, (len + kMinSlice - 1) / kMinSlice);
  int64_t chunk = (len + want - 1) / want;
  return (len + chunk - 1) / chunk;  // every slice non-empty
}

std::string reduce_partial_dtype(const std::string& op, const std::string& out_dtype) {
  std::string where = "reduce partials of " + op;
  return acc_info(op, dtype_info(out_dtype, where), where).name;
}

KernelKey reduce_key(const std::string& op, const std::string& in_dtype,
                     const std::string& out_dtype, const ReduceGeometry& g,
                     const DeviceCaps& caps) {
  check(g, op);
  KernelKey key;
  key.family = "reduce";
  key.params["op"] = op;
  key.params["in"] = in_dtype;
  key.params["out"] = out_dtype;
  key.params["mode"] = g.columns ? "col" : "row";
  key.params["idx"] = geometry_idx64(g) ? "64" : "32";
  std::string where = "reduce key";
  key.params["vec"] = std::to_string(vector_lanes(dtype_info(in_dtype, where), g));
  const DtypeInfo& acc = acc_info(op, dtype_info(out_dtype, where), where);
  if (!g.columns && caps.subgroup_shuffle && acc.bits <= 32 && caps.subgroup_size > 1) {
    key.params["sg"] = std::to_string(caps.subgroup_size);
  }
  return key;
}

KernelSource render_reduce(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  Spec s = parse(key, where);
  // A partial launch stores the accumulator itself; the final one converts to out.
  const DtypeInfo& acc = acc_info(s.op, *s.out, where);  // f32 for any float out
  std::vector<std::string> defines = storage_defines({s.in, s.out}, s.idx64, caps, where);
  defines.push_back("IDX64 " + std::string(s.idx64 ? "1" : "0"));
  defines.push_back("MODE_COL " + std::string(s.columns ? "1" : "0"));
  add_input_defines("IN0_", *s.in, defines);
  add_output_defines(*s.out, defines);
  defines.push_back(std::string("ACC_T ") + acc.compute);
  defines.push_back("ACC_INIT " + reduce_identity(s.op, acc));
  defines.push_back("TO_ACC(x) " + convert_expr(*s.in, acc, "x"));
  defines.push_back("ACC_COMBINE(a, b) " + combine(s.op, acc));
  defines.push_back("FINISH(a) " + convert_expr(acc, *s.out, "a"));
  // Float sums carry Neumaier/TwoSum error terms (templates/reduce.glsl).
  bool compensated = s.op == "Sum" && acc.kind == Kind::Float;
  defines.push_back("COMPENSATED " + std::string(compensated ? "1" : "0"));
  uint32_t vec = parse_vec(key, *s.in, where);
  defines.push_back("VEC " + std::to_string(vec));
  if (vec > 1) {
    add_vector_operand_defines("IN0_", *s.in, vec, false, defines);
  }
  auto sg = key.params.find("sg");
  if (sg != key.params.end()) {
    if (s.columns || acc.bits > 32 || !caps.subgroup_shuffle) {
      throw std::runtime_error("[render] " + where +
                               ": the subgroup tree needs rows, a 32-bit accumulator and "
                               "subgroup shuffles.");
    }
    defines.push_back("SUBGROUP 1");
  }

  return row_kernel_source("reduce.glsl", defines, 2, 7, s.idx64, caps);
}

Launch reduce_launch(const KernelKey& key, const KernelSource& source, const ReduceGeometry& g) {
  const std::string where = "kernel " + key.canonical();
  Spec s = parse(key, where);
  check(g, where);
  if (s.columns != g.columns || s.idx64 != geometry_idx64(g)) {
    throw std::invalid_argument("[reduce_launch] " + where +
                                " does not match the geometry (mode or index width).");
  }
  uint32_t vec = parse_vec(key, *s.in, where);
  if (vec != vector_lanes(*s.in, g)) {
    throw std::invalid_argument("[reduce_launch] " + where +
                                " does not match the geometry (vector alignment).");
  }
  uint64_t wg = source.workgroup_size[0];
  uint64_t per_group = std::max<uint64_t>(wg / kColRowGroups, 1);  // columns per workgroup
  uint64_t col_groups = (static_cast<uint64_t>(g.count) / vec + per_group - 1) / per_group;
  uint64_t groups = (g.columns ? col_groups : static_cast<uint64_t>(g.count)) * g.splits;
  return pack_launch(source,
                     {static_cast<int64_t>(g.in_offset), static_cast<int64_t>(g.out_offset), g.len,
                      g.count, g.inner, g.splits, slice_length(g, vec)},
                     s.idx64, groups, where);
}

uint32_t row_workgroup_size(const DeviceCaps& caps) {
  uint32_t wg = kWorkgroupSize;
  while (wg > 1 && wg > caps.max_workgroup_invocations) {
    wg /= 2;
  }
  return wg;
}

KernelSource row_kernel_source(const std::string& tmpl, const std::vector<std::string>& defines,
                               uint32_t buffers, uint32_t fields, bool idx64,
                               const DeviceCaps& caps) {
  KernelSource source = render_template(tmpl, defines);
  source.num_buffers = buffers;
  source.push_constant_bytes = fields * (idx64 ? 8 : 4);
  uint32_t wg = row_workgroup_size(caps);
  source.workgroup_size = {wg, 1, 1};
  source.spec_constants = {{0, wg}};
  return source;
}

Launch pack_launch(const KernelSource& source, const std::vector<int64_t>& fields, bool idx64,
                   uint64_t groups, const std::string& where) {
  Launch launch;
  for (int64_t v : fields) {
    put(launch.push_constants, v, idx64);
  }
  if (launch.push_constants.size() != source.push_constant_bytes) {
    throw std::invalid_argument("[launch] " + where +
                                ": packed push constants do not match the kernel's block.");
  }
  launch.groups = row_groups(groups, where);
  return launch;
}

std::array<uint32_t, 3> row_groups(uint64_t groups, const std::string& where) {
  if (groups == 0) {
    return {0, 1, 1};
  }
  uint64_t x = std::min(groups, kMaxGroups);
  uint64_t y = (groups + x - 1) / x;
  if (y > kMaxGroups) {
    throw std::invalid_argument("[launch] " + where + ": too many workgroups for one launch.");
  }
  return {static_cast<uint32_t>(x), static_cast<uint32_t>(y), 1};
}

}  // namespace mlx::core::vulkan::codegen
