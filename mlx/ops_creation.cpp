// Array creation: full, zeros, ones, arange, eye.
#include "mlx/ops.h"
#include "mlx/primitives.h"
#include "mlx/utils.h"

namespace mlx::core {

array full(Shape shape, array vals, Dtype dtype, StreamOrDevice s) {
  for (auto d : shape) {
    if (d < 0) {
      throw std::invalid_argument("[full] negative dimension in shape " + shape_to_string(shape) +
                                  ".");
    }
  }
  return broadcast_to(astype(std::move(vals), dtype, s), shape, s);
}

array full(Shape shape, array vals, StreamOrDevice s) {
  auto dt = vals.dtype();
  return full(std::move(shape), std::move(vals), dt, s);
}

array zeros(const Shape& shape, Dtype dtype, StreamOrDevice s) {
  return full(shape, array(0, dtype), s);
}

array zeros_like(const array& a, StreamOrDevice s) {
  return zeros(a.shape(), a.dtype(), s);
}

array ones(const Shape& shape, Dtype dtype, StreamOrDevice s) {
  return full(shape, array(1, dtype), s);
}

array ones_like(const array& a, StreamOrDevice s) {
  return ones(a.shape(), a.dtype(), s);
}

} // namespace mlx::core
