// Copies of transposed views take the tiled transpose kernel (codegen/transpose.h) when
// the input is contiguous along the output's second-to-last dim; these cases make sure it
// does, over partial tiles, a batch dim, offsets, a negative column stride and dtype
// conversions. (The standard sweeps' transposed {67, 1031} input takes it as well.)
#include <doctest/doctest.h>

#include "harness.h"

namespace mx = mlx::core;
using namespace gpu_diff;

namespace {

// Shapes of the contiguous base: full and partial 32 x 32 tiles, with and without a batch.
const std::vector<mx::Shape> base_shapes = {{64, 96}, {2, 9, 33}, {3, 40, 37}};

// Swaps the last two axes.
mx::array swap_last(const mx::array& x, mx::StreamOrDevice s) {
  std::vector<int> axes(x.ndim());
  for (int i = 0; i < static_cast<int>(x.ndim()); ++i)
    axes[i] = i;
  std::swap(axes[x.ndim() - 1], axes[x.ndim() - 2]);
  return mx::transpose(x, axes, s);
}

}  // namespace

TEST_CASE("copies of transposed views match the CPU (tiled transpose layout)") {
  if (!gpu_present())
    return;
  Tolerance exact{0, 0};
  Op contiguous_t = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::contiguous(swap_last(in[0], s), false, s);
  };
  for (auto dt : {mx::float32, mx::bfloat16, mx::int64, mx::bool_, mx::uint8}) {
    sweep("transpose", contiguous_t, {{dt}}, {}, &exact, base_shapes, {Layout::contiguous});
  }
  // Conversions on the way through the tile.
  const std::vector<std::pair<mx::Dtype, mx::Dtype>> conversions = {
      {mx::float32, mx::float16}, {mx::int64, mx::bool_}, {mx::uint8, mx::float32}};
  for (auto [from, to] : conversions) {
    Op op = [to](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
      return mx::astype(swap_last(in[0], s), to, s);
    };
    sweep("transpose astype", op, {{from}}, {{-300, 300}}, &exact, base_shapes,
          {Layout::contiguous});
  }
  // An offset and a negative column stride: rows reversed and the first two columns cut.
  Op sliced = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    int rows = in[0].shape(0), cols = in[0].shape(1);
    auto v = mx::slice(in[0], {rows - 1, 2}, {-rows - 1, cols}, {-1, 1}, s);
    return mx::contiguous(mx::transpose(v, s), false, s);
  };
  sweep("transpose sliced", sliced, {{mx::float32}}, {}, &exact, {{64, 96}, {41, 70}},
        {Layout::contiguous});
}
