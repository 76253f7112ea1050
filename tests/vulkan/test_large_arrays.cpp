// Element counts at the 32-bit index boundaries on the GPU (issue 10): 2^31 - 1, 2^31 and
// 2^32 uint8 elements (2-4 GiB each). They need a real GPU with that much memory, so they
// run only when MLX_TEST_LARGE=1 (on the device machine: see docs/vulkan.md); lavapipe in CI
// caps allocations below 2 GiB. The CI-sized checks of the same index paths are in
// tests/core/test_sizes_accuracy.cpp.
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "vk_test.h"

namespace mx = mlx::core;

namespace {

bool large_tests_enabled() {
  const char* v = std::getenv("MLX_TEST_LARGE");
  return v && std::string(v) == "1";
}

// a + 1 on the GPU, checked at both ends and everywhere through min/max on the CPU.
void check_add_one(const mx::Shape& shape) {
  CAPTURE(mx::shape_to_string(shape));
  mx::Device gpu = mx::Device::gpu, cpu = mx::Device::cpu;
  auto a = mx::full(shape, mx::array(uint8_t{1}), gpu);
  auto b = mx::add(a, mx::array(uint8_t{1}), gpu);
  b.eval();
  CHECK(mx::min(b, false, cpu).item<uint8_t>() == 2);
  CHECK(mx::max(b, false, cpu).item<uint8_t>() == 2);
  const uint8_t* p = b.data<uint8_t>();
  CHECK(p[0] == 2);
  CHECK(p[b.size() - 1] == 2);
  // A strided read across the boundary too: every other element of the last dim.
  auto odd = mx::slice(
      b, mx::Shape(shape.size(), 0), shape,
      [&] {
        mx::Shape st(shape.size(), 1);
        st.back() = 2;
        return st;
      }(),
      gpu);
  auto c = mx::multiply(odd, mx::array(uint8_t{3}), gpu);
  CHECK(mx::min(c, false, cpu).item<uint8_t>() == 6);
  CHECK(mx::max(c, false, cpu).item<uint8_t>() == 6);
}

}  // namespace

TEST_CASE("[gpu-large] elementwise ops are right at 2^31 - 1, 2^31 and 2^32 elements") {
  VK_REQUIRE_DEVICE();
  if (!large_tests_enabled()) {
    MESSAGE("skipped: set MLX_TEST_LARGE=1 on a GPU with >= 12 GiB to run it");
    return;
  }
  check_add_one({2147483647});
  mx::clear_cache();
  check_add_one({65536, 32768});
  mx::clear_cache();
  // 2^32 bytes in one buffer is past many drivers' maxMemoryAllocationSize (NVIDIA:
  // 4 GiB - 2 MiB); there the allocation must fail with that clear error, not a wrong answer.
  try {
    check_add_one({65536, 65536});
  } catch (const std::runtime_error& e) {
    CHECK_MESSAGE(std::string(e.what()).find("maxMemoryAllocationSize") != std::string::npos,
                  e.what());
  }
  mx::clear_cache();
}
