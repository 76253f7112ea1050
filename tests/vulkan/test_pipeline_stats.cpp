// Compiler statistics (pipeline_stats.h): with capture on, a freshly built kernel reports
// what the driver made of it, where the device has VK_KHR_pipeline_executable_properties.
// The kernels are built through the library from keys no other test uses (binary
// Subtract and Maximum on u16), so each build here is the kernel's first in the process.
#include "vk_test.h"

#include "codegen/elementwise.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/pipeline_stats.h"

namespace mx = mlx::core;
namespace vk = mlx::core::vulkan;
using namespace vk_test;

namespace {

vk::codegen::KernelKey u16_binary_key(const std::string& op) {
  vk::codegen::ElementwiseGeometry g;
  g.shape = {37};
  g.in_strides = {{1}, {1}};
  g.in_offsets = {0, 0};
  return vk::codegen::elementwise_key("binary", op, {"u16", "u16"}, "u16", g);
}

// Builds the key's pipeline (it must be new to this process) and returns its statistics.
std::vector<vk::PipelineStat> build_and_read(const vk::codegen::KernelKey& key) {
  auto& lib = vk::kernel_library();
  size_t builds = lib.builds();
  const auto& k = lib.get(key);
  INFO("kernel " << key.canonical());
  REQUIRE(lib.builds() == builds + 1);
  REQUIRE(k.pipeline != VK_NULL_HANDLE);
  return vk::pipeline_stats(key.canonical());
}

}  // namespace

TEST_CASE("a kernel built with capture on reports the driver's compiler statistics") {
  VK_REQUIRE_DEVICE();
  bool was = vk::pipeline_stats_enabled();
  vk::set_pipeline_stats(true);
  auto key = u16_binary_key("Subtract");
  auto stats = build_and_read(key);
  vk::set_pipeline_stats(was);
  if (!vk::device().has_pipeline_executable_info()) {
    MESSAGE(vk::device().name() << " lacks VK_KHR_pipeline_executable_properties; "
                                   "no statistics to check.");
    CHECK(stats.empty());
    return;
  }
  INFO("kernel " << key.canonical() << ", " << stats.size() << " statistics");
  CHECK(!stats.empty());
  for (const auto& s : stats) {
    INFO("statistic '" << s.name << "' = '" << s.value << "'");
    CHECK(!s.name.empty());
    CHECK(!s.value.empty());
  }
}

TEST_CASE("a kernel built with capture off reports no statistics") {
  VK_REQUIRE_DEVICE();
  bool was = vk::pipeline_stats_enabled();
  vk::set_pipeline_stats(false);
  auto stats = build_and_read(u16_binary_key("Maximum"));
  vk::set_pipeline_stats(was);
  CHECK(stats.empty());
  CHECK(vk::pipeline_stats("binary:no=such,kernel=key").empty());
}
