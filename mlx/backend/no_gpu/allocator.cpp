#include <atomic>

#include "mlx/backend/common/cpu_allocator.h"

namespace mlx::core {

namespace allocator {

namespace {
CpuAllocator& cpu_allocator() {
  static CpuAllocator a;
  return a;
}
}  // namespace

void* Buffer::raw_ptr() {
  return handle_;
}

Allocator& allocator() {
  return cpu_allocator();
}

Buffer malloc(size_t size) {
  return cpu_allocator().malloc(size);
}

Buffer malloc_host_written(size_t size) {
  return cpu_allocator().malloc(size);
}

void free(Buffer buffer) {
  cpu_allocator().free(buffer);
}

}  // namespace allocator

size_t get_active_memory() {
  return allocator::cpu_allocator().active_memory();
}
size_t get_peak_memory() {
  return allocator::cpu_allocator().peak_memory();
}
void reset_peak_memory() {
  allocator::cpu_allocator().reset_peak();
}
size_t get_cache_memory() {
  return 0;  // freed host memory goes straight back to the C library
}
size_t set_memory_limit(size_t limit) {
  return allocator::cpu_allocator().set_memory_limit(limit);
}
size_t get_memory_limit() {
  return allocator::cpu_allocator().memory_limit();
}
size_t set_wired_limit(size_t limit) {
  static std::atomic<size_t> wired{0};
  return wired.exchange(limit);
}
size_t set_cache_limit(size_t) {
  return 0;
}
void clear_cache() {}

}  // namespace mlx::core
