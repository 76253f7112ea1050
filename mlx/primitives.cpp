#include "mlx/primitives.h"

#include "mlx/ops.h"

#include <stdexcept>

namespace mlx::core {

std::vector<Shape> Primitive::output_shapes(const std::vector<array>&) {
  throw std::invalid_argument(std::string("[Primitive::output_shapes] ") + name() +
                              " cannot infer output shapes.");
}

// Elementwise primitives: the broadcast of their inputs' shapes (shapeless compile).
std::vector<Shape> Unary::output_shapes(const std::vector<array>& inputs) {
  return {inputs[0].shape()};
}

std::vector<Shape> Binary::output_shapes(const std::vector<array>& inputs) {
  return {broadcast_shapes(inputs[0].shape(), inputs[1].shape())};
}

std::vector<Shape> Select::output_shapes(const std::vector<array>& inputs) {
  return {broadcast_shapes(broadcast_shapes(inputs[0].shape(), inputs[1].shape()),
                           inputs[2].shape())};
}

const char* unary_op_name(UnaryOp op) {
  static const char* names[] = {
      "Abs",    "Negative", "Sign",    "Sqrt",    "Rsqrt",   "Square",     "Exp",
      "Expm1",  "Log",      "Log1p",   "Log2",    "Log10",   "Sin",        "Cos",
      "Tan",    "ArcSin",   "ArcCos",  "ArcTan",  "Sinh",    "Cosh",       "Tanh",
      "ArcSinh", "ArcCosh", "ArcTanh", "Sigmoid", "Erf",     "ErfInv",     "Floor",
      "Ceil",   "Round",    "LogicalNot", "BitwiseInvert", "IsNan", "IsInf"};
  return names[static_cast<int>(op)];
}

const char* binary_op_name(BinaryOp op) {
  static const char* names[] = {
      "Add",        "Subtract",   "Multiply",   "Divide",     "FloorDivide", "Remainder",
      "Power",      "Maximum",    "Minimum",    "Equal",      "NotEqual",    "Less",
      "LessEqual",  "Greater",    "GreaterEqual", "LogicalAnd", "LogicalOr", "LogAddExp",
      "ArcTan2",    "BitwiseAnd", "BitwiseOr",  "BitwiseXor", "LeftShift",   "RightShift",
      "NaNEqual"};
  return names[static_cast<int>(op)];
}

bool binary_op_is_predicate(BinaryOp op) {
  switch (op) {
    case BinaryOp::Equal:
    case BinaryOp::NotEqual:
    case BinaryOp::Less:
    case BinaryOp::LessEqual:
    case BinaryOp::Greater:
    case BinaryOp::GreaterEqual:
    case BinaryOp::LogicalAnd:
    case BinaryOp::LogicalOr:
    case BinaryOp::NaNEqual:
      return true;
    default:
      return false;
  }
}

bool Unary::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Unary*>(&other);
  return o && o->op_ == op_;
}

bool Binary::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Binary*>(&other);
  return o && o->op_ == op_;
}

const char* Reduce::name() const {
  switch (type_) {
    case ReduceType::Sum:
      return "Sum";
    case ReduceType::Prod:
      return "Prod";
    case ReduceType::Max:
      return "Max";
    case ReduceType::Min:
      return "Min";
    case ReduceType::And:
      return "All";
    case ReduceType::Or:
      return "Any";
  }
  return "Reduce";
}

std::vector<array> glu_halves(const array& product, Stream s, bool gpu) {
  // Views of the two halves of the last axis (Slice's own eval: no copy).
  Shape start(product.ndim(), 0), stop = product.shape(), step(product.ndim(), 1);
  int half = product.shape(-1) / 2;
  std::vector<array> halves;
  for (int k = 0; k < 2; ++k) {
    start.back() = k * half;
    stop.back() = (k + 1) * half;
    Shape shape = product.shape();
    shape.back() = half;
    array h(shape, product.dtype(), nullptr, {});
    Slice slice(s, start, stop, step);
    if (gpu) {
      slice.eval_gpu({product}, h);
    } else {
      slice.eval_cpu({product}, h);
    }
    halves.push_back(h);
  }
  return halves;
}

bool reinterprets_bits(Dtype from, Dtype to) {
  return is_integral(from) && is_integral(to) && size_of(from) == size_of(to);
}

} // namespace mlx::core
