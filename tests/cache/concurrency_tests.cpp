// Several processes filling one cache: no reader ever sees a torn or mixed entry, and
// every file validates afterwards.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "cache/disk_cache.h"
#include "cache/layout.h"
#include "cache_test_utils.h"

using namespace cache_test;

namespace {

constexpr int kWriters = 4;
constexpr int kIterations = 150;
constexpr uint64_t kDistinct = 12;

// Child i stores entry (j*7+i) % kDistinct with its own writer id, so the same files are
// replaced again and again by different processes; it also rewrites the pipeline cache.
std::vector<pid_t> start_writers(const CacheConfig& config) {
  std::vector<pid_t> pids;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = ::fork();
    if (pid == 0) {
      int code = 0;
      {
        auto cache = DiskCache::open(config, kDeviceA);
        for (int j = 0; j < kIterations; ++j) {
          uint64_t hash = (j * 7 + w) % kDistinct + 1;
          // Different writers write different lengths too: a mix could not hide.
          cache.store(make_entry(hash, static_cast<uint32_t>(w + 1), 200 + 50 * w));
          if (j % 25 == 0) {
            cache.store_pipeline_cache(make_pipeline_blob(static_cast<uint8_t>(w), 3000));
          }
          if (auto e = cache.load((j * 5) % kDistinct + 1)) {
            code |= is_whole_entry(*e, e->hash) ? 0 : 1;
          }
        }
        auto s = cache.stats();
        code |= s.bad_entries != 0 ? 2 : 0;
        code |= s.store_failures != 0 ? 4 : 0;
      }
      ::_exit(code);
    }
    pids.push_back(pid);
  }
  return pids;
}

struct ReaderResult {
  uint64_t hits = 0;
  uint64_t torn = 0;
};

// The parent reads every entry in a loop until all writers have exited.
ReaderResult read_while_writing(const CacheConfig& config, std::vector<pid_t> pids,
                                std::vector<int>& exit_codes) {
  ReaderResult r;
  auto cache = DiskCache::open(config, kDeviceA);
  while (!pids.empty()) {
    for (uint64_t h = 1; h <= kDistinct; ++h) {
      if (auto e = cache.load(h)) {
        ++r.hits;
        r.torn += !is_whole_entry(*e, h);
      }
    }
    if (auto blob = cache.load_pipeline_cache()) {
      r.torn += blob->size() != 32 + 3000;
    }
    for (auto it = pids.begin(); it != pids.end();) {
      int status = 0;
      if (::waitpid(*it, &status, WNOHANG) == *it) {
        exit_codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        it = pids.erase(it);
      } else {
        ++it;
      }
    }
  }
  r.torn += cache.stats().bad_entries;
  return r;
}

}  // namespace

TEST_CASE("writers in several processes never produce a torn or mixed entry") {
  TempDir tmp;
  WarningCapture warnings;
  CacheConfig config = config_for(tmp.path());
  std::vector<int> exit_codes;
  auto result = read_while_writing(config, start_writers(config), exit_codes);

  CHECK(exit_codes == std::vector<int>(kWriters, 0));
  CHECK(result.torn == 0);
  CHECK(result.hits > 0);
  CHECK(warnings.lines.empty());

  auto cache = DiskCache::open(config, kDeviceA);
  auto report = cache.verify(false);
  CHECK(report.bad.empty());
  CHECK(report.ok == kDistinct + 2);  // every entry, the pipeline cache, fingerprint.txt
  for (uint64_t h = 1; h <= kDistinct; ++h) {
    auto e = cache.load(h);
    REQUIRE(e.has_value());
    CHECK(is_whole_entry(*e, h));
  }
  for (const auto& f : scan(tmp.path())) {
    CHECK(f.role != FileRole::Temp);  // every temp file was renamed or removed
  }
}

TEST_CASE("concurrent writers under a tight size cap keep every surviving file valid") {
  TempDir tmp;
  WarningCapture warnings;
  // Room for about five entries: the processes evict each other's files constantly.
  CacheConfig config = config_for(tmp.path(), 8000);
  std::vector<int> exit_codes;
  auto result = read_while_writing(config, start_writers(config), exit_codes);

  CHECK(exit_codes == std::vector<int>(kWriters, 0));
  CHECK(result.torn == 0);
  CHECK(warnings.lines.empty());
  auto cache = DiskCache::open(config, kDeviceA);
  CHECK(cache.verify(false).bad.empty());
}

TEST_CASE("threads sharing one DiskCache object store and load without losing counts") {
  TempDir tmp;
  WarningCapture warnings;
  auto cache = DiskCache::open(config_for(tmp.path()), kDeviceA);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 40;
  std::atomic<int> torn{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int j = 0; j < kPerThread; ++j) {
        uint64_t hash = (j * 3 + t) % kDistinct + 1;
        cache.store(make_entry(hash, static_cast<uint32_t>(t + 1)));
        if (auto e = cache.load(hash)) {
          torn += !is_whole_entry(*e, hash);
        }
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  auto s = cache.stats();
  CHECK(torn == 0);
  CHECK(s.stores == kThreads * kPerThread);
  CHECK(s.disk_hits + s.disk_misses == kThreads * kPerThread);
  CHECK(s.disk_hits == kThreads * kPerThread);  // each load follows its own store
  CHECK(warnings.lines.empty());
  CHECK(cache.verify(false).bad.empty());
}
