// RandomBits::eval_cpu: counter-based random bits, laid out exactly as MLX does.
//
// Each key (the input is [..., 2]; the output's leading dims match the key batch) fills its
// own block of B bytes with W = ceil(B / 4) 32-bit words. With H = W / 2 and odd = W % 2,
// the hash of counter (j, j + H + odd) fills words j and j + H + odd, for j < H; an odd
// middle word H takes the first half of the hash of (H, 0); the last word keeps only its
// low B % 4 bytes. Elements of width 1 or 2 read that byte stream, low byte first. This is
// MLX's (and JAX's) layout, so one key draws the same numbers here as in MLX.
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "mlx/backend/common/utils.h"
#include "mlx/backend/cpu/threefry.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

// Writes word `w` of a block of `bytes` bytes, truncating a final partial word.
void put_word(uint8_t* block, size_t bytes, size_t w, uint32_t v) {
  size_t n = std::min<size_t>(4, bytes - 4 * w);
  std::memcpy(block + 4 * w, &v, n);  // little-endian hosts: the low bytes first
}

void fill_block(uint8_t* block, size_t bytes, uint32_t k0, uint32_t k1) {
  size_t words = (bytes + 3) / 4;
  size_t half = words / 2;
  size_t odd = words % 2;
  for (size_t j = 0; j < half; ++j) {
    auto [a, b] = random_detail::threefry2x32_20(k0, k1, static_cast<uint32_t>(j),
                                                 static_cast<uint32_t>(j + half + odd));
    put_word(block, bytes, j, a);
    put_word(block, bytes, j + half + odd, b);
  }
  if (odd) {
    auto ab = random_detail::threefry2x32_20(k0, k1, static_cast<uint32_t>(half), 0);
    put_word(block, bytes, half, ab.first);
  }
}

}  // namespace

void RandomBits::eval_cpu(const std::vector<array>& inputs, array& out) {
  const auto& keys = inputs[0];
  if (keys.dtype() != uint32 || keys.ndim() < 1 || keys.shape(-1) != 2) {
    throw std::invalid_argument("[RandomBits] expects uint32 keys of shape (..., 2).");
  }
  Dtype expected = width_ == 1 ? uint8 : width_ == 2 ? uint16 : uint32;
  if (out.dtype() != expected) {
    throw std::invalid_argument("[RandomBits] output dtype does not match the width.");
  }
  out.set_data(allocator::malloc(out.nbytes()));
  size_t num_keys = keys.size() / 2;
  if (num_keys == 0 || out.size() == 0) {
    return;
  }
  size_t bytes_per_key = out.nbytes() / num_keys;
  auto* dst = out.data<uint8_t>();
  const uint32_t* k = keys.data<uint32_t>();
  for (size_t i = 0; i < num_keys; ++i) {
    uint32_t k0 = k[elem_to_loc(2 * i, keys.shape(), keys.strides())];
    uint32_t k1 = k[elem_to_loc(2 * i + 1, keys.shape(), keys.strides())];
    fill_block(dst + i * bytes_per_key, bytes_per_key, k0, k1);
  }
}

}  // namespace mlx::core
