// eval_gpu of AsType, Copy, Full and Contiguous: the "copy" kernel (strided read, dtype
// conversion, row-contiguous write).
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/elementwise.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

void copy_eval(Primitive& p, const std::vector<array>& inputs, array& out, bool donate) {
  if (!vulkan::gpu_supports(inputs) || !vulkan::gpu_supports(out.dtype())) {
    vulkan::cpu_fallback(p, inputs, out, "a dtype the GPU kernels do not hold");
    return;
  }
  vulkan::allocate_or_donate(inputs, out, donate);
  // A donated buffer already holds the right bytes only when the dtype is unchanged, and
  // then the copy is still cheap and keeps one code path; the kernel reads before it writes.
  vulkan::launch_elementwise(p.name(), "copy", "Copy", inputs, out);
}

}  // namespace

void AsType::eval_gpu(const std::vector<array>& inputs, array& out) {
  // Between integer types of one width the bits do not change (wrapping, as the CPU's
  // conversion): the output shares the input's buffer, no kernel (e.g. argmax's uint32 as
  // a decode loop's int32 token).
  if (reinterprets_bits(inputs[0].dtype(), out.dtype())) {
    out.copy_shared_buffer(inputs[0]);
    return;
  }
  copy_eval(*this, inputs, out, true);
}

void Copy::eval_gpu(const std::vector<array>& inputs, array& out) {
  // A copy must not alias its input (that is its point), so no donation.
  copy_eval(*this, inputs, out, false);
}

void Full::eval_gpu(const std::vector<array>& inputs, array& out) {
  // The input is a broadcast view (usually of one element): it must not be donated.
  copy_eval(*this, inputs, out, false);
}

void Contiguous::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& in = inputs[0];
  if (in.flags().row_contiguous || (allow_col_major() && in.flags().col_contiguous)) {
    out.copy_shared_buffer(in);
    return;
  }
  copy_eval(*this, inputs, out, false);
}

}  // namespace mlx::core
