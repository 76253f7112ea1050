// Select::eval_cpu: where(condition, x, y).
#include <string>

#include "mlx/backend/cpu/elementwise_loops.h"
#include "mlx/primitives.h"

namespace mlx::core {

void Select::eval_cpu(const std::vector<array>& inputs, array& out) {
  cpu::check_same_shape(name(), inputs, out.shape(), 3);
  auto& cond = inputs[0];
  auto& x = inputs[1];
  auto& y = inputs[2];
  if (cond.dtype() != bool_) {
    throw std::invalid_argument("[Select] the condition must be bool, got " +
                                dtype_to_string(cond.dtype()) + ".");
  }
  if (x.dtype() != out.dtype() || y.dtype() != out.dtype()) {
    throw std::invalid_argument("[Select] x, y and the output must share one dtype.");
  }
  cpu::set_output_buffer(out, {&x, &y, &cond});
  if (out.size() == 0) {
    return;
  }
  // Selection moves stored values unchanged, so 16-bit floats are never converted.
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const bool* pc = cond.data<bool>();
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    T* po = out.data<T>();
    cpu::for_each_row<3>({&cond, &x, &y}, out.shape(),
                         [&](const auto& base, const auto& inc, size_t o, size_t count) {
                           for (size_t t = 0; t < count; ++t) {
                             auto i = static_cast<int64_t>(t);
                             po[o + t] = pc[base[0] + i * inc[0]] ? px[base[1] + i * inc[1]]
                                                                  : py[base[2] + i * inc[2]];
                           }
                         });
  });
}

}  // namespace mlx::core
