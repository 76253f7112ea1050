// where (select) and astype/copy on the GPU match the CPU reference.
#include <doctest/doctest.h>

#include "harness.h"

namespace mx = mlx::core;
using namespace gpu_diff;

TEST_CASE("where on the GPU matches the CPU for every dtype and layout") {
  if (!gpu_present()) return;
  Op op = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::where(in[0], in[1], in[2], s);
  };
  Tolerance exact{0, 0};
  sweep("where", op, {{mx::bool_, mx::float32, mx::float32}}, {}, &exact);
  for (auto dt : gpu_dtypes) {
    sweep("where", op, {{mx::bool_, dt, dt}}, {}, &exact, quick_shapes, quick_layouts);
  }
}

TEST_CASE("copy makes any layout contiguous on the GPU") {
  if (!gpu_present()) return;
  Op op = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) { return mx::copy(in[0], s); };
  Tolerance exact{0, 0};
  sweep("copy", op, {{mx::float32}}, {}, &exact);
  for (auto dt : gpu_dtypes) {
    sweep("copy", op, {{dt}}, {}, &exact, quick_shapes, quick_layouts);
  }
}

TEST_CASE("astype between every pair of GPU dtypes matches the CPU") {
  if (!gpu_present()) return;
  // Values well outside the integer ranges exercise saturation; halves exercise rounding.
  for (auto from : gpu_dtypes) {
    for (auto to : gpu_dtypes) {
      if (from == to) continue;
      Op op = [to](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
        return mx::astype(in[0], to, s);
      };
      Tolerance exact{0, 0};
      sweep("astype", op, {{from}}, {{-70000, 70000}}, &exact, {{67, 1031}}, {Layout::contiguous});
    }
  }
}

TEST_CASE("astype of NaN and infinities to integers saturates like the CPU") {
  if (!gpu_present()) return;
  mx::array special({NAN, INFINITY, -INFINITY, 1e10f, -1e10f, 2.5f, -2.5f, 255.5f});
  for (auto to : {mx::uint8, mx::int8, mx::int32, mx::uint32, mx::int64, mx::uint64, mx::bool_}) {
    auto got = mlx_test::to_doubles(mx::astype(special, to, mx::Device::gpu));
    auto want = mlx_test::to_doubles(mx::astype(special, to, mx::Device::cpu));
    CHECK_MESSAGE(got == want, "to " << to);
  }
}
