// Elementwise families: classify a launch into a key, render the key into GLSL, and pack
// the push constants / meta buffer that templates/include/elementwise.glsl reads.
#include "codegen/elementwise.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <stdexcept>

#include "codegen/dtypes.h"
#include "codegen/elementwise_ops.h"
#include "codegen/geometry.h"
#include "codegen/internal.h"
#include "codegen/transpose.h"

namespace mlx::core::vulkan::codegen {

namespace {

constexpr uint32_t kMaxGroups = 65535;  // the minimum maxComputeWorkGroupCount Vulkan allows

// The elementwise families and their input counts.
struct ElementwiseFamily {
  const char* name;
  size_t inputs;
};
constexpr ElementwiseFamily kElementwiseFamilies[] = {
    {"unary", 1}, {"binary", 2}, {"select", 3}, {"copy", 1}};

size_t input_count(const std::string& family) {
  for (const auto& f : kElementwiseFamilies) {
    if (family == f.name) {
      return f.inputs;
    }
  }
  throw std::invalid_argument("[elementwise] unknown elementwise family '" + family +
                              "' (expected unary, binary, select or copy).");
}

struct Layout {
  std::string letters;  // one of s/c/g per input
  std::string rank;     // "" (no g input), "1", "2", "3" or "n"
  bool idx64 = false;
  uint32_t vec = 0;  // elements per vector step, 0 for the scalar path
};

// Bytes every binding must start at for the vector path: its widest vector (a u64vec4).
constexpr uint32_t kVectorAlignment = 32;

// Elements per vector step for these dtype widths (bits): 16 bytes of the widest, but at
// least 4 bytes of the narrowest, so every lane packs into whole 32-bit words.
uint32_t vector_width(const std::vector<int>& bits) {
  int widest = *std::max_element(bits.begin(), bits.end());
  int narrowest = *std::min_element(bits.begin(), bits.end());
  return std::max(128 / widest, 32 / narrowest);
}

// Whether every operand of the normalized geometry can be read as whole `vec`-element
// vectors (see elementwise_key).
bool vectorizable(const Normalized& n, const std::string& letters, uint32_t vec,
                  uint32_t binding_alignment) {
  if (vec < 2 || binding_alignment % kVectorAlignment != 0 || n.out_offset % vec != 0) {
    return false;
  }
  for (size_t k = 0; k < letters.size(); ++k) {
    if (letters[k] == 'c' && n.offsets[k] % vec != 0) {
      return false;
    }
    if (letters[k] != 'g') {
      continue;
    }
    const auto& st = n.strides[k];
    if (n.shape.size() < 2 || n.shape.back() % vec != 0 || (st.back() != 0 && st.back() != 1)) {
      return false;
    }
    if (st.back() == 1) {
      bool aligned = n.offsets[k] % vec == 0;
      for (size_t d = 0; d + 1 < st.size(); ++d) {
        aligned = aligned && st[d] % int64_t(vec) == 0;
      }
      if (!aligned) {
        return false;
      }
    }
  }
  return true;
}

// `vec`: the dtypes' vector width (0: never vectorize).
Layout classify(const Normalized& n, uint32_t vec, uint32_t binding_alignment) {
  Layout l;
  bool any_g = false;
  for (size_t k = 0; k < n.strides.size(); ++k) {
    const auto& s = n.strides[k];
    bool scalar = std::all_of(s.begin(), s.end(), [](int64_t v) { return v == 0; });
    bool contiguous = true;
    int64_t expected = 1;
    for (size_t d = s.size(); d-- > 0;) {
      contiguous = contiguous && s[d] == expected;
      expected *= n.shape[d];
    }
    char c = scalar ? 's' : contiguous ? 'c' : 'g';
    any_g = any_g || c == 'g';
    l.letters += c;
  }
  if (any_g) {
    size_t r = n.shape.size();
    l.rank = r <= 3 ? std::to_string(r) : "n";
  }
  l.idx64 = needs_idx64(n);
  if (vectorizable(n, l.letters, vec, binding_alignment)) {
    l.vec = vec;
  }
  return l;
}

// The vector width for these dtype names, or 0 when one is not a GPU dtype (render then
// reports it).
uint32_t vector_width(const std::vector<std::string>& names) {
  std::vector<int> bits;
  for (const auto& name : names) {
    const DtypeInfo* d = find_dtype(name);
    if (!d) {
      return 0;
    }
    bits.push_back(d->bits);
  }
  return vector_width(bits);
}

std::string join_dtypes(const std::vector<std::string>& dts) {
  std::string s;
  for (const auto& d : dts) {
    s += (s.empty() ? "" : ".") + d;
  }
  return s;
}

std::vector<std::string> split_dtypes(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    size_t dot = s.find('.', pos);
    out.push_back(s.substr(pos, dot == std::string::npos ? dot : dot - pos));
    if (dot == std::string::npos) {
      return out;
    }
    pos = dot + 1;
  }
}

// Everything render and launch need to know about an elementwise key, validated.
struct ElementwiseSpec {
  size_t inputs = 0;
  std::string letters;
  int rank = 0;  // 0 none, 1-3, 4 = "n"
  bool idx64 = false;
  uint32_t vec = 0;  // 0: scalar path
  std::vector<std::string> in_dtypes;
  std::string out_dtype;
};

ElementwiseSpec parse_spec(const KernelKey& key, const std::string& where) {
  ElementwiseSpec s;
  s.inputs = input_count(key.family);
  for (const auto& [name, value] : key.params) {
    static const std::set<std::string> known{"op", "in", "out", "layout", "rank", "idx", "vec"};
    if (!known.count(name)) {
      throw std::invalid_argument("[render] " + where + ": unknown parameter '" + name + "'.");
    }
  }
  s.letters = key_param(key, "layout", where);
  if (s.letters.size() != s.inputs || s.letters.find_first_not_of("scg") != std::string::npos) {
    throw std::invalid_argument("[render] " + where + ": layout must be " +
                                std::to_string(s.inputs) + " letters of s, c, g.");
  }
  bool any_g = s.letters.find('g') != std::string::npos;
  auto rank = key.params.find("rank");
  if (any_g != (rank != key.params.end())) {
    throw std::invalid_argument("[render] " + where +
                                ": rank is required exactly when some input is strided (g).");
  }
  if (any_g) {
    const std::string& r = rank->second;
    if (r == "1" || r == "2" || r == "3") {
      s.rank = r[0] - '0';
    } else if (r == "n") {
      s.rank = 4;
    } else {
      throw std::invalid_argument("[render] " + where + ": rank must be 1, 2, 3 or n.");
    }
  }
  const std::string& idx = key_param(key, "idx", where);
  if (idx != "32" && idx != "64") {
    throw std::invalid_argument("[render] " + where + ": idx must be 32 or 64.");
  }
  s.idx64 = idx == "64";
  s.in_dtypes = split_dtypes(key_param(key, "in", where));
  s.out_dtype = key_param(key, "out", where);
  if (auto v = key.params.find("vec"); v != key.params.end()) {
    std::vector<std::string> all = s.in_dtypes;
    all.push_back(s.out_dtype);
    uint32_t width = vector_width(all);
    if (v->second != std::to_string(width) || width == 0) {
      throw std::invalid_argument("[render] " + where + ": vec must be " + std::to_string(width) +
                                  " for these dtypes.");
    }
    if (s.rank == 1) {
      throw std::invalid_argument("[render] " + where +
                                  ": a rank-1 strided input cannot be read as vectors.");
    }
    s.vec = width;
  }
  return s;
}

uint32_t push_constant_fields(const ElementwiseSpec& s) {
  uint32_t g = static_cast<uint32_t>(std::count(s.letters.begin(), s.letters.end(), 'g'));
  uint32_t fields = 2 + static_cast<uint32_t>(s.inputs);
  if (s.rank == 4) {
    fields += 1;
  } else if (s.rank >= 1) {
    fields += (s.rank - 1) + g * s.rank;
  }
  return fields;
}

// Elements per invocation: about 16 bytes per operand in flight per invocation. Measured
// on an H200 (docs/codegen.md): f32 add goes from 3.3 to 3.66 TB/s at 4, bf16 from 1.9 to
// 2.4 TB/s at 8, u8 from 1.0 to 1.5 TB/s at 16; 64-bit types gain little past 2.
uint32_t elements_per_invocation(const std::vector<const DtypeInfo*>& dts) {
  int narrowest = 64;
  for (const auto* d : dts) {
    narrowest = std::min(narrowest, d->bits);
  }
  return narrowest == 8 ? 16 : narrowest == 16 ? 8 : narrowest == 32 ? 4 : 2;
}

// Steps per invocation on the vector path: each step is one vector of up to 16 bytes per
// operand. 2 and 4 measured alike on an H200 and 1 was slower (docs/codegen.md); 2 keeps
// more workgroups for mid-sized arrays.
constexpr uint32_t kVectorSteps = 2;

// Elements (vector steps when vec > 0) per invocation; MLX_VK_ELEMENTWISE_EPT overrides it
// for tuning on a new device (it is part of the kernel hash through the spec constant).
uint32_t steps_per_invocation(const std::vector<const DtypeInfo*>& dts, uint32_t vec) {
  uint32_t max = vec ? 8 : 16;  // MLX_MAX_VEPT / MLX_MAX_EPT in elementwise_main.glsl
  return tuning_env("MLX_VK_ELEMENTWISE_EPT", 1, max,
                    vec ? kVectorSteps : elements_per_invocation(dts));
}

// The vector path's defines: VEC, and per operand its vector type plus how a lane becomes
// a compute value (inputs) or a compute value becomes a lane (output).
void add_vector_defines(uint32_t vec, const std::vector<const DtypeInfo*>& in, const DtypeInfo& out,
                        std::vector<std::string>& defines) {
  defines.push_back("VEC " + std::to_string(vec));
  for (size_t k = 0; k < in.size(); ++k) {
    add_vector_operand_defines("IN" + std::to_string(k) + "_", *in[k], vec, false, defines);
  }
  add_vector_operand_defines("OUT_", out, vec, true, defines);
}

}  // namespace

std::string vector_type(int bits, uint32_t vec) {
  uint32_t bytes = vec * static_cast<uint32_t>(bits) / 8;
  if (bits == 64) {
    return bytes == 16 ? "u64vec2" : "u64vec4";
  }
  return bytes == 4 ? "uint" : bytes == 8 ? "uvec2" : "uvec4";
}

void add_vector_operand_defines(const std::string& p, const DtypeInfo& dt, uint32_t vec,
                                bool output, std::vector<std::string>& defines) {
  defines.push_back(p + "VT " + vector_type(dt.bits, vec));
  std::string bits = std::to_string(dt.bits);
  if (output && dt.bits == 64) {
    defines.push_back(p + "VSET(w, j, v) w[j] = uint64_t(" + p + "STORE(v))");
  } else if (output) {
    // 16-bit lanes through the cheaper helpers of lanes.glsl.
    std::string set = dt.bits == 16 ? std::string("mlx_set_lane16(w, j, ")
                                    : std::string("mlx_set_lane(w, j, ").append(bits).append("u, ");
    defines.push_back(p + "TO_BITS(v) " + dt.to_bits);
    defines.push_back(p + "VSET(w, j, v) w = " + set + p + "TO_BITS(v))");
    // Pairs of 16-bit lanes as whole words (types.glsl), where the vector has words.
    if (dt.kind == Kind::Float && dt.bits == 16 && vec >= 4) {
      std::string pack = std::string(dt.name) == "bf16" ? "pack_bf16x2" : "pack_f16x2";
      defines.push_back(p + "PACK2(lo, hi) " + pack + "(lo, hi)");
    }
  } else if (dt.bits == 64) {
    defines.push_back(p + "VLANE(w, j) " + p + "LOAD(" + p + "ST(w[j]))");
  } else {
    defines.push_back(p + "FROM_BITS(b) " + dt.from_bits);
    if (std::string(dt.name) == "bf16") {
      defines.push_back(p + "VLANE(w, j) uintBitsToFloat(mlx_lane16_hi(w, j))");
    } else {
      defines.push_back(p + "VLANE(w, j) " + p + "FROM_BITS(mlx_lane(w, j, " + bits + "u))");
    }
  }
}

KernelKey elementwise_key(const std::string& family, const std::string& op,
                          const std::vector<std::string>& in_dtypes, const std::string& out_dtype,
                          const ElementwiseGeometry& geometry) {
  size_t inputs = input_count(family);
  if (in_dtypes.size() != inputs) {
    throw std::invalid_argument("[elementwise_key] family " + family + " takes " +
                                std::to_string(inputs) + " input dtypes, got " +
                                std::to_string(in_dtypes.size()) + ".");
  }
  Normalized n = normalize(geometry, inputs);
  std::vector<std::string> all_dtypes = in_dtypes;
  all_dtypes.push_back(out_dtype);
  Layout l = classify(n, vector_width(all_dtypes), geometry.binding_alignment);
  KernelKey key;
  key.family = family;
  key.params["op"] = op;
  key.params["in"] = join_dtypes(in_dtypes);
  key.params["out"] = out_dtype;
  key.params["layout"] = l.letters;
  if (!l.rank.empty()) {
    key.params["rank"] = l.rank;
  }
  key.params["idx"] = l.idx64 ? "64" : "32";
  if (l.vec) {
    key.params["vec"] = std::to_string(l.vec);
  }
  return key;
}

KernelKey plan_elementwise(const std::string& family, const std::string& op,
                           const std::vector<std::string>& in_dtypes, const std::string& out_dtype,
                           const ElementwiseGeometry& geometry) {
  if (family == "copy" && in_dtypes.size() == 1) {
    Normalized n = normalize(geometry, 1);
    if (is_transpose(n)) {
      return transpose_key(in_dtypes[0], out_dtype, n);
    }
  }
  return elementwise_key(family, op, in_dtypes, out_dtype, geometry);
}

KernelSource render_elementwise(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  ElementwiseSpec spec = parse_spec(key, where);
  auto in_names = split_dtypes(key_param(key, "in", where));
  if (in_names.size() != spec.inputs) {
    throw std::invalid_argument("[render] " + where + ": family " + key.family + " takes " +
                                std::to_string(spec.inputs) + " input dtypes.");
  }
  std::vector<const DtypeInfo*> in;
  for (const auto& name : in_names) {
    in.push_back(&dtype_info(name, where));
  }
  const DtypeInfo& out = dtype_info(key_param(key, "out", where), where);
  OpExpr op = elementwise_op(key.family, key_param(key, "op", where), in, where);
  if (key.family == "copy") {
    op.body = convert_expr(*in[0], out, "x");
    op.out = out.name;
  }
  if (op.out != out.name) {
    throw std::invalid_argument("[render] " + where + ": " + key_param(key, "op", where) + " on " +
                                in.back()->name + " produces " + op.out + ", not " + out.name +
                                ".");
  }

  std::vector<const DtypeInfo*> all = in;
  all.push_back(&out);
  std::vector<std::string> defines = storage_defines(all, spec.idx64, caps, where);
  defines.push_back("NUM_IN " + std::to_string(spec.inputs));
  defines.push_back("IDX64 " + std::string(spec.idx64 ? "1" : "0"));
  defines.push_back("RANK " + std::to_string(spec.rank));
  for (size_t k = 0; k < spec.inputs; ++k) {
    std::string p = "IN" + std::to_string(k) + "_";
    char c = spec.letters[k];
    defines.push_back(p + "LAYOUT " + (c == 's' ? "LAYOUT_S" : c == 'c' ? "LAYOUT_C" : "LAYOUT_G"));
    add_input_defines(p, *in[k], defines);
  }
  add_output_defines(out, defines);
  if (spec.vec) {
    add_vector_defines(spec.vec, in, out, defines);
  }
  if (key.family != "copy") {
    const DtypeInfo& operand = *in.back();  // select's condition is in[0]; x/y come last
    defines.push_back(std::string("OP_T ") + operand.compute);
    defines.push_back("OP_KIND " + std::to_string(static_cast<int>(operand.kind)));
    defines.push_back(std::string("OP_SIGNED ") + (operand.kind == Kind::Int ? "1" : "0"));
    defines.push_back("OP_BITS " + std::to_string(operand.bits));
    // Parse only the math the op uses (include/math.glsl).
    defines.push_back("MLX_MATH_SELECTIVE 1");
    if (!op.math.empty()) {
      defines.push_back("MLX_MATH_" + op.math + " 1");
    }
  }
  defines.push_back("OP(" + op.params + ") " + op.body);

  KernelSource source = render_template(key.family + ".glsl", defines);
  source.num_buffers = static_cast<uint32_t>(spec.inputs) + 1 + (spec.rank == 4 ? 1 : 0);
  source.push_constant_bytes = push_constant_fields(spec) * (spec.idx64 ? 8 : 4);
  uint32_t wg =
      std::max(1u, std::min(elementwise_workgroup_size(), caps.max_workgroup_invocations));
  source.workgroup_size = {wg, 1, 1};
  source.spec_constants = {{0, wg}, {1, steps_per_invocation(all, spec.vec)}};
  return source;
}

Launch elementwise_launch(const KernelKey& key, const KernelSource& source,
                          const ElementwiseGeometry& geometry) {
  if (key.family == "transpose") {
    return transpose_launch(key, source, normalize(geometry, 1));
  }
  const std::string where = "kernel " + key.canonical();
  ElementwiseSpec spec = parse_spec(key, where);
  Normalized n = normalize(geometry, spec.inputs);
  std::vector<std::string> all_dtypes = spec.in_dtypes;
  all_dtypes.push_back(spec.out_dtype);
  Layout l = classify(n, vector_width(all_dtypes), geometry.binding_alignment);
  std::string rank = spec.rank == 0 ? "" : spec.rank == 4 ? "n" : std::to_string(spec.rank);
  // A scalar kernel runs any geometry of its layout; a vector kernel only aligned ones.
  bool vec_ok = spec.vec == 0 || l.vec == spec.vec;
  if (l.letters != spec.letters || l.rank != rank || l.idx64 != spec.idx64 || !vec_ok) {
    throw std::invalid_argument("[elementwise_launch] " + where +
                                " does not match the geometry (which gives layout=" + l.letters +
                                (l.rank.empty() ? "" : ",rank=" + l.rank) +
                                ",idx=" + (l.idx64 ? "64" : "32") +
                                (l.vec ? ",vec=" + std::to_string(l.vec) : "") + ").");
  }

  check_binding_reach(n, where);

  Launch launch;
  bool w64 = spec.idx64;
  auto& pc = launch.push_constants;
  put(pc, static_cast<int64_t>(n.size), w64);
  put(pc, static_cast<int64_t>(n.out_offset), w64);
  for (auto off : n.offsets) {
    put(pc, static_cast<int64_t>(off), w64);
  }
  if (spec.rank == 4) {
    int64_t ndim = static_cast<int64_t>(n.shape.size());
    put(pc, ndim, w64);
    for (auto d : n.shape) {
      put(launch.meta, d, w64);
    }
    for (const auto& s : n.strides) {
      for (auto v : s) {
        put(launch.meta, v, w64);
      }
    }
  } else if (spec.rank >= 1) {
    if (spec.rank >= 2) {
      put(pc, n.shape[1], w64);
    }
    if (spec.rank == 3) {
      put(pc, n.shape[2], w64);
    }
    for (size_t k = 0; k < spec.inputs; ++k) {
      if (spec.letters[k] == 'g') {
        for (auto v : n.strides[k]) {
          put(pc, v, w64);
        }
      }
    }
  }
  if (pc.size() != source.push_constant_bytes) {
    throw std::invalid_argument(
        "[elementwise_launch] " + where + ": packed " + std::to_string(pc.size()) +
        " push-constant bytes but the "
        "kernel declares " +
        std::to_string(source.push_constant_bytes) + "; was the source rendered from another key?");
  }

  // Groups: ceil(steps / (WG * EPT)), split over y and z when x would pass 65535. A step
  // is one element, or one vector (the last one possibly partial) on the vector path.
  uint64_t wg = source.workgroup_size[0];
  auto ept_it = source.spec_constants.find(1);
  uint64_t ept = ept_it == source.spec_constants.end() ? 1 : ept_it->second;
  uint64_t steps = spec.vec ? (n.size + spec.vec - 1) / spec.vec : n.size;
  uint64_t groups = (steps + wg * ept - 1) / (wg * ept);
  if (groups == 0) {
    launch.groups = {0, 1, 1};
    return launch;
  }
  auto ceil_div = [](uint64_t a, uint64_t b) { return (a + b - 1) / b; };
  uint64_t z = ceil_div(groups, uint64_t(kMaxGroups) * kMaxGroups);
  uint64_t per_z = ceil_div(groups, z);
  uint64_t y = ceil_div(per_z, kMaxGroups);
  uint64_t x = ceil_div(per_z, y);
  if (z > kMaxGroups) {
    throw std::invalid_argument("[elementwise_launch] " + where + ": " + std::to_string(n.size) +
                                " elements exceed one dispatch.");
  }
  launch.groups = {static_cast<uint32_t>(x), static_cast<uint32_t>(y), static_cast<uint32_t>(z)};
  return launch;
}

std::vector<std::string> elementwise_ops(const std::string& family) {
  input_count(family);
  return elementwise_op_names(family);
}

}  // namespace mlx::core::vulkan::codegen
