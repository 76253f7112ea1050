#include "mlx/transforms.h"

#include <atomic>
#include <set>
#include <unordered_set>

#include "mlx/backend/gpu/eval.h"
#include "mlx/primitives.h"
#include "mlx/transforms_impl.h"

namespace mlx::core {

namespace detail {

namespace {
std::atomic<int> tracing_depth{0};

}  // namespace

bool in_tracing() {
  return tracing_depth.load(std::memory_order_relaxed) > 0;
}
InTracing::InTracing() {
  ++tracing_depth;
}
InTracing::~InTracing() {
  --tracing_depth;
}

}  // namespace detail

namespace {

// Orders the unevaluated part of the graph so that every array comes after its inputs.
// Iterative depth-first search: a 100k-node chain must not overflow the stack.
std::vector<array> build_tape(const std::vector<array>& outputs) {
  std::vector<array> tape;
  std::unordered_set<std::uintptr_t> visited;
  struct Frame {
    array node;
    size_t next_input;
  };
  std::vector<Frame> stack;
  for (auto& out : outputs) {
    if (out.status() != array::Status::unscheduled || visited.count(out.id())) {
      continue;
    }
    visited.insert(out.id());
    stack.push_back({out, 0});
    while (!stack.empty()) {
      auto& top = stack.back();
      auto& inputs = top.node.inputs();
      if (top.next_input < inputs.size()) {
        array in = inputs[top.next_input++];
        if (in.status() == array::Status::unscheduled && !visited.count(in.id())) {
          visited.insert(in.id());
          // Siblings are produced by the same primitive: mark them visited too.
          for (auto& s : in.siblings()) {
            visited.insert(s.id());
          }
          stack.push_back({std::move(in), 0});
        }
        continue;
      }
      tape.push_back(std::move(top.node));
      stack.pop_back();
    }
    for (auto& s : out.siblings()) {
      visited.insert(s.id());
    }
  }
  return tape;
}

void eval_impl(std::vector<array> outputs, bool wait) {
  // Each entry is moved out of the tape when it runs, so the tape never keeps a finished
  // node (and the memory behind it) alive.
  auto tape = build_tape(outputs);
  std::set<int> gpu_streams;
  for (auto& slot : tape) {
    array arr = std::move(slot);
    if (arr.status() != array::Status::unscheduled) {
      continue;  // evaluated as a sibling of an earlier node
    }
    if (!arr.has_primitive()) {
      // A compile placeholder (or an array built without a graph) has nothing to run.
      if (arr.is_tracer()) {
        throw std::invalid_argument(
            "[eval] Attempting to eval an array during function transformations like compile "
            "or vmap is not allowed.");
      }
      throw std::runtime_error(
          "[eval] Attempting to eval an array without a primitive. If you are compiling a "
          "function, make sure all the inputs and outputs are captured.");
    }
    auto stream = arr.primitive().stream();
    // Inputs computed on another stream's GPU must be complete before the CPU reads them.
    for (auto& in : arr.inputs()) {
      if (in.status() == array::Status::evaluated && stream.device == Device::cpu) {
        in.wait();
      }
    }
    auto outs = arr.outputs();
    if (stream.device == Device::gpu) {
      gpu::eval(arr);
      gpu_streams.insert(stream.index);
      for (auto& o : outs) {
        o.set_pending_stream(stream.index);
        o.set_status(array::Status::evaluated);
      }
    } else {
      arr.primitive().eval_cpu(arr.inputs(), outs);
      for (auto& o : outs) {
        o.set_status(array::Status::available);
      }
    }
    // Dropping the primitive and inputs frees intermediates as soon as nothing needs them.
    if (!arr.is_tracer()) {
      arr.detach();
    }
  }

  for (int s : gpu_streams) {
    gpu::finalize(Stream(s, Device::gpu));
  }
  if (wait) {
    for (auto& out : outputs) {
      out.wait();
    }
  }
}

}  // namespace

void eval(std::vector<array> outputs) {
  eval_impl(std::move(outputs), true);
}

void async_eval(std::vector<array> outputs) {
  eval_impl(std::move(outputs), false);
}

}  // namespace mlx::core
