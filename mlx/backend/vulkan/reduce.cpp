// eval_gpu of Reduce: the "reduce" kernel family (codegen/reduce.h, docs/reduce.md).
//
// Plan: drop size-1 dims and merge neighbouring dims that are both reduced or both kept.
// A row-contiguous input whose blocks read [kept, reduced] is reduced as rows, and one
// whose blocks read [kept, reduced, kept] (either kept block may be absent) as columns.
// Anything else (reduced axes interleaved with kept ones, or a strided input) is first
// copied with its reduced axes moved last, then reduced as rows. Rows that leave too few
// workgroups (the all-reduce is one row) are split into slices whose partials a second
// launch finishes; anything larger than one binding (maxStorageBufferRange) is cut into
// launches that each fit one: rows into segments, column blocks into chunks of rows, and a
// view wider than a binding is read in memory order when it is a transpose of dense
// memory, else copied by copy_dense. No layout takes the CPU route.
#include <algorithm>
#include <numeric>
#include <optional>

#include "codegen/reduce.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/device.h"
#include "mlx/backend/vulkan/elementwise.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/launch_memo.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

using vulkan::Allocation;
using vulkan::CommandEncoder;
using vulkan::Device;
namespace codegen = vulkan::codegen;

const char* op_name(ReduceType t) {
  switch (t) {
    case ReduceType::Sum:
      return "Sum";
    case ReduceType::Prod:
      return "Prod";
    case ReduceType::Max:
      return "Max";
    case ReduceType::Min:
      return "Min";
    case ReduceType::And:
      return "And";
    case ReduceType::Or:
      return "Or";
  }
  return "Sum";
}

using vulkan::Buf;

struct Context {
  CommandEncoder& enc;
  Device& dev;
  std::string op;
};

// Records one kernel: plan (key, pipeline, numbers; memoized), bind, record.
void launch(Context& c, const Buf& in, const Buf& out, codegen::ReduceGeometry g) {
  int64_t in_elems = g.count * g.len;
  int64_t out_elems = g.count * g.splits;
  auto bi = vulkan::bind_operand(
      c.dev, {in.alloc, in.offset, in.itemsize, 0, std::max<int64_t>(in_elems - 1, 0)}, false);
  auto bo = vulkan::bind_operand(
      c.dev, {out.alloc, out.offset, out.itemsize, 0, std::max<int64_t>(out_elems - 1, 0)}, true);
  g.in_offset = bi.elem_offset;
  g.out_offset = bo.elem_offset;
  const auto& planned =
      vulkan::memoized(vulkan::reduce_signature("reduce", c.op, in.dtype, out.dtype, 0, g), [&] {
        auto key = codegen::reduce_key(c.op, in.dtype, out.dtype, g, c.dev.caps());
        const auto& kernel = vulkan::kernel_library().get(key);
        return vulkan::MemoEntry{&kernel, codegen::reduce_launch(key, kernel.source, g)};
      });
  const vulkan::Binding bindings[] = {bi.binding, bo.binding};
  vulkan::record_launch(c.enc, *planned.kernel, planned.launch, bindings);
}

bool reduce_columns(Context& c, const Buf& in, int64_t outer, int64_t len, int64_t inner,
                    const Buf& out);

// Rows this short fold in one invocation each (the columns kernel with inner = 1): a
// workgroup per row of a few elements would leave most of its 256 invocations idle.
constexpr int64_t kShortRow = 32;

// `count` rows of `len` contiguous elements of `in` into `count` elements of `out`.
void reduce_rows(Context& c, const Buf& in, int64_t count, int64_t len, const Buf& out) {
  if (count == 0) {
    return;
  }
  int64_t max_elems = vulkan::binding_elems(c.dev, in.itemsize);
  if (len > 0 && len <= kShortRow && count > 1 && reduce_columns(c, in, count, len, 1, out)) {
    return;
  }
  std::string partial = codegen::reduce_partial_dtype(c.op, out.dtype);
  if (count * len <= max_elems) {
    int64_t splits = codegen::reduce_splits(count, len);
    codegen::ReduceGeometry g;
    g.count = count;
    g.len = len;
    g.splits = splits;
    if (splits == 1) {
      launch(c, in, out, g);
      return;
    }
    Buf parts = vulkan::temporary(c.enc, count * splits, partial);
    launch(c, in, parts, g);
    reduce_rows(c, parts, count, splits, out);
    return;
  }
  if (len <= max_elems) {
    int64_t per = max_elems / std::max<int64_t>(len, 1);
    for (int64_t r0 = 0; r0 < count; r0 += per) {
      reduce_rows(c, in.at(r0 * len), std::min(per, count - r0), len, out.at(r0));
    }
    return;
  }
  // Rows longer than one binding: each row in segments, each segment in slices; a slice
  // past the end of a short last segment folds nothing and stores the identity.
  int64_t segments = (len + max_elems - 1) / max_elems;
  int64_t splits = codegen::reduce_splits(1, max_elems);
  Buf parts = vulkan::temporary(c.enc, count * segments * splits, partial);
  for (int64_t r = 0; r < count; ++r) {
    for (int64_t s = 0; s < segments; ++s) {
      codegen::ReduceGeometry g;
      g.count = 1;
      g.len = std::min(max_elems, len - s * max_elems);
      g.splits = splits;
      launch(c, in.at(r * len + s * max_elems), parts.at((r * segments + s) * splits), g);
    }
  }
  reduce_rows(c, parts, count, segments * splits, out);
}

// [outer, len, inner] folded over len into outer * inner elements. An outer block larger
// than a binding is cut along len into chunks of whole rows, each folded into a row of
// partials, and the partials are folded as columns again; false when not even two rows
// fit one binding (the caller then copies the reduced axis last and reduces rows).
bool reduce_columns(Context& c, const Buf& in, int64_t outer, int64_t len, int64_t inner,
                    const Buf& out) {
  int64_t max_elems = vulkan::binding_elems(c.dev, in.itemsize);
  int64_t block = len * inner;
  if (block > max_elems) {
    int64_t rows = max_elems / inner;
    if (rows < 2) {
      return false;
    }
    int64_t chunks = (len + rows - 1) / rows;
    std::string partial = codegen::reduce_partial_dtype(c.op, out.dtype);
    for (int64_t o = 0; o < outer; ++o) {
      Buf parts = vulkan::temporary(c.enc, chunks * inner, partial);
      for (int64_t k = 0; k < chunks; ++k) {
        reduce_columns(c, in.at(o * block + k * rows * inner), 1, std::min(rows, len - k * rows),
                       inner, parts.at(k * inner));
      }
      reduce_columns(c, parts, 1, chunks, inner, out.at(o * inner));
    }
    return true;
  }
  int64_t per = std::max<int64_t>(1, max_elems / std::max<int64_t>(block, 1));
  for (int64_t o0 = 0; o0 < outer; o0 += per) {
    codegen::ReduceGeometry g;
    g.columns = true;
    int64_t n = std::min(per, outer - o0);
    g.count = n * inner;
    g.len = len;
    g.inner = inner;
    g.splits = codegen::reduce_column_splits(g.count, len);
    if (g.splits == 1) {
      launch(c, in.at(o0 * block), out.at(o0 * inner), g);
      continue;
    }
    // Partials [n, splits, inner], then the columns of those.
    std::string partial = codegen::reduce_partial_dtype(c.op, out.dtype);
    Buf parts = vulkan::temporary(c.enc, g.count * g.splits, partial);
    launch(c, in.at(o0 * block), parts, g);
    reduce_columns(c, parts, n, g.splits, inner, out.at(o0 * inner));
  }
  return true;
}

// The dims of size > 1 from the largest stride to the smallest when `in` is a permutation
// of a dense run starting at its offset (those strides are row-major over that order).
std::optional<std::vector<int>> memory_order(const array& in) {
  std::vector<int> order;
  for (int d = 0; d < static_cast<int>(in.ndim()); ++d) {
    if (in.shape(d) > 1) {
      order.push_back(d);
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return in.strides(a) > in.strides(b); });
  int64_t expect = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (in.strides(*it) != expect) {
      return std::nullopt;
    }
    expect *= in.shape(*it);
  }
  return order;
}

// Whether the kept dims appear in `order` in increasing (the output's) order.
template <typename Reduced>
bool keeps_kept_order(const std::vector<int>& order, Reduced reduced) {
  int last = -1;
  for (int d : order) {
    if (!reduced(d)) {
      if (d < last) {
        return false;
      }
      last = d;
    }
  }
  return true;
}

}  // namespace

void Reduce::eval_gpu(const std::vector<array>& inputs, array& out) {
  const auto& in = inputs[0];
  const char* in_dtype = vulkan::gpu_dtype_name(in.dtype());
  const char* out_dtype = vulkan::gpu_dtype_name(out.dtype());
  if (!in_dtype || !out_dtype) {
    vulkan::cpu_fallback(*this, inputs, out, "a dtype the GPU kernels do not hold");
    return;
  }
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  int stream = this->stream().index;
  Context c{vulkan::encoder(stream), vulkan::device(name()), op_name(type())};
  Buf dst = vulkan::buf_of(out, out_dtype);
  if (in.size() == 0) {
    reduce_rows(c, dst, static_cast<int64_t>(out.size()), 0, dst);  // identities
    return;
  }
  // The dims the plan walks, outermost first: the logical order, or for a view wider than
  // one binding that is a permutation of dense memory (a transpose) the memory order, read
  // in place, when that keeps the kept dims' order (the output's).
  bool dense = in.flags().row_contiguous;
  std::vector<int> dims;
  for (int d = 0; d < static_cast<int>(in.ndim()); ++d) {
    if (in.shape(d) > 1) {
      dims.push_back(d);
    }
  }
  auto reduced_dim = [&](int d) {
    return std::find(axes().begin(), axes().end(), d) != axes().end();
  };
  if (!dense && !vulkan::copy_fits(in)) {
    if (auto order = memory_order(in); order && keeps_kept_order(*order, reduced_dim)) {
      dims = *order;
      dense = true;
    }
  }
  // Blocks of merged dims: (extent, reduced?).
  std::vector<std::pair<int64_t, bool>> blocks;
  for (int d : dims) {
    bool r = reduced_dim(d);
    if (!blocks.empty() && blocks.back().second == r) {
      blocks.back().first *= in.shape(d);
    } else {
      blocks.emplace_back(in.shape(d), r);
    }
  }
  Buf src = vulkan::buf_of(in, in_dtype);
  int64_t total = static_cast<int64_t>(in.size());
  int64_t reduced = 1;
  for (auto& [n, r] : blocks) {
    reduced *= r ? n : 1;
  }
  size_t nb = blocks.size();
  if (dense && nb <= 3 && !(nb == 3 && blocks[0].second)) {
    // [R], [K, R], [R, K], [K, R, K], or no reduced dims at all (a cast).
    bool rows = nb == 0 || blocks.back().second || reduced == 1;
    if (rows) {
      reduce_rows(c, src, total / reduced, reduced, dst);
      return;
    }
    int64_t outer = blocks[0].second ? 1 : blocks[0].first;
    int64_t inner = blocks.back().first;
    if (reduce_columns(c, src, outer, reduced, inner, dst)) {
      return;
    }
  }
  Buf rows = vulkan::axes_last(c.enc, stream, in, axes(), in_dtype);
  reduce_rows(c, rows, total / reduced, reduced, dst);
}

}  // namespace mlx::core
