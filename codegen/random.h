// The "random" family (templates/random_bits.glsl): random::bits, Threefry-2x32-20 in
// MLX's layout, written as 32-bit words for every element width. One key ("random:
// op=threefry"), so one pipeline; the launch numbers carry everything else. No arrays, no
// Vulkan. docs/random.md describes the layout and the two modes.
#pragma once

#include <cstdint>

#include "codegen/codegen.h"

namespace mlx::core::vulkan::codegen {

// One launch over an output of `total_bytes` bytes: `num_keys` blocks of `bytes_per_key`.
//   pairs: one invocation per hash counter of every key, writing two words each; needs
//     bytes_per_key % 4 == 0 and the whole output in one binding (first_word 0).
//   words (pairs false): one invocation per output word in [first_word, first_word +
//     words), so a large output is written in windows that each fit one binding. With
//     bytes_per_key % 4 == 0 the kernel finds each word's key from word indices alone
//     (outputs below 2^32 words, 16 GiB); otherwise it gathers bytes (below 2 GiB).
// key_offset is element 0 of the keys (uint32) within their binding; out_offset is the
// word at first_word within the output's binding.
struct RandomBitsGeometry {
  int64_t num_keys = 0;
  int64_t bytes_per_key = 0;
  int64_t total_bytes = 0;
  bool pairs = false;
  int64_t first_word = 0;
  int64_t words = 0;
  uint64_t key_offset = 0;
  uint64_t out_offset = 0;
};

// Whether the pairs mode can write a block of this many bytes.
bool random_bits_pairs(int64_t bytes_per_key);

KernelKey random_bits_key();
KernelSource render_random(const KernelKey& key, const DeviceCaps& caps);
// The largest output the kernel writes (random_bits_launch's limits): 2^32 - 1 words of
// whole-word blocks, else 2^31 - 1 bytes. Larger outputs take the CPU route.
int64_t random_bits_max_bytes(int64_t bytes_per_key);
// Throws std::invalid_argument when the geometry is inconsistent or an index would pass
// 32 bits.
Launch random_bits_launch(const KernelKey& key, const KernelSource& source,
                          const RandomBitsGeometry& g);

}  // namespace mlx::core::vulkan::codegen
