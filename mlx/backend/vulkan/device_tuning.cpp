#include "mlx/backend/vulkan/device_tuning.h"

namespace mlx::core::vulkan {

namespace {

constexpr uint32_t kNvidia = 0x10de;
// H200 SXM's PCI ID, from the PCI ID tables; never read on a lent H200 (every machine this
// project got since was an H100 SXM, which reads 0x2330). The name is checked too, so an
// H200 of another ID (NVL) is caught: NVIDIA's Vulkan names its devices as nvidia-smi does.
constexpr uint32_t kH200 = 0x2335;

}  // namespace

// Two steps issue two vectors' loads before either computes. An H200 (memory ~1.4x an
// H100's, the same multiprocessors) waited on its loads at one step: a compiled bf16
// SwiGLU [4096, 14336] read at 0.84 of the peak with one and 0.93 with two (0.95 with
// four, where a 20-op f32 chain lost 11%). On an H100 one is best (SwiGLU 0.99 -> 0.96
// with two, exact GELU 808 -> 854 us). compile_bench, 2026-11-27; docs/compile.md.
uint32_t fused_vector_steps(uint32_t vendor_id, uint32_t device_id, std::string_view name) {
  bool h200 = device_id == kH200 || name.find("H200") != std::string_view::npos;
  return vendor_id == kNvidia && h200 ? 2 : 1;
}

}  // namespace mlx::core::vulkan
