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
