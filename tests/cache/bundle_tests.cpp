// Bundles: export a cache, clear it, import it (here or on "another machine").
#include <doctest/doctest.h>

#include <map>

#include "cache/disk_cache.h"
#include "cache/hash.h"
#include "cache/layout.h"
#include "cache_test_utils.h"

using namespace cache_test;

namespace {

// Device A: kernels 1..5 and a pipeline cache; device B: kernels 101..102 and its own.
void fill(const fs::path& root) {
  auto a = DiskCache::open(config_for(root), kDeviceA);
  for (uint64_t h = 1; h <= 5; ++h) {
    a.store(make_entry(h, 1));
  }
  a.store_pipeline_cache(make_pipeline_blob(0xaa));
  auto b = DiskCache::open(config_for(root), kDeviceB);
  b.store(make_entry(101, 2));
  b.store(make_entry(102, 2));
  b.store_pipeline_cache(make_pipeline_blob(0xbb));
}

}  // namespace

TEST_CASE("export, clear, import restores every entry byte for byte") {
  TempDir tmp;
  fs::path root = tmp.path() / "cache";
  fill(root);
  auto cache = DiskCache::open(config_for(root), kDeviceA);
  std::map<fs::path, std::vector<uint8_t>> before;
  for (const auto& f : scan(root)) {
    if (f.role == FileRole::Kernel || f.role == FileRole::PipelineCache) {
      before[f.path] = read_bytes(f.path);
    }
  }

  auto exported = cache.export_bundle(tmp.path() / "warm.bundle");
  CHECK(exported.kernels == 7);
  CHECK(exported.pipeline_caches == 2);
  CHECK(exported.skipped.empty());
  CHECK(exported.bytes == fs::file_size(tmp.path() / "warm.bundle"));

  cache.clear();
  CHECK(cache.list().empty());

  auto imported = cache.import_bundle(tmp.path() / "warm.bundle");
  CHECK(imported.kernels == 7);
  CHECK(imported.foreign_kernels == 2);  // device B's SPIR-V is kept, under its own directory
  CHECK(imported.pipeline_caches == 1);
  CHECK(imported.foreign_pipeline_caches == 1);  // device B's driver data is not
  CHECK(imported.bad.empty());

  for (const auto& [path, bytes] : before) {
    CAPTURE(path);
    if (path == pipeline_cache_path(root, fingerprint_hash(kDeviceB))) {
      CHECK_FALSE(fs::exists(path));
    } else {
      CHECK(read_bytes(path) == bytes);
    }
  }
  for (uint64_t h = 1; h <= 5; ++h) {
    auto e = cache.load(h);
    REQUIRE(e.has_value());
    CHECK(is_whole_entry(*e, h));
  }
  CHECK(cache.load_pipeline_cache() == make_pipeline_blob(0xaa));
  CHECK(read_fingerprint(root, fingerprint_hash(kDeviceB)) == kDeviceB);
  CHECK(cache.verify(false).bad.empty());
}

TEST_CASE("import on another machine with another device keeps SPIR-V but no driver data") {
  TempDir tmp;
  fill(tmp.path() / "src");
  auto src = DiskCache::open(config_for(tmp.path() / "src"), "");
  src.export_bundle(tmp.path() / "b.bundle");

  const std::string device_c = "1002:73bf:2.0:radv-uuid:radv mesa 22:ptr64";
  auto dst = DiskCache::open(config_for(tmp.path() / "dst"), device_c);
  auto report = dst.import_bundle(tmp.path() / "b.bundle");
  CHECK(report.kernels == 7);
  CHECK(report.foreign_kernels == 7);
  CHECK(report.pipeline_caches == 0);
  CHECK(report.foreign_pipeline_caches == 2);
  CHECK(dst.list().size() == 7);
  CHECK_FALSE(dst.load_pipeline_cache().has_value());
  // Device A opening the imported cache finds its kernels.
  auto as_a = DiskCache::open(config_for(tmp.path() / "dst"), kDeviceA);
  CHECK(as_a.load(3).has_value());
}

TEST_CASE("export skips bad entries and reports them") {
  TempDir tmp;
  fill(tmp.path());
  fs::resize_file(kernel_path(tmp.path(), fingerprint_hash(kDeviceA), 2), 70);
  auto cache = DiskCache::open(config_for(tmp.path()), kDeviceA);
  auto report = cache.export_bundle(tmp.path() / "x.bundle");
  CHECK(report.kernels == 6);
  REQUIRE(report.skipped.size() == 1);
  CHECK(report.skipped[0].reason.find("truncated") != std::string::npos);
}

TEST_CASE("a corrupt or truncated bundle is refused before anything is written") {
  TempDir tmp;
  fill(tmp.path() / "src");
  auto src = DiskCache::open(config_for(tmp.path() / "src"), kDeviceA);
  src.export_bundle(tmp.path() / "b.bundle");
  auto good = read_bytes(tmp.path() / "b.bundle");

  auto dst = DiskCache::open(config_for(tmp.path() / "dst"), kDeviceA);
  auto corrupt = good;
  corrupt[corrupt.size() - 40] ^= 0x10;
  write_bytes(tmp.path() / "corrupt.bundle", corrupt);
  CHECK_THROWS_WITH_AS(dst.import_bundle(tmp.path() / "corrupt.bundle"),
                       doctest::Contains("corrupt"), std::runtime_error);
  auto truncated = good;
  truncated.resize(good.size() / 2);
  write_bytes(tmp.path() / "short.bundle", truncated);
  CHECK_THROWS_WITH_AS(dst.import_bundle(tmp.path() / "short.bundle"),
                       doctest::Contains("truncated"), std::runtime_error);
  CHECK_THROWS_WITH_AS(dst.import_bundle(tmp.path() / "missing.bundle"),
                       doctest::Contains("cannot open bundle"), std::runtime_error);
  // A kernel file is not a bundle.
  CHECK_THROWS_WITH_AS(
      dst.import_bundle(kernel_path(tmp.path() / "src", fingerprint_hash(kDeviceA), 1)),
      doctest::Contains("wrong file kind"), std::runtime_error);
  CHECK_FALSE(fs::exists(tmp.path() / "dst"));
}

TEST_CASE("an empty cache exports an empty bundle that imports as nothing") {
  TempDir tmp;
  auto cache = DiskCache::open(config_for(tmp.path() / "none"), kDeviceA);
  auto exported = cache.export_bundle(tmp.path() / "e.bundle");
  CHECK(exported.kernels == 0);
  CHECK(exported.bytes == kHeaderSize);
  auto imported = cache.import_bundle(tmp.path() / "e.bundle");
  CHECK(imported.kernels == 0);
  CHECK(imported.bad.empty());
}

TEST_CASE("a bundle that cannot be written throws and leaves no temp file") {
  TempDir tmp;
  fill(tmp.path() / "src");
  auto cache = DiskCache::open(config_for(tmp.path() / "src"), kDeviceA);
  write_bytes(tmp.path() / "file", {1});
  CHECK_THROWS_WITH_AS(cache.export_bundle(tmp.path() / "file" / "x.bundle"),
                       doctest::Contains("[cache] cannot create"), std::runtime_error);
}

TEST_CASE("import validates every record even when the bundle checksum is intact") {
  TempDir tmp;
  fill(tmp.path() / "src");
  auto src = DiskCache::open(config_for(tmp.path() / "src"), kDeviceA);
  src.export_bundle(tmp.path() / "b.bundle");
  auto bytes = read_bytes(tmp.path() / "b.bundle");
  // First record: 16-byte record header, then a whole kernel file; spoil its payload and
  // re-seal the bundle so that only the per-record validation can notice.
  bytes[kHeaderSize + 16 + kHeaderSize + 30] ^= 0x08;
  FileHeader h = decode_header(bytes, FileKind::Bundle);
  h.payload_hash = xxh64(std::span(bytes).subspan(kHeaderSize));
  auto header = encode_header(h);
  std::copy(header.begin(), header.end(), bytes.begin());
  write_bytes(tmp.path() / "b.bundle", bytes);

  auto dst = DiskCache::open(config_for(tmp.path() / "dst"), kDeviceA);
  auto report = dst.import_bundle(tmp.path() / "b.bundle");
  REQUIRE(report.bad.size() == 1);
  CHECK(report.bad[0].reason.find("checksum") != std::string::npos);
  CHECK(report.kernels == 6);
  CHECK(dst.verify(false).bad.empty());
}
