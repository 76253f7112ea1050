// The "norm" and "rope" families (codegen/fast.h): keys, rendering and launch packing for
// templates/norm.glsl and templates/rope.glsl.
#include "codegen/fast.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "codegen/dtypes.h"
#include "codegen/geometry.h"
#include "codegen/internal.h"

namespace mlx::core::vulkan::codegen {

namespace {

int64_t float_bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return static_cast<int64_t>(b);
}

const DtypeInfo& float_dtype(const std::string& name, const std::string& where) {
  const DtypeInfo& dt = dtype_info(name, where);
  if (dt.kind != Kind::Float) {
    throw std::invalid_argument("[render] " + where + ": needs a float dtype.");
  }
  return dt;
}

std::string flag(const KernelKey& key, const char* name, const std::string& where) {
  const std::string& v = key_param(key, name, where);
  if (v != "0" && v != "1") {
    throw std::invalid_argument("[render] " + where + ": " + name + " must be 0 or 1.");
  }
  return v;
}

uint32_t parse_vec(const KernelKey& key, const std::string& where, uint32_t max) {
  const std::string& v = key_param(key, "vec", where);
  if (v != "1" && v != "2" && v != "4" && v != "8") {
    throw std::invalid_argument("[render] " + where + ": vec must be 1, 2, 4 or 8.");
  }
  uint32_t vec = static_cast<uint32_t>(std::stoul(v));
  if (vec > max) {
    throw std::invalid_argument("[render] " + where + ": vec must be at most " +
                                std::to_string(max) + ".");
  }
  return vec;
}

KernelSource finish(const std::string& tmpl, std::vector<std::string> defines, const DtypeInfo& dt,
                    bool idx64, uint32_t vec, uint32_t buffers, uint32_t fields,
                    const DeviceCaps& caps, const std::string& where) {
  std::vector<std::string> all = storage_defines({&dt}, idx64, caps, where);
  all.push_back("IDX64 " + std::string(idx64 ? "1" : "0"));
  all.push_back("VEC " + std::to_string(vec));
  add_input_defines("IN0_", dt, all);
  add_output_defines(dt, all);
  if (vec > 1) {
    add_vector_operand_defines("IN0_", dt, vec, false, all);
    add_vector_operand_defines("OUT_", dt, vec, true, all);
  }
  all.insert(all.end(), defines.begin(), defines.end());
  return row_kernel_source(tmpl, all, buffers, fields, idx64, caps);
}

// ---- norm -------------------------------------------------------------------------------

bool norm_idx64(const NormGeometry& g) {
  uint64_t span = static_cast<uint64_t>(g.count) * static_cast<uint64_t>(g.len);
  uint64_t reach =
      std::max({g.in_offset + span, g.out_offset + span, g.w_offset + static_cast<uint64_t>(g.len),
                g.b_offset + static_cast<uint64_t>(g.len)});
  return reach_needs_64(reach);
}

// Lanes of a 16-byte vector of the dtype when every row of x and the output starts at a
// multiple of it, else 1.
uint32_t norm_vec(const NormGeometry& g, const DtypeInfo& dt) {
  uint32_t lanes = 128u / static_cast<uint32_t>(dt.bits);
  bool aligned = g.len % lanes == 0 && g.in_offset % lanes == 0 && g.out_offset % lanes == 0;
  return aligned ? lanes : 1;
}

void check_norm(const NormGeometry& g, const std::string& where) {
  if (g.count < 0 || g.len < 1 || g.w_stride < 0 || g.w_stride > 1 || g.b_stride < 0 ||
      g.b_stride > 1) {
    throw std::invalid_argument("[launch] " + where + ": inconsistent norm geometry.");
  }
}

// ---- rope -------------------------------------------------------------------------------

bool rope_idx64(const RopeGeometry& g) {
  uint64_t span = static_cast<uint64_t>(g.count) * static_cast<uint64_t>(g.d);
  uint64_t norm_reach = g.prenorm ? g.norm_w_offset + static_cast<uint64_t>(g.d) : 0;
  // Written into a larger output: its blocks of out_rows rows.
  uint64_t into_reach =
      g.into && g.t_len > 0
          ? g.out_offset + static_cast<uint64_t>(g.count / g.t_len) *
                               static_cast<uint64_t>(g.out_rows) * static_cast<uint64_t>(g.d)
          : 0;
  return reach_needs_64(
      std::max({std::max({g.in_offset, g.out_offset, static_cast<uint64_t>(g.row0)}) + span,
                norm_reach, into_reach, g.start_offset + 1}));
}

uint32_t rope_vec(const RopeGeometry& g, const DtypeInfo& dt) {
  for (uint32_t vec : {128u / static_cast<uint32_t>(dt.bits), 4u, 2u}) {
    bool aligned = g.d % vec == 0 && g.half_dims % vec == 0 && g.in_offset % vec == 0 &&
                   g.out_offset % vec == 0;
    if (aligned) {
      return vec;
    }
  }
  return 1;
}

void check_rope(const RopeGeometry& g, const std::string& where) {
  if (g.row0 < 0 || g.count < 0 || g.d < 1 || g.half_dims < 1 || 2 * g.half_dims > g.d ||
      g.t_len < 1 || g.per_batch < 1) {
    throw std::invalid_argument("[launch] " + where + ": inconsistent rope geometry.");
  }
}

}  // namespace

KernelKey norm_key(const std::string& op, const std::string& dtype, const NormGeometry& g,
                   const DeviceCaps& caps) {
  check_norm(g, "norm");
  KernelKey key;
  key.family = "norm";
  key.params = {{"op", op},
                {"dtype", dtype},
                {"idx", norm_idx64(g) ? "64" : "32"},
                {"vec", std::to_string(norm_vec(g, float_dtype(dtype, "norm")))},
                {"sg", caps.subgroup_shuffle ? "1" : "0"}};
  return key;
}

KernelSource render_norm(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  check_params(key, {"op", "dtype", "idx", "vec", "sg"}, where);
  const std::string& op = key_param(key, "op", where);
  if (op != "rms" && op != "layer" && op != "softmax") {
    throw std::invalid_argument("[render] " + where + ": op must be rms, layer or softmax.");
  }
  std::string norm_op = op == "rms" ? "OP_RMS" : op == "layer" ? "OP_LAYER" : "OP_SOFTMAX";
  uint32_t buffers = op == "rms" ? 3 : op == "layer" ? 4 : 2;
  const DtypeInfo& dt = float_dtype(key_param(key, "dtype", where), where);
  uint32_t lanes = 128u / static_cast<uint32_t>(dt.bits);
  uint32_t vec = parse_vec(key, where, lanes);
  if (vec != 1 && vec != lanes) {
    throw std::invalid_argument("[render] " + where + ": vec must be 1 or " +
                                std::to_string(lanes) + ".");
  }
  std::string sg = flag(key, "sg", where);
  if (sg == "1" && !caps.subgroup_shuffle) {
    throw std::invalid_argument("[render] " + where + ": the device has no subgroup shuffles.");
  }
  return finish("norm.glsl",
                {std::string("NORM_OP ").append(norm_op), std::string("SUBGROUP ").append(sg)}, dt,
                parse_idx(key, where), vec, buffers, 10, caps, where);
}

Launch norm_launch(const KernelKey& key, const KernelSource& source, const NormGeometry& g) {
  const std::string where = "kernel " + key.canonical();
  check_norm(g, where);
  bool idx64 = parse_idx(key, where);
  const DtypeInfo& dt = float_dtype(key_param(key, "dtype", where), where);
  uint32_t vec = parse_vec(key, where, 8);
  if (idx64 != norm_idx64(g) || (vec > 1 && norm_vec(g, dt) != vec)) {
    throw std::invalid_argument("[launch] " + where + " does not match the geometry.");
  }
  // About four vectors (64 bytes, templates/norm.glsl's MAX_STEPS) per invocation, in a
  // power of two of invocations up to the group.
  uint64_t wg = source.workgroup_size[0];
  uint64_t vectors = static_cast<uint64_t>(g.len) / vec;
  uint64_t per = vec > 1 ? 4 : 8;
  uint64_t tpr = 1;
  while (tpr < wg && tpr * per < vectors) {
    tpr *= 2;
  }
  uint64_t rows_per_group = wg / tpr;
  uint64_t groups = (static_cast<uint64_t>(g.count) + rows_per_group - 1) / rows_per_group;
  return pack_launch(
      source,
      {static_cast<int64_t>(g.in_offset), static_cast<int64_t>(g.w_offset),
       static_cast<int64_t>(g.b_offset), static_cast<int64_t>(g.out_offset), g.len, g.count,
       g.w_stride, g.b_stride, static_cast<int64_t>(tpr), float_bits(g.eps)},
      idx64, groups, where);
}

float rope_coefficient(float base, int64_t half_dims) {
  return std::log2(base) / static_cast<float>(half_dims);
}

KernelKey rope_key(const std::string& dtype, const RopeGeometry& g) {
  check_rope(g, "rope");
  KernelKey key;
  key.family = "rope";
  key.params = {{"dtype", dtype},
                {"trad", g.traditional ? "1" : "0"},
                {"freqs", g.freqs ? "1" : "0"},
                {"into", g.into ? "1" : "0"},
                {"norm", g.prenorm ? "1" : "0"},
                {"vec", std::to_string(rope_vec(g, float_dtype(dtype, "rope")))},
                {"idx", rope_idx64(g) ? "64" : "32"}};
  return key;
}

bool rope_prenorm_fits(const std::string& dtype, const RopeGeometry& g, const DeviceCaps& caps) {
  uint32_t vec = rope_vec(g, float_dtype(dtype, "rope"));
  int64_t units = g.half_dims / vec;
  return caps.subgroup_shuffle && 2 * g.half_dims == g.d && units >= 1 &&
         (units & (units - 1)) == 0 && units <= int64_t{caps.subgroup_size};
}

bool rope_into_fits(const RopeGeometry& g) {
  return g.row0 == 0 && g.t_len >= 1 && g.out_rows >= g.t_len && g.count % g.t_len == 0 &&
         !rope_idx64(g);
}

KernelSource render_rope(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  check_params(key, {"dtype", "trad", "freqs", "into", "norm", "vec", "idx"}, where);
  const DtypeInfo& dt = float_dtype(key_param(key, "dtype", where), where);
  std::string freqs = flag(key, "freqs", where);
  std::string trad = flag(key, "trad", where);
  std::string norm = flag(key, "norm", where);
  std::string into = flag(key, "into", where);
  if (norm == "1" && !caps.subgroup_shuffle) {
    throw std::invalid_argument("[render] " + where + ": norm 1 needs subgroup shuffles.");
  }
  bool idx64 = parse_idx(key, where);
  if (into == "1" && idx64) {
    throw std::invalid_argument("[render] " + where + ": into 1 needs 32-bit indices.");
  }
  uint32_t buffers = 3 + (freqs == "1" ? 1 : 0) + (norm == "1" ? 1 : 0) + (into == "1" ? 1 : 0);
  return finish("rope.glsl",
                {std::string("TRADITIONAL ").append(trad), std::string("FREQS ").append(freqs),
                 std::string("PRENORM ").append(norm), std::string("INTO ").append(into)},
                dt, idx64, parse_vec(key, where, 128u / static_cast<uint32_t>(dt.bits)), buffers,
                into == "1" ? 17 : 15, caps, where);
}

Launch rope_launch(const KernelKey& key, const KernelSource& source, const RopeGeometry& g) {
  const std::string where = "kernel " + key.canonical();
  check_rope(g, where);
  bool idx64 = parse_idx(key, where);
  const DtypeInfo& dt = float_dtype(key_param(key, "dtype", where), where);
  uint32_t vec = parse_vec(key, where, 8);
  if (idx64 != rope_idx64(g) || g.half_dims % vec != 0 || (vec > 1 && rope_vec(g, dt) < vec) ||
      (key_param(key, "freqs", where) == "1") != g.freqs ||
      (key_param(key, "trad", where) == "1") != g.traditional ||
      (key_param(key, "norm", where) == "1") != g.prenorm ||
      (g.prenorm && 2 * g.half_dims != g.d) ||
      (key_param(key, "into", where) == "1") != g.into || (g.into && !rope_into_fits(g))) {
    throw std::invalid_argument("[launch] " + where + " does not match the geometry.");
  }
  uint64_t per_row = static_cast<uint64_t>(g.half_dims / vec + (g.d - 2 * g.half_dims));
  uint64_t wg = source.workgroup_size[0];
  uint64_t groups = (static_cast<uint64_t>(g.count) * per_row + wg - 1) / wg;
  std::vector<int64_t> fields{static_cast<int64_t>(g.in_offset),
                              static_cast<int64_t>(g.out_offset),
                              static_cast<int64_t>(g.offsets_offset),
                              static_cast<int64_t>(g.freqs_offset),
                              g.row0,
                              g.count,
                              g.d,
                              g.half_dims,
                              g.t_len,
                              g.per_batch,
                              g.offset_per_batch ? 1 : 0,
                              float_bits(g.scale),
                              float_bits(rope_coefficient(g.base, g.half_dims)),
                              static_cast<int64_t>(g.norm_w_offset),
                              float_bits(g.eps)};
  if (g.into) {
    fields.push_back(g.out_rows);
    fields.push_back(static_cast<int64_t>(g.start_offset));
  }
  return pack_launch(source, fields, idx64, groups, where);
}

}  // namespace mlx::core::vulkan::codegen
