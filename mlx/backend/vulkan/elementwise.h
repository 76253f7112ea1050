// The shared path of every elementwise eval_gpu (unary, binary, select, copy): collapse the
// layout, bind each array at an aligned offset, ask codegen for the key and launch numbers,
// and dispatch; launches whose bindings would exceed maxStorageBufferRange are split into
// chunks along the outermost dimension.
#pragma once

#include <string>
#include <vector>

#include "mlx/array.h"

namespace mlx::core::vulkan {

// The dtype's name in kernel keys ("f32", "bf16", "b", ...), or nullptr when kernels on
// this device cannot hold it (float64 and complex64 always; 8/16/64-bit types when the
// device lacks the storage or int64 feature).
const char* gpu_dtype_name(Dtype dt);
bool gpu_supports(Dtype dt);
bool gpu_supports(const std::vector<array>& arrays);

// Gives `out` a row-contiguous buffer: an input's buffer when donation is safe (the input
// is row-contiguous, dense, the same item size, and nothing else holds it), else new memory.
void allocate_or_donate(const std::vector<array>& inputs, array& out, bool allow_donation);

// A strided view of a buffer: the operand of one elementwise launch.
struct View {
  allocator::Buffer buffer{nullptr};
  int64_t offset = 0;  // bytes from the buffer's start to element 0
  Dtype dtype = float32;
  Strides strides;  // elements, one per dim of the launch shape
};
View view_of(const array& a);

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
