// Waiting for a fence: polling first where that pays, then blocking.
#include "mlx/backend/vulkan/fence_wait.h"

#include <chrono>
#include <thread>

#include "mlx/backend/vulkan/utils.h"

namespace mlx::core::vulkan {

namespace {

// How long a wait polls its fence before it blocks (MLX_VK_SPIN_US). On an NVIDIA H100 a
// blocking vkWaitForFences returned ~60 us after the work ended, a cost every synchronous
// eval paid (batches of ten 256 MiB copies: 186-190 us per copy blocking, 182 polling,
// PyTorch 181 on the same machine). Polling holds a CPU core while it lasts, so discrete
// GPUs poll for up to 20 ms, past which the wake-up is under 0.3% of the wait; integrated
// GPUs share the CPU's power and CPU devices (lavapipe) its cores, so they block at once.
size_t spin_budget_us(const Device& d) {
  static const size_t us = env_size("MLX_VK_SPIN_US", d.is_discrete() ? 20000 : 0);
  return us;
}

}  // namespace

void wait_fence(const Device& dev, VkFence f) {
  VkDevice d = dev.handle();
  if (size_t spin = spin_budget_us(dev)) {
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin);
    do {
      VkResult r = vkGetFenceStatus(d, f);
      if (r == VK_SUCCESS) {
        return;
      }
      if (r != VK_NOT_READY) {
        check(r, "vkGetFenceStatus");
      }
      std::this_thread::yield();
    } while (std::chrono::steady_clock::now() < until);
  }
  // Bounded waits in a loop: a lost device reports an error instead of hanging forever.
  while (true) {
    VkResult r = vkWaitForFences(d, 1, &f, VK_TRUE, 1'000'000'000ull);
    if (r == VK_SUCCESS) {
      return;
    }
    if (r != VK_TIMEOUT) {
      check(r, "vkWaitForFences");
    }
  }
}

}  // namespace mlx::core::vulkan
