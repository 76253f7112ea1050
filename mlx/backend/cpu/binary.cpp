// Binary::eval_cpu and DivMod::eval_cpu: every binary elementwise op, for every dtype it
// accepts.
#include <string>

#include "mlx/backend/cpu/elementwise_dispatch.h"
#include "mlx/backend/cpu/elementwise_loops.h"
#include "mlx/backend/cpu/elementwise_ops.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

namespace ew = cpu::elementwise;


std::string dtype_mismatch(const char* name, const array& in, const array& out) {
  return std::string("[") + name + "] output dtype " + dtype_to_string(out.dtype()) +
         " does not match input dtype " + dtype_to_string(in.dtype()) + ".";
}

void check_input_dtypes(const char* name, const array& a, const array& b) {
  if (a.dtype() != b.dtype()) {
    throw std::invalid_argument(std::string("[") + name + "] inputs must share one dtype, got " +
                                dtype_to_string(a.dtype()) + " and " + dtype_to_string(b.dtype()) +
                                ".");
  }
}

template <typename T, typename Op>
void binary_typed(const char* name, const array& a, const array& b, array& out, Op op) {
  using C = compute_type_t<T>;
  using R = decltype(op(C{}, C{}));
  // Predicates write bool; every other op keeps the inputs' storage type.
  using Out = std::conditional_t<std::is_same_v<R, bool>, bool, T>;
  // (Not TypeToDtype<Out>: as in MLX it maps double to float32.)
  if (out.dtype() != (std::is_same_v<Out, bool> ? bool_ : a.dtype())) {
    throw std::invalid_argument(dtype_mismatch(name, a, out));
  }
  cpu::set_output_buffer(out, {&a, &b});
  if (out.size() == 0) {
    return;
  }
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  Out* po = out.data<Out>();
  cpu::for_each_row<2>({&a, &b}, out.shape(),
                       [&](const auto& base, const auto& inc, size_t o, size_t count) {
                         const T* x = pa + base[0];
                         const T* y = pb + base[1];
                         Out* z = po + o;
                         if (inc[0] == 1 && inc[1] == 1) {
                           for (size_t t = 0; t < count; ++t) {
                             z[t] = Out(op(C(x[t]), C(y[t])));
                           }
                         } else if (inc[0] == 0 && inc[1] == 1) {
                           C xs = C(x[0]);
                           for (size_t t = 0; t < count; ++t) {
                             z[t] = Out(op(xs, C(y[t])));
                           }
                         } else if (inc[0] == 1 && inc[1] == 0) {
                           C ys = C(y[0]);
                           for (size_t t = 0; t < count; ++t) {
                             z[t] = Out(op(C(x[t]), ys));
                           }
                         } else {
                           for (size_t t = 0; t < count; ++t) {
                             auto i = static_cast<int64_t>(t);
                             z[t] = Out(op(C(x[i * inc[0]]), C(y[i * inc[1]])));
                           }
                         }
                       });
}

}  // namespace

void Binary::eval_cpu(const std::vector<array>& inputs, array& out) {
  cpu::check_same_shape(name(), inputs, out.shape(), 2);
  auto& a = inputs[0];
  auto& b = inputs[1];
  check_input_dtypes(name(), a, b);
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    ew::dispatch_binary_op(op_, "Binary", [&](auto op) {
      using Op = decltype(op);
      if constexpr (Op::template accepts<compute_type_t<T>>) {
        binary_typed<T>(name(), a, b, out, op);
      } else {
        throw std::invalid_argument(std::string("[") + name() + "] does not support " +
                                    dtype_to_string(a.dtype()) + " inputs.");
      }
    });
  });
}

// outputs[0] = floor_divide(a, b), outputs[1] = remainder(a, b), in one pass.
void DivMod::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (outputs.size() != 2) {
    throw std::invalid_argument("[DivMod] expected 2 outputs.");
  }
  cpu::check_same_shape(name(), inputs, outputs[0].shape(), 2);
  auto& a = inputs[0];
  auto& b = inputs[1];
  auto& q = outputs[0];
  auto& r = outputs[1];
  check_input_dtypes(name(), a, b);
  if (q.dtype() != a.dtype() || r.dtype() != a.dtype() || r.shape() != q.shape()) {
    throw std::invalid_argument(dtype_mismatch(name(), a, q.dtype() != a.dtype() ? q : r));
  }
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_type_t<T>;
    if constexpr (ew::FloorDivide::accepts<C> && ew::Remainder::accepts<C>) {
      cpu::set_output_buffer(q, {&a, &b});
      cpu::set_output_buffer(r, {&a, &b});
      if (q.size() == 0) {
        return;
      }
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* pq = q.data<T>();
      T* pr = r.data<T>();
      ew::FloorDivide div;
      ew::Remainder rem;
      cpu::for_each_row<2>({&a, &b}, q.shape(),
                           [&](const auto& base, const auto& inc, size_t o, size_t count) {
                             for (size_t t = 0; t < count; ++t) {
                               auto i = static_cast<int64_t>(t);
                               C x = C(pa[base[0] + i * inc[0]]);
                               C y = C(pb[base[1] + i * inc[1]]);
                               // Both results are computed before either store: q or r may alias a
                               // or b.
                               T qv = T(div(x, y));
                               T rv = T(rem(x, y));
                               pq[o + t] = qv;
                               pr[o + t] = rv;
                             }
                           });
    } else {
      throw std::invalid_argument("[DivMod] does not support " + dtype_to_string(a.dtype()) +
                                  " inputs.");
    }
  });
}

}  // namespace mlx::core
