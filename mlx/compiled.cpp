// Compiled: a group of elementwise ops fused by compile() (docs/compile.md): its output
// shapes, and run_tape, the node-by-node fallback. The devices run the group fused:
// cpu/compiled.cpp (one loop over the elements), vulkan/compiled.cpp (one kernel). Shapes
// follow the inputs, so a shapeless compile's group works for every shape.
#include <unordered_map>

#include "mlx/primitives.h"

namespace mlx::core {

namespace {

template <typename Visit>
void walk(const std::vector<array>& inner_inputs, const std::vector<array>& tape,
          const std::vector<array>& inputs, Visit&& visit) {
  std::unordered_map<std::uintptr_t, array> map;
  for (size_t i = 0; i < inputs.size(); ++i) {
    map.emplace(inner_inputs[i].id(), inputs[i]);
  }
  for (auto& node : tape) {
    std::vector<array> ins;
    for (auto& in : node.inputs()) {
      auto it = map.find(in.id());
      ins.push_back(it == map.end() ? in : it->second);  // else a constant
    }
    map.emplace(node.id(), visit(node, ins));
  }
  (void)map;
}

}  // namespace

std::vector<Shape> Compiled::output_shapes(const std::vector<array>& inputs) {
  // A shapeless compiled function's replays share this primitive and mostly repeat the
  // last call's shapes (a decode step per token): walking the tape for them each time was
  // 12% of building a tiny Qwen3's decode graph (callgrind).
  auto same_as_last = [&] {
    if (!have_shapes_ || inputs.size() != last_input_shapes_.size()) {
      return false;
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].shape() != last_input_shapes_[i]) {
        return false;
      }
    }
    return true;
  };
  {
    std::lock_guard lk(shapes_mtx_);
    if (same_as_last()) {
      return last_output_shapes_;
    }
  }
  std::unordered_map<std::uintptr_t, Shape> shapes;
  std::vector<array> placeholders;
  walk(inner_inputs_, tape_, inputs, [&](const array& node, const std::vector<array>& ins) {
    auto shape = node.primitive().output_shapes(ins)[0];
    shapes.emplace(node.id(), shape);
    return array(shape, node.dtype(), nullptr, {});
  });
  std::vector<Shape> out;
  for (auto& o : inner_outputs_) {
    out.push_back(shapes.at(o.id()));
  }
  std::lock_guard lk(shapes_mtx_);
  last_input_shapes_.clear();
  for (const auto& a : inputs) {
    last_input_shapes_.push_back(a.shape());
  }
  last_output_shapes_ = out;
  have_shapes_ = true;
  return out;
}

std::vector<array> Compiled::run_tape(const std::vector<array>& inputs, std::vector<array>& outputs,
                                      RunNode run) const {
  std::unordered_map<std::uintptr_t, array> results;
  std::vector<array> made;
  walk(inner_inputs_, tape_, inputs, [&](const array& node, const std::vector<array>& ins) {
    // The node's primitive and inputs come along: a kernel reads its stream from them.
    std::vector<array> outs{
        array(node.primitive().output_shapes(ins)[0], node.dtype(), node.primitive_ptr(), ins)};
    run(node.primitive(), ins, outs);
    results.emplace(node.id(), outs[0]);
    made.push_back(outs[0]);
    return outs[0];
  });
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs[i].copy_shared_buffer(results.at(inner_outputs_[i].id()));
  }
  return made;
}

}  // namespace mlx::core
