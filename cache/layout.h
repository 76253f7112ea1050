// Where cache files live under the root (docs/cache-format.md, "Directory layout"):
//   <root>/CACHEDIR.TAG                          tells backup tools to skip the cache
//   <root>/<fingerprint hash>/fingerprint.txt    the device fingerprint, for people
//   <root>/<fingerprint hash>/<key hash>.kernel  one kernel entry
//   <root>/<fingerprint hash>/pipeline.cache     the device's VkPipelineCache data
//   <root>/<fingerprint hash>/tuning.txt         autotune records (cache/tuning.h)
// Hashes are 16 lowercase hex digits. Files that match none of these names are not ours and
// are never read, counted or removed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mlx::core::vulkan::cache {

std::filesystem::path device_dir(const std::filesystem::path& root, uint64_t fingerprint_hash);
std::filesystem::path kernel_path(const std::filesystem::path& root, uint64_t fingerprint_hash,
                                  uint64_t key_hash);
std::filesystem::path pipeline_cache_path(const std::filesystem::path& root,
                                          uint64_t fingerprint_hash);
std::filesystem::path fingerprint_path(const std::filesystem::path& root,
                                       uint64_t fingerprint_hash);
std::filesystem::path tuning_path(const std::filesystem::path& root, uint64_t fingerprint_hash);

enum class FileRole { Kernel, PipelineCache, Fingerprint, Tuning, Temp };

struct CacheFile {
  std::filesystem::path path;
  FileRole role = FileRole::Kernel;
  uint64_t fingerprint_hash = 0;  // from the directory name
  uint64_t key_hash = 0;          // from the file name (kernels only)
  uint64_t size = 0;
  int64_t mtime_ms = 0;
  // False for a FIFO, socket or device that has one of our names: never opened, reported
  // as bad by verify and list, removed by clear.
  bool regular = true;
};

// Every file of ours under root, in a stable order (by path). Never throws; a missing or
// unreadable root is an empty cache.
std::vector<CacheFile> scan(const std::filesystem::path& root);

// Creates root/<fingerprint hash>/ with its fingerprint.txt and the root's CACHEDIR.TAG.
// Returns an error message, or nullopt.
std::optional<std::string> prepare_device_dir(const std::filesystem::path& root,
                                              const std::string& fingerprint);

// A fingerprint.txt is one line; anything larger is damage, never read whole.
inline constexpr uint64_t kMaxFingerprintBytes = uint64_t{1} << 20;

// The fingerprint text stored for a device directory, if present and consistent with it.
std::optional<std::string> read_fingerprint(const std::filesystem::path& root,
                                            uint64_t fingerprint_hash);

}  // namespace mlx::core::vulkan::cache
