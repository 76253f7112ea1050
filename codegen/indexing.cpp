// The "gather" and "scatter" families (codegen/indexing.h): keys, rendering and launch
// packing for templates/gather.glsl and templates/scatter.glsl.
#include "codegen/indexing.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "codegen/dtypes.h"
#include "codegen/geometry.h"
#include "codegen/internal.h"

namespace mlx::core::vulkan::codegen {

namespace {

// Rows of at least this many bytes are copied by a workgroup of kRowsWorkgroup invocations;
// shorter ones go element by element (a workgroup per short row would idle most of itself).
constexpr int64_t kMinRowBytes = 128;
constexpr uint32_t kRowsWorkgroup = 64;
// The scatter's atomic mode: chosen when fewer outer coordinates than this would each loop
// over at least kAtomicMinLoop updates (docs/indexing.md).
constexpr int64_t kAtomicMaxOuter = 4096;
constexpr int64_t kAtomicMinLoop = 64;

int64_t product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (auto d : v) {
    n *= d;
  }
  return n;
}

// Largest |offset| reached from `base` over dims of `shape` with `strides`.
uint64_t reach_of(int64_t base, const std::vector<int64_t>& shape,
                  const std::vector<int64_t>& strides) {
  uint64_t r = static_cast<uint64_t>(std::abs(base));
  for (size_t d = 0; d < shape.size(); ++d) {
    r += static_cast<uint64_t>(std::max<int64_t>(shape[d] - 1, 0)) *
         static_cast<uint64_t>(std::abs(strides[d]));
  }
  return r;
}

const DtypeInfo& index_info(const KernelKey& key, const std::string& where) {
  const DtypeInfo& dt = dtype_info(key_param(key, "index", where), where);
  if (dt.kind != Kind::Int && dt.kind != Kind::Uint) {
    throw std::invalid_argument("[render] " + where + ": indices must have an integer dtype.");
  }
  return dt;
}

void add_index_defines(const DtypeInfo& index, bool clamp, std::vector<std::string>& defines) {
  add_input_defines("INDEX_", index, defines);
  defines.push_back(std::string("INDEX_SIGNED ") + (index.kind == Kind::Int ? "1" : "0"));
  defines.push_back(std::string("CLAMP ") + (clamp ? "1" : "0"));
}

bool parse_clamp(const KernelKey& key, const char* name, const std::string& where) {
  const std::string& v = key_param(key, name, where);
  if (v != "fill" && v != "clamp") {
    throw std::invalid_argument("[render] " + where + ": " + name + " must be fill or clamp.");
  }
  return v == "clamp";
}

KernelSource source_with(const std::string& tmpl, const std::vector<std::string>& defines,
                         uint32_t fields, bool idx64, uint32_t workgroup, const DeviceCaps& caps) {
  KernelSource source = render_template(tmpl, defines);
  source.num_buffers = 4;
  source.push_constant_bytes = fields * (idx64 ? 8 : 4);
  uint32_t wg = std::min(workgroup, row_workgroup_size(caps));
  source.workgroup_size = {wg, 1, 1};
  source.spec_constants = {{0, wg}};
  return source;
}

// ---- gather ---------------------------------------------------------------------------

struct GatherPlan {
  bool rows = false;
  int unit = 4;       // bytes per step
  int64_t lanes = 1;  // elements per step
  bool idx64 = false;
};

void check(const GatherGeometry& g, const std::string& where) {
  size_t nd = g.shape.size();
  bool itemsize_ok = g.itemsize == 1 || g.itemsize == 2 || g.itemsize == 4 || g.itemsize == 8;
  if (g.src_strides.size() != nd || g.idx_strides.size() != nd || !itemsize_ok ||
      g.win_lo > g.win_hi) {
    throw std::invalid_argument("[launch] " + where + ": inconsistent gather geometry.");
  }
}

GatherPlan gather_plan(const GatherGeometry& g) {
  check(g, "gather");
  GatherPlan p;
  p.unit = g.itemsize;
  size_t nd = g.shape.size();
  if (nd > 0 && g.src_strides.back() == 1 && g.idx_strides.back() == 0 &&
      g.shape.back() * g.itemsize >= kMinRowBytes) {
    for (int unit : {16, 8, 4}) {
      if (unit < g.itemsize) {
        continue;
      }
      int64_t lanes = unit / g.itemsize;
      bool ok = g.shape.back() % lanes == 0 && g.src_offset % lanes == 0 &&
                static_cast<int64_t>(g.out_offset) % lanes == 0 && g.win_lo % lanes == 0;
      for (size_t d = 0; d + 1 < nd && ok; ++d) {
        ok = g.src_strides[d] % lanes == 0;
      }
      for (const auto& a : g.axes) {
        ok = ok && a.stride % lanes == 0;
      }
      if (ok) {
        p.rows = true;
        p.unit = unit;
        p.lanes = lanes;
        break;
      }
    }
  }
  uint64_t out_reach = g.out_offset + static_cast<uint64_t>(product(g.shape));
  uint64_t src_reach = static_cast<uint64_t>(std::abs(g.src_offset)) +
                       static_cast<uint64_t>(std::max(std::abs(g.src_lo), std::abs(g.src_hi))) +
                       static_cast<uint64_t>(std::max(std::abs(g.win_lo), std::abs(g.win_hi)));
  uint64_t idx_reach = 0;
  for (const auto& a : g.axes) {
    idx_reach = std::max(idx_reach, reach_of(a.idx_offset, g.shape, g.idx_strides));
  }
  p.idx64 = reach_needs_64(std::max({out_reach, src_reach, idx_reach}));
  return p;
}

// ---- scatter --------------------------------------------------------------------------

void check(const ScatterGeometry& g, const std::string& where) {
  auto dims_ok = [](const ScatterDims& d, bool with_idx) {
    size_t n = d.shape.size();
    return d.out_strides.size() == n && d.upd_strides.size() == n &&
           d.idx_strides.size() == (with_idx ? n : 0);
  };
  if (g.n < 0 || !dims_ok(g.outer, true) || !dims_ok(g.inner, false)) {
    throw std::invalid_argument("[launch] " + where + ": inconsistent scatter geometry.");
  }
}

bool scatter_idx64(const ScatterGeometry& g, uint64_t count) {
  uint64_t out_reach = g.out_offset + reach_of(0, g.outer.shape, g.outer.out_strides) +
                       reach_of(0, g.inner.shape, g.inner.out_strides);
  for (const auto& a : g.axes) {
    out_reach += static_cast<uint64_t>(std::max<int64_t>(a.limit, 0)) *
                 static_cast<uint64_t>(std::abs(a.stride));
  }
  uint64_t upd_reach = g.upd_offset +
                       static_cast<uint64_t>(std::max<int64_t>(g.n - 1, 0)) *
                           static_cast<uint64_t>(std::abs(g.upd_mul_i)) +
                       reach_of(0, g.outer.shape, g.outer.upd_strides) +
                       reach_of(0, g.inner.shape, g.inner.upd_strides);
  uint64_t idx_reach = 0;
  for (const auto& a : g.axes) {
    idx_reach = std::max(idx_reach, reach_of(a.idx_offset, g.outer.shape, g.outer.idx_strides) +
                                        static_cast<uint64_t>(std::max<int64_t>(g.n - 1, 0)) *
                                            static_cast<uint64_t>(std::abs(g.idx_mul_i)));
  }
  return reach_needs_64(std::max({out_reach, upd_reach, idx_reach, count}));
}

uint64_t scatter_count(const std::string& mode, const ScatterGeometry& g) {
  uint64_t outer = static_cast<uint64_t>(product(g.outer.shape));
  uint64_t inner = static_cast<uint64_t>(product(g.inner.shape));
  return mode == "seq" ? outer : static_cast<uint64_t>(g.n) * outer * inner;
}

// OP(y, x) of the template for `op` on compute values of `dt`.
std::string op_expr(const std::string& op, const DtypeInfo& dt) {
  bool is_bool = dt.kind == Kind::Bool;
  bool is_float = dt.kind == Kind::Float;
  if (op == "None") {
    return "(x)";
  }
  if (op == "Sum") {
    return is_bool ? "((y) | (x))" : "((y) + (x))";
  }
  if (op == "Prod") {
    return is_bool ? "((y) & (x))" : "((y) * (x))";
  }
  if (op == "Max") {
    return is_bool ? "((y) | (x))" : is_float ? "scatter_max_f(y, x)" : "max(y, x)";
  }
  if (op == "Min") {
    return is_bool ? "((y) & (x))" : is_float ? "scatter_min_f(y, x)" : "min(y, x)";
  }
  throw std::invalid_argument("[render] scatter: op must be None, Sum, Prod, Max or Min.");
}

}  // namespace

// ---- gather ---------------------------------------------------------------------------

KernelKey gather_key(const std::string& index_dtype, bool clamp, const GatherGeometry& g) {
  GatherPlan p = gather_plan(g);
  return KernelKey{"gather",
                   {{"idx", p.idx64 ? "64" : "32"},
                    {"index", index_dtype},
                    {"layout", p.rows ? "rows" : "elem"},
                    {"mode", clamp ? "clamp" : "fill"},
                    {"unit", std::to_string(p.unit)}}};
}

KernelSource render_gather(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  check_params(key, {"idx", "index", "layout", "mode", "unit"}, where);
  const DtypeInfo& index = index_info(key, where);
  bool idx64 = parse_idx(key, where);
  bool clamp = parse_clamp(key, "mode", where);
  const std::string& layout = key_param(key, "layout", where);
  if (layout != "rows" && layout != "elem") {
    throw std::invalid_argument("[render] " + where + ": layout must be rows or elem.");
  }
  bool rows = layout == "rows";
  const std::string& unit = key_param(key, "unit", where);
  const char* unit_type = nullptr;
  const char* storage = "u32";  // the dtype whose storage the unit needs
  if (rows) {
    unit_type = unit == "4" ? "uint" : unit == "8" ? "uvec2" : unit == "16" ? "uvec4" : nullptr;
  } else if (unit == "1") {
    unit_type = "uint8_t";
    storage = "u8";
  } else if (unit == "2") {
    unit_type = "uint16_t";
    storage = "u16";
  } else if (unit == "4") {
    unit_type = "uint";
  } else if (unit == "8") {
    unit_type = "uint64_t";
    storage = "u64";
  }
  if (!unit_type) {
    throw std::invalid_argument("[render] " + where +
                                ": unit must be 4, 8 or 16 bytes (rows) or 1, 2, 4 or 8 (elem).");
  }
  std::vector<std::string> defines =
      storage_defines({&index, &dtype_info(storage, where)}, idx64, caps, where);
  defines.push_back(std::string("IDX64 ") + (idx64 ? "1" : "0"));
  defines.push_back(std::string("ROWS ") + (rows ? "1" : "0"));
  defines.push_back(std::string("UNIT_T ") + unit_type);
  add_index_defines(index, clamp, defines);
  return source_with("gather.glsl", defines, 7, idx64,
                     rows ? kRowsWorkgroup : row_workgroup_size(caps), caps);
}

Launch gather_launch(const KernelKey& key, const KernelSource& source, const GatherGeometry& g) {
  const std::string where = "kernel " + key.canonical();
  check(g, where);
  bool clamp = parse_clamp(key, "mode", where);
  if (key != gather_key(key_param(key, "index", where), clamp, g)) {
    throw std::invalid_argument("[launch] " + where + " does not match the geometry.");
  }
  GatherPlan p = gather_plan(g);
  size_t nd = g.shape.size();
  size_t meta_dims = p.rows ? nd - 1 : nd;
  int64_t lanes = p.lanes;
  Launch launch;
  auto& m = launch.meta;
  put(m, static_cast<int64_t>(meta_dims), p.idx64);
  put(m, static_cast<int64_t>(g.axes.size()), p.idx64);
  for (size_t d = 0; d < meta_dims; ++d) {
    put(m, g.shape[d], p.idx64);
  }
  for (size_t d = 0; d < meta_dims; ++d) {
    put(m, g.src_strides[d] / lanes, p.idx64);
  }
  for (size_t d = 0; d < meta_dims; ++d) {
    put(m, g.idx_strides[d], p.idx64);
  }
  for (const auto& a : g.axes) {
    put(m, a.idx_offset, p.idx64);
    put(m, a.stride / lanes, p.idx64);
    put(m, a.size, p.idx64);
    put(m, a.limit, p.idx64);
  }
  int64_t elems = product(g.shape);
  int64_t row_len = p.rows ? g.shape.back() / lanes : 1;
  int64_t count = p.rows ? elems / g.shape.back() : elems;
  uint64_t wg = source.workgroup_size[0];
  uint64_t groups =
      p.rows ? static_cast<uint64_t>(count) : (static_cast<uint64_t>(count) + wg - 1) / wg;
  Launch packed =
      pack_launch(source,
                  {count, row_len, g.src_offset / lanes, static_cast<int64_t>(g.out_offset) / lanes,
                   g.win_lo / lanes, (g.win_hi + lanes - 1) / lanes, g.fill ? 1 : 0},
                  p.idx64, groups, where);
  launch.push_constants = std::move(packed.push_constants);
  launch.groups = packed.groups;
  return launch;
}

// ---- scatter --------------------------------------------------------------------------

std::string scatter_mode(const std::string& op, const std::string& dtype,
                         const ScatterGeometry& g) {
  int64_t outer = product(g.outer.shape);
  int64_t loop = g.n * product(g.inner.shape);
  if (g.n <= 1) {
    return "each";
  }
  const DtypeInfo& dt = dtype_info(dtype, "scatter");
  if (op != "None" && dt.bits <= 32 && outer < kAtomicMaxOuter && loop >= kAtomicMinLoop) {
    return "atomic";
  }
  return "seq";
}

KernelKey scatter_key(const std::string& op, const std::string& dtype,
                      const std::string& index_dtype, bool clamp, const ScatterGeometry& g) {
  check(g, "scatter");
  std::string mode = scatter_mode(op, dtype, g);
  return KernelKey{"scatter",
                   {{"bounds", clamp ? "clamp" : "fill"},
                    {"dtype", dtype},
                    {"idx", scatter_idx64(g, scatter_count(mode, g)) ? "64" : "32"},
                    {"index", index_dtype},
                    {"mode", mode},
                    {"op", op}}};
}

KernelSource render_scatter(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  check_params(key, {"bounds", "dtype", "idx", "index", "mode", "op"}, where);
  const DtypeInfo& dt = dtype_info(key_param(key, "dtype", where), where);
  const DtypeInfo& index = index_info(key, where);
  bool idx64 = parse_idx(key, where);
  bool clamp = parse_clamp(key, "bounds", where);
  const std::string& op = key_param(key, "op", where);
  const std::string& mode = key_param(key, "mode", where);
  int mode_num = mode == "each" ? 0 : mode == "seq" ? 1 : mode == "atomic" ? 2 : -1;
  if (mode_num < 0) {
    throw std::invalid_argument("[render] " + where + ": mode must be each, seq or atomic.");
  }
  if (mode_num == 2 && (dt.bits > 32 || op == "None")) {
    throw std::invalid_argument("[render] " + where +
                                ": the atomic mode is for reductions of 8/16/32-bit dtypes.");
  }
  std::vector<std::string> defines = storage_defines({&dt, &index}, idx64, caps, where);
  defines.push_back(std::string("IDX64 ") + (idx64 ? "1" : "0"));
  defines.push_back("MODE " + std::to_string(mode_num));
  add_input_defines("IN0_", dt, defines);
  add_output_defines(dt, defines);
  add_index_defines(index, clamp, defines);
  defines.push_back("OP(y, x) " + op_expr(op, dt));
  bool native = mode_num == 2 && dt.bits == 32 && dt.kind != Kind::Float &&
                (op == "Sum" || op == "Max" || op == "Min");
  defines.push_back(std::string("NATIVE_ATOMIC ") + (native ? "1" : "0"));
  if (native) {
    defines.push_back(std::string("ATOMIC_OP(m, v) ") + (op == "Sum"   ? "atomicAdd(m, v)"
                                                         : op == "Max" ? "atomicMax(m, v)"
                                                                       : "atomicMin(m, v)"));
  } else if (mode_num == 2) {
    defines.push_back("ELEM_BYTES " + std::to_string(dt.bits / 8));
    defines.push_back(std::string("FROM_BITS(b) ") + dt.from_bits);
    defines.push_back(std::string("TO_BITS(v) ") + dt.to_bits);
  }
  return source_with("scatter.glsl", defines, 8, idx64, row_workgroup_size(caps), caps);
}

Launch scatter_launch(const KernelKey& key, const KernelSource& source, const ScatterGeometry& g) {
  const std::string where = "kernel " + key.canonical();
  check(g, where);
  bool clamp = parse_clamp(key, "bounds", where);
  if (key != scatter_key(key_param(key, "op", where), key_param(key, "dtype", where),
                         key_param(key, "index", where), clamp, g)) {
    throw std::invalid_argument("[launch] " + where + " does not match the geometry.");
  }
  bool idx64 = parse_idx(key, where);
  std::string mode = key_param(key, "mode", where);
  Launch launch;
  auto& m = launch.meta;
  put(m, static_cast<int64_t>(g.outer.shape.size()), idx64);
  put(m, static_cast<int64_t>(g.inner.shape.size()), idx64);
  put(m, static_cast<int64_t>(g.axes.size()), idx64);
  for (const auto* v :
       {&g.outer.shape, &g.outer.out_strides, &g.outer.idx_strides, &g.outer.upd_strides,
        &g.inner.shape, &g.inner.out_strides, &g.inner.upd_strides}) {
    for (auto x : *v) {
      put(m, x, idx64);
    }
  }
  for (const auto& a : g.axes) {
    put(m, a.idx_offset, idx64);
    put(m, a.stride, idx64);
    put(m, a.size, idx64);
    put(m, a.limit, idx64);
  }
  uint64_t count = scatter_count(mode, g);
  uint64_t wg = source.workgroup_size[0];
  Launch packed =
      pack_launch(source,
                  {static_cast<int64_t>(count), g.n, product(g.outer.shape), product(g.inner.shape),
                   g.idx_mul_i, g.upd_mul_i, static_cast<int64_t>(g.upd_offset),
                   static_cast<int64_t>(g.out_offset)},
                  idx64, (count + wg - 1) / wg, where);
  launch.push_constants = std::move(packed.push_constants);
  launch.groups = packed.groups;
  return launch;
}

}  // namespace mlx::core::vulkan::codegen
