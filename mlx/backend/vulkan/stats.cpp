// The counters behind kernel_stats(). They are process-wide rather than members of the
// kernel library so that they survive its teardown (MLX_VK_STATS prints them then).
#include "mlx/backend/vulkan/stats.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <sstream>

#include "mlx/backend/vulkan/kernel_cache.h"
#include "mlx/backend/vulkan/utils.h"

namespace mlx::core::vulkan {

namespace {

struct Counters {
  std::atomic<uint64_t> memory_hits{0};
  std::mutex mtx;  // the rest change on the miss path only
  KernelStats misses;
  const KernelCache* source = nullptr;
  cache::CacheStats last_disk;
  cache::CacheConfig last_config;
  bool have_config = false;
};

// Never destroyed: the device's teardown (run from a static destructor) still counts.
Counters& counters() {
  static Counters* c = new Counters();
  return *c;
}

void fill_disk(KernelStats& out, const cache::CacheStats& d, const cache::CacheConfig& config) {
  out.cache_mode = cache::to_string(config.mode);
  out.cache_dir = config.mode == cache::CacheMode::Off ? "" : config.dir.string();
  out.disk_misses = d.disk_misses;
  out.bad_entries = d.bad_entries;
  out.stores = d.stores;
  out.store_failures = d.store_failures;
  out.evictions = d.evictions;
  out.pipeline_cache_loads = d.pipeline_cache_loads;
  out.pipeline_cache_stores = d.pipeline_cache_stores;
  out.bytes_on_disk = d.bytes_on_disk;
  out.kernel_files = d.kernel_files;
}

}  // namespace

void count_memory_hit() {
  counters().memory_hits.fetch_add(1, std::memory_order_relaxed);
}

void count_disk_hit(double load_ms, double pipeline_ms) {
  auto& c = counters();
  std::lock_guard lk(c.mtx);
  c.misses.disk_hits++;
  c.misses.disk_load_ms += load_ms;
  c.misses.disk_pipeline_ms += pipeline_ms;
}

void count_compile(double glslang_ms, double optimize_ms, double pipeline_ms) {
  auto& c = counters();
  std::lock_guard lk(c.mtx);
  c.misses.compiles++;
  c.misses.glslang_ms += glslang_ms;
  c.misses.optimize_ms += optimize_ms;
  c.misses.compile_pipeline_ms += pipeline_ms;
}

void count_failure() {
  auto& c = counters();
  std::lock_guard lk(c.mtx);
  c.misses.failures++;
}

void set_stats_source(const KernelCache* cache) {
  auto& c = counters();
  std::lock_guard lk(c.mtx);
  if (!cache && c.source) {
    // Keep the final disk counters of the cache that goes away.
    c.last_config = c.source->config();
    c.last_disk = c.source->config().mode == cache::CacheMode::Off ? cache::CacheStats{}
                                                                   : c.source->disk_stats();
    c.have_config = true;
  }
  c.source = cache;
}

KernelStats kernel_stats() {
  auto& c = counters();
  std::lock_guard lk(c.mtx);
  KernelStats out = c.misses;
  out.memory_hits = c.memory_hits.load(std::memory_order_relaxed);
  out.cache_mode = "off";
  try {
    if (c.source) {
      const auto& config = c.source->config();
      fill_disk(out,
                config.mode == cache::CacheMode::Off ? cache::CacheStats{} : c.source->disk_stats(),
                config);
    } else if (c.have_config) {
      fill_disk(out, c.last_disk, c.last_config);
    }
  } catch (...) {
    // Statistics must never fail a program; a directory scan error leaves zeros.
  }
  return out;
}

std::string format_kernel_stats(const KernelStats& s) {
  char buf[1024];
  std::snprintf(buf, sizeof(buf),
                "memory hits:           %llu\n"
                "disk hits:             %llu (load %.1f ms, pipelines %.1f ms)\n"
                "compiles:              %llu (glslang %.1f ms, optimizer %.1f ms, pipelines "
                "%.1f ms)\n"
                "failures:              %llu\n",
                (unsigned long long)s.memory_hits, (unsigned long long)s.disk_hits, s.disk_load_ms,
                s.disk_pipeline_ms, (unsigned long long)s.compiles, s.glslang_ms, s.optimize_ms,
                s.compile_pipeline_ms, (unsigned long long)s.failures);
  std::ostringstream out;
  out << buf << "disk cache:            " << s.cache_mode
      << (s.cache_dir.empty() ? "" : " (" + s.cache_dir + ")") << "\n";
  if (s.cache_mode != "off") {
    out << "disk misses:           " << s.disk_misses << " (bad entries " << s.bad_entries << ")\n"
        << "stores:                " << s.stores << " (failures " << s.store_failures
        << ", evictions " << s.evictions << ")\n"
        << "pipeline cache:        " << s.pipeline_cache_loads << " loads, "
        << s.pipeline_cache_stores << " stores\n"
        << "on disk:               " << s.kernel_files << " kernel files, " << s.bytes_on_disk
        << " bytes\n";
  }
  return out.str();
}

void print_stats_if_requested() {
  if (!env_flag("MLX_VK_STATS", false)) {
    return;
  }
  std::string text = format_kernel_stats(kernel_stats());
  std::string prefixed;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    prefixed += "[mlx-vulkan stats] " + text.substr(pos, nl - pos) + "\n";
    pos = nl == std::string::npos ? text.size() : nl + 1;
  }
  std::fputs(prefixed.c_str(), stderr);
}

}  // namespace mlx::core::vulkan
