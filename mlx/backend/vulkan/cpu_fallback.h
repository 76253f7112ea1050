// The one explicit route from a GPU stream to the CPU, for primitives (or dtypes) that have
// no GPU kernel yet. It waits for the inputs' GPU work, runs the primitive's eval_cpu on
// host-visible (mapped or staged) memory, and counts the call. With MLX_VK_LOG_FALLBACK=1
// it says so on stderr, once per primitive name.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "mlx/array.h"

namespace mlx::core {
class Primitive;
}

namespace mlx::core::vulkan {

void cpu_fallback(Primitive& p, const std::vector<array>& inputs, std::vector<array>& outputs,
                  const std::string& reason);
void cpu_fallback(Primitive& p, const std::vector<array>& inputs, array& out,
                  const std::string& reason);

// Calls per primitive name since the start (or the last reset), for tests and tools.
std::map<std::string, size_t> fallback_counts();
void reset_fallback_counts();

}  // namespace mlx::core::vulkan
