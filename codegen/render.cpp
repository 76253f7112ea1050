// render(): dispatch a key to its family's renderer.
#include <stdexcept>

#include "codegen/codegen.h"
#include "codegen/internal.h"

namespace mlx::core::vulkan::codegen {

KernelSource render(const KernelKey& key, const DeviceCaps& caps) {
  if (key.family == "unary" || key.family == "binary" || key.family == "select" ||
      key.family == "copy") {
    return render_elementwise(key, caps);
  }
  if (key.family == "transpose") {
    return render_transpose(key, caps);
  }
  throw std::invalid_argument("[render] unknown kernel family '" + key.family + "' in key " +
                              key.canonical() + ".");
}

}  // namespace mlx::core::vulkan::codegen
