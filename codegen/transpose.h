// The tiled transpose copy (internal to codegen; elementwise.h is the public entry point):
// copies whose input is contiguous along the output's second-to-last dim go through a
// shared-memory tile, so both the reads and the writes are coalesced.
#pragma once

#include <string>

#include "codegen/codegen.h"
#include "codegen/elementwise.h"
#include "codegen/geometry.h"

namespace mlx::core::vulkan::codegen {

// Whether a normalized one-input copy is a transpose the tiled kernel takes: rank 2 or 3
// (an outer batch dim), input stride 1 along dim rank-2 and neither 0 nor 1 along the
// last dim, both tile-facing extents at least 8, and group counts within device minimums.
bool is_transpose(const Normalized& n);

// "transpose:idx=32|64,in=<dtype>,out=<dtype>", with ",pairs=1" where one 16-bit dtype
// can move two elements a word (even extents, offsets and strides).
KernelKey transpose_key(const std::string& in_dtype, const std::string& out_dtype,
                        const Normalized& n);

// Push constants (rows, cols, in offset, out offset, column stride, batch stride) and
// groups (column tiles, row tiles, batch). Throws std::invalid_argument when the geometry
// is not a transpose of the key's index width.
Launch transpose_launch(const KernelKey& key, const KernelSource& source, const Normalized& n);

}  // namespace mlx::core::vulkan::codegen
