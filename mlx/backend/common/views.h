// View primitives share their input's buffer; these set up the output's strides and
// offset. Both the CPU and GPU backends call them, since no data moves.
#pragma once

#include <vector>

#include "mlx/array.h"

namespace mlx::core {

void broadcast_view(const array& in, array& out);

// Makes `out` a view of `in` with out's shape when the strides allow it (always for
// row-contiguous inputs). Returns false when the reshape needs a copy.
bool reshape_view(const array& in, array& out);

// out.shape(i) == in.shape(axes[i]); axes is a validated permutation.
void transpose_view(const array& in, array& out, const std::vector<int>& axes);

// `start` and `steps` are normalized (see the Slice primitive). A negative step gives a
// negative stride, and element 0 of the view sits at `start`, above the lower elements it
// reaches; data_size then counts the span from the lowest to the highest element.
void slice_view(const array& in, array& out, const Shape& start, const Shape& steps);

// A view of `in` (row-contiguous) with arbitrary strides, starting `offset` elements in.
void as_strided_view(const array& in, array& out, const Strides& strides, int64_t offset);

// Columns [col, col + heads * d) of `stacked` ([B, 1, N], evaluated) viewed as the rows of
// heads [B, heads, 1, d]: a stacked q/k/v product's part, as a slice and a reshape would give
// it (fast::DecodeAttention's stacked inputs).
array stacked_rows_view(const array& stacked, int col, int heads, int d);

}  // namespace mlx::core
