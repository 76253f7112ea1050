#include "mlx/backend/vulkan/elementwise.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>

#include "codegen/elementwise.h"
#include "mlx/backend/common/utils.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/dense_copy.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/launch_memo.h"
#include "mlx/primitives.h"

namespace mlx::core::vulkan {

namespace {

struct Chunkable {
  Allocation* alloc;
  int64_t base;      // byte offset of element 0 of the (chunk 0) view in the allocation
  int64_t itemsize;  // bytes
  std::vector<int64_t> strides;
};

// Per-thread working storage of launch_elementwise: cleared but never shrunk, so a warm
// launch allocates nothing for its geometry (allocation was most of a dispatch's host cost).
struct LaunchScratch {
  std::vector<Strides> all_strides;
  Shape shape;
  std::vector<Strides> strides;
  std::vector<const char*> dtypes;
  std::vector<Chunkable> arrays;
  codegen::ElementwiseGeometry g;
  std::vector<Binding> bindings;
  std::vector<int64_t> sig;
};

// Sets dst to a view of `a`, reusing dst's stride storage.
void assign_view(View& dst, const array& a) {
  dst.buffer = a.buffer();
  dst.offset = static_cast<int64_t>(a.offset());
  dst.dtype = a.dtype();
  dst.strides.assign(a.strides().begin(), a.strides().end());
}

}  // namespace

void launch_elementwise(const char* name, const std::string& family, const std::string& op,
                        const std::vector<array>& inputs, array& out) {
  // Separate from the scratch the launch below uses, which reads these views.
  thread_local std::vector<View> views;
  thread_local View out_view;
  views.resize(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].shape() != out.shape()) {
      throw std::runtime_error(std::string("[") + name +
                               "] GPU inputs must be broadcast to the output shape.");
    }
    assign_view(views[k], inputs[k]);
  }
  assign_view(out_view, out);
  launch_elementwise(out.primitive().stream().index, name, family, op, views, out_view,
                     out.shape());
}

void copy_gpu(int stream, const array& in, array& out) {
  View o = view_of(out);
  o.strides = row_major_strides(in.shape());
  launch_elementwise(stream, "Copy", "copy", "Copy", {view_of(in)}, o, in.shape());
}

void launch_elementwise(int stream, const char* name, const std::string& family,
                        const std::string& op, const std::vector<View>& inputs, const View& out,
                        const Shape& out_shape) {
  size_t total = 1;
  for (auto d : out_shape) {
    total *= static_cast<size_t>(d);
  }
  if (total == 0) {
    return;
  }
  auto& dev = device(name);
  auto& enc = encoder(stream);
  const int64_t max_range = dev.limits().maxStorageBufferRange;

  thread_local LaunchScratch scratch;
  auto& [all_strides, shape, strides, in_dtype_ptrs, arrays, g, bindings, sig] = scratch;

  // Collapse dims over the output (row-major) and every input's strides together.
  all_strides.resize(inputs.size() + 1);
  auto& row_major = all_strides[0];
  row_major.resize(out_shape.size());
  for (size_t d = out_shape.size(), s = 1; d-- > 0;) {
    row_major[d] = static_cast<int64_t>(s);
    s *= static_cast<size_t>(out_shape[d]);
  }
  in_dtype_ptrs.clear();
  for (size_t k = 0; k < inputs.size(); ++k) {
    auto* dt = gpu_dtype_name(inputs[k].dtype);
    in_dtype_ptrs.push_back(dt);
    if (!dt || inputs[k].strides.size() != out_shape.size()) {
      throw std::runtime_error(std::string("[") + name + "] internal: bad GPU operand.");
    }
    all_strides[k + 1].assign(inputs[k].strides.begin(), inputs[k].strides.end());
  }
  const char* out_dtype = gpu_dtype_name(out.dtype);
  if (!out_dtype) {
    throw std::runtime_error(std::string("[") + name + "] internal: bad GPU output dtype.");
  }
  collapse_contiguous_dims(out_shape, all_strides, shape, strides);
  const size_t nd = shape.size();

  // Operands in binding order: inputs, then the output.
  arrays.resize(inputs.size() + 1);
  for (size_t k = 0; k <= inputs.size(); ++k) {
    const View& v = k < inputs.size() ? inputs[k] : out;
    auto& c = arrays[k];
    c.alloc = allocation(v.buffer);
    c.base = v.offset;
    c.itemsize = static_cast<int64_t>(size_of(v.dtype));
    const auto& st = strides[k < inputs.size() ? k + 1 : 0];
    c.strides.assign(st.begin(), st.end());
  }

  // Elements of the lowest and highest reach from element 0 over dims 1.. (dim 0 varies).
  auto reach = [&](const Chunkable& c, int64_t rows) {
    int64_t lo = 0, hi = 0;
    for (size_t d = 0; d < nd; ++d) {
      int64_t n = d == 0 ? rows : shape[d];
      int64_t span = (n - 1) * c.strides[d];
      (span < 0 ? lo : hi) += span;
    }
    return std::pair<int64_t, int64_t>{lo, hi};
  };

  // Rows of dim 0 per chunk: as many as keep every binding within maxStorageBufferRange.
  int64_t rows_total = nd ? shape[0] : 1;
  int64_t rows = rows_total;
  for (auto& c : arrays) {
    auto [lo, hi] = reach(c, rows_total);
    int64_t align = binding_alignment(dev, c.itemsize);
    if (fits_one_binding(dev, {c.alloc, c.base, c.itemsize, lo, hi})) {
      continue;
    }
    auto [lo1, hi1] = reach(c, 1);
    int64_t one_row = (hi1 - lo1 + 1) * c.itemsize;
    int64_t step = nd ? std::abs(c.strides[0]) * c.itemsize : 0;
    int64_t fit = step ? (max_range - align - one_row) / step + 1 : rows_total;
    size_t k = static_cast<size_t>(&c - arrays.data());
    thread_local bool staging = false;  // a staged input that still does not fit: throw
    if ((nd == 0 || fit < 1) && k < inputs.size() && !staging) {
      // An input no cut along dim 0 brings under a binding (a transposed matrix larger
      // than one: every output row reads all of it) is first copied dense over the output's
      // shape (copy_dense stages it in memory order), then read from there. `inputs` may be
      // the array overload's scratch views and this function's scratch is reused below: the
      // staged list is a copy, and nothing here is used after the call.
      auto dense = allocator::malloc(total * static_cast<size_t>(c.itemsize));
      enc.add_temporary(dense);
      std::vector<View> staged = inputs;
      staged[k] = View{dense, 0, inputs[k].dtype, row_major_strides(out_shape)};
      copy_dense(stream, inputs[k], out_shape, staged[k]);
      staging = true;
      try {
        launch_elementwise(stream, name, family, op, staged, out, out_shape);
      } catch (...) {
        staging = false;
        throw;
      }
      staging = false;
      return;
    }
    if (nd == 0 || fit < 1) {
      throw std::runtime_error(
          std::string("[") + name + "] an array view spans " +
          std::to_string((hi - lo + 1) * c.itemsize) + " bytes, more than the device's " +
          "maxStorageBufferRange of " + std::to_string(max_range) +
          " bytes, and cannot be split into smaller launches along its first dimension.");
    }
    rows = std::min(rows, fit);
  }

  for (int64_t r0 = 0; r0 < rows_total; r0 += rows) {
    int64_t m = std::min(rows, rows_total - r0);
    g.binding_alignment = static_cast<uint32_t>(kBindAlignment);
    g.shape.assign(shape.begin(), shape.end());
    if (nd) {
      g.shape[0] = m;
    }
    g.in_strides.resize(inputs.size());
    g.in_offsets.resize(inputs.size());
    bindings.clear();
    for (size_t k = 0; k < arrays.size(); ++k) {
      auto& c = arrays[k];
      int64_t origin = c.base + (nd ? r0 * c.strides[0] : 0) * c.itemsize;  // bytes
      auto [lo, hi] = reach(c, m);
      bool is_out = k + 1 == arrays.size();
      auto bound = bind_operand(dev, {c.alloc, origin, c.itemsize, lo, hi}, is_out);
      bindings.push_back(bound.binding);
      uint64_t elem_offset = bound.elem_offset;
      if (is_out) {
        g.out_offset = elem_offset;
      } else {
        g.in_strides[k].assign(c.strides.begin(), c.strides.end());
        g.in_offsets[k] = elem_offset;
      }
    }
    // The key and launch depend only on (family, op, dtypes, g): memoize on exactly that.
    sig.clear();
    sig.push_back(static_cast<int64_t>(std::hash<std::string>{}(family)));
    sig.push_back(static_cast<int64_t>(std::hash<std::string>{}(op)));
    for (auto* dt : in_dtype_ptrs) {
      sig.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(dt)));
    }
    sig.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(out_dtype)));
    sig.push_back(static_cast<int64_t>(g.shape.size()));
    sig.insert(sig.end(), g.shape.begin(), g.shape.end());
    for (size_t k = 0; k < g.in_strides.size(); ++k) {
      sig.insert(sig.end(), g.in_strides[k].begin(), g.in_strides[k].end());
      sig.push_back(static_cast<int64_t>(g.in_offsets[k]));
    }
    sig.push_back(static_cast<int64_t>(g.out_offset));
    auto& memo = launch_memo();
    uint64_t sig_hash = LaunchMemo::hash_words(sig);
    const MemoEntry* entry = memo.find(sig, sig_hash);
    if (!entry) {
      std::vector<std::string> in_dtypes(in_dtype_ptrs.begin(), in_dtype_ptrs.end());
      auto key = codegen::plan_elementwise(family, op, in_dtypes, out_dtype, g);
      const Kernel& built = kernel_library().get(key);
      entry =
          &memo.insert(sig, sig_hash, {&built, codegen::elementwise_launch(key, built.source, g)});
    }
    record_launch(enc, *entry->kernel, entry->launch, bindings);
  }
}

}  // namespace mlx::core::vulkan
