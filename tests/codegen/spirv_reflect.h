// Just enough SPIR-V reading for the tests to check the binding and push-constant
// conventions of a compiled kernel against what render() and elementwise_launch promise.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

struct SpirvLayout {
  std::set<uint32_t> bindings;                         // descriptor bindings (set 0)
  std::set<uint32_t> spec_ids;                         // specialization constant ids
  std::vector<std::pair<std::string, uint32_t>> push;  // push-constant members by offset
  uint32_t push_bytes = 0;                             // end of the last push-constant member
};

inline SpirvLayout reflect(const std::vector<uint32_t>& w) {
  enum : uint32_t {
    OpMemberName = 6,
    OpTypeInt = 21,
    OpTypeFloat = 22,
    OpTypeArray = 28,
    OpTypeStruct = 30,
    OpTypePointer = 32,
    OpConstant = 43,
    OpVariable = 59,
    OpDecorate = 71,
    OpMemberDecorate = 72,
  };
  enum : uint32_t { SpecId = 1, Binding = 33, Offset = 35, PushConstant = 9 };
  std::map<uint32_t, std::map<uint32_t, std::string>> member_names;
  std::map<uint32_t, std::map<uint32_t, uint32_t>> member_offsets;
  std::map<uint32_t, std::vector<uint32_t>> struct_members;
  std::map<uint32_t, uint32_t> scalar_bytes, constants, pointee;
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> arrays;  // id -> (element type, length id)
  uint32_t push_struct = 0;
  SpirvLayout out;
  for (size_t i = 5; i < w.size();) {
    uint32_t op = w[i] & 0xffff, n = w[i] >> 16;
    const uint32_t* a = &w[i + 1];
    switch (op) {
      case OpMemberName:
        member_names[a[0]][a[1]] = reinterpret_cast<const char*>(&a[2]);
        break;
      case OpTypeInt:
      case OpTypeFloat:
        scalar_bytes[a[0]] = a[1] / 8;
        break;
      case OpTypeArray:
        arrays[a[0]] = {a[1], a[2]};
        break;
      case OpTypeStruct:
        struct_members[a[0]] = std::vector<uint32_t>(a + 1, a + n - 1);
        break;
      case OpTypePointer:
        pointee[a[0]] = a[2];
        break;
      case OpVariable:
        if (a[2] == PushConstant) {
          push_struct = pointee[a[0]];
        }
        break;
      case OpConstant:
        constants[a[1]] = a[2];
        break;
      case OpDecorate:
        if (a[1] == Binding) {
          out.bindings.insert(a[2]);
        } else if (a[1] == SpecId) {
          out.spec_ids.insert(a[2]);
        }
        break;
      case OpMemberDecorate:
        if (a[2] == Offset) {
          member_offsets[a[0]][a[1]] = a[3];
        }
        break;
      default:
        break;
    }
    i += n;
  }
  if (push_struct) {
    const auto& types = struct_members[push_struct];
    for (const auto& [index, offset] : member_offsets[push_struct]) {
      out.push.emplace_back(member_names[push_struct][index], offset);
      uint32_t t = types[index];
      uint32_t bytes = scalar_bytes.count(t) ? scalar_bytes[t] : 0;
      if (arrays.count(t)) {
        bytes = scalar_bytes[arrays[t].first] * constants[arrays[t].second];
      }
      out.push_bytes = std::max(out.push_bytes, offset + bytes);
    }
  }
  return out;
}
