// CPU indexing steps other CPU kernels reuse (mlx/backend/cpu/indexing.cpp).
#pragma once

#include <vector>

#include "mlx/array.h"

namespace mlx::core::cpu {

// slice_update's CPU step: out = src (its buffer when nothing else holds src: pass the
// primitive's own input, not a copy of the handle) with `update` written at `start`
// (clamped so it fits) along `axes`.
void slice_update_into(const array& src, const array& update, const array& start,
                       const std::vector<int>& axes, array& out);

}  // namespace mlx::core::cpu
