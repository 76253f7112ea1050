// eval_gpu of SliceUpdate and Concatenate: copy kernels into windows of the output.
//
// The copy kernel writes a row-contiguous range, so a window is written as pieces: the
// window's trailing dims that are row-contiguous in the output form one piece, and the
// leading dims enumerate the pieces. Up to MLX_VK_MAX_COPY_PIECES (64) pieces per input run
// on the GPU (one dispatch each). A concatenation that would need more goes through a
// temporary with the axis first; a SliceUpdate window that would need more (a narrow
// column, a negative innermost step) takes the explicit CPU route.
#include <algorithm>

#include "mlx/backend/common/utils.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/elementwise.h"
#include "mlx/backend/vulkan/utils.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

// A copy of `in` (shape = in.shape()) into the output's buffer at element `offset` with
// element strides `window`.
struct WindowCopy {
  array in;
  Strides window;
  int64_t offset;
  Shape outer;                  // leading dims enumerating pieces
  Shape inner;                  // trailing dims of one contiguous piece
  Strides outer_in, outer_out;  // strides of the leading dims
  Strides inner_in;             // input strides of the trailing dims
  size_t pieces = 1;
};

size_t max_pieces() {
  static const size_t n = std::max<size_t>(1, vulkan::env_size("MLX_VK_MAX_COPY_PIECES", 64));
  return n;
}

WindowCopy plan(const array& in, const Strides& window, int64_t offset) {
  WindowCopy w{in, window, offset, {}, {}, {}, {}, {}, 1};
  auto [shape, strides] = collapse_contiguous_dims(in.shape(), {window, in.strides()});
  const auto& out_st = strides[0];
  const auto& in_st = strides[1];
  // Longest suffix whose output strides are row-major contiguous.
  size_t j = shape.size();
  int64_t expect = 1;
  while (j > 0 && out_st[j - 1] == expect) {
    expect *= shape[j - 1];
    --j;
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d < j) {
      w.outer.push_back(shape[d]);
      w.outer_in.push_back(in_st[d]);
      w.outer_out.push_back(out_st[d]);
      w.pieces *= static_cast<size_t>(shape[d]);
    } else {
      w.inner.push_back(shape[d]);
      w.inner_in.push_back(in_st[d]);
    }
  }
  if (in.size() == 0) {
    w.pieces = 0;
  }
  return w;
}

void run(int stream, const WindowCopy& w, array& out) {
  Shape idx(w.outer.size(), 0);
  for (size_t p = 0; p < w.pieces; ++p) {
    int64_t in_off = 0, out_off = w.offset;
    for (size_t d = 0; d < idx.size(); ++d) {
      in_off += idx[d] * w.outer_in[d];
      out_off += idx[d] * w.outer_out[d];
    }
    vulkan::View src = vulkan::view_of(w.in);
    src.offset += in_off * static_cast<int64_t>(w.in.itemsize());
    src.strides = w.inner_in;
    vulkan::View dst = vulkan::view_of(out);
    dst.offset += out_off * static_cast<int64_t>(out.itemsize());
    dst.strides = row_major_strides(w.inner);
    vulkan::launch_elementwise(stream, "copy", "copy", "Copy", {src}, dst, w.inner);
    for (int d = static_cast<int>(idx.size()) - 1; d >= 0; --d) {
      if (++idx[d] < w.outer[d]) {
        break;
      }
      idx[d] = 0;
    }
  }
}

bool fits(const std::vector<WindowCopy>& plans) {
  return std::all_of(plans.begin(), plans.end(),
                     [](const WindowCopy& w) { return w.pieces <= max_pieces(); });
}

// Concatenation along an inner axis of many rows (pad or roll of a tall matrix's columns)
// needs a piece per row. Along the first axis each input's window is one contiguous range,
// so the inputs go into a temporary with the axis moved first (one copy each), and the
// temporary is copied into the output through a transposed view: twice the traffic, but
// inputs + 1 launches whatever the shape.
void concatenate_axis_first(int stream, const std::vector<array>& inputs, int axis, array& out) {
  std::vector<int> perm{axis};
  for (int d = 0; d < static_cast<int>(out.ndim()); ++d) {
    if (d != axis) {
      perm.push_back(d);
    }
  }
  auto permuted = [&](const array& a) {
    Shape shape;
    Strides strides;
    for (int d : perm) {
      shape.push_back(a.shape(d));
      strides.push_back(a.strides()[d]);
    }
    return std::pair<Shape, Strides>{shape, strides};
  };
  auto tmp = allocator::malloc(out.nbytes());
  vulkan::encoder(stream).add_temporary(tmp);
  int64_t offset = 0;  // elements: input k fills the rows after input k - 1's
  for (auto& in : inputs) {
    auto [shape, strides] = permuted(in);
    vulkan::View src = vulkan::view_of(in);
    src.strides = strides;
    vulkan::View dst{tmp, offset * static_cast<int64_t>(out.itemsize()), out.dtype(),
                     row_major_strides(shape)};
    vulkan::launch_elementwise(stream, "Concatenate", "copy", "Copy", {src}, dst, shape);
    offset += static_cast<int64_t>(in.size());
  }
  // The temporary read in the output's dim order: output dim perm[i] is its dim i.
  Shape tshape;
  for (int d : perm) {
    tshape.push_back(out.shape(d));
  }
  auto tstrides = row_major_strides(tshape);
  vulkan::View src{tmp, 0, out.dtype(), Strides(out.ndim())};
  for (size_t i = 0; i < perm.size(); ++i) {
    src.strides[perm[i]] = tstrides[i];
  }
  out.set_data(allocator::malloc(out.nbytes()));
  vulkan::View dst = vulkan::view_of(out);
  dst.strides = row_major_strides(out.shape());
  vulkan::launch_elementwise(stream, "Concatenate", "copy", "Copy", {src}, dst, out.shape());
}

}  // namespace

void SliceUpdate::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& src = inputs[0];
  auto& update = inputs[1];
  if (!vulkan::gpu_supports(inputs)) {
    vulkan::cpu_fallback(*this, inputs, out, "a dtype the GPU kernels do not hold");
    return;
  }
  // The window in a row-contiguous output.
  auto out_strides = row_major_strides(out.shape());
  Strides window(out.ndim());
  int64_t offset = 0;
  for (size_t i = 0; i < out.ndim(); ++i) {
    window[i] = out_strides[i] * strides()[i];
    offset += out_strides[i] * start()[i];
  }
  std::vector<WindowCopy> plans{plan(update, window, offset)};
  if (!fits(plans)) {
    vulkan::cpu_fallback(*this, inputs, out,
                         "the update window needs more than MLX_VK_MAX_COPY_PIECES copies");
    return;
  }
  if (vulkan::gpu_donatable(src, stream().index) && src.flags().row_contiguous &&
      src.data_size() == src.size()) {
    out.copy_shared_buffer(src);  // update in place
  } else {
    out.set_data(allocator::malloc(out.nbytes()));
    vulkan::copy_gpu(stream().index, src, out);
  }
  run(stream().index, plans[0], out);
}

void Concatenate::eval_gpu(const std::vector<array>& inputs, array& out) {
  if (!vulkan::gpu_supports(inputs)) {
    vulkan::cpu_fallback(*this, inputs, out, "a dtype the GPU kernels do not hold");
    return;
  }
  auto out_strides = row_major_strides(out.shape());
  std::vector<WindowCopy> plans;
  int64_t offset = 0;
  for (auto& in : inputs) {
    plans.push_back(plan(in, out_strides, offset));
    offset += in.shape(axis()) * out_strides[axis()];
  }
  if (!fits(plans)) {
    concatenate_axis_first(stream().index, inputs, axis(), out);
    return;
  }
  out.set_data(allocator::malloc(out.nbytes()));
  for (auto& p : plans) {
    run(stream().index, p, out);
  }
}

}  // namespace mlx::core
