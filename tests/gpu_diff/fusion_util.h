// Helpers of the producer-absorption suites (test_fusion.cpp, test_fusion_attention.cpp).
#pragma once

#include <cstdint>

#include "mlx/fusion.h"
#include "mlx/mlx.h"

namespace gpu_diff {

namespace mx = mlx::core;

// Uniform values in [-1, 1) of dtype dt, made on the CPU from a seed.
inline mx::array uniform(const mx::Shape& shape, mx::Dtype dt, uint64_t seed) {
  auto cpu = mx::Device::cpu;
  auto u = mx::random::uniform(shape, mx::float32, mx::random::key(seed), cpu);
  return mx::astype(mx::subtract(mx::multiply(u, mx::array(2.0f), cpu), mx::array(1.0f), cpu), dt,
                    cpu);
}

// Builds `make` with fusion on or off, restoring the setting.
template <typename F>
auto with_fusion(bool on, F&& make) {
  bool was = mx::fusion_enabled();
  mx::set_fusion(on);
  auto out = make();
  mx::set_fusion(was);
  return out;
}

}  // namespace gpu_diff
