// MLX's Metal probe, so code that asks `metal::is_available()` compiles: there is no
// Metal backend here (the GPU backend is Vulkan; ask gpu::is_available()).
#pragma once

namespace mlx::core::metal {

inline bool is_available() {
  return false;
}

}  // namespace mlx::core::metal
