// eval_gpu of RoPE: the "rope" family (codegen/fast.h, docs/fast.md). x is read in place
// when row-contiguous, else copied dense; launches are cut so each fits one binding, and
// each carries its first row so positions and batch entries stay right.
#include <algorithm>
#include <cstring>
#include <optional>

#include "codegen/fast.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/launch_memo.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/fast_primitives.h"

namespace mlx::core::fast {

namespace codegen = vulkan::codegen;
using vulkan::bind_run;
using vulkan::Buf;
using vulkan::dense_run;

namespace {

// What decides whether the rope kernel can apply an absorbed rms_norm itself: the row
// length, the rotated half and the vector width, which follows x's alignment (the
// output is a fresh buffer, aligned).
codegen::RopeGeometry prenorm_probe(const array& x, int64_t d, int dims) {
  codegen::RopeGeometry g;
  g.count = 1;
  g.d = d;
  g.half_dims = dims / 2;
  g.prenorm = true;
  g.in_offset = x.flags().row_contiguous ? x.offset() / x.itemsize() : 0;
  return g;
}

}  // namespace

void RoPE::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& x = inputs[0];
  if (const char* why = vulkan::float_kernel_unsupported(out)) {
    vulkan::cpu_fallback(*this, inputs, out, why);
    return;
  }
  auto& dev = vulkan::device("RoPE");
  int64_t d = x.shape(-1);
  int64_t max_elems = vulkan::binding_elems(dev, out.itemsize());
  if (!vulkan::copies_fit(inputs) || d > max_elems) {
    vulkan::cpu_fallback(*this, inputs, out, "an operand wider than one storage binding");
    return;
  }
  int stream = this->stream().index;
  // (d >= dims >= 2: the op checks dims, so no division by zero.)
  int64_t count = static_cast<int64_t>(x.size()) / d;
  int64_t per = std::max<int64_t>(1, max_elems / d);
  const char* dtype = vulkan::gpu_dtype_name(out.dtype());
  bool one_launch = count <= per && x.size() > 0;
  auto& enc = vulkan::encoder(stream);
  if (into_ && !(one_launch && static_cast<int64_t>(out.size()) <= max_elems &&
                 out.size() < (size_t{1} << 31))) {
    // The rotated rows on their own, then the absorbed slice_update as its own launch (an
    // output wider than one binding; the update then copies the source).
    std::vector<array> rope_inputs(inputs.begin(), inputs.end() - 2);
    array rotated(x.shape(), out.dtype(), nullptr, {});
    RoPE(this->stream(), dims_, traditional_, base_, scale_, norm_eps_)
        .eval_gpu(rope_inputs, rotated);
    enc.retain(rotated.data_shared_ptr());
    int axis = static_cast<int>(out.ndim()) - 2;
    DynamicSliceUpdate(this->stream(), {axis})
        .eval_gpu({inputs[inputs.size() - 2], rotated, inputs.back()}, out);
    return;
  }
  // The absorbed rms_norm in the kernel, or as its own launch first (rows it cannot hold).
  bool kernel_norm =
      norm_eps_ &&
      one_launch && codegen::rope_prenorm_fits(dtype, prenorm_probe(x, d, dims_), dev.caps());
  std::optional<array> normed;
  if (norm_eps_ && !kernel_norm) {
    normed = array(x.shape(), out.dtype(), nullptr, {});
    RMSNorm(this->stream(), *norm_eps_)
        .eval_gpu({x, inputs[norm_weight_index(inputs.size())]}, *normed);
    enc.retain(normed->data_shared_ptr());
  }
  const array& xin = normed ? *normed : x;
  // (inputs[n - 2] by reference: a copy of the handle would make the source undonatable.)
  if (into_) {
    // The output is the source (donated, or copied) with the rows written into it.
    vulkan::copy_or_donate(stream, inputs[inputs.size() - 2], out);
  } else {
    out.set_data(allocator::malloc(out.nbytes()));
  }
  if (x.size() == 0) {
    return;
  }
  const array& offsets = inputs[1];
  bool has_freqs = this->has_freqs(inputs.size());
  Buf xb = dense_run(enc, stream, xin, dtype);
  Buf off = dense_run(enc, stream, offsets, "i32");
  Buf fr = has_freqs ? dense_run(enc, stream, inputs[2], "f32") : off;
  Buf nw =
      kernel_norm ? dense_run(enc, stream, inputs[norm_weight_index(inputs.size())], dtype) : off;
  Buf st = into_ ? dense_run(enc, stream, inputs.back(), "i32") : off;
  Buf y = vulkan::buf_of(out, dtype);
  int64_t per_batch = count / x.shape(0);
  auto bo = bind_run(dev, off, static_cast<int64_t>(offsets.size()), false);
  auto bf = bind_run(dev, fr, has_freqs ? dims_ / 2 : 1, false);
  auto bn = bind_run(dev, nw, kernel_norm ? d : 1, false);
  auto bs = bind_run(dev, st, 1, false);
  for (int64_t r0 = 0; r0 < count; r0 += per) {
    codegen::RopeGeometry g;
    g.row0 = r0;
    g.count = std::min(per, count - r0);
    g.d = d;
    g.half_dims = dims_ / 2;
    g.t_len = x.shape(-2);
    g.per_batch = per_batch;
    g.offset_per_batch = offsets.size() > 1;
    g.traditional = traditional_;
    g.freqs = has_freqs;
    g.base = base_;
    g.scale = scale_;
    g.prenorm = kernel_norm;
    g.eps = kernel_norm ? *norm_eps_ : 0.0f;
    g.norm_w_offset = bn.elem_offset;
    g.into = into_;
    g.out_rows = into_ ? out.shape(-2) : 0;
    g.start_offset = into_ ? bs.elem_offset : 0;
    auto bx = bind_run(dev, xb.at(r0 * d), g.count * d, false);
    // Into a larger output: the whole output (its rows are addressed from the start).
    auto by = into_ ? bind_run(dev, y, static_cast<int64_t>(out.size()), true)
                    : bind_run(dev, y.at(r0 * d), g.count * d, true);
    g.in_offset = bx.elem_offset;
    g.out_offset = by.elem_offset;
    g.offsets_offset = bo.elem_offset;
    g.freqs_offset = bf.elem_offset;
    float numbers[2] = {g.base, g.scale};
    int64_t bits = 0;
    std::memcpy(&bits, numbers, 8);
    uint32_t eps_word = 0;
    std::memcpy(&eps_word, &g.eps, 4);
    int64_t norm_eps_bits = eps_word;
    static const int64_t family = vulkan::family_word("rope");
    const int64_t sig[] = {
        family,
        static_cast<int64_t>(reinterpret_cast<uintptr_t>(dtype)),
        g.row0,
        g.count,
        g.d,
        g.half_dims,
        g.t_len,
        g.per_batch,
        (g.offset_per_batch ? 1 : 0) | (g.traditional ? 2 : 0) | (g.freqs ? 4 : 0) |
            (g.prenorm ? 8 : 0) | (g.into ? 16 : 0),
        g.out_rows,
        static_cast<int64_t>(g.start_offset),
        bits,
        static_cast<int64_t>(g.norm_w_offset),
        norm_eps_bits,
        static_cast<int64_t>(g.in_offset),
        static_cast<int64_t>(g.out_offset),
        static_cast<int64_t>(g.offsets_offset),
        static_cast<int64_t>(g.freqs_offset)};
    const auto& planned = vulkan::memoized(sig, [&] {
      auto key = codegen::rope_key(dtype, g);
      const auto& kernel = vulkan::kernel_library().get(key);
      return vulkan::MemoEntry{&kernel, codegen::rope_launch(key, kernel.source, g)};
    });
    const auto& kernel = *planned.kernel;
    const auto& launch = planned.launch;
    vulkan::Binding bindings[6] = {bx.binding, bo.binding};
    size_t n = 2;
    if (has_freqs) {
      bindings[n++] = bf.binding;
    }
    if (g.prenorm) {
      bindings[n++] = bn.binding;
    }
    if (g.into) {
      bindings[n++] = bs.binding;
    }
    bindings[n++] = by.binding;
    vulkan::record_launch(enc, kernel, launch, std::span(bindings, n));
  }
}

}  // namespace mlx::core::fast
