// The "arange" family (codegen/arange.h): key, rendering and launch packing for
// templates/arange.glsl.
#include "codegen/arange.h"

#include <limits>
#include <stdexcept>

#include "codegen/dtypes.h"
#include "codegen/internal.h"

namespace mlx::core::vulkan::codegen {

KernelKey arange_key() {
  return KernelKey{"arange", {}};
}

KernelSource render_arange(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  check_params(key, {}, where);
  return row_kernel_source("arange.glsl", storage_defines({}, false, caps, where), 1, 11, false,
                           caps);
}

Launch arange_launch(const KernelKey& key, const KernelSource& source, const ArangeGeometry& g) {
  const std::string where = "kernel " + key.canonical();
  constexpr int64_t kMax = std::numeric_limits<uint32_t>::max();
  int64_t total_words = (g.size * g.width + 3) / 4;
  bool width_ok =
      g.width == 1 || g.width == 2 || g.width == 4 || (g.width == 8 && g.kind == ArangeKind::Int);
  bool kind_ok = g.kind == ArangeKind::Int || (g.kind == ArangeKind::F32 && g.width == 4) ||
                 ((g.kind == ArangeKind::F16 || g.kind == ArangeKind::BF16) && g.width == 2);
  bool ok = key == arange_key() && width_ok && kind_ok && g.size > 0 && g.size < kMax &&
            total_words < kMax && g.first_word >= 0 && g.words > 0 &&
            g.first_word + g.words <= total_words &&
            static_cast<int64_t>(g.out_offset) + g.words < kMax;
  if (!ok) {
    throw std::invalid_argument("[launch] " + where + " does not match the geometry.");
  }
  uint64_t wg = source.workgroup_size[0];
  const auto& p = g.params;
  return pack_launch(source,
                     {g.words, static_cast<int64_t>(g.out_offset), g.first_word, g.size, g.width,
                      static_cast<int64_t>(g.kind), p[0], p[1], p[2], p[3], p[4]},
                     false, (static_cast<uint64_t>(g.words) + wg - 1) / wg, where);
}

}  // namespace mlx::core::vulkan::codegen
