#include "cache/eviction.h"

#include <algorithm>

namespace mlx::core::vulkan::cache {

uint64_t total_bytes(const std::vector<CacheFile>& files) {
  uint64_t total = 0;
  for (const auto& f : files) {
    total += f.size;
  }
  return total;
}

EvictionResult evict_lru(std::vector<CacheFile> files, uint64_t max_bytes, uint64_t target_bytes,
                         const std::filesystem::path& keep, int64_t now_ms) {
  EvictionResult result;
  uint64_t total = 0;
  std::vector<CacheFile> candidates;
  for (auto& f : files) {
    std::error_code ec;
    if (f.role == FileRole::Temp && now_ms - f.mtime_ms > kStaleTempMs) {
      std::filesystem::remove(f.path, ec);
      continue;
    }
    total += f.size;
    bool evictable =
        f.role == FileRole::Kernel || (f.role == FileRole::PipelineCache && f.path != keep);
    if (evictable) {
      candidates.push_back(std::move(f));
    }
  }
  if (total > max_bytes) {
    // Oldest first; ties broken by path so that concurrent evictors pick the same victims.
    std::sort(candidates.begin(), candidates.end(), [](const CacheFile& a, const CacheFile& b) {
      return a.mtime_ms != b.mtime_ms ? a.mtime_ms < b.mtime_ms : a.path < b.path;
    });
    for (const auto& f : candidates) {
      if (total <= target_bytes) {
        break;
      }
      std::error_code ec;
      if (std::filesystem::remove(f.path, ec)) {
        ++result.removed;
      }
      if (!ec) {
        total -= f.size;
      }
    }
  }
  result.bytes_after = total;
  return result;
}

}  // namespace mlx::core::vulkan::cache
