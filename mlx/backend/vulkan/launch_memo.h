// Remembers the kernel and packed launch numbers of recent launches of any family, keyed by
// a signature the family builds from exactly what its key and numbers depend on (for the
// elementwise families: family, op, dtypes, collapsed shape, strides, offsets). A repeated
// geometry, such as every layer of a decode step, then skips key building, the kernel
// library lookup and launch packing, which are most of the host cost of a dispatch.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "codegen/codegen.h"

namespace mlx::core::vulkan {

struct Kernel;

struct MemoEntry {
  const Kernel* kernel = nullptr;
  codegen::Launch launch;
};

class LaunchMemo {
 public:
  // The signature is compared word for word, so a hash collision can never pick a wrong
  // kernel. Returns nullptr on a miss, and for (and forgets) an entry whose kernel's
  // pipeline creation failed.
  const MemoEntry* find(std::span<const int64_t> signature, uint64_t hash);
  const MemoEntry& insert(std::span<const int64_t> signature, uint64_t hash, MemoEntry entry);

  static uint64_t hash_words(std::span<const int64_t> words);

 private:
  struct Slot {
    std::vector<int64_t> signature;
    MemoEntry entry;
  };
  // Bounded: cleared when full, which costs one rebuild per live geometry.
  static constexpr size_t max_entries = 4096;
  std::unordered_multimap<uint64_t, Slot> slots_;
};

// The calling thread's memo (no locking: each thread records its own launches).
LaunchMemo& launch_memo();

// The memo's entry for `signature`, built by `plan` on a miss. The signature must hold
// every input of the family's key and launch numbers, starting with a word naming the
// family (family_word), so two families never share an entry. A signature of fixed length
// can live on the stack (an array), so a hit allocates nothing.
template <typename Plan>
const MemoEntry& memoized(std::span<const int64_t> signature, Plan&& plan) {
  auto& memo = launch_memo();
  uint64_t hash = LaunchMemo::hash_words(signature);
  if (const MemoEntry* e = memo.find(signature, hash)) {
    return *e;
  }
  return memo.insert(signature, hash, plan());
}

// A signature word for a family or op name.
int64_t family_word(const char* name);

}  // namespace mlx::core::vulkan
