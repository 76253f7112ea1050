// The elementwise geometry on top of the launch layer (kernels.h), shared by every
// elementwise eval_gpu (unary, binary, select, copy): collapse the layout, split launches
// whose bindings would exceed maxStorageBufferRange into chunks along the outermost
// dimension, and plan, bind and record each chunk.
#pragma once

#include <string>
#include <vector>

#include "mlx/array.h"
#include "mlx/backend/vulkan/kernels.h"

namespace mlx::core::vulkan {

// Records `family`/`op` over `inputs` into `out` (row-contiguous over `shape`) on stream
// `stream`. `name` is the primitive, for error messages.
void launch_elementwise(int stream, const char* name, const std::string& family,
                        const std::string& op, const std::vector<View>& inputs, const View& out,
                        const Shape& shape);

// The usual case: inputs already broadcast to out.shape(), out has a row-contiguous buffer.
void launch_elementwise(const char* name, const std::string& family, const std::string& op,
                        const std::vector<array>& inputs, array& out);

// Copies (and converts) `in` into `out`'s row-contiguous buffer with the copy kernel;
// `out` must have data and the same number of elements (its shape may differ: reshape).
void copy_gpu(int stream, const array& in, array& out);

}  // namespace mlx::core::vulkan
