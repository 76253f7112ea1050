// The size cap: least-recently-used files go first. "Used" is the file's mtime, which a
// store sets and a disk hit refreshes (at most once per process per entry).
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "cache/layout.h"

namespace mlx::core::vulkan::cache {

// Temp files older than this belong to a writer that died; younger ones may be in flight.
inline constexpr int64_t kStaleTempMs = 60 * 60 * 1000;

struct EvictionResult {
  uint64_t removed = 0;      // entries removed for the cap (stale temp files not counted)
  uint64_t bytes_after = 0;  // what the scanned files add up to afterwards
};

// Sum of the sizes of `files`.
uint64_t total_bytes(const std::vector<CacheFile>& files);

// If `files` add up to more than max_bytes, removes kernel entries and other devices'
// pipeline caches, oldest mtime first, until they add up to at most target_bytes. `keep`
// (the running device's pipeline cache) is never removed, nor are fingerprint files. Stale
// temp files are removed on the way. A file another process removed first counts as gone.
EvictionResult evict_lru(std::vector<CacheFile> files, uint64_t max_bytes, uint64_t target_bytes,
                         const std::filesystem::path& keep, int64_t now_ms);

}  // namespace mlx::core::vulkan::cache
