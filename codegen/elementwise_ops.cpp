// Op expressions for the elementwise families. Integer helpers (op_*) live in
// templates/include/int_ops.glsl, float ones (m_*) in templates/include/math.glsl; both
// follow the CPU reference (mlx/backend/cpu) for NaN, infinities, division by zero and
// integer overflow.
#include "codegen/elementwise_ops.h"

#include <stdexcept>

namespace mlx::core::vulkan::codegen {

namespace {

constexpr int B = 1, U = 2, I = 4, F = 8;
constexpr int ALL = B | U | I | F, INTS = U | I;

int kind_bit(Kind k) {
  switch (k) {
    case Kind::Bool:
      return B;
    case Kind::Uint:
      return U;
    case Kind::Int:
      return I;
    case Kind::Float:
      return F;
  }
  return 0;
}

struct OpRule {
  const char* name;
  int accepts;            // kinds of input dtype
  bool predicate;         // output is bool
  const char* f_expr;     // float inputs
  const char* i_expr;     // integer inputs (signed and unsigned)
  const char* b_expr;     // bool inputs (uint 0/1); nullptr: same as i_expr
  const char* math = "";  // include/math.glsl group f_expr needs ("" = always present)
  // f16/bf16 inputs, when they may use a faster f32 routine whose error stays far below
  // half an ulp of the 16-bit result (math.glsl, "16-bit results"); nullptr: f_expr.
  const char* f16_expr = nullptr;
};

// Unary: parameter x.
const OpRule kUnary[] = {
    {"Abs", ALL, false, "abs(x)", "op_abs(x)", "(x)"},
    {"Negative", INTS | F, false, "(-(x))", "op_negative(x)", nullptr},
    {"Sign", ALL, false, "m_sign(x)", "op_sign(x)", "(x)"},
    {"Sqrt", F, false, "m_sqrt(x)", "", nullptr},
    {"Rsqrt", F, false, "m_rsqrt(x)", "", nullptr},
    {"Square", ALL, false, "((x) * (x))", "op_square(x)", "(x)"},
    {"Exp", F, false, "m_exp(x)", "", nullptr, "EXP", "m_exp16(x)"},
    {"Expm1", F, false, "m_expm1(x)", "", nullptr, "EXP"},
    {"Log", F, false, "m_log(x)", "", nullptr, "LOG"},
    {"Log1p", F, false, "m_log1p(x)", "", nullptr, "LOG"},
    {"Log2", F, false, "m_log2(x)", "", nullptr, "LOG"},
    {"Log10", F, false, "m_log10(x)", "", nullptr, "LOG"},
    {"Sin", F, false, "m_sin(x)", "", nullptr, "TRIG"},
    {"Cos", F, false, "m_cos(x)", "", nullptr, "TRIG"},
    {"Tan", F, false, "m_tan(x)", "", nullptr, "TRIG"},
    {"ArcSin", F, false, "m_asin(x)", "", nullptr, "ATAN"},
    {"ArcCos", F, false, "m_acos(x)", "", nullptr, "ATAN"},
    {"ArcTan", F, false, "m_atan(x)", "", nullptr, "ATAN"},
    {"Sinh", F, false, "m_sinh(x)", "", nullptr, "HYPER"},
    {"Cosh", F, false, "m_cosh(x)", "", nullptr, "HYPER"},
    {"Tanh", F, false, "m_tanh(x)", "", nullptr, "HYPER"},
    {"ArcSinh", F, false, "m_asinh(x)", "", nullptr, "HYPER"},
    {"ArcCosh", F, false, "m_acosh(x)", "", nullptr, "HYPER"},
    {"ArcTanh", F, false, "m_atanh(x)", "", nullptr, "HYPER"},
    {"Sigmoid", F, false, "m_sigmoid(x)", "", nullptr, "SIGMOID", "m_sigmoid16(x)"},
    {"Erf", F, false, "m_erf(x)", "", nullptr, "ERF"},
    {"ErfInv", F, false, "m_erfinv(x)", "", nullptr, "ERFINV"},
    {"Floor", ALL, false, "floor(x)", "(x)", nullptr},
    {"Ceil", ALL, false, "ceil(x)", "(x)", nullptr},
    {"Round", ALL, false, "roundEven(x)", "(x)", nullptr},
    {"LogicalNot", ALL, true, "((x) == 0.0f ? 1u : 0u)", "((x) == OP_T(0) ? 1u : 0u)", nullptr},
    {"BitwiseInvert", B | INTS, false, "", "(~(x))", "(1u - (x))"},
    {"IsNan", ALL, true, "(m_isnan(x) ? 1u : 0u)", "0u", nullptr},
    {"IsInf", ALL, true, "(m_isinf(x) ? 1u : 0u)", "0u", nullptr},
};

// Binary: parameters a, b (same dtype).
const OpRule kBinary[] = {
    {"Add", ALL, false, "((a) + (b))", "((a) + (b))", nullptr},
    {"Subtract", ALL, false, "((a) - (b))", "((a) - (b))", nullptr},
    {"Multiply", ALL, false, "((a) * (b))", "((a) * (b))", nullptr},
    {"Divide", F, false, "m_div(a, b)", "", nullptr, "DIV"},
    {"FloorDivide", ALL, false, "floor(m_div(a, b))", "op_floor_divide(a, b)", nullptr, "DIV"},
    {"Remainder", ALL, false, "m_remainder(a, b)", "op_remainder(a, b)", nullptr, "FMOD"},
    {"Power", ALL, false, "m_pow(a, b)", "op_power(a, b)", nullptr, "POW"},
    {"Maximum", ALL, false, "m_maximum(a, b)", "op_maximum(a, b)", nullptr},
    {"Minimum", ALL, false, "m_minimum(a, b)", "op_minimum(a, b)", nullptr},
    {"Equal", ALL, true, "((a) == (b) ? 1u : 0u)", "((a) == (b) ? 1u : 0u)", nullptr},
    // == is ordered, so NaN compares unequal without relying on != being unordered.
    {"NotEqual", ALL, true, "((a) == (b) ? 0u : 1u)", "((a) == (b) ? 0u : 1u)", nullptr},
    {"Less", ALL, true, "((a) < (b) ? 1u : 0u)", "((a) < (b) ? 1u : 0u)", nullptr},
    {"LessEqual", ALL, true, "((a) <= (b) ? 1u : 0u)", "((a) <= (b) ? 1u : 0u)", nullptr},
    {"Greater", ALL, true, "((a) > (b) ? 1u : 0u)", "((a) > (b) ? 1u : 0u)", nullptr},
    {"GreaterEqual", ALL, true, "((a) >= (b) ? 1u : 0u)", "((a) >= (b) ? 1u : 0u)", nullptr},
    {"LogicalAnd", ALL, true, "((a) == 0.0f || (b) == 0.0f ? 0u : 1u)",
     "((a) == OP_T(0) || (b) == OP_T(0) ? 0u : 1u)", nullptr},
    {"LogicalOr", ALL, true, "((a) == 0.0f && (b) == 0.0f ? 0u : 1u)",
     "((a) == OP_T(0) && (b) == OP_T(0) ? 0u : 1u)", nullptr},
    {"LogAddExp", F, false, "m_logaddexp(a, b)", "", nullptr, "LOGADDEXP"},
    {"ArcTan2", F, false, "m_atan2(a, b)", "", nullptr, "ATAN"},
    {"BitwiseAnd", B | INTS, false, "", "((a) & (b))", nullptr},
    {"BitwiseOr", B | INTS, false, "", "((a) | (b))", nullptr},
    {"BitwiseXor", B | INTS, false, "", "((a) ^ (b))", nullptr},
    {"LeftShift", INTS, false, "", "op_left_shift(a, b)", nullptr},
    {"RightShift", INTS, false, "", "op_right_shift(a, b)", nullptr},
    {"NaNEqual", ALL, true, "((a) == (b) || (m_isnan(a) && m_isnan(b)) ? 1u : 0u)",
     "((a) == (b) ? 1u : 0u)", nullptr},
};

template <size_t N>
const OpRule* find(const OpRule (&table)[N], const std::string& op) {
  for (const auto& r : table) {
    if (op == r.name) {
      return &r;
    }
  }
  return nullptr;
}

std::string kinds_text(int accepts) {
  std::string s;
  auto add = [&](int bit, const char* name) {
    if (accepts & bit) {
      s += s.empty() ? name : std::string(", ") + name;
    }
  };
  add(B, "bool");
  add(U, "unsigned");
  add(I, "signed");
  add(F, "floating point");
  return s;
}

OpExpr from_rule(const OpRule& rule, const DtypeInfo& in, const char* params,
                 const std::string& where) {
  if (!(rule.accepts & kind_bit(in.kind))) {
    throw std::invalid_argument("[render] " + where + ": " + rule.name + " does not accept " +
                                in.name + " inputs (accepts " + kinds_text(rule.accepts) + ").");
  }
  bool f16 = in.kind == Kind::Float && in.bits == 16 && rule.f16_expr;
  const char* body = f16                                    ? rule.f16_expr
                     : in.kind == Kind::Float               ? rule.f_expr
                     : in.kind == Kind::Bool && rule.b_expr ? rule.b_expr
                                                            : rule.i_expr;
  std::string math = in.kind == Kind::Float ? rule.math : "";
  return {params, body, rule.predicate ? "b" : in.name, math};
}

void require_count(const std::vector<const DtypeInfo*>& in, size_t n, const std::string& family,
                   const std::string& where) {
  if (in.size() != n) {
    throw std::invalid_argument("[render] " + where + ": family " + family + " takes " +
                                std::to_string(n) + " input dtype(s), got " +
                                std::to_string(in.size()) + ".");
  }
}

}  // namespace

OpExpr elementwise_op(const std::string& family, const std::string& op,
                      const std::vector<const DtypeInfo*>& in, const std::string& where) {
  if (family == "unary") {
    require_count(in, 1, family, where);
    if (const OpRule* r = find(kUnary, op)) {
      return from_rule(*r, *in[0], "x", where);
    }
  } else if (family == "binary") {
    require_count(in, 2, family, where);
    if (in[0] != in[1]) {
      throw std::invalid_argument("[render] " + where +
                                  ": binary inputs must share one dtype (the op layer casts "
                                  "them), got " +
                                  in[0]->name + " and " + in[1]->name + ".");
    }
    if (const OpRule* r = find(kBinary, op)) {
      return from_rule(*r, *in[0], "a, b", where);
    }
  } else if (family == "select") {
    require_count(in, 3, family, where);
    if (op != "Select") {
      throw std::invalid_argument("[render] " + where + ": family select has only op Select.");
    }
    if (in[0]->kind != Kind::Bool || in[1] != in[2]) {
      throw std::invalid_argument("[render] " + where + ": select takes (b, T, T) inputs, got (" +
                                  in[0]->name + ", " + in[1]->name + ", " + in[2]->name + ").");
    }
    return {"c, x, y", "((c) != 0u ? (x) : (y))", in[1]->name, ""};
  } else if (family == "copy") {
    require_count(in, 1, family, where);
    if (op != "Copy") {
      throw std::invalid_argument("[render] " + where + ": family copy has only op Copy.");
    }
    return {"x", "", "", ""};  // the caller builds the conversion for the output dtype
  } else {
    throw std::invalid_argument("[render] " + where + ": unknown elementwise family '" + family +
                                "'.");
  }
  throw std::invalid_argument("[render] " + where + ": unknown " + family + " op '" + op + "'.");
}

std::vector<std::string> elementwise_op_names(const std::string& family) {
  std::vector<std::string> names;
  if (family == "unary") {
    for (const auto& r : kUnary) {
      names.emplace_back(r.name);
    }
  } else if (family == "binary") {
    for (const auto& r : kBinary) {
      names.emplace_back(r.name);
    }
  } else if (family == "select") {
    names.emplace_back("Select");
  } else if (family == "copy") {
    names.emplace_back("Copy");
  }
  return names;
}

}  // namespace mlx::core::vulkan::codegen
