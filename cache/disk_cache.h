// The on-disk kernel cache of one device, as the Vulkan runtime sees it.
//
// load/store/load_pipeline_cache/store_pipeline_cache are on the computation's path and
// never throw: every failure is a miss or a skipped write, reported once on stderr. Every
// byte they return has been validated (header, checksum, device, key hash, SPIR-V or
// pipeline-cache structure). The tool operations (list, verify, clear, export, import)
// act on the whole root, every device, whatever MLX_VK_CACHE says, because a person asked
// for them; they may throw std::runtime_error("[cache] ...").
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cache/config.h"
#include "cache/entry.h"
#include "cache/stats.h"

namespace mlx::core::vulkan::cache {

class DiskCache {
 public:
  // `fingerprint` identifies the device and driver (vendor id, device id, driver version,
  // driver name/info, pipelineCacheUUID, pointer size, as the runtime spells them). An
  // empty fingerprint opens the root for the tool operations only: load/store then miss.
  static DiskCache open(const std::string& fingerprint);  // config_from_env()
  static DiskCache open(const CacheConfig& config, const std::string& fingerprint);

  DiskCache(DiskCache&&) noexcept;
  DiskCache& operator=(DiskCache&&) noexcept;
  ~DiskCache();

  // A validated entry of this device, or nullopt. A hit refreshes the entry's LRU time.
  std::optional<KernelEntry> load(uint64_t hash);
  // Writes atomically (readwrite mode only); created_ms is filled in when 0. May evict
  // least-recently-used files to respect the size cap.
  void store(const KernelEntry& entry);

  // The driver's VkPipelineCache data saved for this device, validated. Merging with
  // what the driver has in memory is the caller's job; store replaces the file atomically.
  std::optional<std::vector<uint8_t>> load_pipeline_cache();
  void store_pipeline_cache(std::span<const uint8_t> data);

  // Valid kernel entries of every device, sorted by (fingerprint, key). Invalid kernel
  // files (damaged, or not regular files) are skipped, and appended to `bad` when given.
  // last_used_ms is the file's mtime.
  std::vector<KernelEntry> list(std::vector<BadFile>* bad = nullptr) const;
  VerifyReport verify(bool remove_bad) const;
  // Removes every file of ours under the root (unknown files are left alone) and the
  // directories that become empty. Returns the number of files removed.
  uint64_t clear();
  CacheStats stats() const;

  ExportReport export_bundle(const std::filesystem::path& bundle) const;
  // Kernel entries of every device are kept (under their own fingerprint); pipeline-cache
  // data of another device is skipped. Uses this cache's fingerprint as the current one.
  ImportReport import_bundle(const std::filesystem::path& bundle);

  const CacheConfig& config() const;
  const std::string& fingerprint() const;
  // Whether load/store can still touch the disk (false when off, or after a write error
  // for store).
  bool readable() const;
  bool writable() const;

 private:
  struct State;
  explicit DiskCache(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

}  // namespace mlx::core::vulkan::cache
