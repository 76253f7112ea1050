// The lm_head product on fresh quantize outputs, trial by trial, measured right after the
// GPU has idled (docs/performance.md, "The GPU's clocks, not the buffers"). Each trial makes
// new weights, lets the GPU idle PROBE_IDLE_S seconds (default 5), then times the product
// on the fresh outputs, on copies of all three, on each copied set mixed with the originals,
// and on the originals again, each after a 20 ms warm-up; then plain reads of the weights
// and of their copy. Buffers are printed so a slow trial can be matched to
// its placement. Run nvidia-smi beside it to see the SM clock (docs have the command).
//
// Usage: clock_ramp_probe [trials=4] [K=4096]   (PROBE_KEEP=1 keeps every trial's arrays)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "mlx/backend/gpu/available.h"
#include "mlx/backend/vulkan/allocator.h"

namespace mx = mlx::core;
namespace vk = mlx::core::vulkan;

namespace {

std::string where(const mx::array& a) {
  auto* al = vk::allocation(a.buffer());
  char s[160];
  std::snprintf(s, sizeof(s), "buffer %p offset %llu capacity %zu", (void*)al->buffer,
                (unsigned long long)al->offset, al->capacity);
  return s;
}

double wall_clock_ms() {  // realtime, to line up with nvidia-smi's timestamps
  using namespace std::chrono;
  return duration<double, std::milli>(system_clock::now().time_since_epoch()).count();
}

// GPU us per op: the median of 5 batches of 10 after a 20 ms warm-up (no steadiness wait:
// the point is what the first milliseconds after an idle GPU measure).
double us(std::function<mx::array()> f) {
  return bench::measure_op(f, 10, 5, 20.0, /*until_steady=*/false).gpu_ms * 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  if (!mx::gpu::is_available()) {
    std::fprintf(stderr, "clock_ramp_probe: no Vulkan device found\n");
    return 1;
  }
  const int trials = argc > 1 ? std::atoi(argv[1]) : 4;
  const int k = argc > 2 ? std::atoi(argv[2]) : 4096;
  const bool keep = std::getenv("PROBE_KEEP") != nullptr;
  const char* idle_env = std::getenv("PROBE_IDLE_S");
  const double idle_s = idle_env ? std::atof(idle_env) : 5.0;
  mx::set_default_device(mx::Device::gpu);
  vk::set_profiling(true);
  auto x = mx::random::normal({1, k}, mx::bfloat16, 0.0f, 1.0f, mx::random::key(1));
  mx::eval(x);
  std::vector<mx::array> kept;
  for (int t = 0; t < trials; ++t) {
    auto w = mx::random::normal({151936, k}, mx::bfloat16, 0.0f, 0.02f, mx::random::key(100 + t));
    auto q = mx::quantize(w, 64, 4);
    mx::eval(q);
    mx::synchronize();
    std::this_thread::sleep_for(std::chrono::duration<double>(idle_s));
    auto prod = [&](const mx::array& a, const mx::array& s, const mx::array& b) {
      return us([&] { return mx::quantized_matmul(x, a, s, b, true, 64, 4); });
    };
    const double at = wall_clock_ms();
    const double fresh = prod(q[0], q[1], q[2]);
    auto c0 = mx::copy(q[0]);
    auto c1 = mx::copy(q[1]);
    auto c2 = mx::copy(q[2]);
    mx::eval(c0, c1, c2);
    const double copies = prod(c0, c1, c2);
    const double w_copied = prod(c0, q[1], q[2]);
    const double sb_copied = prod(q[0], c1, c2);
    const double again = prod(q[0], q[1], q[2]);
    const double read_w = us([&] { return mx::max(q[0]); });
    const double read_cw = us([&] { return mx::max(c0); });
    std::printf(
        "trial %d (at %.0f ms) | fresh %.1f us | copies %.1f | weights copied %.1f | scales and "
        "biases copied %.1f | fresh again %.1f | read weights %.1f, their copy %.1f\n"
        "  weights %s; copy %s\n",
        t, at, fresh, copies, w_copied, sb_copied, again, read_w, read_cw, where(q[0]).c_str(),
        where(c0).c_str());
    std::fflush(stdout);
    if (keep) {
      kept.insert(kept.end(), q.begin(), q.end());
    }
  }
  return 0;
}
