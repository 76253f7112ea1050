// eval_gpu of Select (where): the ternary "select" kernel.
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/elementwise.h"
#include "mlx/primitives.h"

namespace mlx::core {

void Select::eval_gpu(const std::vector<array>& inputs, array& out) {
  if (!vulkan::gpu_supports(inputs) || !vulkan::gpu_supports(out.dtype())) {
    vulkan::cpu_fallback(*this, inputs, out, "a dtype the GPU kernels do not hold");
    return;
  }
  // Only x or y may give their buffer (the condition is bool, the output may not be).
  vulkan::allocate_or_donate({inputs[1], inputs[2]}, out, true);
  vulkan::launch_elementwise(name(), "select", "Select", inputs, out);
}

}  // namespace mlx::core
