// Devices and streams, and what happens when a device is missing.
#include <doctest/doctest.h>

#include <sstream>

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
  CHECK_THROWS_AS(c.item<float>(), std::invalid_argument);  // size 2
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

TEST_CASE("a device index other than 0 names no device and is rejected where it is used") {
  auto previous = mx::default_device();
  auto a = mx::array({1.0f, 2.0f});
  // The GPU indices fail on the index whether or not a GPU exists.
  for (auto d : {mx::Device(mx::Device::cpu, 1), mx::Device(mx::Device::cpu, -1),
                 mx::Device(mx::Device::gpu, 1), mx::Device(mx::Device::gpu, -1),
                 mx::Device(mx::Device::gpu, 7)}) {
    CAPTURE(d);
    std::ostringstream name;
    name << d;
    CHECK_FALSE(mx::is_available(d));
    CHECK_THROWS_WITH_AS(mx::set_default_device(d),
                         doctest::Contains(("[set_default_device] " + name.str() +
                                            " names no device: the devices are Device(cpu, 0)")
                                               .c_str()),
                         std::invalid_argument);
    CHECK(mx::default_device() == previous);
    CHECK_THROWS_WITH_AS(mx::default_stream(d), doctest::Contains("[default_stream]"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(mx::new_stream(d), doctest::Contains("[new_stream]"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(mx::add(a, a, d), doctest::Contains("names no device"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(mx::add(a, a, mx::Stream(0, d)), doctest::Contains("[to_stream]"),
                         std::invalid_argument);
  }
  CHECK(mx::is_available(mx::Device(mx::Device::cpu, 0)));
  auto b = mx::add(a, a, mx::Device(mx::Device::cpu, 0));
  CHECK(b.primitive().device() == mx::Device::cpu);
}

TEST_CASE("set_default_stream changes what default_stream and new ops use, and back") {
  // default_stream answers from a cache without a lock; set_default_stream must update it.
  auto before = mx::default_stream(mx::Device::cpu);
  CHECK(mx::default_stream(mx::Device::cpu).index == before.index);  // the cached answer
  auto s = mx::new_stream(mx::Device::cpu);
  CHECK(s.index != before.index);
  mx::set_default_stream(s);
  CHECK(mx::default_stream(mx::Device::cpu).index == s.index);
  CHECK(mx::default_stream(mx::Device::cpu).device == mx::Device::cpu);
  auto a = mx::array({1.0f, 2.0f});
  CHECK(mx::add(a, a, mx::Device::cpu).primitive().stream().index == s.index);
  mx::set_default_stream(before);
  CHECK(mx::default_stream(mx::Device::cpu).index == before.index);
  CHECK(mx::add(a, a, mx::Device::cpu).primitive().stream().index == before.index);
}
