// The family table: every kernel family, how its keys render and how hard SPIRV-Tools
// works on them. render() and optimizer_level_for() read it; nothing else chooses a family
// by its name.
#include <stdexcept>

#include "codegen/codegen.h"
#include "codegen/arange.h"
#include "codegen/attention.h"
#include "codegen/fast.h"
#include "codegen/fused.h"
#include "codegen/indexing.h"
#include "codegen/internal.h"
#include "codegen/matmul.h"
#include "codegen/quantize.h"
#include "codegen/random.h"
#include "codegen/reduce.h"
#include "codegen/scan.h"
#include "codegen/sort.h"

namespace mlx::core::vulkan::codegen {

const std::vector<Family>& families() {
  // Optimizer levels measured in docs/codegen.md: for elementwise-shaped kernels the
  // passes cost several times glslang's own time and change nothing the driver's compiler
  // would not do itself.
  static const std::vector<Family> table{
      {"unary", render_elementwise, 0},
      {"binary", render_elementwise, 0},
      {"select", render_elementwise, 0},
      {"copy", render_elementwise, 0},
      {"transpose", render_transpose, 0},
      {"reduce", render_reduce, 0},
      {"arg_reduce", render_arg_reduce, 0},
      {"scan", render_scan, 0},
      {"norm", render_norm, 0},
      {"rope", render_rope, 0},
      {"gemm", render_gemm, 0},
      {"gemv", render_gemv, 0},
      {"qmm", render_qmm, 0},
      {"qmv", render_qmv, 0},
      {"qmvc", render_qmvc, 0},
      {"quant", render_quant, 0},
      {"sdpa", render_attention, 0},
      {"sort", render_sort, 0},
      {"fused", render_fused, 0},
      {"random", render_random, 0},
      {"arange", render_arange, 0},
      {"gather", render_gather, 0},
      {"scatter", render_scatter, 0},
  };
  return table;
}

const Family& family(const std::string& name) {
  for (const auto& f : families()) {
    if (f.name == name) {
      return f;
    }
  }
  std::string known;
  for (const auto& f : families()) {
    known += (known.empty() ? "" : ", ") + f.name;
  }
  throw std::invalid_argument("[codegen] unknown kernel family '" + name + "' (known: " + known +
                              ").");
}

KernelSource render(const KernelKey& key, const DeviceCaps& caps) {
  const Family* f = nullptr;
  try {
    f = &family(key.family);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("[render] " + std::string(e.what()) + " in key " + key.canonical() +
                                ".");
  }
  return f->render(key, caps);
}

int optimizer_level_for(const std::string& name) {
  return family(name).optimizer_level;
}

}  // namespace mlx::core::vulkan::codegen
