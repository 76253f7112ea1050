// A malloc-backed allocator with MLX's memory statistics. Used by the no-GPU build, and by a
// GPU backend for host-only buffers.
#pragma once

#include <algorithm>
#include <mutex>
#include <utility>

#include "mlx/allocator.h"

namespace mlx::core::allocator {

class CpuAllocator : public Allocator {
 public:
  Buffer malloc(size_t size) override;
  void free(Buffer buffer) override;
  size_t size(Buffer buffer) const override;

  size_t active_memory() const {
    return active_;
  }
  size_t peak_memory() const {
    return peak_;
  }
  void reset_peak() {
    peak_ = active_;
  }
  size_t set_memory_limit(size_t limit);
  size_t memory_limit() const {
    return limit_;
  }

 private:
  mutable std::mutex mtx_;
  size_t active_ = 0;
  size_t peak_ = 0;
  size_t limit_ = 0;  // 0: no limit
};

}  // namespace mlx::core::allocator
