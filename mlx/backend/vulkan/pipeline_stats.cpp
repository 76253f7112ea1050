// The statistics behind pipeline_stats(). Process-wide and never destroyed, like the other
// statistics, so that they outlive the kernel library.
#include "mlx/backend/vulkan/pipeline_stats.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <unordered_map>

#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/utils.h"

namespace mlx::core::vulkan {

namespace {

struct Registry {
  std::mutex mtx;
  std::unordered_map<std::string, std::vector<PipelineStat>> stats;
};

Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> on{env_flag("MLX_VK_PIPELINE_STATS", false)};
  return on;
}

std::string value_string(const VkPipelineExecutableStatisticKHR& s) {
  switch (s.format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
      return s.value.b32 ? "true" : "false";
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
      return std::to_string(s.value.i64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
      return std::to_string(s.value.u64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%g", s.value.f64);
      return buf;
    }
    default:
      return "?";
  }
}

// Every statistic of every executable of the pipeline; names get the executable's name in
// front when there is more than one (a compute pipeline usually has one).
VkResult read_stats(VkDevice d, VkPipeline pipeline, std::vector<PipelineStat>& out) {
  auto pipeline_info = make_info<VkPipelineInfoKHR>(VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR);
  pipeline_info.pipeline = pipeline;
  uint32_t n = 0;
  VkResult r = vkGetPipelineExecutablePropertiesKHR(d, &pipeline_info, &n, nullptr);
  if (r != VK_SUCCESS) {
    return r;
  }
  std::vector<VkPipelineExecutablePropertiesKHR> executables(
      n, make_info<VkPipelineExecutablePropertiesKHR>(
             VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR));
  r = vkGetPipelineExecutablePropertiesKHR(d, &pipeline_info, &n, executables.data());
  if (r != VK_SUCCESS) {
    return r;
  }
  for (uint32_t i = 0; i < n; ++i) {
    auto info =
        make_info<VkPipelineExecutableInfoKHR>(VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR);
    info.pipeline = pipeline;
    info.executableIndex = i;
    uint32_t m = 0;
    r = vkGetPipelineExecutableStatisticsKHR(d, &info, &m, nullptr);
    if (r != VK_SUCCESS) {
      return r;
    }
    std::vector<VkPipelineExecutableStatisticKHR> stats(
        m, make_info<VkPipelineExecutableStatisticKHR>(
               VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR));
    r = vkGetPipelineExecutableStatisticsKHR(d, &info, &m, stats.data());
    if (r != VK_SUCCESS) {
      return r;
    }
    std::string prefix = n > 1 ? std::string(executables[i].name) + "/" : "";
    for (uint32_t j = 0; j < m; ++j) {
      out.push_back({prefix + stats[j].name, value_string(stats[j])});
    }
  }
  return VK_SUCCESS;
}

}  // namespace

std::vector<PipelineStat> pipeline_stats(const std::string& kernel_key) {
  auto& reg = registry();
  std::lock_guard lk(reg.mtx);
  auto it = reg.stats.find(kernel_key);
  return it == reg.stats.end() ? std::vector<PipelineStat>{} : it->second;
}

bool pipeline_stats_enabled() {
  return enabled_flag().load(std::memory_order_relaxed);
}

void set_pipeline_stats(bool on) {
  enabled_flag().store(on, std::memory_order_relaxed);
}

bool pipeline_stats_active(const Device& d) {
  return pipeline_stats_enabled() && d.has_pipeline_executable_info();
}

void capture_pipeline_stats(const Device& d, const Kernel& k) {
  std::string key = k.key.canonical();
  std::vector<PipelineStat> stats;
  VkResult r = read_stats(d.handle(), k.pipeline, stats);
  std::string line = "[vulkan] pipeline stats " + key + ": ";
  if (r != VK_SUCCESS) {
    line += std::string("unavailable (") + result_name(r) + ")";
    stats.clear();
  } else if (stats.empty()) {
    line += "none reported";
  }
  for (size_t i = 0; i < stats.size(); ++i) {
    line += (i ? ", " : "") + stats[i].name + "=" + stats[i].value;
  }
  line += "\n";
  // One write per kernel, so lines of kernels built on different threads do not interleave.
  std::fputs(line.c_str(), stderr);
  auto& reg = registry();
  std::lock_guard lk(reg.mtx);
  reg.stats[key] = std::move(stats);
}

}  // namespace mlx::core::vulkan
