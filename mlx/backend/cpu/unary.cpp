// Unary::eval_cpu: every unary elementwise op, for every dtype it accepts.
#include <string>

#include "mlx/backend/cpu/elementwise_loops.h"
#include "mlx/backend/cpu/elementwise_ops.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

namespace ew = cpu::elementwise;

template <typename F>
void dispatch_unary_op(UnaryOp op, F&& f) {
  switch (op) {
    case UnaryOp::Abs:
      return f(ew::Abs{});
    case UnaryOp::Negative:
      return f(ew::Negative{});
    case UnaryOp::Sign:
      return f(ew::Sign{});
    case UnaryOp::Sqrt:
      return f(ew::Sqrt{});
    case UnaryOp::Rsqrt:
      return f(ew::Rsqrt{});
    case UnaryOp::Square:
      return f(ew::Square{});
    case UnaryOp::Exp:
      return f(ew::Exp{});
    case UnaryOp::Expm1:
      return f(ew::Expm1{});
    case UnaryOp::Log:
      return f(ew::Log{});
    case UnaryOp::Log1p:
      return f(ew::Log1p{});
    case UnaryOp::Log2:
      return f(ew::Log2{});
    case UnaryOp::Log10:
      return f(ew::Log10{});
    case UnaryOp::Sin:
      return f(ew::Sin{});
    case UnaryOp::Cos:
      return f(ew::Cos{});
    case UnaryOp::Tan:
      return f(ew::Tan{});
    case UnaryOp::ArcSin:
      return f(ew::ArcSin{});
    case UnaryOp::ArcCos:
      return f(ew::ArcCos{});
    case UnaryOp::ArcTan:
      return f(ew::ArcTan{});
    case UnaryOp::Sinh:
      return f(ew::Sinh{});
    case UnaryOp::Cosh:
      return f(ew::Cosh{});
    case UnaryOp::Tanh:
      return f(ew::Tanh{});
    case UnaryOp::ArcSinh:
      return f(ew::ArcSinh{});
    case UnaryOp::ArcCosh:
      return f(ew::ArcCosh{});
    case UnaryOp::ArcTanh:
      return f(ew::ArcTanh{});
    case UnaryOp::Sigmoid:
      return f(ew::Sigmoid{});
    case UnaryOp::Erf:
      return f(ew::Erf{});
    case UnaryOp::ErfInv:
      return f(ew::ErfInv{});
    case UnaryOp::Floor:
      return f(ew::Floor{});
    case UnaryOp::Ceil:
      return f(ew::Ceil{});
    case UnaryOp::Round:
      return f(ew::Round{});
    case UnaryOp::LogicalNot:
      return f(ew::LogicalNot{});
    case UnaryOp::BitwiseInvert:
      return f(ew::BitwiseInvert{});
    case UnaryOp::IsNan:
      return f(ew::IsNan{});
    case UnaryOp::IsInf:
      return f(ew::IsInf{});
  }
  throw std::invalid_argument("[Unary] unknown op.");
}

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
    dispatch_unary_op(op_, [&](auto op) {
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
