// The GEMM autotune (mlx/backend/vulkan/autotune.h), turned on for this test only: the
// first product of a problem class times the candidate tiles once and records the fastest
// in the cache directory's tuning records; later products of the class (another shape in
// its buckets) and a process that starts afresh (the in-memory records forgotten) read the
// record instead of timing; a damaged record is a miss. Every product equals the CPU's.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cache/hash.h"
#include "cache/layout.h"
#include "cache/tuning.h"
#include "harness.h"
#include "mlx/backend/vulkan/autotune.h"
#include "mlx/backend/vulkan/device.h"

namespace mx = mlx::core;
namespace vk = mx::vulkan;
using namespace gpu_diff;

TEST_CASE("the GEMM autotune times a problem class once, records the fastest tile, reads it back") {
  if (!gpu_present())
    return;
  if (vk::device("test").caps().max_workgroup_invocations < 256) {
    // One FMA tile fits such a device (codegen/matmul.cpp): nothing to choose between.
    MESSAGE("fewer than 256 invocations a workgroup: one candidate tile, no tuning to test");
    return;
  }
  auto dir = std::filesystem::temp_directory_path() /
             ("mlxvk-autotune-test-" + std::to_string(::getpid()));
  const char* old_dir = std::getenv("MLX_VK_CACHE_DIR");
  std::string saved = old_dir ? old_dir : "";
  ::setenv("MLX_VK_CACHE_DIR", dir.c_str(), 1);
  vk::set_autotune(true);
  vk::forget_tuning_records();

  // f32 at K = 80 (its class: m, n, k up to 256) with rows that vary within the class.
  auto product = [](int m) {
    auto a = mx::random::uniform({m, 80}, mx::float32, mx::random::key(m));
    auto b = mx::random::uniform({80, 72}, mx::float32, mx::random::key(m + 1));
    auto got = mx::matmul(a, b, mx::Device::gpu);
    auto want = mx::matmul(a, b, mx::Device::cpu);
    return all_close(got, want, {2e-5, 1e-6 * 80}, "autotuned product");
  };
  int64_t tuned = vk::autotune_count();
  CHECK(product(96));
  CHECK(vk::autotune_count() == tuned + 1);
  const auto& fp = vk::device("test").caps().fingerprint;
  auto records = mx::vulkan::cache::read_tuning(dir, mx::vulkan::cache::fingerprint_hash(fp));
  REQUIRE(records.size() == 1);
  CHECK(records.begin()->first.rfind("gemm:f32,", 0) == 0);
  CHECK(product(100));  // same class: the record in memory
  vk::forget_tuning_records();
  CHECK(product(120));  // same class: the record on disk
  CHECK(vk::autotune_count() == tuned + 1);

  // A record naming no tile is a miss: the class is timed again and the record replaced.
  {
    std::ofstream out(mx::vulkan::cache::tuning_path(dir, mx::vulkan::cache::fingerprint_hash(fp)));
    out << records.begin()->first << " not-a-tile\n";
  }
  vk::forget_tuning_records();
  CHECK(product(130));
  CHECK(vk::autotune_count() == tuned + 2);
  auto again = mx::vulkan::cache::read_tuning(dir, mx::vulkan::cache::fingerprint_hash(fp));
  CHECK(again.begin()->second != "not-a-tile");

  // A quantized product (qmm: packed weights, scales and biases as scratch) tunes its
  // own class.
  auto w = mx::random::uniform({64, 128}, mx::float32, mx::random::key(7));
  auto q = mx::quantize(w, 64, 4);
  auto x = mx::random::uniform({24, 128}, mx::float32, mx::random::key(8));
  auto qgot = mx::quantized_matmul(x, q[0], q[1], q[2], true, 64, 4, "affine", mx::Device::gpu);
  auto qwant = mx::quantized_matmul(x, q[0], q[1], q[2], true, 64, 4, "affine", mx::Device::cpu);
  CHECK(all_close(qgot, qwant, {2e-5, 1e-4}, "autotuned qmm"));
  CHECK(vk::autotune_count() == tuned + 3);
  bool has_qmm = false;
  for (const auto& [cls, tile] :
       mx::vulkan::cache::read_tuning(dir, mx::vulkan::cache::fingerprint_hash(fp))) {
    has_qmm = has_qmm || cls.rfind("qmm:f32,", 0) == 0;
  }
  CHECK(has_qmm);

  vk::set_autotune(false);
  vk::forget_tuning_records();
  if (old_dir) {
    ::setenv("MLX_VK_CACHE_DIR", saved.c_str(), 1);
  } else {
    ::unsetenv("MLX_VK_CACHE_DIR");
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}
