// The "fused" family (codegen/fused.h): the key grammar of a fused group and its emitter.
// Each node becomes `<ct> v<k> = ROUND(OP<k>(args));` with OP<k> the elementwise family's
// own GLSL for that op (codegen/elementwise_ops.cpp), so the numerics match the unfused
// kernels; ROUND rounds to the node's dtype as a store and reload would (round_expr for
// floats, 0/1 for bool, wrapping for 8/16-bit integers). Integer ops call the helpers of
// include/int_ops.glsl, spliced in once per integer compute type the group uses.
#include "codegen/fused.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "codegen/dtypes.h"
#include "codegen/elementwise_ops.h"
#include "codegen/internal.h"

namespace mlx::core::vulkan::codegen {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::string join(const std::vector<std::string>& v, char sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    out += (i ? std::string(1, sep) : "") + v[i];
  }
  return out;
}

// The compute value of node or input `arg` ("i3", "n0") and its dtype; `inputs` names the
// inputs' values (x0 on the element path, x0[j] or s0 on the vector path).
struct Value {
  std::string expr;
  std::string dtype;
};

Value value_of(const std::string& arg, const FusedTape& t, const std::vector<std::string>& inputs,
               size_t node, const std::string& where) {
  if (arg.size() < 2 || (arg[0] != 'i' && arg[0] != 'n') ||
      arg.find_first_not_of("0123456789", 1) != std::string::npos) {
    throw std::invalid_argument("[render] " + where + ": bad argument '" + arg + "'.");
  }
  size_t k = std::stoul(arg.substr(1));
  if (arg[0] == 'i') {
    if (k >= t.inputs.size()) {
      throw std::invalid_argument("[render] " + where + ": no input " + arg + ".");
    }
    return {inputs[k], t.inputs[k]};
  }
  if (k >= node) {
    throw std::invalid_argument("[render] " + where + ": node " + std::to_string(node) +
                                " reads a later node.");
  }
  return {"v" + std::to_string(k), t.nodes[k].dtype};
}

// For a divisor c = 2^e (f32 bits in hex) whose reciprocal is a normal number, the f32
// bits of 1 / c and of the threshold 2^(max(e, 0) - 126) from which a / c = a * (1 / c) is
// a normal number (include/div.glsl, m_div_pow2); nullopt for any other divisor.
std::optional<std::pair<uint32_t, uint32_t>> pow2_divisor(const std::string& hex) {
  uint32_t bits = static_cast<uint32_t>(std::stoul(hex, nullptr, 16));
  uint32_t exponent = (bits >> 23) & 0xffu;
  if ((bits & 0x7fffffu) != 0 || exponent == 0 || exponent == 0xffu) {
    return std::nullopt;  // not a power of two, zero, subnormal, inf or NaN
  }
  int e = static_cast<int>(exponent) - 127;
  if (e < -126 || e > 126) {
    return std::nullopt;  // 1 / c would not be a normal number
  }
  uint32_t r = (bits & 0x80000000u) | (static_cast<uint32_t>(127 - e) << 23);
  uint32_t t = static_cast<uint32_t>(std::max(e, 0) - 126 + 127) << 23;
  return std::make_pair(r, t);
}

std::string f32_literal(uint32_t bits) {
  char out[32];
  std::snprintf(out, sizeof(out), "uintBitsToFloat(0x%08xu)", bits);
  return out;
}

// A constant input's value (hex, FusedTape::consts) as a literal of its compute type, the
// value a load would give.
std::string constant_literal(const DtypeInfo& dt, const std::string& hex) {
  uint64_t raw = std::stoull(hex, nullptr, 16);
  char out[64];
  if (dt.kind == Kind::Float) {
    return f32_literal(static_cast<uint32_t>(raw));
  }
  if (dt.kind == Kind::Bool) {
    return raw != 0 ? "1u" : "0u";
  }
  if (dt.bits == 64) {
    // From two 32-bit words: a 64-bit literal would not preprocess before the int64
    // extension is enabled (the defines come first).
    std::snprintf(out, sizeof(out), "%s(packUint2x32(uvec2(0x%08xu, 0x%08xu)))", dt.compute,
                  static_cast<uint32_t>(raw), static_cast<uint32_t>(raw >> 32));
    return out;
  }
  if (dt.kind == Kind::Int) {
    // Sign-extended to 32 bits, written as its bit pattern (no literal overflows).
    int shift = 64 - static_cast<int>(dt.bits);
    auto v = static_cast<int64_t>(raw << shift) >> shift;
    std::snprintf(out, sizeof(out), "int(0x%08xu)", static_cast<uint32_t>(v));
    return out;
  }
  std::snprintf(out, sizeof(out), "0x%08xu", static_cast<uint32_t>(raw));
  return out;
}

// Rounds compute value `v` to `dt` in registers as a store and reload would: round_expr for
// floats (f16 through f16_round, never the bit pair), any nonzero to 1 for bool, and the
// wrap of 8/16-bit integers (their compute type is 32 bits wide).
std::string node_round(const DtypeInfo& dt, const std::string& v) {
  if (dt.kind == Kind::Float) {
    return round_expr(dt, v);
  }
  if (dt.kind == Kind::Bool) {
    return "((" + v + ") != 0u ? 1u : 0u)";
  }
  if (dt.bits < 32) {
    std::string bits = replace_all(dt.to_bits, "(v)", "(" + v + ")");
    return replace_all(dt.from_bits, "(b)", "(" + bits + ")");
  }
  return v;
}

// convert_expr, except that a signed 32-bit value becomes int64 as two words: lavapipe
// (Mesa 22.3, LLVM 15) miscompiles a comparison with 0 of int64_t(int) within one kernel
// (abs, sign, floor division and shifts of the widened value came out wrong), while the
// unfused kernels only widen on the way to memory.
std::string cast_expr(const DtypeInfo& from, const DtypeInfo& to, const std::string& x) {
  if (from.kind == Kind::Int && from.bits <= 32 && to.kind == Kind::Int && to.bits == 64) {
    return "packInt2x32(ivec2(" + x + ", (" + x + ") >> 31))";
  }
  return convert_expr(from, to, x);
}

// Elements per vector step for these dtype widths (bits): 16 bytes of the widest, but at
// least 4 bytes of the narrowest, so every lane packs into whole 32-bit words (as the
// elementwise family's vector path).
uint32_t vector_width(const std::vector<const DtypeInfo*>& dts) {
  int widest = 8, narrowest = 64;
  for (const auto* d : dts) {
    widest = std::max(widest, d->bits);
    narrowest = std::min(narrowest, d->bits);
  }
  return static_cast<uint32_t>(std::max(128 / widest, 32 / narrowest));
}

constexpr uint32_t kVectorAlignment = 32;

// Vector steps per invocation (spec constant 1; templates/fused.glsl's FUSED_MAX_EPT at
// most): all their loads are issued before any step computes. The device's tuning
// (DeviceCaps::fused_vector_steps: 1, and 2 on an H200, measured with compile_bench,
// docs/compile.md); MLX_VK_FUSED_EPT overrides it for tuning a new device (the spec
// constant is part of the kernel's hash).
uint32_t vector_steps(const DeviceCaps& caps) {
  return tuning_env("MLX_VK_FUSED_EPT", 1, 8, std::clamp<uint32_t>(caps.fused_vector_steps, 1, 8));
}

// What render needs of a parsed, checked tape.
struct Parsed {
  FusedTape t;
  std::vector<const DtypeInfo*> in, node, out;  // dtypes of inputs, nodes, outputs
};

Parsed check(const KernelKey& key, const std::string& where) {
  Parsed p;
  p.t = parse_fused(key);
  const FusedTape& t = p.t;
  if (t.inputs.empty() || t.inputs.size() > kFusedMaxInputs || t.outputs.empty() ||
      t.outputs.size() > kFusedMaxOutputs) {
    throw std::invalid_argument("[render] " + where + ": a fused group takes 1 to " +
                                std::to_string(kFusedMaxInputs) + " inputs and 1 to " +
                                std::to_string(kFusedMaxOutputs) + " outputs.");
  }
  for (const auto& d : t.inputs) {
    p.in.push_back(&dtype_info(d, where));
  }
  for (size_t k = 0; k < t.consts.size(); ++k) {
    size_t digits = p.in[k]->kind == Kind::Float ? 8 : p.in[k]->bits / 4;
    if (!t.consts[k].empty() && t.consts[k].size() != digits) {
      // (Appended: GCC 12 reports a false -Wrestrict for "literal" + string.)
      std::string msg("[render] ");
      msg.append(where).append(": constant input ").append(std::to_string(k));
      msg.append(" takes ").append(std::to_string(digits)).append(" hex digits.");
      throw std::invalid_argument(msg);
    }
  }
  for (const auto& n : t.nodes) {
    p.node.push_back(&dtype_info(n.dtype, where));
  }
  for (int o : t.outputs) {
    if (o < 0 || o >= static_cast<int>(t.nodes.size())) {
      throw std::invalid_argument("[render] " + where + ": output of no node.");
    }
    p.out.push_back(p.node[static_cast<size_t>(o)]);
  }
  if (!t.layout.empty() && (t.layout.size() != t.inputs.size() ||
                            t.layout.find_first_not_of("csr") != std::string::npos)) {
    throw std::invalid_argument("[render] " + where + ": layout must be " +
                                std::to_string(t.inputs.size()) + " letters of c, s, r.");
  }
  if (t.vec) {
    std::vector<const DtypeInfo*> all = p.in;
    all.insert(all.end(), p.out.begin(), p.out.end());
    if (t.layout.empty() || t.vec != vector_width(all)) {
      throw std::invalid_argument("[render] " + where + ": vec must be " +
                                  std::to_string(vector_width(all)) +
                                  " for these dtypes, and comes with a layout.");
    }
  }
  return p;
}

// The lines of include/int_ops.glsl for compute type `ct`, ready to splice: the helpers are
// overloaded on their argument type, so one copy per type coexists. OP_BITS is the compute
// width: an 8/16-bit value shifted by its width or more (up to 31) gives the same bits once
// the node wraps to its dtype as the elementwise family's OP_BITS of the dtype gives.
std::string int_ops_copy(const std::string& ct) {
  bool is64 = ct == "int64_t" || ct == "uint64_t";
  bool is_signed = ct == "int" || ct == "int64_t";
  std::string s = "#undef MLX_INT_OPS_GLSL\n#undef OP_T\n#undef OP_SIGNED\n#undef OP_BITS\n";
  s += "#define OP_T " + ct + "\n#define OP_SIGNED " + (is_signed ? "1" : "0") +
       "\n#define OP_BITS " + (is64 ? "64" : "32") + "\n#line 1 \"include/int_ops.glsl\"\n";
  s += template_text("include/int_ops.glsl");
  if (!s.ends_with("\n")) {
    s += "\n";
  }
  return s;
}

// `glsl` with the line holding `marker` replaced by `text`, then a #line back to the
// template's numbering.
std::string splice(const std::string& glsl, const std::string& marker, const std::string& text) {
  size_t at = glsl.find(marker);
  if (at == std::string::npos) {
    throw std::logic_error("[render] fused.glsl has no " + marker + " line.");
  }
  size_t begin = glsl.rfind('\n', at);
  begin = begin == std::string::npos ? 0 : begin + 1;
  size_t end = glsl.find('\n', at);
  end = end == std::string::npos ? glsl.size() : end + 1;
  std::string tmpl = template_text("fused.glsl");
  size_t in_tmpl = tmpl.find(marker);
  int line = 1 + static_cast<int>(std::count(tmpl.begin(), tmpl.begin() + in_tmpl, '\n'));
  return glsl.substr(0, begin) + text + "#line " + std::to_string(line + 1) + " \"fused.glsl\"\n" +
         glsl.substr(end);
}

}  // namespace

KernelKey fused_key(const FusedTape& t) {
  std::vector<std::string> nodes, outs;
  for (const auto& n : t.nodes) {
    std::vector<std::string> parts{n.family, n.op, n.dtype};
    parts.insert(parts.end(), n.args.begin(), n.args.end());
    nodes.push_back(join(parts, '/'));
  }
  for (int o : t.outputs) {
    outs.push_back(std::to_string(o));
  }
  KernelKey key{
      "fused", {{"in", join(t.inputs, '.')}, {"out", join(outs, '.')}, {"tape", join(nodes, ';')}}};
  if (!t.layout.empty()) {
    key.params["layout"] = t.layout;
  }
  if (t.vec) {
    key.params["vec"] = std::to_string(t.vec);
  }
  for (size_t k = 0; k < t.consts.size(); ++k) {
    if (!t.consts[k].empty()) {
      key.params["c" + std::to_string(k)] = t.consts[k];
    }
  }
  return key;
}

FusedTape parse_fused(const KernelKey& key) {
  const std::string where = "kernel " + key.canonical();
  std::set<std::string> known{"in", "out", "tape", "layout", "vec"};
  for (int k = 0; k < kFusedMaxInputs; ++k) {
    known.insert("c" + std::to_string(k));
  }
  check_params(key, known, where);
  FusedTape t;
  t.inputs = split(key_param(key, "in", where), '.');
  for (size_t k = 0; k < t.inputs.size(); ++k) {
    auto c = key.params.find("c" + std::to_string(k));
    if (c == key.params.end()) {
      continue;
    }
    if (c->second.empty() || c->second.size() > 16 ||
        c->second.find_first_not_of("0123456789abcdef") != std::string::npos) {
      throw std::invalid_argument("[render] " + where + ": c" + std::to_string(k) +
                                  " must be lowercase hex digits.");
    }
    t.consts.resize(t.inputs.size());
    t.consts[k] = c->second;
  }
  for (const auto& [name, value] : key.params) {
    if (name[0] == 'c' && name.size() > 1 &&
        static_cast<size_t>(std::stoi(name.substr(1))) >= t.inputs.size()) {
      throw std::invalid_argument("[render] " + where + ": " + name + " names no input.");
    }
  }
  for (const auto& text : split(key_param(key, "tape", where), ';')) {
    auto parts = split(text, '/');
    if (parts.size() < 4) {
      throw std::invalid_argument("[render] " + where + ": bad node '" + text + "'.");
    }
    t.nodes.push_back({parts[0], parts[1], parts[2], {parts.begin() + 3, parts.end()}});
  }
  for (const auto& o : split(key_param(key, "out", where), '.')) {
    if (o.empty() || o.find_first_not_of("0123456789") != std::string::npos) {
      throw std::invalid_argument("[render] " + where + ": bad output '" + o + "'.");
    }
    t.outputs.push_back(std::stoi(o));
  }
  if (auto l = key.params.find("layout"); l != key.params.end()) {
    t.layout = l->second;
  }
  if (auto v = key.params.find("vec"); v != key.params.end()) {
    const std::string& s = v->second;
    if (s.empty() || s.size() > 2 || s.find_first_not_of("0123456789") != std::string::npos) {
      throw std::invalid_argument("[render] " + where + ": bad vec '" + s + "'.");
    }
    t.vec = static_cast<uint32_t>(std::stoul(s));
  }
  return t;
}

void classify_fused(FusedTape& t, const FusedGeometry& g) {
  t.layout.clear();
  t.vec = 0;
  std::string letters;
  for (size_t k = 0; k < g.in_strides.size(); ++k) {
    const auto& st = g.in_strides[k];
    bool scalar = true, contiguous = true;
    int64_t expected = 1;
    for (size_t d = g.shape.size(); d-- > 0;) {
      if (g.shape[d] != 1) {
        scalar = scalar && st[d] == 0;
        contiguous = contiguous && st[d] == expected;
      }
      expected *= g.shape[d];
    }
    if (scalar || contiguous) {
      letters += scalar ? 's' : 'c';
    } else if (fused_row_stride(g.shape, st)) {
      letters += 'r';
    } else {
      return;
    }
  }
  t.layout = letters;
  std::vector<const DtypeInfo*> dts;
  for (const auto& d : t.inputs) {
    dts.push_back(find_dtype(d));
  }
  for (int o : t.outputs) {
    if (o < 0 || o >= static_cast<int>(t.nodes.size())) {
      return;
    }
    dts.push_back(find_dtype(t.nodes[static_cast<size_t>(o)].dtype));
  }
  if (std::find(dts.begin(), dts.end(), nullptr) != dts.end() ||
      g.binding_alignment % kVectorAlignment != 0) {
    return;
  }
  int64_t vec = vector_width(dts);
  for (size_t k = 0; k < letters.size(); ++k) {
    if (letters[k] != 's' && g.in_offsets[k] % vec != 0) {
      return;
    }
    // A row-strided input's vectors must not cross its rows.
    if (letters[k] == 'r' &&
        (g.shape.back() % vec != 0 || *fused_row_stride(g.shape, g.in_strides[k]) % vec != 0)) {
      return;
    }
  }
  for (auto off : g.out_offsets) {
    if (off % vec != 0) {
      return;
    }
  }
  t.vec = static_cast<uint32_t>(vec);
}

std::optional<int64_t> fused_row_stride(const std::vector<int64_t>& shape,
                                        const std::vector<int64_t>& strides) {
  size_t n = shape.size();
  if (n < 2 || (shape[n - 1] != 1 && strides[n - 1] != 1)) {
    return std::nullopt;
  }
  // Row r is the row-major index over dims 0 .. n-2; dim d must step rows * row_stride.
  std::optional<int64_t> rs;
  int64_t rows = 1;
  for (size_t d = n - 1; d-- > 0;) {
    if (shape[d] != 1) {
      if (!rs) {
        rs = strides[d];
      } else if (strides[d] != *rs * rows) {
        return std::nullopt;
      }
    }
    rows *= shape[d];
  }
  return rs.value_or(0);
}

std::string fused_comment(const FusedTape& t) {
  auto name = [](const std::string& arg) {
    if (arg.empty() || arg[0] != 'n') {
      return arg;
    }
    std::string v(1, 'v');
    return v.append(arg.substr(1));
  };
  std::ostringstream s;
  s << "// The fused group (compile(); docs/compile.md):\n";
  for (size_t k = 0; k < t.inputs.size(); ++k) {
    std::string how;
    if (!t.layout.empty() && k < t.layout.size()) {
      const char* kind = t.layout[k] == 'c' ? "contiguous" : "row-strided";
      how = t.layout[k] == 's' ? std::string(" (scalar)")
                               : std::string(" (").append(kind).append(t.vec ? ", vectors)" : ")");
    }
    s << "//   i" << k << " : " << t.inputs[k] << how << "\n";
  }
  for (size_t k = 0; k < t.nodes.size(); ++k) {
    const FusedNode& n = t.nodes[k];
    std::vector<std::string> args;
    for (const auto& a : n.args) {
      args.push_back(name(a));
    }
    s << "//   v" << k << " = " << n.op << "(";
    for (size_t a = 0; a < args.size(); ++a) {
      s << (a ? ", " : "") << args[a];
    }
    s << ") : " << n.dtype;
    for (size_t j = 0; j < t.outputs.size(); ++j) {
      if (t.outputs[j] == static_cast<int>(k)) {
        s << " -> out" << j;
      }
    }
    s << "\n";
  }
  if (t.layout.empty()) {
    s << "//   layout: any strides (shape and strides in the meta buffer)\n";
  } else if (t.vec) {
    s << "//   layout: contiguous, row-strided or scalar inputs, steps of " << t.vec
      << " elements\n";
  } else {
    s << "//   layout: contiguous, row-strided or scalar inputs\n";
  }
  return s.str();
}

KernelSource render_fused(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  Parsed p = check(key, where);
  const FusedTape& t = p.t;
  const uint32_t vec = t.vec;
  std::vector<std::string> defines;
  std::ostringstream buffers, body, vsetup, vload, vbody;
  // The inputs' values on the element path (x<k>) and in lane j of a vector step.
  std::vector<std::string> elem_in, lane_in;
  auto is_const = [&](size_t k) { return k < t.consts.size() && !t.consts[k].empty(); };
  for (size_t k = 0; k < t.inputs.size(); ++k) {
    std::string ks = std::to_string(k);
    std::string pre = "IN" + ks + "_";
    add_input_defines(pre, *p.in[k], defines);
    buffers << "layout(std430, set = 0, binding = " << k << ") readonly buffer I" << k << " { "
            << pre << "ST in" << k << "[]; }; ";
    if (is_const(k)) {
      // Written into the kernel: the binding stays (the launch binds every input) unread.
      std::string name = "FUSED_CONST" + ks;
      defines.push_back(name + " " + constant_literal(*p.in[k], t.consts[k]));
      elem_in.push_back(name);
      lane_in.push_back(name);
      continue;
    }
    body << pre << "CT x" << k << " = " << pre << "LOAD(in" << k << "[loc[" << k << "]]); ";
    elem_in.push_back("x" + ks);
    if (!vec) {
      continue;
    }
    if (t.layout[k] == 's') {
      vsetup << pre << "CT s" << k << " = " << pre << "LOAD(in" << k << "[voff[" << k << "]]); ";
      lane_in.push_back("s" + ks);
      continue;
    }
    add_vector_operand_defines(pre, *p.in[k], vec, false, defines);
    buffers << "layout(std430, set = 0, binding = " << k << ") readonly buffer I" << k << "V { "
            << pre << "VT in" << k << "v[]; }; ";
    // Step e's vector of input k is loaded into r<k>[e] before any step computes. A
    // row-strided input's vector u is in row u / cv (cv vectors a row) at column u % cv.
    vsetup << "uint vb" << k << " = voff[" << k << "] / " << vec << "u; " << pre << "VT r" << k
           << "[FUSED_MAX_EPT]; ";
    if (t.layout[k] == 'r') {
      vsetup << "int rsv" << k << " = fused_row_stride(" << k << ") / " << vec << "; ";
      vload << "r" << k << "[e] = in" << k << "v[uint(int(vb" << k << ") + (u / cv) * rsv" << k
            << " + u % cv)]; ";
    } else {
      vload << "r" << k << "[e] = in" << k << "v[vb" << k << " + uint(u)]; ";
    }
    vbody << pre << "CT x" << k << "[VEC]; for (uint j = 0u; j < VEC; ++j) { x" << k
          << "[j] = " << pre << "VLANE(r" << k << "[e], j); } ";
    lane_in.push_back("x" + ks + "[j]");
  }

  // The ops: one OP<k> macro per node, and the statements computing every node from the
  // inputs' values (the same macros on both paths).
  std::vector<std::string> math_groups;
  std::set<std::string> int_types;
  std::vector<std::string> exprs;  // node k's expression with inputs as "@<k>@"
  // Outputs of a 16-bit float dtype are stored from the value before its rounding in
  // registers (v<k>_s): the store rounds the same way, and the group's other nodes still
  // read the rounded v<k> (the compiler drops it where none does).
  std::set<int> stored_unrounded;
  for (size_t j = 0; j < t.outputs.size(); ++j) {
    if (p.out[j]->kind == Kind::Float && p.out[j]->bits == 16) {
      stored_unrounded.insert(t.outputs[j]);
    }
  }
  auto stored = [&](int node) {
    return "v" + std::to_string(node) + (stored_unrounded.count(node) ? "_s" : "");
  };
  for (size_t k = 0; k < t.nodes.size(); ++k) {
    const FusedNode& n = t.nodes[k];
    std::vector<std::string> marks;
    for (size_t i = 0; i < t.inputs.size(); ++i) {
      std::string mark(1, '@');
      marks.push_back(mark.append(std::to_string(i)).append("@"));
    }
    std::vector<Value> args;
    std::vector<const DtypeInfo*> arg_dts;
    for (const auto& a : n.args) {
      args.push_back(value_of(a, t, marks, k, where));
      arg_dts.push_back(&dtype_info(args.back().dtype, where));
    }
    std::string expr;
    std::optional<std::pair<uint32_t, uint32_t>> pow2;  // a power-of-two constant divisor
    if (n.family == "binary" && n.op == "Divide" && n.args.size() == 2 && n.args[1][0] == 'i' &&
        p.node[k]->kind == Kind::Float) {
      size_t c = std::stoul(n.args[1].substr(1));
      if (c < t.inputs.size() && is_const(c) && p.in[c]->kind == Kind::Float) {
        pow2 = pow2_divisor(t.consts[c]);
      }
    }
    if (pow2) {
      // x / 2^e is x * 2^-e wherever that is a normal number (m_div_pow2, include/div.glsl).
      OpExpr op = elementwise_op(n.family, n.op, arg_dts, where);
      if (!op.math.empty()) {
        math_groups.push_back(op.math);
      }
      expr = "m_div_pow2(" + args[0].expr + ", " + args[1].expr + ", " + f32_literal(pow2->first) +
             ", " + f32_literal(pow2->second) + ")";
    } else if (n.family == "astype") {
      if (args.size() != 1 || n.op != "AsType") {
        throw std::invalid_argument("[render] " + where + ": astype is AsType of one argument.");
      }
      expr = cast_expr(*arg_dts[0], *p.node[k], args[0].expr);
    } else {
      OpExpr op = elementwise_op(n.family, n.op, arg_dts, where);
      if (op.out != n.dtype) {
        throw std::invalid_argument("[render] " + where + ": " + n.op + " produces " + op.out +
                                    ", not " + n.dtype + ".");
      }
      const DtypeInfo& operand = *arg_dts.back();  // select's condition comes first
      // The integer bodies name OP_T, the operands' compute type (one per kernel in the
      // elementwise family, one per node here).
      std::string op_body = replace_all(op.body, "OP_T", operand.compute);
      if (operand.kind != Kind::Float && op_body.find("op_") != std::string::npos) {
        int_types.insert(operand.compute);
      }
      if (!op.math.empty()) {
        math_groups.push_back(op.math);
      }
      std::string name = "OP" + std::to_string(k);
      defines.push_back(name + "(" + op.params + ") " + op_body);
      std::vector<std::string> texts;
      for (auto& a : args) {
        texts.push_back(a.expr);
      }
      expr = name + "(" + join(texts, ',') + ")";
    }
    // f32 nodes are `precise`: no multiply-add contracts across nodes (the unfused kernels
    // store every node), so fused results equal theirs on drivers that contract.
    bool f32 = p.node[k]->kind == Kind::Float && p.node[k]->bits == 32;
    std::string v = "v" + std::to_string(k);
    if (stored_unrounded.count(static_cast<int>(k))) {
      exprs.push_back("float " + v + "_s = " + expr + "; float " + v + " = " +
                      node_round(*p.node[k], v + "_s") + "; ");
    } else {
      exprs.push_back(std::string(f32 ? "precise " : "") + p.node[k]->compute + " " + v + " = " +
                      node_round(*p.node[k], expr) + "; ");
    }
  }
  auto nodes_with = [&](const std::vector<std::string>& in) {
    std::string s;
    for (auto e : exprs) {
      for (size_t i = 0; i < in.size(); ++i) {
        // (Appended: GCC 12 reports a false -Wrestrict for "literal" + string.)
        std::string mark(1, '@');
        mark.append(std::to_string(i)).append("@");
        e = replace_all(e, mark, in[i]);
      }
      s += e;
    }
    return s;
  };
  body << nodes_with(elem_in);

  // Outputs: stored per element, and on the vector path gathered lane by lane into one
  // vector per output (declared before the lane loop, stored after it).
  std::ostringstream vdecl, vset, vpack, vstore;
  for (size_t j = 0; j < t.outputs.size(); ++j) {
    int node = t.outputs[j];
    const DtypeInfo& od = *p.out[j];
    std::string pre = "OUT" + std::to_string(j) + "_";
    defines.push_back(pre + "ST " + od.storage);
    defines.push_back(pre + "STORE(v) " + od.store);
    buffers << "layout(std430, set = 0, binding = " << t.inputs.size() + j << ") writeonly buffer O"
            << j << " { " << pre << "ST out" << j << "[]; }; ";
    body << "out" << j << "[pc.out_offset" << j << " + i] = " << pre << "STORE(" << stored(node)
         << "); ";
    if (vec) {
      add_vector_operand_defines(pre, od, vec, true, defines);
      buffers << "layout(std430, set = 0, binding = " << t.inputs.size() + j
              << ") writeonly buffer O" << j << "V { " << pre << "VT out" << j << "v[]; }; ";
      vsetup << "uint ob" << j << " = uint(pc.out_offset" << j << ") / " << vec << "u; ";
      vdecl << pre << "VT o" << j << " = " << pre << "VT(0); ";
      if (od.kind == Kind::Float && od.bits == 16 && vec >= 4) {
        // Pairs of 16-bit lanes packed as whole words (OUT<j>_PACK2), as the elementwise
        // family stores them, instead of one masked insert per lane.
        vdecl << "float y" << j << "[VEC]; ";
        vset << "y" << j << "[j] = " << stored(node) << "; ";
        vpack << "for (uint j = 0u; j < VEC; j += 2u) { o" << j << "[j / 2u] = " << pre << "PACK2(y"
              << j << "[j], y" << j << "[j + 1u]); } ";
      } else {
        vset << pre << "VSET(o" << j << ", j, " << stored(node) << "); ";
      }
      vstore << "out" << j << "v[ob" << j << " + uint(u)] = o" << j << "; ";
    }
  }
  if (vec) {
    vbody << vdecl.str() << "for (uint j = 0u; j < VEC; ++j) { " << nodes_with(lane_in)
          << vset.str() << "} " << vpack.str() << vstore.str();
  }

  // Storage for the inputs and outputs; 64-bit intermediates need shaderInt64 too.
  std::vector<const DtypeInfo*> all = p.in;
  all.insert(all.end(), p.out.begin(), p.out.end());
  for (const auto* d : p.node) {
    if (d->bits == 64) {
      all.push_back(d);
    }
  }
  std::vector<std::string> head = storage_defines(all, false, caps, where);
  head.push_back("IDX64 0");
  head.push_back("NUM_IN " + std::to_string(t.inputs.size()));
  head.push_back("NUM_OUT " + std::to_string(t.outputs.size()));
  head.push_back("RANK_MAX " + std::to_string(kFusedMaxRank));
  head.push_back("MLX_MATH_SELECTIVE 1");
  std::sort(math_groups.begin(), math_groups.end());
  math_groups.erase(std::unique(math_groups.begin(), math_groups.end()), math_groups.end());
  for (const auto& m : math_groups) {
    head.push_back("MLX_MATH_" + m + " 1");
  }
  if (!t.layout.empty()) {
    std::vector<std::string> kinds;
    for (char c : t.layout) {
      kinds.push_back(c == 's' ? "0" : c == 'c' ? "1" : "2");
    }
    head.push_back("FUSED_LAYOUT 1");
    head.push_back("FUSED_KINDS " + join(kinds, ','));
    head.push_back(std::string("FUSED_ROWS ") +
                   (t.layout.find('r') != std::string::npos ? "1" : "0"));
  }
  if (vec) {
    head.push_back("VEC " + std::to_string(vec));
  }
  head.insert(head.end(), defines.begin(), defines.end());
  // The group itself, so `spvdump show` / `glsl` print the subgraph next to its GLSL.
  head.push_back("FUSED_TAPE " + key_param(key, "tape", where));
  head.push_back("FUSED_BUFFERS " + buffers.str());
  head.push_back("FUSED_BODY " + body.str());
  if (vec) {
    head.push_back("FUSED_VSETUP " + vsetup.str());
    head.push_back("FUSED_VLOAD " + vload.str());
    head.push_back("FUSED_VBODY " + vbody.str());
  }
  KernelSource source = render_template("fused.glsl", head);
  std::string int_ops;
  for (const auto& ct : int_types) {
    int_ops += int_ops_copy(ct);
  }
  source.glsl = splice(source.glsl, "// @FUSED_INT_OPS@", int_ops);
  // The readable subgraph right after the injected defines.
  size_t after = source.glsl.find("#line ", source.glsl.find("#define FUSED_BODY"));
  source.glsl.insert(after, fused_comment(t));
  source.num_buffers = static_cast<uint32_t>(t.inputs.size() + t.outputs.size() + 1);
  source.push_constant_bytes = 5 * 4;
  uint32_t wg =
      std::max(1u, std::min(elementwise_workgroup_size(), caps.max_workgroup_invocations));
  source.workgroup_size = {wg, 1, 1};
  source.spec_constants = {{0, wg}, {1, vec ? vector_steps(caps) : 1}};
  return source;
}

Launch fused_launch(const KernelKey& key, const KernelSource& source, const FusedGeometry& g) {
  const std::string where = "kernel " + key.canonical();
  FusedTape t = parse_fused(key);
  int64_t size = 1;
  for (auto d : g.shape) {
    size *= d;
  }
  if (g.shape.size() > static_cast<size_t>(kFusedMaxRank) ||
      g.in_offsets.size() != t.inputs.size() || g.in_strides.size() != t.inputs.size() ||
      g.out_offsets.size() != t.outputs.size() || size > (int64_t{1} << 30)) {
    throw std::invalid_argument("[launch] " + where + " does not match the geometry.");
  }
  // A layout variant runs only the geometries it was classified for.
  if (!t.layout.empty()) {
    FusedTape c = t;
    classify_fused(c, g);
    if (c.layout != t.layout || (t.vec && c.vec != t.vec)) {
      throw std::invalid_argument("[launch] " + where +
                                  " does not match the geometry (which gives layout=" +
                                  (c.layout.empty() ? "none" : c.layout) +
                                  (c.vec ? ",vec=" + std::to_string(c.vec) : "") + ").");
    }
  }
  Launch launch;
  std::vector<int32_t> meta{static_cast<int32_t>(g.shape.size())};
  for (auto d : g.shape) {
    meta.push_back(static_cast<int32_t>(d));
  }
  for (size_t k = 0; k < t.inputs.size(); ++k) {
    meta.push_back(static_cast<int32_t>(g.in_offsets[k]));
    for (auto s : g.in_strides[k]) {
      meta.push_back(static_cast<int32_t>(s));
    }
  }
  // Row-strided inputs ('r'): the row length, then each input's row stride (0 for others).
  if (t.layout.find('r') != std::string::npos) {
    meta.push_back(static_cast<int32_t>(g.shape.back()));
    for (size_t k = 0; k < t.inputs.size(); ++k) {
      meta.push_back(t.layout[k] == 'r'
                         ? static_cast<int32_t>(*fused_row_stride(g.shape, g.in_strides[k]))
                         : 0);
    }
  }
  launch.meta.resize(meta.size() * 4);
  std::memcpy(launch.meta.data(), meta.data(), launch.meta.size());
  int32_t pcs[5] = {static_cast<int32_t>(size), 0, 0, 0, 0};
  for (size_t j = 0; j < g.out_offsets.size(); ++j) {
    pcs[1 + j] = static_cast<int32_t>(g.out_offsets[j]);
  }
  launch.push_constants.resize(sizeof(pcs));
  std::memcpy(launch.push_constants.data(), pcs, sizeof(pcs));
  // One invocation per element, or per EPT vector steps (spec constant 1); the kernel loops
  // over the grid when the groups are capped.
  uint64_t wg = source.workgroup_size[0];
  auto ept_it = source.spec_constants.find(1);
  uint64_t ept = t.vec && ept_it != source.spec_constants.end() ? ept_it->second : 1;
  uint64_t steps =
      t.vec ? (static_cast<uint64_t>(size) + t.vec - 1) / t.vec : static_cast<uint64_t>(size);
  uint64_t per_group = wg * ept;
  launch.groups = row_groups(
      std::min<uint64_t>((steps + per_group - 1) / per_group, uint64_t{65535} * 64), where);
  return launch;
}

}  // namespace mlx::core::vulkan::codegen
