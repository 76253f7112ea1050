// What the device's cooperative-matrix extensions multiply, from their property lists:
// device.cpp turns the answers into codegen::DeviceCaps fields and device_info entries.
#pragma once

#include <string>
#include <utility>

#include "mlx/backend/vulkan/loader.h"

namespace mlx::core::vulkan {

// Whether VK_NV_cooperative_matrix multiplies m x n x k per subgroup with f16 A and B into
// f32 (C and result): 16x16x16 for gemm_coop.glsl, 16x8x16 for qmv_coop.glsl's FRAG_N8.
bool has_coop_f16_shape(VkPhysicalDevice pd, uint32_t m, uint32_t n, uint32_t k);

// The A/B component types for which VK_KHR_cooperative_matrix multiplies m x n x k per
// subgroup into f32: {f16, bf16}.
std::pair<bool, bool> khr_coop_shapes(VkPhysicalDevice pd, uint32_t m, uint32_t n, uint32_t k);

// Every subgroup shape of VK_KHR_cooperative_matrix, "MxNxK:A*B+C=R" with the component
// types as the registry numbers them (0 f16, 1 f32, 1000141000 bf16, ...).
std::string khr_coop_shape_list(VkPhysicalDevice pd);

}  // namespace mlx::core::vulkan
