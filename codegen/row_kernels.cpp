// The arg_reduce family: a row kernel planned like reductions
// (codegen/reduce.h), with their own templates.
#include <limits>
#include <set>
#include <stdexcept>

#include "codegen/dtypes.h"
#include "codegen/geometry.h"
#include "codegen/internal.h"
#include "codegen/reduce.h"

namespace mlx::core::vulkan::codegen {

namespace {

// Whether an index can pass 2^31 - 1, with the headroom reduce.cpp explains (loop indices
// one stride past a row, grids rounded up to 65535-wide rows).
bool needs_64(const ReduceGeometry& g, uint64_t out_elems) {
  uint64_t reach = g.in_offset + static_cast<uint64_t>(g.count) * static_cast<uint64_t>(g.len);
  uint64_t outs = g.out_offset + out_elems;
  return std::max(2 * reach, 2 * outs) + (uint64_t{1} << 17) >
         static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
}

// Lanes of a 16-byte vector when rows can be read as vectors (element 0 and every row
// start aligned), else 1.
uint32_t row_vector_lanes(const std::string& dtype, const ReduceGeometry& g) {
  uint32_t lanes = 128u / static_cast<uint32_t>(dtype_info(dtype, "arg_reduce").bits);
  bool aligned = !g.columns && g.in_offset % lanes == 0 && (g.count <= 1 || g.len % lanes == 0);
  return aligned && g.len > 0 ? lanes : 1;
}

void check_geometry(const ReduceGeometry& g, ArgStage stage, const std::string& where) {
  if (g.count < 0 || g.len < 0 || g.inner < 1 || g.splits < 1 ||
      (g.splits != 1 && stage != ArgStage::Split) ||
      (g.columns && (stage != ArgStage::One || g.count % g.inner != 0))) {
    throw std::invalid_argument("[launch] " + where + ": inconsistent row-kernel geometry.");
  }
}

const char* stage_name(ArgStage stage) {
  return stage == ArgStage::One ? "one" : stage == ArgStage::Split ? "split" : "finish";
}

ArgStage parse_stage(const KernelKey& key, const std::string& where) {
  const std::string& v = key_param(key, "stage", where);
  for (ArgStage s : {ArgStage::One, ArgStage::Split, ArgStage::Finish}) {
    if (v == stage_name(s)) {
      return s;
    }
  }
  throw std::invalid_argument("[render] " + where + ": stage must be one, split or finish.");
}

// Elements per slice of a split launch: whole vectors, so every slice stays aligned.
int64_t arg_slice(const ReduceGeometry& g, uint32_t vec) {
  int64_t slice = (g.len + g.splits - 1) / g.splits;
  return std::max<int64_t>((slice + vec - 1) / vec * vec, 1);
}

}  // namespace

std::string arg_reduce_value_dtype(const std::string& in_dtype) {
  const DtypeInfo& in = dtype_info(in_dtype, "arg_reduce");
  if (in.kind == Kind::Float) {
    return "f32";
  }
  if (in.bits < 32) {
    return in.kind == Kind::Int ? "i32" : "u32";
  }
  return in.name;
}

KernelKey arg_reduce_key(const std::string& op, const std::string& in_dtype,
                         const ReduceGeometry& g, ArgStage stage, const DeviceCaps& caps) {
  check_geometry(g, stage, op);
  KernelKey key;
  key.family = "arg_reduce";
  key.params["op"] = op;
  key.params["in"] = in_dtype;
  key.params["mode"] = g.columns ? "col" : "row";
  key.params["idx"] = needs_64(g, static_cast<uint64_t>(g.count * g.splits)) ? "64" : "32";
  key.params["vec"] = std::to_string(stage == ArgStage::Finish ? 1 : row_vector_lanes(in_dtype, g));
  key.params["stage"] = stage_name(stage);
  const DtypeInfo& value = dtype_info(arg_reduce_value_dtype(in_dtype), "arg_reduce");
  if (!g.columns && caps.subgroup_shuffle && caps.subgroup_size > 1 && value.bits <= 32) {
    key.params["sg"] = std::to_string(caps.subgroup_size);
  }
  return key;
}

KernelSource render_arg_reduce(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  check_params(key, {"op", "in", "mode", "idx", "vec", "stage", "sg"}, where);
  const std::string& op = key_param(key, "op", where);
  if (op != "ArgMax" && op != "ArgMin") {
    throw std::invalid_argument("[render] " + where + ": op must be ArgMax or ArgMin.");
  }
  const DtypeInfo& in = dtype_info(key_param(key, "in", where), where);
  bool idx64 = parse_idx(key, where);
  bool columns = parse_columns(key, where);
  ArgStage stage = parse_stage(key, where);
  if (columns && stage != ArgStage::One) {
    throw std::invalid_argument("[render] " + where + ": columns are never split.");
  }
  if (stage == ArgStage::Finish && arg_reduce_value_dtype(in.name) != in.name) {
    throw std::invalid_argument("[render] " + where +
                                ": a finishing launch reads the split values' dtype.");
  }
  std::vector<std::string> defines =
      storage_defines({&in, &dtype_info("u32", where)}, idx64, caps, where);
  defines.push_back("IDX64 " + std::string(idx64 ? "1" : "0"));
  defines.push_back("MODE_COL " + std::string(columns ? "1" : "0"));
  defines.push_back("ARGMAX " + std::string(op == "ArgMax" ? "1" : "0"));
  defines.push_back(std::string("STAGE ") + (stage == ArgStage::One     ? "STAGE_ONE"
                                             : stage == ArgStage::Split ? "STAGE_SPLIT"
                                                                        : "STAGE_FINISH"));
  add_input_defines("IN0_", in, defines);
  defines.push_back(std::string("V_T ") + in.compute);
  defines.push_back("V_INIT " + reduce_identity(op == "ArgMax" ? "Max" : "Min", in));
  defines.push_back(in.kind == Kind::Float ? "IS_NAN(v) isnan(v)" : "IS_NAN(v) false");
  uint32_t vec = static_cast<uint32_t>(std::stoul(key_param(key, "vec", where)));
  if (vec != 1 &&
      (columns || stage == ArgStage::Finish || vec != 128u / static_cast<uint32_t>(in.bits))) {
    throw std::invalid_argument("[render] " + where + ": vec must be 1 or 16 bytes of rows.");
  }
  defines.push_back("VEC " + std::to_string(vec));
  if (vec > 1) {
    add_vector_operand_defines("IN0_", in, vec, false, defines);
  }
  if (key.params.count("sg")) {
    if (columns || dtype_info(arg_reduce_value_dtype(in.name), where).bits > 32 ||
        !caps.subgroup_shuffle) {
      throw std::invalid_argument("[render] " + where +
                                  ": the subgroup finish needs rows, a 32-bit value and "
                                  "subgroup shuffles.");
    }
    defines.push_back("SUBGROUP 1");
  }
  return row_kernel_source("arg_reduce.glsl", defines, stage == ArgStage::One ? 2 : 3, 8, idx64,
                           caps);
}

Launch arg_reduce_launch(const KernelKey& key, const KernelSource& source,
                         const ReduceGeometry& g) {
  const std::string where = "kernel " + key.canonical();
  ArgStage stage = parse_stage(key, where);
  check_geometry(g, stage, where);
  bool idx64 = parse_idx(key, where);
  uint32_t vec = stage == ArgStage::Finish ? 1 : row_vector_lanes(key_param(key, "in", where), g);
  if (parse_columns(key, where) != g.columns ||
      idx64 != needs_64(g, static_cast<uint64_t>(g.count * g.splits)) ||
      key_param(key, "vec", where) != std::to_string(vec)) {
    throw std::invalid_argument("[launch] " + where + " does not match the geometry.");
  }
  uint64_t wg = source.workgroup_size[0];
  uint64_t groups = g.columns ? (static_cast<uint64_t>(g.count) + wg - 1) / wg
                              : static_cast<uint64_t>(g.count * g.splits);
  return pack_launch(
      source,
      {static_cast<int64_t>(g.in_offset), static_cast<int64_t>(g.out_offset), g.len, g.count,
       g.inner, g.splits, arg_slice(g, vec), static_cast<int64_t>(g.aux_offset)},
      idx64, groups, where);
}

}  // namespace mlx::core::vulkan::codegen
