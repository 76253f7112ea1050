// Warm starts across processes (issue 4, points 3, 7 and 8): a workload that compiled its
// kernels once compiles nothing in the next process; the same holds after moving the cache
// through a bundle (export, clear, import) and after `spvdump prewarm` of the recorded keys
// into an empty cache. A corrupt entry is a miss that is recompiled and replaced, and
// MLX_VK_CACHE=off writes nothing. Each workload run is a new process (warm_helpers.h).
#include "warm/warm_helpers.h"

#include <algorithm>
#include <memory>

#include "cache/disk_cache.h"
#include "mlx/backend/gpu/available.h"

using namespace warm_test;
namespace cache = mlx::core::vulkan::cache;

namespace {

// Each case needs a device in the child; the parent only asks whether one exists.
bool have_device() {
  const char* v = std::getenv("MLX_VK_EXPECT_NO_DEVICE");
  if (v && std::string(v) == "1") {
    return false;
  }
  return mlx::core::gpu::is_available();
}

// One cold run, shared by the cases that start from a filled cache (each copies it):
// lavapipe takes tens to hundreds of ms per kernel, and CI time matters.
struct ColdCache {
  TempDir tmp;
  fs::path root = tmp.path() / "cache";
  fs::path keys = tmp.path() / "keys.txt";
  Result run;
};

const ColdCache& cold_cache() {
  static std::unique_ptr<ColdCache> c = [] {
    auto cold = std::make_unique<ColdCache>();
    cold->run = run_workload(cold->root, {{"MLX_VK_RECORD_KERNELS", cold->keys.string()}});
    return cold;
  }();
  return *c;
}

// A private copy of the cold cache under `dir`.
fs::path copy_of_cold(const fs::path& dir) {
  fs::path root = dir / "cache";
  fs::create_directories(dir);
  fs::copy(cold_cache().root, root, fs::copy_options::recursive);
  return root;
}

}  // namespace

TEST_CASE("a cold run compiles its kernels, stores them and records each key once") {
  if (!have_device()) {
    return;
  }
  const auto& cold = cold_cache();
  REQUIRE(cold.run.code == 0);
  CHECK(cold.run["values_ok"] == 1);
  double n = cold.run["compiles"];
  CHECK(n == 4);  // f32 Add, f32 Multiply, f32 Exp, f32 -> i32 copy
  CHECK(cold.run["disk_hits"] == 0);
  CHECK(cold.run["failures"] == 0);
  CHECK(cold.run["stores"] == n);
  CHECK(kernel_files(cold.root).size() == n);
  auto dir = device_dir(cold.root);
  REQUIRE(dir);
  // Saved at exit (device teardown), after the child wrote its statistics.
  CHECK(fs::exists(*dir / "pipeline.cache"));
  auto keys = lines_of(cold.keys);
  CHECK(keys.size() == n);
  CHECK(std::set<std::string>(keys.begin(), keys.end()).size() == keys.size());
}

TEST_CASE("a warm start in a new process compiles nothing and hits the disk for every kernel") {
  if (!have_device()) {
    return;
  }
  TempDir tmp;
  fs::path root = copy_of_cold(tmp.path());
  fs::path keys = tmp.path() / "keys.txt";
  fs::copy_file(cold_cache().keys, keys);
  Result warm =
      run_workload(root, {{"MLX_VK_STATS", "1"}, {"MLX_VK_RECORD_KERNELS", keys.string()}});
  REQUIRE(warm.code == 0);
  CHECK(warm["values_ok"] == 1);
  CHECK(warm["compiles"] == 0);
  CHECK(warm["disk_hits"] == cold_cache().run["compiles"]);
  CHECK(warm["bad_entries"] == 0);
  CHECK(warm["stores"] == 0);
  CHECK(warm["pipeline_cache_loads"] >= 1);
  // MLX_VK_STATS=1 prints the same at exit.
  CHECK(has(warm.err, "[mlx-vulkan stats] compiles:              0"));
  CHECK(has(warm.err, "[mlx-vulkan stats] disk hits:"));
  // Recording is deduplicated across processes: the warm run adds no line.
  CHECK(lines_of(keys).size() == lines_of(cold_cache().keys).size());
}

TEST_CASE("a corrupt entry is recompiled, computes correct values and is replaced") {
  if (!have_device()) {
    return;
  }
  TempDir tmp;
  fs::path root = copy_of_cold(tmp.path());
  auto files = kernel_files(root);
  REQUIRE(!files.empty());
  fs::path victim = files[0];
  auto bytes = cache_test::read_bytes(victim);
  bytes[bytes.size() - 7] ^= 0x40;  // inside the SPIR-V payload: only the checksum sees it
  cache_test::write_bytes(victim, bytes);

  Result r = run_workload(root);
  REQUIRE(r.code == 0);
  CHECK(r["values_ok"] == 1);
  CHECK(r["compiles"] == 1);
  CHECK(r["disk_hits"] == cold_cache().run["compiles"] - 1);
  CHECK(r["bad_entries"] == 1);
  CHECK(r["stores"] == 1);
  CHECK(has(r.err, "checksum mismatch"));
  // Replaced: the file is valid again, and the next process hits it.
  CHECK(cache_test::read_bytes(victim) != bytes);
  auto report = cache::DiskCache::open(cache_test::config_for(root), "").verify(false);
  CHECK(report.bad.empty());
  Result again = run_workload(root);
  CHECK(again["compiles"] == 0);
  CHECK(again["bad_entries"] == 0);
}

TEST_CASE("MLX_VK_CACHE=off compiles every kernel and writes no file") {
  if (!have_device()) {
    return;
  }
  TempDir tmp;
  fs::path root = tmp.path() / "cache";
  Result r = run_workload(root, {{"MLX_VK_CACHE", "off"}});
  REQUIRE(r.code == 0);
  CHECK(r["values_ok"] == 1);
  CHECK(r["compiles"] == 4);
  CHECK(r["disk_hits"] == 0);
  CHECK_FALSE(fs::exists(root));
  // Even over a filled cache: nothing is read (all compiled) and nothing changes.
  fs::path filled = copy_of_cold(tmp.path() / "filled");
  size_t before = count_files(filled);
  Result over = run_workload(filled, {{"MLX_VK_CACHE", "off"}});
  CHECK(over["compiles"] == 4);
  CHECK(over["disk_hits"] == 0);
  CHECK(count_files(filled) == before);
}

TEST_CASE("pipeline-cache data is saved every N new pipelines, so a killed process keeps it") {
  if (!have_device()) {
    return;
  }
  TempDir tmp;
  // Default interval (64 pipelines or 30 s): a process dying after 4 kernels saved none.
  fs::path late = tmp.path() / "late";
  Result r = run_workload(late, {{"MLX_WARM_EXIT_EARLY", "1"}});
  REQUIRE(r.code == 0);
  CHECK(r["compiles"] == 4);
  REQUIRE(device_dir(late));
  CHECK(kernel_files(late).size() == 4);
  CHECK_FALSE(fs::exists(*device_dir(late) / "pipeline.cache"));
  // Every 2 new pipelines: saved on the way, without the exit-time save.
  fs::path often = tmp.path() / "often";
  r = run_workload(often,
                   {{"MLX_WARM_EXIT_EARLY", "1"}, {"MLX_VK_PIPELINE_CACHE_SAVE_EVERY", "2"}});
  REQUIRE(r.code == 0);
  REQUIRE(device_dir(often));
  CHECK(fs::exists(*device_dir(often) / "pipeline.cache"));
}

TEST_CASE("pipeline-cache data of another device is ignored with a warning and replaced") {
  if (!have_device()) {
    return;
  }
  TempDir tmp;
  fs::path root = copy_of_cold(tmp.path());
  auto dir = device_dir(root);
  REQUIRE(dir);
  std::string fingerprint = slurp(*dir / "fingerprint.txt");
  while (!fingerprint.empty() && fingerprint.back() == '\n') {
    fingerprint.pop_back();
  }
  // A well-formed blob (our header and Vulkan's) whose vendor id is not this device's: the
  // cache library accepts it, the runtime must not hand it to the driver.
  auto c = cache::DiskCache::open(cache_test::config_for(root), fingerprint);
  auto real = c.load_pipeline_cache();
  REQUIRE(real);
  REQUIRE(real->size() >= 32);
  std::vector<uint8_t> foreign = *real;
  foreign[8] ^= 0x5a;  // vendorID, little-endian
  c.store_pipeline_cache(foreign);
  REQUIRE(c.load_pipeline_cache() == foreign);

  Result r = run_workload(root);
  REQUIRE(r.code == 0);
  CHECK(r["values_ok"] == 1);
  CHECK(r["compiles"] == 0);  // the kernels themselves are still hits
  CHECK(has(r.err, "ignoring the saved pipeline cache: made for another device"));
  auto after =
      cache::DiskCache::open(cache_test::config_for(root), fingerprint).load_pipeline_cache();
  REQUIRE(after);
  CHECK(*after != foreign);
  CHECK(std::equal(after->begin() + 8, after->begin() + 32, real->begin() + 8));
}

#ifdef SPVDUMP_PATH

TEST_CASE("export, clear and import of the cache give a warm start") {
  if (!have_device()) {
    return;
  }
  TempDir tmp;
  fs::path root = copy_of_cold(tmp.path());
  fs::path bundle = tmp.path() / "warm.bundle";
  auto dir = device_dir(root);
  REQUIRE(dir);
  std::string fingerprint = slurp(*dir / "fingerprint.txt");
  while (!fingerprint.empty() && fingerprint.back() == '\n') {
    fingerprint.pop_back();
  }

  Run exp = spvdump({"export", bundle.string(), "--dir", root.string()});
  REQUIRE_MESSAGE(exp.code == 0, exp.out << exp.err);
  CHECK(has(exp.out, "exported 4 kernels and 1 pipeline caches"));
  Run clear = spvdump({"clear", "--dir", root.string()});
  REQUIRE_MESSAGE(clear.code == 0, clear.out << clear.err);
  CHECK(kernel_files(root).empty());
  Run imp =
      spvdump({"import", bundle.string(), "--fingerprint", fingerprint, "--dir", root.string()});
  REQUIRE_MESSAGE(imp.code == 0, imp.out << imp.err);
  CHECK(has(imp.out, "imported 4 kernels"));
  CHECK(has(imp.out, "and 1 pipeline caches"));

  Result r = run_workload(root);
  REQUIRE(r.code == 0);
  CHECK(r["values_ok"] == 1);
  CHECK(r["compiles"] == 0);
  CHECK(r["disk_hits"] == 4);
}

TEST_CASE("prewarm of the recorded keys fills an empty cache so the workload compiles nothing") {
  if (!have_device()) {
    return;
  }
  TempDir tmp;
  fs::path root = tmp.path() / "prewarmed";
  fs::path keys = cold_cache().keys;
  // Four keys on four threads at once.
  Run pre = spvdump({"prewarm", keys.string(), "--dir", root.string(), "--jobs", "4"});
  REQUIRE_MESSAGE(pre.code == 0, pre.out << pre.err);
  CHECK(has(pre.out, "prewarm: 4 compiled, 0 already cached, 0 failed"));
  CHECK(has(pre.out, "4 jobs"));
  CHECK(has(pre.out, "pipeline cache written"));
  // stderr is not a terminal here: one plain progress line per key.
  CHECK(has(pre.err, "[1/4] compiled"));
  CHECK(has(pre.err, "[4/4] compiled"));
  auto dir = device_dir(root);
  REQUIRE(dir);
  CHECK(fs::exists(*dir / "pipeline.cache"));
  CHECK(kernel_files(root).size() == 4);

  Result r = run_workload(root);
  REQUIRE(r.code == 0);
  CHECK(r["values_ok"] == 1);
  CHECK(r["compiles"] == 0);
  CHECK(r["disk_hits"] == 4);

  // A second prewarm finds everything cached.
  Run again = spvdump({"prewarm", keys.string(), "--dir", root.string(), "--json"});
  REQUIRE_MESSAGE(again.code == 0, again.out << again.err);
  CHECK(has(again.out, "\"compiled\":0"));
  CHECK(has(again.out, "\"cached\":4"));
}

TEST_CASE("prewarm counts bad lines and unbuildable keys as failed, builds the rest, exits 1") {
  if (!have_device()) {
    return;
  }
  TempDir tmp;
  fs::path root = tmp.path() / "cache";
  fs::path keys = tmp.path() / "keys.txt";
  auto good = lines_of(cold_cache().keys);
  REQUIRE(!good.empty());
  {
    std::ofstream out(keys);
    out << "# recorded keys\n"
        << good[0] << "\n"
        << "\n"
        << "binary:op\n"                                         // line 4: not a key
        << "nosuchfamily:op=Add\n"                               // line 5: unknown family
        << "unary:idx=32,in=f32,layout=c,op=NoSuchOp,out=f32\n"  // line 6: unknown op
        << good[0] << "\n";                                      // a duplicate: built once
  }
  Run r = spvdump({"prewarm", keys.string(), "--dir", root.string()});
  CHECK_MESSAGE(r.code == 1, r.out << r.err);
  CHECK(has(r.out, "prewarm: 1 compiled, 0 already cached, 3 failed"));
  CHECK(has(r.out, "failed: line 4: binary:op: not a kernel key"));
  CHECK(has(r.out, "failed: line 5: nosuchfamily:op=Add"));
  CHECK(has(r.out, "nosuchfamily"));
  CHECK(has(r.out, "failed: line 6:"));
  CHECK(has(r.out, "NoSuchOp"));
  CHECK(kernel_files(root).size() == 1);

  Run missing = spvdump({"prewarm", (tmp.path() / "absent.txt").string(), "--dir", root.string()});
  CHECK(missing.code == 1);
  CHECK(has(missing.err, "cannot read key file"));
  Run usage = spvdump({"prewarm"});
  CHECK(usage.code == 2);
}

#endif  // SPVDUMP_PATH
