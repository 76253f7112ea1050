// Unary::eval_cpu: every unary elementwise op, for every dtype it accepts.
#include <string>

#include "mlx/backend/cpu/elementwise_dispatch.h"
#include "mlx/backend/cpu/elementwise_loops.h"
#include "mlx/backend/cpu/elementwise_ops.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

namespace ew = cpu::elementwise;


template <typename T, typename Op>
void unary_typed(const char* name, const array& in, array& out, Op op) {
  using C = compute_type_t<T>;
  using R = decltype(op(C{}));
  // Predicates write bool; every other op keeps the input's storage type.
  using Out = std::conditional_t<std::is_same_v<R, bool>, bool, T>;
  // (Not TypeToDtype<Out>: as in MLX it maps double to float32.)
  if (out.dtype() != (std::is_same_v<Out, bool> ? bool_ : in.dtype())) {
    throw std::invalid_argument(std::string("[") + name + "] output dtype " +
                                dtype_to_string(out.dtype()) + " does not match input dtype " +
                                dtype_to_string(in.dtype()) + ".");
  }
  cpu::set_output_buffer(out, {&in});
  if (out.size() == 0) {
    return;
  }
  const T* src = in.data<T>();
  Out* dst = out.data<Out>();
  cpu::for_each_row<1>({&in}, out.shape(),
                       [&](const auto& base, const auto& inc, size_t o, size_t count) {
                         const T* x = src + base[0];
                         Out* y = dst + o;
                         if (inc[0] == 1) {
                           for (size_t t = 0; t < count; ++t) {
                             y[t] = Out(op(C(x[t])));
                           }
                         } else {
                           for (size_t t = 0; t < count; ++t) {
                             y[t] = Out(op(C(x[static_cast<int64_t>(t) * inc[0]])));
                           }
                         }
                       });
}

}  // namespace

void Unary::eval_cpu(const std::vector<array>& inputs, array& out) {
  cpu::check_same_shape(name(), inputs, out.shape(), 1);
  auto& in = inputs[0];
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    ew::dispatch_unary_op(op_, "Unary", [&](auto op) {
      using Op = decltype(op);
      if constexpr (Op::template accepts<compute_type_t<T>>) {
        unary_typed<T>(name(), in, out, op);
      } else {
        throw std::invalid_argument(std::string("[") + name() + "] does not support " +
                                    dtype_to_string(in.dtype()) + " inputs.");
      }
    });
  });
}

}  // namespace mlx::core
