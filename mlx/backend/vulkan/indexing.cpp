// eval_gpu of the indexing primitives (work in progress: the logged CPU route).
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/primitives.h"

namespace mlx::core {

#define MLX_VK_INDEXING_CPU(P)                                                        \
  void P::eval_gpu(const std::vector<array>& inputs, array& out) {                    \
    vulkan::cpu_fallback(*this, inputs, out, "no GPU kernel for this primitive yet"); \
  }
MLX_VK_INDEXING_CPU(Gather)
MLX_VK_INDEXING_CPU(Scatter)
MLX_VK_INDEXING_CPU(ScatterAxis)
MLX_VK_INDEXING_CPU(DynamicSlice)
MLX_VK_INDEXING_CPU(DynamicSliceUpdate)

}  // namespace mlx::core
