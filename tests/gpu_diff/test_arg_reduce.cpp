// argmax/argmin on the GPU (the "arg_reduce" family) match the CPU reference exactly: every
// axis (rows when it is last, columns otherwise, a copy for other layouts), every GPU
// dtype, ties (the first index wins) and NaN (the first NaN wins).
#include <doctest/doctest.h>

#include <cmath>

#include "harness.h"
#include "mlx/backend/vulkan/cpu_fallback.h"

namespace mx = mlx::core;
using namespace gpu_diff;

TEST_CASE("argmax and argmin match the CPU over axes and layouts") {
  if (!gpu_present())
    return;
  const std::vector<std::pair<mx::Shape, int>> cases = {
      {{7}, 0},        {{3, 5}, 1},          {{3, 5}, 0},     {{4, 3, 5}, 1},
      {{4, 3, 5}, -1}, {{4, 3, 5}, 0},       {{67, 1031}, 1}, {{67, 1031}, 0},
      {{1, 1031}, 1},  {{2, 3, 2, 3, 2}, 2}, {{8, 5000}, 1}};  // vector rows, four loads in flight
  Tolerance exact{0, 0};
  for (auto [shape, axis] : cases) {
    for (bool keep : {false, true}) {
      Op amax = [=](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
        return mx::argmax(in[0], axis, keep, s);
      };
      Op amin = [=](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
        return mx::argmin(in[0], axis, keep, s);
      };
      for (auto layout : {Layout::contiguous, Layout::transposed, Layout::strided}) {
        Case c{"argmax", {mx::float32}, shape, layout, 3};
        CHECK_MESSAGE(run_case(c, amax, {}, exact), c.describe());
        Case d{"argmin", {mx::float32}, shape, layout, 4};
        CHECK_MESSAGE(run_case(d, amin, {}, exact), d.describe());
      }
    }
  }
}

TEST_CASE("argmax of every GPU dtype matches the CPU, ties included") {
  if (!gpu_present())
    return;
  Tolerance exact{0, 0};
  for (auto dt : gpu_dtypes) {
    // A narrow domain makes ties common: the first index must win on both devices.
    Domain d = dt == mx::bool_ ? Domain{0, 1.4} : Domain{-2, 2};
    for (int axis : {0, 1}) {
      Op op = [=](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
        return mx::argmax(in[0], axis, false, s);
      };
      Case c{"argmax", {dt}, {67, 1031}, Layout::contiguous, 5};
      CHECK_MESSAGE(run_case(c, op, {d}, exact), c.describe());
      if (axis == 1) {
        Case v{"argmax (vector rows)", {dt}, {16, 4128}, Layout::contiguous, 6};
        CHECK_MESSAGE(run_case(v, op, {d}, exact), v.describe());
      }
    }
  }
}

TEST_CASE("argmax and argmin pick the first NaN, then the first extreme") {
  if (!gpu_present())
    return;
  float nan = std::nanf("");
  mx::array x({1.0f, 5.0f, 5.0f, nan, nan, -1.0f, -1.0f, 2.0f, 0.0f, INFINITY, -INFINITY, 9.0f},
              {3, 4});
  for (int axis : {0, 1}) {
    auto g = mlx_test::to_doubles(mx::argmax(x, axis, false, mx::Device::gpu));
    auto c = mlx_test::to_doubles(mx::argmax(x, axis, false, mx::Device::cpu));
    CHECK(g == c);
    g = mlx_test::to_doubles(mx::argmin(x, axis, false, mx::Device::gpu));
    c = mlx_test::to_doubles(mx::argmin(x, axis, false, mx::Device::cpu));
    CHECK(g == c);
  }
  // Flattened, as the op does without an axis.
  CHECK(mx::argmax(x, false, mx::Device::gpu).item<uint32_t>() == 3);
}

TEST_CASE("argmax over a vocabulary-sized row is split across workgroups and keeps the first") {
  if (!gpu_present())
    return;
  // One decode step's logits: 151936 values in one row, split into slices whose
  // (value, index) pairs a second launch finishes. Narrow int8/bf16 domains make ties
  // across slices common: the first index must still win.
  Tolerance exact{0, 0};
  for (auto dt : {mx::float32, mx::bfloat16, mx::int8}) {
    for (bool is_max : {true, false}) {
      Op op = [=](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
        return is_max ? mx::argmax(in[0], -1, false, s) : mx::argmin(in[0], -1, false, s);
      };
      Case c{is_max ? "argmax (split row)" : "argmin (split row)",
             {dt},
             {1, 151936},
             Layout::contiguous,
             8};
      CHECK_MESSAGE(run_case(c, op, {Domain{-3, 3}}, exact), c.describe());
    }
  }
  // A NaN late in the row beats every number; the first of two NaNs wins.
  std::vector<float> v(151936, 1.0f);
  v[100000] = std::nanf("");
  v[150000] = std::nanf("");
  v[5] = 2.0f;
  mx::array x(v.begin(), {1, 151936});
  CHECK(mx::argmax(x, -1, false, mx::Device::gpu).item<uint32_t>() == 100000u);
  CHECK(mx::argmin(x, -1, false, mx::Device::gpu).item<uint32_t>() == 100000u);
}

TEST_CASE("argmax and argmin of operands wider than one binding run on the GPU, first wins") {
  size_t range = small_binding_range();
  if (!range)
    return;
  mx::vulkan::reset_fallback_counts();
  auto gpu = mx::Device::gpu;
  auto cpu = mx::Device::cpu;
  // One f32 row longer than a binding: cut into segments whose pairs carry row-global
  // indices. The extreme 9 sits twice in the last segment (the first must win), the
  // minimum -9 once in the middle of the row; a NaN in the last segment beats both in a
  // second row, the first of two NaNs winning.
  int n = static_cast<int>(range / 4) + 4099;
  auto idx = mx::arange(n, cpu);
  auto at = [&](int i) { return mx::equal(idx, mx::array(i), cpu); };
  auto row = mx::reshape(small_ints(1, n, 43), {n}, cpu);
  row = mx::where(mx::logical_or(at(n - 10), at(n - 5), cpu), mx::array(9.0f), row, cpu);
  row = mx::where(at(n / 2 + 3), mx::array(-9.0f), row, cpu);
  auto nans = mx::where(mx::logical_or(at(n - 7), at(n - 3), cpu), mx::array(NAN), row, cpu);
  mx::eval({row, nans});
  auto got = gpu_eval_checked(
      [&] {
        return std::vector<mx::array>{
            mx::argmax(row, 0, false, gpu), mx::argmin(row, 0, false, gpu),
            mx::argmax(nans, 0, false, gpu), mx::argmin(nans, 0, false, gpu)};
      },
      "long-row arg reductions");
  CHECK(got[0].item<uint32_t>() == static_cast<uint32_t>(n - 10));
  CHECK(got[1].item<uint32_t>() == static_cast<uint32_t>(n / 2 + 3));
  CHECK(got[2].item<uint32_t>() == static_cast<uint32_t>(n - 7));
  CHECK(got[3].item<uint32_t>() == static_cast<uint32_t>(n - 7));
  // A transposed square just wider than a binding (copied axis-last in staged blocks) and
  // the dense matrix's columns (a column block wider than a binding): ties everywhere.
  int side = static_cast<int>(std::sqrt(range / 4.0)) + 64;
  auto x = small_ints(side, side, 44);
  auto ops = [&](mx::Device d) {
    auto t = mx::transpose(x, d);
    return std::vector<mx::array>{mx::argmax(t, 1, false, d), mx::argmin(t, 0, false, d),
                                  mx::argmax(x, 0, false, d)};
  };
  auto wide = gpu_eval_checked([&] { return ops(gpu); }, "wide arg reductions");
  auto want = ops(cpu);
  for (size_t i = 0; i < wide.size(); ++i) {
    CHECK(all_close(wide[i], want[i], {0, 0}, "wide arg reduction " + std::to_string(i)));
  }
  CHECK(mx::vulkan::fallback_counts().empty());
}
