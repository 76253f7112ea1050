// eval_cpu of the primitives that only convert, copy or re-view data.
#include "mlx/backend/common/utils.h"
#include "mlx/backend/common/views.h"
#include "mlx/backend/cpu/copy.h"
#include "mlx/primitives.h"

namespace mlx::core {

void AsType::eval_cpu(const std::vector<array>& inputs, array& out) {
  cpu::copy_to_new(inputs[0], out);
}

void Copy::eval_cpu(const std::vector<array>& inputs, array& out) {
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
  if (!reshape_view(inputs[0], out)) {
    cpu::copy_to_new(inputs[0], out);
  }
}

} // namespace mlx::core
