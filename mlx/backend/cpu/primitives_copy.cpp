// eval_cpu of the primitives that only convert, copy or re-view data.
#include "mlx/backend/common/utils.h"
#include "mlx/backend/common/views.h"
#include "mlx/backend/cpu/copy.h"
#include "mlx/primitives.h"

namespace mlx::core {

void AsType::eval_cpu(const std::vector<array>& inputs, array& out) {
  if (reinterprets_bits(inputs[0].dtype(), out.dtype())) {
    out.copy_shared_buffer(inputs[0]);  // the same bits (as eval_gpu)
    return;
  }
  cpu::copy_to_new(inputs[0], out);
}

void Copy::eval_cpu(const std::vector<array>& inputs, array& out) {
  cpu::copy_to_new(inputs[0], out);
}

void Full::eval_cpu(const std::vector<array>& inputs, array& out) {
  cpu::copy_to_new(inputs[0], out);
}

void Contiguous::eval_cpu(const std::vector<array>& inputs, array& out) {
  auto& in = inputs[0];
  if (in.flags().row_contiguous || (allow_col_major_ && in.flags().col_contiguous)) {
    out.copy_shared_buffer(in);
  } else {
    cpu::copy_to_new(in, out);
  }
}

void Broadcast::eval_cpu(const std::vector<array>& inputs, array& out) {
  broadcast_view(inputs[0], out);
}

void Reshape::eval_cpu(const std::vector<array>& inputs, array& out) {
  auto& in = inputs[0];
  if (!reshape_view(in, out)) {
    // Copy in's elements in row-major order: the destination strides must be laid out
    // over in's shape, not out's (copy_to_new assumes equal shapes).
    out.set_data(allocator::malloc(out.nbytes()));
    cpu::copy_into(in, out, row_major_strides(in.shape()), 0);
  }
}

}  // namespace mlx::core
