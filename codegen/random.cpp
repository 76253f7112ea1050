// The "random" family (codegen/random.h): key, rendering and launch packing for
// templates/random_bits.glsl.
#include "codegen/random.h"

#include <limits>
#include <stdexcept>

#include "codegen/dtypes.h"
#include "codegen/internal.h"

namespace mlx::core::vulkan::codegen {

namespace {

constexpr uint32_t kFields = 10;

}  // namespace

bool random_bits_pairs(int64_t bytes_per_key) {
  return bytes_per_key > 0 && bytes_per_key % 4 == 0;
}

int64_t random_bits_max_bytes(int64_t bytes_per_key) {
  constexpr int64_t kMaxU32 = std::numeric_limits<uint32_t>::max();
  return random_bits_pairs(bytes_per_key) ? 4 * kMaxU32 : kMaxU32 / 2;
}

KernelKey random_bits_key() {
  return KernelKey{"random", {{"op", "threefry"}}};
}

KernelSource render_random(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  check_params(key, {"op"}, where);
  if (key_param(key, "op", where) != "threefry") {
    throw std::invalid_argument("[render] " + where + ": op must be threefry.");
  }
  return row_kernel_source("random_bits.glsl", storage_defines({}, false, caps, where), 2, kFields,
                           false, caps);
}

Launch random_bits_launch(const KernelKey& key, const KernelSource& source,
                          const RandomBitsGeometry& g) {
  const std::string where = "kernel " + key.canonical();
  constexpr int64_t kMax = std::numeric_limits<uint32_t>::max();
  const bool whole = random_bits_pairs(g.bytes_per_key);
  const int64_t total_words = (g.total_bytes + 3) / 4;
  const int64_t words = (g.bytes_per_key + 3) / 4;  // a key's block
  bool ok = key == random_bits_key() && g.num_keys > 0 && g.bytes_per_key > 0 &&
            g.total_bytes == g.num_keys * g.bytes_per_key &&
            g.total_bytes <= random_bits_max_bytes(g.bytes_per_key) &&
            static_cast<int64_t>(g.key_offset) + 2 * g.num_keys < kMax;
  int64_t count = 0;
  if (g.pairs) {
    ok =
        ok && whole && g.first_word == 0 && static_cast<int64_t>(g.out_offset) + total_words < kMax;
    count = g.num_keys * (words / 2 + words % 2);
  } else {
    ok = ok && g.first_word >= 0 && g.words > 0 && g.first_word + g.words <= total_words &&
         static_cast<int64_t>(g.out_offset) + g.words < kMax;
    count = g.words;
  }
  if (!ok) {
    throw std::invalid_argument("[launch] " + where + " does not match the geometry.");
  }
  // Mode 0 pairs, 2 whole words, 1 bytes; modes 0 and 2 leave out the byte counts (which
  // may not fit 32 bits there).
  const int64_t mode = g.pairs ? 0 : whole ? 2 : 1;
  uint64_t wg = source.workgroup_size[0];
  return pack_launch(source,
                     {count, static_cast<int64_t>(g.key_offset), static_cast<int64_t>(g.out_offset),
                      g.first_word, mode == 1 ? g.bytes_per_key : 0, words / 2, words % 2,
                      mode == 1 ? g.total_bytes : 0, mode, words},
                     false, (static_cast<uint64_t>(count) + wg - 1) / wg, where);
}

}  // namespace mlx::core::vulkan::codegen
