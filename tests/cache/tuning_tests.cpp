// Tuning records (cache/tuning.h): stored and read back per device, a damaged line is a
// miss, verify names it, clear removes the file.
#include <doctest/doctest.h>

#include <fstream>

#include "cache/disk_cache.h"
#include "cache/hash.h"
#include "cache/layout.h"
#include "cache/tuning.h"
#include "cache_test_utils.h"

using namespace cache_test;

TEST_CASE("tuning records are kept per device, one choice per class, the last one winning") {
  TempDir tmp;
  uint64_t a = fingerprint_hash(kDeviceA);
  CHECK(read_tuning(tmp.path(), a).empty());
  CHECK_FALSE(store_tuning(tmp.path(), kDeviceA, "gemm:f16,m=256", "64x64x16x4x4"));
  CHECK_FALSE(store_tuning(tmp.path(), kDeviceA, "gemm:f32,m=16", "32x32x16x2x2"));
  CHECK_FALSE(store_tuning(tmp.path(), kDeviceA, "gemm:f16,m=256", "128x128x16x8x8"));
  auto records = read_tuning(tmp.path(), a);
  CHECK(records.size() == 2);
  CHECK(records["gemm:f16,m=256"] == "128x128x16x8x8");
  CHECK(records["gemm:f32,m=16"] == "32x32x16x2x2");
  // Another device sees none of them; words with spaces are refused.
  CHECK(read_tuning(tmp.path(), fingerprint_hash(kDeviceA + "x")).empty());
  CHECK(store_tuning(tmp.path(), kDeviceA, "two words", "x").has_value());
  CHECK(store_tuning(tmp.path(), kDeviceA, "c", "").has_value());
}

TEST_CASE("a damaged tuning line is skipped, verify reports it and clear removes the file") {
  TempDir tmp;
  REQUIRE_FALSE(store_tuning(tmp.path(), kDeviceA, "gemm:f16", "64x64x16x4x4"));
  auto path = tuning_path(tmp.path(), fingerprint_hash(kDeviceA));
  {
    std::ofstream out(path, std::ios::app);
    out << "half-a-record\n"
        << "gemm:f32 32x32x16x2x2\n";
  }
  auto records = read_tuning(tmp.path(), fingerprint_hash(kDeviceA));
  CHECK(records.size() == 2);
  CHECK(tuning_problem("a b\nc\n") ==
        std::optional<std::string>("line 2 is not \"<class> <choice>\""));
  CHECK_FALSE(tuning_problem("a b\nc d\n"));
  auto cache = DiskCache::open(config_for(tmp.path()), kDeviceA);
  auto report = cache.verify(false);
  REQUIRE(report.bad.size() == 1);
  CHECK(report.bad[0].path.find("tuning.txt") != std::string::npos);
  cache.clear();
  CHECK_FALSE(std::filesystem::exists(path));
}
