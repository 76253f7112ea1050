// eval_cpu of Take and TakeAlongAxis: gathers along one axis with bounds-checked indices.
#include <string>

#include "mlx/backend/common/utils.h"
#include "mlx/dtype_utils.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

// Reads every index of `indices` (any integer dtype, any layout) in row-major order,
// wraps negative ones and checks them against `axis_size`. Runs before the output is
// allocated, so a bad index leaves nothing half-written.
std::vector<int64_t> checked_indices(const array& indices, int64_t axis_size, const char* op) {
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
          v = static_cast<int64_t>(raw);
        } else {
          v = static_cast<int64_t>(raw);
        }
        if (v < 0) {
          v += axis_size;
        }
        if (too_big || v < 0 || v >= axis_size) {
          throw std::invalid_argument(std::string("[") + op + "] index " + std::to_string(raw) +
                                      " is out of bounds for an axis of size " +
                                      std::to_string(axis_size) + ".");
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
void gather(const array& a, array& out, const std::vector<int64_t>& src_locs) {
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

} // namespace

void Take::eval_cpu(const std::vector<array>& inputs, array& out) {
  auto& a = inputs[0];
  auto& indices = inputs[1];
  auto idx = checked_indices(indices, a.shape(axis_), "take");

  // out = a.shape[:axis] + indices.shape + a.shape[axis+1:], walked as (pre, idx, post).
  Shape pre_shape(a.shape().begin(), a.shape().begin() + axis_);
  Strides pre_strides(a.strides().begin(), a.strides().begin() + axis_);
  Shape post_shape(a.shape().begin() + axis_ + 1, a.shape().end());
  Strides post_strides(a.strides().begin() + axis_ + 1, a.strides().end());
  int64_t pre = 1, post = 1;
  for (auto d : pre_shape)
    pre *= d;
  for (auto d : post_shape)
    post *= d;
  std::vector<int64_t> post_locs(static_cast<size_t>(post));
  for (int64_t q = 0; q < post; ++q) {
    post_locs[q] = elem_to_loc(q, post_shape, post_strides);
  }
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
  gather(a, out, locs);
}

void TakeAlongAxis::eval_cpu(const std::vector<array>& inputs, array& out) {
  auto& a = inputs[0];
  auto& indices = inputs[1];
  auto idx = checked_indices(indices, a.shape(axis_), "take_along_axis");

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
  gather(a, out, locs);
}

} // namespace mlx::core
