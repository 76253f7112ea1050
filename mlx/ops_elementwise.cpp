// Unary, binary and ternary elementwise ops: validation, type promotion, broadcasting.
#include <cmath>
#include <sstream>
#include <utility>

#include "mlx/fusion.h"
#include "mlx/ops.h"
#include "mlx/primitives.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

std::string op_label(const char* op) {
  return std::string("[") + op + "] ";
}

void require_not_complex(const array& a, const char* op) {
  if (is_complex(a.dtype())) {
    throw std::invalid_argument(op_label(op) + "is not supported for complex inputs.");
  }
}

// Ops defined only on integers and bool (bitwise ops, shifts).
void require_integral_or_bool(Dtype dt, const char* op) {
  if (!is_integral(dt) && dt != bool_) {
    throw std::invalid_argument(op_label(op) + "requires integer or boolean inputs, got " +
                                dtype_to_string(dt) + ".");
  }
}

// Both inputs integral, and their promoted type too: uint64 with a signed integer promotes
// to float32, which has no bits to operate on.
Dtype integral_result_type(const array& a, const array& b, const char* op) {
  require_integral_or_bool(a.dtype(), op);
  require_integral_or_bool(b.dtype(), op);
  auto dt = promote_types(a.dtype(), b.dtype());
  if (!is_integral(dt) && dt != bool_) {
    throw std::invalid_argument(op_label(op) + "inputs of type " + dtype_to_string(a.dtype()) +
                                " and " + dtype_to_string(b.dtype()) + " promote to " +
                                dtype_to_string(dt) + ", which is not an integer type.");
  }
  return dt;
}

array make_unary(const array& a, UnaryOp op, Dtype out_dtype, StreamOrDevice s) {
  auto stream = to_stream(s);
  // Predicates (bool output) read their input as it is; other ops compute in out_dtype.
  array in = out_dtype == bool_ ? a : astype(a, out_dtype, stream);
  return array(a.shape(), out_dtype, std::make_shared<Unary>(stream, op), {in});
}

// Float-valued unary ops: integers and bool are promoted to float32 first.
array float_unary(const array& a, UnaryOp op, StreamOrDevice s) {
  return make_unary(a, op, at_least_float(a.dtype()), s);
}

// Unary ops that keep the dtype (abs, negative, sign, square, floor, ...).
array same_type_unary(const array& a, UnaryOp op, StreamOrDevice s) {
  return make_unary(a, op, a.dtype(), s);
}

// An op's operands, moved into a vector (a braced list copies each array twice, and every
// copy is an atomic count up and down) and broadcast to one shape when they differ.
template <typename... Arrays>
std::vector<array> broadcast_operands(const Stream& stream, Arrays&&... operands) {
  std::vector<array> in;
  in.reserve(sizeof...(operands));
  (in.push_back(std::forward<Arrays>(operands)), ...);
  for (const auto& x : in) {
    if (x.shape() != in[0].shape()) {
      return broadcast_arrays(in, stream);
    }
  }
  return in;
}

// Broadcasts a and b to one shape, casts both to `compute`, and builds the node.
array make_binary(const array& a, const array& b, BinaryOp op, Dtype compute, Dtype out,
                  StreamOrDevice s) {
  auto stream = to_stream(s);
  auto inputs = broadcast_operands(stream, astype(a, compute, stream), astype(b, compute, stream));
  auto shape = inputs[0].shape();
  return array(std::move(shape), out, std::make_shared<Binary>(stream, op), std::move(inputs));
}

array arithmetic_binary(const array& a, const array& b, BinaryOp op, StreamOrDevice s) {
  auto dt = promote_types(a.dtype(), b.dtype());
  return make_binary(a, b, op, dt, dt, s);
}

array compare_binary(const array& a, const array& b, BinaryOp op, StreamOrDevice s) {
  auto dt = promote_types(a.dtype(), b.dtype());
  return make_binary(a, b, op, dt, bool_, s);
}

array real_float_binary(const array& a, const array& b, BinaryOp op, const char* name,
                        StreamOrDevice s) {
  require_not_complex(a, name);
  require_not_complex(b, name);
  auto dt = at_least_float(promote_types(a.dtype(), b.dtype()));
  return make_binary(a, b, op, dt, dt, s);
}

array integral_binary(const array& a, const array& b, BinaryOp op, const char* name,
                      StreamOrDevice s) {
  auto dt = integral_result_type(a, b, name);
  return make_binary(a, b, op, dt, dt, s);
}

}  // namespace

// ---- Unary -------------------------------------------------------------------------------

array abs(const array& a, StreamOrDevice s) {
  if (is_unsigned(a.dtype()) || a.dtype() == bool_) {
    return a;  // already non-negative; MLX returns the input unchanged as well
  }
  if (is_complex(a.dtype())) {
    // The kernel writes (|z|, 0); MLX returns the magnitude as float32.
    return astype(make_unary(a, UnaryOp::Abs, complex64, s), float32, s);
  }
  return same_type_unary(a, UnaryOp::Abs, s);
}

array negative(const array& a, StreamOrDevice s) {
  if (a.dtype() == bool_) {
    throw std::invalid_argument("[negative] not supported for bool, use logical_not instead.");
  }
  return same_type_unary(a, UnaryOp::Negative, s);
}
array operator-(const array& a) {
  return negative(a);
}
array sign(const array& a, StreamOrDevice s) {
  return same_type_unary(a, UnaryOp::Sign, s);
}
array sqrt(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::Sqrt, s);
}
array rsqrt(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::Rsqrt, s);
}
array square(const array& a, StreamOrDevice s) {
  return same_type_unary(a, UnaryOp::Square, s);
}
array exp(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::Exp, s);
}
array expm1(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::Expm1, s);
}
array log(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::Log, s);
}
array log1p(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::Log1p, s);
}
array log2(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::Log2, s);
}
array log10(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::Log10, s);
}
array sin(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::Sin, s);
}
array cos(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::Cos, s);
}
array tan(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::Tan, s);
}
array arcsin(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::ArcSin, s);
}
array arccos(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::ArcCos, s);
}
array arctan(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::ArcTan, s);
}
array sinh(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::Sinh, s);
}
array cosh(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::Cosh, s);
}
array tanh(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::Tanh, s);
}
array arcsinh(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::ArcSinh, s);
}
array arccosh(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::ArcCosh, s);
}
array arctanh(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::ArcTanh, s);
}
array sigmoid(const array& a, StreamOrDevice s) {
  return float_unary(a, UnaryOp::Sigmoid, s);
}
array erf(const array& a, StreamOrDevice s) {
  require_not_complex(a, "erf");
  return float_unary(a, UnaryOp::Erf, s);
}
array erfinv(const array& a, StreamOrDevice s) {
  require_not_complex(a, "erfinv");
  return float_unary(a, UnaryOp::ErfInv, s);
}
array floor(const array& a, StreamOrDevice s) {
  require_not_complex(a, "floor");
  return same_type_unary(a, UnaryOp::Floor, s);
}
array ceil(const array& a, StreamOrDevice s) {
  require_not_complex(a, "ceil");
  return same_type_unary(a, UnaryOp::Ceil, s);
}
array round(const array& a, int decimals, StreamOrDevice s) {
  require_not_complex(a, "round");
  if (decimals == 0) {
    return same_type_unary(a, UnaryOp::Round, s);
  }
  // As MLX: scale by 10^decimals in a float type, round half to even, multiply by the
  // inverse scale and cast back, so integers round to tens or hundreds for decimals < 0.
  auto dtype = at_least_float(a.dtype());
  float scale = std::pow(10.0f, static_cast<float>(decimals));
  auto scaled = multiply(a, array(scale, dtype), s);
  auto rounded = same_type_unary(scaled, UnaryOp::Round, s);
  return astype(multiply(rounded, array(1.0f / scale, dtype), s), a.dtype(), s);
}
array logical_not(const array& a, StreamOrDevice s) {
  return make_unary(a, UnaryOp::LogicalNot, bool_, s);
}
array bitwise_invert(const array& a, StreamOrDevice s) {
  require_integral_or_bool(a.dtype(), "bitwise_invert");
  return same_type_unary(a, UnaryOp::BitwiseInvert, s);
}
array operator~(const array& a) {
  return bitwise_invert(a);
}
array isnan(const array& a, StreamOrDevice s) {
  if (!is_floating_point(a.dtype()) && !is_complex(a.dtype())) {
    return full(a.shape(), false, bool_, s);
  }
  return make_unary(a, UnaryOp::IsNan, bool_, s);
}
array isinf(const array& a, StreamOrDevice s) {
  if (!is_floating_point(a.dtype()) && !is_complex(a.dtype())) {
    return full(a.shape(), false, bool_, s);
  }
  return make_unary(a, UnaryOp::IsInf, bool_, s);
}

// ---- Binary ------------------------------------------------------------------------------

array add(const array& a, const array& b, StreamOrDevice s) {
  // A residual connection after a decode-sized quantized product is one op (mlx/fusion.h).
  if (auto fused = add_to_product(a, b, to_stream(s))) {
    return *fused;
  }
  return arithmetic_binary(a, b, BinaryOp::Add, s);
}
array subtract(const array& a, const array& b, StreamOrDevice s) {
  return arithmetic_binary(a, b, BinaryOp::Subtract, s);
}
array multiply(const array& a, const array& b, StreamOrDevice s) {
  return arithmetic_binary(a, b, BinaryOp::Multiply, s);
}
array divide(const array& a, const array& b, StreamOrDevice s) {
  auto dt = at_least_float(promote_types(a.dtype(), b.dtype()));
  return make_binary(a, b, BinaryOp::Divide, dt, dt, s);
}
array floor_divide(const array& a, const array& b, StreamOrDevice s) {
  require_not_complex(a, "floor_divide");
  require_not_complex(b, "floor_divide");
  // One kernel for floats too (floor(a / b) in the compute type, rounded once), so that
  // floor_divide and divmod's quotient agree for 16-bit floats.
  auto dt = promote_types(a.dtype(), b.dtype());
  return make_binary(a, b, BinaryOp::FloorDivide, dt, dt, s);
}
array remainder(const array& a, const array& b, StreamOrDevice s) {
  require_not_complex(a, "remainder");
  require_not_complex(b, "remainder");
  return arithmetic_binary(a, b, BinaryOp::Remainder, s);
}
std::vector<array> divmod(const array& a, const array& b, StreamOrDevice s) {
  require_not_complex(a, "divmod");
  require_not_complex(b, "divmod");
  auto stream = to_stream(s);
  auto dt = promote_types(a.dtype(), b.dtype());
  auto inputs = broadcast_operands(stream, astype(a, dt, stream), astype(b, dt, stream));
  auto shape = inputs[0].shape();
  return array::make_arrays({shape, shape}, {dt, dt}, std::make_shared<DivMod>(stream), inputs);
}
array power(const array& a, const array& b, StreamOrDevice s) {
  return arithmetic_binary(a, b, BinaryOp::Power, s);
}
array maximum(const array& a, const array& b, StreamOrDevice s) {
  return arithmetic_binary(a, b, BinaryOp::Maximum, s);
}
array minimum(const array& a, const array& b, StreamOrDevice s) {
  return arithmetic_binary(a, b, BinaryOp::Minimum, s);
}
array equal(const array& a, const array& b, StreamOrDevice s) {
  return compare_binary(a, b, BinaryOp::Equal, s);
}
array not_equal(const array& a, const array& b, StreamOrDevice s) {
  return compare_binary(a, b, BinaryOp::NotEqual, s);
}
array less(const array& a, const array& b, StreamOrDevice s) {
  return compare_binary(a, b, BinaryOp::Less, s);
}
array less_equal(const array& a, const array& b, StreamOrDevice s) {
  return compare_binary(a, b, BinaryOp::LessEqual, s);
}
array greater(const array& a, const array& b, StreamOrDevice s) {
  return compare_binary(a, b, BinaryOp::Greater, s);
}
array greater_equal(const array& a, const array& b, StreamOrDevice s) {
  return compare_binary(a, b, BinaryOp::GreaterEqual, s);
}
// Truth value of each element: astype(bool) keeps only the real part of a complex value,
// but a complex value is true when either part is nonzero (as in logical_not).
namespace {
array truth(const array& a, StreamOrDevice s) {
  return is_complex(a.dtype()) ? not_equal(a, array(0.0f, complex64), s) : a;
}
}  // namespace
array logical_and(const array& a, const array& b, StreamOrDevice s) {
  return make_binary(truth(a, s), truth(b, s), BinaryOp::LogicalAnd, bool_, bool_, s);
}
array logical_or(const array& a, const array& b, StreamOrDevice s) {
  return make_binary(truth(a, s), truth(b, s), BinaryOp::LogicalOr, bool_, bool_, s);
}
array logaddexp(const array& a, const array& b, StreamOrDevice s) {
  return real_float_binary(a, b, BinaryOp::LogAddExp, "logaddexp", s);
}
array arctan2(const array& a, const array& b, StreamOrDevice s) {
  return real_float_binary(a, b, BinaryOp::ArcTan2, "arctan2", s);
}
array bitwise_and(const array& a, const array& b, StreamOrDevice s) {
  return integral_binary(a, b, BinaryOp::BitwiseAnd, "bitwise_and", s);
}
array bitwise_or(const array& a, const array& b, StreamOrDevice s) {
  return integral_binary(a, b, BinaryOp::BitwiseOr, "bitwise_or", s);
}
array bitwise_xor(const array& a, const array& b, StreamOrDevice s) {
  return integral_binary(a, b, BinaryOp::BitwiseXor, "bitwise_xor", s);
}
array left_shift(const array& a, const array& b, StreamOrDevice s) {
  auto dt = integral_result_type(a, b, "left_shift");
  // bool shifts as uint8, as MLX does
  dt = dt == bool_ ? uint8 : dt;
  return make_binary(a, b, BinaryOp::LeftShift, dt, dt, s);
}
array right_shift(const array& a, const array& b, StreamOrDevice s) {
  auto dt = integral_result_type(a, b, "right_shift");
  dt = dt == bool_ ? uint8 : dt;
  return make_binary(a, b, BinaryOp::RightShift, dt, dt, s);
}

array operator+(const array& a, const array& b) {
  return add(a, b);
}
array operator-(const array& a, const array& b) {
  return subtract(a, b);
}
array operator*(const array& a, const array& b) {
  return multiply(a, b);
}
array operator/(const array& a, const array& b) {
  return divide(a, b);
}
array operator/(const array& a, double b) {
  return divide(a, array(b));
}
array operator/(double a, const array& b) {
  return divide(array(a), b);
}
array operator%(const array& a, const array& b) {
  return remainder(a, b);
}
array operator==(const array& a, const array& b) {
  return equal(a, b);
}
array operator!=(const array& a, const array& b) {
  return not_equal(a, b);
}
array operator<(const array& a, const array& b) {
  return less(a, b);
}
array operator<=(const array& a, const array& b) {
  return less_equal(a, b);
}
array operator>(const array& a, const array& b) {
  return greater(a, b);
}
array operator>=(const array& a, const array& b) {
  return greater_equal(a, b);
}
array operator&&(const array& a, const array& b) {
  return logical_and(a, b);
}
array operator||(const array& a, const array& b) {
  return logical_or(a, b);
}
array operator!(const array& a) {
  return logical_not(a);
}
array operator&(const array& a, const array& b) {
  return bitwise_and(a, b);
}
array operator|(const array& a, const array& b) {
  return bitwise_or(a, b);
}
array operator^(const array& a, const array& b) {
  return bitwise_xor(a, b);
}
array operator<<(const array& a, const array& b) {
  return left_shift(a, b);
}
array operator>>(const array& a, const array& b) {
  return right_shift(a, b);
}

// ---- Selection and comparison ------------------------------------------------------------

array where(const array& condition, const array& x, const array& y, StreamOrDevice s) {
  auto stream = to_stream(s);
  auto dt = promote_types(x.dtype(), y.dtype());
  auto inputs = broadcast_operands(stream, astype(condition, bool_, stream), astype(x, dt, stream),
                                   astype(y, dt, stream));
  auto shape = inputs[0].shape();
  return array(std::move(shape), dt, std::make_shared<Select>(stream), std::move(inputs));
}

array isclose(const array& a, const array& b, double rtol, double atol, bool equal_nan,
              StreamOrDevice s) {
  // |a - b| <= atol + rtol * |b|, with equal infinities close and NaN per equal_nan.
  auto dt = at_least_float(promote_types(a.dtype(), b.dtype()));
  auto af = astype(a, dt, s);
  auto bf = astype(b, dt, s);
  auto rhs = add(array(atol, dt), multiply(array(rtol, dt), abs(bf, s), s), s);
  auto out = less_equal(abs(subtract(af, bf, s), s), rhs, s);
  // inf - inf is nan; equal infinities are close, unequal ones are not.
  auto both_inf = logical_and(isinf(af, s), isinf(bf, s), s);
  out = where(both_inf, equal(af, bf, s), out, s);
  if (equal_nan) {
    out = logical_or(out, logical_and(isnan(af, s), isnan(bf, s), s), s);
  }
  return out;
}

array allclose(const array& a, const array& b, double rtol, double atol, bool equal_nan,
               StreamOrDevice s) {
  return all(isclose(a, b, rtol, atol, equal_nan, s), false, s);
}

array array_equal(const array& a, const array& b, bool equal_nan, StreamOrDevice s) {
  if (a.shape() != b.shape()) {
    return array(false);
  }
  auto dt = promote_types(a.dtype(), b.dtype());
  auto op =
      equal_nan && (is_floating_point(dt) || is_complex(dt)) ? BinaryOp::NaNEqual : BinaryOp::Equal;
  return all(make_binary(a, b, op, dt, bool_, s), false, s);
}

}  // namespace mlx::core
