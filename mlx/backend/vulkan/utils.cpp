#include "mlx/backend/vulkan/utils.h"

#include <cstdlib>
#include <stdexcept>

namespace mlx::core::vulkan {

const char* result_name(VkResult r) {
  switch (r) {
#define MLX_VK_RESULT(x) \
  case x:                \
    return #x;
    MLX_VK_RESULT(VK_SUCCESS)
    MLX_VK_RESULT(VK_NOT_READY)
    MLX_VK_RESULT(VK_TIMEOUT)
    MLX_VK_RESULT(VK_INCOMPLETE)
    MLX_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    MLX_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    MLX_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    MLX_VK_RESULT(VK_ERROR_DEVICE_LOST)
    MLX_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    MLX_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    MLX_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    MLX_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    MLX_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    MLX_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    MLX_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    MLX_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    MLX_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    MLX_VK_RESULT(VK_ERROR_INVALID_SHADER_NV)
    MLX_VK_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
#undef MLX_VK_RESULT
    default:
      return "VK_ERROR_UNKNOWN";
  }
}

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) {
    throw std::runtime_error(std::string("[vulkan] ") + what + " failed: " + result_name(r) + " (" +
                             std::to_string(static_cast<int>(r)) + ").");
  }
}

size_t env_size(const char* name, size_t default_value) {
  const char* v = std::getenv(name);
  if (!v || !*v) {
    return default_value;
  }
  char* end = nullptr;
  unsigned long long n = std::strtoull(v, &end, 10);
  return (end && *end == '\0') ? static_cast<size_t>(n) : default_value;
}

bool env_flag(const char* name, bool default_value) {
  const char* v = std::getenv(name);
  if (!v || !*v) {
    return default_value;
  }
  std::string s(v);
  if (s == "0" || s == "false" || s == "off" || s == "no") {
    return false;
  }
  return true;
}

std::string env_string(const char* name, const std::string& default_value) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::string(v) : default_value;
}

}  // namespace mlx::core::vulkan
