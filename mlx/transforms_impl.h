// Internals shared by the eval loop, transforms and backends (as MLX's transforms_impl.h).
#pragma once

#include <cstdint>

namespace mlx::core::detail {

// True while a transform (compile, grad, ...) traces a function; is_tracer() is only
// true then, so arrays evaluated outside any transform are always detached.
bool in_tracing();
struct InTracing {
  InTracing();
  ~InTracing();
  InTracing(const InTracing&) = delete;
  InTracing& operator=(const InTracing&) = delete;
};

// Completion tickets of a GPU stream, so an array evaluated there knows it is available
// once any later synchronize of its stream has finished (not only the outputs waited on).
// sync_ticket() is read when the array is recorded; a backend's synchronize brackets its
// wait with begin_sync() / end_sync().
uint64_t sync_ticket(int stream);
uint64_t begin_sync(int stream);
void end_sync(int stream, uint64_t ticket);
bool synced_since(int stream, uint64_t ticket);

}  // namespace mlx::core::detail
