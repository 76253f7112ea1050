// eval_gpu of the indexing primitives, on the "gather" and "scatter" families
// (codegen/indexing.h, docs/indexing.md):
//   Take, TakeAlongAxis, Gather, DynamicSlice: one gather launch per source window. Index
//     arrays and the source are read in place through their strides (several index arrays
//     of a Gather are first copied into one temporary); a source wider than one storage
//     binding is read by one launch per window of it, each writing the elements it holds.
//   Scatter, ScatterAxis, DynamicSliceUpdate: the output takes the source (donated when
//     nothing else holds it, else copied), then one scatter launch combines the updates.
// Index values stay on the device: keys and planned launches depend only on shapes,
// strides and dtypes, so a loop at a moving index reuses one kernel and one memo entry.
// Operands (other than a gather's source) wider than one binding, float64 and complex take
// the logged CPU route.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>

#include "codegen/indexing.h"
#include "mlx/backend/common/utils.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/elementwise.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/launch_memo.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/backend/vulkan/utils.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

namespace codegen = vulkan::codegen;
using vulkan::Binding;

// Elements of an operand in an allocation: element 0 at byte `origin`, the launch touching
// element offsets [lo, hi] relative to it.
struct Operand {
  vulkan::Allocation* alloc = nullptr;
  int64_t origin = 0;
  int64_t itemsize = 4;
  int64_t lo = 0, hi = 0;
  const char* dtype = "i32";
};

// [lo, hi]: the lowest and highest element offsets of a strided view.
std::pair<int64_t, int64_t> span_of(const Shape& shape, const Strides& strides) {
  int64_t lo = 0, hi = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) {
      return {0, 0};
    }
    int64_t s = (int64_t{shape[d]} - 1) * strides[d];
    (s < 0 ? lo : hi) += s;
  }
  return {lo, hi};
}

Operand operand_of(const array& a) {
  auto [lo, hi] = span_of(a.shape(), a.strides());
  return {vulkan::allocation(a.buffer()),
          static_cast<int64_t>(a.offset()),
          static_cast<int64_t>(a.itemsize()),
          lo,
          hi,
          vulkan::gpu_dtype_name(a.dtype())};
}

Operand operand_of(const vulkan::Buf& b, int64_t elems, const char* dtype) {
  return {b.alloc, b.offset, b.itemsize, 0, std::max<int64_t>(elems - 1, 0), dtype};
}

bool fits(const vulkan::Device& dev, const Operand& o) {
  return vulkan::fits_one_binding(dev, {o.alloc, o.origin, o.itemsize, o.lo, o.hi});
}

vulkan::BoundOperand bind(const vulkan::Device& dev, const Operand& o, bool output) {
  return vulkan::bind_operand(dev, {o.alloc, o.origin, o.itemsize, o.lo, o.hi}, output);
}

// Why the kernels cannot take these inputs and output (a dtype they do not hold, or an
// operand wider than one storage binding; `wide_ok` may be, read in windows), or nullptr.
const char* unsupported(const std::vector<const array*>& inputs, const array& out,
                        const array* wide_ok) {
  auto& dev = vulkan::device("indexing");
  if (!vulkan::gpu_supports(out.dtype())) {
    return "a dtype the GPU kernels do not hold";
  }
  if (static_cast<int64_t>(out.size()) > vulkan::binding_elems(dev, out.itemsize())) {
    return "an output wider than one storage binding";
  }
  for (const array* a : inputs) {
    if (!vulkan::gpu_supports(a->dtype())) {
      return "a dtype the GPU kernels do not hold";
    }
    if (a != wide_ok && !fits(dev, operand_of(*a))) {
      return "an operand wider than one storage binding";
    }
  }
  return nullptr;
}

// An index operand when there is none to read (no index arrays): one int32.
Operand dummy_index(vulkan::CommandEncoder& enc) {
  return operand_of(vulkan::temporary(enc, 1, "i32"), 1, "i32");
}

// Copies index arrays (all of one dtype and shape) one after another into a dense temporary.
Operand concat_indices(int stream, const std::vector<array>& idx) {
  auto& enc = vulkan::encoder(stream);
  const char* dtype = vulkan::gpu_dtype_name(idx[0].dtype());
  int64_t n = static_cast<int64_t>(idx[0].size());
  vulkan::Buf tmp = vulkan::temporary(enc, n * static_cast<int64_t>(idx.size()), dtype);
  for (size_t k = 0; k < idx.size() && n > 0; ++k) {
    vulkan::View dst{allocator::Buffer(tmp.alloc),
                     tmp.offset + static_cast<int64_t>(k) * n * tmp.itemsize, idx[k].dtype(),
                     row_major_strides(idx[k].shape())};
    vulkan::launch_elementwise(stream, "Gather", "copy", "Copy", {vulkan::view_of(idx[k])}, dst,
                               idx[k].shape());
  }
  return operand_of(tmp, n * static_cast<int64_t>(idx.size()), dtype);
}

// Elements per source window of a gather: MLX_VK_GATHER_WINDOW (a test knob forcing
// several windows) or what one binding holds, in multiples of 16 elements so vectors never
// straddle two windows.
int64_t window_elems(const vulkan::Device& dev, int64_t itemsize) {
  int64_t limit = vulkan::binding_elems(dev, itemsize);
  int64_t knob = static_cast<int64_t>(vulkan::env_size("MLX_VK_GATHER_WINDOW", 0));
  if (knob > 0) {
    limit = std::min(limit, knob);
  }
  return std::max<int64_t>(limit / 16 * 16, 16);
}

int64_t floor_to(int64_t v, int64_t m) {
  return v >= 0 ? v / m * m : -((-v + m - 1) / m) * m;
}

// The signature words of the launch being planned: per thread and reused, so a memo hit
// allocates nothing (a signature's length varies with the rank).
std::vector<int64_t>& signature_scratch() {
  thread_local std::vector<int64_t> sig;
  sig.clear();
  return sig;
}

void add_words(std::vector<int64_t>& sig, const std::vector<int64_t>& v) {
  sig.push_back(static_cast<int64_t>(v.size()));
  sig.insert(sig.end(), v.begin(), v.end());
}

void add_axes(std::vector<int64_t>& sig, const std::vector<codegen::IndexAxis>& axes) {
  sig.push_back(static_cast<int64_t>(axes.size()));
  for (const auto& a : axes) {
    sig.insert(sig.end(), {a.idx_offset, a.stride, a.size, a.limit});
  }
}

// ---- gather ---------------------------------------------------------------------------

// A gather over the output's coordinates: per output dim the source stride and the index
// stride; index axes with offsets relative to the index operand's element 0.
struct GatherSpec {
  Shape shape;
  Strides src_strides, idx_strides;
  std::vector<codegen::IndexAxis> axes;
  bool clamp = false;
};

void run_gather(int stream, const array& src, const Operand& index, GatherSpec spec, array& out) {
  auto& dev = vulkan::device("Gather");
  auto& enc = vulkan::encoder(stream);
  // Merge dims that are contiguous in the output, the source and the indices alike.
  auto [shape, strides] = collapse_contiguous_dims(
      spec.shape, {row_major_strides(spec.shape), spec.src_strides, spec.idx_strides});
  codegen::GatherGeometry g;
  g.shape.assign(shape.begin(), shape.end());
  g.src_strides.assign(strides[1].begin(), strides[1].end());
  g.idx_strides.assign(strides[2].begin(), strides[2].end());
  g.itemsize = static_cast<int>(src.itemsize());
  Operand so = operand_of(src);
  g.src_lo = so.lo;
  g.src_hi = so.hi;
  auto bi = bind(dev, index, false);
  g.axes = spec.axes;
  for (auto& a : g.axes) {
    a.idx_offset += static_cast<int64_t>(bi.elem_offset);
  }
  auto bo = bind(dev, operand_of(out), true);
  g.out_offset = bo.elem_offset;
  const char* index_dtype = index.dtype;
  int64_t win = window_elems(dev, g.itemsize);
  int64_t first = floor_to(so.lo, 16);
  for (int64_t w0 = first; w0 <= so.hi; w0 += win) {
    Operand part = so;
    part.lo = std::max(w0, so.lo);
    part.hi = std::min(w0 + win - 1, so.hi);
    auto bs = bind(dev, part, false);
    g.src_offset = static_cast<int64_t>(bs.elem_offset);
    g.win_lo = w0;
    g.win_hi = w0 + win;
    g.fill = w0 == first;
    auto& sig = signature_scratch();
    sig.insert(sig.end(), {vulkan::family_word("gather"), g.itemsize,
                           static_cast<int64_t>(reinterpret_cast<uintptr_t>(index_dtype)),
                           spec.clamp ? 1 : 0});
    add_words(sig, g.shape);
    add_words(sig, g.src_strides);
    add_words(sig, g.idx_strides);
    add_axes(sig, g.axes);
    sig.insert(sig.end(), {g.src_offset, static_cast<int64_t>(g.out_offset), g.src_lo, g.src_hi,
                           g.win_lo, g.win_hi, g.fill ? 1 : 0});
    const auto& planned = vulkan::memoized(sig, [&] {
      auto key = codegen::gather_key(index_dtype, spec.clamp, g);
      const auto& kernel = vulkan::kernel_library().get(key);
      return vulkan::MemoEntry{&kernel, codegen::gather_launch(key, kernel.source, g)};
    });
    const Binding bindings[] = {bs.binding, bi.binding, bo.binding};
    vulkan::record_launch(enc, *planned.kernel, planned.launch, bindings);
  }
}

// ---- scatter --------------------------------------------------------------------------

struct ScatterSpec {
  std::string op = "None";
  bool clamp = false;
  codegen::ScatterGeometry g;  // offsets relative to each operand's element 0
};

// out takes src's buffer when nothing else can see it, else a row-contiguous copy of it.
void run_scatter(int stream, const Operand& index, const Operand& updates, ScatterSpec spec,
                 array& out) {
  auto& dev = vulkan::device("Scatter");
  auto& enc = vulkan::encoder(stream);
  auto& g = spec.g;
  auto bo = bind(dev, operand_of(out), true);
  auto bi = bind(dev, index, false);
  auto bu = bind(dev, updates, false);
  for (auto& a : g.axes) {
    a.idx_offset += static_cast<int64_t>(bi.elem_offset);
  }
  g.upd_offset = bu.elem_offset;
  g.out_offset = bo.elem_offset;
  const char* dtype = vulkan::gpu_dtype_name(out.dtype());
  auto& sig = signature_scratch();
  sig.insert(sig.end(), {vulkan::family_word("scatter"), vulkan::family_word(spec.op.c_str()),
                         static_cast<int64_t>(reinterpret_cast<uintptr_t>(dtype)),
                         static_cast<int64_t>(reinterpret_cast<uintptr_t>(index.dtype)),
                         spec.clamp ? 1 : 0, g.n});
  for (const auto* dims : {&g.outer, &g.inner}) {
    add_words(sig, dims->shape);
    add_words(sig, dims->out_strides);
    add_words(sig, dims->upd_strides);
    add_words(sig, dims->idx_strides);
  }
  add_axes(sig, g.axes);
  sig.insert(sig.end(), {g.idx_mul_i, g.upd_mul_i, static_cast<int64_t>(g.upd_offset),
                         static_cast<int64_t>(g.out_offset)});
  const auto& planned = vulkan::memoized(sig, [&] {
    auto key = codegen::scatter_key(spec.op, dtype, index.dtype, spec.clamp, g);
    const auto& kernel = vulkan::kernel_library().get(key);
    return vulkan::MemoEntry{&kernel, codegen::scatter_launch(key, kernel.source, g)};
  });
  const Binding bindings[] = {bo.binding, bi.binding, bu.binding};
  vulkan::record_launch(enc, *planned.kernel, planned.launch, bindings);
}

// Appends window dim d (extent > 1) to outer or inner.
void add_dim(codegen::ScatterDims& dims, int64_t extent, int64_t out_stride, int64_t upd_stride,
             bool with_idx, int64_t idx_stride) {
  dims.shape.push_back(extent);
  dims.out_strides.push_back(out_stride);
  dims.upd_strides.push_back(upd_stride);
  if (with_idx) {
    dims.idx_strides.push_back(idx_stride);
  }
}

const char* scatter_op_name(Scatter::ReduceType t) {
  switch (t) {
    case Scatter::None:
      return "None";
    case Scatter::Sum:
      return "Sum";
    case Scatter::Prod:
      return "Prod";
    case Scatter::Max:
      return "Max";
    case Scatter::Min:
      return "Min";
  }
  return "None";
}

}  // namespace

void Take::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  const array& idx = inputs[1];
  if (const char* why = unsupported({&a, &idx}, out, &a)) {
    vulkan::cpu_fallback(*this, inputs, out, why);
    return;
  }
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  // out = a.shape[:axis] + idx.shape + a.shape[axis+1:].
  GatherSpec spec;
  for (int d = 0; d < static_cast<int>(a.ndim()); ++d) {
    if (d == axis_) {
      for (int j = 0; j < static_cast<int>(idx.ndim()); ++j) {
        spec.shape.push_back(idx.shape(j));
        spec.src_strides.push_back(0);
        spec.idx_strides.push_back(idx.strides(j));
      }
    } else {
      spec.shape.push_back(a.shape(d));
      spec.src_strides.push_back(a.strides(d));
      spec.idx_strides.push_back(0);
    }
  }
  spec.axes = {{0, a.strides(axis_), a.shape(axis_), int64_t{a.shape(axis_)} - 1}};
  run_gather(stream().index, a, operand_of(idx), std::move(spec), out);
}

void TakeAlongAxis::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  const array& idx = inputs[1];
  if (const char* why = unsupported({&a, &idx}, out, &a)) {
    vulkan::cpu_fallback(*this, inputs, out, why);
    return;
  }
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  GatherSpec spec;
  spec.shape = out.shape();
  spec.src_strides = a.strides();
  spec.src_strides[axis_] = 0;
  spec.idx_strides = idx.strides();
  spec.axes = {{0, a.strides(axis_), a.shape(axis_), int64_t{a.shape(axis_)} - 1}};
  run_gather(stream().index, a, operand_of(idx), std::move(spec), out);
}

void Gather::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  std::vector<const array*> all{&a};
  for (size_t k = 1; k < inputs.size(); ++k) {
    all.push_back(&inputs[k]);
  }
  if (const char* why = unsupported(all, out, &a)) {
    vulkan::cpu_fallback(*this, inputs, out, why);
    return;
  }
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  int stream = this->stream().index;
  size_t nidx = inputs.size() - 1;
  Shape idx_shape = nidx ? inputs[1].shape() : Shape{};
  GatherSpec spec;
  spec.shape = idx_shape;
  spec.shape.insert(spec.shape.end(), slice_sizes_.begin(), slice_sizes_.end());
  spec.src_strides.assign(idx_shape.size(), 0);
  spec.src_strides.insert(spec.src_strides.end(), a.strides().begin(), a.strides().end());
  Operand index;
  if (nidx == 0) {
    index = dummy_index(vulkan::encoder(stream));
    spec.idx_strides.assign(spec.shape.size(), 0);
  } else if (nidx == 1) {
    index = operand_of(inputs[1]);
    spec.idx_strides = inputs[1].strides();
  } else {
    index = concat_indices(stream, {inputs.begin() + 1, inputs.end()});
    spec.idx_strides = row_major_strides(idx_shape);
  }
  spec.idx_strides.resize(spec.shape.size(), 0);
  int64_t n = nidx ? static_cast<int64_t>(inputs[1].size()) : 0;
  for (size_t k = 0; k < nidx; ++k) {
    int ax = axes_[k];
    int64_t offset = nidx > 1 ? static_cast<int64_t>(k) * n : 0;
    spec.axes.push_back(
        {offset, a.strides(ax), a.shape(ax), int64_t{a.shape(ax)} - slice_sizes_[ax]});
  }
  run_gather(stream, a, index, std::move(spec), out);
}

void DynamicSlice::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  const array& start = inputs[1];
  if (const char* why = unsupported({&a, &start}, out, &a)) {
    vulkan::cpu_fallback(*this, inputs, out, why);
    return;
  }
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  GatherSpec spec;
  spec.shape = slice_size_;
  spec.src_strides = a.strides();
  spec.idx_strides.assign(spec.shape.size(), 0);
  spec.clamp = true;
  int64_t step = start.ndim() == 1 ? start.strides(0) : 0;
  for (size_t k = 0; k < axes_.size(); ++k) {
    int ax = axes_[k];
    spec.axes.push_back({static_cast<int64_t>(k) * step, a.strides(ax), a.shape(ax),
                         int64_t{a.shape(ax)} - slice_size_[ax]});
  }
  run_gather(stream().index, a, operand_of(start), std::move(spec), out);
}

void Scatter::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  const array& updates = inputs.back();
  std::vector<const array*> all{&a, &updates};
  for (size_t k = 1; k + 1 < inputs.size(); ++k) {
    all.push_back(&inputs[k]);
  }
  if (const char* why = unsupported(all, out, nullptr)) {
    vulkan::cpu_fallback(*this, inputs, out, why);
    return;
  }
  int stream = this->stream().index;
  vulkan::copy_or_donate(stream, a, out);
  size_t nidx = inputs.size() - 2;
  int64_t n = nidx ? static_cast<int64_t>(inputs[1].size()) : 1;
  if (out.size() == 0 || updates.size() == 0 || n == 0) {
    return;
  }
  auto& enc = vulkan::encoder(stream);
  // Updates as a dense run: (index position, window) row-major.
  const char* dtype = vulkan::gpu_dtype_name(out.dtype());
  Operand upd = operand_of(vulkan::dense_run(enc, stream, updates, dtype),
                           static_cast<int64_t>(updates.size()), dtype);
  Operand index;
  if (nidx == 0) {
    index = dummy_index(enc);
  } else if (nidx == 1 && inputs[1].flags().row_contiguous) {
    index = operand_of(inputs[1]);
  } else {
    index = concat_indices(stream, {inputs.begin() + 1, inputs.end() - 1});
  }
  ScatterSpec spec;
  spec.op = scatter_op_name(reduce_type_);
  auto& g = spec.g;
  g.n = n;
  size_t idx_ndim = updates.ndim() - a.ndim();
  Shape window(updates.shape().begin() + static_cast<int64_t>(idx_ndim), updates.shape().end());
  auto out_strides = row_major_strides(out.shape());
  auto win_strides = row_major_strides(window);
  int64_t window_size = 1;
  for (auto d : window) {
    window_size *= d;
  }
  for (int d = 0; d < static_cast<int>(window.size()); ++d) {
    if (window[d] <= 1) {
      continue;
    }
    bool indexed = std::find(axes_.begin(), axes_.end(), d) != axes_.end();
    add_dim(indexed ? g.inner : g.outer, window[d], out_strides[d], win_strides[d], !indexed, 0);
  }
  g.idx_mul_i = 1;
  g.upd_mul_i = window_size;
  for (size_t k = 0; k < nidx; ++k) {
    int ax = axes_[k];
    g.axes.push_back({static_cast<int64_t>(k) * n, out_strides[ax], out.shape(ax),
                      int64_t{out.shape(ax)} - window[ax]});
  }
  run_scatter(stream, index, upd, std::move(spec), out);
}

void ScatterAxis::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  const array& idx = inputs[1];
  const array& values = inputs[2];
  if (const char* why = unsupported({&a, &idx, &values}, out, nullptr)) {
    vulkan::cpu_fallback(*this, inputs, out, why);
    return;
  }
  int stream = this->stream().index;
  vulkan::copy_or_donate(stream, a, out);
  if (out.size() == 0 || idx.size() == 0) {
    return;
  }
  ScatterSpec spec;
  spec.op = reduce_type_ == None ? "None" : "Sum";
  auto& g = spec.g;
  g.n = idx.shape(axis_);
  auto out_strides = row_major_strides(out.shape());
  for (int d = 0; d < static_cast<int>(idx.ndim()); ++d) {
    if (d != axis_ && idx.shape(d) > 1) {
      add_dim(g.outer, idx.shape(d), out_strides[d], values.strides(d), true, idx.strides(d));
    }
  }
  g.idx_mul_i = idx.strides(axis_);
  g.upd_mul_i = values.strides(axis_);
  g.axes = {{0, out_strides[axis_], out.shape(axis_), int64_t{out.shape(axis_)} - 1}};
  run_scatter(stream, operand_of(idx), operand_of(values), std::move(spec), out);
}

void DynamicSliceUpdate::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& src = inputs[0];
  const array& upd = inputs[1];
  const array& start = inputs[2];
  if (const char* why = unsupported({&src, &upd, &start}, out, nullptr)) {
    vulkan::cpu_fallback(*this, inputs, out, why);
    return;
  }
  int stream = this->stream().index;
  vulkan::copy_or_donate(stream, src, out);
  if (out.size() == 0 || upd.size() == 0) {
    return;
  }
  ScatterSpec spec;
  spec.clamp = true;
  auto& g = spec.g;
  g.n = 1;
  auto out_strides = row_major_strides(out.shape());
  for (int d = 0; d < static_cast<int>(upd.ndim()); ++d) {
    if (upd.shape(d) > 1) {
      add_dim(g.outer, upd.shape(d), out_strides[d], upd.strides(d), true, 0);
    }
  }
  int64_t step = start.ndim() == 1 ? start.strides(0) : 0;
  for (size_t k = 0; k < axes_.size(); ++k) {
    int ax = axes_[k];
    g.axes.push_back({static_cast<int64_t>(k) * step, out_strides[ax], out.shape(ax),
                      int64_t{out.shape(ax)} - upd.shape(ax)});
  }
  run_scatter(stream, operand_of(start), operand_of(upd), std::move(spec), out);
}

}  // namespace mlx::core
