// Memory statistics and limits of the active allocator, in bytes: MLX's mlx/memory.h.
#pragma once

#include <cstddef>

namespace mlx::core {

size_t get_active_memory();
// The most memory in use since the start or the last reset_peak_memory().
size_t get_peak_memory();
void reset_peak_memory();
// Freed buffers kept for reuse (the CPU allocator keeps none).
size_t get_cache_memory();
// Each set_* returns the previous limit. An allocation past the memory limit throws.
size_t set_memory_limit(size_t limit);
size_t get_memory_limit();
// 0 disables the cache: freed buffers go back to the driver at once.
size_t set_cache_limit(size_t limit);
void clear_cache();
// Wired (resident) memory is a Metal notion: accepted and remembered, without effect here.
size_t set_wired_limit(size_t limit);

}  // namespace mlx::core
