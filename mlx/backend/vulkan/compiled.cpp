// eval_gpu of Compiled: one "fused" kernel for the whole group (codegen/fused.h,
// docs/compile.md) when the emitter takes it (GPU dtypes, at most 11 inputs and 4 outputs,
// rank <= 8, every operand in one binding); otherwise the group's nodes are recorded one
// after another with their own kernels. The key's layout variant (any strides, contiguous
// or scalar inputs, and vectors where aligned) comes from the launch's geometry.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <cstdio>

#include "codegen/fused.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/launch_memo.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/backend/vulkan/utils.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

namespace codegen = vulkan::codegen;

// The group as the emitter's tape, or false when the emitter does not take it.
bool fused_tape(const std::vector<array>& inner_inputs, const std::vector<array>& tape,
                const std::vector<array>& inner_outputs, codegen::FusedTape& t) {
  if (inner_inputs.size() > static_cast<size_t>(codegen::kFusedMaxInputs) ||
      inner_outputs.size() > static_cast<size_t>(codegen::kFusedMaxOutputs)) {
    return false;
  }
  std::unordered_map<std::uintptr_t, std::string> ref;
  for (size_t k = 0; k < inner_inputs.size(); ++k) {
    if (!vulkan::gpu_supports(inner_inputs[k].dtype())) {
      return false;
    }
    t.inputs.push_back(vulkan::gpu_dtype_name(inner_inputs[k].dtype()));
    ref.emplace(inner_inputs[k].id(), std::string("i").append(std::to_string(k)));
  }
  for (size_t k = 0; k < tape.size(); ++k) {
    const array& node = tape[k];
    if (!vulkan::gpu_supports(node.dtype())) {
      return false;
    }
    codegen::FusedNode n;
    n.dtype = vulkan::gpu_dtype_name(node.dtype());
    Primitive& p = node.primitive();
    n.op = p.name();
    for (const auto& in : node.inputs()) {
      auto it = ref.find(in.id());
      if (it == ref.end()) {
        return false;  // a constant inside the group: not emitted
      }
      n.args.push_back(it->second);
    }
    if (dynamic_cast<Unary*>(&p)) {
      n.family = "unary";
    } else if (dynamic_cast<Binary*>(&p)) {
      n.family = "binary";
    } else if (dynamic_cast<Select*>(&p)) {
      n.family = "select";
    } else if (dynamic_cast<AsType*>(&p)) {
      n.family = "astype";
    } else {
      return false;
    }
    t.nodes.push_back(std::move(n));
    ref.emplace(node.id(), std::string("n").append(std::to_string(k)));
  }
  for (auto& o : inner_outputs) {
    auto it = ref.find(o.id());
    if (it == ref.end() || it->second[0] != 'n') {
      return false;
    }
    t.outputs.push_back(std::stoi(it->second.substr(1)));
  }
  return true;
}

// The tape as the emitter sees it, derived once per Compiled primitive (its replays share
// it): `fusable` says whether the emitter takes it; `id` names it in launch-memo
// signatures (a counter, never reused, unlike the primitive's address).
struct FusedPlan {
  bool fusable = false;
  codegen::FusedTape tape;
  int64_t id = 0;
};

const FusedPlan& fused_plan(const Compiled& c, const std::vector<array>& inner_inputs,
                            const std::vector<array>& tape, const std::vector<array>& inner_outputs) {
  auto& slot = c.backend_cache();
  if (!slot) {
    static std::atomic<int64_t> next_id{1};
    auto plan = std::make_shared<FusedPlan>();
    plan->fusable = fused_tape(inner_inputs, tape, inner_outputs, plan->tape);
    // Scalar constants of the trace are written into the kernel (codegen/fused.h: f32
    // bits for float inputs, the stored bits for the others); MLX_VK_FUSED_CONSTANTS=0
    // loads them instead, for measuring.
    static const bool inline_constants = vulkan::env_string("MLX_VK_FUSED_CONSTANTS", "1") != "0";
    const auto& constants = c.constants();
    for (size_t k = 0; k < constants.size() && plan->fusable && inline_constants; ++k) {
      if (!constants[k]) {
        continue;
      }
      Dtype dt = inner_inputs[k].dtype();
      uint64_t raw = *constants[k];
      char hex[24];
      if (dt == float32 || dt == float16 || dt == bfloat16) {
        float f;
        if (dt == float32) {
          uint32_t b = static_cast<uint32_t>(raw);
          std::memcpy(&f, &b, 4);
        } else if (dt == float16) {
          f = detail::half_bits_to_float(static_cast<uint16_t>(raw));
        } else {
          uint32_t b = static_cast<uint32_t>(raw) << 16;
          std::memcpy(&f, &b, 4);
        }
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        std::snprintf(hex, sizeof(hex), "%08x", bits);
      } else {
        int digits = static_cast<int>(2 * size_of(dt));
        std::snprintf(hex, sizeof(hex), "%0*llx", digits, static_cast<unsigned long long>(raw));
      }
      plan->tape.consts.resize(constants.size());
      plan->tape.consts[k] = hex;
    }
    plan->id = next_id++;
    slot = plan;
  }
  return *static_cast<const FusedPlan*>(slot.get());
}

}  // namespace

void Compiled::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  auto& dev = vulkan::device("Compiled");
  auto& enc = vulkan::encoder(stream().index);
  const FusedPlan& plan = fused_plan(*this, inner_inputs_, tape_, inner_outputs_);
  const Shape& shape = outputs[0].shape();
  int64_t size = static_cast<int64_t>(outputs[0].size());
  bool fused = plan.fusable && shape.size() <= static_cast<size_t>(codegen::kFusedMaxRank) &&
               size < (int64_t{1} << 30);
  std::vector<vulkan::OperandSpan> spans;
  if (fused) {
    for (auto& in : inputs) {
      vulkan::OperandSpan s{vulkan::allocation(in.buffer()), static_cast<int64_t>(in.offset()),
                            static_cast<int64_t>(in.itemsize()), 0, 0};
      for (size_t d = 0; d < in.ndim(); ++d) {
        int64_t reach =
            (int64_t{in.shape(static_cast<int>(d))} - 1) * in.strides(static_cast<int>(d));
        (reach < 0 ? s.lo : s.hi) += reach;
      }
      // fused.glsl indexes in int: every location must stay below 2^31 elements.
      fused = fused && in.shape() == shape && vulkan::fits_one_binding(dev, s) &&
              s.hi - s.lo < (int64_t{1} << 30);
      spans.push_back(s);
    }
    for (auto& o : outputs) {
      fused = fused && static_cast<int64_t>(o.size()) <= vulkan::binding_elems(dev, o.itemsize());
    }
  }
  if (!fused) {
    auto made = run_tape(inputs, outputs,
                         [](Primitive& p, const std::vector<array>& ins, std::vector<array>& outs) {
                           p.eval_gpu(ins, outs);
                         });
    for (auto& a : made) {
      if (a.has_data()) {
        enc.retain(a.data_shared_ptr());
      }
    }
    return;
  }
  // The launch depends on the tape and on exactly these words: shape, and per operand its
  // element offset in its binding (and strides for inputs). Replays of a decode step hit
  // the memo and skip classifying, keying and packing (~12k instructions a call).
  static thread_local std::vector<int64_t> sig;
  static const int64_t family = vulkan::family_word("fused");
  sig.assign({family, plan.id, static_cast<int64_t>(shape.size())});
  sig.insert(sig.end(), shape.begin(), shape.end());
  std::array<vulkan::Binding, codegen::kFusedMaxInputs + codegen::kFusedMaxOutputs> bindings;
  size_t n = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    auto b = vulkan::bind_operand(dev, spans[k], false);
    bindings[n++] = b.binding;
    sig.push_back(static_cast<int64_t>(b.elem_offset));
    sig.insert(sig.end(), inputs[k].strides().begin(), inputs[k].strides().end());
  }
  for (auto& o : outputs) {
    o.set_data(allocator::malloc(o.nbytes()));
    auto b = vulkan::bind_run(dev, vulkan::buf_of(o, vulkan::gpu_dtype_name(o.dtype())),
                              static_cast<int64_t>(o.size()), true);
    bindings[n++] = b.binding;
    sig.push_back(static_cast<int64_t>(b.elem_offset));
  }
  if (size == 0) {
    return;
  }
  const auto& planned = vulkan::memoized(sig, [&] {
    codegen::FusedGeometry g;
    g.shape.assign(shape.begin(), shape.end());
    g.binding_alignment = static_cast<uint32_t>(vulkan::kBindAlignment);
    size_t w = 3 + shape.size();
    for (size_t k = 0; k < inputs.size(); ++k) {
      g.in_offsets.push_back(sig[w]);
      g.in_strides.emplace_back(sig.begin() + static_cast<std::ptrdiff_t>(w + 1),
                                sig.begin() + static_cast<std::ptrdiff_t>(w + 1 + shape.size()));
      w += 1 + shape.size();
    }
    for (size_t k = 0; k < outputs.size(); ++k) {
      g.out_offsets.push_back(sig[w++]);
    }
    codegen::FusedTape t = plan.tape;
    codegen::classify_fused(t, g);
    auto key = codegen::fused_key(t);
    const auto& kernel = vulkan::kernel_library().get(key);
    return vulkan::MemoEntry{&kernel, codegen::fused_launch(key, kernel.source, g)};
  });
  vulkan::record_launch(enc, *planned.kernel, planned.launch, std::span(bindings.data(), n));
}

}  // namespace mlx::core
