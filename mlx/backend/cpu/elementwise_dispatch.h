// The elementwise op enums mapped to their functors (elementwise_ops.h): one switch per
// enum, shared by the separate ops (unary.cpp, binary.cpp) and the fused CPU loop
// (compiled.cpp), so a new op is added in one place. `where` names the caller in errors.
#pragma once

#include <stdexcept>
#include <string>

#include "mlx/backend/cpu/elementwise_ops.h"
#include "mlx/primitives.h"

namespace mlx::core::cpu::elementwise {

template <typename F>
void dispatch_unary_op(UnaryOp op, const char* where, F&& f) {
  switch (op) {
    case UnaryOp::Abs:
      return f(Abs{});
    case UnaryOp::Negative:
      return f(Negative{});
    case UnaryOp::Sign:
      return f(Sign{});
    case UnaryOp::Sqrt:
      return f(Sqrt{});
    case UnaryOp::Rsqrt:
      return f(Rsqrt{});
    case UnaryOp::Square:
      return f(Square{});
    case UnaryOp::Exp:
      return f(Exp{});
    case UnaryOp::Expm1:
      return f(Expm1{});
    case UnaryOp::Log:
      return f(Log{});
    case UnaryOp::Log1p:
      return f(Log1p{});
    case UnaryOp::Log2:
      return f(Log2{});
    case UnaryOp::Log10:
      return f(Log10{});
    case UnaryOp::Sin:
      return f(Sin{});
    case UnaryOp::Cos:
      return f(Cos{});
    case UnaryOp::Tan:
      return f(Tan{});
    case UnaryOp::ArcSin:
      return f(ArcSin{});
    case UnaryOp::ArcCos:
      return f(ArcCos{});
    case UnaryOp::ArcTan:
      return f(ArcTan{});
    case UnaryOp::Sinh:
      return f(Sinh{});
    case UnaryOp::Cosh:
      return f(Cosh{});
    case UnaryOp::Tanh:
      return f(Tanh{});
    case UnaryOp::ArcSinh:
      return f(ArcSinh{});
    case UnaryOp::ArcCosh:
      return f(ArcCosh{});
    case UnaryOp::ArcTanh:
      return f(ArcTanh{});
    case UnaryOp::Sigmoid:
      return f(Sigmoid{});
    case UnaryOp::Erf:
      return f(Erf{});
    case UnaryOp::ErfInv:
      return f(ErfInv{});
    case UnaryOp::Floor:
      return f(Floor{});
    case UnaryOp::Ceil:
      return f(Ceil{});
    case UnaryOp::Round:
      return f(Round{});
    case UnaryOp::LogicalNot:
      return f(LogicalNot{});
    case UnaryOp::BitwiseInvert:
      return f(BitwiseInvert{});
    case UnaryOp::IsNan:
      return f(IsNan{});
    case UnaryOp::IsInf:
      return f(IsInf{});
  }
  throw std::invalid_argument(std::string("[") + where + "] unknown unary op.");
}

template <typename F>
void dispatch_binary_op(BinaryOp op, const char* where, F&& f) {
  switch (op) {
    case BinaryOp::Add:
      return f(Add{});
    case BinaryOp::Subtract:
      return f(Subtract{});
    case BinaryOp::Multiply:
      return f(Multiply{});
    case BinaryOp::Divide:
      return f(Divide{});
    case BinaryOp::FloorDivide:
      return f(FloorDivide{});
    case BinaryOp::Remainder:
      return f(Remainder{});
    case BinaryOp::Power:
      return f(Power{});
    case BinaryOp::Maximum:
      return f(Maximum{});
    case BinaryOp::Minimum:
      return f(Minimum{});
    case BinaryOp::Equal:
      return f(Equal{});
    case BinaryOp::NotEqual:
      return f(NotEqual{});
    case BinaryOp::Less:
      return f(Less{});
    case BinaryOp::LessEqual:
      return f(LessEqual{});
    case BinaryOp::Greater:
      return f(Greater{});
    case BinaryOp::GreaterEqual:
      return f(GreaterEqual{});
    case BinaryOp::LogicalAnd:
      return f(LogicalAnd{});
    case BinaryOp::LogicalOr:
      return f(LogicalOr{});
    case BinaryOp::LogAddExp:
      return f(LogAddExp{});
    case BinaryOp::ArcTan2:
      return f(ArcTan2{});
    case BinaryOp::BitwiseAnd:
      return f(BitwiseAnd{});
    case BinaryOp::BitwiseOr:
      return f(BitwiseOr{});
    case BinaryOp::BitwiseXor:
      return f(BitwiseXor{});
    case BinaryOp::LeftShift:
      return f(LeftShift{});
    case BinaryOp::RightShift:
      return f(RightShift{});
    case BinaryOp::NaNEqual:
      return f(NaNEqual{});
  }
  throw std::invalid_argument(std::string("[") + where + "] unknown binary op.");
}

}  // namespace mlx::core::cpu::elementwise
