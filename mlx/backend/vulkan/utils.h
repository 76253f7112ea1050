// Small helpers shared by the Vulkan backend: result checking and environment variables.
#pragma once

#include "mlx/backend/vulkan/loader.h"

#include <cstddef>
#include <string>

namespace mlx::core::vulkan {

const char* result_name(VkResult r);

// A zeroed Vulkan info struct with its sType set (partial aggregate initialization would
// trip -Wmissing-field-initializers).
template <typename T>
T make_info(VkStructureType type) {
  T v{};
  v.sType = type;
  return v;
}

// Throws std::runtime_error("[vulkan] <what> failed: VK_ERROR_...") unless r is VK_SUCCESS.
void check(VkResult r, const char* what);

// Environment variables (MLX_VK_*): the value when set and well-formed, else the default.
size_t env_size(const char* name, size_t default_value);
bool env_flag(const char* name, bool default_value);
std::string env_string(const char* name, const std::string& default_value = "");

}  // namespace mlx::core::vulkan
