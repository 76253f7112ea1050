// Rows of the norm family (RMSNorm, LayerNorm, Softmax) longer than one binding, which the
// row kernel cannot hold (a softmax over 40M logits): computed from GPU launches instead.
#pragma once

#include <string>
#include <vector>

#include "mlx/array.h"

namespace mlx::core {
class Primitive;
}

namespace mlx::core::vulkan {

// `op` is "rms", "layer" or "softmax" with inputs {x, weight}, {x, weight, bias} or {x},
// as eval_norm; `out` already has its buffer. Any layout of the inputs.
void eval_norm_long_rows(Primitive& p, const std::string& op, float eps,
                         const std::vector<array>& inputs, array& out);

}  // namespace mlx::core::vulkan
