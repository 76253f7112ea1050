// Softmax::eval_cpu over the last axis: subtract the row max, exponentiate, normalize.
//
// 16-bit floats are computed in float32 and rounded once on store; float32 in float32 and
// float64 in double. `precise` changes nothing here: the CPU always accumulates in float32
// or wider (the flag lets a GPU kernel trade accuracy for speed on 16-bit inputs).
// A row containing +inf, or made only of -inf, gives NaN (inf - inf), as NumPy and MLX.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "mlx/backend/cpu/copy.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

template <typename T>
void softmax_rows(const T* src, T* dst, size_t rows, int64_t n) {
  using Acc = compute_type_t<T>;
  std::vector<Acc> e(static_cast<size_t>(n));
  for (size_t r = 0; r < rows; ++r) {
    const T* x = src + r * n;
    T* y = dst + r * n;
    Acc m = -std::numeric_limits<Acc>::infinity();
    for (int64_t j = 0; j < n; ++j) {
      Acc v = static_cast<Acc>(x[j]);
      m = (v > m || std::isnan(v)) && !std::isnan(m) ? v : m;
    }
    Acc total = 0;
    for (int64_t j = 0; j < n; ++j) {
      e[j] = std::exp(static_cast<Acc>(x[j]) - m);
      total += e[j];
    }
    for (int64_t j = 0; j < n; ++j) {
      y[j] = static_cast<T>(e[j] / total);
    }
  }
}

}  // namespace

void Softmax::eval_cpu(const std::vector<array>& inputs, array& out) {
  array in = inputs[0];
  if (in.dtype() != out.dtype()) {
    throw std::invalid_argument("[Softmax] expects matching input and output dtypes, got " +
                                dtype_to_string(in.dtype()) + " -> " +
                                dtype_to_string(out.dtype()) + ".");
  }
  // Rows must be dense: copy strided or broadcast inputs first.
  if (!in.flags().row_contiguous) {
    array tmp(in.shape(), in.dtype(), nullptr, {});
    cpu::copy_to_new(in, tmp);
    in = tmp;
  }
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  int64_t n = out.ndim() == 0 ? 1 : out.shape(-1);
  size_t rows = out.size() / static_cast<size_t>(n);
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_type_t<T>>) {
      softmax_rows<T>(in.data<T>(), out.data<T>(), rows, n);
    } else {
      throw std::invalid_argument("[Softmax] expects a floating point input, got " +
                                  dtype_to_string(in.dtype()) + ".");
    }
  });
}

}  // namespace mlx::core
