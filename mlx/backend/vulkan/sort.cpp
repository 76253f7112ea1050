// eval_gpu of Sort, ArgSort, Partition and ArgPartition: the "sort" family (codegen/sort.h,
// docs/sort.md). The input is read dense (copied when it is not row-contiguous) along its
// axis in place: no transpose to move the axis last. Rows of at most 1024 elements sort in
// one launch; longer rows run the bitonic chain over scratch keys and indices, in groups
// of rows whose scratch fits one binding.
#include <algorithm>

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

// One launch chain over g.rows rows of x into y.
void sort_rows(vulkan::CommandEncoder& enc, const vulkan::Device& dev, const vulkan::Buf& x,
               const vulkan::Buf& y, codegen::SortGeometry g, const char* dtype, bool arg) {
  int64_t elems = g.rows * g.n;
  int64_t scratch = g.rows * codegen::sort_padded(g.n);
  auto bx = vulkan::bind_run(dev, x, elems, false);
  auto by = vulkan::bind_run(dev, y, elems, true);
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
  int64_t rows = g.n == 0 ? 0 : static_cast<int64_t>(in.size()) / g.n;
  // Whole outer blocks (inner rows each, contiguous) per launch chain, so the group's input,
  // output and [rows][P] scratch each fit one binding: many long rows (64 vocabulary rows
  // on lavapipe's 128 MiB bindings) take several chains instead of the CPU route.
  int64_t max_elems = vulkan::binding_elems(dev, 8);
  int64_t block_rows = g.inner;
  int64_t block_scratch = block_rows * codegen::sort_padded(g.n);
  g.rows = rows;
  if (!vulkan::copies_fit(inputs) || block_scratch > max_elems || !codegen::sort_supported(g)) {
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
  vulkan::Buf y = vulkan::buf_of(out, arg ? "u32" : dtype);
  int64_t blocks = rows / block_rows;
  int64_t per = std::max<int64_t>(1, max_elems / block_scratch);
  for (int64_t b0 = 0; b0 < blocks; b0 += per) {
    g.rows = std::min(per, blocks - b0) * block_rows;
    int64_t first = b0 * block_rows * g.n;  // element offset of the group
    sort_rows(enc, dev, x.at(first), y.at(first), g, dtype, arg);
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
