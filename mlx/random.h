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
inline array bits(const Shape& shape, const std::optional<array>& key = std::nullopt,
                  StreamOrDevice s = {}) {
  return bits(shape, 4, key, s);
}

// Uniform in [low, high), mapped from bits() exactly as MLX does.
array uniform(const array& low, const array& high, const Shape& shape, Dtype dtype = float32,
              const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
template <typename T, typename U>
array uniform(T low, U high, const Shape& shape, Dtype dtype = float32,
              const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return uniform(array(low), array(high), shape, dtype, key, s);
}
array uniform(const Shape& shape, Dtype dtype, const std::optional<array>& key = std::nullopt,
              StreamOrDevice s = {});
inline array uniform(const Shape& shape, const std::optional<array>& key = std::nullopt,
                     StreamOrDevice s = {}) {
  return uniform(shape, float32, key, s);
}

// Standard normal, scaled by `scale` and shifted by `loc` (MLX's overloads).
array normal(const Shape& shape, Dtype dtype, const std::optional<array>& loc,
             const std::optional<array>& scale, const std::optional<array>& key,
             StreamOrDevice s = {});
array normal(const Shape& shape, Dtype dtype, float loc, float scale,
             const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
inline array normal(const Shape& shape, float loc, float scale,
                    const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return normal(shape, float32, loc, scale, key, s);
}
inline array normal(const Shape& shape, Dtype dtype, const std::optional<array>& key = std::nullopt,
                    StreamOrDevice s = {}) {
  return normal(shape, dtype, std::nullopt, std::nullopt, key, s);
}
inline array normal(const Shape& shape, const std::optional<array>& key = std::nullopt,
                    StreamOrDevice s = {}) {
  return normal(shape, float32, std::nullopt, std::nullopt, key, s);
}

// Integers in [low, high) (MLX: floor of a float32 uniform, clamped).
array randint(const array& low, const array& high, const Shape& shape, Dtype dtype = int32,
              const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
template <typename T, typename U>
array randint(T low, U high, const Shape& shape, Dtype dtype = int32,
              const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return randint(array(low), array(high), shape, dtype, key, s);
}

// Bools that are true with probability p (broadcast to `shape`; without a shape, p's
// shape; without p, 0.5): MLX's comparison of 32 random bits with p * 2^32 (one float32
// step above), so p <= 0 is always false and p >= 1 always true. p must be floating point.
array bernoulli(const array& p, const Shape& shape, const std::optional<array>& key = std::nullopt,
                StreamOrDevice s = {});
array bernoulli(const array& p, const std::optional<array>& key = std::nullopt,
                StreamOrDevice s = {});
template <typename T>
array bernoulli(T p, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return bernoulli(array(p), key, s);
}
template <typename T>
array bernoulli(T p, const Shape& shape, const std::optional<array>& key = std::nullopt,
                StreamOrDevice s = {}) {
  return bernoulli(array(p), shape, key, s);
}
array bernoulli(const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

// Standard normal values truncated to [lower, upper] (MLX's (and JAX's) method: a uniform
// between erf(lower / sqrt 2) and erf(upper / sqrt 2) through sqrt(2) * erfinv, clipped).
// Without a shape, the broadcast shape of lower and upper.
array truncated_normal(const array& lower, const array& upper, const Shape& shape,
                       Dtype dtype = float32, const std::optional<array>& key = std::nullopt,
                       StreamOrDevice s = {});
array truncated_normal(const array& lower, const array& upper, Dtype dtype = float32,
                       const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

// Standard Gumbel values: -log(-log(u)) for u uniform in [0, 1).
array gumbel(const Shape& shape, Dtype dtype = float32,
             const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

// Category indices (uint32) drawn with probabilities softmax(logits) along `axis`: MLX's
// Gumbel-max trick (argmax of logits + gumbel), or, for a single distribution (logits with
// one non-trivial axis) and a non-empty `shape`, MLX's inverse CDF (one uniform per sample
// looked up in the cumulative sum of exp(logits - max)). `shape` must broadcast with the
// logits' shape without `axis`; num_samples draws that many per distribution, as a new last
// axis.
array categorical(const array& logits, int axis, const Shape& shape,
                  const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
array categorical(const array& logits_, int axis, int num_samples,
                  const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
array categorical(const array& logits, int axis = -1,
                  const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

// Laplace values with location loc and scale `scale`, by MLX's inverse CDF of a uniform in
// (-1, 1).
array laplace(const Shape& shape, Dtype dtype, const float loc, const float scale,
              const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
inline array laplace(const Shape& shape, const float loc, const float scale,
                     const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return laplace(shape, float32, loc, scale, key, s);
}
inline array laplace(const Shape& shape, const Dtype dtype,
                     const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return laplace(shape, dtype, 0.0, 1.0, key, s);
}
inline array laplace(const Shape& shape, const std::optional<array>& key = std::nullopt,
                     StreamOrDevice s = {}) {
  return laplace(shape, float32, 0.0, 1.0, key, s);
}

// x shuffled along `axis` (MLX: take(x, argsort(bits), axis)), or a random permutation of
// arange(x) (uint32).
array permutation(const array& x, int axis = 0, const std::optional<array>& key = std::nullopt,
                  StreamOrDevice s = {});
array permutation(int x, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

}  // namespace mlx::core::random
