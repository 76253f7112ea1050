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

// Few rows at least this long are scanned in segments of kSegment elements, a workgroup
// each (three launches, templates/scan.glsl), instead of one workgroup walking the row:
// cumsum f32 of 1x151936 on an H200 went from ~200 us to ~15 us (categorical sampling's
// inverse CDF is one such row).
constexpr int64_t kSegment = 4096;
constexpr int64_t kSegmentRowsBelow = 128;  // more rows than this fill the GPU already

// Plans, binds and records one launch over `g` (offsets filled here); `carries` is bound
// third when g.carry_in.
void launch(const std::string& op, const Buf& in, const Buf& out, codegen::ScanGeometry g,
            int stream, const Buf* carries = nullptr) {
  auto& dev = vulkan::device("Scan");
  auto& enc = vulkan::encoder(stream);
  int64_t parts = g.count * g.segs;
  int64_t last = std::max<int64_t>(g.count * g.len - 1, 0);
  int64_t out_last = g.totals ? std::max<int64_t>(parts - 1, 0) : last;
  auto bi = vulkan::bind_operand(dev, {in.alloc, in.offset, in.itemsize, 0, last}, false);
  auto bo = vulkan::bind_operand(dev, {out.alloc, out.offset, out.itemsize, 0, out_last}, true);
  g.in_offset = bi.elem_offset;
  g.out_offset = bo.elem_offset;
  std::vector<vulkan::Binding> bindings{bi.binding, bo.binding};
  if (g.carry_in) {
    auto bc = vulkan::bind_operand(
        dev,
        {carries->alloc, carries->offset, carries->itemsize, 0, std::max<int64_t>(parts - 1, 0)},
        false);
    g.carry_offset = bc.elem_offset;
    bindings.push_back(bc.binding);
  }
  auto key = codegen::scan_key(op, in.dtype, g);
  const auto& kernel = vulkan::kernel_library().get(key);
  auto numbers = codegen::scan_launch(key, kernel.source, g);
  vulkan::record_launch(enc, kernel, numbers, bindings);
}

// Rows in segments: each segment's total, an exclusive scan of the totals (each
// segment's carry, in the same direction), then each segment scanned from its carry.
// Only where the stored dtype is the accumulator's (not f16/bf16, whose totals would be
// rounded before they are carried).
void scan_segments(const std::string& op, const Buf& src, const Buf& dst, codegen::ScanGeometry g,
                   int stream) {
  auto& enc = vulkan::encoder(stream);
  g.seg = kSegment;
  g.segs = (g.len + kSegment - 1) / kSegment;
  int64_t parts = g.count * g.segs;
  Buf totals = vulkan::temporary(enc, parts, src.dtype);
  Buf carries = vulkan::temporary(enc, parts, src.dtype);
  codegen::ScanGeometry t = g;
  t.totals = true;
  launch(op, src, totals, t, stream);
  codegen::ScanGeometry c;
  c.count = g.count;
  c.len = g.segs;
  c.columns = g.segs <= kShortRow;  // short rows: one invocation each (inner == 1)
  c.reverse = g.reverse;
  c.inclusive = false;
  launch(op, totals, carries, c, stream);
  g.carry_in = true;
  launch(op, src, dst, g, stream, &carries);
}

bool use_segments(const array& in, bool columns, int64_t count, int64_t len) {
  bool half_float = issubdtype(in.dtype(), floating) && in.itemsize() == 2;
  return !columns && !half_float && count < kSegmentRowsBelow && len >= 2 * kSegment;
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
    if (use_segments(in, columns, g.count, len)) {
      scan_segments(op, src.at(o0 * block), dst.at(o0 * block), g, stream);
      continue;
    }
    launch(op, src.at(o0 * block), dst.at(o0 * block), g, stream);
  }
}

}  // namespace mlx::core
