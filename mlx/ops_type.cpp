// dtype conversion, copies and strided views.
#include "mlx/ops.h"
#include "mlx/primitives.h"
#include "mlx/utils.h"

namespace mlx::core {

array astype(array a, Dtype dtype, StreamOrDevice s) {
  if (a.dtype() == dtype) {
    return a;
  }
  auto shape = a.shape();
  return array(std::move(shape), dtype, std::make_shared<AsType>(to_stream(s), dtype),
               {std::move(a)});
}

array copy(array a, StreamOrDevice s) {
  auto shape = a.shape();
  auto dt = a.dtype();
  return array(std::move(shape), dt, std::make_shared<Copy>(to_stream(s)), {std::move(a)});
}

array contiguous(const array& a, bool allow_col_major, StreamOrDevice s) {
  return array(a.shape(), a.dtype(), std::make_shared<Contiguous>(to_stream(s), allow_col_major),
               {a});
}

array as_strided(array a, Shape shape, Strides strides, size_t offset, StreamOrDevice s) {
  if (shape.size() != strides.size()) {
    throw std::invalid_argument("[as_strided] shape " + shape_to_string(shape) + " and " +
                                std::to_string(strides.size()) +
                                " strides have different lengths.");
  }
  for (auto d : shape) {
    if (d < 0) {
      throw std::invalid_argument("[as_strided] negative dimension in shape " +
                                  shape_to_string(shape) + ".");
    }
  }
  // Every element the view can reach must lie inside the input's elements.
  int64_t lo = static_cast<int64_t>(offset), hi = static_cast<int64_t>(offset);
  bool empty = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    empty |= shape[i] == 0;
    int64_t reach = strides[i] * (shape[i] - 1);
    (reach < 0 ? lo : hi) += reach;
  }
  if (!empty && (lo < 0 || hi >= static_cast<int64_t>(a.size()))) {
    throw std::invalid_argument("[as_strided] the view reaches elements outside the input of size " +
                                std::to_string(a.size()) + ".");
  }
  // The view indexes the input's row-major elements, so it needs a contiguous input.
  auto in = contiguous(a, false, s);
  auto out_shape = shape;
  return array(std::move(out_shape), a.dtype(),
               std::make_shared<AsStrided>(to_stream(s), std::move(shape), std::move(strides),
                                           offset),
               {in});
}

} // namespace mlx::core
