// The random family's launch packing (codegen/random.h): which mode each geometry takes, the
// words it packs, and the 32-bit limits, up to outputs of 16 GiB that no CI machine can
// allocate. The kernel's numbers against the CPU: tests/gpu_diff/test_random.cpp.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "codegen/random.h"

using namespace mlx::core::vulkan::codegen;

namespace {

// The 10 push-constant words (templates/random_bits.glsl's Params) of a launch.
std::vector<uint32_t> words_of(const Launch& l) {
  std::vector<uint32_t> w(l.push_constants.size() / 4);
  std::memcpy(w.data(), l.push_constants.data(), w.size() * 4);
  return w;
}

const KernelSource& source() {
  static const KernelSource s = [] {
    DeviceCaps caps;
    caps.fingerprint = "test-device";
    return render_random(random_bits_key(), caps);
  }();
  return s;
}

enum Field { kCount, kKeyOffset, kOutOffset, kFirstWord, kBytes, kHalf, kOdd, kTotal, kMode, kWpk };

}  // namespace

TEST_CASE("random bits past 2 GiB take the whole-word mode by word indices, up to 16 GiB") {
  REQUIRE(source().push_constant_bytes == 40);
  constexpr int64_t kGiB = int64_t{1} << 30;
  // One key, 6 GiB of uint32 draws: B % 4 == 0, written in windows of whole words (mode 2).
  RandomBitsGeometry g;
  g.num_keys = 1;
  g.bytes_per_key = g.total_bytes = 6 * kGiB;
  g.first_word = 3 * kGiB / 4;  // a window 3 GiB in
  g.words = kGiB / 4;
  g.out_offset = 5;
  auto w = words_of(random_bits_launch(random_bits_key(), source(), g));
  CHECK(w[kMode] == 2u);
  CHECK(w[kCount] == uint32_t(kGiB / 4));
  CHECK(w[kFirstWord] == uint32_t(3 * kGiB / 4));
  CHECK(w[kWpk] == uint32_t(6 * kGiB / 4));
  CHECK(w[kHalf] == uint32_t(6 * kGiB / 8));
  CHECK(w[kOdd] == 0u);
  CHECK(w[kBytes] == 0u);  // left out: 6 GiB does not fit 32 bits
  CHECK(w[kTotal] == 0u);
  CHECK(w[kOutOffset] == 5u);
  CHECK(random_bits_max_bytes(8) == 4 * int64_t{0xffffffff});
  CHECK(random_bits_max_bytes(6) == int64_t{0x7fffffff});

  // 16 GiB of words does not fit 32-bit word indices; a window past the output is refused.
  RandomBitsGeometry too_big = g;
  too_big.bytes_per_key = too_big.total_bytes = 16 * kGiB;
  CHECK_THROWS_AS(random_bits_launch(random_bits_key(), source(), too_big), std::invalid_argument);
  RandomBitsGeometry past = g;
  past.first_word = 6 * kGiB / 4 - 10;
  CHECK_THROWS_AS(random_bits_launch(random_bits_key(), source(), past), std::invalid_argument);

  // Blocks that are not whole words gather bytes (mode 1), below 2 GiB only.
  RandomBitsGeometry bytes;
  bytes.num_keys = 3;
  bytes.bytes_per_key = 7;
  bytes.total_bytes = 21;
  bytes.first_word = 0;
  bytes.words = 6;
  w = words_of(random_bits_launch(random_bits_key(), source(), bytes));
  CHECK(w[kMode] == 1u);
  CHECK(w[kBytes] == 7u);
  CHECK(w[kTotal] == 21u);
  CHECK(w[kWpk] == 2u);
  bytes.num_keys = 1;
  bytes.bytes_per_key = bytes.total_bytes = 3 * kGiB + 1;
  bytes.words = 100;
  CHECK_THROWS_AS(random_bits_launch(random_bits_key(), source(), bytes), std::invalid_argument);

  // Pairs: the whole output in one binding, both words of each hash.
  RandomBitsGeometry pairs;
  pairs.num_keys = 4;
  pairs.bytes_per_key = 12;  // 3 words: H = 1, odd
  pairs.total_bytes = 48;
  pairs.pairs = true;
  w = words_of(random_bits_launch(random_bits_key(), source(), pairs));
  CHECK(w[kMode] == 0u);
  CHECK(w[kCount] == 8u);
  CHECK(w[kHalf] == 1u);
  CHECK(w[kOdd] == 1u);
}
