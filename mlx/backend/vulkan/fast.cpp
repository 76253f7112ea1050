// eval_gpu of the fast:: primitives: the "norm" family (rms_norm, layer_norm) and the
// "rope" family (codegen/fast.h, docs/fast.md). Row-contiguous operands are read in place;
// other layouts are copied dense first. Launches are cut so every operand fits one
// binding; a single row wider than a binding takes the explicit CPU route.
#include <algorithm>

#include "codegen/fast.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/fast_primitives.h"

namespace mlx::core::fast {

namespace {

namespace codegen = vulkan::codegen;
using vulkan::Buf;

// The array as a dense run: in place when row-contiguous, else a copy.
Buf dense(vulkan::CommandEncoder& enc, int stream, const array& a, const char* dtype) {
  return a.flags().row_contiguous ? vulkan::buf_of(a, dtype)
                                  : vulkan::axes_last(enc, stream, a, {}, dtype);
}

vulkan::BoundOperand bind(const vulkan::Device& dev, const Buf& b, int64_t elems, bool output) {
  return vulkan::bind_operand(
      dev, {b.alloc, b.offset, b.itemsize, 0, std::max<int64_t>(elems - 1, 0)}, output);
}

// The reason the GPU cannot run this primitive, or nullptr.
const char* unsupported(const array& out) {
  bool floating = out.dtype() == float32 || out.dtype() == float16 || out.dtype() == bfloat16;
  if (!floating || !vulkan::gpu_dtype_name(out.dtype())) {
    return "a dtype the GPU kernels do not hold";
  }
  return nullptr;
}

bool copies_fit(const std::vector<array>& inputs) {
  for (const auto& a : inputs) {
    if (!a.flags().row_contiguous && !vulkan::copy_fits(a)) {
      return false;
    }
  }
  return true;
}

void eval_norm(Primitive& p, bool layer, float eps, const std::vector<array>& inputs, array& out) {
  if (const char* why = unsupported(out)) {
    vulkan::cpu_fallback(p, inputs, out, why);
    return;
  }
  auto& dev = vulkan::device(p.name());
  int64_t len = out.shape(-1);
  int64_t max_elems = vulkan::binding_elems(dev, out.itemsize());
  if (!copies_fit(inputs) || len > max_elems) {
    vulkan::cpu_fallback(p, inputs, out, "an operand wider than one storage binding");
    return;
  }
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  int stream = p.stream().index;
  auto& enc = vulkan::encoder(stream);
  const char* dtype = vulkan::gpu_dtype_name(out.dtype());
  Buf x = dense(enc, stream, inputs[0], dtype);
  Buf w = dense(enc, stream, inputs[1], dtype);
  Buf b = layer ? dense(enc, stream, inputs[2], dtype) : w;
  Buf y = vulkan::buf_of(out, dtype);
  int64_t count = static_cast<int64_t>(out.size()) / len;
  int64_t per = std::max<int64_t>(1, max_elems / len);
  for (int64_t r0 = 0; r0 < count; r0 += per) {
    codegen::NormGeometry g;
    g.count = std::min(per, count - r0);
    g.len = len;
    g.w_stride = inputs[1].size() == 1 ? 0 : 1;
    g.b_stride = layer && inputs[2].size() == 1 ? 0 : 1;
    g.eps = eps;
    auto bx = bind(dev, x.at(r0 * len), g.count * len, false);
    auto bw = bind(dev, w, g.w_stride ? len : 1, false);
    auto bb = bind(dev, b, g.b_stride ? len : 1, false);
    auto by = bind(dev, y.at(r0 * len), g.count * len, true);
    g.in_offset = bx.elem_offset;
    g.w_offset = bw.elem_offset;
    g.b_offset = bb.elem_offset;
    g.out_offset = by.elem_offset;
    auto key = codegen::norm_key(layer, dtype, g, dev.caps());
    const auto& kernel = vulkan::kernel_library().get(key);
    auto launch = codegen::norm_launch(key, kernel.source, g);
    std::vector<vulkan::Binding> bindings{bx.binding, bw.binding};
    if (layer) {
      bindings.push_back(bb.binding);
    }
    bindings.push_back(by.binding);
    vulkan::record_launch(enc, kernel, launch, bindings);
  }
}

}  // namespace

void RMSNorm::eval_gpu(const std::vector<array>& inputs, array& out) {
  eval_norm(*this, false, eps_, inputs, out);
}

void LayerNorm::eval_gpu(const std::vector<array>& inputs, array& out) {
  eval_norm(*this, true, eps_, inputs, out);
}

void RoPE::eval_gpu(const std::vector<array>& inputs, array& out) {
  if (const char* why = unsupported(out)) {
    vulkan::cpu_fallback(*this, inputs, out, why);
    return;
  }
  auto& dev = vulkan::device("RoPE");
  int64_t d = out.shape(-1);
  int64_t max_elems = vulkan::binding_elems(dev, out.itemsize());
  if (!copies_fit(inputs) || d > max_elems) {
    vulkan::cpu_fallback(*this, inputs, out, "an operand wider than one storage binding");
    return;
  }
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  int stream = this->stream().index;
  auto& enc = vulkan::encoder(stream);
  const char* dtype = vulkan::gpu_dtype_name(out.dtype());
  const array& offsets = inputs[1];
  bool has_freqs = inputs.size() > 2;
  Buf x = dense(enc, stream, inputs[0], dtype);
  Buf off = dense(enc, stream, offsets, "i32");
  Buf fr = has_freqs ? dense(enc, stream, inputs[2], "f32") : off;
  Buf y = vulkan::buf_of(out, dtype);
  int64_t count = static_cast<int64_t>(out.size()) / d;
  int64_t per_batch = count / out.shape(0);
  int64_t per = std::max<int64_t>(1, max_elems / d);
  auto bo = bind(dev, off, static_cast<int64_t>(offsets.size()), false);
  auto bf = bind(dev, fr, has_freqs ? dims_ / 2 : 1, false);
  for (int64_t r0 = 0; r0 < count; r0 += per) {
    codegen::RopeGeometry g;
    g.row0 = r0;
    g.count = std::min(per, count - r0);
    g.d = d;
    g.half_dims = dims_ / 2;
    g.t_len = out.shape(-2);
    g.per_batch = per_batch;
    g.offset_per_batch = offsets.size() > 1;
    g.traditional = traditional_;
    g.freqs = has_freqs;
    g.base = base_;
    g.scale = scale_;
    auto bx = bind(dev, x.at(r0 * d), g.count * d, false);
    auto by = bind(dev, y.at(r0 * d), g.count * d, true);
    g.in_offset = bx.elem_offset;
    g.out_offset = by.elem_offset;
    g.offsets_offset = bo.elem_offset;
    g.freqs_offset = bf.elem_offset;
    auto key = codegen::rope_key(dtype, g);
    const auto& kernel = vulkan::kernel_library().get(key);
    auto launch = codegen::rope_launch(key, kernel.source, g);
    std::vector<vulkan::Binding> bindings{bx.binding, bo.binding};
    if (has_freqs) {
      bindings.push_back(bf.binding);
    }
    bindings.push_back(by.binding);
    vulkan::record_launch(enc, kernel, launch, bindings);
  }
}

}  // namespace mlx::core::fast
