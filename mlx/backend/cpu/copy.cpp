#include "mlx/backend/cpu/copy.h"

#include "mlx/backend/common/utils.h"
#include "mlx/dtype_utils.h"

namespace mlx::core::cpu {

namespace {

template <typename In, typename Out>
void copy_strided(const In* src, const Shape& shape, const Strides& src_strides, Out* dst,
                  const Strides& dst_strides, size_t n) {
  auto [cshape, cstrides] = collapse_contiguous_dims(shape, {src_strides, dst_strides});
  if (cshape.size() <= 1) {
    int64_t si = cshape.empty() ? 0 : cstrides[0][0];
    int64_t di = cshape.empty() ? 0 : cstrides[1][0];
    for (size_t k = 0; k < n; ++k) {
      dst[k * di] = cast_value<Out>(src[k * si]);
    }
    return;
  }
  StridedIterator s(cshape, cstrides[0]);
  StridedIterator d(cshape, cstrides[1]);
  for (size_t k = 0; k < n; ++k) {
    dst[d.loc()] = cast_value<Out>(src[s.loc()]);
    s.step();
    d.step();
  }
}

template <typename In>
void copy_dispatch_out(const array& in, array& out, const Strides& out_strides,
                       int64_t out_offset) {
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using Out = typename decltype(tag)::type;
    copy_strided(in.data<In>(), in.shape(), in.strides(), out.data<Out>() + out_offset,
                 out_strides, in.size());
  });
}

} // namespace

void copy_into(const array& in, array& out, const Strides& out_strides, int64_t out_offset) {
  if (in.size() == 0) {
    return;
  }
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using In = typename decltype(tag)::type;
    copy_dispatch_out<In>(in, out, out_strides, out_offset);
  });
}

void copy_to_new(const array& in, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  copy_into(in, out, out.strides(), 0);
}

} // namespace mlx::core::cpu
