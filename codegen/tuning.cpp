// Tuning overrides from the environment (internal.h: tuning_env).
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "codegen/internal.h"

namespace mlx::core::vulkan::codegen {

uint32_t tuning_env(const char* name, uint32_t lo, uint32_t hi, uint32_t fallback) {
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') {
    return fallback;
  }
  char* end = nullptr;
  unsigned long v = std::strtoul(env, &end, 10);
  if (*end != '\0' || v < lo || v > hi) {
    throw std::invalid_argument("[render] " + std::string(name) + "=" + env +
                                " must be an integer in " + std::to_string(lo) + ".." +
                                std::to_string(hi) + ".");
  }
  return static_cast<uint32_t>(v);
}

uint32_t elementwise_workgroup_size() {
  return tuning_env("MLX_VK_ELEMENTWISE_WG", 32, 1024, 128);
}

}  // namespace mlx::core::vulkan::codegen
