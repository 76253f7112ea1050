#include "mlx/backend/vulkan/reduce_plan.h"

#include <algorithm>

#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/dense_copy.h"
#include "mlx/backend/vulkan/launch_memo.h"

namespace mlx::core::vulkan {

int64_t itemsize_of(const std::string& dtype) {
  if (dtype == "b" || dtype == "u8" || dtype == "i8") {
    return 1;
  }
  if (dtype == "u16" || dtype == "i16" || dtype == "f16" || dtype == "bf16") {
    return 2;
  }
  if (dtype == "u64" || dtype == "i64") {
    return 8;
  }
  return 4;
}

Buf buf_of(const array& a, const char* dtype) {
  return {allocation(a.buffer()), static_cast<int64_t>(a.offset()), dtype,
          static_cast<int64_t>(a.itemsize())};
}

Buf temporary(CommandEncoder& enc, int64_t elems, const std::string& dtype) {
  int64_t isz = itemsize_of(dtype);
  auto buffer = allocator::malloc(static_cast<size_t>(std::max<int64_t>(elems, 1) * isz));
  enc.add_temporary(buffer);
  return {allocation(buffer), 0, dtype, isz};
}

int64_t binding_elems(const Device& dev, int64_t itemsize) {
  int64_t max_range = dev.limits().maxStorageBufferRange;
  return (max_range - binding_alignment(dev, itemsize)) / itemsize;
}

bool copy_fits(const array& in) {
  int64_t lo = 0, hi = 0;
  for (size_t d = 0; d < in.ndim(); ++d) {
    int64_t span = (int64_t{in.shape(static_cast<int>(d))} - 1) * in.strides(static_cast<int>(d));
    (span < 0 ? lo : hi) += span;
  }
  auto& dev = device("copy");
  return hi - lo + 1 <= binding_elems(dev, static_cast<int64_t>(in.itemsize()));
}

Buf axes_last(CommandEncoder& enc, int stream, const array& in, const std::vector<int>& axes,
              const char* dtype) {
  std::vector<int> order;
  for (int d = 0; d < static_cast<int>(in.ndim()); ++d) {
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) {
      order.push_back(d);
    }
  }
  order.insert(order.end(), axes.begin(), axes.end());
  Shape shape;
  View src = view_of(in);
  src.strides.clear();
  for (int d : order) {
    shape.push_back(in.shape(d));
    src.strides.push_back(in.strides(d));
  }
  Buf tmp = temporary(enc, static_cast<int64_t>(in.size()), dtype);
  // The temporary as an allocator buffer (an Allocation is the Vulkan buffer handle).
  View dst{allocator::Buffer(tmp.alloc), 0, in.dtype(), row_major_strides(shape)};
  copy_dense(stream, src, shape, dst);
  return tmp;
}

Buf dense_run(CommandEncoder& enc, int stream, const array& a, const char* dtype) {
  return a.flags().row_contiguous ? buf_of(a, dtype) : axes_last(enc, stream, a, {}, dtype);
}

bool copies_fit(const std::vector<array>& inputs) {
  return std::all_of(inputs.begin(), inputs.end(),
                     [](const array& a) { return a.flags().row_contiguous || copy_fits(a); });
}

BoundOperand bind_run(const Device& dev, const Buf& b, int64_t elems, bool output) {
  return bind_operand(dev, {b.alloc, b.offset, b.itemsize, 0, std::max<int64_t>(elems - 1, 0)},
                      output);
}

ReduceSignature reduce_signature(const char* family, const std::string& op,
                                 const std::string& in_dtype, const std::string& out_dtype,
                                 int64_t stage, const codegen::ReduceGeometry& g) {
  return {family_word(family),
          family_word(op.c_str()),
          family_word(in_dtype.c_str()),
          family_word(out_dtype.c_str()),
          stage,
          g.columns ? 1 : 0,
          g.count,
          g.len,
          g.inner,
          g.splits,
          static_cast<int64_t>(g.in_offset),
          static_cast<int64_t>(g.out_offset),
          static_cast<int64_t>(g.aux_offset)};
}

const char* float_kernel_unsupported(const array& out) {
  bool floating = out.dtype() == float32 || out.dtype() == float16 || out.dtype() == bfloat16;
  return floating && gpu_dtype_name(out.dtype()) ? nullptr : "a dtype the GPU kernels do not hold";
}

}  // namespace mlx::core::vulkan
