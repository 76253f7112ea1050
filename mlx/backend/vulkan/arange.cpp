// eval_gpu of Arange: the "arange" family (codegen/arange.h, templates/arange.glsl), one
// pipeline for every dtype. The host turns start and step into the kernel's numbers exactly
// as the CPU reference does (wrapped integers, or the float-float split of
// backend/common/arange.h), so both devices give the same bits. float64 and complex64 are
// CPU-only (as in MLX) and take the logged CPU route. docs/random.md (creation ops).
#include <algorithm>
#include <limits>

#include "codegen/arange.h"
#include "mlx/backend/common/arange.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/launch_memo.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/dtype_utils.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

namespace codegen = vulkan::codegen;

// The kernel's kind and numbers for out's dtype, or false when the GPU does not hold it.
bool arange_numbers(Dtype dt, double start, double step, codegen::ArangeGeometry& g) {
  if (dt == float64 || dt == complex64 || dt == bool_) {
    return false;
  }
  if (dt == float32 || dt == float16 || dt == bfloat16) {
    auto p = arange_float_split(start, step);
    g.kind = dt == float32   ? codegen::ArangeKind::F32
             : dt == float16 ? codegen::ArangeKind::F16
                             : codegen::ArangeKind::BF16;
    g.params = {std::bit_cast<uint32_t>(p.s_hi), std::bit_cast<uint32_t>(p.s_lo),
                std::bit_cast<uint32_t>(p.d_a), std::bit_cast<uint32_t>(p.d_b),
                std::bit_cast<uint32_t>(p.d_lo)};
    return true;
  }
  // As the CPU: first = T(start), delta = T(start + step) - first, wrapping in 64 bits.
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      auto first = static_cast<uint64_t>(cast_value<T>(start));
      auto delta = static_cast<uint64_t>(cast_value<T>(start + step)) - first;
      g.params = {static_cast<uint32_t>(first), static_cast<uint32_t>(first >> 32),
                  static_cast<uint32_t>(delta), static_cast<uint32_t>(delta >> 32), 0u};
    }
  });
  g.kind = codegen::ArangeKind::Int;
  return true;
}

}  // namespace

void Arange::eval_gpu(const std::vector<array>& inputs, array& out) {
  codegen::ArangeGeometry g;
  if (!arange_numbers(out.dtype(), start_, step_, g)) {
    vulkan::cpu_fallback(*this, inputs, out, "a dtype the GPU kernels do not hold");
    return;
  }
  // The kernel's element and word indices are 32-bit (arange has < 2^31 elements).
  if (out.nbytes() > std::numeric_limits<uint32_t>::max() / 2) {
    vulkan::cpu_fallback(*this, inputs, out, "an output of 2 GiB or more");
    return;
  }
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  auto& dev = vulkan::device("Arange");
  auto& enc = vulkan::encoder(this->stream().index);
  g.size = static_cast<int64_t>(out.size());
  g.width = static_cast<int>(out.itemsize());
  // The output as 32-bit words from its first byte (a new allocation, so word aligned).
  vulkan::Buf words{vulkan::allocation(out.buffer()), static_cast<int64_t>(out.offset()), "u32", 4};
  int64_t total_words = (static_cast<int64_t>(out.nbytes()) + 3) / 4;
  int64_t window = vulkan::binding_elems(dev, 4);
  for (int64_t w0 = 0; w0 < total_words; w0 += window) {
    g.first_word = w0;
    g.words = std::min(window, total_words - w0);
    auto bo = vulkan::bind_run(dev, words.at(w0), g.words, true);
    g.out_offset = bo.elem_offset;
    auto key = codegen::arange_key();
    const auto& kernel = vulkan::kernel_library().get(key);
    std::vector<vulkan::Binding> bindings{bo.binding};
    vulkan::record_launch(enc, kernel, codegen::arange_launch(key, kernel.source, g), bindings);
  }
}

}  // namespace mlx::core
