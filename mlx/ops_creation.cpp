// Array creation: full, zeros, ones, arange, eye.
#include <cmath>
#include <limits>

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
  auto value = broadcast_to(astype(std::move(vals), dtype, s), shape, s);
  return array(std::move(shape), dtype, std::make_shared<Full>(to_stream(s)), {value});
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

array arange(double start, double stop, double step, Dtype dtype, StreamOrDevice s) {
  if (dtype == bool_) {
    throw std::invalid_argument("[arange] bool is not supported for arange.");
  }
  if (std::isnan(start) || std::isnan(stop) || std::isnan(step)) {
    throw std::invalid_argument("[arange] start, stop and step must not be NaN.");
  }
  if (std::isinf(start) || std::isinf(stop)) {
    throw std::invalid_argument("[arange] start and stop must be finite.");
  }
  if (step == 0) {
    throw std::invalid_argument("[arange] step must be nonzero.");
  }
  double real_size;
  if (std::isinf(step)) {
    // An infinite step reaches past stop at once: one element if the range is non-empty.
    real_size = (step > 0 ? start < stop : start > stop) ? 1 : 0;
    step = 0;
  } else {
    real_size = std::ceil((stop - start) / step);
  }
  if (real_size > static_cast<double>(std::numeric_limits<ShapeElem>::max())) {
    throw std::invalid_argument("[arange] the range [" + std::to_string(start) + ", " +
                                std::to_string(stop) + ") with step " + std::to_string(step) +
                                " has too many elements.");
  }
  auto size = static_cast<ShapeElem>(std::max(real_size, 0.0));
  return array({size}, dtype, std::make_shared<Arange>(to_stream(s), start, stop, step), {});
}

array arange(double start, double stop, double step, StreamOrDevice s) {
  return arange(start, stop, step, float32, s);
}

array arange(double start, double stop, Dtype dtype, StreamOrDevice s) {
  return arange(start, stop, 1.0, dtype, s);
}

array arange(double start, double stop, StreamOrDevice s) {
  return arange(start, stop, 1.0, float32, s);
}

array arange(double stop, Dtype dtype, StreamOrDevice s) {
  return arange(0.0, stop, 1.0, dtype, s);
}

array arange(double stop, StreamOrDevice s) {
  return arange(0.0, stop, 1.0, float32, s);
}

array arange(int start, int stop, int step, StreamOrDevice s) {
  return arange(static_cast<double>(start), static_cast<double>(stop), static_cast<double>(step),
                int32, s);
}

array arange(int start, int stop, StreamOrDevice s) {
  return arange(start, stop, 1, s);
}

array arange(int stop, StreamOrDevice s) {
  return arange(0, stop, 1, s);
}

array eye(int n, int m, int k, Dtype dtype, StreamOrDevice s) {
  if (n < 0 || m < 0) {
    throw std::invalid_argument("[eye] n and m must be non-negative, got n = " + std::to_string(n) +
                                " and m = " + std::to_string(m) + ".");
  }
  if (static_cast<int64_t>(n) * m > std::numeric_limits<ShapeElem>::max()) {
    throw std::invalid_argument("[eye] an (" + std::to_string(n) + ", " + std::to_string(m) +
                                ") matrix has too many elements.");
  }
  // Row r holds its one at column r + k. In the flattened matrix those ones sit every
  // m + 1 elements, so the diagonal is one strided slice_update of a zero vector.
  int64_t first_row = std::max<int64_t>(0, -int64_t{k});
  int64_t end_row = std::min<int64_t>(n, int64_t{m} - k);
  int64_t count = end_row - first_row;
  if (count <= 0) {
    return zeros({n, m}, dtype, s);
  }
  int64_t step = count == 1 ? 1 : int64_t{m} + 1;
  int64_t start = first_row * (int64_t{m} + 1) + k;
  int64_t stop = start + (count - 1) * step + 1;
  auto flat =
      slice_update(zeros({checked_dim(int64_t{n} * m, "eye")}, dtype, s),
                   ones({static_cast<ShapeElem>(count)}, dtype, s), {static_cast<ShapeElem>(start)},
                   {static_cast<ShapeElem>(stop)}, {static_cast<ShapeElem>(step)}, s);
  return reshape(flat, {n, m}, s);
}

array identity(int n, Dtype dtype, StreamOrDevice s) {
  return eye(n, n, 0, dtype, s);
}

}  // namespace mlx::core
