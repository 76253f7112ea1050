// Shared by the row-kernel families (reduce, arg_reduce, softmax): dense runs of elements
// in an allocation, batch-lifetime temporaries, per-binding element limits and the copy
// that moves chosen axes last.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/reduce.h"
#include "mlx/array.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/device.h"
#include "mlx/backend/vulkan/kernels.h"

namespace mlx::core::vulkan {

// A dense run of elements in an allocation: element 0 at byte `offset`.
struct Buf {
  Allocation* alloc = nullptr;
  int64_t offset = 0;
  std::string dtype;  // key name ("f32", ...)
  int64_t itemsize = 4;
  Buf at(int64_t elems) const {
    return {alloc, offset + elems * itemsize, dtype, itemsize};
  }
};

// Bytes of one element of a key dtype name ("f32", "bf16", "u8", ...).
int64_t itemsize_of(const std::string& dtype);

// The array's data as a Buf (element 0 at its offset); dtype is the key name.
Buf buf_of(const array& a, const char* dtype);

// `elems` elements of `dtype`, freed when the stream's open batch completes.
Buf temporary(CommandEncoder& enc, int64_t elems, const std::string& dtype);

// Elements of `itemsize` bytes one binding can hold once aligned.
int64_t binding_elems(const Device& dev, int64_t itemsize);

// Whether `in`'s whole span fits one binding. Wider views still copy (copy_dense stages
// them), so the row-kernel families use this only to pick a cheaper plan; ops that bind a
// whole operand at once (sort, random, quantized) still route wider ones to the CPU.
bool copy_fits(const array& in);

// Copies `in` into a row-contiguous temporary with `axes` (sorted, normalized) moved last,
// in their order; the other axes keep theirs. Any view, whatever its span (copy_dense).
Buf axes_last(CommandEncoder& enc, int stream, const array& in, const std::vector<int>& axes,
              const char* dtype);

// The array as a dense run: in place when row-contiguous, else a row-contiguous copy.
Buf dense_run(CommandEncoder& enc, int stream, const array& a, const char* dtype);

// Whether every input is row-contiguous or its whole span fits one binding (copy_fits).
bool copies_fit(const std::vector<array>& inputs);

// Binds `elems` elements of a run (at least one) for a launch.
BoundOperand bind_run(const Device& dev, const Buf& b, int64_t elems, bool output);

// The launch-memo signature of a reduce or arg_reduce launch: the family, the op, the
// dtypes' key names, the stage (arg_reduce's split/finish) and every field of the geometry.
using ReduceSignature = std::array<int64_t, 13>;
ReduceSignature reduce_signature(const char* family, const std::string& op,
                                 const std::string& in_dtype, const std::string& out_dtype,
                                 int64_t stage, const codegen::ReduceGeometry& g);

// Why a float-only kernel (norms, softmax, rope) cannot produce `out` on the GPU, or
// nullptr when it can.
const char* float_kernel_unsupported(const array& out);

}  // namespace mlx::core::vulkan
