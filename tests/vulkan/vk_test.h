// Shared helpers of the Vulkan backend tests.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "mlx/backend/gpu/available.h"
#include "mlx/backend/gpu/debug.h"
#include "mlx/backend/gpu/device_info.h"
#include "test_utils.h"

namespace vk_test {

namespace mx = mlx::core;

// The "vulkan_no_device" ctest runs with no Vulkan driver and sets this.
inline bool expect_no_device() {
  const char* v = std::getenv("MLX_VK_EXPECT_NO_DEVICE");
  return v && std::string(v) == "1";
}

// Tests that need a device return early without one (the no-device run checks the rest).
#define VK_REQUIRE_DEVICE()            \
  do {                                 \
    if (vk_test::expect_no_device()) { \
      return;                          \
    }                                  \
    REQUIRE(mx::gpu::is_available());  \
  } while (0)

inline std::string info_string(const char* key) {
  return std::get<std::string>(mx::gpu::device_info(0).at(key));
}
inline size_t info_size(const char* key) {
  return std::get<size_t>(mx::gpu::device_info(0).at(key));
}

}  // namespace vk_test
