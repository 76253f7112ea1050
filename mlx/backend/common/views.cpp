#include "mlx/backend/common/views.h"

#include "mlx/backend/common/utils.h"

namespace mlx::core {

void broadcast_view(const array& in, array& out) {
  Strides strides(out.ndim(), 0);
  int diff = static_cast<int>(out.ndim() - in.ndim());
  for (int i = static_cast<int>(in.ndim()) - 1; i >= 0; --i) {
    strides[i + diff] = in.shape(i) == 1 ? 0 : in.strides(i);
  }
  // As MLX: the view reads exactly the input's data, so `contiguous` and data_size carry
  // over; row/col order holds only while no dim is actually repeated.
  auto flags = in.flags();
  if (out.size() > in.size()) {
    flags.row_contiguous = flags.col_contiguous = false;
  }
  out.copy_shared_buffer(in, strides, flags, in.data_size());
}

bool reshape_view(const array& in, array& out) {
  if (in.flags().row_contiguous) {
    auto strides = row_major_strides(out.shape());
    auto flags = in.flags();
    flags.col_contiguous = view_layout(out.shape(), strides).flags.col_contiguous;
    out.copy_shared_buffer(in, strides, flags, in.data_size());
    return true;
  }
  // Match groups of input dims to groups of output dims with the same element count; a
  // group is viewable when its input dims are contiguous with each other.
  Strides out_strides(out.ndim(), 0);
  const auto& ishape = in.shape();
  const auto& oshape = out.shape();
  size_t i = 0, o = 0;
  while (i < ishape.size() || o < oshape.size()) {
    // Skip size-1 dims: their strides are free.
    if (i < ishape.size() && ishape[i] == 1) {
      ++i;
      continue;
    }
    if (o < oshape.size() && oshape[o] == 1) {
      out_strides[o] = 1;
      ++o;
      continue;
    }
    if (i >= ishape.size() || o >= oshape.size()) {
      return false;
    }
    size_t i_end = i + 1, o_end = o + 1;
    int64_t isize = ishape[i], osize = oshape[o];
    while (isize != osize) {
      if (isize < osize) {
        if (i_end >= ishape.size())
          return false;
        isize *= ishape[i_end++];
      } else {
        if (o_end >= oshape.size())
          return false;
        osize *= oshape[o_end++];
      }
    }
    // Input dims i..i_end must be mutually contiguous (ignoring size-1 dims).
    int64_t inner_stride = 0;
    int64_t expect = -1;
    for (size_t k = i_end; k-- > i;) {
      if (ishape[k] == 1)
        continue;
      if (expect < 0) {
        inner_stride = in.strides(k);
      } else if (in.strides(k) != expect) {
        return false;
      }
      expect = in.strides(k) * ishape[k];
    }
    int64_t st = inner_stride;
    for (size_t k = o_end; k-- > o;) {
      out_strides[k] = st;
      st *= oshape[k];
    }
    i = i_end;
    o = o_end;
  }
  // The same elements as the input: `contiguous` carries over, the orders are recomputed.
  auto flags = view_layout(out.shape(), out_strides).flags;
  flags.contiguous = in.flags().contiguous;
  out.copy_shared_buffer(in, out_strides, flags, in.data_size());
  return true;
}

void transpose_view(const array& in, array& out, const std::vector<int>& axes) {
  Strides strides(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    strides[i] = in.strides(axes[i]);
  }
  // A permutation reads exactly the input's elements: `contiguous` and data_size carry
  // over, and the orders are recomputed (a transposed row-major matrix is col-contiguous).
  auto flags = view_layout(out.shape(), strides).flags;
  flags.contiguous = in.flags().contiguous;
  out.copy_shared_buffer(in, strides, flags, in.data_size());
}

void slice_view(const array& in, array& out, const Shape& start, const Shape& steps) {
  Strides strides(in.ndim());
  int64_t offset = 0;
  for (size_t i = 0; i < in.ndim(); ++i) {
    strides[i] = in.strides(static_cast<int>(i)) * steps[i];
    offset += in.strides(static_cast<int>(i)) * start[i];
  }
  // An empty slice may start one past the end; it reads nothing, so keep it in bounds.
  if (out.size() == 0) {
    offset = 0;
  }
  auto layout = view_layout(out.shape(), strides);
  out.copy_shared_buffer(in, strides, layout.flags, layout.data_size, offset);
}

array stacked_rows_view(const array& stacked, int col, int heads, int d) {
  // What a slice of the columns and a reshape splitting them into heads give, as one view
  // (a decode step makes three of these per layer): element (b, h, 0, j) is column
  // col + h * d + j of row b.
  int64_t s0 = stacked.strides(0), s2 = stacked.strides(2);
  array rows(Shape{stacked.shape(0), heads, 1, d}, stacked.dtype(), nullptr, {});
  as_strided_view(stacked, rows, Strides{s0, d * s2, heads * d * s2, s2}, col * s2);
  return rows;
}

void as_strided_view(const array& in, array& out, const Strides& strides, int64_t offset) {
  auto layout = view_layout(out.shape(), strides);
  out.copy_shared_buffer(in, strides, layout.flags, layout.data_size, out.size() == 0 ? 0 : offset);
}

}  // namespace mlx::core
