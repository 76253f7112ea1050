// A row-contiguous copy of any strided view, whatever its span. The copy kernel reads one
// binding (maxStorageBufferRange) per launch and launch_elementwise cuts a copy along its
// first dim only, so a view whose single first-dim slice spans more than a binding (a
// transposed matrix larger than a binding: every output row reads all of it) cannot go
// through it directly. copy_dense stages such views: blocks of whole output slabs are first
// gathered in memory order (their reads are then close together) into a buffer of one
// binding, then copied from there into place.
#pragma once

#include "mlx/array.h"
#include "mlx/backend/vulkan/kernels.h"

namespace mlx::core::vulkan {

// Copies (and converts) `src` over `shape` into `dst`, row-contiguous over `shape` (its
// strides are ignored), on stream `stream`. Views that fit take exactly the launches
// launch_elementwise would.
void copy_dense(int stream, const View& src, const Shape& shape, const View& dst);

}  // namespace mlx::core::vulkan
