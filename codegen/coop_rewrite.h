// The KHR path for cooperative matrices: Debian's glslang 12 compiles GL_NV_cooperative_matrix
// but not the KHR extension, so a kernel written for NV is rewritten into
// VK_KHR_cooperative_matrix's SPIR-V (what AMD and Intel expose) after compilation. No
// arrays, no Vulkan: words in, words out. docs/matmul.md describes the mapping.
#pragma once

#include <cstdint>
#include <vector>

namespace mlx::core::vulkan::codegen {

// Rewrites a module that uses SPV_NV_cooperative_matrix into SPV_KHR_cooperative_matrix:
// the capability and extension, each matrix type with its use (A, B or accumulator, from
// the multiply-adds it takes part in), the loads and stores with a layout constant in place
// of the column-major flag, the multiply-adds and lengths. Every matrix type must serve one
// use only (templates/gemm_coop.glsl gives B's type a specialization-constant row count so
// that it differs from A's). With bf16_ab, the A and B component type becomes bfloat16
// (SPV_KHR_bfloat16): the loads then read the same 16-bit words as bf16, and elements
// written or read one by one keep their 16 bits (an f16 in the NV module, bitcast).
// Throws std::invalid_argument naming what it cannot rewrite.
std::vector<uint32_t> coop_nv_to_khr(const std::vector<uint32_t>& words, bool bf16_ab);

}  // namespace mlx::core::vulkan::codegen
