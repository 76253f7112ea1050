// The doctest entry point of every test area. A GPU suite (built with MLX_TEST_GPU_SUITE)
// that finds no Vulkan device must not pass with zero assertions: under
// MLX_VK_REQUIRE_GPU=1 (set by ctest, so by CI) it fails at once, and otherwise every case
// is reported as skipped. The runs that expect no usable device say so with
// MLX_VK_EXPECT_NO_DEVICE / MLX_VK_EXPECT_BAD_DEVICE. A run that asks lavapipe for another
// subgroup size (LP_NATIVE_VECTOR_WIDTH) names it in MLX_TEST_EXPECT_SUBGROUP, so that it
// fails rather than passes at the default size when lavapipe ignores the request; on
// another driver (which takes no such request) its cases are skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#ifdef MLX_TEST_GPU_SUITE
#include "mlx/backend/gpu/available.h"
#include "mlx/backend/gpu/device_info.h"

namespace {

bool env_is_one(const char* name) {
  const char* v = std::getenv(name);
  return v && std::string(v) == "1";
}

}  // namespace
#endif

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
#ifdef MLX_TEST_GPU_SUITE
  bool expects_none =
      env_is_one("MLX_VK_EXPECT_NO_DEVICE") || env_is_one("MLX_VK_EXPECT_BAD_DEVICE");
  if (!expects_none && !mlx::core::gpu::is_available()) {
    if (env_is_one("MLX_VK_REQUIRE_GPU")) {
      std::fprintf(stderr,
                   "[tests] MLX_VK_REQUIRE_GPU=1 but no Vulkan device is available: this GPU "
                   "suite cannot run (install mesa-vulkan-drivers for lavapipe).\n");
      return 1;
    }
    std::fprintf(stderr, "[tests] no Vulkan device: every case of this GPU suite is skipped.\n");
    context.addFilter("test-case-exclude", "*");
  }
  if (const char* want = std::getenv("MLX_TEST_EXPECT_SUBGROUP");
      want && *want && mlx::core::gpu::is_available()) {
    auto& info = mlx::core::gpu::device_info(0);
    size_t got = std::get<size_t>(info.at("subgroup_size"));
    if (std::get<std::string>(info.at("driver_name")) != "llvmpipe") {
      std::fprintf(stderr, "[tests] MLX_TEST_EXPECT_SUBGROUP: not lavapipe, every case skipped.\n");
      context.addFilter("test-case-exclude", "*");
    } else if (std::to_string(got) != want) {
      std::fprintf(stderr,
                   "[tests] MLX_TEST_EXPECT_SUBGROUP=%s but the device's subgroup size is %zu.\n",
                   want, got);
      return 1;
    }
  }
#endif
  return context.run();
}
