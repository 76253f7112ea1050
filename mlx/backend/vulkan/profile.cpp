// The accumulated kernel times behind kernel_times(). Process-wide and never destroyed, so
// that the batches the device's teardown waits for at exit are still counted and printed.
#include "mlx/backend/vulkan/profile.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "mlx/backend/vulkan/device.h"
#include "mlx/backend/vulkan/utils.h"

namespace mlx::core::vulkan {

namespace {

struct Accumulated {
  uint64_t calls = 0;
  double total_ns = 0, min_ns = 0, max_ns = 0;
};

struct State {
  std::mutex mtx;
  std::map<std::string, Accumulated> times;
  // Every timed interval in ticks (capped), for the union that gpu_busy_us() measures.
  std::vector<std::pair<uint64_t, uint64_t>> intervals;
  // The device's timestamps, probed once: usable, nanoseconds per tick, valid bits.
  std::once_flag probed;
  std::atomic<bool> unsupported{false};
  double period_ns = 1;
  uint64_t mask = ~uint64_t(0);
};

State& state() {
  static State* s = new State();
  return *s;
}

// MLX_VK_PROFILE: 1 (or any true value) times kernels, "batch" times command buffers.
bool env_batch_mode() {
  const char* v = std::getenv("MLX_VK_PROFILE");
  return v != nullptr && std::string(v) == "batch";
}

std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> on{!env_batch_mode() && env_flag("MLX_VK_PROFILE", false)};
  return on;
}

std::atomic<bool>& batch_flag() {
  static std::atomic<bool> on{env_batch_mode()};
  return on;
}

void probe(State& s, Device& d) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(d.physical_device(), &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(d.physical_device(), &n, families.data());
  uint32_t bits = d.queue_family() < n ? families[d.queue_family()].timestampValidBits : 0;
  if (bits == 0 || !d.limits().timestampComputeAndGraphics) {
    std::fprintf(stderr,
                 "[vulkan] profiling: %s cannot time compute work (timestampValidBits %u, "
                 "timestampComputeAndGraphics %u); kernel times stay off.\n",
                 d.name().c_str(), bits, d.limits().timestampComputeAndGraphics);
    s.unsupported = true;
    return;
  }
  s.period_ns = d.limits().timestampPeriod;
  s.mask = bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
}

// Constructed at static initialization, so destroyed after the device (created on first
// use), whose teardown waits for the last batches and records their times.
struct ExitReport {
  bool print = env_batch_mode() || env_flag("MLX_VK_PROFILE", false);
  ~ExitReport() {
    if (print) {
      std::fputs(profile_report().c_str(), stderr);
    }
  }
} exit_report;

}  // namespace

bool profiling_enabled() {
  return enabled_flag().load(std::memory_order_relaxed) && !state().unsupported.load();
}

void set_profiling(bool on) {
  enabled_flag().store(on);
}

bool profiling_active(Device& d) {
  if (!enabled_flag().load(std::memory_order_relaxed)) {
    return false;
  }
  auto& s = state();
  std::call_once(s.probed, [&] { probe(s, d); });
  return !s.unsupported.load();
}

bool batch_profiling_enabled() {
  return batch_flag().load(std::memory_order_relaxed) && !state().unsupported.load();
}

void set_batch_profiling(bool on) {
  batch_flag().store(on);
}

bool batch_profiling_active(Device& d) {
  if (!batch_flag().load(std::memory_order_relaxed) ||
      enabled_flag().load(std::memory_order_relaxed)) {
    return false;
  }
  auto& s = state();
  std::call_once(s.probed, [&] { probe(s, d); });
  return !s.unsupported.load();
}

void add_kernel_ticks(const std::string& key, uint64_t start, uint64_t end) {
  auto& s = state();
  // Masked difference: counters with fewer than 64 valid bits may wrap between the two.
  double ns = static_cast<double>((end - start) & s.mask) * s.period_ns;
  std::lock_guard lk(s.mtx);
  // Counters narrower than 64 bits wrap; a wrapped pair is left out of the union.
  constexpr size_t kMaxIntervals = size_t{1} << 20;
  if (end >= start && s.intervals.size() < kMaxIntervals) {
    s.intervals.emplace_back(start, end);
  }
  auto& a = s.times[key];
  a.min_ns = a.calls ? std::min(a.min_ns, ns) : ns;
  a.max_ns = a.calls ? std::max(a.max_ns, ns) : ns;
  a.total_ns += ns;
  a.calls++;
}

std::vector<KernelTime> kernel_times() {
  auto& s = state();
  std::vector<KernelTime> out;
  {
    std::lock_guard lk(s.mtx);
    for (auto& [key, a] : s.times) {
      out.push_back({key, a.calls, a.total_ns / 1e3, a.min_ns / 1e3, a.max_ns / 1e3});
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& x, const auto& y) { return x.total_us > y.total_us; });
  return out;
}

void reset_kernel_times() {
  auto& s = state();
  std::lock_guard lk(s.mtx);
  s.times.clear();
  s.intervals.clear();
}

namespace {

// The union of the timed intervals as sorted, disjoint [start, end) runs, in ticks.
std::vector<std::pair<uint64_t, uint64_t>> busy_runs(State& s) {
  std::lock_guard lk(s.mtx);
  auto iv = s.intervals;
  std::sort(iv.begin(), iv.end());
  // Overlapping intervals (independent dispatches, or a start stamped while the kernel
  // waited at a barrier behind a timed one) merge into one run.
  std::vector<std::pair<uint64_t, uint64_t>> runs;
  for (auto [a, b] : iv) {
    if (!runs.empty() && a <= runs.back().second) {
      runs.back().second = std::max(runs.back().second, b);
    } else {
      runs.emplace_back(a, b);
    }
  }
  return runs;
}

}  // namespace

double gpu_busy_us() {
  auto& s = state();
  uint64_t total = 0;
  for (auto [a, b] : busy_runs(s)) {
    total += b - a;
  }
  return static_cast<double>(total) * s.period_ns / 1e3;
}

GpuGaps gpu_gaps() {
  auto& s = state();
  auto runs = busy_runs(s);
  GpuGaps g;
  if (runs.empty()) {
    return g;
  }
  g.span_us = static_cast<double>(runs.back().second - runs.front().first) * s.period_ns / 1e3;
  for (size_t i = 1; i < runs.size(); ++i) {
    double us = static_cast<double>(runs[i].first - runs[i - 1].second) * s.period_ns / 1e3;
    g.count++;
    g.total_us += us;
    g.max_us = std::max(g.max_us, us);
  }
  return g;
}

std::string profile_report() {
  auto times = kernel_times();
  std::string out = "\n### GPU time per kernel (MLX_VK_PROFILE)\n\n";
  if (times.empty()) {
    return out + "No kernel was timed.\n";
  }
  double all_us = 0;
  for (auto& t : times) {
    all_us += t.total_us;
  }
  out += "| kernel | calls | total us | share | mean us | min us | max us |\n";
  out += "|---|---|---|---|---|---|---|\n";
  char buf[160];
  for (auto& t : times) {
    std::snprintf(buf, sizeof(buf), " | %llu | %.1f | %.1f%% | %.2f | %.2f | %.2f |\n",
                  (unsigned long long)t.calls, t.total_us,
                  all_us > 0 ? 100.0 * t.total_us / all_us : 0.0,
                  t.total_us / static_cast<double>(t.calls), t.min_us, t.max_us);
    out += "| `" + t.key + "`" + buf;
  }
  auto gaps = gpu_gaps();
  std::snprintf(buf, sizeof(buf),
                "\nGPU idle between timed kernels: %llu gaps, %.1f us of a %.1f us span "
                "(%.1f%%), mean %.2f us, longest %.1f us.\n",
                (unsigned long long)gaps.count, gaps.total_us, gaps.span_us,
                gaps.span_us > 0 ? 100.0 * gaps.total_us / gaps.span_us : 0.0,
                gaps.count ? gaps.total_us / static_cast<double>(gaps.count) : 0.0, gaps.max_us);
  return out + buf;
}

}  // namespace mlx::core::vulkan
