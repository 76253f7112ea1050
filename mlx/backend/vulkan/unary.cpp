// eval_gpu of Unary: one "unary" kernel per (op, dtypes, layout class).
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/elementwise.h"
#include "mlx/primitives.h"

namespace mlx::core {

void Unary::eval_gpu(const std::vector<array>& inputs, array& out) {
  if (!vulkan::gpu_supports(inputs) || !vulkan::gpu_supports(out.dtype())) {
    vulkan::cpu_fallback(*this, inputs, out, "a dtype the GPU kernels do not hold");
    return;
  }
  vulkan::allocate_or_donate(inputs, out, true);
  vulkan::launch_elementwise(name(), "unary", name(), inputs, out);
}

}  // namespace mlx::core
