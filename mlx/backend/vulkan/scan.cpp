// eval_gpu of Scan (cumsum, cumprod, cummax, cummin): the "scan" family (codegen/scan.h,
// docs/scan.md). A row-contiguous input is read in place: as rows when the axis is last,
// as columns ([outer, len, inner]) otherwise and for short rows. Any other layout is first
// copied into a row-contiguous temporary in the same axis order, then planned the same
// way. Launches are cut so each fits one binding; few long rows are scanned in segments
// (scan_segments), and a block wider than one binding takes a two-level scan of its own
// (scan_wide_blocks). Only float64 and complex take the explicit CPU route.
#include <algorithm>

#include "codegen/scan.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/dense_copy.h"
#include "mlx/backend/vulkan/elementwise.h"
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
// cumsum f32 of 1x151936 on an H200 went from ~200 us to 17-18 us (categorical sampling's
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
  int64_t elems = g.count * g.len;
  auto bi = vulkan::bind_run(dev, in, elems, false);
  auto bo = vulkan::bind_run(dev, out, g.totals ? parts : elems, true);
  g.in_offset = bi.elem_offset;
  g.out_offset = bo.elem_offset;
  std::vector<vulkan::Binding> bindings{bi.binding, bo.binding};
  if (g.carry_in) {
    auto bc = vulkan::bind_run(dev, *carries, parts, false);
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
// Only where the stored dtype is the accumulator's: f16/bf16 rows go through an f32 copy
// (scan_blocks), as their totals would be rounded before they are carried.
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

bool use_segments(bool columns, int64_t count, int64_t len) {
  return !columns && count < kSegmentRowsBelow && len >= 2 * kSegment;
}

bool half_float(Dtype dtype) {
  return issubdtype(dtype, floating) && size_of(dtype) == 2;
}

// The binary op of the scan's combine.
const char* fold_op(Scan::ReduceType type) {
  switch (type) {
    case Scan::Sum:
      return "Add";
    case Scan::Prod:
      return "Multiply";
    case Scan::Max:
      return "Maximum";
    case Scan::Min:
      return "Minimum";
    case Scan::LogAddExp:
      return "LogAddExp";
  }
  return "Add";
}

vulkan::View view_at(const Buf& b, Dtype dtype, Strides strides) {
  return {allocator::Buffer(b.alloc), b.offset, dtype, std::move(strides)};
}

struct Lines {
  std::string op;
  const char* fold;  // the binary op that folds a carry into a scanned value
  Dtype dtype;
  bool reverse;
  int stream;
};

// Rows along the axis per segment of a wide block (scan_wide_blocks): short enough that a
// workgroup's walk over them stays brief (on lavapipe, Mesa 22.3, a long walk in one
// workgroup stops short: docs/scan.md).
constexpr int64_t kWideSegmentRows = 65536;

void scan_blocks(const Lines& l, const Buf& in, const Buf& out, int64_t outer, int64_t len,
                 int64_t inner, bool inclusive);

// [outer, len, inner] whose outer blocks are wider than one binding, rows at most half of
// one: a two-level scan per block. Segments of whole rows along the axis (each fits a
// binding) are scanned on their own, all in a few launches; each segment's total (its last
// row in scan order, combined with the input row for an exclusive scan, so the input must
// be intact) is gathered; the totals get an exclusive scan in the same direction; and that
// carry is folded into every segment but the first in scan order, carry first as in the
// kernels.
void scan_wide_blocks(const Lines& l, const Buf& in, const Buf& out, int64_t outer, int64_t len,
                      int64_t inner, bool inclusive) {
  auto& enc = vulkan::encoder(l.stream);
  int64_t max_elems = vulkan::binding_elems(vulkan::device("Scan"), in.itemsize);
  int64_t seg = std::min(kWideSegmentRows, max_elems / inner);
  int64_t full = len / seg;
  int64_t tail = len - full * seg;
  int64_t segments = full + (tail > 0 ? 1 : 0);
  int iw = static_cast<int>(inner);
  auto binary = [&](const std::vector<vulkan::View>& ins, const vulkan::View& dst,
                    const Shape& shape) {
    vulkan::launch_elementwise(l.stream, "Scan", "binary", l.fold, ins, dst, shape);
  };
  for (int64_t o = 0; o < outer; ++o) {
    Buf src = in.at(o * len * inner);
    Buf dst = out.at(o * len * inner);
    scan_blocks(l, src, dst, full, seg, inner, inclusive);
    if (tail > 0) {
      scan_blocks(l, src.at(full * seg * inner), dst.at(full * seg * inner), 1, tail, inner,
                  inclusive);
    }
    Buf totals = vulkan::temporary(enc, segments * inner, in.dtype);
    // Segment k's last row in scan order: full segments, then the tail.
    auto gather = [&](int64_t first_row, int64_t rows, int64_t seg_rows, int64_t k) {
      int64_t row = first_row + (l.reverse ? 0 : seg_rows - 1);
      Strides st{seg * inner, 1};
      Shape shape{static_cast<int>(rows), iw};
      auto to = view_at(totals.at(k * inner), l.dtype, {inner, 1});
      auto last = view_at(dst.at(row * inner), l.dtype, st);
      if (inclusive) {
        vulkan::copy_dense(l.stream, last, shape, to);
      } else {
        binary({last, view_at(src.at(row * inner), l.dtype, st)}, to, shape);
      }
    };
    if (full > 0) {
      gather(0, full, seg, 0);
    }
    if (tail > 0) {
      gather(full * seg, 1, tail, full);
    }
    Buf carries = vulkan::temporary(enc, segments * inner, in.dtype);
    scan_blocks(l, totals, carries, 1, segments, inner, false);
    // The first segment in scan order keeps its values: its carry is the identity, and
    // folding that in could still change them (0 + -0 is +0).
    int64_t k0 = l.reverse ? 0 : 1;
    int64_t k1 = l.reverse ? segments - 1 : segments;
    int64_t main_end = std::min(k1, full);
    if (main_end > k0) {
      Shape shape{static_cast<int>(main_end - k0), static_cast<int>(seg), iw};
      auto part = view_at(dst.at(k0 * seg * inner), l.dtype, {seg * inner, inner, 1});
      binary({view_at(carries.at(k0 * inner), l.dtype, {inner, 0, 1}), part}, part, shape);
    }
    if (tail > 0 && k1 == segments) {
      auto part = view_at(dst.at(full * seg * inner), l.dtype, {inner, 1});
      binary({view_at(carries.at(full * inner), l.dtype, {0, 1}), part}, part,
             {static_cast<int>(tail), iw});
    }
  }
}

// [outer, len, inner] whose rows (one step along the axis) exceed half a binding: rows that
// large are few, so each is one elementwise launch folding in the output row before it in
// scan order (carry first). The first row is a copy, or for an exclusive scan the identity,
// broadcast from an exclusive scan of one element. An exclusive step reads the input row
// before: it must be intact.
void scan_wide_rows(const Lines& l, const Buf& in, const Buf& out, int64_t outer, int64_t len,
                    int64_t inner, bool inclusive) {
  Buf identity = in;
  if (!inclusive) {
    identity = vulkan::temporary(vulkan::encoder(l.stream), 1, in.dtype);
    scan_blocks(l, in, identity, 1, 1, 1, false);
  }
  Shape row_shape{static_cast<int>(inner)};
  for (int64_t o = 0; o < outer; ++o) {
    auto row = [&](const Buf& b, int64_t r) { return b.at((o * len + r) * inner); };
    for (int64_t k = 0; k < len; ++k) {
      int64_t r = l.reverse ? len - 1 - k : k;
      if (k == 0) {
        auto first =
            inclusive ? view_at(row(in, r), l.dtype, {1}) : view_at(identity, l.dtype, {0});
        vulkan::launch_elementwise(l.stream, "Scan", "copy", "Copy", {first},
                                   view_at(row(out, r), l.dtype, {1}), row_shape);
        continue;
      }
      int64_t p = l.reverse ? r + 1 : r - 1;
      auto x = view_at(inclusive ? row(in, r) : row(in, p), l.dtype, {1});
      vulkan::launch_elementwise(l.stream, "Scan", "binary", l.fold,
                                 {view_at(row(out, p), l.dtype, {1}), x},
                                 view_at(row(out, r), l.dtype, {1}), row_shape);
    }
  }
}

// [outer, len, inner] scanned over len: whole outer blocks (columns) or rows per launch,
// so input and output fit one binding; wider blocks go to scan_wide_blocks, or to
// scan_wide_rows when not even two rows fit a binding.
void scan_blocks(const Lines& l, const Buf& in, const Buf& out, int64_t outer, int64_t len,
                 int64_t inner, bool inclusive) {
  int64_t max_elems = vulkan::binding_elems(vulkan::device("Scan"), in.itemsize);
  int64_t block = len * inner;  // one outer block (columns) or one row
  if (block > max_elems) {
    if (inner > max_elems / 2) {
      scan_wide_rows(l, in, out, outer, len, inner, inclusive);
    } else {
      scan_wide_blocks(l, in, out, outer, len, inner, inclusive);
    }
    return;
  }
  bool columns = inner > 1 || len <= kShortRow;
  int64_t per = std::max<int64_t>(1, max_elems / block);
  for (int64_t o0 = 0; o0 < outer; o0 += per) {
    codegen::ScanGeometry g;
    g.columns = columns;
    g.count = std::min(per, outer - o0) * inner;
    g.len = len;
    g.inner = columns ? inner : 1;
    g.reverse = l.reverse;
    g.inclusive = inclusive;
    if (use_segments(columns, g.count, len) && !half_float(l.dtype)) {
      scan_segments(l.op, in.at(o0 * block), out.at(o0 * block), g, l.stream);
      continue;
    }
    int64_t f32_rows = vulkan::binding_elems(vulkan::device("Scan"), 4) / len;
    if (use_segments(columns, g.count, len) && f32_rows > 0) {
      // f16/bf16: the segments in an f32 copy (as many rows as fit one binding in f32),
      // rounded once into the output as the row kernel rounds; carries stored in the dtype
      // would add a rounding each.
      auto& enc = vulkan::encoder(l.stream);
      Strides dense{len, 1};
      for (int64_t r0 = 0; r0 < g.count; r0 += f32_rows) {
        codegen::ScanGeometry part = g;
        part.count = std::min(f32_rows, g.count - r0);
        Shape shape{static_cast<int>(part.count), static_cast<int>(len)};
        Buf wide = vulkan::temporary(enc, part.count * len, "f32");
        Buf src = in.at(o0 * block + r0 * len), dst = out.at(o0 * block + r0 * len);
        vulkan::copy_dense(l.stream, view_at(src, l.dtype, dense), shape,
                           view_at(wide, float32, dense));
        scan_segments(l.op, wide, wide, part, l.stream);
        vulkan::copy_dense(l.stream, view_at(wide, float32, dense), shape,
                           view_at(dst, l.dtype, dense));
      }
      continue;
    }
    launch(l.op, in.at(o0 * block), out.at(o0 * block), g, l.stream);
  }
}

}  // namespace

void Scan::eval_gpu(const std::vector<array>& inputs, array& out) {
  const auto& in = inputs[0];
  const char* dtype = vulkan::gpu_dtype_name(in.dtype());
  if (!dtype || in.dtype() != out.dtype()) {
    vulkan::cpu_fallback(*this, inputs, out, "a dtype the GPU kernels do not hold");
    return;
  }
  int ndim = static_cast<int>(in.ndim());
  int64_t len = ndim == 0 ? 1 : in.shape(axis_);
  int64_t inner = 1;
  for (int d = axis_ + 1; d < ndim; ++d) {
    inner *= in.shape(d);
  }
  int64_t max_elems = vulkan::binding_elems(vulkan::device("Scan"), in.itemsize());
  bool wide = len * inner > max_elems;
  // The kernels read each element before writing it and never read it again, so the
  // output may take over a dead row-contiguous input's buffer; not when a block wider than
  // a binding reads its input again for the carries.
  vulkan::allocate_or_donate(inputs, out, !wide);
  if (out.size() == 0) {
    return;
  }
  int stream = this->stream().index;
  auto& enc = vulkan::encoder(stream);
  Lines lines{op_name(type_), fold_op(type_), in.dtype(), reverse_, stream};
  int64_t count = static_cast<int64_t>(in.size()) / len;
  // Any other layout is first copied row-contiguous in the same axis order (copy_dense,
  // whatever its span): moving the axis last would need a second copy back.
  Buf src = in.flags().row_contiguous ? vulkan::buf_of(in, dtype)
                                      : vulkan::axes_last(enc, stream, in, {}, dtype);
  scan_blocks(lines, src, vulkan::buf_of(out, dtype), count / inner, len, inner, inclusive_);
}

}  // namespace mlx::core
