// Host waits for submitted work (command_encoder.cpp).
#pragma once

#include "mlx/backend/vulkan/device.h"

namespace mlx::core::vulkan {

// Returns once `f` is signaled: polls it for up to MLX_VK_SPIN_US microseconds (default
// 20000 on a discrete GPU, 0 elsewhere), then blocks in bounded waits, so a lost device
// reports an error instead of hanging.
void wait_fence(const Device& d, VkFence f);

}  // namespace mlx::core::vulkan
