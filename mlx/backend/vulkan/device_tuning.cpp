#include "mlx/backend/vulkan/device_tuning.h"

namespace mlx::core::vulkan {

namespace {

constexpr uint32_t kNvidia = 0x10de;
constexpr uint32_t kH200 = 0x2335;  // H200 SXM (the lent H100 SXM reads 0x2330)

}  // namespace

// Two steps issue two vectors' loads before either computes. An H200 (memory ~1.4x an
// H100's, the same multiprocessors) waited on its loads at one step: a compiled bf16
// SwiGLU [4096, 14336] read at 0.84 of the peak with one and 0.93 with two (0.95 with
// four, where a 20-op f32 chain lost 11%). On an H100 one is best (SwiGLU 0.99 -> 0.96
// with two, exact GELU 808 -> 854 us). compile_bench, 2026-11-27; docs/compile.md.
uint32_t fused_vector_steps(uint32_t vendor_id, uint32_t device_id) {
  return vendor_id == kNvidia && device_id == kH200 ? 2 : 1;
}

}  // namespace mlx::core::vulkan
