// Where the cache lives and what it may do, from the environment:
//   MLX_VK_CACHE_DIR     the root; else $XDG_CACHE_HOME/mlx-vulkan; else ~/.cache/mlx-vulkan
//   MLX_VK_CACHE         off | readonly | readwrite, any case (default readwrite)
//   MLX_VK_CACHE_MAX_MB  size cap in MiB for the whole root (default 512; 0 = no cap)
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace mlx::core::vulkan::cache {

enum class CacheMode { Off, ReadOnly, ReadWrite };

inline constexpr uint64_t kDefaultMaxMegabytes = 512;

struct CacheConfig {
  std::filesystem::path dir;
  CacheMode mode = CacheMode::ReadWrite;
  uint64_t max_bytes = kDefaultMaxMegabytes << 20;  // 0: no cap
};

// Looks up one environment variable; nullopt when unset. Tests pass a map-backed one.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

EnvLookup process_env();

// Never throws: an unknown MLX_VK_CACHE value gives one warning and Off (fail closed); a
// malformed MLX_VK_CACHE_MAX_MB gives one warning and the default; no usable directory (no
// HOME either) gives one warning and Off.
CacheConfig config_from_env(const EnvLookup& env = process_env());

const char* to_string(CacheMode mode);

}  // namespace mlx::core::vulkan::cache
