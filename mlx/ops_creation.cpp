// Array creation: full, zeros, ones, arange, eye, linspace, tri, tril, triu.
#include <algorithm>
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

namespace {

// The (n, m) bool mask column <= row + k (MLX's tri: arange(n)[:, None] >= arange(-k, m - k)),
// or with `diagonal` column == row + k. k is clamped to [-n, m], which changes no element
// and keeps m - k within int32. Arange, comparison: GPU kernels on a GPU stream.
array tri_mask(int n, int m, int64_t k, const char* op, StreamOrDevice s, bool diagonal = false) {
  if (n < 0 || m < 0) {
    throw std::invalid_argument(std::string("[") + op + "] n and m must be non-negative, got n = " +
                                std::to_string(n) + " and m = " + std::to_string(m) + ".");
  }
  k = std::clamp<int64_t>(k, -int64_t{n}, int64_t{m});
  auto rows = expand_dims(arange(0.0, static_cast<double>(n), 1.0, int32, s), 1, s);
  auto cols =
      expand_dims(arange(static_cast<double>(-k), static_cast<double>(m - k), 1.0, int32, s), 0, s);
  return diagonal ? equal(rows, cols, s) : greater_equal(rows, cols, s);
}

void check_matrix(const array& x, const char* op) {
  if (x.ndim() < 2) {
    throw std::invalid_argument(std::string("[") + op +
                                "] the array must have at least 2 dimensions, got shape " +
                                shape_to_string(x.shape()) + ".");
  }
}

}  // namespace

// Ones where column == row + k: the comparison of two aranges, as tri (MLX scatters ones
// into zeros; the values are the same).
array eye(int n, int m, int k, Dtype dtype, StreamOrDevice s) {
  return astype(tri_mask(n, m, k, "eye", s, /* diagonal */ true), dtype, s);
}

array identity(int n, Dtype dtype, StreamOrDevice s) {
  return eye(n, n, 0, dtype, s);
}

// As MLX: t = arange(num) / (num - 1) (or / num without the endpoint), then
// (1 - t) * start + t * stop in float32 (float64 for a float64 result), cast to dtype. So
// the first value is start and, with the endpoint, the last is stop exactly.
array linspace(double start, double stop, int num, bool endpoint, Dtype dtype, StreamOrDevice s) {
  if (num < 0) {
    throw std::invalid_argument("[linspace] the number of samples must be non-negative, got " +
                                std::to_string(num) + ".");
  }
  if (num == 1) {
    return full({1}, start, dtype, s);
  }
  Dtype inner = dtype == float64 ? float64 : float32;
  int denominator = endpoint ? num - 1 : num;
  auto t =
      divide(arange(0.0, static_cast<double>(num), 1.0, inner, s), array(denominator, inner), s);
  auto t_bar = subtract(array(1, inner), t, s);
  return astype(add(multiply(t_bar, array(start, inner), s), multiply(t, array(stop, inner), s), s),
                dtype, s);
}

array tri(int n, int m, int k, Dtype type, StreamOrDevice s) {
  return astype(tri_mask(n, m, k, "tri", s), type, s);
}

array tril(array x, int k, StreamOrDevice s) {
  check_matrix(x, "tril");
  auto mask = tri_mask(x.shape(-2), x.shape(-1), k, "tril", s);
  return where(mask, x, array(0, x.dtype()), s);
}

array triu(array x, int k, StreamOrDevice s) {
  check_matrix(x, "triu");
  auto mask = tri_mask(x.shape(-2), x.shape(-1), int64_t{k} - 1, "triu", s);
  return where(mask, array(0, x.dtype()), x, s);
}

}  // namespace mlx::core
