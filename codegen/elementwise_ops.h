// The GLSL expression of every elementwise op, per compute kind (internal to codegen).
#pragma once

#include <string>
#include <vector>

#include "codegen/dtypes.h"

namespace mlx::core::vulkan::codegen {

struct OpExpr {
  std::string params;  // macro parameters: "x", "a, b" or "c, x, y"
  std::string body;    // GLSL expression in those parameters (compute types)
  std::string out;     // the output dtype the op produces ("b" for predicates)
  std::string math;    // include/math.glsl function group it needs, e.g. "EXP" ("" = none)
};

// Throws std::invalid_argument naming the kernel (`where`) for an unknown op or a dtype the
// op does not accept. `in` lists the input dtypes as given in the key.
OpExpr elementwise_op(const std::string& family, const std::string& op,
                      const std::vector<const DtypeInfo*>& in, const std::string& where);

// All op names of a family, for tests and tools.
std::vector<std::string> elementwise_op_names(const std::string& family);

}  // namespace mlx::core::vulkan::codegen
