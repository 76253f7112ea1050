// The vector path of the elementwise kernels (codegen key "vec"): operands read and written
// as whole vectors. The shapes make it apply: inner extents are multiples of every vector
// width (up to 16 lanes), so contiguous, reversed, scalar and row-broadcast inputs (inner
// stride 1) and lane-broadcast inputs (inner stride 0, e.g. the broadcast layout of
// {3, 4, 32}) all take it; {1027} leaves a partial last vector for every width. Transposed
// and strided inputs fall back to the scalar path in the same sweep.
#include <doctest/doctest.h>

#include "harness.h"

namespace mx = mlx::core;
using namespace gpu_diff;

namespace {

const std::vector<mx::Shape> vector_shapes = {{1027}, {5, 64}, {3, 4, 32}};

}  // namespace

TEST_CASE("the vector path matches the CPU for every lane width and layout") {
  if (!gpu_present())
    return;
  Op add = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::add(in[0], in[1], s);
  };
  sweep("vec add", add, {{mx::float32, mx::float32}}, {}, nullptr, vector_shapes);
  for (auto dt : gpu_dtypes) {
    sweep("vec add", add, {{dt, dt}}, {}, nullptr, {{5, 64}});
  }
  // 64-bit values with a bool condition: four lanes of 32 bytes each.
  Op where = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::where(in[0], in[1], in[2], s);
  };
  Tolerance exact{0, 0};
  sweep("vec where", where,
        {{mx::bool_, mx::int64, mx::int64}, {mx::bool_, mx::float16, mx::float16}}, {}, &exact,
        vector_shapes);
  // Conversions that change the lane width, including a narrowing 64 -> 8-bit one.
  const std::vector<std::pair<mx::Dtype, mx::Dtype>> conversions = {{mx::float32, mx::bfloat16},
                                                                    {mx::int64, mx::bool_},
                                                                    {mx::uint8, mx::float32},
                                                                    {mx::bfloat16, mx::int16}};
  for (auto [from, to] : conversions) {
    Op op = [to](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
      return mx::astype(in[0], to, s);
    };
    sweep("vec astype", op, {{from}}, {{-300, 300}}, &exact, vector_shapes);
  }
}

TEST_CASE("an in-place chain on the vector path updates every element") {
  if (!gpu_present())
    return;
  // 1027 elements: whole vectors plus a partial one, each step donating its input.
  mlx_test::Rng rng(7);
  auto x = mlx_test::random_array({1027}, mx::float32, rng, -4, 4);
  x.eval();
  auto y = mx::add(x, mx::array(1.0f), mx::Device::gpu);
  for (int i = 0; i < 4; ++i) {
    y = mx::multiply(y, mx::array(2.0f), mx::Device::gpu);
  }
  auto want =
      mx::multiply(mx::add(x, mx::array(1.0f), mx::Device::cpu), mx::array(16.0f), mx::Device::cpu);
  auto g = mlx_test::to_doubles(y);
  auto w = mlx_test::to_doubles(want);
  size_t bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    bad += g[i] != w[i];  // exact: adding 1 and doubling round identically on both devices
  }
  CHECK(bad == 0);
}
