// Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC 2011; the constants of the Random123 library), the counter-based generator behind
// random::bits. A GPU kernel must compute exactly the same function.
#pragma once

#include <cstdint>
#include <utility>

namespace mlx::core::random_detail {

inline uint32_t rotl32(uint32_t x, int r) {
  return (x << r) | (x >> (32 - r));
}

// Hashes the counter (c0, c1) under the key (k0, k1) into two 32-bit words.
inline std::pair<uint32_t, uint32_t> threefry2x32_20(uint32_t k0, uint32_t k1, uint32_t c0,
                                                     uint32_t c1) {
  static constexpr int rotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};  // Skein key-schedule parity
  uint32_t x0 = c0 + ks[0];
  uint32_t x1 = c1 + ks[1];
  for (int r = 0; r < 20; ++r) {
    x0 += x1;
    x1 = rotl32(x1, rotations[r % 8]);
    x1 ^= x0;
    if (r % 4 == 3) {
      // Key injection every four rounds.
      uint32_t s = static_cast<uint32_t>(r / 4 + 1);
      x0 += ks[s % 3];
      x1 += ks[(s + 1) % 3] + s;
    }
  }
  return {x0, x1};
}

}  // namespace mlx::core::random_detail
