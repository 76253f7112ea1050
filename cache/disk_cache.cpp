#include "cache/disk_cache.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <unordered_set>

#include "cache/bundle.h"
#include "cache/eviction.h"
#include "cache/file_io.h"
#include "cache/format.h"
#include "cache/hash.h"
#include "cache/layout.h"
#include "cache/tuning.h"
#include "cache/warn.h"

namespace mlx::core::vulkan::cache {

namespace {

// After the cap is hit, evict down to this fraction of it, so that the next few stores do
// not each pay for a scan of the directory.
constexpr uint64_t kLowWaterPercent = 75;
// Other processes add files we do not see; rescan at least this often to notice them.
constexpr uint64_t kStoresPerRescan = 256;

}  // namespace

struct DiskCache::State {
  CacheConfig config;
  std::string fingerprint;
  uint64_t fp_hash = 0;

  mutable std::mutex mutex;
  CacheStats counters;
  std::unordered_set<uint64_t> touched;  // entries whose mtime this process refreshed
  bool write_failed = false;
  bool dir_ready = false;
  std::optional<uint64_t> estimated_bytes;  // of the whole root, since the last scan
  uint64_t stores_since_scan = 0;
  std::mutex evict_mutex;

  bool runtime_enabled() const {
    return config.mode != CacheMode::Off && !fingerprint.empty() && !config.dir.empty();
  }

  // The one warning of a cache that stops writing (read-only dir, full disk, EACCES).
  void disable_writes(const std::string& reason) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      write_failed = true;
      ++counters.store_failures;
    }
    warn_once("write:" + config.dir.string(),
              reason +
                  "; continuing without storing kernels on disk (set MLX_VK_CACHE_DIR "
                  "to a writable directory, or MLX_VK_CACHE=readonly to silence this)");
  }

  bool can_write() {
    std::lock_guard<std::mutex> lock(mutex);
    if (config.mode != CacheMode::ReadWrite || fingerprint.empty() || config.dir.empty()) {
      return false;
    }
    if (write_failed) {
      ++counters.store_failures;
      return false;
    }
    return true;
  }

  bool ensure_dir() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (dir_ready) {
        return true;
      }
    }
    if (auto err = prepare_device_dir(config.dir, fingerprint)) {
      disable_writes(*err);
      return false;
    }
    std::lock_guard<std::mutex> lock(mutex);
    dir_ready = true;
    return true;
  }

  bool write(const std::filesystem::path& path, std::span<const uint8_t> bytes, bool sync) {
    if (!ensure_dir()) {
      return false;
    }
    auto err = atomic_write(path, bytes, sync);
    if (err) {
      // The directory may have been removed under us (spvdump clear, rm -rf): recreate it
      // once before giving up on the disk.
      if (prepare_device_dir(config.dir, fingerprint)) {
        disable_writes(*err);
        return false;
      }
      err = atomic_write(path, bytes, sync);
    }
    if (err) {
      disable_writes(*err);
      return false;
    }
    return true;
  }

  // The root for a tool operation; refuses an empty path rather than act on the cwd.
  const std::filesystem::path& root() const {
    if (config.dir.empty()) {
      throw std::runtime_error("[cache] no cache directory (set MLX_VK_CACHE_DIR)");
    }
    return config.dir;
  }

  void note_bad(const std::filesystem::path& path, const std::string& reason) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++counters.bad_entries;
    }
    warn_once("bad:" + path.string(), "ignoring " + path.string() + ": " + reason +
                                          " (a miss; the entry is replaced when stored again)");
  }

  // Keeps the root under the cap; cheap unless the running estimate says it may be over.
  void account_and_evict(uint64_t written_bytes) {
    if (config.max_bytes == 0) {
      return;
    }
    std::unique_lock<std::mutex> evicting(evict_mutex, std::try_to_lock);
    if (!evicting.owns_lock()) {
      return;  // another thread is already evicting
    }
    bool need_scan;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (estimated_bytes) {
        *estimated_bytes += written_bytes;
      }
      ++stores_since_scan;
      need_scan = !estimated_bytes || *estimated_bytes > config.max_bytes ||
                  stores_since_scan >= kStoresPerRescan;
    }
    if (!need_scan) {
      return;
    }
    auto files = scan(config.dir);
    uint64_t target = config.max_bytes / 100 * kLowWaterPercent;
    auto result = evict_lru(std::move(files), config.max_bytes, target,
                            pipeline_cache_path(config.dir, fp_hash), now_ms());
    std::lock_guard<std::mutex> lock(mutex);
    counters.evictions += result.removed;
    estimated_bytes = result.bytes_after;
    stores_since_scan = 0;
  }
};

DiskCache::DiskCache(std::unique_ptr<State> state) : s_(std::move(state)) {}
DiskCache::DiskCache(DiskCache&&) noexcept = default;
DiskCache& DiskCache::operator=(DiskCache&&) noexcept = default;
DiskCache::~DiskCache() = default;

DiskCache DiskCache::open(const std::string& fingerprint) {
  return open(config_from_env(), fingerprint);
}

DiskCache DiskCache::open(const CacheConfig& config, const std::string& fingerprint) {
  auto s = std::make_unique<State>();
  s->config = config;
  s->fingerprint = fingerprint;
  s->fp_hash = fingerprint_hash(fingerprint);
  return DiskCache(std::move(s));
}

std::optional<KernelEntry> DiskCache::load(uint64_t hash) {
  State& s = *s_;
  if (!s.runtime_enabled()) {
    return std::nullopt;
  }
  auto miss = [&]() -> std::optional<KernelEntry> {
    std::lock_guard<std::mutex> lock(s.mutex);
    ++s.counters.disk_misses;
    return std::nullopt;
  };
  try {
    auto path = kernel_path(s.config.dir, s.fp_hash, hash);
    std::string error;
    bool not_regular = false;
    auto bytes = read_file(path, error, kMaxFileBytes, &not_regular);
    if (!bytes) {
      if (not_regular) {
        s.note_bad(path, "not a regular file");
      } else if (!error.empty()) {
        warn_once("read:" + s.config.dir.string(),
                  error + "; such entries are misses (warned once)");
      }
      return miss();
    }
    KernelEntry entry;
    try {
      entry = decode_kernel(*bytes, s.fp_hash, hash);
      if (entry.fingerprint != s.fingerprint) {
        throw FormatError("written for another device (same fingerprint hash, other text)");
      }
    } catch (const FormatError& e) {
      s.note_bad(path, e.what());
      return miss();
    }
    entry.last_used_ms = mtime_ms(path).value_or(0);
    bool refresh;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      ++s.counters.disk_hits;
      refresh = s.config.mode == CacheMode::ReadWrite && s.touched.insert(hash).second;
    }
    if (refresh) {
      touch(path);
    }
    return entry;
  } catch (const std::exception& e) {
    warn_once("load:" + to_hex(hash), std::string("disk cache lookup failed: ") + e.what());
    return miss();
  }
}

void DiskCache::store(const KernelEntry& entry) {
  State& s = *s_;
  try {
    if (!s.can_write()) {
      return;
    }
    if (auto problem = spirv_problem(entry.spirv)) {
      warn_once("store:" + to_hex(entry.hash),
                "not storing kernel " + entry.key + ": SPIR-V " + *problem);
      std::lock_guard<std::mutex> lock(s.mutex);
      ++s.counters.store_failures;
      return;
    }
    KernelEntry copy = entry;
    if (copy.created_ms == 0) {
      copy.created_ms = now_ms();
    }
    auto bytes = encode_kernel(copy, s.fingerprint);
    if (!s.write(kernel_path(s.config.dir, s.fp_hash, entry.hash), bytes, false)) {
      return;
    }
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      ++s.counters.stores;
      s.touched.insert(entry.hash);  // just written: its mtime is already now
    }
    s.account_and_evict(bytes.size());
  } catch (const std::exception& e) {
    warn_once("store:" + to_hex(entry.hash), "not storing kernel " + entry.key + ": " + e.what());
  }
}

std::optional<std::vector<uint8_t>> DiskCache::load_pipeline_cache() {
  State& s = *s_;
  if (!s.runtime_enabled()) {
    return std::nullopt;
  }
  try {
    auto path = pipeline_cache_path(s.config.dir, s.fp_hash);
    std::string error;
    bool not_regular = false;
    auto bytes = read_file(path, error, kMaxFileBytes, &not_regular);
    if (!bytes) {
      if (not_regular) {
        s.note_bad(path, "not a regular file");
      } else if (!error.empty()) {
        warn_once("read:" + s.config.dir.string(),
                  error + "; such entries are misses (warned once)");
      }
      return std::nullopt;
    }
    PipelineCacheFile file;
    try {
      file = decode_pipeline_cache(*bytes, s.fp_hash);
      if (file.fingerprint != s.fingerprint) {
        throw FormatError("written for another device (same fingerprint hash, other text)");
      }
    } catch (const FormatError& e) {
      s.note_bad(path, e.what());
      return std::nullopt;
    }
    std::lock_guard<std::mutex> lock(s.mutex);
    ++s.counters.pipeline_cache_loads;
    return std::move(file.data);
  } catch (const std::exception& e) {
    warn_once("load:pipeline", std::string("pipeline-cache lookup failed: ") + e.what());
    return std::nullopt;
  }
}

void DiskCache::store_pipeline_cache(std::span<const uint8_t> data) {
  State& s = *s_;
  try {
    if (!s.can_write()) {
      return;
    }
    if (auto problem = pipeline_cache_problem(data)) {
      warn_once("store:pipeline", "not storing pipeline-cache data: " + *problem);
      return;
    }
    auto bytes = encode_pipeline_cache(data, s.fingerprint);
    // fsync: this blob is rewritten rarely and holds every pipeline of the process.
    if (!s.write(pipeline_cache_path(s.config.dir, s.fp_hash), bytes, true)) {
      return;
    }
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      ++s.counters.pipeline_cache_stores;
    }
    s.account_and_evict(bytes.size());
  } catch (const std::exception& e) {
    warn_once("store:pipeline", std::string("not storing pipeline-cache data: ") + e.what());
  }
}

std::vector<KernelEntry> DiskCache::list(std::vector<BadFile>* bad) const {
  std::vector<KernelEntry> entries;
  for (const auto& f : scan(s_->root())) {
    if (f.role != FileRole::Kernel) {
      continue;
    }
    std::string error;
    auto bytes = read_file(f.path, error);
    if (!bytes) {
      if (bad && !error.empty()) {  // an empty error: removed since the scan
        bad->push_back({f.path.string(), error});
      }
      continue;
    }
    try {
      KernelEntry e = decode_kernel(*bytes, f.fingerprint_hash, f.key_hash);
      e.last_used_ms = f.mtime_ms;
      entries.push_back(std::move(e));
    } catch (const FormatError& e) {
      if (bad) {
        bad->push_back({f.path.string(), e.what()});
      }
    }
  }
  std::sort(entries.begin(), entries.end(), [](const KernelEntry& a, const KernelEntry& b) {
    return std::tie(a.fingerprint, a.key, a.hash) < std::tie(b.fingerprint, b.key, b.hash);
  });
  return entries;
}

VerifyReport DiskCache::verify(bool remove_bad) const {
  VerifyReport report;
  int64_t now = now_ms();
  for (const auto& f : scan(s_->root())) {
    std::error_code ec;
    if (f.role == FileRole::Temp) {
      // Left by a writer that died; young ones may belong to a live writer.
      if (remove_bad && now - f.mtime_ms > kStaleTempMs && std::filesystem::remove(f.path, ec)) {
        ++report.removed;
      }
      continue;
    }
    std::string error;
    auto bytes = read_file(f.path, error,
                           f.role == FileRole::Fingerprint ? kMaxFingerprintBytes : kMaxFileBytes);
    if (!bytes && error.empty()) {
      continue;  // removed since the scan
    }
    ++report.checked;
    std::optional<std::string> problem;
    if (!bytes) {
      problem = error;  // not a regular file, too large, unreadable
    } else if (f.role == FileRole::Fingerprint) {
      if (!read_fingerprint(s_->config.dir, f.fingerprint_hash)) {
        problem = "does not hold the fingerprint its directory is named after";
      }
    } else if (f.role == FileRole::Tuning) {
      problem = tuning_problem(std::string(bytes->begin(), bytes->end()));
    } else {
      try {
        if (f.role == FileRole::Kernel) {
          decode_kernel(*bytes, f.fingerprint_hash, f.key_hash);
        } else {
          decode_pipeline_cache(*bytes, f.fingerprint_hash);
        }
      } catch (const FormatError& e) {
        problem = e.what();
      }
    }
    if (!problem) {
      ++report.ok;
      continue;
    }
    report.bad.push_back({f.path.string(), *problem});
    if (remove_bad && std::filesystem::remove(f.path, ec)) {
      ++report.removed;
    }
  }
  return report;
}

uint64_t DiskCache::clear() {
  uint64_t removed = 0;
  std::error_code ec;
  for (const auto& f : scan(s_->root())) {
    if (std::filesystem::remove(f.path, ec)) {
      ++removed;
    } else if (ec) {
      throw std::runtime_error("[cache] cannot remove " + f.path.string() + ": " + ec.message());
    }
    // A device directory goes once it is empty; one holding files of others stays.
    std::filesystem::remove(f.path.parent_path(), ec);
  }
  std::filesystem::remove(s_->config.dir / "CACHEDIR.TAG", ec);
  std::lock_guard<std::mutex> lock(s_->mutex);
  s_->dir_ready = false;
  s_->estimated_bytes.reset();
  s_->touched.clear();
  return removed;
}

CacheStats DiskCache::stats() const {
  CacheStats out;
  {
    std::lock_guard<std::mutex> lock(s_->mutex);
    out = s_->counters;
  }
  for (const auto& f : scan(s_->config.dir)) {
    out.bytes_on_disk += f.size;
    out.kernel_files += f.role == FileRole::Kernel && f.regular;
  }
  return out;
}

ExportReport DiskCache::export_bundle(const std::filesystem::path& bundle) const {
  return cache::export_bundle(s_->root(), bundle);
}

ImportReport DiskCache::import_bundle(const std::filesystem::path& bundle) {
  ImportReport report = cache::import_bundle(s_->root(), bundle, s_->fingerprint);
  std::lock_guard<std::mutex> lock(s_->mutex);
  s_->estimated_bytes.reset();  // the next store rescans and applies the cap
  return report;
}

const CacheConfig& DiskCache::config() const {
  return s_->config;
}

const std::string& DiskCache::fingerprint() const {
  return s_->fingerprint;
}

bool DiskCache::readable() const {
  return s_->runtime_enabled();
}

bool DiskCache::writable() const {
  std::lock_guard<std::mutex> lock(s_->mutex);
  return s_->runtime_enabled() && s_->config.mode == CacheMode::ReadWrite && !s_->write_failed;
}

}  // namespace mlx::core::vulkan::cache
