// DiskCache on the computation's path: hits, misses, every bad-file mode, modes, stats.
#include <doctest/doctest.h>

#include <sys/resource.h>

#include <csignal>
#include <cstring>
#include <set>

#include "cache/disk_cache.h"
#include "cache/hash.h"
#include "cache/layout.h"
#include "cache_test_utils.h"

using namespace cache_test;

namespace {

fs::path entry_path(const fs::path& root, const std::string& device, uint64_t hash) {
  return kernel_path(root, fingerprint_hash(device), hash);
}

size_t count_containing(const std::vector<std::string>& lines, const std::string& text) {
  size_t n = 0;
  for (const auto& l : lines) {
    n += l.find(text) != std::string::npos;
  }
  return n;
}

}  // namespace

TEST_CASE("stored kernel is loaded back intact from a new cache object") {
  TempDir tmp;
  {
    auto cache = DiskCache::open(config_for(tmp.path()), kDeviceA);
    cache.store(make_entry(1, 3));
    CHECK(cache.stats().stores == 1);
  }
  auto cache = DiskCache::open(config_for(tmp.path()), kDeviceA);
  auto e = cache.load(1);
  REQUIRE(e.has_value());
  CHECK(is_whole_entry(*e, 1));
  CHECK(e->fingerprint == kDeviceA);
  CHECK(e->glsl == make_entry(1).glsl);
  CHECK(e->last_used_ms > 0);
  CHECK_FALSE(cache.load(2).has_value());
  auto s = cache.stats();
  CHECK(s.disk_hits == 1);
  CHECK(s.disk_misses == 1);
  CHECK(s.bad_entries == 0);
  CHECK(s.kernel_files == 1);
  CHECK(s.bytes_on_disk >= fs::file_size(entry_path(tmp.path(), kDeviceA, 1)));
}

TEST_CASE("store fills in the creation time when the caller left it zero") {
  TempDir tmp;
  auto cache = DiskCache::open(config_for(tmp.path()), kDeviceA);
  KernelEntry e = make_entry(9);
  e.created_ms = 0;
  cache.store(e);
  auto back = cache.load(9);
  REQUIRE(back.has_value());
  CHECK(back->created_ms > 1600000000000);  // after 2020: a real clock reading
}

TEST_CASE("missing cache directory is created on demand with its tag and fingerprint") {
  TempDir tmp;
  fs::path root = tmp.path() / "a" / "b" / "cache";
  auto cache = DiskCache::open(config_for(root), kDeviceA);
  CHECK_FALSE(cache.load(1).has_value());  // a miss, and no warning for a missing dir
  CHECK_FALSE(fs::exists(root));           // lookups never create anything
  cache.store(make_entry(1));
  CHECK(fs::exists(entry_path(root, kDeviceA, 1)));
  CHECK(fs::exists(root / "CACHEDIR.TAG"));
  CHECK(read_fingerprint(root, fingerprint_hash(kDeviceA)) == kDeviceA);
  CHECK(cache.load(1).has_value());
}

TEST_CASE("every kind of bad entry is a miss, warned once, and replaced by the next store") {
  struct Case {
    const char* name;
    const char* reason;
    std::function<void(const fs::path& root, const fs::path& file)> spoil;
  };
  const uint64_t kHash = 0x77;
  std::vector<Case> cases = {
      {"corrupt payload byte", "checksum",
       [](const fs::path&, const fs::path& f) {
         auto b = read_bytes(f);
         b[b.size() / 2] ^= 0x01;
         write_bytes(f, b);
       }},
      {"truncated payload", "truncated",
       [](const fs::path&, const fs::path& f) { fs::resize_file(f, fs::file_size(f) - 17); }},
      {"truncated inside the header", "truncated",
       [](const fs::path&, const fs::path& f) { fs::resize_file(f, 20); }},
      {"empty file", "truncated", [](const fs::path&, const fs::path& f) { write_bytes(f, {}); }},
      {"wrong magic", "wrong magic",
       [](const fs::path&, const fs::path& f) {
         auto b = read_bytes(f);
         std::memcpy(b.data(), "NOTOURS!", 8);
         write_bytes(f, b);
       }},
      {"wrong version", "format version",
       [](const fs::path&, const fs::path& f) {
         auto b = read_bytes(f);
         b[8] = 9;
         write_bytes(f, b);
       }},
      {"wrong fingerprint", "another device",
       [kHash](const fs::path& root, const fs::path& f) {
         // A complete, valid entry of device B placed where device A looks.
         auto other = DiskCache::open(config_for(root / "other"), kDeviceB);
         other.store(make_entry(kHash));
         fs::copy_file(entry_path(root / "other", kDeviceB, kHash), f,
                       fs::copy_options::overwrite_existing);
       }},
      {"wrong key hash", "key hash mismatch",
       [kHash](const fs::path& root, const fs::path& f) {
         // A valid entry of another kernel under this kernel's name.
         auto same = DiskCache::open(config_for(root), kDeviceA);
         same.store(make_entry(kHash + 1));
         fs::copy_file(entry_path(root, kDeviceA, kHash + 1), f,
                       fs::copy_options::overwrite_existing);
       }},
      {"header of one entry with the payload of another", "checksum",
       [kHash](const fs::path&, const fs::path& f) {
         // Same sizes, different words: what a torn write of two writers would produce.
         auto a = encode_kernel(make_entry(kHash, 0), kDeviceA);
         auto b = encode_kernel(make_entry(kHash, 1), kDeviceA);
         REQUIRE(a.size() == b.size());
         std::copy(b.begin() + kHeaderSize, b.end(), a.begin() + kHeaderSize);
         write_bytes(f, a);
       }},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    TempDir tmp;
    WarningCapture warnings;
    fs::path file = entry_path(tmp.path(), kDeviceA, kHash);
    {
      auto writer = DiskCache::open(config_for(tmp.path()), kDeviceA);
      writer.store(make_entry(kHash));
    }
    c.spoil(tmp.path(), file);

    auto cache = DiskCache::open(config_for(tmp.path()), kDeviceA);
    CHECK_FALSE(cache.load(kHash).has_value());
    CHECK_FALSE(cache.load(kHash).has_value());
    auto s = cache.stats();
    CHECK(s.disk_misses == 2);
    CHECK(s.bad_entries == 2);
    CHECK(s.disk_hits == 0);
    // Reported once per process per file, naming the file and the reason.
    CHECK(count_containing(warnings.lines, file.string()) == 1);
    CHECK(count_containing(warnings.lines, c.reason) == 1);

    cache.store(make_entry(kHash, 2));
    auto back = cache.load(kHash);
    REQUIRE(back.has_value());
    CHECK(is_whole_entry(*back, kHash));
    CHECK(back->spirv[5] == 2);
  }
}

TEST_CASE("bad pipeline-cache files are misses and a good one round trips") {
  TempDir tmp;
  WarningCapture warnings;
  auto cache = DiskCache::open(config_for(tmp.path()), kDeviceA);
  CHECK_FALSE(cache.load_pipeline_cache().has_value());

  auto blob = make_pipeline_blob(0x5a, 4000);
  cache.store_pipeline_cache(blob);
  CHECK(cache.load_pipeline_cache() == blob);

  fs::path file = pipeline_cache_path(tmp.path(), fingerprint_hash(kDeviceA));
  auto bytes = read_bytes(file);
  bytes[kHeaderSize + 100] ^= 0xff;
  write_bytes(file, bytes);
  CHECK_FALSE(cache.load_pipeline_cache().has_value());
  CHECK(cache.stats().bad_entries == 1);
  CHECK(count_containing(warnings.lines, "checksum") == 1);

  // Device B's blob in device A's place: never handed to A's driver.
  auto other = DiskCache::open(config_for(tmp.path()), kDeviceB);
  other.store_pipeline_cache(make_pipeline_blob(0x11));
  fs::copy_file(pipeline_cache_path(tmp.path(), fingerprint_hash(kDeviceB)), file,
                fs::copy_options::overwrite_existing);
  CHECK_FALSE(cache.load_pipeline_cache().has_value());

  cache.store_pipeline_cache(blob);
  CHECK(cache.load_pipeline_cache() == blob);
  auto s = cache.stats();
  CHECK(s.pipeline_cache_stores == 2);
  CHECK(s.pipeline_cache_loads == 2);
}

TEST_CASE("malformed data is never written: bad SPIR-V and bad pipeline-cache headers") {
  TempDir tmp;
  WarningCapture warnings;
  auto cache = DiskCache::open(config_for(tmp.path()), kDeviceA);
  KernelEntry bad = make_entry(3);
  bad.spirv[0] = 0;
  cache.store(bad);
  CHECK_FALSE(fs::exists(entry_path(tmp.path(), kDeviceA, 3)));
  cache.store_pipeline_cache(std::vector<uint8_t>(8, 0));
  CHECK_FALSE(cache.load_pipeline_cache().has_value());
  CHECK(warnings.lines.size() == 2);
  CHECK(cache.writable());  // refusing one entry does not disable the cache
}

TEST_CASE("MLX_VK_CACHE=off touches nothing and readonly never writes") {
  TempDir tmp;
  {
    auto off = DiskCache::open(config_for(tmp.path() / "off", 0, CacheMode::Off), kDeviceA);
    off.store(make_entry(1));
    off.store_pipeline_cache(make_pipeline_blob(1));
    CHECK_FALSE(off.load(1).has_value());
    CHECK_FALSE(off.readable());
    CHECK_FALSE(fs::exists(tmp.path() / "off"));
    CHECK(off.stats().disk_misses == 0);  // no disk, so no disk miss either
  }
  auto rw = DiskCache::open(config_for(tmp.path()), kDeviceA);
  rw.store(make_entry(1));
  fs::path file = entry_path(tmp.path(), kDeviceA, 1);
  auto old_time = fs::file_time_type::clock::now() - std::chrono::hours(24);
  fs::last_write_time(file, old_time);

  WarningCapture warnings;
  auto ro = DiskCache::open(config_for(tmp.path(), 0, CacheMode::ReadOnly), kDeviceA);
  CHECK(ro.load(1).has_value());
  CHECK(fs::last_write_time(file) == old_time);  // not even the LRU time changes
  ro.store(make_entry(2));
  ro.store_pipeline_cache(make_pipeline_blob(2));
  CHECK_FALSE(fs::exists(entry_path(tmp.path(), kDeviceA, 2)));
  CHECK_FALSE(fs::exists(pipeline_cache_path(tmp.path(), fingerprint_hash(kDeviceA))));
  CHECK(warnings.lines.empty());
  CHECK_FALSE(ro.writable());
  CHECK(ro.readable());
}

TEST_CASE("empty fingerprint opens the root for tools only") {
  TempDir tmp;
  auto rw = DiskCache::open(config_for(tmp.path()), kDeviceA);
  rw.store(make_entry(1));
  auto tool = DiskCache::open(config_for(tmp.path()), "");
  CHECK_FALSE(tool.load(1).has_value());
  tool.store(make_entry(2));
  CHECK_FALSE(fs::exists(entry_path(tmp.path(), "", 2)));
  CHECK(tool.list().size() == 1);
}

TEST_CASE("a hit refreshes the LRU time once per process per entry") {
  TempDir tmp;
  auto writer = DiskCache::open(config_for(tmp.path()), kDeviceA);
  writer.store(make_entry(1));
  fs::path file = entry_path(tmp.path(), kDeviceA, 1);
  auto old_time = fs::file_time_type::clock::now() - std::chrono::hours(24);
  fs::last_write_time(file, old_time);

  auto cache = DiskCache::open(config_for(tmp.path()), kDeviceA);
  REQUIRE(cache.load(1).has_value());
  auto refreshed = fs::last_write_time(file);
  CHECK(refreshed > old_time + std::chrono::hours(23));
  fs::last_write_time(file, old_time);
  REQUIRE(cache.load(1).has_value());
  CHECK(fs::last_write_time(file) == old_time);  // second hit: no second write
}

TEST_CASE("a parent that is a regular file degrades to no disk cache with one warning") {
  // Works as root too, where chmod cannot make a directory unwritable.
  TempDir tmp;
  write_bytes(tmp.path() / "file", {1, 2, 3});
  WarningCapture warnings;
  auto cache = DiskCache::open(config_for(tmp.path() / "file" / "cache"), kDeviceA);
  CHECK_FALSE(cache.load(1).has_value());
  cache.store(make_entry(1));
  cache.store(make_entry(2));
  cache.store_pipeline_cache(make_pipeline_blob(1));
  CHECK_FALSE(cache.load(1).has_value());
  CHECK_FALSE(cache.load_pipeline_cache().has_value());
  CHECK(warnings.lines.size() == 1);
  CHECK(count_containing(warnings.lines, "continuing without storing") == 1);
  CHECK_FALSE(cache.writable());
  auto s = cache.stats();
  CHECK(s.stores == 0);
  CHECK(s.store_failures == 3);
  CHECK(s.disk_misses == 2);
}

TEST_CASE("a read-only directory keeps serving hits and refuses writes with one warning") {
  TempDir tmp;
  fs::path root = tmp.path() / "cache";
  {
    auto cache = DiskCache::open(config_for(root), kDeviceA);
    cache.store(make_entry(1));
  }
  fs::permissions(root, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                            fs::perms::group_exec | fs::perms::others_read |
                            fs::perms::others_exec);
  fs::path device = root / to_hex(fingerprint_hash(kDeviceA));
  fs::permissions(device, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                              fs::perms::group_exec | fs::perms::others_read |
                              fs::perms::others_exec);
  // As root, permissions do not stop writes, so the child drops to an unprivileged user
  // (nobody, 65534) first; the test directory must be reachable by it.
  bool as_root = ::geteuid() == 0;
  if (as_root) {
    fs::permissions(tmp.path(), fs::perms::others_read | fs::perms::others_exec,
                    fs::perm_options::add);
  }
  int rc = run_in_child([&]() -> int {
    if (as_root && (::setgid(65534) != 0 || ::setuid(65534) != 0)) {
      return 10;
    }
    WarningCapture warnings;
    auto cache = DiskCache::open(config_for(root), kDeviceA);
    auto hit = cache.load(1);
    if (!hit || !is_whole_entry(*hit, 1)) {
      return 11;
    }
    cache.store(make_entry(2));
    cache.store(make_entry(3));
    if (cache.writable()) {
      return 12;
    }
    if (warnings.lines.size() != 1) {
      return 13;
    }
    if (fs::exists(entry_path(root, kDeviceA, 2)) || cache.stats().store_failures != 2) {
      return 14;
    }
    if (!cache.load(1)) {
      return 15;
    }
    return 0;
  });
  CHECK(rc == 0);
  // Nothing was left behind by the failed writes.
  size_t files = 0;
  for (auto& f : fs::directory_iterator(device)) {
    files += f.is_regular_file();
  }
  CHECK(files == 2);  // the entry and fingerprint.txt
}

TEST_CASE("a full disk during a write leaves no file behind and warns once") {
  // RLIMIT_FSIZE makes write() fail part-way (EFBIG), the same path as ENOSPC, in a
  // child so that the limit does not leak into the test process.
  TempDir tmp;
  fs::path root = tmp.path() / "cache";
  {
    auto cache = DiskCache::open(config_for(root), kDeviceA);
    cache.store(make_entry(1));  // the directory exists; only the write will fail
  }
  int rc = run_in_child([&]() -> int {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = {1000, 1000};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) {
      return 10;
    }
    WarningCapture warnings;
    auto cache = DiskCache::open(config_for(root), kDeviceA);
    cache.store(make_entry(2, 0, 2000));  // ~8 KB: larger than the limit
    cache.store(make_entry(3, 0, 2000));
    if (warnings.lines.size() != 1 || cache.writable()) {
      return 11;
    }
    if (cache.load(2) || cache.stats().stores != 0) {
      return 12;
    }
    return cache.load(1) ? 0 : 13;
  });
  CHECK(rc == 0);
  for (auto& f : scan(root)) {
    CHECK(f.role != FileRole::Temp);
    CHECK(f.key_hash != 2);
  }
}

TEST_CASE("a cache directory removed while in use is recreated by the next store") {
  TempDir tmp;
  WarningCapture warnings;
  auto cache = DiskCache::open(config_for(tmp.path() / "c"), kDeviceA);
  cache.store(make_entry(1));
  fs::remove_all(tmp.path() / "c");
  cache.store(make_entry(2));
  CHECK(cache.load(2).has_value());
  CHECK(warnings.lines.empty());
}

TEST_CASE("verify reports bad files with reasons and removes them when asked") {
  TempDir tmp;
  auto cache = DiskCache::open(config_for(tmp.path()), kDeviceA);
  for (uint64_t h = 1; h <= 4; ++h) {
    cache.store(make_entry(h));
  }
  cache.store_pipeline_cache(make_pipeline_blob(3));
  fs::resize_file(entry_path(tmp.path(), kDeviceA, 2), 100);
  fs::path device = tmp.path() / to_hex(fingerprint_hash(kDeviceA));
  fs::copy_file(entry_path(tmp.path(), kDeviceA, 3), entry_path(tmp.path(), kDeviceA, 5));
  write_bytes(device / "notes.txt", {'h', 'i'});  // not ours: ignored, kept
  write_bytes(device / ".tmp-x.kernel-1-1", {0});
  write_bytes(device / ".tmp-y.kernel-1-2", {0});
  fs::last_write_time(device / ".tmp-y.kernel-1-2",
                      fs::file_time_type::clock::now() - std::chrono::hours(2));

  auto report = cache.verify(false);
  CHECK(report.checked == 7);  // 5 kernels, pipeline cache, fingerprint.txt
  CHECK(report.ok == 5);
  REQUIRE(report.bad.size() == 2);
  CHECK(report.bad[0].path == entry_path(tmp.path(), kDeviceA, 2).string());
  CHECK(report.bad[0].reason.find("truncated") != std::string::npos);
  CHECK(report.bad[1].reason.find("key hash") != std::string::npos);
  CHECK(report.removed == 0);

  report = cache.verify(true);
  CHECK(report.removed == 3);  // two bad entries and the stale temp file
  CHECK(cache.verify(false).bad.empty());
  CHECK(fs::exists(device / "notes.txt"));
  CHECK(fs::exists(device / ".tmp-x.kernel-1-1"));  // young: may belong to a live writer
  CHECK(cache.list().size() == 3);
}

TEST_CASE("clear removes our files and keeps files that are not ours") {
  TempDir tmp;
  auto a = DiskCache::open(config_for(tmp.path()), kDeviceA);
  auto b = DiskCache::open(config_for(tmp.path()), kDeviceB);
  a.store(make_entry(1));
  a.store_pipeline_cache(make_pipeline_blob(1));
  b.store(make_entry(2));
  write_bytes(tmp.path() / "mine.txt", {1});
  CHECK(a.clear() == 5);  // 2 kernels, 1 pipeline cache, 2 fingerprint files
  CHECK(a.list().empty());
  CHECK(fs::exists(tmp.path() / "mine.txt"));
  CHECK_FALSE(fs::exists(tmp.path() / to_hex(fingerprint_hash(kDeviceA))));
  CHECK_FALSE(fs::exists(tmp.path() / "CACHEDIR.TAG"));
  a.store(make_entry(3));  // usable right after
  CHECK(a.load(3).has_value());
}

TEST_CASE("list returns every device's valid entries with metadata") {
  TempDir tmp;
  auto a = DiskCache::open(config_for(tmp.path()), kDeviceA);
  auto b = DiskCache::open(config_for(tmp.path()), kDeviceB);
  a.store(make_entry(1));
  a.store(make_entry(2));
  b.store(make_entry(1));
  fs::resize_file(entry_path(tmp.path(), kDeviceA, 2), 10);
  auto entries = a.list();
  REQUIRE(entries.size() == 2);
  std::set<std::string> devices = {entries[0].fingerprint, entries[1].fingerprint};
  CHECK(devices == std::set<std::string>{kDeviceA, kDeviceB});
  for (const auto& e : entries) {
    CHECK(is_whole_entry(e, 1));
    CHECK(e.last_used_ms > 0);
  }
}

TEST_CASE("tool operations refuse an empty root instead of acting on the working directory") {
  CacheConfig config;
  config.mode = CacheMode::ReadWrite;
  auto cache = DiskCache::open(config, kDeviceA);
  CHECK_THROWS_WITH_AS(cache.clear(), doctest::Contains("[cache] no cache directory"),
                       std::runtime_error);
  CHECK_FALSE(cache.readable());
  cache.store(make_entry(1));  // silently nothing
  CHECK_FALSE(fs::exists(fs::path(to_hex(fingerprint_hash(kDeviceA)))));
}
