// Opening the cache for a subcommand and finding the entry a person means.
#pragma once

#include <string>
#include <vector>

#include "args.h"
#include "cache/disk_cache.h"

namespace spvdump {

namespace cache = mlx::core::vulkan::cache;

// The cache as the runtime would find it (MLX_VK_CACHE_DIR, XDG_CACHE_HOME, HOME), or the
// directory of --dir. Tools act on the directory whatever MLX_VK_CACHE says. The cache is
// opened without a device fingerprint unless one is given.
cache::CacheConfig tool_config(const Args& args);
cache::DiskCache open_cache(const Args& args, const std::string& fingerprint = "");
// For the commands that only read or tend what is there (list, show, stats, verify,
// clear, and kernel lookups): a root that does not exist, or is not a directory, is an
// error rather than an empty cache, so that a mistyped --dir cannot pass for one.
cache::DiskCache open_existing_cache(const Args& args);

// Thrown for a failure to report with exit code 1 (unknown key, bad file, I/O).
struct ToolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Entries whose device matches `device` (a prefix of the fingerprint hash, or text within
// the fingerprint; empty matches all).
bool device_matches(const cache::KernelEntry& e, const std::string& device);

// The one entry that `query` names: a hash prefix (4..16 lowercase hex digits) or a
// kernel key (canonicalized when it parses). Throws ToolError when none or several match.
cache::KernelEntry resolve_entry(const cache::DiskCache& cache, const std::string& query,
                                 const std::string& device);

}  // namespace spvdump
