// eval_cpu of Slice (a view), SliceUpdate and Concatenate (strided copies).
#include "mlx/backend/common/views.h"
#include "mlx/backend/cpu/copy.h"
#include "mlx/primitives.h"

namespace mlx::core {

void Slice::eval_cpu(const std::vector<array>& inputs, array& out) {
  slice_view(inputs[0], out, start_, strides_);
}

void SliceUpdate::eval_cpu(const std::vector<array>& inputs, array& out) {
  auto& src = inputs[0];
  auto& update = inputs[1];
  // Write in place when nothing else can see src's buffer; otherwise copy src first.
  if (src.is_donatable() && src.flags().row_contiguous) {
    out.copy_shared_buffer(src);
  } else {
    cpu::copy_to_new(src, out);
  }
  // out is row-contiguous: the slice is a strided window into it.
  Strides strides(out.ndim());
  int64_t offset = 0;
  for (size_t i = 0; i < out.ndim(); ++i) {
    strides[i] = out.strides(static_cast<int>(i)) * strides_[i];
    offset += out.strides(static_cast<int>(i)) * start_[i];
  }
  cpu::copy_into(update, out, strides, offset);
}

void Concatenate::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  int64_t offset = 0;
  auto axis_stride = out.strides(axis_);
  for (auto& in : inputs) {
    cpu::copy_into(in, out, out.strides(), offset);
    offset += in.shape(axis_) * axis_stride;
  }
}

} // namespace mlx::core
