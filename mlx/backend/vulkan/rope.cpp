// eval_gpu of RoPE: the "rope" family (codegen/fast.h, docs/fast.md). x is read in place
// when row-contiguous, else copied dense, as [B, heads, T, d]; launches cover whole batch
// entries and are cut so each fits one binding (one entry wider than a binding takes the
// explicit CPU route).
#include <algorithm>

#include "codegen/fast.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/fast_primitives.h"

namespace mlx::core::fast {

namespace codegen = vulkan::codegen;
using vulkan::bind_run;
using vulkan::Buf;
using vulkan::dense_run;

void RoPE::eval_gpu(const std::vector<array>& inputs, array& out) {
  if (const char* why = vulkan::float_kernel_unsupported(out)) {
    vulkan::cpu_fallback(*this, inputs, out, why);
    return;
  }
  auto& dev = vulkan::device("RoPE");
  int64_t d = out.shape(-1);
  int64_t t_len = out.shape(-2);
  int64_t batches = out.shape(0);
  // x as [B, heads, T, d]: heads are every dim between the batch and the positions.
  int64_t heads =
      batches * t_len * d == 0 ? 1 : static_cast<int64_t>(out.size()) / (batches * t_len * d);
  int64_t entry = heads * t_len * d;  // elements per batch entry
  int64_t max_elems = vulkan::binding_elems(dev, out.itemsize());
  if (!vulkan::copies_fit(inputs) || entry > max_elems) {
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
  Buf x = dense_run(enc, stream, inputs[0], dtype);
  Buf off = dense_run(enc, stream, offsets, "i32");
  Buf fr = has_freqs ? dense_run(enc, stream, inputs[2], "f32") : off;
  Buf y = vulkan::buf_of(out, dtype);
  // Launches of whole batch entries, each fitting one binding.
  int64_t per = std::max<int64_t>(1, max_elems / entry);
  auto bo = bind_run(dev, off, static_cast<int64_t>(offsets.size()), false);
  auto bf = bind_run(dev, fr, has_freqs ? dims_ / 2 : 1, false);
  for (int64_t b0 = 0; b0 < batches; b0 += per) {
    codegen::RopeGeometry g;
    g.b0 = b0;
    g.batches = std::min(per, batches - b0);
    g.heads = heads;
    g.t_len = t_len;
    g.d = d;
    g.half_dims = dims_ / 2;
    g.offset_per_batch = offsets.size() > 1;
    g.traditional = traditional_;
    g.freqs = has_freqs;
    g.base = base_;
    g.scale = scale_;
    auto bx = bind_run(dev, x.at(b0 * entry), g.batches * entry, false);
    auto by = bind_run(dev, y.at(b0 * entry), g.batches * entry, true);
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
