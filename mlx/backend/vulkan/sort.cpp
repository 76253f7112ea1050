// eval_gpu of Sort, ArgSort, Partition and ArgPartition: the "sort" family (codegen/sort.h,
// docs/sort.md). The input is read dense (copied when it is not row-contiguous) along its
// axis in place: no transpose to move the axis last. Rows of at most 1024 elements sort in
// one launch; longer rows run the bitonic chain over scratch keys and indices.
#include "codegen/sort.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

namespace codegen = vulkan::codegen;

void sort_gpu(Primitive& p, const std::vector<array>& inputs, array& out, int axis, bool arg) {
  const array& in = inputs[0];
  const char* dtype = vulkan::gpu_dtype_name(in.dtype());
  if (dtype == nullptr) {
    vulkan::cpu_fallback(p, inputs, out, "a dtype the GPU kernels do not hold");
    return;
  }
  auto& dev = vulkan::device(p.name());
  codegen::SortGeometry g;
  g.n = in.ndim() == 0 ? 1 : in.shape(axis);
  g.inner = 1;
  for (int d = axis + 1; d < static_cast<int>(in.ndim()); ++d) {
    g.inner *= in.shape(d);
  }
  g.rows = g.n == 0 ? 0 : static_cast<int64_t>(in.size()) / g.n;
  int64_t max_elems = vulkan::binding_elems(dev, 8);
  int64_t scratch = g.rows * codegen::sort_padded(g.n);
  if (!vulkan::copies_fit(inputs) || static_cast<int64_t>(in.size()) > max_elems ||
      scratch > max_elems || !codegen::sort_supported(g)) {
    vulkan::cpu_fallback(p, inputs, out, "an operand wider than one storage binding");
    return;
  }
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  int stream = p.stream().index;
  auto& enc = vulkan::encoder(stream);
  vulkan::Buf x = vulkan::dense_run(enc, stream, in, dtype);
  auto bx = vulkan::bind_run(dev, x, static_cast<int64_t>(in.size()), false);
  auto by = vulkan::bind_run(dev, vulkan::buf_of(out, arg ? "u32" : dtype),
                             static_cast<int64_t>(out.size()), true);
  g.in_offset = bx.elem_offset;
  g.out_offset = by.elem_offset;
  auto steps = codegen::sort_plan(g);
  // Scratch keys and indices for rows longer than one block; a one-launch sort binds the
  // output in their place (never touched).
  vulkan::Binding keys = by.binding, idx = by.binding;
  if (steps.size() > 1) {
    int kb = codegen::sort_key_bytes(dtype);
    keys = vulkan::bind_run(dev, vulkan::temporary(enc, scratch, kb == 8 ? "u64" : "u32"), scratch,
                            true)
               .binding;
    idx = vulkan::bind_run(dev, vulkan::temporary(enc, scratch, "u32"), scratch, true).binding;
  }
  std::vector<vulkan::Binding> bindings{bx.binding, keys, idx, by.binding};
  const vulkan::Kernel* kernels[2] = {nullptr, nullptr};
  for (const auto& step : steps) {
    const vulkan::Kernel*& kernel = kernels[step.global ? 1 : 0];
    if (kernel == nullptr) {
      kernel = &vulkan::kernel_library().get(codegen::sort_key(dtype, arg, step.global));
    }
    auto launch =
        codegen::sort_launch(codegen::sort_key(dtype, arg, step.global), kernel->source, g, step);
    auto b = bindings;
    vulkan::record_launch(enc, *kernel, launch, b);
  }
}

}  // namespace

void Sort::eval_gpu(const std::vector<array>& inputs, array& out) {
  sort_gpu(*this, inputs, out, axis_, false);
}

void ArgSort::eval_gpu(const std::vector<array>& inputs, array& out) {
  sort_gpu(*this, inputs, out, axis_, true);
}

void Partition::eval_gpu(const std::vector<array>& inputs, array& out) {
  sort_gpu(*this, inputs, out, axis_, false);
}

void ArgPartition::eval_gpu(const std::vector<array>& inputs, array& out) {
  sort_gpu(*this, inputs, out, axis_, true);
}

}  // namespace mlx::core
