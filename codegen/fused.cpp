// The "fused" family (codegen/fused.h): the key grammar of a fused group and its emitter.
// Each node becomes `<ct> v<k> = ROUND(OP<k>(args));` with OP<k> the elementwise family's
// own GLSL for that op (codegen/elementwise_ops.cpp), so the numerics match the unfused
// kernels; ROUND stores and reloads the node's dtype (f16/bf16 rounding, bool 0/1).
#include "codegen/fused.h"

#include <algorithm>
#include <cstring>
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

bool emittable_dtype(const std::string& name) {
  return name == "f32" || name == "f16" || name == "bf16" || name == "b";
}

// The compute value of node or input `arg` ("i3", "n0") and its dtype.
struct Value {
  std::string expr;
  std::string dtype;
};

Value value_of(const std::string& arg, const FusedTape& t, const std::string& where) {
  if (arg.size() < 2 || (arg[0] != 'i' && arg[0] != 'n')) {
    throw std::invalid_argument("[render] " + where + ": bad argument '" + arg + "'.");
  }
  size_t k = std::stoul(arg.substr(1));
  if (arg[0] == 'i') {
    if (k >= t.inputs.size()) {
      throw std::invalid_argument("[render] " + where + ": no input " + arg + ".");
    }
    return {"x" + std::to_string(k), t.inputs[k]};
  }
  return {"v" + std::to_string(k), t.nodes.at(k).dtype};
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
  return KernelKey{
      "fused", {{"in", join(t.inputs, '.')}, {"out", join(outs, '.')}, {"tape", join(nodes, ';')}}};
}

FusedTape parse_fused(const KernelKey& key) {
  const std::string where = "kernel " + key.canonical();
  check_params(key, {"in", "out", "tape"}, where);
  FusedTape t;
  t.inputs = split(key_param(key, "in", where), '.');
  for (const auto& text : split(key_param(key, "tape", where), ';')) {
    auto parts = split(text, '/');
    if (parts.size() < 4) {
      throw std::invalid_argument("[render] " + where + ": bad node '" + text + "'.");
    }
    t.nodes.push_back({parts[0], parts[1], parts[2], {parts.begin() + 3, parts.end()}});
  }
  for (const auto& o : split(key_param(key, "out", where), '.')) {
    t.outputs.push_back(std::stoi(o));
  }
  return t;
}

KernelSource render_fused(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  FusedTape t = parse_fused(key);
  if (t.inputs.empty() || t.inputs.size() > kFusedMaxInputs || t.outputs.empty() ||
      t.outputs.size() > kFusedMaxOutputs) {
    throw std::invalid_argument("[render] " + where + ": a fused group takes 1 to " +
                                std::to_string(kFusedMaxInputs) + " inputs and 1 to " +
                                std::to_string(kFusedMaxOutputs) + " outputs.");
  }
  std::vector<const DtypeInfo*> dts;
  for (const auto& d : t.inputs) {
    if (!emittable_dtype(d)) {
      throw std::invalid_argument("[render] " + where + ": input dtype " + d +
                                  " is not one the emitter takes.");
    }
    dts.push_back(&dtype_info(d, where));
  }
  std::vector<std::string> defines;
  std::ostringstream buffers, body;
  for (size_t k = 0; k < t.inputs.size(); ++k) {
    std::string p = "IN" + std::to_string(k) + "_";
    add_input_defines(p, *dts[k], defines);
    buffers << "layout(std430, set = 0, binding = " << k << ") readonly buffer I" << k << " { " << p
            << "ST in" << k << "[]; }; ";
    body << p << "CT x" << k << " = " << p << "LOAD(in" << k << "[loc[" << k << "]]); ";
  }
  std::vector<std::string> math_groups;
  for (size_t k = 0; k < t.nodes.size(); ++k) {
    const FusedNode& n = t.nodes[k];
    if (!emittable_dtype(n.dtype)) {
      throw std::invalid_argument("[render] " + where + ": node dtype " + n.dtype +
                                  " is not one the emitter takes.");
    }
    const DtypeInfo& out = dtype_info(n.dtype, where);
    dts.push_back(&out);
    std::vector<Value> args;
    std::vector<const DtypeInfo*> arg_dts;
    for (const auto& a : n.args) {
      args.push_back(value_of(a, t, where));
      if (a[0] == 'n' && std::stoul(a.substr(1)) >= k) {
        throw std::invalid_argument("[render] " + where + ": node " + std::to_string(k) +
                                    " reads a later node.");
      }
      arg_dts.push_back(&dtype_info(args.back().dtype, where));
    }
    std::string expr;
    if (n.family == "astype") {
      if (args.size() != 1) {
        throw std::invalid_argument("[render] " + where + ": astype takes one argument.");
      }
      expr = convert_expr(*arg_dts[0], out, args[0].expr);
    } else {
      OpExpr op = elementwise_op(n.family, n.op, arg_dts, where);
      if (op.out != n.dtype) {
        throw std::invalid_argument("[render] " + where + ": " + n.op + " produces " + op.out +
                                    ", not " + n.dtype + ".");
      }
      // Float math only: the integer helpers are not in a fused kernel.
      for (const auto* a : arg_dts) {
        if (a->kind != Kind::Float && !(n.family == "select" && a == arg_dts[0])) {
          throw std::invalid_argument("[render] " + where + ": " + n.op +
                                      " on non-float operands is not emitted.");
        }
      }
      if (!op.math.empty()) {
        math_groups.push_back(op.math);
      }
      std::string name = "OP" + std::to_string(k);
      defines.push_back(name + "(" + op.params + ") " + op.body);
      std::vector<std::string> exprs;
      for (auto& a : args) {
        exprs.push_back(a.expr);
      }
      expr = name + "(" + join(exprs, ',') + ")";
    }
    // Round to the node's dtype as a store and reload would.
    body << out.compute << " v" << k << " = " << round_expr(out, expr) << "; ";
  }
  for (size_t j = 0; j < t.outputs.size(); ++j) {
    int node = t.outputs[j];
    if (node < 0 || node >= static_cast<int>(t.nodes.size())) {
      throw std::invalid_argument("[render] " + where + ": output of no node.");
    }
    const DtypeInfo& od = dtype_info(t.nodes[node].dtype, where);
    std::string p = "OUT" + std::to_string(j) + "_";
    defines.push_back(p + "ST " + od.storage);
    std::string stored = replace_all(od.store, "(v)", "(v" + std::to_string(node) + ")");
    buffers << "layout(std430, set = 0, binding = " << t.inputs.size() + j << ") writeonly buffer O"
            << j << " { " << p << "ST out" << j << "[]; }; ";
    body << "out" << j << "[pc.out_offset" << j << " + i] = " << stored << "; ";
  }
  std::vector<std::string> all = storage_defines(dts, false, caps, where);
  all.push_back("IDX64 0");
  all.push_back("NUM_IN " + std::to_string(t.inputs.size()));
  all.push_back("NUM_OUT " + std::to_string(t.outputs.size()));
  all.push_back("RANK_MAX " + std::to_string(kFusedMaxRank));
  all.push_back("MLX_MATH_SELECTIVE 1");
  std::sort(math_groups.begin(), math_groups.end());
  math_groups.erase(std::unique(math_groups.begin(), math_groups.end()), math_groups.end());
  for (const auto& m : math_groups) {
    all.push_back("MLX_MATH_" + m + " 1");
  }
  all.insert(all.end(), defines.begin(), defines.end());
  // The group itself, so `spvdump show` / `glsl` print the subgraph next to its GLSL.
  all.push_back("FUSED_TAPE " + key_param(key, "tape", where));
  all.push_back("FUSED_BUFFERS " + buffers.str());
  all.push_back("FUSED_BODY " + body.str());
  KernelSource source = render_template("fused.glsl", all);
  source.num_buffers = static_cast<uint32_t>(t.inputs.size() + t.outputs.size() + 1);
  source.push_constant_bytes = 5 * 4;
  uint32_t wg = row_workgroup_size(caps);
  source.workgroup_size = {wg, 1, 1};
  source.spec_constants = {{0, wg}};
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
  launch.meta.resize(meta.size() * 4);
  std::memcpy(launch.meta.data(), meta.data(), launch.meta.size());
  int32_t pcs[5] = {static_cast<int32_t>(size), 0, 0, 0, 0};
  for (size_t j = 0; j < g.out_offsets.size(); ++j) {
    pcs[1 + j] = static_cast<int32_t>(g.out_offsets[j]);
  }
  launch.push_constants.resize(sizeof(pcs));
  std::memcpy(launch.push_constants.data(), pcs, sizeof(pcs));
  uint64_t wg = source.workgroup_size[0];
  launch.groups = row_groups(
      std::min<uint64_t>((static_cast<uint64_t>(size) + wg - 1) / wg, uint64_t{65535} * 64), where);
  return launch;
}

}  // namespace mlx::core::vulkan::codegen
