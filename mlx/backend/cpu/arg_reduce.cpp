// ArgReduce::eval_cpu: uint32 index of the first maximum/minimum along one axis of a strided
// input. NaN counts as the extreme (as NumPy), so the first NaN wins.
#include <cmath>
#include <stdexcept>

#include "mlx/backend/common/utils.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

template <typename T, bool IsMax>
void arg_reduce_strided(const array& in, array& out, int axis) {
  using V = compute_type_t<T>;
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  int64_t n = in.shape(axis);
  if (n == 0) {
    throw std::invalid_argument(std::string("[") + (IsMax ? "argmax" : "argmin") +
                                "] cannot reduce an empty axis.");
  }
  int64_t step = in.strides(axis);
  Shape outer_shape;
  Strides outer_strides;
  for (int i = 0; i < static_cast<int>(in.ndim()); ++i) {
    if (i != axis) {
      outer_shape.push_back(in.shape(i));
      outer_strides.push_back(in.strides(i));
    }
  }
  StridedIterator it(outer_shape, outer_strides);
  const T* src = in.data<T>();
  uint32_t* dst = out.data<uint32_t>();
  for (size_t o = 0; o < out.size(); ++o, it.step()) {
    const T* p = src + it.loc();
    V best = static_cast<V>(p[0]);
    uint32_t best_idx = 0;
    if constexpr (std::is_floating_point_v<V>) {
      if (std::isnan(best)) {
        dst[o] = 0;
        continue;
      }
    }
    for (int64_t j = 1; j < n; ++j) {
      V x = static_cast<V>(p[j * step]);
      if constexpr (std::is_floating_point_v<V>) {
        if (std::isnan(x)) {
          best_idx = static_cast<uint32_t>(j);
          break;
        }
      }
      if (IsMax ? x > best : x < best) {
        best = x;
        best_idx = static_cast<uint32_t>(j);
      }
    }
    dst[o] = best_idx;
  }
}

}  // namespace

void ArgReduce::eval_cpu(const std::vector<array>& inputs, array& out) {
  const auto& in = inputs[0];
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_complex_v<T>) {
      throw std::invalid_argument(std::string("[") + name() +
                                  "] is not supported for complex inputs.");
    } else if (type_ == ArgReduceType::ArgMax) {
      arg_reduce_strided<T, true>(in, out, axis_);
    } else {
      arg_reduce_strided<T, false>(in, out, axis_);
    }
  });
}

}  // namespace mlx::core
