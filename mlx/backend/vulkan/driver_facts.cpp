#include "mlx/backend/vulkan/driver_facts.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace mlx::core::vulkan {

namespace {

// `fallback`, unless environment variable `name` is `on` (true) or `off` (false); any
// other value is reported and ignored.
bool env_choice(const char* name, const char* on, const char* off, bool fallback) {
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') {
    return fallback;
  }
  std::string v = env;
  if (v == on || v == off) {
    return v == on;
  }
  std::fprintf(stderr, "[vulkan] %s=%s is not %s or %s; ignored.\n", name, env, on, off);
  return fallback;
}

}  // namespace

// Verified exact by the f16 boundary test in tests/gpu_diff/test_select_copy.cpp: NVIDIA's
// (H200, driver 580) and lavapipe's (Mesa 22.3). Others keep the exact software routines
// until the test has run on them.
bool f16_hardware_conversions(VkDriverId id) {
  return env_choice("MLX_VK_F16_CONVERT", "hw", "exact",
                    id == VK_DRIVER_ID_NVIDIA_PROPRIETARY || id == VK_DRIVER_ID_MESA_LLVMPIPE);
}

// Verified by the division test in tests/gpu_diff/test_binary.cpp (m_div_fma gives the
// CPU's bits): NVIDIA's (H200, driver 580). Lavapipe's (Mesa 22.3) is not one rounding: the
// test failed on 11% of quotients there.
bool fused_fma(VkDriverId id) {
  return env_choice("MLX_VK_FMA", "fused", "unfused", id == VK_DRIVER_ID_NVIDIA_PROPRIETARY);
}

// Read back on an H100 (driver 580, NV and KHR paths) and verified by the attention prefill
// tests in tests/gpu_diff/test_attention.cpp; the kernel also checks it at run time and
// gives NaN where it does not hold (templates/include/sdpa_coop.glsl).
bool nv_accumulator_layout(VkDriverId id) {
  return env_choice("MLX_VK_COOP_LAYOUT", "nv", "opaque", id == VK_DRIVER_ID_NVIDIA_PROPRIETARY);
}

}  // namespace mlx::core::vulkan
