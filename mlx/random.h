// Counter-based random numbers (Threefry-2x32), reproducible across runs and platforms.
#pragma once

#include <optional>

#include "mlx/array.h"
#include "mlx/stream.h"

namespace mlx::core::random {

// A PRNG key: a uint32 array of shape (2,).
array key(uint64_t seed);
// Seeds the global key that functions use when no key is given.
void seed(uint64_t seed);
// Splits a key into `num` new keys, shape (num, 2).
array split(const array& key, int num, StreamOrDevice s = {});
std::pair<array, array> split(const array& key, StreamOrDevice s = {});

// Raw random bits; width is 1, 2 or 4 bytes (uint8, uint16, uint32).
array bits(const Shape& shape, int width, const std::optional<array>& key = std::nullopt,
           StreamOrDevice s = {});

// Uniform in [low, high).
array uniform(const array& low, const array& high, const Shape& shape, Dtype dtype = float32,
              const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
array uniform(const Shape& shape, Dtype dtype, const std::optional<array>& key = std::nullopt,
              StreamOrDevice s = {});
inline array uniform(const Shape& shape, const std::optional<array>& key = std::nullopt,
                     StreamOrDevice s = {}) {
  return uniform(shape, float32, key, s);
}

// Standard normal scaled by `scale` and shifted by `loc`.
array normal(const Shape& shape, Dtype dtype, float loc = 0.0f, float scale = 1.0f,
             const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
inline array normal(const Shape& shape, const std::optional<array>& key = std::nullopt,
                    StreamOrDevice s = {}) {
  return normal(shape, float32, 0.0f, 1.0f, key, s);
}

// Integers in [low, high).
array randint(const array& low, const array& high, const Shape& shape, Dtype dtype = int32,
              const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

} // namespace mlx::core::random
