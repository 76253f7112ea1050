// eval_gpu of Binary and DivMod: "binary" kernels per (op, dtypes, layout class).
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/elementwise.h"
#include "mlx/primitives.h"

namespace mlx::core {

void Binary::eval_gpu(const std::vector<array>& inputs, array& out) {
  if (!vulkan::gpu_supports(inputs) || !vulkan::gpu_supports(out.dtype())) {
    vulkan::cpu_fallback(*this, inputs, out, "a dtype the GPU kernels do not hold");
    return;
  }
  vulkan::allocate_or_donate(inputs, out, true);
  vulkan::launch_elementwise(name(), "binary", name(), inputs, out);
}

void DivMod::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (!vulkan::gpu_supports(inputs) || !vulkan::gpu_supports(outputs[0].dtype())) {
    vulkan::cpu_fallback(*this, inputs, outputs, "a dtype the GPU kernels do not hold");
    return;
  }
  // No donation: the second launch still reads the inputs the first one would overwrite.
  for (auto& o : outputs) {
    vulkan::allocate_or_donate(inputs, o, false);
  }
  vulkan::launch_elementwise(name(), "binary", "FloorDivide", inputs, outputs[0]);
  vulkan::launch_elementwise(name(), "binary", "Remainder", inputs, outputs[1]);
}

}  // namespace mlx::core
