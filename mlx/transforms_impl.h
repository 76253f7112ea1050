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

}  // namespace mlx::core::detail
