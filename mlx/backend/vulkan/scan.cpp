// eval_gpu of Scan (cumsum, cumprod, cummax, cummin): the "scan" family (codegen/scan.h,
// docs/scan.md). A row-contiguous input is read in place: as rows when the axis is last,
// as columns ([outer, len, inner]) otherwise and for short rows. Any other layout is first
// copied into a row-contiguous temporary in the same axis order, then planned the same
// way. Launches are cut so each fits one binding; a line wider than one binding, float64
// and complex take the explicit CPU route.
#include <algorithm>

#include "codegen/scan.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

namespace codegen = vulkan::codegen;
using vulkan::Buf;

// Rows up to this long go through the column kernel with inner == 1: one invocation per
// row instead of a 256-wide workgroup that would leave most of itself idle.
constexpr int64_t kShortRow = 32;

const char* op_name(Scan::ReduceType type) {
  switch (type) {
    case Scan::Sum:
      return "Sum";
    case Scan::Prod:
      return "Prod";
    case Scan::Max:
      return "Max";
    case Scan::Min:
      return "Min";
    case Scan::LogAddExp:
      return "LogAddExp";
  }
  return "Sum";
}

// Plans, binds and records one launch over `g` (offsets filled here).
void launch(const std::string& op, const Buf& in, const Buf& out, codegen::ScanGeometry g,
            int stream) {
  auto& dev = vulkan::device("Scan");
  auto& enc = vulkan::encoder(stream);
  int64_t last = std::max<int64_t>(g.count * g.len - 1, 0);
  auto bi = vulkan::bind_operand(dev, {in.alloc, in.offset, in.itemsize, 0, last}, false);
  auto bo = vulkan::bind_operand(dev, {out.alloc, out.offset, out.itemsize, 0, last}, true);
  g.in_offset = bi.elem_offset;
  g.out_offset = bo.elem_offset;
  auto key = codegen::scan_key(op, in.dtype, g);
  const auto& kernel = vulkan::kernel_library().get(key);
  auto numbers = codegen::scan_launch(key, kernel.source, g);
  std::vector<vulkan::Binding> bindings{bi.binding, bo.binding};
  vulkan::record_launch(enc, kernel, numbers, bindings);
}

}  // namespace

void Scan::eval_gpu(const std::vector<array>& inputs, array& out) {
  const auto& in = inputs[0];
  const char* dtype = vulkan::gpu_dtype_name(in.dtype());
  if (!dtype || in.dtype() != out.dtype()) {
    vulkan::cpu_fallback(*this, inputs, out, "a dtype the GPU kernels do not hold");
    return;
  }
  // The kernels read each element before writing it and never read it again, so the
  // output may take over a dead row-contiguous input's buffer.
  vulkan::allocate_or_donate(inputs, out, true);
  if (out.size() == 0) {
    return;
  }
  int stream = this->stream().index;
  int ndim = static_cast<int>(in.ndim());
  int64_t len = ndim == 0 ? 1 : in.shape(axis_);
  int64_t inner = 1;
  for (int d = axis_ + 1; d < ndim; ++d) {
    inner *= in.shape(d);
  }
  int64_t count = static_cast<int64_t>(in.size()) / len;
  bool columns = inner > 1 || len <= kShortRow;

  auto& dev = vulkan::device("Scan");
  int64_t max_elems = vulkan::binding_elems(dev, in.itemsize());
  int64_t block = len * inner;  // one outer block (columns) or one row
  if (block > max_elems) {
    vulkan::cpu_fallback(*this, inputs, out, "a scanned line wider than one storage binding");
    return;
  }
  Buf src;
  if (in.flags().row_contiguous) {
    src = vulkan::buf_of(in, dtype);
  } else if (vulkan::copy_fits(in)) {
    // The output keeps the input's shape, so the copy keeps the axis order: moving the
    // axis last would need a second copy back. Rows or columns then read the copy.
    auto& enc = vulkan::encoder(stream);
    src = vulkan::axes_last(enc, stream, in, {}, dtype);
  } else {
    vulkan::cpu_fallback(*this, inputs, out, "a view wider than one storage binding");
    return;
  }
  Buf dst = vulkan::buf_of(out, dtype);
  std::string op = op_name(type_);
  // Whole outer blocks (columns) or rows per launch, so input and output fit one binding.
  int64_t outer = count / inner;
  int64_t per = std::max<int64_t>(1, max_elems / block);
  for (int64_t o0 = 0; o0 < outer; o0 += per) {
    codegen::ScanGeometry g;
    g.columns = columns;
    g.count = std::min(per, outer - o0) * inner;
    g.len = len;
    g.inner = columns ? inner : 1;
    g.reverse = reverse_;
    g.inclusive = inclusive_;
    launch(op, src.at(o0 * block), dst.at(o0 * block), g, stream);
  }
}

}  // namespace mlx::core
