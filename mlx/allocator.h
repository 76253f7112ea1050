// Memory for array data. A backend owns the allocator; Buffer::raw_ptr() is how the CPU
// reads any buffer, wherever it lives.
#pragma once

#include <cstddef>

namespace mlx::core::allocator {

class Buffer {
 public:
  explicit Buffer(void* handle) : handle_(handle) {}

  // A CPU pointer to the start of the buffer's bytes (may map or stage device memory).
  void* raw_ptr();

  // The backend's opaque handle (for the CPU backend, the bytes themselves).
  void* ptr() const {
    return handle_;
  }
  void*& ptr() {
    return handle_;
  }

 private:
  void* handle_;
};

class Allocator {
 public:
  virtual Buffer malloc(size_t size) = 0;
  // A buffer the host fills right away (an array made from host values): a GPU backend may
  // place a small one where the host writes it in place and the GPU reads it without a copy.
  virtual Buffer malloc_host_written(size_t size) {
    return malloc(size);
  }
  virtual void free(Buffer buffer) = 0;
  virtual size_t size(Buffer buffer) const = 0;
  virtual ~Allocator() = default;
};

Allocator& allocator();

// Throws std::runtime_error when the allocation cannot be satisfied.
Buffer malloc(size_t size);
Buffer malloc_host_written(size_t size);
void free(Buffer buffer);

}  // namespace mlx::core::allocator

// The statistics and limits (get_active_memory, ...) are in mlx/memory.h, as in MLX.
#include "mlx/memory.h"
