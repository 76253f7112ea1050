// Shape and view ops: reshape, broadcast, transpose, slicing, joining and indexing.
#include <algorithm>
#include <limits>
#include <numeric>
#include <sstream>

#include "mlx/ops.h"
#include "mlx/primitives.h"
#include "mlx/utils.h"

namespace mlx::core {

Shape broadcast_shapes(const Shape& s1, const Shape& s2) {
  size_t ndim = std::max(s1.size(), s2.size());
  Shape out(ndim);
  for (size_t i = 0; i < ndim; ++i) {
    int a = i < ndim - s1.size() ? 1 : s1[i - (ndim - s1.size())];
    int b = i < ndim - s2.size() ? 1 : s2[i - (ndim - s2.size())];
    if (a != b && a != 1 && b != 1) {
      throw std::invalid_argument("[broadcast_shapes] shapes " + shape_to_string(s1) + " and " +
                                  shape_to_string(s2) + " cannot be broadcast.");
    }
    out[i] = a == 1 ? b : a;
  }
  return out;
}

array broadcast_to(const array& a, const Shape& shape, StreamOrDevice s) {
  if (a.shape() == shape) {
    return a;
  }
  bool ok = shape.size() >= a.ndim() &&
            std::all_of(shape.begin(), shape.end(), [](ShapeElem d) { return d >= 0; });
  if (ok) {
    try {
      ok = broadcast_shapes(a.shape(), shape) == shape;
    } catch (const std::invalid_argument&) {
      ok = false;
    }
  }
  if (!ok) {
    throw std::invalid_argument("[broadcast_to] cannot broadcast array of shape " +
                                shape_to_string(a.shape()) + " to shape " + shape_to_string(shape) +
                                ".");
  }
  return array(shape, a.dtype(), std::make_shared<Broadcast>(to_stream(s), shape), {a});
}

std::vector<array> broadcast_arrays(const std::vector<array>& inputs, StreamOrDevice s) {
  Shape shape;
  for (auto& in : inputs) {
    shape = broadcast_shapes(shape, in.shape());
  }
  std::vector<array> out;
  out.reserve(inputs.size());
  for (auto& in : inputs) {
    out.push_back(broadcast_to(in, shape, s));
  }
  return out;
}

array reshape(const array& a, Shape shape, StreamOrDevice s) {
  int infer = -1;
  size_t size = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) {
        throw std::invalid_argument("[reshape] can only infer one dimension.");
      }
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      throw std::invalid_argument("[reshape] invalid negative dimension " +
                                  std::to_string(shape[i]) + ".");
    } else if (__builtin_mul_overflow(size, static_cast<size_t>(shape[i]), &size)) {
      size = std::numeric_limits<size_t>::max();  // cannot equal a.size(): reported below
    }
  }
  if (infer >= 0) {
    if (size == 0 || a.size() % size != 0) {
      throw std::invalid_argument("[reshape] cannot infer the shape of an array of size " +
                                  std::to_string(a.size()) + " reshaped to " +
                                  shape_to_string(shape) + ".");
    }
    if (a.size() / size > static_cast<size_t>(std::numeric_limits<ShapeElem>::max())) {
      throw std::invalid_argument(
          "[reshape] the inferred dimension of an array of size " + std::to_string(a.size()) +
          " reshaped to " + shape_to_string(shape) + " would be " +
          std::to_string(a.size() / size) + ", more than a dimension can hold (2^31 - 1).");
    }
    shape[infer] = static_cast<ShapeElem>(a.size() / size);
    size = a.size();
  }
  if (size != a.size()) {
    throw std::invalid_argument("[reshape] cannot reshape array of size " +
                                std::to_string(a.size()) + " into shape " + shape_to_string(shape) +
                                ".");
  }
  if (shape == a.shape()) {
    return a;
  }
  auto out_shape = shape;
  return array(std::move(out_shape), a.dtype(), std::make_shared<Reshape>(to_stream(s), shape),
               {a});
}

namespace {

int64_t shape_size(const Shape& shape) {
  int64_t n = 1;
  for (auto d : shape) {
    n *= d;
  }
  return n;
}

bool is_identity(const std::vector<int>& axes) {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] != static_cast<int>(i)) {
      return false;
    }
  }
  return true;
}

std::vector<int> iota_axes(size_t n) {
  std::vector<int> axes(n);
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

// Turns Python-style bounds into the Slice primitive's form (0 <= start, exclusive stop,
// start == stop == 0 for an empty dimension) and returns the sliced shape.
Shape normalize_slice(const Shape& shape, Shape& start, Shape& stop, const Shape& strides,
                      const char* op) {
  size_t ndim = shape.size();
  if (start.size() != ndim || stop.size() != ndim || strides.size() != ndim) {
    throw std::invalid_argument(std::string("[") + op + "] start, stop and strides must have " +
                                std::to_string(ndim) + " entries (one per dimension); got " +
                                std::to_string(start.size()) + ", " + std::to_string(stop.size()) +
                                " and " + std::to_string(strides.size()) + ".");
  }
  Shape out(ndim);
  for (size_t i = 0; i < ndim; ++i) {
    int64_t n = shape[i];
    int64_t step = strides[i];
    if (step == 0) {
      throw std::invalid_argument(std::string("[") + op + "] slice stride of dimension " +
                                  std::to_string(i) + " cannot be zero.");
    }
    int64_t b = start[i] < 0 ? int64_t{start[i]} + n : start[i];
    int64_t e = stop[i] < 0 ? int64_t{stop[i]} + n : stop[i];
    int64_t len = 0;
    if (step > 0) {
      b = std::clamp<int64_t>(b, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      len = e > b ? (e - b + step - 1) / step : 0;
    } else {
      // Walking backwards, -1 means "past the first element".
      b = std::clamp<int64_t>(b, -1, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      len = b > e ? (b - e - step - 1) / -step : 0;
    }
    if (len == 0) {
      b = 0;
      e = 0;
    }
    start[i] = static_cast<ShapeElem>(b);
    stop[i] = static_cast<ShapeElem>(e);
    out[i] = static_cast<ShapeElem>(len);
  }
  return out;
}

bool is_full_forward_slice(const Shape& sliced, const Shape& shape, const Shape& strides) {
  return sliced == shape &&
         std::all_of(strides.begin(), strides.end(), [](ShapeElem st) { return st == 1; });
}

void check_integral_indices(const array& indices, const char* op) {
  if (!is_integral(indices.dtype())) {
    throw std::invalid_argument(std::string("[") + op +
                                "] indices must have an integer dtype, got " +
                                dtype_to_string(indices.dtype()) + ".");
  }
}

}  // namespace

array flatten(const array& a, int start_axis, int end_axis, StreamOrDevice s) {
  int ndim = static_cast<int>(a.ndim());
  if (ndim == 0) {
    // As MLX: a scalar flattens to one element whatever the axes.
    return reshape(a, {1}, s);
  }
  // MLX's rule: a negative axis counts from the end once, then start clamps up to 0 and
  // end down to ndim - 1, so flatten(x, 1, 3) of a 3-d x merges axes 1..2.
  int start = std::max(0, start_axis + (start_axis < 0 ? ndim : 0));
  int end = std::min(ndim - 1, end_axis + (end_axis < 0 ? ndim : 0));
  if (start > end) {
    throw std::invalid_argument("[flatten] start_axis " + std::to_string(start_axis) +
                                " must be less than or equal to end_axis " +
                                std::to_string(end_axis) + " (for an array with " +
                                std::to_string(ndim) + " dimensions).");
  }
  if (start == end) {
    return a;
  }
  Shape shape(a.shape().begin(), a.shape().begin() + start);
  int64_t merged = 1;
  for (int i = start; i <= end; ++i) {
    merged *= a.shape(i);
  }
  shape.push_back(checked_dim(merged, "flatten"));
  shape.insert(shape.end(), a.shape().begin() + end + 1, a.shape().end());
  return reshape(a, std::move(shape), s);
}

array flatten(const array& a, StreamOrDevice s) {
  return flatten(a, 0, -1, s);
}

array transpose(const array& a, std::vector<int> axes, StreamOrDevice s) {
  int ndim = static_cast<int>(a.ndim());
  if (static_cast<int>(axes.size()) != ndim) {
    throw std::invalid_argument("[transpose] received " + std::to_string(axes.size()) +
                                " axes for an array with " + std::to_string(ndim) + " dimensions.");
  }
  std::vector<bool> seen(ndim, false);
  for (auto& ax : axes) {
    int n = normalize_axis(ax, ndim, "transpose");
    if (seen[n]) {
      throw std::invalid_argument("[transpose] axis " + std::to_string(ax) +
                                  " appears more than once; axes must be a permutation.");
    }
    seen[n] = true;
    ax = n;
  }
  if (is_identity(axes)) {
    return a;
  }
  Shape shape(ndim);
  for (int i = 0; i < ndim; ++i) {
    shape[i] = a.shape(axes[i]);
  }
  return array(std::move(shape), a.dtype(), std::make_shared<Transpose>(to_stream(s), axes), {a});
}

array transpose(const array& a, StreamOrDevice s) {
  auto axes = iota_axes(a.ndim());
  std::reverse(axes.begin(), axes.end());
  return transpose(a, std::move(axes), s);
}

array swapaxes(const array& a, int axis1, int axis2, StreamOrDevice s) {
  int ndim = static_cast<int>(a.ndim());
  int a1 = normalize_axis(axis1, ndim, "swapaxes");
  int a2 = normalize_axis(axis2, ndim, "swapaxes");
  auto axes = iota_axes(ndim);
  std::swap(axes[a1], axes[a2]);
  return transpose(a, std::move(axes), s);
}

array moveaxis(const array& a, int source, int destination, StreamOrDevice s) {
  int ndim = static_cast<int>(a.ndim());
  int src = normalize_axis(source, ndim, "moveaxis");
  int dst = normalize_axis(destination, ndim, "moveaxis");
  auto axes = iota_axes(ndim);
  axes.erase(axes.begin() + src);
  axes.insert(axes.begin() + dst, src);
  return transpose(a, std::move(axes), s);
}

array squeeze(const array& a, const std::vector<int>& axes, StreamOrDevice s) {
  auto norm = normalize_axes(axes, static_cast<int>(a.ndim()), "squeeze");
  for (int ax : norm) {
    if (a.shape(ax) != 1) {
      throw std::invalid_argument("[squeeze] cannot squeeze axis " + std::to_string(ax) +
                                  " of size " + std::to_string(a.shape(ax)) +
                                  "; only size-1 axes can be squeezed.");
    }
  }
  Shape shape;
  for (int i = 0; i < static_cast<int>(a.ndim()); ++i) {
    if (!std::binary_search(norm.begin(), norm.end(), i)) {
      shape.push_back(a.shape(i));
    }
  }
  return reshape(a, std::move(shape), s);
}

array squeeze(const array& a, int axis, StreamOrDevice s) {
  return squeeze(a, std::vector<int>{axis}, s);
}

array squeeze(const array& a, StreamOrDevice s) {
  std::vector<int> axes;
  for (int i = 0; i < static_cast<int>(a.ndim()); ++i) {
    if (a.shape(i) == 1) {
      axes.push_back(i);
    }
  }
  return squeeze(a, axes, s);
}

array expand_dims(const array& a, const std::vector<int>& axes, StreamOrDevice s) {
  // Axes index the output, so negative ones count from the end of the output's dims.
  int out_ndim = static_cast<int>(a.ndim() + axes.size());
  auto norm = normalize_axes(axes, out_ndim, "expand_dims");
  Shape shape(out_ndim, 1);
  size_t next = 0;
  for (int i = 0; i < out_ndim; ++i) {
    if (!std::binary_search(norm.begin(), norm.end(), i)) {
      shape[i] = a.shape(static_cast<int>(next++));
    }
  }
  return reshape(a, std::move(shape), s);
}

array expand_dims(const array& a, int axis, StreamOrDevice s) {
  return expand_dims(a, std::vector<int>{axis}, s);
}

array slice(const array& a, Shape start, Shape stop, Shape strides, StreamOrDevice s) {
  auto shape = normalize_slice(a.shape(), start, stop, strides, "slice");
  if (is_full_forward_slice(shape, a.shape(), strides)) {
    return a;
  }
  return array(
      std::move(shape), a.dtype(),
      std::make_shared<Slice>(to_stream(s), std::move(start), std::move(stop), std::move(strides)),
      {a});
}

array slice(const array& a, Shape start, Shape stop, StreamOrDevice s) {
  Shape strides(a.ndim(), 1);
  return slice(a, std::move(start), std::move(stop), std::move(strides), s);
}

array slice_update(const array& src, const array& update, Shape start, Shape stop, Shape strides,
                   StreamOrDevice s) {
  auto upd_shape = normalize_slice(src.shape(), start, stop, strides, "slice_update");
  if (update.ndim() > upd_shape.size() || [&] {
        try {
          return broadcast_shapes(update.shape(), upd_shape) != upd_shape;
        } catch (const std::invalid_argument&) {
          return true;
        }
      }()) {
    throw std::invalid_argument(
        "[slice_update] update of shape " + shape_to_string(update.shape()) +
        " cannot be broadcast to the slice shape " + shape_to_string(upd_shape) + ".");
  }
  auto upd = broadcast_to(astype(update, src.dtype(), s), upd_shape, s);
  if (is_full_forward_slice(upd_shape, src.shape(), strides)) {
    return upd;
  }
  if (shape_size(upd_shape) == 0) {
    return src;
  }
  auto shape = src.shape();
  return array(std::move(shape), src.dtype(),
               std::make_shared<SliceUpdate>(to_stream(s), std::move(start), std::move(stop),
                                             std::move(strides)),
               {src, upd});
}

array slice_update(const array& src, const array& update, Shape start, Shape stop,
                   StreamOrDevice s) {
  Shape strides(src.ndim(), 1);
  return slice_update(src, update, std::move(start), std::move(stop), std::move(strides), s);
}

array concatenate(std::vector<array> arrays, int axis, StreamOrDevice s) {
  if (arrays.empty()) {
    throw std::invalid_argument("[concatenate] no arrays to concatenate.");
  }
  int ndim = static_cast<int>(arrays[0].ndim());
  if (ndim == 0) {
    throw std::invalid_argument("[concatenate] zero-dimensional arrays cannot be concatenated.");
  }
  int ax = normalize_axis(axis, ndim, "concatenate");
  Shape shape = arrays[0].shape();
  int64_t total = 0;
  Dtype dtype = arrays[0].dtype();
  for (auto& a : arrays) {
    bool ok = static_cast<int>(a.ndim()) == ndim;
    for (int d = 0; ok && d < ndim; ++d) {
      ok = d == ax || a.shape(d) == shape[d];
    }
    if (!ok) {
      throw std::invalid_argument("[concatenate] arrays of shapes " + shape_to_string(shape) +
                                  " and " + shape_to_string(a.shape()) +
                                  " must match in every dimension except axis " +
                                  std::to_string(ax) + ".");
    }
    total += a.shape(ax);
    dtype = promote_types(dtype, a.dtype());
  }
  if (total > std::numeric_limits<ShapeElem>::max()) {
    throw std::invalid_argument("[concatenate] the result has too many elements along axis " +
                                std::to_string(ax) + ".");
  }
  if (arrays.size() == 1) {
    return astype(arrays[0], dtype, s);
  }
  shape[ax] = static_cast<ShapeElem>(total);
  for (auto& a : arrays) {
    a = astype(a, dtype, s);
  }
  return array(std::move(shape), dtype, std::make_shared<Concatenate>(to_stream(s), ax),
               std::move(arrays));
}

array concatenate(std::vector<array> arrays, StreamOrDevice s) {
  for (auto& a : arrays) {
    a = flatten(a, s);
  }
  return concatenate(std::move(arrays), 0, s);
}

array stack(const std::vector<array>& arrays, int axis, StreamOrDevice s) {
  if (arrays.empty()) {
    throw std::invalid_argument("[stack] no arrays to stack.");
  }
  for (auto& a : arrays) {
    if (a.shape() != arrays[0].shape()) {
      throw std::invalid_argument("[stack] all arrays must have the same shape; got " +
                                  shape_to_string(arrays[0].shape()) + " and " +
                                  shape_to_string(a.shape()) + ".");
    }
  }
  int ax = normalize_axis(axis, static_cast<int>(arrays[0].ndim()) + 1, "stack");
  std::vector<array> expanded;
  expanded.reserve(arrays.size());
  for (auto& a : arrays) {
    expanded.push_back(expand_dims(a, ax, s));
  }
  return concatenate(std::move(expanded), ax, s);
}

array stack(const std::vector<array>& arrays, StreamOrDevice s) {
  return stack(arrays, 0, s);
}

std::vector<array> split(const array& a, int num_splits, int axis, StreamOrDevice s) {
  int ax = normalize_axis(axis, static_cast<int>(a.ndim()), "split");
  if (num_splits <= 0) {
    throw std::invalid_argument("[split] the number of splits must be positive, got " +
                                std::to_string(num_splits) + ".");
  }
  int n = a.shape(ax);
  if (n % num_splits != 0) {
    throw std::invalid_argument("[split] an axis of size " + std::to_string(n) +
                                " cannot be split into " + std::to_string(num_splits) +
                                " equal parts.");
  }
  Shape indices;
  for (int i = 1; i < num_splits; ++i) {
    indices.push_back(i * (n / num_splits));
  }
  return split(a, indices, ax, s);
}

std::vector<array> split(const array& a, int num_splits, StreamOrDevice s) {
  return split(a, num_splits, 0, s);
}

std::vector<array> split(const array& a, const Shape& indices, int axis, StreamOrDevice s) {
  // As NumPy: part i is a[indices[i-1]:indices[i]] along the axis (slice semantics, so
  // negative indices count from the end and decreasing indices give empty parts).
  int ax = normalize_axis(axis, static_cast<int>(a.ndim()), "split");
  std::vector<array> parts;
  parts.reserve(indices.size() + 1);
  Shape start(a.ndim(), 0);
  Shape stop = a.shape();
  for (size_t i = 0; i <= indices.size(); ++i) {
    stop[ax] = i < indices.size() ? indices[i] : a.shape(ax);
    parts.push_back(slice(a, start, stop, s));
    start[ax] = stop[ax];
  }
  return parts;
}

std::vector<array> split(const array& a, const Shape& indices, StreamOrDevice s) {
  return split(a, indices, 0, s);
}

array take(const array& a, const array& indices, int axis, StreamOrDevice s) {
  int ax = normalize_axis(axis, static_cast<int>(a.ndim()), "take");
  check_integral_indices(indices, "take");
  if (a.shape(ax) == 0 && indices.size() > 0) {
    throw std::invalid_argument("[take] cannot take from axis " + std::to_string(ax) +
                                " of size 0.");
  }
  Shape shape(a.shape().begin(), a.shape().begin() + ax);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), a.shape().begin() + ax + 1, a.shape().end());
  return array(std::move(shape), a.dtype(), std::make_shared<Take>(to_stream(s), ax), {a, indices});
}

array take(const array& a, int index, int axis, StreamOrDevice s) {
  // The index is known now, so check it now; the result is a view (slice + squeeze).
  int ax = normalize_axis(axis, static_cast<int>(a.ndim()), "take");
  int n = a.shape(ax);
  if (index < -n || index >= n) {
    throw std::invalid_argument("[take] index " + std::to_string(index) +
                                " is out of bounds for axis " + std::to_string(ax) + " of size " +
                                std::to_string(n) + ".");
  }
  int i = index < 0 ? index + n : index;
  Shape start(a.ndim(), 0);
  Shape stop = a.shape();
  start[ax] = i;
  stop[ax] = i + 1;
  return squeeze(slice(a, std::move(start), std::move(stop), s), ax, s);
}

array take(const array& a, const array& indices, StreamOrDevice s) {
  return take(flatten(a, s), indices, 0, s);
}

array take(const array& a, int index, StreamOrDevice s) {
  return take(flatten(a, s), index, 0, s);
}

array take_along_axis(const array& a, const array& indices, int axis, StreamOrDevice s) {
  int ax = normalize_axis(axis, static_cast<int>(a.ndim()), "take_along_axis");
  check_integral_indices(indices, "take_along_axis");
  if (indices.ndim() != a.ndim()) {
    throw std::invalid_argument("[take_along_axis] indices have " + std::to_string(indices.ndim()) +
                                " dimensions but the array has " + std::to_string(a.ndim()) +
                                "; they must match.");
  }
  // Broadcast everything but the axis, where a keeps its size and indices theirs.
  Shape a_shape = a.shape();
  Shape idx_shape = indices.shape();
  a_shape[ax] = 1;
  idx_shape[ax] = 1;
  Shape common;
  try {
    common = broadcast_shapes(a_shape, idx_shape);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument(
        "[take_along_axis] indices of shape " + shape_to_string(indices.shape()) +
        " cannot be broadcast against an array of shape " + shape_to_string(a.shape()) +
        " outside axis " + std::to_string(ax) + ".");
  }
  a_shape = common;
  a_shape[ax] = a.shape(ax);
  idx_shape = common;
  idx_shape[ax] = indices.shape(ax);
  if (a.shape(ax) == 0 && shape_size(idx_shape) > 0) {
    throw std::invalid_argument("[take_along_axis] cannot take from axis " + std::to_string(ax) +
                                " of size 0.");
  }
  auto out_shape = idx_shape;
  return array(std::move(out_shape), a.dtype(), std::make_shared<TakeAlongAxis>(to_stream(s), ax),
               {broadcast_to(a, a_shape, s), broadcast_to(indices, idx_shape, s)});
}

}  // namespace mlx::core
