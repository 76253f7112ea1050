// Facts read from a compiled module (codegen.h: workgroup_memory_bytes).
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
  OpConstant = 43,
  OpConstantComposite = 44,
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
  OpShiftRightLogical = 194,
  OpShiftLeftLogical = 196,
  OpBitwiseAnd = 199,
  DecorationSpecId = 1,
  StorageWorkgroup = 4,
};

// The value of a specialization-constant operation over 32-bit integers; 0 for one not
// listed (the count is then a lower bound).
uint64_t spec_op(uint32_t op, uint64_t a, uint64_t b) {
  switch (op) {
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
  std::map<uint32_t, uint64_t> bytes, value;
  std::map<uint32_t, std::vector<uint32_t>> composite;
  std::map<uint32_t, uint32_t> pointee, spec_id;
  uint64_t total = 0;
  for (size_t i = 5; i < words.size();) {
    uint32_t op = words[i] & 0xffff, n = words[i] >> 16;
    if (n == 0 || i + n > words.size()) {
      break;  // malformed: count what was read
    }
    const uint32_t* a = &words[i + 1];
    switch (op) {
      case OpDecorate:
        if (n >= 4 && a[1] == DecorationSpecId) {
          spec_id[a[0]] = a[2];
        }
        break;
      case OpTypeInt:
      case OpTypeFloat:
        bytes[a[0]] = a[1] / 8;
        break;
      case OpTypeVector:
        bytes[a[0]] = bytes[a[1]] * a[2];
        break;
      case OpTypeArray:
        bytes[a[0]] = bytes[a[1]] * value[a[2]];
        break;
      case OpTypeStruct: {
        uint64_t sum = 0;  // members packed: a lower bound where the layout pads
        for (uint32_t m = 1; m + 1 < n; ++m) {
          sum += bytes[a[m]];
        }
        bytes[a[0]] = sum;
        break;
      }
      case OpTypePointer:
        pointee[a[0]] = a[2];
        break;
      case OpConstant:
        value[a[1]] = a[2];
        break;
      case OpSpecConstant: {
        auto id = spec_id.find(a[1]);
        auto given = id == spec_id.end() ? spec_values.end() : spec_values.find(id->second);
        value[a[1]] = given != spec_values.end() ? given->second : a[2];
        break;
      }
      case OpConstantComposite:
      case OpSpecConstantComposite:
        composite[a[1]].assign(a + 2, a + n - 1);
        break;
      case OpSpecConstantOp:
        if (a[2] == OpCompositeExtract && n >= 6) {
          const auto& parts = composite[a[3]];
          value[a[1]] = a[4] < parts.size() ? value[parts[a[4]]] : 0;
        } else if (n >= 6) {
          value[a[1]] = spec_op(a[2], value[a[3]], value[a[4]]);
        }
        break;
      case OpVariable:
        if (a[2] == StorageWorkgroup) {
          total += bytes[pointee[a[0]]];
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
