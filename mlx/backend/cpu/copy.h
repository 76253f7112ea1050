// Strided copies with dtype conversion: the CPU building block for astype, copy,
// contiguous, reshape of non-contiguous views, slice_update and concatenate.
#pragma once

#include "mlx/array.h"

namespace mlx::core::cpu {

// Allocates `out` row-contiguous and fills it with `in`'s elements (converted to out.dtype()).
void copy_to_new(const array& in, array& out);

// Copies the elements of `in` (shape = in.shape()) into `out`'s existing buffer at the given
// element offset with the given strides, converting dtype. `out` must already have data.
void copy_into(const array& in, array& out, const Strides& out_strides, int64_t out_offset);

} // namespace mlx::core::cpu
