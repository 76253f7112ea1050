// The accumulated host times behind host_times(). Process-wide and never destroyed, so the
// report at exit can still read them.
#include "mlx/backend/vulkan/host_profile.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>

#include "mlx/backend/vulkan/utils.h"

namespace mlx::core::vulkan {

namespace {

struct Accumulated {
  uint64_t calls = 0;
  uint64_t ns = 0;
};

// Keyed by the name's address (names are string literals: no string built per op); the
// report merges equal names.
struct State {
  std::mutex mtx;
  std::unordered_map<const char*, Accumulated> times;
};

State& state() {
  static State* s = new State();
  return *s;
}

std::atomic<bool>& enabled_flag() {
  static std::atomic<bool>* flag = [] {
    bool on = env_flag("MLX_VK_HOST_PROFILE", false);
    if (on) {
      std::atexit([] { std::fprintf(stderr, "%s\n", host_profile_report().c_str()); });
    }
    return new std::atomic<bool>(on);
  }();
  return *flag;
}

}  // namespace

bool host_profiling_enabled() {
  return enabled_flag().load(std::memory_order_relaxed);
}

void set_host_profiling(bool on) {
  enabled_flag().store(on);
}

void add_host_time(const char* primitive, uint64_t ns) {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mtx);
  auto& t = s.times[primitive];
  t.calls += 1;
  t.ns += ns;
}

std::vector<HostTime> host_times() {
  auto& s = state();
  std::map<std::string, HostTime> merged;
  {
    std::lock_guard<std::mutex> lock(s.mtx);
    for (const auto& [name, t] : s.times) {
      auto& m = merged[name];
      m.primitive = name;
      m.calls += t.calls;
      m.total_us += static_cast<double>(t.ns) / 1000.0;
    }
  }
  std::vector<HostTime> out;
  for (auto& [name, t] : merged) {
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(),
            [](const HostTime& a, const HostTime& b) { return a.total_us > b.total_us; });
  return out;
}

void reset_host_times() {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mtx);
  s.times.clear();
}

std::string host_profile_report() {
  std::string out =
      "| primitive (host, eval loop) | calls | total us | mean us |\n|---|---|---|---|\n";
  double total = 0;
  uint64_t calls = 0;
  char line[256];
  for (const auto& t : host_times()) {
    std::snprintf(line, sizeof(line), "| %s | %llu | %.1f | %.2f |\n", t.primitive.c_str(),
                  static_cast<unsigned long long>(t.calls), t.total_us,
                  t.total_us / static_cast<double>(t.calls));
    out += line;
    if (t.primitive.empty() || t.primitive.front() != '(') {  // parts are not added again
      total += t.total_us;
      calls += t.calls;
    }
  }
  std::snprintf(line, sizeof(line), "| all | %llu | %.1f | %.2f |\n",
                static_cast<unsigned long long>(calls), total,
                calls > 0 ? total / static_cast<double>(calls) : 0.0);
  return out + line;
}

}  // namespace mlx::core::vulkan
