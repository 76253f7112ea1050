// Device selection, capability probing and device_info.
#include "vk_test.h"

#include <sstream>

#include "mlx/backend/vulkan/device.h"

namespace mx = mlx::core;
using namespace vk_test;

TEST_CASE("device_info reports the probed device and its capabilities") {
  VK_REQUIRE_DEVICE();
  REQUIRE(mx::gpu::device_count() >= 1);
  auto& info = mx::gpu::device_info(0);
  for (const char* key : {"device_name",
                          "vendor",
                          "driver",
                          "memory_size",
                          "subgroup_size",
                          "device_type",
                          "api_version",
                          "shader_float16",
                          "shader_int8",
                          "shader_int16",
                          "shader_int64",
                          "storage_8bit",
                          "storage_16bit",
                          "push_descriptors",
                          "max_storage_buffer_range",
                          "max_compute_shared_memory_size",
                          "cooperative_matrix",
                          "fingerprint",
                          "memory_path",
                          "pipeline_cache_uuid",
                          "memory_types"}) {
    CHECK_MESSAGE(info.count(key) == 1, "missing key " << std::string(key));
  }
  CHECK_FALSE(info_string("device_name").empty());
  CHECK(info_size("subgroup_size") >= 1);
  CHECK(info_size("max_storage_buffer_range") >= (size_t(1) << 27));  // spec minimum: 2^27
  CHECK(info_size("memory_size") > 0);
  CHECK(info_size("selected") == 1);
  auto path = info_string("memory_path");
  CHECK((path == "mapped device-local" || path == "mapped host" || path == "staged"));
  // The fingerprint carries the pipeline-cache UUID, so kernel caches never cross drivers.
  CHECK(info_string("fingerprint").find(info_string("pipeline_cache_uuid")) != std::string::npos);

  // codegen sees exactly what device_info reports.
  auto& caps = mx::vulkan::device().caps();
  CHECK(caps.subgroup_size == info_size("subgroup_size"));
  CHECK(caps.shader_int64 == (info_size("shader_int64") == 1));
  CHECK(caps.storage_16bit == (info_size("storage_16bit") == 1));
  CHECK(caps.fingerprint == info_string("fingerprint"));
  std::ostringstream all;
  for (auto& [k, v] : info) {
    all << "\n  " << k << " = ";
    std::visit([&](auto& x) { all << x; }, v);
  }
  MESSAGE("device_info(0):" << all.str());
  MESSAGE("device: " << info_string("device_name") << " (" << info_string("device_type") << ", "
                     << info_string("driver") << "), memory path " << path << ", memory types "
                     << info_string("memory_types"));
}

TEST_CASE("lavapipe is a CPU device whose arrays are mapped unless staging is forced") {
  VK_REQUIRE_DEVICE();
  const char* staging = std::getenv("MLX_VK_STAGING");
  if (staging && std::string(staging) == "1") {
    CHECK(info_string("memory_path") == "staged");
  }
  if (info_string("device_type") != "cpu") {
    MESSAGE("not lavapipe: the lavapipe-specific checks are skipped");
    return;
  }
  CHECK(info_string("vendor") == "Mesa");
  CHECK(mx::vulkan::device().is_cpu());
  // Its only memory type is device-local, host-visible and coherent.
  if (!staging) {
    CHECK(info_string("memory_path") == "mapped device-local");
  }
}

TEST_CASE("device_info rejects an out-of-range index") {
  VK_REQUIRE_DEVICE();
  CHECK_THROWS_AS(mx::gpu::device_info(-1), std::invalid_argument);
  CHECK_THROWS_AS(mx::gpu::device_info(mx::gpu::device_count()), std::invalid_argument);
}

TEST_CASE("the default device is the GPU when a Vulkan device exists") {
  VK_REQUIRE_DEVICE();
  CHECK(mx::default_device() == mx::Device::gpu);
}

TEST_CASE("validation is on exactly when MLX_VK_VALIDATION=1 asks for it") {
  VK_REQUIRE_DEVICE();
  const char* v = std::getenv("MLX_VK_VALIDATION");
  bool asked = v && std::string(v) == "1";
  CHECK(mx::vulkan::device().validation_enabled() == asked);
}

TEST_CASE("without a Vulkan device the library runs on the CPU and the GPU errors clearly") {
  if (!expect_no_device()) {
    return;  // the vulkan_no_device ctest runs this with no driver installed
  }
  CHECK_FALSE(mx::gpu::is_available());
  CHECK(mx::gpu::device_count() == 0);
  CHECK(mx::default_device() == mx::Device::cpu);
  CHECK_FALSE(mx::vulkan::unavailable_reason().empty());
  // Host memory backs arrays and its statistics work.
  size_t before = mx::get_active_memory();
  mx::array a({1.0f, 2.0f, 3.0f});
  CHECK(mx::get_active_memory() >= before + 12);
  auto b = mx::add(a, mx::array(1.0f));
  CHECK(mlx_test::to_doubles(b) == std::vector<double>{2, 3, 4});
  CHECK_THROWS_AS(mx::add(a, a, mx::Device::gpu), std::runtime_error);
  CHECK_THROWS_AS(mx::gpu::device_info(0), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::set_default_device(mx::Device::gpu),
                       doctest::Contains("GPU is not available"), std::runtime_error);
}
