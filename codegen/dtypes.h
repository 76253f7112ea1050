// How each GPU dtype is stored in a buffer and computed in GLSL (internal to codegen).
#pragma once

#include <string>
#include <vector>

#include "codegen/codegen.h"

namespace mlx::core::vulkan::codegen {

enum class Kind { Bool = 0, Uint = 1, Int = 2, Float = 3 };  // = KIND_* in types.glsl

struct DtypeInfo {
  const char* name;     // key name: "b", "u8", ..., "f32"
  Kind kind;            // kind of the compute type
  int bits;             // storage width
  const char* storage;  // GLSL type in the buffer
  const char* compute;  // GLSL type arithmetic happens in
  const char* load;     // storage value x -> compute value
  const char* store;    // compute value v -> storage value
  // Vector lanes (<= 32-bit types): zero-extended lane bits b (uint) -> compute value, and
  // compute value v -> lane bits (only the low `bits` set). Empty for 64-bit types, whose
  // lanes are whole uint64 components.
  const char* from_bits;
  const char* to_bits;
};

// The info for a dtype name, or nullptr when it is not a GPU dtype.
const DtypeInfo* find_dtype(const std::string& name);

// The info for a dtype name. Throws std::invalid_argument for float64/complex ("the GPU
// does not support ...") and unknown names; `where` names the key for the message.
const DtypeInfo& dtype_info(const std::string& name, const std::string& where);

// Throws std::runtime_error when the device lacks what storing `dt` needs.
void require_storage(const DtypeInfo& dt, const DeviceCaps& caps, const std::string& where);

// The MLX_STORAGE_8BIT / MLX_STORAGE_16BIT / MLX_INT64 defines for a kernel touching `dts`
// (with idx64: 64-bit index math). Throws std::runtime_error, naming `where`, when the
// device lacks what they need.
std::vector<std::string> storage_defines(const std::vector<const DtypeInfo*>& dts, bool idx64,
                                         const DeviceCaps& caps, const std::string& where);

// An input's <prefix>ST / CT / LOAD(x) defines (prefix "IN0_", ...), and the output's
// OUT_ST / OUT_CT / OUT_STORE(v) / OUT_ROUND(v) (round_expr).
void add_input_defines(const std::string& prefix, const DtypeInfo& dt,
                       std::vector<std::string>& defines);
void add_output_defines(const DtypeInfo& dt, std::vector<std::string>& defines);

// GLSL expression rounding compute value `v` to `dt` in registers, as a store and reload would
// (f16/bf16 rounding, bool 0/1; other dtypes unchanged).
std::string round_expr(const DtypeInfo& dt, const std::string& v);

// `s` with every `from` replaced by `to`.
std::string replace_all(std::string s, const std::string& from, const std::string& to);

// GLSL expression converting compute value `x` of `from` to the compute type of `to`, with
// MLX's cast semantics (float -> int saturates, NaN -> 0; any -> bool is != 0).
std::string convert_expr(const DtypeInfo& from, const DtypeInfo& to, const std::string& x);

}  // namespace mlx::core::vulkan::codegen
