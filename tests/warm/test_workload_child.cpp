// The workload that the warm-start tests run in child processes (see warm_helpers.h): four
// distinct kernels (f32 Add, f32 Multiply, f32 Exp, f32 -> i32 copy), checked against the
// CPU, then the kernel statistics written to $MLX_WARM_RESULT. Without that variable (an
// ordinary test run) the case does nothing. MLX_WARM_EXIT_EARLY=1 ends the process right
// after, skipping the teardown (which saves the pipeline cache), as a kill would.
#include <cstdio>
#include <cstdlib>

#include "mlx/backend/gpu/available.h"
#include "mlx/backend/vulkan/stats.h"
#include "test_utils.h"
#include "warm/warm_helpers.h"

namespace mx = mlx::core;
namespace vk = mlx::core::vulkan;

namespace {

mx::array iota_f32(int n, float scale, float shift) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) {
    v[i] = static_cast<float>(i % 17) * scale + shift;
  }
  return mx::array(v.begin(), {n}, mx::float32);
}

// True when every element agrees within rtol (relative); also a doctest check, so the
// child's exit code says it too.
bool same(mx::array got, mx::array want, double rtol, const char* label) {
  auto g = mlx_test::to_doubles(got), w = mlx_test::to_doubles(want);
  bool ok = g.size() == w.size();
  for (size_t i = 0; ok && i < g.size(); ++i) {
    ok = mlx_test::close(g[i], w[i], rtol, 0);
  }
  CHECK_MESSAGE(ok, label);
  return ok;
}

}  // namespace

TEST_CASE("warm workload child") {
  const char* result = std::getenv(warm_test::kResultVar);
  if (!result) {
    return;  // only meaningful in a child started by the warm-start tests
  }
  REQUIRE(mx::gpu::is_available());
  const mx::Device gpu = mx::Device::gpu, cpu = mx::Device::cpu;
  auto a = iota_f32(300, 0.25f, -2.0f), b = iota_f32(300, 0.5f, 1.0f);
  auto sum = mx::add(a, b, gpu);
  auto prod = mx::multiply(sum, a, gpu);
  auto ex = mx::exp(a, gpu);
  auto ints = mx::astype(prod, mx::int32, gpu);
  mx::eval({sum, prod, ex, ints});

  bool ok = true;
  // Sums and products of these quarter-integers are exact in f32; exp is f32 math
  // (rtol_for(float32): a few ulps); the int conversion of exact values is exact.
  ok &= same(sum, mx::add(a, b, cpu), 0, "add");
  ok &= same(prod, mx::multiply(mx::add(a, b, cpu), a, cpu), 0, "multiply");
  ok &= same(ex, mx::exp(a, cpu), mlx_test::rtol_for(mx::float32), "exp");
  ok &=
      same(ints, mx::astype(mx::multiply(mx::add(a, b, cpu), a, cpu), mx::int32, cpu), 0, "astype");

  auto s = vk::kernel_stats();
  FILE* f = std::fopen(result, "w");
  REQUIRE(f);
  std::fprintf(f,
               "values_ok %d\nmemory_hits %llu\ndisk_hits %llu\ncompiles %llu\nfailures %llu\n"
               "bad_entries %llu\nstores %llu\npipeline_cache_loads %llu\nkernel_files %llu\n"
               "bytes_on_disk %llu\n",
               ok ? 1 : 0, (unsigned long long)s.memory_hits, (unsigned long long)s.disk_hits,
               (unsigned long long)s.compiles, (unsigned long long)s.failures,
               (unsigned long long)s.bad_entries, (unsigned long long)s.stores,
               (unsigned long long)s.pipeline_cache_loads, (unsigned long long)s.kernel_files,
               (unsigned long long)s.bytes_on_disk);
  std::fclose(f);
  if (std::getenv("MLX_WARM_EXIT_EARLY")) {
    std::_Exit(0);  // like a killed process: no static destructors, no device teardown
  }
}
