// Backend-neutral description of the GPU devices a backend sees.
#pragma once

#include <string>
#include <unordered_map>
#include <variant>

namespace mlx::core::gpu {

// Whether this build has a usable GPU (MLX declares it here since 0.30.4).
bool is_available();
int device_count();

// Keys include at least "device_name", "vendor", "driver", "memory_size" (bytes) and
// "subgroup_size"; a backend adds its feature flags. Throws for an index out of range.
using DeviceInfoValue = std::variant<std::string, size_t>;
const std::unordered_map<std::string, DeviceInfoValue>& device_info(int device_index = 0);

}  // namespace mlx::core::gpu
