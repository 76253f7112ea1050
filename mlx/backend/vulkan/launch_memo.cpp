#include "mlx/backend/vulkan/launch_memo.h"

#include <algorithm>

#include "mlx/backend/vulkan/kernel_library.h"

namespace mlx::core::vulkan {

uint64_t LaunchMemo::hash_words(std::span<const int64_t> words) {
  // FNV-1a over 64-bit words with a final avalanche; the map only needs a good spread.
  uint64_t h = 1469598103934665603ULL;
  for (int64_t w : words) {
    h = (h ^ static_cast<uint64_t>(w)) * 1099511628211ULL;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

const MemoEntry* LaunchMemo::find(std::span<const int64_t> signature, uint64_t hash) {
  auto [begin, end] = slots_.equal_range(hash);
  for (auto it = begin; it != end; ++it) {
    if (std::ranges::equal(it->second.signature, signature)) {
      // A kernel whose deferred pipeline creation failed is planned again, so the library
      // builds it again (kernel_library.h).
      const Kernel* k = it->second.entry.kernel;
      if (k && k->failed.load(std::memory_order_relaxed)) {
        slots_.erase(it);
        return nullptr;
      }
      return &it->second.entry;
    }
  }
  return nullptr;
}

const MemoEntry& LaunchMemo::insert(std::span<const int64_t> signature, uint64_t hash,
                                    MemoEntry entry) {
  if (slots_.size() >= max_entries) {
    slots_.clear();
  }
  auto it = slots_.emplace(
      hash, Slot{std::vector<int64_t>(signature.begin(), signature.end()), std::move(entry)});
  return it->second.entry;
}

LaunchMemo& launch_memo() {
  thread_local LaunchMemo memo;
  return memo;
}

int64_t family_word(const char* name) {
  // FNV-1a of the name: families are a handful of fixed strings.
  uint64_t h = 1469598103934665603ull;
  for (const char* c = name; *c; ++c) {
    h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
  }
  return static_cast<int64_t>(h);
}

}  // namespace mlx::core::vulkan
