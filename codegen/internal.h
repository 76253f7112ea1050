// Internal helpers shared by codegen's sources; not part of the public interface.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codegen/codegen.h"

namespace mlx::core::vulkan::codegen {

// Generated at build time from templates/ (embed_templates.cmake).
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_templates();

// The text of source line `line` of `file` in a rendered kernel, found by following the
// `#line N "file"` markers the template expander writes; "" when unknown. file "0" (or "")
// means the rendered text itself.
std::string rendered_source_line(const std::string& glsl, const std::string& file, int line);

// The value of key parameter `name`; throws std::invalid_argument naming `where` (the
// kernel) when it is missing.
const std::string& key_param(const KernelKey& key, const char* name, const std::string& where);

// render() for the elementwise families (elementwise.cpp) and the transpose copy
// (transpose.cpp).
KernelSource render_elementwise(const KernelKey& key, const DeviceCaps& caps);
KernelSource render_transpose(const KernelKey& key, const DeviceCaps& caps);

struct DtypeInfo;
// GLSL type holding `vec` lanes of a `bits`-wide dtype: 32-bit words for narrow types
// (uint, uvec2, uvec4), uint64 components for 64-bit ones.
std::string vector_type(int bits, uint32_t vec);

// Defines for reading (output false) or writing one operand as `vec`-lane vectors, named
// with `prefix` ("IN0_", "OUT_"): <prefix>VT, and <prefix>VLANE(w, j) -> compute value for
// inputs or <prefix>VSET(w, j, v) for outputs. Expects <prefix>LOAD / <prefix>STORE from
// add_input_defines / add_output_defines, and include/lanes.glsl in the template.
void add_vector_operand_defines(const std::string& prefix, const DtypeInfo& dt, uint32_t vec,
                                bool output, std::vector<std::string>& defines);

// The identity of a reduction ("Sum", "Prod", "Max", "Min", "And", "Or") in accumulator
// `acc`, as a GLSL expression (reduce.cpp; arg_reduce.cpp uses Max/Min's).
std::string reduce_identity(const std::string& op, const DtypeInfo& acc);

// Key checks shared by the row-kernel families (reduce.cpp): every parameter is known,
// "idx" is 32 or 64 (true: 64), "mode" is row or col (true: col). Each throws
// std::invalid_argument naming `where`.
void check_params(const KernelKey& key, const std::set<std::string>& known,
                  const std::string& where);
bool parse_idx(const KernelKey& key, const std::string& where);
// A quantized key's "bits" (2, 3, 4, 5, 6, 8) and "gs" (32, 64, 128); std::invalid_argument
// otherwise (codegen/quantize.cpp).
void parse_quant(const KernelKey& key, const std::string& where, int& bits, int& gs);
bool parse_columns(const KernelKey& key, const std::string& where);

// A tuning override from environment variable `name`: `fallback` when it is unset or
// empty, else its value, which must be an integer in [lo, hi] (std::invalid_argument
// naming the variable otherwise). Values reach kernels as specialization constants, which
// are part of each kernel's hash, so the caches keep tuned and default kernels apart.
uint32_t tuning_env(const char* name, uint32_t lo, uint32_t hi, uint32_t fallback);

// The workgroup size of the elementwise-shaped kernels (the elementwise families and
// fused groups): 128, or MLX_VK_ELEMENTWISE_WG (32..1024) for tuning on a new device.
// Callers clamp it to the device's limit. 128 measured 1-2.5% faster than 256 on an H200
// for f32 copy, exp and scalar multiply (1 GiB operands), the same elsewhere; 512 and 1024
// no better (docs/performance.md).
uint32_t elementwise_workgroup_size();

// The power-of-two workgroup size of the row kernels: 256, or less where the device
// allows fewer invocations.
uint32_t row_workgroup_size(const DeviceCaps& caps);

// vkCmdDispatch groups for `groups` workgroups: x up to 65535, the rest over y. Throws
// std::invalid_argument (naming `where`) past 65535^2.
std::array<uint32_t, 3> row_groups(uint64_t groups, const std::string& where);

// A row-kernel family's rendered source: `tmpl` with `defines`, `buffers` storage buffers,
// `fields` push-constant fields of IDX_T, and the row workgroup size as spec constant 0.
KernelSource row_kernel_source(const std::string& tmpl, const std::vector<std::string>& defines,
                               uint32_t buffers, uint32_t fields, bool idx64,
                               const DeviceCaps& caps);

// Whether an index can pass 2^31 - 1 for a launch that reaches element `reach` of a
// binding: doubled for loop indices one stride past the end, plus grid slack.
bool reach_needs_64(uint64_t reach);

// A Launch whose push constants are `fields` (each IDX_T) over `groups` workgroups (laid
// out by row_groups). Throws std::invalid_argument when the fields do not fill the kernel's
// push-constant block exactly.
Launch pack_launch(const KernelSource& source, const std::vector<int64_t>& fields, bool idx64,
                   uint64_t groups, const std::string& where);

}  // namespace mlx::core::vulkan::codegen
