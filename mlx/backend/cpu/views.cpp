// eval_cpu of the view primitives that only set strides and an offset.
#include "mlx/backend/common/views.h"
#include "mlx/primitives.h"

namespace mlx::core {

void Transpose::eval_cpu(const std::vector<array>& inputs, array& out) {
  transpose_view(inputs[0], out, axes_);
}

void AsStrided::eval_cpu(const std::vector<array>& inputs, array& out) {
  as_strided_view(inputs[0], out, strides_, static_cast<int64_t>(offset_));
}

} // namespace mlx::core
