// The glue between the kernel library and the disk cache (cache/): the device's DiskCache,
// the persisted VkPipelineCache, MLX_VK_RECORD_KERNELS, and the statistics counters.
//
// Nothing here fails a computation: the cache library never throws from load/store, and
// pipeline-cache trouble (a foreign or rejected blob) means starting with an empty one.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cache/disk_cache.h"
#include "cache/recorder.h"
#include "mlx/backend/vulkan/device.h"

namespace mlx::core::vulkan {

class KernelCache {
 public:
  // Opens the disk cache for the device's fingerprint (MLX_VK_CACHE, MLX_VK_CACHE_DIR, ...)
  // and the key recorder when MLX_VK_RECORD_KERNELS is set.
  explicit KernelCache(Device& d);
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  // The validated entry stored for this kernel hash and key, or nullopt (a miss).
  std::optional<cache::KernelEntry> load(uint64_t hash, const std::string& canonical_key);
  // Writes a freshly compiled kernel (readwrite mode only; a failure is one warning).
  void store(const cache::KernelEntry& entry);
  // Appends the key to the MLX_VK_RECORD_KERNELS file (once per key and file).
  void record(const std::string& canonical_key);

  // A VkPipelineCache seeded with the persisted data when that data was made by this
  // device's driver (vendor, device and pipelineCacheUUID of Vulkan's own header must
  // match); else an empty one. The caller owns the handle.
  VkPipelineCache create_pipeline_cache();
  // Merges `live` with what is on disk now (another process may have saved meanwhile) and
  // writes the result when it differs from what this process last loaded or saved.
  // Returns true when it wrote. Thread-safe; never throws.
  bool save_pipeline_cache(VkPipelineCache live);
  // Called after each pipeline built on a memory miss: saves at a bounded interval (every
  // MLX_VK_PIPELINE_CACHE_SAVE_EVERY new pipelines, default 64, or when kSaveEvery passed
  // since the last save) so that a process that is killed keeps most of its work. Never
  // waits for another thread's save; a memory hit never comes here.
  void pipeline_created(VkPipelineCache live);

  cache::CacheStats disk_stats() const;
  const cache::CacheConfig& config() const {
    return disk_.config();
  }

  static constexpr size_t kDefaultSaveEveryPipelines = 64;
  static constexpr std::chrono::seconds kSaveEvery{30};

 private:
  std::optional<std::vector<uint8_t>> matching_blob(std::vector<uint8_t> data, bool warn);
  VkPipelineCache make_cache(const std::vector<uint8_t>* data);

  Device& dev_;
  VkPhysicalDeviceProperties props_{};
  cache::DiskCache disk_;  // thread-safe
  std::unique_ptr<cache::KeyRecorder> recorder_;

  std::mutex save_mtx_;
  std::vector<uint8_t> last_blob_;  // what this process loaded or last wrote
  size_t unsaved_pipelines_ = 0;
  size_t save_every_pipelines_;
  std::chrono::steady_clock::time_point last_save_;
};

// Counters behind kernel_stats() (stats.cpp). The kernel library calls these; a memory hit
// is one relaxed atomic increment.
void count_memory_hit();
void count_disk_hit(double load_ms, double pipeline_ms);
void count_compile(double glslang_ms, double optimize_ms, double pipeline_ms);
void count_failure();
// The live cache whose disk counters kernel_stats() reports (nullptr when it goes away;
// its last counters are kept).
void set_stats_source(const KernelCache* cache);
// Prints the statistics to stderr when MLX_VK_STATS=1.
void print_stats_if_requested();

}  // namespace mlx::core::vulkan
