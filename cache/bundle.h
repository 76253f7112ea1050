// Bundles: a whole cache in one file, to move between machines (docs/cache-format.md).
// A bundle is a header of ours (kind Bundle) whose payload is a sequence of records, each
// a complete kernel or pipeline-cache file, byte for byte as it lies in the cache.
#pragma once

#include <filesystem>
#include <string>

#include "cache/stats.h"

namespace mlx::core::vulkan::cache {

// Writes every valid entry under root (all devices) into `bundle`, atomically. Invalid
// entries are skipped and listed. Throws std::runtime_error("[cache] ...") when the bundle
// cannot be written.
ExportReport export_bundle(const std::filesystem::path& root, const std::filesystem::path& bundle);

// Checks the bundle's checksum first (a corrupt bundle writes nothing and throws), then
// validates each record on its own. Kernel entries are written under their own device's
// directory (their key hash covers the fingerprint, so they only ever hit on that device);
// pipeline-cache data is written only when its fingerprint is `current_fingerprint`.
ImportReport import_bundle(const std::filesystem::path& root, const std::filesystem::path& bundle,
                           const std::string& current_fingerprint);

}  // namespace mlx::core::vulkan::cache
