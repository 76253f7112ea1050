// The dtype table: storage/compute types and load/store conversions for each GPU dtype.
#include "codegen/dtypes.h"

#include <stdexcept>

namespace mlx::core::vulkan::codegen {

namespace {

// bool is stored as one byte 0/1 and computed as uint 0/1; min() guards against other
// nonzero bytes. 8/16-bit integers compute in 32 bits and truncate on store (wraps like
// C++); f16/bf16 are stored as bits and rounded to nearest-even on store.
const DtypeInfo kDtypes[] = {
    {"b", Kind::Bool, 8, "uint8_t", "uint", "min(uint(x), 1u)", "uint8_t((v) != 0u ? 1u : 0u)",
     "min(b, 1u)", "((v) != 0u ? 1u : 0u)"},
    {"u8", Kind::Uint, 8, "uint8_t", "uint", "uint(x)", "uint8_t(v)", "(b)", "((v) & 0xffu)"},
    {"u16", Kind::Uint, 16, "uint16_t", "uint", "uint(x)", "uint16_t(v)", "(b)", "((v) & 0xffffu)"},
    {"u32", Kind::Uint, 32, "uint", "uint", "(x)", "(v)", "(b)", "(v)"},
    {"u64", Kind::Uint, 64, "uint64_t", "uint64_t", "(x)", "(v)", "", ""},
    {"i8", Kind::Int, 8, "int8_t", "int", "int(x)", "int8_t(v)", "bitfieldExtract(int(b), 0, 8)",
     "(uint(v) & 0xffu)"},
    {"i16", Kind::Int, 16, "int16_t", "int", "int(x)", "int16_t(v)",
     "bitfieldExtract(int(b), 0, 16)", "(uint(v) & 0xffffu)"},
    {"i32", Kind::Int, 32, "int", "int", "(x)", "(v)", "int(b)", "uint(v)"},
    {"i64", Kind::Int, 64, "int64_t", "int64_t", "(x)", "(v)", "", ""},
    {"f16", Kind::Float, 16, "uint16_t", "float", "f16_bits_to_f32(uint(x))",
     "uint16_t(f32_to_f16_bits(v))", "f16_bits_to_f32(b)", "f32_to_f16_bits(v)"},
    {"bf16", Kind::Float, 16, "uint16_t", "float", "bf16_bits_to_f32(uint(x))",
     "uint16_t(f32_to_bf16_bits(v))", "bf16_bits_to_f32(b)", "f32_to_bf16_bits(v)"},
    {"f32", Kind::Float, 32, "float", "float", "(x)", "(v)", "uintBitsToFloat(b)",
     "floatBitsToUint(v)"},
};

}  // namespace

const DtypeInfo* find_dtype(const std::string& name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) {
      return &d;
    }
  }
  return nullptr;
}

const DtypeInfo& dtype_info(const std::string& name, const std::string& where) {
  if (const DtypeInfo* d = find_dtype(name)) {
    return *d;
  }
  if (name == "f64" || name == "float64") {
    throw std::invalid_argument("[render] " + where +
                                ": the GPU does not support float64 (it is CPU-only, as in "
                                "MLX); use a CPU stream.");
  }
  if (name == "c64" || name == "complex64") {
    throw std::invalid_argument("[render] " + where +
                                ": the GPU does not support complex64 for this kernel.");
  }
  throw std::invalid_argument("[render] " + where + ": unknown dtype '" + name +
                              "' (expected b, u8, u16, u32, u64, i8, i16, i32, i64, f16, bf16 "
                              "or f32).");
}

void require_storage(const DtypeInfo& dt, const DeviceCaps& caps, const std::string& where) {
  const char* missing = nullptr;
  if (dt.bits == 8 && !caps.storage_8bit) {
    missing = "8-bit storage buffers (storageBuffer8BitAccess)";
  } else if (dt.bits == 16 && !caps.storage_16bit) {
    missing = "16-bit storage buffers (storageBuffer16BitAccess)";
  } else if (dt.bits == 64 && !caps.shader_int64) {
    missing = "64-bit integers (shaderInt64)";
  }
  if (missing) {
    throw std::runtime_error(std::string("[vulkan] ") + where + ": dtype " + dt.name + " needs " +
                             missing + ", which this device does not support.");
  }
}

std::vector<std::string> storage_defines(const std::vector<const DtypeInfo*>& dts, bool idx64,
                                         const DeviceCaps& caps, const std::string& where) {
  bool need8 = false, need16 = false, need64 = idx64;
  for (const auto* d : dts) {
    require_storage(*d, caps, where);
    need8 = need8 || d->bits == 8;
    need16 = need16 || d->bits == 16;
    need64 = need64 || d->bits == 64;
  }
  if (idx64 && !caps.shader_int64) {
    throw std::runtime_error("[vulkan] " + where +
                             ": 64-bit indexing needs shaderInt64, which this device does not "
                             "support; split the array.");
  }
  return {std::string("MLX_STORAGE_8BIT ") + (need8 ? "1" : "0"),
          std::string("MLX_STORAGE_16BIT ") + (need16 ? "1" : "0"),
          std::string("MLX_INT64 ") + (need64 ? "1" : "0"),
          std::string("MLX_F16_HW ") + (caps.f16_hw_convert ? "1" : "0"),
          std::string("MLX_FMA_FUSED ") + (caps.fma_fused ? "1" : "0")};
}

void add_input_defines(const std::string& prefix, const DtypeInfo& dt,
                       std::vector<std::string>& defines) {
  defines.push_back(prefix + "ST " + dt.storage);
  defines.push_back(prefix + "CT " + dt.compute);
  defines.push_back(prefix + "LOAD(x) " + dt.load);
}

void add_output_defines(const DtypeInfo& dt, std::vector<std::string>& defines) {
  defines.push_back(std::string("OUT_ST ") + dt.storage);
  defines.push_back(std::string("OUT_CT ") + dt.compute);
  defines.push_back(std::string("OUT_STORE(v) ") + dt.store);
  defines.push_back("OUT_ROUND(v) " + round_expr(dt, "(v)"));
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
    s.replace(p, from.size(), to);
  }
  return s;
}

std::string round_expr(const DtypeInfo& dt, const std::string& v) {
  // Built with append: GCC 12 reports a false -Wrestrict for "literal" + string here.
  std::string out;
  if (dt.kind == Kind::Bool) {
    out.append("uint(").append(v).append(")");
  } else if (dt.kind != Kind::Float || dt.bits != 16) {
    out = v;
  } else if (std::string(dt.name) == "f16") {
    // Never to_bits then from_bits for f16: see f16_round in types.glsl.
    out.append("f16_round(").append(v).append(")");
  } else {
    out.append("bf16_round(").append(v).append(")");
  }
  return out;
}

std::string convert_expr(const DtypeInfo& from, const DtypeInfo& to, const std::string& x) {
  std::string to_ct = to.compute;
  if (to.kind == Kind::Bool) {
    std::string zero = from.kind == Kind::Float ? "0.0f" : std::string(from.compute) + "(0)";
    return "((" + x + ") == " + zero + " ? 0u : 1u)";  // NaN != 0, so NaN -> true
  }
  if (from.kind == Kind::Float && to.kind != Kind::Float) {
    return std::string("float_to_") + to.name + "(" + x + ")";
  }
  if (to_ct == from.compute) {
    return "(" + x + ")";
  }
  // int <-> int reinterprets / extends like C++ (truncation happens on store); int -> float
  // rounds to nearest (then once more to f16/bf16 on store, as the CPU does).
  return to_ct + "(" + x + ")";
}

}  // namespace mlx::core::vulkan::codegen
