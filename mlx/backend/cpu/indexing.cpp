// eval_cpu of the indexing primitives: Take, TakeAlongAxis, Gather (reads at index arrays),
// Scatter and ScatterAxis (writes at index arrays), DynamicSlice and DynamicSliceUpdate
// (windows at a start held in an array). The reference semantics of docs/indexing.md:
// indices of any integer dtype, negative ones counted from the end, an index whose window
// leaves its axis raises before anything is written, duplicates applied in index order.
#include <algorithm>
#include <string>

#include "mlx/backend/common/utils.h"
#include "mlx/backend/cpu/copy.h"
#include "mlx/backend/cpu/elementwise_ops.h"
#include "mlx/backend/cpu/indexing.h"
#include "mlx/dtype_utils.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

// Reads every index of `indices` (any integer dtype, any layout) in row-major order,
// wraps negative ones by `axis_size` and checks that the window of `extent` elements
// starting there lies in [0, axis_size). Runs before the output is written, so a bad index
// leaves nothing half-written.
std::vector<int64_t> checked_indices(const array& indices, int64_t axis_size, int64_t extent,
                                     const char* op) {
  std::vector<int64_t> out(indices.size());
  dispatch_dtype(indices.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T* p = indices.data<T>();
      StridedIterator it(indices.shape(), indices.strides());
      for (size_t i = 0; i < out.size(); ++i, it.step()) {
        T raw = p[it.loc()];
        bool too_big = false;
        int64_t v = 0;
        if constexpr (std::is_same_v<T, uint64_t>) {
          too_big = raw > static_cast<uint64_t>(INT64_MAX);
        }
        v = static_cast<int64_t>(raw);
        if (v < 0) {
          v += axis_size;
        }
        if (too_big || v < 0 || v > axis_size - extent) {
          std::string msg = std::string("[") + op + "] index " + std::to_string(raw) +
                            " is out of bounds for an axis of size " + std::to_string(axis_size);
          if (extent != 1) {
            msg += " with a window of " + std::to_string(extent);
          }
          throw std::invalid_argument(msg + ".");
        }
        out[i] = v;
      }
    } else {
      throw std::invalid_argument(std::string("[") + op + "] indices must be integral.");
    }
  });
  return out;
}

// Copies out.size() elements: out[i] = a[src_locs[i]] (element offsets into a's view).
void gather_locs(const array& a, array& out, const std::vector<int64_t>& src_locs) {
  out.set_data(allocator::malloc(out.nbytes()));
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = a.data<T>();
    T* dst = out.data<T>();
    for (size_t i = 0; i < src_locs.size(); ++i) {
      dst[i] = src[src_locs[i]];
    }
  });
}

// Element offsets of a window of `shape` in a view with `strides`, in row-major order.
std::vector<int64_t> window_locs(const Shape& shape, const Strides& strides) {
  int64_t n = 1;
  for (auto d : shape) {
    n *= d;
  }
  std::vector<int64_t> locs(static_cast<size_t>(n));
  StridedIterator it(shape, strides);
  for (auto& l : locs) {
    l = it.loc();
    it.step();
  }
  return locs;
}

// out takes a row-contiguous copy of src, or src's buffer when nothing else can see it.
void copy_or_donate(const array& src, array& out) {
  if (src.is_donatable() && src.flags().row_contiguous && src.data_size() == src.size()) {
    out.copy_shared_buffer(src);
  } else {
    cpu::copy_to_new(src, out);
  }
}

// Applies out[dst_locs[j]] (op)= updates[j] for the updates in row-major order. The
// element ops are the binary ops' (wrapping integers, f16/bf16 rounded per step,
// maximum/minimum propagating NaN); None assigns, so a later duplicate wins.
void scatter_locs(const array& updates, array& out, const std::vector<int64_t>& dst_locs,
                  Scatter::ReduceType type) {
  namespace ew = cpu::elementwise;
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_type_t<T>;
    const T* upd = updates.data<T>();
    T* dst = out.data<T>();
    StridedIterator it(updates.shape(), updates.strides());
    auto apply = [&](auto op) {
      for (size_t j = 0; j < dst_locs.size(); ++j, it.step()) {
        T& y = dst[dst_locs[j]];
        y = T(op(C(y), C(upd[it.loc()])));
      }
    };
    switch (type) {
      case Scatter::None:
        apply([](C, C x) { return x; });
        break;
      case Scatter::Sum:
        apply(ew::Add{});
        break;
      case Scatter::Prod:
        apply(ew::Multiply{});
        break;
      case Scatter::Max:
        apply(ew::Maximum{});
        break;
      case Scatter::Min:
        apply(ew::Minimum{});
        break;
    }
  });
}

// The start of each dynamic axis: start[k] clamped to [0, shape[axes[k]] - extent[k]].
std::vector<int64_t> clamped_starts(const array& start, const std::vector<int>& axes,
                                    const Shape& shape, const Shape& extent) {
  std::vector<int64_t> out(axes.size());
  dispatch_dtype(start.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T* p = start.data<T>();
      StridedIterator it(start.shape(), start.strides());
      for (size_t k = 0; k < axes.size(); ++k, it.step()) {
        T raw = p[it.loc()];
        int64_t hi = int64_t{shape[axes[k]]} - extent[axes[k]];
        int64_t v = 0;
        if constexpr (std::is_unsigned_v<T>) {
          v = raw > static_cast<uint64_t>(hi) ? hi : static_cast<int64_t>(raw);
        } else {
          v = std::clamp<int64_t>(static_cast<int64_t>(raw), 0, hi);
        }
        out[k] = v;
      }
    } else {
      throw std::invalid_argument("[slice] start indices must be integral.");
    }
  });
  return out;
}

}  // namespace

const char* Scatter::name() const {
  switch (reduce_type_) {
    case None:
      return "Scatter";
    case Sum:
      return "ScatterAdd";
    case Prod:
      return "ScatterProd";
    case Max:
      return "ScatterMax";
    case Min:
      return "ScatterMin";
  }
  return "Scatter";
}

void Take::eval_cpu(const std::vector<array>& inputs, array& out) {
  auto& a = inputs[0];
  auto& indices = inputs[1];
  auto idx = checked_indices(indices, a.shape(axis_), 1, "take");

  // out = a.shape[:axis] + indices.shape + a.shape[axis+1:], walked as (pre, idx, post).
  Shape pre_shape(a.shape().begin(), a.shape().begin() + axis_);
  Strides pre_strides(a.strides().begin(), a.strides().begin() + axis_);
  Shape post_shape(a.shape().begin() + axis_ + 1, a.shape().end());
  Strides post_strides(a.strides().begin() + axis_ + 1, a.strides().end());
  int64_t pre = 1;
  for (auto d : pre_shape)
    pre *= d;
  auto post_locs = window_locs(post_shape, post_strides);
  int64_t axis_stride = a.strides(axis_);

  std::vector<int64_t> locs;
  locs.reserve(out.size());
  for (int64_t o = 0; o < pre; ++o) {
    int64_t base = elem_to_loc(o, pre_shape, pre_strides);
    for (int64_t j : idx) {
      int64_t row = base + j * axis_stride;
      for (int64_t q : post_locs) {
        locs.push_back(row + q);
      }
    }
  }
  gather_locs(a, out, locs);
}

void TakeAlongAxis::eval_cpu(const std::vector<array>& inputs, array& out) {
  auto& a = inputs[0];
  auto& indices = inputs[1];
  auto idx = checked_indices(indices, a.shape(axis_), 1, "take_along_axis");

  // Every output element reads a at its own position with the axis coordinate replaced
  // by its index: walk out's shape with a's strides (axis stride zeroed), add idx * stride.
  Strides base_strides = a.strides();
  base_strides[axis_] = 0;
  int64_t axis_stride = a.strides(axis_);
  std::vector<int64_t> locs(out.size());
  StridedIterator it(out.shape(), base_strides);
  for (size_t i = 0; i < locs.size(); ++i, it.step()) {
    locs[i] = it.loc() + idx[i] * axis_stride;
  }
  gather_locs(a, out, locs);
}

void Gather::eval_cpu(const std::vector<array>& inputs, array& out) {
  auto& a = inputs[0];
  std::vector<std::vector<int64_t>> idx;
  for (size_t k = 0; k < axes_.size(); ++k) {
    int ax = axes_[k];
    idx.push_back(checked_indices(inputs[k + 1], a.shape(ax), slice_sizes_[ax], "gather"));
  }
  // out = (index positions) x (window): window i starts at idx_k[i] on axes[k].
  auto win = window_locs(slice_sizes_, a.strides());
  size_t n = idx.empty() ? 1 : idx[0].size();
  std::vector<int64_t> locs;
  locs.reserve(out.size());
  for (size_t i = 0; i < n && !win.empty(); ++i) {
    int64_t base = 0;
    for (size_t k = 0; k < idx.size(); ++k) {
      base += idx[k][i] * a.strides(axes_[k]);
    }
    for (int64_t w : win) {
      locs.push_back(base + w);
    }
  }
  gather_locs(a, out, locs);
}

void Scatter::eval_cpu(const std::vector<array>& inputs, array& out) {
  auto& a = inputs[0];
  auto& updates = inputs.back();
  size_t nidx = inputs.size() - 2;
  size_t idx_ndim = updates.ndim() - a.ndim();
  Shape window(updates.shape().begin() + idx_ndim, updates.shape().end());
  const char* op = reduce_type_ == None   ? "scatter"
                   : reduce_type_ == Sum  ? "scatter_add"
                   : reduce_type_ == Prod ? "scatter_prod"
                   : reduce_type_ == Max  ? "scatter_max"
                                          : "scatter_min";
  std::vector<std::vector<int64_t>> idx;
  for (size_t k = 0; k < nidx; ++k) {
    int ax = axes_[k];
    idx.push_back(checked_indices(inputs[k + 1], a.shape(ax), window[ax], op));
  }
  copy_or_donate(a, out);
  // Update j = i * W + w lands at the window's w-th element, the window at idx_k[i].
  auto win = window_locs(window, out.strides());
  size_t n = idx.empty() ? 1 : idx[0].size();
  std::vector<int64_t> locs;
  locs.reserve(updates.size());
  for (size_t i = 0; i < n && !win.empty(); ++i) {
    int64_t base = 0;
    for (size_t k = 0; k < nidx; ++k) {
      base += idx[k][i] * out.strides(axes_[k]);
    }
    for (int64_t w : win) {
      locs.push_back(base + w);
    }
  }
  scatter_locs(updates, out, locs, reduce_type_);
}

void ScatterAxis::eval_cpu(const std::vector<array>& inputs, array& out) {
  auto& a = inputs[0];
  auto& indices = inputs[1];
  auto& values = inputs[2];
  auto idx = checked_indices(indices, a.shape(axis_), 1,
                             reduce_type_ == None ? "put_along_axis" : "scatter_add_axis");
  copy_or_donate(a, out);
  // Index/value element j (row-major over indices' shape) lands at its own position in out
  // with the axis coordinate replaced by idx[j].
  Strides base_strides = out.strides();
  base_strides[axis_] = 0;
  int64_t axis_stride = out.strides(axis_);
  std::vector<int64_t> locs(indices.size());
  StridedIterator it(indices.shape(), base_strides);
  for (size_t j = 0; j < locs.size(); ++j, it.step()) {
    locs[j] = it.loc() + idx[j] * axis_stride;
  }
  scatter_locs(values, out, locs, reduce_type_ == None ? Scatter::None : Scatter::Sum);
}

void DynamicSlice::eval_cpu(const std::vector<array>& inputs, array& out) {
  auto& a = inputs[0];
  auto starts = clamped_starts(inputs[1], axes_, a.shape(), slice_size_);
  int64_t base = 0;
  for (size_t k = 0; k < axes_.size(); ++k) {
    base += starts[k] * a.strides(axes_[k]);
  }
  auto locs = window_locs(slice_size_, a.strides());
  for (auto& l : locs) {
    l += base;
  }
  gather_locs(a, out, locs);
}

void cpu::slice_update_into(const array& src, const array& update, const array& start,
                            const std::vector<int>& axes, array& out) {
  auto starts = clamped_starts(start, axes, src.shape(), update.shape());
  copy_or_donate(src, out);
  int64_t offset = 0;
  for (size_t k = 0; k < axes.size(); ++k) {
    offset += starts[k] * out.strides(axes[k]);
  }
  cpu::copy_into(update, out, out.strides(), offset);
}

void DynamicSliceUpdate::eval_cpu(const std::vector<array>& inputs, array& out) {
  cpu::slice_update_into(inputs[0], inputs[1], inputs[2], axes_, out);
}

}  // namespace mlx::core
