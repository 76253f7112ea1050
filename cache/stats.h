// Counters of one DiskCache, plus the reports of its tool operations. Memory hits and
// compiles are the runtime's to count; these are the disk side.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mlx::core::vulkan::cache {

struct CacheStats {
  uint64_t disk_hits = 0;              // load() returned a validated entry
  uint64_t disk_misses = 0;            // load() returned nothing (absent or bad)
  uint64_t bad_entries = 0;            // entries rejected by validation (each also a miss)
  uint64_t stores = 0;                 // kernel entries written
  uint64_t store_failures = 0;         // writes that failed or were skipped after a failure
  uint64_t evictions = 0;              // files removed to respect the size cap
  uint64_t pipeline_cache_loads = 0;   // validated pipeline-cache blobs returned
  uint64_t pipeline_cache_stores = 0;  // pipeline-cache blobs written
  // Measured when stats() is called, over the whole root (all devices).
  uint64_t bytes_on_disk = 0;
  uint64_t kernel_files = 0;
};

// One line per counter, for MLX_VK_STATS=1 and `spvdump stats`.
std::string format_stats(const CacheStats& stats);

struct BadFile {
  std::string path;
  std::string reason;
};

struct VerifyReport {
  uint64_t checked = 0;  // files examined (kernels, pipeline caches, fingerprint files)
  uint64_t ok = 0;
  std::vector<BadFile> bad;
  uint64_t removed = 0;  // bad files and stale temp files deleted (remove_bad only)
};

struct ExportReport {
  uint64_t kernels = 0;
  uint64_t pipeline_caches = 0;
  std::vector<BadFile> skipped;  // failed validation; not exported
  uint64_t bytes = 0;            // size of the bundle file
};

struct ImportReport {
  uint64_t kernels = 0;                  // written (any device)
  uint64_t foreign_kernels = 0;          // of those, for another device fingerprint
  uint64_t pipeline_caches = 0;          // written (this device's only)
  uint64_t foreign_pipeline_caches = 0;  // skipped: another device's driver data
  std::vector<BadFile> bad;              // records that failed validation; not written
};

}  // namespace mlx::core::vulkan::cache
