// eval_cpu of Arange.
#include "mlx/backend/common/arange.h"
#include "mlx/dtype_utils.h"
#include "mlx/primitives.h"

namespace mlx::core {

void Arange::eval_cpu(const std::vector<array>&, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = out.data<T>();
    size_t n = out.size();
    if constexpr (std::is_integral_v<T>) {
      // As NumPy and MLX: the first two values are cast to T and their difference is the
      // step, so arange(0, 5, 1.5, int32) is 0, 1, 2, 3.
      // Unsigned math wraps instead of overflowing; the cast back to T keeps the low bits.
      auto first = static_cast<uint64_t>(cast_value<T>(start_));
      auto delta = static_cast<uint64_t>(cast_value<T>(start_ + step_)) - first;
      for (size_t i = 0; i < n; ++i) {
        dst[i] = static_cast<T>(first + static_cast<uint64_t>(i) * delta);
      }
    } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, float16_t> ||
                         std::is_same_v<T, bfloat16_t>) {
      // The GPU's arithmetic (backend/common/arange.h): start + i * step rounded once to
      // float32 (nearly always the double formula's value), so both devices agree bit for bit.
      auto split = arange_float_split(start_, step_);
      for (size_t i = 0; i < n; ++i) {
        dst[i] = T(arange_float_value(split, static_cast<uint32_t>(i)));
      }
    } else {
      // float64 and complex64 (CPU only): multiplying instead of accumulating keeps long
      // ranges from drifting.
      for (size_t i = 0; i < n; ++i) {
        dst[i] = cast_value<T>(start_ + static_cast<double>(i) * step_);
      }
    }
  });
}

}  // namespace mlx::core
