// Devices and streams, and what happens when a device is missing.
#include <doctest/doctest.h>

#include "mlx/backend/gpu/available.h"
#include "mlx/backend/gpu/device_info.h"
#include "mlx/mlx.h"
#include "mlx/primitives.h"

namespace mx = mlx::core;

TEST_CASE("the default device is the GPU exactly when one is available") {
  auto expected = mx::gpu::is_available() ? mx::Device::gpu : mx::Device::cpu;
  CHECK(mx::default_device() == mx::Device(expected));
}

TEST_CASE("ops run on the device named by StreamOrDevice") {
  auto a = mx::array({1.0f, 2.0f});
  auto b = mx::add(a, a, mx::Device::cpu);
  CHECK(b.primitive().stream().device == mx::Device::cpu);
  auto s = mx::new_stream(mx::Device::cpu);
  auto c = mx::add(a, a, s);
  CHECK(c.primitive().stream() == s);
  CHECK_THROWS_AS(c.item<float>(), std::invalid_argument); // size 2
}

TEST_CASE("set_default_device changes where ops run") {
  auto previous = mx::default_device();
  mx::set_default_device(mx::Device::cpu);
  auto a = mx::add(mx::array(1), mx::array(2));
  CHECK(a.primitive().device() == mx::Device::cpu);
  CHECK(a.item<int>() == 3);
  mx::set_default_device(previous);
}

TEST_CASE("without a GPU, asking for it gives a clear error") {
  if (mx::gpu::is_available()) {
    CHECK(mx::gpu::device_count() >= 1);
    return;
  }
  CHECK(mx::gpu::device_count() == 0);
  CHECK_THROWS_WITH_AS(mx::set_default_device(mx::Device::gpu),
                       doctest::Contains("GPU is not available"), std::runtime_error);
  CHECK_THROWS_WITH_AS(mx::add(mx::array(1), mx::array(2), mx::Device::gpu),
                       doctest::Contains("GPU is not available"), std::runtime_error);
}
