// Facts about a driver that only a run on its device can establish, each verified by a
// named test of tests/gpu_diff on the drivers listed in driver_facts.cpp. Each has an
// environment override, which is also how a new device is verified: set the fact on, then
// run its test. device.cpp turns them into codegen::DeviceCaps fields.
#pragma once

#include <vulkan/vulkan.h>

namespace mlx::core::vulkan {

// f16 pack/unpack through the hardware are exact (DeviceCaps::f16_hw_convert;
// MLX_VK_F16_CONVERT=hw|exact).
bool f16_hardware_conversions(VkDriverId id);

// fma() is one rounding (DeviceCaps::fma_fused; MLX_VK_FMA=fused|unfused).
bool fused_fma(VkDriverId id);

// Cooperative-matrix accumulators lay their elements out as NVIDIA's driver does
// (DeviceCaps::coop_acc_nv_layout; MLX_VK_COOP_LAYOUT=nv|opaque).
bool nv_accumulator_layout(VkDriverId id);

}  // namespace mlx::core::vulkan
