// eval_gpu of the view primitives: no kernel, the output shares the input's buffer with
// new strides and offset (mlx/backend/common/views.h). Reshape of a view that cannot be
// re-strided copies it with the copy kernel.
#include "mlx/backend/common/views.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/elementwise.h"
#include "mlx/primitives.h"

namespace mlx::core {

void Broadcast::eval_gpu(const std::vector<array>& inputs, array& out) {
  broadcast_view(inputs[0], out);
}

void Reshape::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& in = inputs[0];
  if (reshape_view(in, out)) {
    return;
  }
  if (!vulkan::gpu_supports(in.dtype())) {
    vulkan::cpu_fallback(*this, inputs, out, "a dtype the GPU kernels do not hold");
    return;
  }
  out.set_data(allocator::malloc(out.nbytes()));
  vulkan::copy_gpu(stream().index, in, out);
}

void Transpose::eval_gpu(const std::vector<array>& inputs, array& out) {
  transpose_view(inputs[0], out, axes());
}

void Slice::eval_gpu(const std::vector<array>& inputs, array& out) {
  slice_view(inputs[0], out, start(), strides());
}

void AsStrided::eval_gpu(const std::vector<array>& inputs, array& out) {
  // Same view as on the CPU; AsStrided keeps its parameters private, so reuse eval_cpu,
  // which only sets strides and an offset (no data is touched).
  eval_cpu(inputs, out);
}

}  // namespace mlx::core
