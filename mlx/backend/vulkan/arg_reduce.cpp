// eval_gpu of ArgReduce: the "arg_reduce" row kernel (codegen/reduce.h, docs/reduce.md). A
// row-contiguous input is read in place (rows when the axis is last; columns otherwise, for arg
// reductions); any other layout (and a column block wider than one binding) is copied with the
// axis moved last (copy_dense, whatever the view's span). Launches are cut so each fits one
// binding; a row longer than a binding is cut into segments (run_long_rows).
#include <algorithm>

#include "codegen/reduce.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/elementwise.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/launch_memo.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

namespace codegen = vulkan::codegen;
using vulkan::Buf;

constexpr int64_t kSplitRowsBelow = 128;

// Plans, binds and records one arg_reduce launch over `g` (offsets filled here). `aux`
// is binding 2 of a split (values written) or finishing (indices read) launch.
void launch(const std::string& op, const Buf& in, const Buf& out, codegen::ReduceGeometry g,
            int stream, codegen::ArgStage stage = codegen::ArgStage::One,
            const Buf* aux = nullptr) {
  auto& dev = vulkan::device(op.c_str());
  auto& enc = vulkan::encoder(stream);
  int64_t outs = g.count * g.splits;
  auto bi = vulkan::bind_run(dev, in, g.count * g.len, false);
  auto bo = vulkan::bind_run(dev, out, outs, true);
  g.in_offset = bi.elem_offset;
  g.out_offset = bo.elem_offset;
  vulkan::Binding bindings[3] = {bi.binding, bo.binding};
  size_t n = 2;
  if (aux) {
    bool write = stage == codegen::ArgStage::Split;
    auto ba = vulkan::bind_run(dev, *aux, write ? outs : g.count * g.len, write);
    g.aux_offset = ba.elem_offset;
    bindings[n++] = ba.binding;
  }
  auto sig =
      vulkan::reduce_signature("arg_reduce", op, in.dtype, "", static_cast<int64_t>(stage), g);
  const auto& planned = vulkan::memoized(sig, [&] {
    auto key = codegen::arg_reduce_key(op, in.dtype, g, stage, dev.caps());
    const auto& kernel = vulkan::kernel_library().get(key);
    return vulkan::MemoEntry{&kernel, codegen::arg_reduce_launch(key, kernel.source, g)};
  });
  vulkan::record_launch(enc, *planned.kernel, planned.launch, std::span(bindings, n));
}

// Rows longer than one binding: each row in segments of at most a binding, each segment
// split into slices whose (value, index) pairs go into one list per row; one Add shifts the
// indices from segment-local to row-global, and a finishing launch picks each row's winner
// (ties and NaNs compare indices, so the first extreme still wins). An empty slice's ~0u
// index wraps to the index before its segment, but it carries the identity, which only
// wins when every element equals it, and then index 0 wins the tie.
void run_long_rows(const std::string& op, const Buf& in, int64_t count, int64_t len, const Buf& out,
                   int64_t max_elems, int stream) {
  auto& enc = vulkan::encoder(stream);
  std::vector<uint32_t> shift;  // per pair of a row: its segment's first index
  std::vector<int64_t> splits;
  for (int64_t s0 = 0; s0 < len; s0 += max_elems) {
    splits.push_back(codegen::reduce_splits(1, std::min(max_elems, len - s0)));
    shift.insert(shift.end(), static_cast<size_t>(splits.back()), static_cast<uint32_t>(s0));
  }
  int64_t pairs = static_cast<int64_t>(shift.size());
  Buf indices = vulkan::temporary(enc, count * pairs, "u32");
  Buf values = vulkan::temporary(enc, count * pairs, codegen::arg_reduce_value_dtype(in.dtype));
  for (int64_t r = 0; r < count; ++r) {
    int64_t p = r * pairs;
    for (size_t s = 0; s < splits.size(); ++s) {
      int64_t s0 = static_cast<int64_t>(s) * max_elems;
      codegen::ReduceGeometry g;
      g.count = 1;
      g.len = std::min(max_elems, len - s0);
      g.splits = splits[s];
      Buf vals = values.at(p);
      launch(op, in.at(r * len + s0), indices.at(p), g, stream, codegen::ArgStage::Split, &vals);
      p += g.splits;
    }
  }
  Buf shifts = vulkan::temporary(enc, pairs, "u32");
  enc.write({shifts.alloc, 0, static_cast<VkDeviceSize>(pairs * 4), false}, shift.data(),
            static_cast<size_t>(pairs * 4));
  vulkan::View idx{allocator::Buffer(indices.alloc), indices.offset, uint32, {pairs, 1}};
  vulkan::View by{allocator::Buffer(shifts.alloc), 0, uint32, {0, 1}};
  vulkan::launch_elementwise(stream, "ArgReduce", "binary", "Add", {idx, by}, idx,
                             {static_cast<int>(count), static_cast<int>(pairs)});
  codegen::ReduceGeometry f;
  f.count = count;
  f.len = pairs;
  launch(op, values, out, f, stream, codegen::ArgStage::Finish, &indices);
}

// Rows of `len` in groups that fit one binding (rows longer than that: run_long_rows). Few
// long rows (a decode step's argmax over the vocabulary is one row) are split across
// workgroups: per slice a (value, index) pair, then a finishing launch over the pairs.
void run_rows(const std::string& op, const Buf& in, int64_t count, int64_t len, const Buf& out,
              int stream) {
  auto& dev = vulkan::device(op.c_str());
  int64_t max_elems = vulkan::binding_elems(dev, in.itemsize);
  int64_t max_out = vulkan::binding_elems(dev, out.itemsize);
  if (len > max_elems) {
    run_long_rows(op, in, count, len, out, max_elems, stream);
    return;
  }
  auto& enc = vulkan::encoder(stream);
  // Rows per launch: both the input and the output of a launch must fit one binding.
  int64_t per = std::max<int64_t>(1, std::min(max_elems / std::max<int64_t>(len, 1), max_out));
  for (int64_t r0 = 0; r0 < count; r0 += per) {
    codegen::ReduceGeometry g;
    g.count = std::min(per, count - r0);
    g.len = len;
    // Only when rows are fewer than the GPU has SMs' worth of workgroups: with more, the
    // finishing launch costs more than the extra parallelism gains (512 x 32000 measured
    // 29 us unsplit, 34 us split on an H200).
    g.splits = g.count < kSplitRowsBelow ? codegen::reduce_splits(g.count, len) : 1;
    if (g.splits == 1) {
      launch(op, in.at(r0 * len), out.at(r0), g, stream);
      continue;
    }
    Buf indices = vulkan::temporary(enc, g.count * g.splits, "u32");
    Buf values =
        vulkan::temporary(enc, g.count * g.splits, codegen::arg_reduce_value_dtype(in.dtype));
    launch(op, in.at(r0 * len), indices, g, stream, codegen::ArgStage::Split, &values);
    codegen::ReduceGeometry f;
    f.count = g.count;
    f.len = g.splits;
    launch(op, values, out.at(r0), f, stream, codegen::ArgStage::Finish, &indices);
  }
}

}  // namespace

void ArgReduce::eval_gpu(const std::vector<array>& inputs, array& out) {
  const auto& in = inputs[0];
  const char* dtype = vulkan::gpu_dtype_name(in.dtype());
  if (!dtype) {
    vulkan::cpu_fallback(*this, inputs, out, "a dtype the GPU kernels do not hold");
    return;
  }
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  int stream = this->stream().index;
  std::string op = type() == ArgReduceType::ArgMax ? "ArgMax" : "ArgMin";
  int ax = axis();
  int64_t len = in.shape(ax);
  int64_t inner = 1;
  for (int d = ax + 1; d < static_cast<int>(in.ndim()); ++d) {
    inner *= in.shape(d);
  }
  int64_t count = static_cast<int64_t>(in.size()) / len;
  Buf dst = vulkan::buf_of(out, "u32");
  // Columns: a non-last axis read in place, or short rows (one invocation per row, the
  // columns kernel with inner = 1, instead of a mostly idle workgroup per row).
  bool short_rows = inner == 1 && len <= 32 && count > 1;
  if (in.flags().row_contiguous && (inner > 1 || short_rows)) {
    auto& dev = vulkan::device("ArgReduce");
    int64_t max_elems = vulkan::binding_elems(dev, in.itemsize());
    int64_t max_out = vulkan::binding_elems(dev, 4);
    int64_t block = len * inner;
    if (block <= max_elems && inner <= max_out) {
      // Columns: [outer, len, inner], read in place; input and output blocks per launch
      // both fit one binding.
      Buf src = vulkan::buf_of(in, dtype);
      int64_t outer = count / inner;
      int64_t per = std::max<int64_t>(1, std::min(max_elems / block, max_out / inner));
      for (int64_t o0 = 0; o0 < outer; o0 += per) {
        codegen::ReduceGeometry g;
        g.columns = true;
        g.count = std::min(per, outer - o0) * inner;
        g.len = len;
        g.inner = inner;
        launch(op, src.at(o0 * block), dst.at(o0 * inner), g, stream);
      }
      return;
    }
  }
  auto& enc = vulkan::encoder(stream);
  bool in_place = in.flags().row_contiguous && inner == 1;
  Buf rows = in_place ? vulkan::buf_of(in, dtype) : vulkan::axes_last(enc, stream, in, {ax}, dtype);
  run_rows(op, rows, count, len, dst, stream);
}

}  // namespace mlx::core
