// The GPU debug hooks (poison and guard regions) on the Vulkan allocator.
#include "mlx/backend/gpu/debug.h"

#include "mlx/backend/vulkan/allocator.h"

namespace mlx::core::gpu::debug {

void set_poison(bool enabled) {
  if (auto* a = vulkan::vulkan_allocator()) {
    a->set_poison(enabled);
  }
}

bool poison_enabled() {
  auto* a = vulkan::vulkan_allocator();
  return a && a->poison_enabled();
}

size_t check_guards() {
  auto* a = vulkan::vulkan_allocator();
  return a ? a->check_guards() : 0;
}

}  // namespace mlx::core::gpu::debug
