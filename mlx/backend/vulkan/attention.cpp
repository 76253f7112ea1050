// eval_gpu of ScaledDotProductAttention: the logged CPU route until the attention kernels
// land (issue 13); the CPU reference reads every operand through its strides.
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/fast_primitives.h"

namespace mlx::core::fast {

void ScaledDotProductAttention::eval_gpu(const std::vector<array>& inputs, array& out) {
  vulkan::cpu_fallback(*this, inputs, out, "no GPU kernel for this primitive yet");
}

}  // namespace mlx::core::fast
