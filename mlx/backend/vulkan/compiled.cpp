// eval_gpu of Compiled: the group's nodes recorded one after another on the stream (each
// its own kernel, as before compile); the intermediates stay alive until the batch
// completes. The fused-graph emitter will replace this with one kernel per group.
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/primitives.h"

namespace mlx::core {

void Compiled::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  auto made = run_tape(inputs, outputs,
                       [](Primitive& p, const std::vector<array>& ins, std::vector<array>& outs) {
                         p.eval_gpu(ins, outs);
                       });
  auto& enc = vulkan::encoder(stream().index);
  for (auto& a : made) {
    if (a.has_data()) {
      enc.retain(a.data_shared_ptr());
    }
  }
}

}  // namespace mlx::core
