// RandomBits::eval_cpu: counter-based random bits.
//
// The output is a stream of 32-bit words; words 2b and 2b+1 are threefry2x32_20(key,
// counter = (low 32 bits of b, high 32 bits of b)). An element of width w bytes (1, 2 or
// 4) at flat index i takes bytes [i*w, i*w + w) of that stream, low byte first. So the
// bits of element i depend only on the key and i: not on the shape, the thread count or
// the platform.
#include <algorithm>
#include <stdexcept>

#include "mlx/backend/cpu/threefry.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

template <typename T>
void fill_random_bits(T* dst, size_t n, uint32_t k0, uint32_t k1) {
  constexpr size_t per_block = 8 / sizeof(T);  // elements per 64-bit block
  constexpr uint32_t mask = sizeof(T) == 4 ? 0xffffffffu : (1u << (8 * sizeof(T))) - 1u;
  size_t blocks = (n + per_block - 1) / per_block;
  for (size_t b = 0; b < blocks; ++b) {
    auto [w0, w1] = random_detail::threefry2x32_20(k0, k1, static_cast<uint32_t>(b),
                                                   static_cast<uint32_t>(uint64_t(b) >> 32));
    uint64_t words = static_cast<uint64_t>(w0) | (static_cast<uint64_t>(w1) << 32);
    size_t first = b * per_block;
    size_t count = std::min(per_block, n - first);
    for (size_t e = 0; e < count; ++e) {
      dst[first + e] = static_cast<T>((words >> (8 * sizeof(T) * e)) & mask);
    }
  }
}

}  // namespace

void RandomBits::eval_cpu(const std::vector<array>& inputs, array& out) {
  const auto& key = inputs[0];
  if (key.dtype() != uint32 || key.ndim() != 1 || key.shape(0) != 2) {
    throw std::invalid_argument("[RandomBits] expects a uint32 key of shape (2,).");
  }
  Dtype expected = width_ == 1 ? uint8 : width_ == 2 ? uint16 : uint32;
  if (out.dtype() != expected) {
    throw std::invalid_argument("[RandomBits] output dtype does not match the width.");
  }
  const uint32_t* k = key.data<uint32_t>();
  uint32_t k0 = k[0];
  uint32_t k1 = k[key.strides(0)];
  out.set_data(allocator::malloc(out.nbytes()));
  switch (width_) {
    case 1:
      fill_random_bits(out.data<uint8_t>(), out.size(), k0, k1);
      break;
    case 2:
      fill_random_bits(out.data<uint16_t>(), out.size(), k0, k1);
      break;
    case 4:
      fill_random_bits(out.data<uint32_t>(), out.size(), k0, k1);
      break;
    default:
      throw std::invalid_argument("[RandomBits] width must be 1, 2 or 4 bytes.");
  }
}

}  // namespace mlx::core
