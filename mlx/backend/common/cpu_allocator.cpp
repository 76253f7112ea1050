#include "mlx/backend/common/cpu_allocator.h"

#include <cstddef>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

namespace mlx::core::allocator {

// Each block stores its size in a header so size() and the statistics need no map.
namespace {
constexpr size_t header_bytes = 64;  // keeps the payload 64-byte aligned
}

Buffer CpuAllocator::malloc(size_t size) {
  // The rounding below would wrap a size near SIZE_MAX to a small block.
  if (size > static_cast<size_t>(std::numeric_limits<std::ptrdiff_t>::max()) - 2 * header_bytes) {
    throw std::runtime_error("[malloc] unable to allocate " + std::to_string(size) +
                             " bytes: larger than the address space allows.");
  }
  {
    std::lock_guard lk(mtx_);
    if (limit_ && active_ + size > limit_) {
      throw std::runtime_error("[malloc] allocating " + std::to_string(size) +
                               " bytes would exceed the memory limit of " + std::to_string(limit_) +
                               " bytes.");
    }
  }
  void* raw = std::aligned_alloc(header_bytes, header_bytes + ((size + 63) / 64) * 64);
  if (!raw) {
    throw std::runtime_error("[malloc] unable to allocate " + std::to_string(size) + " bytes.");
  }
  *static_cast<size_t*>(raw) = size;
  std::lock_guard lk(mtx_);
  active_ += size;
  peak_ = std::max(peak_, active_);
  return Buffer(static_cast<char*>(raw) + header_bytes);
}

void CpuAllocator::free(Buffer buffer) {
  if (!buffer.ptr()) {
    return;
  }
  char* raw = static_cast<char*>(buffer.ptr()) - header_bytes;
  size_t size = *reinterpret_cast<size_t*>(raw);
  std::free(raw);
  std::lock_guard lk(mtx_);
  active_ -= size;
}

size_t CpuAllocator::size(Buffer buffer) const {
  if (!buffer.ptr()) {
    return 0;
  }
  return *reinterpret_cast<size_t*>(static_cast<char*>(buffer.ptr()) - header_bytes);
}

size_t CpuAllocator::set_memory_limit(size_t limit) {
  std::lock_guard lk(mtx_);
  return std::exchange(limit_, limit);
}

}  // namespace mlx::core::allocator
