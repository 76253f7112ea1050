// Small MLX ops composed of others (so they run on either device through their parts'
// kernels): reciprocal, isfinite, isposinf, isneginf, trunc, degrees, radians, logical_xor,
// positive, atleast_1d/2d/3d, flip, diff, kron, count_nonzero, unflatten and
// unstack, with MLX's semantics and messages.
#include <climits>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "mlx/ops.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

bool integral_or_bool(Dtype dt) {
  return issubdtype(dt, integer) || dt == bool_;
}

}  // namespace

array reciprocal(const array& a, StreamOrDevice s) {
  return divide(array(1.0f, at_least_float(a.dtype())), a, s);
}

array isfinite(const array& a, StreamOrDevice s) {
  if (integral_or_bool(a.dtype())) {
    return full(a.shape(), array(true), bool_, s);
  }
  return logical_not(logical_or(isinf(a, s), isnan(a, s), s), s);
}

array isposinf(const array& a, StreamOrDevice s) {
  if (integral_or_bool(a.dtype())) {
    return full(a.shape(), array(false), bool_, s);
  }
  return equal(a, array(std::numeric_limits<float>::infinity(), a.dtype()), s);
}

array isneginf(const array& a, StreamOrDevice s) {
  if (integral_or_bool(a.dtype())) {
    return full(a.shape(), array(false), bool_, s);
  }
  return equal(a, array(-std::numeric_limits<float>::infinity(), a.dtype()), s);
}

array trunc(const array& a, StreamOrDevice s) {
  if (a.dtype() == complex64) {
    throw std::invalid_argument("[trunc] Not supported for complex64.");
  }
  if (integral_or_bool(a.dtype())) {
    return a;
  }
  // Toward zero: ceil below zero, floor above.
  return where(less(a, array(0.0f, a.dtype()), s), ceil(a, s), floor(a, s), s);
}

array degrees(const array& a, StreamOrDevice s) {
  return multiply(a, array(180.0 / M_PI, at_least_float(a.dtype())), s);
}

array radians(const array& a, StreamOrDevice s) {
  return multiply(a, array(M_PI / 180.0, at_least_float(a.dtype())), s);
}

array logical_xor(const array& a, const array& b, StreamOrDevice s) {
  return not_equal(astype(a, bool_, s), astype(b, bool_, s), s);
}

array positive(const array& a, StreamOrDevice) {
  return a;
}

array atleast_1d(const array& a, StreamOrDevice s) {
  return a.ndim() == 0 ? reshape(a, {1}, s) : a;
}

array atleast_2d(const array& a, StreamOrDevice s) {
  if (a.ndim() == 0) {
    return reshape(a, {1, 1}, s);
  }
  return a.ndim() == 1 ? reshape(a, {1, a.shape(0)}, s) : a;
}

array atleast_3d(const array& a, StreamOrDevice s) {
  switch (a.ndim()) {
    case 0:
      return reshape(a, {1, 1, 1}, s);
    case 1:
      return reshape(a, {1, a.shape(0), 1}, s);
    case 2:
      return reshape(a, {a.shape(0), a.shape(1), 1}, s);
    default:
      return a;
  }
}

std::vector<array> atleast_1d(const std::vector<array>& a, StreamOrDevice s) {
  std::vector<array> out;
  for (auto& x : a) {
    out.push_back(atleast_1d(x, s));
  }
  return out;
}

std::vector<array> atleast_2d(const std::vector<array>& a, StreamOrDevice s) {
  std::vector<array> out;
  for (auto& x : a) {
    out.push_back(atleast_2d(x, s));
  }
  return out;
}

std::vector<array> atleast_3d(const std::vector<array>& a, StreamOrDevice s) {
  std::vector<array> out;
  for (auto& x : a) {
    out.push_back(atleast_3d(x, s));
  }
  return out;
}

array flip(const array& a, const std::vector<int>& axes, StreamOrDevice s) {
  int ndim = static_cast<int>(a.ndim());
  // A slice with step -1 along each axis: a view, copied only when needed.
  Shape start(ndim, 0), stop = a.shape(), step(ndim, 1);
  for (int ax : axes) {
    int d = normalize_axis(ax, ndim, "flip");
    start[d] = a.shape(d) - 1;
    stop[d] = -a.shape(d) - 1;
    step[d] = -1;
  }
  return slice(a, start, stop, step, s);
}

array flip(const array& a, int axis, StreamOrDevice s) {
  return flip(a, std::vector<int>{axis}, s);
}

array flip(const array& a, StreamOrDevice s) {
  std::vector<int> all(a.ndim());
  std::iota(all.begin(), all.end(), 0);
  return flip(a, all, s);
}

array diff(const array& a, int n, int axis, StreamOrDevice s) {
  int ndim = static_cast<int>(a.ndim());
  int ax = axis < 0 ? axis + ndim : axis;
  if (ax < 0 || ax >= ndim) {
    throw std::invalid_argument("[diff] Axis is out of bounds for the array.");
  }
  if (n < 0) {
    throw std::invalid_argument("[diff] Order `n` must be non-negative.");
  }
  array x = a;
  for (int i = 0; i < n; ++i) {
    // x[1:] - x[:-1] along the axis.
    Shape from(x.ndim(), 0), upto = x.shape();
    from[ax] = std::min(1, x.shape(ax));
    upto[ax] = std::max(0, x.shape(ax) - 1);
    x = subtract(slice(x, from, x.shape(), s), slice(x, Shape(x.ndim(), 0), upto, s), s);
  }
  return x;
}

array kron(const array& a, const array& b, StreamOrDevice s) {
  if (a.size() == 0 || b.size() == 0) {
    throw std::invalid_argument("[kron] Input arrays cannot be empty.");
  }
  // a's dims at even positions and b's at odd ones of a 2n-d product, then merged pairwise.
  int n = static_cast<int>(std::max(a.ndim(), b.ndim()));
  Shape as(2 * n, 1), bs(2 * n, 1), result(n, 1);
  auto place = [&](const array& x, Shape& into, int parity) {
    int off = n - static_cast<int>(x.ndim());
    for (int j = 0; j < static_cast<int>(x.ndim()); ++j) {
      into[2 * (off + j) + parity] = x.shape(j);
      int64_t v = int64_t{result[off + j]} * x.shape(j);
      if (v > INT_MAX) {
        throw std::invalid_argument("[kron] the result would have a dimension past 2^31 - 1.");
      }
      result[off + j] = static_cast<int>(v);
    }
  };
  place(a, as, 0);
  place(b, bs, 1);
  return reshape(multiply(reshape(a, as, s), reshape(b, bs, s), s), result, s);
}

array count_nonzero(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  auto nonzero = astype(not_equal(a, array(0, a.dtype()), s), int32, s);
  return sum(nonzero, axes, keepdims, s);
}

array count_nonzero(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return count_nonzero(a, std::vector<int>{axis}, keepdims, s);
}

array count_nonzero(const array& a, bool keepdims, StreamOrDevice s) {
  std::vector<int> all(a.ndim());
  std::iota(all.begin(), all.end(), 0);
  return count_nonzero(a, all, keepdims, s);
}

array unflatten(const array& a, int axis, Shape shape, StreamOrDevice s) {
  if (shape.empty()) {
    throw std::invalid_argument("[unflatten] Shape to unflatten to cannot be empty.");
  }
  int ndim = static_cast<int>(a.ndim());
  int ax = axis < 0 ? axis + ndim : axis;
  if (ax < 0 || ax >= ndim) {
    throw std::invalid_argument("[unflatten] Invalid axes " + std::to_string(ax) +
                                " for array with " + std::to_string(ndim) + " dimensions.");
  }
  Shape full_shape(a.shape().begin(), a.shape().begin() + ax);
  full_shape.insert(full_shape.end(), shape.begin(), shape.end());
  full_shape.insert(full_shape.end(), a.shape().begin() + ax + 1, a.shape().end());
  // reshape infers a -1 and reports a size that does not divide.
  return reshape(a, full_shape, s);
}

std::vector<array> unstack(const array& a, int axis, StreamOrDevice s) {
  if (a.ndim() == 0) {
    throw std::invalid_argument("[unstack] No axis to unstack on a 0-d array.");
  }
  int ax = normalize_axis(axis, static_cast<int>(a.ndim()), "unstack");
  std::vector<array> out;
  for (int i = 0; i < a.shape(ax); ++i) {
    Shape start(a.ndim(), 0), stop = a.shape();
    start[ax] = i;
    stop[ax] = i + 1;
    out.push_back(squeeze(slice(a, start, stop, s), ax, s));
  }
  return out;
}

std::vector<array> unstack(const array& a, StreamOrDevice s) {
  return unstack(a, 0, s);
}

}  // namespace mlx::core
