// Indexing ops with index arrays (gather, scatter and its reductions, put_along_axis,
// scatter_add_axis) and slicing at a start held in an array (slice and slice_update with
// an array start). MLX's signatures and checks (mlx/ops.cpp upstream); docs/indexing.md
// has the semantics. Bad input throws "[op] ..." here, at the call.
#include <algorithm>
#include <numeric>
#include <set>

#include "mlx/fusion.h"
#include "mlx/ops.h"
#include "mlx/primitives.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

std::string axes_to_string(const std::vector<int>& axes) {
  std::string s = "(";
  for (size_t i = 0; i < axes.size(); ++i) {
    if (i > 0) {
      s += ",";
    }
    s += std::to_string(axes[i]);
  }
  return s + ")";
}

// MLX's checks on gather/scatter index arrays: at most one per dimension of `a`, one per
// axis, axes distinct and in [0, ndim), integer dtypes. Returns the index arrays broadcast
// together and cast to their common dtype.
std::vector<array> prepare_indices(const array& a, const std::vector<array>& indices,
                                   const std::vector<int>& axes, const char* op, StreamOrDevice s) {
  std::string pre = std::string("[") + op + "] ";
  if (indices.size() > a.ndim()) {
    throw std::invalid_argument(pre + "too many index arrays: got " +
                                std::to_string(indices.size()) + " for an array with " +
                                std::to_string(a.ndim()) + " dimensions.");
  }
  if (indices.size() != axes.size()) {
    throw std::invalid_argument(
        pre + "the number of index arrays (" + std::to_string(indices.size()) +
        ") does not match the number of axes (" + std::to_string(axes.size()) + ").");
  }
  std::set<int> dims(axes.begin(), axes.end());
  if (dims.size() != axes.size()) {
    throw std::invalid_argument(pre + "repeated axes " + axes_to_string(axes) + ".");
  }
  if (!dims.empty() && (*dims.begin() < 0 || *dims.rbegin() >= static_cast<int>(a.ndim()))) {
    throw std::invalid_argument(pre + "axes " + axes_to_string(axes) +
                                " do not match an array with " + std::to_string(a.ndim()) +
                                " dimensions (axes are in [0, ndim)).");
  }
  if (indices.empty()) {
    return {};
  }
  Dtype dtype = indices[0].dtype();
  for (auto& x : indices) {
    if (!is_integral(x.dtype())) {
      throw std::invalid_argument(pre + "indices must have an integer dtype, got " +
                                  dtype_to_string(x.dtype()) + ".");
    }
    dtype = promote_types(dtype, x.dtype());
  }
  if (!is_integral(dtype)) {
    throw std::invalid_argument(pre + "index dtypes promote to " + dtype_to_string(dtype) +
                                ", which is not an integer dtype; cast them to one.");
  }
  std::vector<array> out;
  try {
    out = broadcast_arrays(indices, s);
  } catch (const std::invalid_argument&) {
    std::string shapes;
    for (auto& x : indices) {
      if (!shapes.empty()) {
        shapes += ", ";
      }
      shapes += shape_to_string(x.shape());
    }
    throw std::invalid_argument(pre + "index arrays of shapes " + shapes +
                                " cannot be broadcast together.");
  }
  for (auto& x : out) {
    x = astype(x, dtype, s);
  }
  return out;
}

array scatter_op(const array& a, const std::vector<array>& indices, const array& updates,
                 const std::vector<int>& axes, Scatter::ReduceType type, const char* op,
                 StreamOrDevice s) {
  std::string pre = std::string("[") + op + "] ";
  auto inputs = prepare_indices(a, indices, axes, op, s);
  Shape idx_shape = inputs.empty() ? Shape{} : inputs[0].shape();
  if (updates.ndim() != a.ndim() + idx_shape.size()) {
    throw std::invalid_argument(pre + "updates of shape " + shape_to_string(updates.shape()) +
                                " must have " + std::to_string(a.ndim() + idx_shape.size()) +
                                " dimensions: the indices' (" + shape_to_string(idx_shape) +
                                ") and then the array's (" + std::to_string(a.ndim()) + ").");
  }
  for (size_t i = 0; i < idx_shape.size(); ++i) {
    if (updates.shape(static_cast<int>(i)) != idx_shape[i]) {
      throw std::invalid_argument(pre + "updates of shape " + shape_to_string(updates.shape()) +
                                  " do not start with the broadcast index shape " +
                                  shape_to_string(idx_shape) + ".");
    }
  }
  for (size_t i = 0; i < a.ndim(); ++i) {
    if (updates.shape(static_cast<int>(i + idx_shape.size())) > a.shape(static_cast<int>(i))) {
      throw std::invalid_argument(pre + "updates of shape " + shape_to_string(updates.shape()) +
                                  " are too large for an array of shape " +
                                  shape_to_string(a.shape()) + ".");
    }
  }
  inputs.insert(inputs.begin(), a);
  inputs.push_back(astype(updates, a.dtype(), s));
  return array(a.shape(), a.dtype(), std::make_shared<Scatter>(to_stream(s), type, axes),
               std::move(inputs));
}

// MLX's normalize_dynamic_slice_inputs: start is 0-d or 1-d with one integer per axis,
// axes are distinct (negative ones count from the end). Returns the normalized axes.
std::vector<int> dynamic_axes(const array& a, const array& start, std::vector<int> axes,
                              const char* op) {
  std::string pre = std::string("[") + op + "] ";
  if (start.ndim() > 1) {
    throw std::invalid_argument(pre + "the start must be 0-d or 1-d, got shape " +
                                shape_to_string(start.shape()) + ".");
  }
  if (start.size() > a.ndim()) {
    throw std::invalid_argument(pre + "got " + std::to_string(start.size()) +
                                " start positions for an array with " + std::to_string(a.ndim()) +
                                " dimensions.");
  }
  if (start.size() != axes.size()) {
    throw std::invalid_argument(
        pre + "the number of start positions (" + std::to_string(start.size()) +
        ") does not match the number of axes (" + std::to_string(axes.size()) + ").");
  }
  if (!is_integral(start.dtype())) {
    throw std::invalid_argument(pre + "the start must have an integer dtype, got " +
                                dtype_to_string(start.dtype()) + ".");
  }
  for (auto& ax : axes) {
    ax = normalize_axis(ax, static_cast<int>(a.ndim()), op);
  }
  if (std::set<int>(axes.begin(), axes.end()).size() != axes.size()) {
    throw std::invalid_argument(pre + "repeated axes " + axes_to_string(axes) + ".");
  }
  return axes;
}

// put_along_axis / scatter_add_axis (MLX's scatter_axis): values are cast to a's dtype and
// lose leading singleton dims beyond indices' rank; indices and values broadcast together,
// then with a everywhere but the axis.
array scatter_axis(const array& a, const array& indices, const array& values, int axis,
                   ScatterAxis::ReduceType type, StreamOrDevice s) {
  const char* op = type == ScatterAxis::None ? "put_along_axis" : "scatter_add_axis";
  std::string pre = std::string("[") + op + "] ";
  int ax = normalize_axis(axis, static_cast<int>(a.ndim()), op);
  if (indices.ndim() != a.ndim()) {
    throw std::invalid_argument(pre + "indices have " + std::to_string(indices.ndim()) +
                                " dimensions but the array has " + std::to_string(a.ndim()) +
                                "; they must match.");
  }
  if (!is_integral(indices.dtype())) {
    throw std::invalid_argument(pre + "indices must have an integer dtype, got " +
                                dtype_to_string(indices.dtype()) + ".");
  }
  if (a.size() == 0) {
    return a;
  }
  auto upd = astype(values, a.dtype(), s);
  while (upd.ndim() > indices.ndim()) {
    if (upd.shape(0) != 1) {
      throw std::invalid_argument(pre + "values of shape " + shape_to_string(values.shape()) +
                                  " have more dimensions than the indices (" +
                                  std::to_string(indices.ndim()) + ") that are not of size 1.");
    }
    upd = squeeze(upd, 0, s);
  }
  Shape iv_shape;
  try {
    iv_shape = broadcast_shapes(indices.shape(), upd.shape());
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument(pre + "indices of shape " + shape_to_string(indices.shape()) +
                                " and values of shape " + shape_to_string(values.shape()) +
                                " cannot be broadcast together.");
  }
  // Broadcast with a outside the axis; along it a keeps its extent and the others theirs.
  Shape a_shape = a.shape();
  Shape common = iv_shape;
  a_shape[ax] = 1;
  common[ax] = 1;
  try {
    common = broadcast_shapes(a_shape, common);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument(pre + "indices of shape " + shape_to_string(indices.shape()) +
                                " cannot be broadcast against an array of shape " +
                                shape_to_string(a.shape()) + " outside axis " + std::to_string(ax) +
                                ".");
  }
  Shape out_shape = common;
  out_shape[ax] = a.shape(ax);
  Shape iv = common;
  iv[ax] = iv_shape[ax];
  if (a.shape(ax) == 0 && iv[ax] > 0) {
    throw std::invalid_argument(pre + "cannot put values along axis " + std::to_string(ax) +
                                " of size 0.");
  }
  auto a_b = broadcast_to(a, out_shape, s);
  auto shape = out_shape;
  return array(std::move(shape), a.dtype(), std::make_shared<ScatterAxis>(to_stream(s), type, ax),
               {a_b, broadcast_to(indices, iv, s), broadcast_to(upd, iv, s)});
}

}  // namespace

array gather(const array& a, const std::vector<array>& indices, const std::vector<int>& axes,
             const Shape& slice_sizes, StreamOrDevice s) {
  auto inputs = prepare_indices(a, indices, axes, "gather", s);
  if (slice_sizes.size() != a.ndim()) {
    throw std::invalid_argument("[gather] got slice_sizes " + shape_to_string(slice_sizes) +
                                " for an array with " + std::to_string(a.ndim()) + " dimensions.");
  }
  int64_t total_slice = 1;
  for (size_t i = 0; i < a.ndim(); ++i) {
    total_slice *= slice_sizes[i];
    bool fits =
        slice_sizes[i] >= 0 && (a.size() == 0 || slice_sizes[i] <= a.shape(static_cast<int>(i)));
    if (!fits) {
      throw std::invalid_argument("[gather] slice sizes must be in [0, a.shape(i)]; got " +
                                  shape_to_string(slice_sizes) + " for an array of shape " +
                                  shape_to_string(a.shape()) + ".");
    }
  }
  size_t idx_size = inputs.empty() ? 1 : inputs[0].size();
  if (a.size() == 0 && idx_size != 0 && total_slice != 0) {
    throw std::invalid_argument(
        "[gather] from an empty array, either the indices must be empty or the total slice "
        "size must be 0.");
  }
  Shape out_shape = inputs.empty() ? Shape{} : inputs[0].shape();
  out_shape.insert(out_shape.end(), slice_sizes.begin(), slice_sizes.end());
  inputs.insert(inputs.begin(), a);
  return array(std::move(out_shape), a.dtype(),
               std::make_shared<Gather>(to_stream(s), axes, slice_sizes), std::move(inputs));
}

array put_along_axis(const array& a, const array& indices, const array& values, int axis,
                     StreamOrDevice s) {
  return scatter_axis(a, indices, values, axis, ScatterAxis::None, s);
}

array scatter_add_axis(const array& a, const array& indices, const array& values, int axis,
                       StreamOrDevice s) {
  return scatter_axis(a, indices, values, axis, ScatterAxis::Sum, s);
}

array scatter(const array& a, const std::vector<array>& indices, const array& updates,
              const std::vector<int>& axes, StreamOrDevice s) {
  return scatter_op(a, indices, updates, axes, Scatter::None, "scatter", s);
}

array scatter_add(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s) {
  return scatter_op(a, indices, updates, axes, Scatter::Sum, "scatter_add", s);
}

array scatter_prod(const array& a, const std::vector<array>& indices, const array& updates,
                   const std::vector<int>& axes, StreamOrDevice s) {
  return scatter_op(a, indices, updates, axes, Scatter::Prod, "scatter_prod", s);
}

array scatter_max(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s) {
  return scatter_op(a, indices, updates, axes, Scatter::Max, "scatter_max", s);
}

array scatter_min(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s) {
  return scatter_op(a, indices, updates, axes, Scatter::Min, "scatter_min", s);
}

array slice(const array& a, const array& start, std::vector<int> axes, Shape slice_size,
            StreamOrDevice s) {
  axes = dynamic_axes(a, start, std::move(axes), "slice");
  if (slice_size.size() != a.ndim()) {
    throw std::invalid_argument("[slice] got slice_size " + shape_to_string(slice_size) +
                                " for an array with " + std::to_string(a.ndim()) + " dimensions.");
  }
  for (size_t i = 0; i < a.ndim(); ++i) {
    if (slice_size[i] < 0 || slice_size[i] > a.shape(static_cast<int>(i))) {
      throw std::invalid_argument("[slice] slice_size " + shape_to_string(slice_size) +
                                  " does not fit an array of shape " + shape_to_string(a.shape()) +
                                  ".");
    }
  }
  auto out_shape = slice_size;
  return array(std::move(out_shape), a.dtype(),
               std::make_shared<DynamicSlice>(to_stream(s), std::move(axes), std::move(slice_size)),
               {a, start});
}

array slice_update(const array& src, const array& update, const array& start, std::vector<int> axes,
                   StreamOrDevice s) {
  axes = dynamic_axes(src, start, std::move(axes), "slice_update");
  if (update.ndim() > src.ndim()) {
    throw std::invalid_argument("[slice_update] an update of shape " +
                                shape_to_string(update.shape()) + " has more dimensions than " +
                                "the source of shape " + shape_to_string(src.shape()) + ".");
  }
  // MLX's broadcast: missing leading axes take src's extent, or 1 on a dynamic axis.
  size_t diff = src.ndim() - update.ndim();
  Shape up_shape(src.shape().begin(), src.shape().begin() + diff);
  up_shape.insert(up_shape.end(), update.shape().begin(), update.shape().end());
  for (int ax : axes) {
    if (static_cast<size_t>(ax) < diff) {
      up_shape[ax] = 1;
    }
  }
  for (size_t d = diff; d < src.ndim(); ++d) {
    if (up_shape[d] > src.shape(static_cast<int>(d))) {
      throw std::invalid_argument(
          "[slice_update] an update of shape " + shape_to_string(update.shape()) +
          " does not fit the source of shape " + shape_to_string(src.shape()) + ".");
    }
  }
  // A KV cache update of freshly rotated keys is one op (mlx/fusion.h).
  if (auto fused = rope_into_slice(src, update, start, axes, to_stream(s))) {
    return *fused;
  }
  auto upd = broadcast_to(astype(update, src.dtype(), s), up_shape, s);
  return array(src.shape(), src.dtype(),
               std::make_shared<DynamicSliceUpdate>(to_stream(s), std::move(axes)),
               {src, upd, start});
}

}  // namespace mlx::core
