// Sort, ArgSort, Partition and ArgPartition::eval_cpu along one axis of a strided input,
// into a row-contiguous output: std::stable_sort of the indices with MLX's comparator (NaN
// after everything; equal values keep their order). Partition sorts the row fully, which
// is one valid partition (MLX's CPU uses nth_element; the arrangement is unspecified).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "mlx/backend/common/utils.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

template <typename T>
bool nan_last_less(T a, T b) {
  using C = compute_type_t<T>;
  if constexpr (std::is_floating_point_v<C>) {
    C x = static_cast<C>(a), y = static_cast<C>(b);
    if (std::isnan(x)) {
      return false;
    }
    if (std::isnan(y)) {
      return true;
    }
    return x < y;
  } else {
    return a < b;
  }
}

// Sorts every line of `in` along `axis`; writes the values (arg false) or uint32 indices.
template <typename T>
void sort_lines(const array& in, array& out, int axis, bool arg) {
  const int64_t n = in.shape(axis);
  const int64_t step = in.strides(axis);
  Shape outer_shape;
  Strides in_outer, out_outer;
  for (int d = 0; d < static_cast<int>(in.ndim()); ++d) {
    if (d != axis) {
      outer_shape.push_back(in.shape(d));
      in_outer.push_back(in.strides(d));
      out_outer.push_back(out.strides(d));
    }
  }
  size_t lines = n == 0 ? 0 : in.size() / static_cast<size_t>(n);
  StridedIterator in_it(outer_shape, in_outer);
  StridedIterator out_it(outer_shape, out_outer);
  const int64_t out_step = out.strides(axis);
  std::vector<uint32_t> order(static_cast<size_t>(n));
  for (size_t l = 0; l < lines; ++l, in_it.step(), out_it.step()) {
    const T* p = in.data<T>() + in_it.loc();
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [p, step](uint32_t a, uint32_t b) {
      return nan_last_less(p[a * step], p[b * step]);
    });
    if (arg) {
      uint32_t* q = out.data<uint32_t>() + out_it.loc();
      for (int64_t i = 0; i < n; ++i) {
        q[i * out_step] = order[static_cast<size_t>(i)];
      }
    } else {
      T* q = out.data<T>() + out_it.loc();
      for (int64_t i = 0; i < n; ++i) {
        q[i * out_step] = p[order[static_cast<size_t>(i)] * step];
      }
    }
  }
}

void sort_eval(const char* name, const array& in, array& out, int axis, bool arg) {
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_complex_v<T>) {
      throw std::invalid_argument(std::string("[") + name + "] complex64 is not supported.");
    } else {
      sort_lines<T>(in, out, axis, arg);
    }
  });
}

}  // namespace

void Sort::eval_cpu(const std::vector<array>& inputs, array& out) {
  sort_eval(name(), inputs[0], out, axis_, false);
}

void ArgSort::eval_cpu(const std::vector<array>& inputs, array& out) {
  sort_eval(name(), inputs[0], out, axis_, true);
}

void Partition::eval_cpu(const std::vector<array>& inputs, array& out) {
  sort_eval(name(), inputs[0], out, axis_, false);
}

void ArgPartition::eval_cpu(const std::vector<array>& inputs, array& out) {
  sort_eval(name(), inputs[0], out, axis_, true);
}

}  // namespace mlx::core
