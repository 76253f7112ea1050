#include "mlx/backend/vulkan/dense_copy.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "mlx/backend/common/utils.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/device.h"
#include "mlx/backend/vulkan/elementwise.h"
#include "mlx/backend/vulkan/reduce_plan.h"

namespace mlx::core::vulkan {

namespace {

int64_t product(const Shape& shape, size_t from) {
  int64_t n = 1;
  for (size_t d = from; d < shape.size(); ++d) {
    n *= shape[d];
  }
  return n;
}

View shifted(View v, int64_t elems) {
  v.offset += elems * static_cast<int64_t>(size_of(v.dtype));
  return v;
}

// Whether launch_elementwise can copy the (collapsed) view: it cuts along dim 0, so one
// dim-0 slice of the input and of the output must each fit one binding.
bool chunkable(const Device& dev, const Shape& shape, const Strides& in, int64_t in_size,
               int64_t out_size) {
  if (shape.empty()) {
    return true;
  }
  int64_t lo = 0, hi = 0;
  for (size_t d = 1; d < shape.size(); ++d) {
    int64_t span = (shape[d] - 1) * in[d];
    (span < 0 ? lo : hi) += span;
  }
  return fits_one_binding(dev, {nullptr, 0, in_size, lo, hi}) &&
         fits_one_binding(dev, {nullptr, 0, out_size, 0, product(shape, 1) - 1});
}

void launch_copy(int stream, const View& src, const Shape& shape, const View& dst) {
  launch_elementwise(stream, "copy", "copy", "Copy", {src}, dst, shape);
}

// A view already in memory order (strides by decreasing size): launch_elementwise takes it
// in one go when its strides nest, as any slice or transpose of a dense array does; other
// views (overlapping strides) are copied slab by slab along dim 0.
void copy_in_order(int stream, View src, const Shape& shape, const View& dst) {
  auto [s, st] = collapse_contiguous_dims(shape, {row_major_strides(shape), src.strides});
  src.strides = st[1];
  auto& dev = device("copy");
  if (chunkable(dev, s, src.strides, size_of(src.dtype), size_of(dst.dtype))) {
    launch_copy(stream, src, s, dst);
    return;
  }
  Shape rest(s.begin() + 1, s.end());
  View sub = src;
  sub.strides.erase(sub.strides.begin());
  int64_t slab = product(s, 1);
  for (int64_t i = 0; i < s[0]; ++i) {
    copy_in_order(stream, shifted(sub, i * src.strides[0]), rest, shifted(dst, i * slab));
  }
}

}  // namespace

void copy_dense(int stream, const View& src, const Shape& shape, const View& dst) {
  auto [s, st] = collapse_contiguous_dims(shape, {row_major_strides(shape), src.strides});
  View in = src;
  in.strides = st[1];
  auto& dev = device("copy");
  int64_t in_size = size_of(src.dtype);
  if (chunkable(dev, s, in.strides, in_size, size_of(dst.dtype))) {
    launch_copy(stream, in, s, dst);
    return;
  }
  int64_t slab = product(s, 1);
  int64_t max_elems =
      binding_elems(dev, std::max<int64_t>(in_size, static_cast<int64_t>(size_of(dst.dtype))));
  if (slab > max_elems) {
    // One output slab alone is wider than a binding: each is a copy of its own.
    Shape rest(s.begin() + 1, s.end());
    View sub = in;
    sub.strides.erase(sub.strides.begin());
    for (int64_t i = 0; i < s[0]; ++i) {
      copy_dense(stream, shifted(sub, i * in.strides[0]), rest, shifted(dst, i * slab));
    }
    return;
  }
  // Blocks of `per` slabs: gathered in memory order into `stage`, then put in place from
  // there (the stage spans one binding, so that copy fits). One stage serves every block:
  // the encoder orders each block's writes after the previous block's reads.
  size_t nd = s.size();
  std::vector<int> order(nd);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return std::abs(in.strides[a]) > std::abs(in.strides[b]); });
  int64_t per = max_elems / slab;
  auto stage =
      allocator::malloc(static_cast<size_t>(std::min<int64_t>(per, s[0]) * slab * in_size));
  encoder(stream).add_temporary(stage);
  for (int64_t r0 = 0; r0 < s[0]; r0 += per) {
    Shape block = s;
    block[0] = static_cast<int>(std::min<int64_t>(per, s[0] - r0));
    Shape mem_shape;
    View gather = shifted(in, r0 * in.strides[0]);
    gather.strides.clear();
    for (int d : order) {
      mem_shape.push_back(block[d]);
      gather.strides.push_back(in.strides[d]);
    }
    Strides mem_strides = row_major_strides(mem_shape);
    copy_in_order(stream, gather, mem_shape, View{stage, 0, src.dtype, mem_strides});
    View staged{stage, 0, src.dtype, Strides(nd)};
    for (size_t k = 0; k < nd; ++k) {
      staged.strides[order[k]] = mem_strides[k];
    }
    launch_copy(stream, staged, block, shifted(dst, r0 * slab));
  }
}

}  // namespace mlx::core::vulkan
