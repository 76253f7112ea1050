// The size cap: least-recently-used entries go first, and some files never go.
#include <doctest/doctest.h>

#include "cache/disk_cache.h"
#include "cache/eviction.h"
#include "cache/file_io.h"
#include "cache/hash.h"
#include "cache/layout.h"
#include "cache_test_utils.h"

using namespace cache_test;

namespace {

fs::path entry_path(const fs::path& root, uint64_t hash) {
  return kernel_path(root, fingerprint_hash(kDeviceA), hash);
}

void age(const fs::path& file, int minutes_ago) {
  fs::last_write_time(file, fs::file_time_type::clock::now() - std::chrono::minutes(minutes_ago));
}

}  // namespace

TEST_CASE("size cap evicts the least recently used entries and keeps a recent hit") {
  TempDir tmp;
  // Entries 0..7 stored long ago, oldest first (entry 0 is the oldest).
  {
    auto filler = DiskCache::open(config_for(tmp.path()), kDeviceA);
    for (uint64_t h = 0; h < 8; ++h) {
      filler.store(make_entry(h));
    }
  }
  for (uint64_t h = 0; h < 8; ++h) {
    age(entry_path(tmp.path(), h), 100 - static_cast<int>(h));
  }
  const uint64_t entry_size = fs::file_size(entry_path(tmp.path(), 0));
  // Room for 10.5 entries (fingerprint.txt takes a few bytes of the half).
  const uint64_t cap = entry_size * 21 / 2;
  auto cache = DiskCache::open(config_for(tmp.path(), cap), kDeviceA);
  REQUIRE(cache.load(0).has_value());  // entry 0 becomes the most recently used

  cache.store(make_entry(8));  // 9 entries: under the cap
  cache.store(make_entry(9));  // 10: still under
  CHECK(cache.stats().evictions == 0);
  cache.store(make_entry(10));  // 11 > 10.5: evict down to 75% of the cap, 7 entries
  auto s = cache.stats();
  CHECK(s.evictions == 4);
  CHECK(s.bytes_on_disk <= cap * 3 / 4);
  // The four least recently used go: 1, 2, 3, 4. Entry 0 was hit, so it stays.
  for (uint64_t h = 0; h <= 10; ++h) {
    CAPTURE(h);
    bool expect_present = h == 0 || h >= 5;
    CHECK(fs::exists(entry_path(tmp.path(), h)) == expect_present);
  }
  CHECK(cache.load(0).has_value());
  CHECK_FALSE(cache.load(1).has_value());
}

TEST_CASE("eviction never removes this device's pipeline cache or fingerprint file") {
  TempDir tmp;
  auto filler = DiskCache::open(config_for(tmp.path()), kDeviceA);
  filler.store_pipeline_cache(make_pipeline_blob(1, 20000));
  auto other = DiskCache::open(config_for(tmp.path()), kDeviceB);
  other.store_pipeline_cache(make_pipeline_blob(2, 20000));
  fs::path mine = pipeline_cache_path(tmp.path(), fingerprint_hash(kDeviceA));
  fs::path theirs = pipeline_cache_path(tmp.path(), fingerprint_hash(kDeviceB));
  age(mine, 500);  // older than everything: still kept
  age(theirs, 400);

  auto cache = DiskCache::open(config_for(tmp.path(), 30000), kDeviceA);
  for (uint64_t h = 0; h < 10; ++h) {
    cache.store(make_entry(h));  // ~1.3 KB each
  }
  CHECK(fs::exists(mine));
  CHECK_FALSE(fs::exists(theirs));  // another device's blob is fair game
  CHECK(fs::exists(fingerprint_path(tmp.path(), fingerprint_hash(kDeviceA))));
  CHECK(cache.load_pipeline_cache().has_value());
  CHECK(cache.stats().bytes_on_disk <= 30000);
}

TEST_CASE("evict_lru removes stale temp files and leaves young ones") {
  TempDir tmp;
  fs::create_directories(tmp.path() / "0000000000000001");
  fs::path old_tmp = tmp.path() / "0000000000000001" / ".tmp-a.kernel-1-1";
  fs::path new_tmp = tmp.path() / "0000000000000001" / ".tmp-b.kernel-1-2";
  write_bytes(old_tmp, {1});
  write_bytes(new_tmp, {1});
  age(old_tmp, 120);
  auto files = scan(tmp.path());
  REQUIRE(files.size() == 2);
  auto result = evict_lru(files, 1000, 750, {}, now_ms());
  CHECK(result.removed == 0);  // temp files are not evictions
  CHECK_FALSE(fs::exists(old_tmp));
  CHECK(fs::exists(new_tmp));
}

TEST_CASE("a cap of zero means no cap") {
  TempDir tmp;
  auto cache = DiskCache::open(config_for(tmp.path(), 0), kDeviceA);
  for (uint64_t h = 0; h < 20; ++h) {
    cache.store(make_entry(h));
  }
  CHECK(cache.stats().evictions == 0);
  CHECK(cache.stats().kernel_files == 20);
}
