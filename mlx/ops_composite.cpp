// Ops that MLX code uses and that are compositions of other ops: clip, stop_gradient,
// pad, roll, diagonal and diag. Being compositions, they run on any device that runs
// their parts.
#include <stdexcept>

#include "mlx/ops.h"
#include "mlx/utils.h"

namespace mlx::core {

array clip(const array& a, const std::optional<array>& a_min, const std::optional<array>& a_max,
           StreamOrDevice s) {
  if (!a_min && !a_max) {
    throw std::invalid_argument("[clip] at most one of a_min and a_max may be None.");
  }
  array out = a;
  if (a_min) {
    out = maximum(out, *a_min, s);
  }
  if (a_max) {
    out = minimum(out, *a_max, s);
  }
  return out;
}

array stop_gradient(const array& a, StreamOrDevice) {
  // There is no autodiff here yet, so the value passes through unchanged.
  return a;
}

namespace {

// The `n` elements of `a` along `axis` starting at `start`, stepping by `step`.
array axis_slice(const array& a, int axis, int start, int stop, int step, StreamOrDevice s) {
  Shape lo(a.ndim(), 0), hi = a.shape(), st(a.ndim(), 1);
  lo[axis] = start;
  hi[axis] = stop;
  st[axis] = step;
  return slice(a, lo, hi, st, s);
}

// The padding placed before (low) or after (high) `x` along `axis`, of width `w`.
array pad_block(const array& x, int axis, int w, bool low, const array& value,
                const std::string& mode, StreamOrDevice s) {
  int n = x.shape(axis);
  Shape shape = x.shape();
  shape[axis] = w;
  if (mode == "constant") {
    return full(shape, astype(value, x.dtype(), s), s);
  }
  if (n == 0) {
    throw std::invalid_argument("[pad] cannot pad an empty axis in mode '" + mode + "'.");
  }
  if (mode == "edge") {
    auto edge = low ? axis_slice(x, axis, 0, 1, 1, s) : axis_slice(x, axis, n - 1, n, 1, s);
    return broadcast_to(edge, shape, s);
  }
  // reflect mirrors around the edge element, symmetric includes it.
  bool reflect = mode == "reflect";
  int limit = reflect ? n - 1 : n;
  if (w > limit) {
    throw std::invalid_argument("[pad] a pad width of " + std::to_string(w) + " in mode '" + mode +
                                "' needs an axis of at least " +
                                std::to_string(reflect ? w + 1 : w) + " elements, got " +
                                std::to_string(n) + ".");
  }
  // Walk back w elements from `first`; a stop before index 0 is written as -(n + 1),
  // since slice reads a stop of -1 as "the last element".
  int first = low ? (reflect ? w : w - 1) : (reflect ? n - 2 : n - 1);
  int stop = first - w >= 0 ? first - w : -(n + 1);
  return axis_slice(x, axis, first, stop, -1, s);
}

}  // namespace

array pad(const array& a, const std::vector<int>& axes, const Shape& low_pad_size,
          const Shape& high_pad_size, const array& pad_value, const std::string& mode,
          StreamOrDevice s) {
  if (axes.size() != low_pad_size.size() || axes.size() != high_pad_size.size()) {
    throw std::invalid_argument(
        "[pad] axes, low_pad_size and high_pad_size must have the "
        "same length.");
  }
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "symmetric") {
    throw std::invalid_argument("[pad] invalid padding mode '" + mode +
                                "' (expected constant, edge, reflect or symmetric).");
  }
  if (pad_value.size() != 1) {
    throw std::invalid_argument("[pad] the pad value must be a scalar.");
  }
  int ndim = static_cast<int>(a.ndim());
  array out = a;
  for (size_t i = 0; i < axes.size(); ++i) {
    int ax = normalize_axis(axes[i], ndim, "pad");
    if (low_pad_size[i] < 0 || high_pad_size[i] < 0) {
      throw std::invalid_argument(
          "[pad] pad sizes must be non-negative, got (" + std::to_string(low_pad_size[i]) + ", " +
          std::to_string(high_pad_size[i]) + ") for axis " + std::to_string(axes[i]) + ".");
    }
    std::vector<array> parts;
    // Both blocks come from the input as it was before this axis was padded.
    if (low_pad_size[i] > 0) {
      parts.push_back(pad_block(out, ax, low_pad_size[i], true, pad_value, mode, s));
    }
    parts.push_back(out);
    if (high_pad_size[i] > 0) {
      parts.push_back(pad_block(out, ax, high_pad_size[i], false, pad_value, mode, s));
    }
    if (parts.size() > 1) {
      out = concatenate(std::move(parts), ax, s);
    }
  }
  return out;
}

array pad(const array& a, const std::vector<std::pair<int, int>>& pad_width, const array& pad_value,
          const std::string& mode, StreamOrDevice s) {
  if (pad_width.size() != a.ndim()) {
    throw std::invalid_argument("[pad] expected one (low, high) pair per axis (" +
                                std::to_string(a.ndim()) + "), got " +
                                std::to_string(pad_width.size()) + ".");
  }
  std::vector<int> axes;
  Shape lo, hi;
  for (size_t i = 0; i < pad_width.size(); ++i) {
    axes.push_back(static_cast<int>(i));
    lo.push_back(pad_width[i].first);
    hi.push_back(pad_width[i].second);
  }
  return pad(a, axes, lo, hi, pad_value, mode, s);
}

array pad(const array& a, const std::pair<int, int>& pad_width, const array& pad_value,
          const std::string& mode, StreamOrDevice s) {
  return pad(a, std::vector<std::pair<int, int>>(a.ndim(), pad_width), pad_value, mode, s);
}

array pad(const array& a, int pad_width, const array& pad_value, const std::string& mode,
          StreamOrDevice s) {
  return pad(a, std::pair<int, int>{pad_width, pad_width}, pad_value, mode, s);
}

namespace {

// The sum of several shifts, reduced modulo the rolled extent (the axis, or the whole array
// when axis < 0) so that it fits an int.
int total_shift(const array& a, const Shape& shift, int axis) {
  int64_t n = axis < 0 ? static_cast<int64_t>(a.size())
                       : a.shape(normalize_axis(axis, static_cast<int>(a.ndim()), "roll"));
  int64_t total = 0;
  for (int v : shift) {
    total += v;
  }
  return n == 0 ? 0 : static_cast<int>(((total % n) + n) % n);
}

}  // namespace

array roll(const array& a, const Shape& shift, const std::vector<int>& axes, StreamOrDevice s) {
  if (shift.size() != axes.size()) {
    throw std::invalid_argument("[roll] shift and axes must have the same length, got " +
                                std::to_string(shift.size()) + " and " +
                                std::to_string(axes.size()) + ".");
  }
  int ndim = static_cast<int>(a.ndim());
  array out = a;
  for (size_t i = 0; i < axes.size(); ++i) {
    int ax = normalize_axis(axes[i], ndim, "roll");
    int n = out.shape(ax);
    if (n == 0) {
      continue;
    }
    // Elements move k places towards the end (64-bit: shift + n may pass INT_MAX).
    int k = static_cast<int>(((int64_t{shift[i]} % n) + n) % n);
    if (k == 0) {
      continue;
    }
    out = concatenate({axis_slice(out, ax, n - k, n, 1, s), axis_slice(out, ax, 0, n - k, 1, s)},
                      ax, s);
  }
  return out;
}

array roll(const array& a, const Shape& shift, int axis, StreamOrDevice s) {
  if (shift.size() != 1) {
    // As MLX: several shifts along one axis add up.
    return roll(a, Shape{total_shift(a, shift, axis)}, std::vector<int>{axis}, s);
  }
  return roll(a, shift, std::vector<int>{axis}, s);
}

array roll(const array& a, int shift, const std::vector<int>& axes, StreamOrDevice s) {
  return roll(a, Shape(axes.size(), shift), axes, s);
}

array roll(const array& a, int shift, int axis, StreamOrDevice s) {
  return roll(a, Shape{shift}, std::vector<int>{axis}, s);
}

array roll(const array& a, const Shape& shift, StreamOrDevice s) {
  return roll(a, total_shift(a, shift, -1), s);
}

array roll(const array& a, int shift, StreamOrDevice s) {
  // Without axes the array rolls as if flattened, then takes its shape back.
  return reshape(roll(flatten(a, s), Shape{shift}, std::vector<int>{0}, s), a.shape(), s);
}

array diagonal(const array& a, int offset, int axis1, int axis2, StreamOrDevice s) {
  int ndim = static_cast<int>(a.ndim());
  if (ndim < 2) {
    throw std::invalid_argument("[diagonal] the array must have at least two dimensions, got " +
                                std::to_string(ndim) + ".");
  }
  int ax1 = normalize_axis(axis1, ndim, "diagonal");
  int ax2 = normalize_axis(axis2, ndim, "diagonal");
  if (ax1 == ax2) {
    throw std::invalid_argument("[diagonal] axis1 and axis2 must be different axes.");
  }
  // A strided view of a row-contiguous copy: one step along the diagonal moves one row
  // and one column.
  auto x = contiguous(a, false, s);
  auto strides = row_major_strides(x.shape());
  int64_t rows = x.shape(ax1), cols = x.shape(ax2);
  int64_t first_row = offset >= 0 ? 0 : -int64_t{offset};
  int64_t first_col = offset >= 0 ? offset : 0;
  int64_t len = std::max<int64_t>(0, std::min(rows - first_row, cols - first_col));
  Shape shape;
  Strides out_strides;
  for (int i = 0; i < ndim; ++i) {
    if (i != ax1 && i != ax2) {
      shape.push_back(x.shape(i));
      out_strides.push_back(strides[i]);
    }
  }
  shape.push_back(static_cast<ShapeElem>(len));
  out_strides.push_back(strides[ax1] + strides[ax2]);
  size_t start = len == 0 ? 0 : first_row * strides[ax1] + first_col * strides[ax2];
  return as_strided(x, shape, out_strides, start, s);
}

array diag(const array& a, int k, StreamOrDevice s) {
  if (a.ndim() == 2) {
    return diagonal(a, k, 0, 1, s);
  }
  if (a.ndim() != 1) {
    throw std::invalid_argument("[diag] the input must be 1- or 2-dimensional, got " +
                                std::to_string(a.ndim()) + " dimensions.");
  }
  // The vector on the k-th diagonal of an n x n matrix: row i holds v[i] at column i + k
  // (k >= 0), or column j holds v[j] at row j - k (k < 0).
  int64_t off = k >= 0 ? int64_t{k} : -int64_t{k};
  int n = checked_dim(int64_t{a.shape(0)} + off, "diag");
  auto v =
      pad(a, std::pair<int, int>{0, static_cast<int>(off)}, array(0, a.dtype()), "constant", s);
  auto values = k >= 0 ? broadcast_to(reshape(v, {n, 1}, s), {n, n}, s)
                       : broadcast_to(reshape(v, {1, n}, s), {n, n}, s);
  return where(eye(n, n, k, bool_, s), values, zeros({n, n}, a.dtype(), s), s);
}

}  // namespace mlx::core
