// Device selection, capability probing and device_info.
#include "vk_test.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "mlx/backend/vulkan/device.h"
#include "mlx/primitives.h"

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
                          "compute_units",
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
  CHECK(caps.compute_units == info_size("compute_units"));  // 0 where the driver does not say
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

TEST_CASE("a GPU index other than 0 names no device and is rejected where it is used") {
  VK_REQUIRE_DEVICE();
  auto previous = mx::default_device();
  mx::array a({1.0f, 2.0f});
  for (int index : {1, -1, 7}) {
    mx::Device d(mx::Device::gpu, index);
    CAPTURE(index);
    CHECK_FALSE(mx::is_available(d));
    CHECK_THROWS_WITH_AS(mx::set_default_device(d),
                         doctest::Contains(("[set_default_device] Device(gpu, " +
                                            std::to_string(index) + ") names no device")
                                               .c_str()),
                         std::invalid_argument);
    CHECK(mx::default_device() == previous);
    CHECK_THROWS_WITH_AS(mx::set_default_device(d),
                         doctest::Contains("the devices are Device(cpu, 0) and Device(gpu, 0)"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(mx::add(a, a, d), doctest::Contains("names no device"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(mx::new_stream(d), doctest::Contains("[new_stream]"),
                         std::invalid_argument);
    CHECK_THROWS_AS(mx::default_stream(d), std::invalid_argument);
  }
  // Index 0 is the GPU, and ops on it run there.
  CHECK(mx::is_available(mx::Device(mx::Device::gpu, 0)));
  auto b = mx::add(a, a, mx::Device(mx::Device::gpu, 0));
  CHECK(b.primitive().device() == mx::Device::gpu);
  CHECK(mlx_test::to_doubles(b) == std::vector<double>{2, 4});
}

namespace {

struct ChildRun {
  int code = -1;  // -2: killed after the time limit
  std::string out;
  std::string err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs this test binary again with only `test_case` selected and `env` added, so that
// the child starts with a fresh Vulkan registry; captures its output.
ChildRun run_self(const std::string& test_case,
                  const std::vector<std::pair<std::string, std::string>>& env) {
  char dir_template[] = "/tmp/mlxvk-device-test-XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  std::string dir = dir_template;
  std::string out = dir + "/out", err = dir + "/err";
  pid_t pid = ::fork();
  if (pid == 0) {
    int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    for (const auto& [k, v] : env) {
      ::setenv(k.c_str(), v.c_str(), 1);
    }
    std::string filter = "--test-case=" + test_case;
    char* argv[] = {const_cast<char*>("/proc/self/exe"), filter.data(), nullptr};
    ::execv("/proc/self/exe", argv);
    ::_exit(127);
  }
  ChildRun r;
  int status = 0;
  for (int waited_ms = 0; ::waitpid(pid, &status, WNOHANG) == 0; waited_ms += 10) {
    if (waited_ms >= 300 * 1000) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.code = -2;
      break;
    }
    ::usleep(10000);
  }
  if (r.code != -2) {
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove_all(dir);
  return r;
}

size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t p = text.find(part); p != std::string::npos; p = text.find(part, p + 1)) {
    ++n;
  }
  return n;
}

// Set by the vulkan_bad_device ctest, and by the test below for its children.
const char* expected_bad_device() {
  const char* v = std::getenv("MLX_VK_EXPECT_BAD_DEVICE");
  return v && *v ? std::getenv("MLX_VK_DEVICE") : nullptr;
}

}  // namespace

TEST_CASE("MLX_VK_DEVICE naming no usable device: the GPU errors with that reason") {
  const char* value = expected_bad_device();
  if (!value) {
    return;  // runs under MLX_VK_EXPECT_BAD_DEVICE=1 (ctest vulkan_bad_device, or below)
  }
  std::string reason = "MLX_VK_DEVICE=" + std::string(value) + " names no usable Vulkan device";
  CHECK_FALSE(mx::gpu::is_available());
  CHECK(mx::default_device() == mx::Device::cpu);
  CHECK(mx::vulkan::unavailable_reason().find(reason) != std::string::npos);
  // The reason lists the usable indices, and does not send the user to install a driver.
  CHECK(mx::vulkan::unavailable_reason().find("(usable: ") != std::string::npos);
  for (int attempt = 0; attempt < 2; ++attempt) {
    CHECK_THROWS_WITH_AS(mx::set_default_device(mx::Device::gpu), doctest::Contains(reason.c_str()),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(mx::add(mx::array(1), mx::array(2), mx::Device::gpu),
                         doctest::Contains(reason.c_str()), std::runtime_error);
    CHECK_THROWS_WITH_AS(mx::new_stream(mx::Device::gpu), doctest::Contains(reason.c_str()),
                         std::runtime_error);
  }
  try {
    mx::set_default_device(mx::Device::gpu);
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("install") == std::string::npos);
  }
  CHECK_THROWS_WITH_AS(mx::vulkan::device("probe"), doctest::Contains(reason.c_str()),
                       std::runtime_error);
  // The CPU still computes.
  CHECK(mx::add(mx::array(1), mx::array(2)).item<int>() == 3);
}

TEST_CASE("MLX_VK_DEVICE=1, -1, abc or 999 on this machine warns once at start-up and names it") {
  VK_REQUIRE_DEVICE();
  if (expected_bad_device()) {
    return;  // this is a child (or the vulkan_bad_device ctest): the case above runs
  }
  size_t index = std::get<size_t>(mx::gpu::device_info(0).at("vulkan_index"));
  std::vector<std::string> values = {"-1", "abc", "999", "1x"};
  if (mx::gpu::device_count() == 1 && index == 0) {
    values.push_back("1");  // one past the only device, as on a one-GPU machine
  }
  for (const auto& value : values) {
    CAPTURE(value);
    ChildRun r = run_self("MLX_VK_DEVICE naming no usable device*",
                          {{"MLX_VK_DEVICE", value}, {"MLX_VK_EXPECT_BAD_DEVICE", "1"}});
    CHECK_MESSAGE(r.code == 0, "child stdout:\n" << r.out << "\nchild stderr:\n" << r.err);
    CHECK(count_of(r.out, " 1 passed | 0 failed") == 1);  // the case ran, and passed
    // Exactly one warning, however many times the GPU was asked for.
    CHECK(count_of(r.err, "MLX_VK_DEVICE=" + value + " names no usable Vulkan device") == 1);
    CHECK(count_of(r.err, "[vulkan] warning:") == 1);
  }
  // A valid index: no warning, the GPU is there.
  ChildRun ok = run_self("the default device is the GPU when a Vulkan device exists",
                         {{"MLX_VK_DEVICE", std::to_string(index)}});
  CHECK_MESSAGE(ok.code == 0, "child stdout:\n" << ok.out << "\nchild stderr:\n" << ok.err);
  CHECK(count_of(ok.err, "[vulkan] warning:") == 0);
}

// MLX_VK_MAX_SHARED_MEMORY / MLX_VK_MAX_WORKGROUP_INVOCATIONS (docs/vulkan.md, "Device
// limits"): the child case below runs with both lowered; a kernel the planners size past
// a limit is refused with the kernel and both numbers named, not handed to the driver.
bool lowered_limits_child() {
  const char* v = std::getenv("MLX_TEST_LOWERED_LIMITS");
  return v && std::string(v) == "1";
}

TEST_CASE("lowered device limits: kernels planned within them, one past them a clear error") {
  VK_REQUIRE_DEVICE();
  if (!lowered_limits_child()) {
    return;  // runs as the child of the case below
  }
  const auto& caps = mx::vulkan::device("test").caps();
  CHECK(caps.max_shared_memory == 64);
  CHECK(caps.max_workgroup_invocations == 128);
  // An elementwise kernel needs no shared memory: it runs, in workgroups of <= 128.
  auto a = mx::arange(1000, mx::float32);
  auto twice = mx::add(a, a, mx::Device::gpu);
  CHECK(mx::array_equal(twice, mx::multiply(a, mx::array(2.0f), mx::Device::cpu), false,
                        mx::Device::cpu)
            .item<bool>());
  // A row reduction's kernel holds its subgroups' partial sums in shared memory.
  auto x = mx::ones({64, 5000});
  CHECK_THROWS_WITH_AS(mx::eval(mx::sum(x, 1, false, mx::Device::gpu)),
                       doctest::Contains("bytes of shared memory; the device allows 64."),
                       std::runtime_error);
}

TEST_CASE("MLX_VK_MAX_SHARED_MEMORY and MLX_VK_MAX_WORKGROUP_INVOCATIONS lower the device limits") {
  VK_REQUIRE_DEVICE();
  if (lowered_limits_child() || expected_bad_device()) {
    return;
  }
  ChildRun r = run_self("lowered device limits*", {{"MLX_VK_MAX_SHARED_MEMORY", "64"},
                                                   {"MLX_VK_MAX_WORKGROUP_INVOCATIONS", "128"},
                                                   {"MLX_TEST_LOWERED_LIMITS", "1"}});
  CHECK_MESSAGE(r.code == 0, "child stdout:\n" << r.out << "\nchild stderr:\n" << r.err);
  CHECK(count_of(r.out, " 1 passed | 0 failed") == 1);
}
