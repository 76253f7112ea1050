#include "cache/stats.h"

#include <sstream>

namespace mlx::core::vulkan::cache {

std::string format_stats(const CacheStats& s) {
  std::ostringstream out;
  out << "disk hits:             " << s.disk_hits << "\n"
      << "disk misses:           " << s.disk_misses << "\n"
      << "bad entries:           " << s.bad_entries << "\n"
      << "stores:                " << s.stores << "\n"
      << "store failures:        " << s.store_failures << "\n"
      << "evictions:             " << s.evictions << "\n"
      << "pipeline cache loads:  " << s.pipeline_cache_loads << "\n"
      << "pipeline cache stores: " << s.pipeline_cache_stores << "\n"
      << "kernel files:          " << s.kernel_files << "\n"
      << "bytes on disk:         " << s.bytes_on_disk << "\n";
  return out.str();
}

}  // namespace mlx::core::vulkan::cache
