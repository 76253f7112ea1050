#include "mlx/backend/vulkan/cpu_fallback.h"

#include <cstdio>
#include <mutex>
#include <set>

#include "mlx/backend/vulkan/utils.h"
#include "mlx/primitives.h"

namespace mlx::core::vulkan {

namespace {

struct FallbackLog {
  std::mutex mtx;
  std::map<std::string, size_t> counts;
  std::set<std::string> logged;
};

FallbackLog& log_state() {
  static FallbackLog* l = new FallbackLog();
  return *l;
}

void note(const char* name, const std::string& reason) {
  auto& l = log_state();
  static const bool verbose = env_flag("MLX_VK_LOG_FALLBACK", false);
  std::lock_guard lk(l.mtx);
  l.counts[name]++;
  if (verbose && l.logged.insert(name).second) {
    std::fprintf(stderr, "[vulkan] %s runs on the CPU: %s.\n", name, reason.c_str());
  }
}

}  // namespace

void cpu_fallback(Primitive& p, const std::vector<array>& inputs, std::vector<array>& outputs,
                  const std::string& reason) {
  note(p.name(), reason);
  // GPU producers of the inputs must finish before the CPU reads them.
  for (auto in : inputs) {
    in.wait();
  }
  p.eval_cpu(inputs, outputs);
}

void cpu_fallback(Primitive& p, const std::vector<array>& inputs, array& out,
                  const std::string& reason) {
  std::vector<array> outs{out};
  cpu_fallback(p, inputs, outs, reason);
}

std::map<std::string, size_t> fallback_counts() {
  auto& l = log_state();
  std::lock_guard lk(l.mtx);
  return l.counts;
}

void reset_fallback_counts() {
  auto& l = log_state();
  std::lock_guard lk(l.mtx);
  l.counts.clear();
}

}  // namespace mlx::core::vulkan
