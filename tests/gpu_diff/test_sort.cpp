// sort, argsort, partition, argpartition and topk on the GPU (the "sort" family) match the
// CPU reference exactly: every dtype, any axis and layout, rows within one block (<= 1024)
// and rows that take the multi-launch bitonic chain (a vocabulary's 151936 and 2^19 + 7), ties
// (inputs drawn from few values: argsort must be stable), NaN (last) and -0.0 next to 0.0
// (equal: their order is kept). Exact comparison: sorting moves values, it computes none.
#include <doctest/doctest.h>

#include <cmath>

#include "harness.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/device.h"
#include "mlx/backend/vulkan/reduce_plan.h"

namespace mx = mlx::core;
using namespace gpu_diff;

namespace {

const Tolerance kExact{0, 0};

// The input with NaN where it is above 2.5 and -0.0 where it is below -3.5 (floats only).
mx::array with_specials(const mx::array& x, mx::StreamOrDevice s) {
  if (!mx::issubdtype(x.dtype(), mx::floating)) {
    return x;
  }
  auto nan = mx::astype(mx::array(std::nanf("")), x.dtype(), s);
  auto negzero = mx::astype(mx::array(-0.0f), x.dtype(), s);
  auto y = mx::where(mx::greater(x, mx::array(2.5f), s), nan, x, s);
  return mx::where(mx::less(x, mx::array(-3.5f), s), negzero, y, s);
}

}  // namespace

TEST_CASE("sort and argsort on the GPU match the CPU for every dtype, axis and layout") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  Op sort_last = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::sort(with_specials(in[0], s), -1, s);
  };
  Op argsort_first = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::argsort(with_specials(in[0], s), 0, s);
  };
  std::vector<std::vector<mx::Dtype>> every;
  for (auto dt : gpu_dtypes) {
    every.push_back({dt});
  }
  const std::vector<mx::Shape> shapes{{7}, {4, 3, 5}, {3, 300}};
  sweep("sort", sort_last, every, {}, &kExact, shapes, quick_layouts);
  sweep("argsort", argsort_first, {{mx::float32}, {mx::int32}, {mx::bfloat16}, {mx::int64}}, {},
        &kExact, shapes, {Layout::contiguous, Layout::transposed, Layout::strided});
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["Sort"] == 0);
  CHECK(counts["ArgSort"] == 0);
}

TEST_CASE("long rows sort through the multi-launch chain: stable, NaN last") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  Op sort_flat = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::sort(with_specials(in[0], s), s);
  };
  Op argsort_last = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::argsort(with_specials(in[0], s), -1, s);
  };
  Op argsort_mid = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::argsort(in[0], 1, s);
  };
  uint64_t seed = 50;
  for (auto dt : {mx::float32, mx::int32}) {
    // 1025 (just past one block), 5000 and a vocabulary row.
    for (const mx::Shape& shape : std::vector<mx::Shape>{{1025}, {3, 5000}, {1, 151936}}) {
      Case c{"argsort long rows", {dt}, shape, Layout::contiguous, ++seed};
      CHECK_MESSAGE(run_case(c, argsort_last, {}, kExact), c.describe());
    }
    Case c{"sort flattened", {dt}, {40, 70}, Layout::transposed, ++seed};
    CHECK_MESSAGE(run_case(c, sort_flat, {}, kExact), c.describe());
  }
  Case mid{"argsort along a middle axis", {mx::float16}, {3, 2000, 2}, Layout::contiguous, ++seed};
  CHECK_MESSAGE(run_case(mid, argsort_mid, {}, kExact), mid.describe());
  Case wide{"argsort int64 long rows", {mx::int64}, {2, 3000}, Layout::contiguous, ++seed};
  CHECK_MESSAGE(run_case(wide, argsort_last, {}, kExact), wide.describe());
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["Sort"] == 0);
  CHECK(counts["ArgSort"] == 0);
}

TEST_CASE("partition, argpartition and topk on the GPU match the CPU") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // Both devices sort the row fully (one valid partition), so the results are equal.
  Op part = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::partition(in[0], 2, -1, s);
  };
  Op argpart = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::argpartition(in[0], -3, 0, s);
  };
  Op top = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::topk(in[0], 50, -1, s);
  };
  uint64_t seed = 70;
  for (auto dt : {mx::float32, mx::bfloat16}) {
    Case a{"partition", {dt}, {4, 3, 5}, Layout::transposed, ++seed};
    CHECK_MESSAGE(run_case(a, part, {}, kExact), a.describe());
    Case b{"argpartition", {dt}, {9, 4}, Layout::contiguous, ++seed};
    CHECK_MESSAGE(run_case(b, argpart, {}, kExact), b.describe());
    Case c{"topk 50 of a vocabulary row", {dt}, {1, 151936}, Layout::contiguous, ++seed};
    CHECK_MESSAGE(run_case(c, top, {}, kExact), c.describe());
  }
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["Partition"] == 0);
  CHECK(counts["ArgPartition"] == 0);
}

TEST_CASE("a row of 2^19 + 7 sorts on the GPU as on the CPU: stable ties, NaN last") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // Longer than a vocabulary row (P = 2^20: ten merge sizes past the 1024-blocks). Values are
  // built on the host, the same on both devices: f32 quarters in [-64, 64) (each value ~2000
  // times: argsort must keep their order), with NaN and -0.0 next to 0.0; int32 in [-300, 300).
  const int n = (1 << 19) + 7;
  mlx_test::Rng rng(90);
  std::vector<float> f(n);
  std::vector<int32_t> i(n);
  for (int k = 0; k < n; ++k) {
    double u = rng.uniform(0, 1);
    f[k] = u < 0.01 ? std::nanf("") : u < 0.02 ? -0.0f : std::floor(rng.uniform(-256, 256)) / 4;
    i[k] = static_cast<int32_t>(std::floor(rng.uniform(-300, 300)));
  }
  for (const auto& x :
       {mx::array(f.begin(), {1, n}, mx::float32), mx::array(i.begin(), {1, n}, mx::int32)}) {
    std::string what = "row of " + std::to_string(n) + " " + mx::dtype_to_string(x.dtype());
    auto got = gpu_eval_checked(
        [&] {
          return std::vector<mx::array>{mx::sort(x, -1, mx::Device::gpu),
                                        mx::argsort(x, -1, mx::Device::gpu)};
        },
        what);
    CHECK(all_close(got[0], mx::sort(x, -1, mx::Device::cpu), kExact, "sort " + what));
    CHECK(all_close(got[1], mx::argsort(x, -1, mx::Device::cpu), kExact, "argsort " + what));
  }
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["Sort"] == 0);
  CHECK(counts["ArgSort"] == 0);
}

TEST_CASE("rows whose scratch passes one binding sort in groups of rows on the GPU") {
  if (!gpu_present())
    return;
  auto& dev = mlx::core::vulkan::device("test");
  int64_t max_elems = mlx::core::vulkan::binding_elems(dev, 8);
  // Rows of 2^16 + 1 (P = 2^17) until their scratch passes one binding by a row or two (on
  // lavapipe's 128 MiB: 129 rows, groups of 127 and 2), with ties (argsort must keep their
  // order). Skipped where a binding is far larger (a discrete GPU's 4 GiB would need a
  // 32 GiB input).
  const int n = (1 << 16) + 1;
  int64_t rows = max_elems / (int64_t{1} << 17) + 2;
  if (rows * n > (int64_t{1} << 25)) {
    MESSAGE("binding too large to pass cheaply: " << max_elems << " elements");
    return;
  }
  mx::vulkan::reset_fallback_counts();
  mlx_test::Rng rng(91);
  std::vector<int32_t> v(static_cast<size_t>(rows) * n);
  for (auto& e : v) {
    e = static_cast<int32_t>(std::floor(rng.uniform(-500, 500)));
  }
  mx::array x(v.begin(), {static_cast<int>(rows), n}, mx::int32);
  auto got = gpu_eval_checked(
      [&] { return std::vector<mx::array>{mx::argsort(x, -1, mx::Device::gpu)}; }, "grouped rows");
  CHECK(all_close(got[0], mx::argsort(x, -1, mx::Device::cpu), kExact, "argsort, groups"));
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["Sort"] == 0);
  CHECK(counts["ArgSort"] == 0);
}
