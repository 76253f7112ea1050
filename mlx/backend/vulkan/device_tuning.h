// Kernel parameters whose best value differs between devices of one driver, measured on
// each device listed in device_tuning.cpp (docs/compile.md). Unlike driver_facts.h these
// are speed, not correctness: every value is correct everywhere. device.cpp turns them into
// codegen::DeviceCaps fields; each has an environment override for tuning a new device.
#pragma once

#include <cstdint>

namespace mlx::core::vulkan {

// Vector steps per invocation of a fused compile() kernel (DeviceCaps::fused_vector_steps;
// MLX_VK_FUSED_EPT, read by codegen, overrides it).
uint32_t fused_vector_steps(uint32_t vendor_id, uint32_t device_id);

}  // namespace mlx::core::vulkan
