// The doctest entry point of every test area. A GPU suite (built with MLX_TEST_GPU_SUITE)
// that finds no Vulkan device must not pass with zero assertions: under
// MLX_VK_REQUIRE_GPU=1 (set by ctest, so by CI) it fails at once, and otherwise every case
// is reported as skipped. The runs that expect no usable device say so with
// MLX_VK_EXPECT_NO_DEVICE / MLX_VK_EXPECT_BAD_DEVICE.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#ifdef MLX_TEST_GPU_SUITE
#include "mlx/backend/gpu/available.h"

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
#endif
  return context.run();
}
