// The "arange" family (templates/arange.glsl): arange's values written as 32-bit words, so
// one pipeline ("arange:", no parameters) serves every dtype. The host computes the
// per-dtype numbers (mlx/backend/common/arange.h); codegen only packs them. No arrays, no
// Vulkan. docs/random.md (creation ops) describes the arithmetic.
#pragma once

#include <array>
#include <cstdint>

#include "codegen/codegen.h"

namespace mlx::core::vulkan::codegen {

enum class ArangeKind : uint32_t { Int = 0, F32 = 1, F16 = 2, BF16 = 3 };

// One launch writing words [first_word, first_word + words) of an output of `size`
// elements of `width` bytes; out_offset is the word at first_word within its binding.
// params: Int: first (lo, hi) and delta (lo, hi), the wrapped 64-bit integers; floats: the
// bits of s_hi, s_lo, d_a, d_b and d_lo.
struct ArangeGeometry {
  int64_t size = 0;
  int width = 4;
  ArangeKind kind = ArangeKind::F32;
  std::array<uint32_t, 5> params{};
  int64_t first_word = 0;
  int64_t words = 0;
  uint64_t out_offset = 0;
};

KernelKey arange_key();
KernelSource render_arange(const KernelKey& key, const DeviceCaps& caps);
// Throws std::invalid_argument when the geometry is inconsistent or an index would pass
// 32 bits.
Launch arange_launch(const KernelKey& key, const KernelSource& source, const ArangeGeometry& g);

}  // namespace mlx::core::vulkan::codegen
