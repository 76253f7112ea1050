// The kernel profiler (profile.h): timestamps around every dispatch, accumulated per
// kernel key when the batch completes. Enabled with set_profiling, so the rest of the
// suite runs unprofiled. Kernels reused from test_eval: f32 Add and Multiply; plus one f32
// sum.
#include "vk_test.h"

#include <chrono>
#include <cstdlib>
#include <thread>

#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/host_profile.h"
#include "mlx/backend/vulkan/profile.h"

namespace mx = mlx::core;
namespace vk = mlx::core::vulkan;
using namespace vk_test;

namespace {

const mx::Device gpu = mx::Device::gpu;
const mx::Device cpu = mx::Device::cpu;

mx::array iota_f32(int n, float scale = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    v[static_cast<size_t>(i)] = static_cast<float>(i % 100) * scale;
  }
  return mx::array(v.begin(), {n}, mx::float32);
}

struct Totals {
  uint64_t calls = 0;
  uint64_t family_calls = 0;
};

// Calls over every timed kernel, and over those whose key contains `family`; checks each
// entry's times on the way.
Totals totals(const std::vector<vk::KernelTime>& times, const std::string& family) {
  Totals t;
  for (const auto& k : times) {
    INFO("kernel " << k.key << ": calls " << k.calls << ", total " << k.total_us << " us, min "
                   << k.min_us << ", max " << k.max_us);
    CHECK(k.calls > 0);
    CHECK(k.min_us > 0);
    CHECK(k.min_us <= k.max_us);
    CHECK(k.total_us >= k.min_us * static_cast<double>(k.calls) * 0.999);
    CHECK(k.total_us <= k.max_us * static_cast<double>(k.calls) * 1.001);
    t.calls += k.calls;
    if (k.key.find(family) != std::string::npos) {
      t.family_calls += k.calls;
    }
  }
  return t;
}

// Starts a profiled section: batches opened before it (unprofiled) are submitted first,
// so every dispatch from here on is timed.
void start_profiling() {
  vk::synchronize_all_streams();
  vk::set_profiling(true);
  vk::reset_kernel_times();
}

}  // namespace

TEST_CASE("profiling times every dispatch of binary and reduce kernels, per kernel key") {
  VK_REQUIRE_DEVICE();
  auto a = iota_f32(4096);
  auto b = iota_f32(4096, 2.0f);
  a.eval();
  b.eval();
  start_profiling();
  auto before = vk::encoder_stats();
  auto c = mx::add(mx::add(mx::add(a, b, gpu), b, gpu), a, gpu);
  auto s = mx::sum(c, gpu);
  s.eval();
  vk::synchronize_all_streams();
  auto after = vk::encoder_stats();
  auto times = vk::kernel_times();
  bool supported = vk::profiling_enabled();
  vk::set_profiling(false);
  CHECK(s.item<float>() == mx::sum(mx::add(mx::multiply(a, mx::array(2.0f), cpu),
                                           mx::multiply(b, mx::array(2.0f), cpu), cpu),
                                   cpu)
                               .item<float>());
  if (!supported) {
    MESSAGE("the device cannot write timestamps: nothing to check");
    CHECK(times.empty());
    return;
  }
  REQUIRE(!times.empty());
  auto binary = totals(times, "binary");
  auto reduce = totals(times, "reduce");
  CHECK(binary.family_calls == 3);
  CHECK(reduce.family_calls >= 1);
  CHECK(binary.calls == after.dispatches - before.dispatches);
  for (size_t i = 1; i < times.size(); ++i) {
    CHECK(times[i - 1].total_us >= times[i].total_us);
  }
  auto report = vk::profile_report();
  CHECK(report.find("| kernel | calls |") != std::string::npos);
  CHECK(report.find(times.front().key) != std::string::npos);
  // The batch span covers the dependent chain: at least its longest kernel, and (the four
  // kernels ran one after another behind barriers) at least most of their sum.
  double longest = 0, sum = 0;
  for (const auto& t : times) {
    longest = std::max(longest, t.max_us);
    sum += t.total_us;
  }
  CHECK(vk::gpu_busy_us() >= longest);
  CHECK(vk::gpu_busy_us() >= 0.5 * sum);

  vk::reset_kernel_times();
  CHECK(vk::kernel_times().empty());
  CHECK(vk::gpu_busy_us() == 0.0);
}

TEST_CASE("batch profiling times each submitted command buffer and no dispatch") {
  VK_REQUIRE_DEVICE();
  auto a = iota_f32(4096);
  a.eval();
  vk::synchronize_all_streams();
  vk::set_batch_profiling(true);
  vk::reset_kernel_times();
  auto before = vk::encoder_stats();
  // Two evaluations, each its own submission; the host sleeps between them, so the GPU
  // waits for the second one: a gap at least most of the sleep long.
  auto y = mx::add(mx::add(a, a, gpu), a, gpu);
  y.eval();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto z = mx::multiply(y, a, gpu);
  z.eval();
  vk::synchronize_all_streams();
  auto after = vk::encoder_stats();
  auto times = vk::kernel_times();
  auto gaps = vk::gpu_gaps();
  double busy = vk::gpu_busy_us();
  bool supported = vk::batch_profiling_enabled();
  vk::set_batch_profiling(false);
  CHECK(mx::array_equal(z, mx::multiply(mx::multiply(a, mx::array(3.0f), cpu), a, cpu), cpu)
            .item<bool>());
  if (!supported) {
    MESSAGE("the device cannot write timestamps: nothing to check");
    CHECK(times.empty());
    return;
  }
  REQUIRE(times.size() == 1);  // no per-kernel entries
  CHECK(times[0].key == "(batch)");
  CHECK(times[0].calls == after.submissions - before.submissions);
  CHECK(times[0].calls >= 2);
  CHECK(busy > 0.0);
  CHECK(gaps.count + 1 <= times[0].calls);
  CHECK(gaps.max_us >= 10000.0);
  CHECK(busy + gaps.total_us == doctest::Approx(gaps.span_us).epsilon(1e-6));
}

TEST_CASE("one batch of more dispatches than a timestamp pool holds times them all") {
  VK_REQUIRE_DEVICE();
  setenv("MLX_VK_MAX_OPS_PER_BUFFER", "1000", 1);
  auto stream = mx::new_stream(gpu);  // the limit is read when the stream is created
  unsetenv("MLX_VK_MAX_OPS_PER_BUFFER");
  auto a = iota_f32(256);
  a.eval();
  start_profiling();
  auto before = vk::encoder_stats();
  auto y = a;
  const int adds = 300;  // a pool holds 128 dispatches
  for (int i = 0; i < adds; ++i) {
    y = mx::add(y, a, stream);
  }
  y.eval();
  vk::synchronize_all_streams();
  auto after = vk::encoder_stats();
  auto times = vk::kernel_times();
  bool supported = vk::profiling_enabled();
  vk::set_profiling(false);
  auto want = mx::multiply(a, mx::array(static_cast<float>(adds + 1)), cpu);
  CHECK(mx::array_equal(y, want, cpu).item<bool>());
  if (!supported) {
    MESSAGE("the device cannot write timestamps: nothing to check");
    return;
  }
  CHECK(after.dispatches - before.dispatches == adds);
  auto t = totals(times, "binary");
  CHECK(t.family_calls == adds);
  CHECK(t.calls == adds);
}

TEST_CASE("the GPU's idle time between kernels is reported as gaps") {
  VK_REQUIRE_DEVICE();
  auto a = iota_f32(4096);
  a.eval();
  start_profiling();
  mx::add(a, a, gpu).eval();
  // The GPU idles while the host sleeps between two synchronous evals.
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  mx::multiply(a, a, gpu).eval();
  vk::synchronize_all_streams();
  auto gaps = vk::gpu_gaps();
  CHECK(gaps.count >= 1);
  CHECK(gaps.max_us >= 20000.0);
  CHECK(gaps.total_us <= gaps.span_us);
  CHECK(vk::gpu_busy_us() + gaps.total_us == doctest::Approx(gaps.span_us).epsilon(1e-6));
  CHECK(vk::profile_report().find("GPU idle between timed kernels") != std::string::npos);
  vk::set_profiling(false);
}

TEST_CASE("with profiling off no kernel is timed") {
  VK_REQUIRE_DEVICE();
  if (vk::profiling_enabled()) {
    return;  // MLX_VK_PROFILE=1 in the environment
  }
  vk::synchronize_all_streams();
  vk::reset_kernel_times();
  auto a = iota_f32(4096);
  mx::add(a, a, gpu).eval();
  vk::synchronize_all_streams();
  CHECK(vk::kernel_times().empty());
  CHECK(vk::profile_report().find("No kernel was timed") != std::string::npos);
}

TEST_CASE("host profiling counts each op the eval loop records, per primitive, only while on") {
  VK_REQUIRE_DEVICE();
  bool was = vk::host_profiling_enabled();
  auto a = iota_f32(4096);
  auto b = iota_f32(4096, 0.5f);
  mx::eval({a, b});
  vk::set_host_profiling(true);
  vk::reset_host_times();
  // Three adds and two multiplies, each its own op in the graph.
  auto y = mx::multiply(mx::add(mx::add(a, b, gpu), b, gpu), a, gpu);
  y = mx::multiply(mx::add(y, a, gpu), b, gpu);
  y.eval();
  vk::set_host_profiling(false);
  mx::add(y, y, gpu).eval();  // not counted
  vk::set_host_profiling(was);
  uint64_t adds = 0, multiplies = 0, dispatches = 0;
  for (const auto& t : vk::host_times()) {
    INFO(t.primitive << ": " << t.calls << " calls, " << t.total_us << " us");
    CHECK(t.total_us > 0);
    adds += t.primitive == "Add" ? t.calls : 0;
    multiplies += t.primitive == "Multiply" ? t.calls : 0;
    dispatches += t.primitive == "(encoder dispatch)" ? t.calls : 0;
  }
  CHECK(adds == 3);
  CHECK(multiplies == 2);
  CHECK(dispatches == 5);  // one kernel each; a part of their time, not in the total
  auto report = vk::host_profile_report();
  CHECK(report.find("| Add | 3 |") != std::string::npos);
  CHECK(report.find("| all | 5 |") != std::string::npos);
  vk::reset_host_times();
  CHECK(vk::host_times().empty());
}
