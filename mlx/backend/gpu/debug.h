// Debug hooks a GPU backend offers to tests: buffer poisoning and guard regions.
#pragma once

#include <cstddef>

namespace mlx::core::gpu::debug {

// While enabled, every new GPU buffer is filled with a poison byte pattern and followed by
// a guard region holding a sentinel, so unwritten elements and out-of-bounds writes show.
void set_poison(bool enabled);
bool poison_enabled();

// Checks the guard regions of all live poisoned buffers; returns how many were overwritten.
// Waits for pending GPU work first.
size_t check_guards();

struct PoisonScope {
  PoisonScope() : previous_(poison_enabled()) { set_poison(true); }
  ~PoisonScope() { set_poison(previous_); }
  PoisonScope(const PoisonScope&) = delete;
  PoisonScope& operator=(const PoisonScope&) = delete;

 private:
  bool previous_;
};

} // namespace mlx::core::gpu::debug
