// Kernel parameters whose best value differs between devices of one driver, measured on
// each device listed in device_tuning.cpp (docs/compile.md). Unlike driver_facts.h these
// are speed, not correctness: every value is correct everywhere. device.cpp turns them into
// codegen::DeviceCaps fields; each has an environment override for tuning a new device.
#pragma once

#include <cstdint>
#include <string_view>

namespace mlx::core::vulkan {

// Vector steps per invocation of a fused compile() kernel (DeviceCaps::fused_vector_steps;
// MLX_VK_FUSED_EPT, read by codegen, overrides it), from the device's PCI vendor and device
// IDs and its name (VkPhysicalDeviceProperties::deviceName).
uint32_t fused_vector_steps(uint32_t vendor_id, uint32_t device_id, std::string_view name);

}  // namespace mlx::core::vulkan
