// eval_gpu of AddMM and the quantization primitives: the logged CPU route (as
// MLX_VK_CPU_ROUTE in cpu_fallback.cpp) until their kernels replace it here (issue 12).
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/primitives.h"

namespace mlx::core {

#define MLX_VK_CPU_ROUTE(P)                                                           \
  void P::eval_gpu(const std::vector<array>& inputs, array& out) {                    \
    vulkan::cpu_fallback(*this, inputs, out, "no GPU kernel for this primitive yet"); \
  }

MLX_VK_CPU_ROUTE(AddMM)
MLX_VK_CPU_ROUTE(Dequantize)
MLX_VK_CPU_ROUTE(QuantizedMatmul)

#undef MLX_VK_CPU_ROUTE

void AffineQuantize::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  vulkan::cpu_fallback(*this, inputs, outputs, "no GPU kernel for this primitive yet");
}

}  // namespace mlx::core
