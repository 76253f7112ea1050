// View primitives share their input's buffer; these set up the output's strides and
// offset. Both the CPU and GPU backends call them, since no data moves.
#pragma once

#include "mlx/array.h"

namespace mlx::core {

void broadcast_view(const array& in, array& out);

// Makes `out` a view of `in` with out's shape when the strides allow it (always for
// row-contiguous inputs). Returns false when the reshape needs a copy.
bool reshape_view(const array& in, array& out);

} // namespace mlx::core
