// Facts read from a compiled module (codegen.h: workgroup_memory_bytes).
#include <algorithm>
#include <map>
#include <vector>

#include "codegen/codegen.h"

namespace mlx::core::vulkan::codegen {

namespace {

enum : uint32_t {
  OpTypeInt = 21,
  OpTypeFloat = 22,
  OpTypeVector = 23,
  OpTypeArray = 28,
  OpTypeStruct = 30,
  OpTypePointer = 32,
  OpConstantTrue = 41,
  OpConstantFalse = 42,
  OpConstant = 43,
  OpConstantComposite = 44,
  OpSpecConstantTrue = 48,
  OpSpecConstantFalse = 49,
  OpSpecConstant = 50,
  OpSpecConstantComposite = 51,
  OpSpecConstantOp = 52,
  OpVariable = 59,
  OpDecorate = 71,
  OpCompositeExtract = 81,
  OpIAdd = 128,
  OpISub = 130,
  OpIMul = 132,
  OpUDiv = 134,
  OpSDiv = 135,
  OpUMod = 137,
  OpLogicalEqual = 164,
  OpLogicalNotEqual = 165,
  OpLogicalOr = 166,
  OpLogicalAnd = 167,
  OpLogicalNot = 168,
  OpSelect = 169,
  OpIEqual = 170,
  OpINotEqual = 171,
  OpUGreaterThan = 172,
  OpSGreaterThan = 173,
  OpUGreaterThanEqual = 174,
  OpSGreaterThanEqual = 175,
  OpULessThan = 176,
  OpSLessThan = 177,
  OpULessThanEqual = 178,
  OpSLessThanEqual = 179,
  OpShiftRightLogical = 194,
  OpShiftLeftLogical = 196,
  OpBitwiseAnd = 199,
  DecorationSpecId = 1,
  StorageWorkgroup = 4,
};

// The value of a two-operand specialization-constant operation over 32-bit integers and
// booleans (1 / 0); 0 for one not listed (the count is then a lower bound). glslang emits
// these for array lengths such as `WGS * TEAM_VALUES` and `SUBGROUP == 1 ? 1 : WGS`.
uint64_t spec_op(uint32_t op, uint64_t a, uint64_t b) {
  auto sa = static_cast<int32_t>(static_cast<uint32_t>(a));
  auto sb = static_cast<int32_t>(static_cast<uint32_t>(b));
  switch (op) {
    case OpLogicalEqual:
      return (a != 0) == (b != 0);
    case OpLogicalNotEqual:
      return (a != 0) != (b != 0);
    case OpLogicalOr:
      return a != 0 || b != 0;
    case OpLogicalAnd:
      return a != 0 && b != 0;
    case OpIEqual:
      return a == b;
    case OpINotEqual:
      return a != b;
    case OpUGreaterThan:
      return a > b;
    case OpSGreaterThan:
      return sa > sb;
    case OpUGreaterThanEqual:
      return a >= b;
    case OpSGreaterThanEqual:
      return sa >= sb;
    case OpULessThan:
      return a < b;
    case OpSLessThan:
      return sa < sb;
    case OpULessThanEqual:
      return a <= b;
    case OpSLessThanEqual:
      return sa <= sb;
    case OpIAdd:
      return (a + b) & 0xffffffffu;
    case OpISub:
      return (a - b) & 0xffffffffu;
    case OpIMul:
      return (a * b) & 0xffffffffu;
    case OpUDiv:
    case OpSDiv:
      return b ? a / b : 0;
    case OpUMod:
      return b ? a % b : 0;
    case OpShiftRightLogical:
      return b < 32 ? a >> b : 0;
    case OpShiftLeftLogical:
      return b < 32 ? (a << b) & 0xffffffffu : 0;
    case OpBitwiseAnd:
      return a & b;
    default:
      return 0;
  }
}

}  // namespace

uint32_t workgroup_memory_bytes(const std::vector<uint32_t>& words,
                                const std::map<uint32_t, uint32_t>& spec_values) {
  // Every id is below the header's bound: tables indexed by id keep this cheap (the runtime
  // counts each kernel it builds or loads from the disk cache). An instruction naming an
  // id past the bound is skipped.
  if (words.size() < 5) {
    return 0;
  }
  const uint32_t bound = std::min<uint32_t>(words[3], 1u << 20);
  std::vector<uint64_t> bytes(bound), value(bound);
  std::vector<uint32_t> pointee(bound), spec_id(bound, ~0u);
  std::map<uint32_t, std::vector<uint32_t>> composite;
  auto get = [&](const std::vector<uint64_t>& table, uint32_t id) {
    return id < bound ? table[id] : 0;
  };
  uint64_t total = 0;
  for (size_t i = 5; i < words.size();) {
    uint32_t op = words[i] & 0xffff, n = words[i] >> 16;
    if (n == 0 || i + n > words.size()) {
      break;  // malformed: count what was read
    }
    const uint32_t* a = &words[i + 1];
    // The id an instruction defines: operand 0 for types, 1 after a result type.
    uint32_t def = n >= 2 ? a[0] : bound;
    if (op == OpConstant || op == OpSpecConstant || op == OpConstantComposite ||
        op == OpSpecConstantComposite || op == OpSpecConstantOp || op == OpConstantTrue ||
        op == OpConstantFalse || op == OpSpecConstantTrue || op == OpSpecConstantFalse) {
      def = n >= 3 ? a[1] : bound;
    }
    if (op != OpDecorate && op != OpVariable && def >= bound) {
      i += n;
      continue;
    }
    switch (op) {
      case OpDecorate:
        if (n >= 4 && a[1] == DecorationSpecId && a[0] < bound) {
          spec_id[a[0]] = a[2];
        }
        break;
      case OpTypeInt:
      case OpTypeFloat:
        bytes[def] = n >= 3 ? a[1] / 8 : 0;
        break;
      case OpTypeVector:
        bytes[def] = n >= 4 ? get(bytes, a[1]) * a[2] : 0;
        break;
      case OpTypeArray:
        bytes[def] = n >= 4 ? get(bytes, a[1]) * get(value, a[2]) : 0;
        break;
      case OpTypeStruct: {
        uint64_t sum = 0;  // members packed: a lower bound where the layout pads
        for (uint32_t m = 1; m + 1 < n; ++m) {
          sum += get(bytes, a[m]);
        }
        bytes[def] = sum;
        break;
      }
      case OpTypePointer:
        pointee[def] = n >= 4 ? a[2] : 0;
        break;
      case OpConstant:
        value[def] = n >= 4 ? a[2] : 0;
        break;
      case OpConstantTrue:
      case OpConstantFalse:
        value[def] = op == OpConstantTrue;
        break;
      case OpSpecConstantTrue:
      case OpSpecConstantFalse: {
        auto given = spec_values.find(spec_id[def]);
        value[def] = given != spec_values.end() ? given->second != 0 : op == OpSpecConstantTrue;
        break;
      }
      case OpSpecConstant: {
        auto given = spec_values.find(spec_id[def]);
        value[def] = given != spec_values.end() ? given->second : (n >= 4 ? a[2] : 0);
        break;
      }
      case OpConstantComposite:
      case OpSpecConstantComposite:
        composite[def].assign(a + 2, a + n - 1);
        break;
      case OpSpecConstantOp:
        if (n >= 6 && a[2] == OpCompositeExtract) {
          auto parts = composite.find(a[3]);
          value[def] = parts != composite.end() && a[4] < parts->second.size()
                           ? get(value, parts->second[a[4]])
                           : 0;
        } else if (a[2] == OpSelect && n >= 7) {
          value[def] = get(value, a[3]) != 0 ? get(value, a[4]) : get(value, a[5]);
        } else if (a[2] == OpLogicalNot && n >= 5) {
          value[def] = get(value, a[3]) == 0;
        } else if (n >= 6) {
          value[def] = spec_op(a[2], get(value, a[3]), get(value, a[4]));
        }
        break;
      case OpVariable:
        if (n >= 4 && a[2] == StorageWorkgroup && a[0] < bound) {
          total += get(bytes, pointee[a[0]]);
        }
        break;
      default:
        break;
    }
    i += n;
  }
  return static_cast<uint32_t>(total > 0xffffffffu ? 0xffffffffu : total);
}

}  // namespace mlx::core::vulkan::codegen
