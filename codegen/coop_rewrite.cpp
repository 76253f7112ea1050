#include "codegen/coop_rewrite.h"

#include <spirv-tools/libspirv.h>

#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>

namespace mlx::core::vulkan::codegen {

namespace {

// Opcodes, capabilities and operands (the SPIR-V unified grammar).
constexpr uint32_t kOpExtension = 10;
constexpr uint32_t kOpCapability = 17;
constexpr uint32_t kOpTypeInt = 21;
constexpr uint32_t kOpTypeFloat = 22;
constexpr uint32_t kOpConstantTrue = 41;
constexpr uint32_t kOpConstantFalse = 42;
constexpr uint32_t kOpConstant = 43;
constexpr uint32_t kOpTypePointer = 32;
constexpr uint32_t kOpConstantComposite = 44;
constexpr uint32_t kOpLoad = 61;
constexpr uint32_t kOpStore = 62;
constexpr uint32_t kOpAccessChain = 65;
constexpr uint32_t kOpInBoundsAccessChain = 66;
constexpr uint32_t kOpCompositeConstruct = 80;
constexpr uint32_t kOpCompositeExtract = 81;
constexpr uint32_t kOpCompositeInsert = 82;
constexpr uint32_t kOpBitcast = 124;
constexpr uint32_t kOpTypeMatrixNV = 5358;
constexpr uint32_t kOpLoadNV = 5359;
constexpr uint32_t kOpStoreNV = 5360;
constexpr uint32_t kOpMulAddNV = 5361;
constexpr uint32_t kOpLengthNV = 5362;
constexpr uint32_t kOpTypeMatrixKHR = 4456;
constexpr uint32_t kOpLoadKHR = 4457;
constexpr uint32_t kOpStoreKHR = 4458;
constexpr uint32_t kOpMulAddKHR = 4459;
constexpr uint32_t kOpLengthKHR = 4460;
constexpr uint32_t kCapMatrixNV = 5357;
constexpr uint32_t kCapMatrixKHR = 6022;
constexpr uint32_t kCapBFloat16Type = 5116;
constexpr uint32_t kCapBFloat16Matrix = 5118;
constexpr uint32_t kEncodingBFloat16 = 0;
constexpr uint32_t kUseA = 0, kUseB = 1, kUseAccumulator = 2;

struct Inst {
  uint32_t opcode;
  size_t at;  // word offset of the instruction
  uint32_t count;
  uint32_t type_id;
  uint32_t result_id;
};

struct Parsed {
  const uint32_t* base = nullptr;
  std::vector<Inst> insts;
};

spv_result_t on_instruction(void* user, const spv_parsed_instruction_t* inst) {
  auto* p = static_cast<Parsed*>(user);
  p->insts.push_back({inst->opcode, static_cast<size_t>(inst->words - p->base), inst->num_words,
                      inst->type_id, inst->result_id});
  return SPV_SUCCESS;
}

[[noreturn]] void fail(const std::string& why) {
  throw std::invalid_argument("[coop_nv_to_khr] " + why);
}

void emit(std::vector<uint32_t>& out, uint32_t opcode, std::initializer_list<uint32_t> operands) {
  out.push_back(static_cast<uint32_t>(operands.size() + 1) << 16 | opcode);
  out.insert(out.end(), operands);
}

void emit_extension(std::vector<uint32_t>& out, const std::string& name) {
  std::vector<uint32_t> text((name.size() + 4) / 4, 0);  // NUL-terminated, padded to words
  std::memcpy(text.data(), name.data(), name.size());
  out.push_back(static_cast<uint32_t>(text.size() + 1) << 16 | kOpExtension);
  out.insert(out.end(), text.begin(), text.end());
}

std::string extension_name(const uint32_t* words, uint32_t count) {
  const char* s = reinterpret_cast<const char*>(words + 1);
  return std::string(s, strnlen(s, (count - 1) * 4));
}

}  // namespace

std::vector<uint32_t> coop_nv_to_khr(const std::vector<uint32_t>& words, bool bf16_ab) {
  if (words.size() < 5) {
    fail("the module is shorter than its header.");
  }
  Parsed parsed;
  parsed.base = words.data();
  std::unique_ptr<spv_context_t, void (*)(spv_context)> context(
      spvContextCreate(SPV_ENV_VULKAN_1_2), spvContextDestroy);
  spv_diagnostic diagnostic = nullptr;
  if (spvBinaryParse(context.get(), &parsed, words.data(), words.size(), nullptr, on_instruction,
                     &diagnostic) != SPV_SUCCESS) {
    std::string why = diagnostic ? diagnostic->error : "unknown error";
    spvDiagnosticDestroy(diagnostic);
    fail("the module does not parse: " + why);
  }

  // What the rewrite needs to know first: each value's type, the 32-bit unsigned int type,
  // the boolean constants, and the use of each matrix type from the multiply-adds.
  std::map<uint32_t, uint32_t> type_of;
  std::map<uint32_t, bool> bool_constant;
  std::map<uint32_t, uint32_t> use_of;  // matrix type -> use
  uint32_t uint_type = 0;
  for (const Inst& i : parsed.insts) {
    const uint32_t* w = words.data() + i.at;
    if (i.result_id != 0 && i.type_id != 0) {
      type_of[i.result_id] = i.type_id;
    }
    if (i.opcode == kOpTypeInt && w[2] == 32 && w[3] == 0) {
      uint_type = i.result_id;
    } else if (i.opcode == kOpConstantTrue || i.opcode == kOpConstantFalse) {
      bool_constant[i.result_id] = i.opcode == kOpConstantTrue;
    } else if (i.opcode == kOpTypeMatrixNV) {
      use_of.emplace(i.result_id, kUseAccumulator);
    }
  }
  std::map<uint32_t, uint32_t> assigned;
  auto assign = [&](uint32_t type, uint32_t use) {
    auto [it, fresh] = assigned.emplace(type, use);
    if (!fresh && it->second != use) {
      fail("matrix type %" + std::to_string(type) +
           " serves two uses; give each use its own type.");
    }
    use_of[type] = use;
  };
  for (const Inst& i : parsed.insts) {
    if (i.opcode == kOpMulAddNV) {
      const uint32_t* w = words.data() + i.at;
      assign(type_of[w[3]], kUseA);
      assign(type_of[w[4]], kUseB);
      assign(type_of[w[5]], kUseAccumulator);
      assign(i.type_id, kUseAccumulator);
    }
  }
  if (use_of.empty()) {
    fail("the module has no cooperative matrix types.");
  }
  if (uint_type == 0) {
    fail("the module declares no 32-bit unsigned int type for the use and layout constants.");
  }

  uint32_t bound = words[3];
  const uint32_t c_use[3] = {bound, bound + 1, bound + 2};  // also the row/column-major layouts
  const uint32_t bf16_type = bound + 3;
  bound += 4;

  // With bf16 A/B, elements of those matrices written or read one by one (fragments built in
  // registers: templates/qmv_coop.glsl, DQ_FRAG) are f16 in the NV module. Their 16 bits are
  // kept: an element pointer becomes a bf16 pointer, a stored or inserted f16 is bitcast to
  // bf16 first, and a loaded or extracted bf16 is bitcast back to f16 for the code that
  // reads it. So a kernel writes the bf16 bits it wants as an f16 with those bits.
  std::set<uint32_t> bf16_mats;                     // A/B matrix types that become bf16
  std::map<uint32_t, uint32_t> mat_pointer_class;   // pointer to such a matrix -> storage class
  std::map<uint32_t, uint32_t> elem_pointer_class;  // element access chain -> storage class
  std::map<uint32_t, uint32_t> bf16_pointer;        // storage class -> new bf16 pointer type
  if (bf16_ab) {
    for (const Inst& i : parsed.insts) {
      const uint32_t* w = words.data() + i.at;
      if (i.opcode == kOpTypeMatrixNV && use_of[i.result_id] != kUseAccumulator) {
        bf16_mats.insert(i.result_id);
      } else if (i.opcode == kOpTypePointer && bf16_mats.count(w[3])) {
        mat_pointer_class[i.result_id] = w[2];
      } else if ((i.opcode == kOpAccessChain || i.opcode == kOpInBoundsAccessChain) &&
                 mat_pointer_class.count(type_of[w[3]])) {
        uint32_t sc = mat_pointer_class[type_of[w[3]]];
        elem_pointer_class[i.result_id] = sc;
        if (!bf16_pointer.count(sc)) {
          bf16_pointer[sc] = bound++;
        }
      } else if ((i.opcode == kOpCompositeConstruct || i.opcode == kOpConstantComposite) &&
                 bf16_mats.count(i.type_id)) {
        fail("a bf16 A/B matrix is constructed from elements; load it or write its elements.");
      }
    }
  }
  auto layout = [&](uint32_t flag) {
    auto it = bool_constant.find(flag);
    if (it == bool_constant.end()) {
      fail("a load or store's column-major flag is not a constant.");
    }
    return it->second ? c_use[1] : c_use[0];  // ColumnMajorKHR = 1, RowMajorKHR = 0
  };

  std::vector<uint32_t> out(words.begin(), words.begin() + 5);
  bool declared = false;
  for (const Inst& i : parsed.insts) {
    const uint32_t* w = words.data() + i.at;
    switch (i.opcode) {
      case kOpCapability:
        if (w[1] == kCapMatrixNV) {
          emit(out, kOpCapability, {kCapMatrixKHR});
          if (bf16_ab) {
            emit(out, kOpCapability, {kCapBFloat16Type});
            emit(out, kOpCapability, {kCapBFloat16Matrix});
          }
          continue;
        }
        break;
      case kOpExtension:
        if (extension_name(w, i.count) == "SPV_NV_cooperative_matrix") {
          emit_extension(out, "SPV_KHR_cooperative_matrix");
          if (bf16_ab) {
            emit_extension(out, "SPV_KHR_bfloat16");
          }
          continue;
        }
        break;
      case kOpTypeMatrixNV: {
        if (!declared) {
          for (uint32_t v = 0; v < 3; ++v) {
            emit(out, kOpConstant, {uint_type, c_use[v], v});
          }
          if (bf16_ab) {
            emit(out, kOpTypeFloat, {bf16_type, 16, kEncodingBFloat16});
            for (auto [sc, id] : bf16_pointer) {
              emit(out, kOpTypePointer, {id, sc, bf16_type});
            }
          }
          declared = true;
        }
        uint32_t use = use_of[i.result_id];
        uint32_t component = bf16_ab && use != kUseAccumulator ? bf16_type : w[2];
        emit(out, kOpTypeMatrixKHR, {i.result_id, component, w[3], w[4], w[5], c_use[use]});
        continue;
      }
      case kOpLoadNV: {
        // NV: type, result, pointer, stride, column-major[, memory access...]
        // KHR: type, result, pointer, layout, stride[, memory access...]
        out.push_back(i.count << 16 | kOpLoadKHR);
        out.insert(out.end(), {w[1], w[2], w[3], layout(w[5]), w[4]});
        out.insert(out.end(), w + 6, w + i.count);
        continue;
      }
      case kOpStoreNV: {
        // NV: pointer, object, stride, column-major[, ...]; KHR: pointer, object, layout, stride
        out.push_back(i.count << 16 | kOpStoreKHR);
        out.insert(out.end(), {w[1], w[2], layout(w[4]), w[3]});
        out.insert(out.end(), w + 5, w + i.count);
        continue;
      }
      case kOpAccessChain:
      case kOpInBoundsAccessChain:
        if (elem_pointer_class.count(i.result_id)) {
          out.push_back(w[0]);
          out.push_back(bf16_pointer[elem_pointer_class[i.result_id]]);
          out.insert(out.end(), w + 2, w + i.count);
          continue;
        }
        break;
      case kOpStore:            // pointer, object
      case kOpCompositeInsert:  // type, result, object, composite
        if (i.opcode == kOpStore ? elem_pointer_class.count(w[1]) != 0
                                 : bf16_mats.count(w[1]) != 0) {
          // The f16 object, bitcast to bf16 first.
          size_t object = i.opcode == kOpStore ? 2 : 3;
          uint32_t bits = bound++;
          emit(out, kOpBitcast, {bf16_type, bits, w[object]});
          out.insert(out.end(), w, w + i.count);
          out[out.size() - i.count + object] = bits;
          continue;
        }
        break;
      case kOpLoad:              // type, result, pointer
      case kOpCompositeExtract:  // type, result, composite
        if (i.opcode == kOpLoad ? elem_pointer_class.count(w[3]) != 0
                                : bf16_mats.count(type_of[w[3]]) != 0) {
          // A bf16 result, bitcast back to the f16 the module reads.
          uint32_t bits = bound++;
          out.push_back(w[0]);
          out.insert(out.end(), {bf16_type, bits});
          out.insert(out.end(), w + 3, w + i.count);
          emit(out, kOpBitcast, {w[1], w[2], bits});
          continue;
        }
        break;
      case kOpMulAddNV:
      case kOpLengthNV:
        out.push_back(i.count << 16 | (i.opcode == kOpMulAddNV ? kOpMulAddKHR : kOpLengthKHR));
        out.insert(out.end(), w + 1, w + i.count);
        continue;
      default:
        break;
    }
    out.insert(out.end(), w, w + i.count);
  }
  out[3] = bound;
  return out;
}

}  // namespace mlx::core::vulkan::codegen
