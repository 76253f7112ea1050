// argmax/argmin on the GPU (the "arg_reduce" family) match the CPU reference exactly: every
// axis (rows when it is last, columns otherwise, a copy for other layouts), every GPU
// dtype, ties (the first index wins) and NaN (the first NaN wins).
#include <doctest/doctest.h>

#include <cmath>

#include "harness.h"

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
