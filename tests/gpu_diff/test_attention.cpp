// fast::scaled_dot_product_attention on the GPU (the "sdpa" family) against the CPU
// reference: head dims 64, 80, 128, 256 (and dv != d), GQA ratios 1, 2, 4, 8, query lengths
// from 1 (decode: the vector mode, split along the keys when long) to 257 (prefill: the rows
// mode), key lengths 1 to 4097, every mask kind (causal with Lq < Lkv and Lq > Lkv, bool,
// additive, broadcast), sinks, B = 2, K/V read in place as slices of a larger cache, and all
// three dtypes. No call takes the CPU route.
//
// Tolerances: the CPU sums scores and the weighted values in double; the GPU in f32, with the
// softmax's running max and sum updated key by key (or tile by tile) and chunks merged. For
// f32 outputs (|v| <= 1) that is a few f32 roundings of sums of up to 4097 terms: 1e-4
// relative, 1e-5 absolute. 16-bit outputs: one rounding of the dtype (default_tolerance).
#include <doctest/doctest.h>

#include <algorithm>

#include "harness.h"
#include "mlx/backend/vulkan/cpu_fallback.h"

namespace mx = mlx::core;
using namespace gpu_diff;

namespace {

mx::array uniform(const mx::Shape& shape, mx::Dtype dt, uint64_t seed, float lo = -1,
                  float hi = 1) {
  auto cpu = mx::Device::cpu;
  auto u = mx::random::uniform(shape, mx::float32, mx::random::key(seed), cpu);
  return mx::astype(mx::add(mx::multiply(u, mx::array(hi - lo), cpu), mx::array(lo), cpu), dt, cpu);
}

struct AttnCase {
  int d, dv, hq, hkv, lq, lkv;
  mx::Dtype dt = mx::float32;
  // "", "causal", "bool", "add", "add_bcast" (a [lq, lkv] mask), "bool_rows" (bool with
  // every 7th query row fully masked), "add_ninf" (additive with ~30% -inf, query row 5 all
  // -inf: NaN without sinks, 0 with them)
  std::string mask = "";
  bool sinks = false;
  int batch = 1;
  bool cache_view = false;  // k and v as slices of a longer, head-major cache
  bool misaligned = false;  // q, k and v as views starting 1 element into a GPU buffer
};

// `a` on the GPU as a view at element offset 1 of a buffer (no quad of it is aligned).
mx::array misaligned_view(const mx::array& a) {
  auto gpu = mx::Device::gpu;
  auto flat = mx::concatenate({mx::zeros({1}, a.dtype(), gpu), mx::flatten(a, gpu)}, 0, gpu);
  auto v = mx::reshape(mx::slice(flat, {1}, {1 + static_cast<int>(a.size())}, gpu), a.shape(), gpu);
  v.eval();
  return v;
}

void check_attention(const AttnCase& c, uint64_t seed) {
  auto cpu = mx::Device::cpu, gpu = mx::Device::gpu;
  auto q = uniform({c.batch, c.hq, c.lq, c.d}, c.dt, seed);
  int cap = c.cache_view ? c.lkv + 13 : c.lkv;
  auto kfull = uniform({c.batch, c.hkv, cap, c.d}, c.dt, seed + 1);
  auto vfull = uniform({c.batch, c.hkv, cap, c.dv}, c.dt, seed + 2);
  std::optional<mx::array> mask;
  if (c.mask == "bool") {
    auto r = uniform({c.batch, c.hq, c.lq, c.lkv}, mx::float32, seed + 3);
    mask = mx::greater(r, mx::array(-0.6f), cpu);  // ~20% of keys masked
  } else if (c.mask == "add") {
    mask = uniform({c.batch, 1, c.lq, c.lkv}, c.dt, seed + 3, -2, 2);
  } else if (c.mask == "add_bcast") {
    mask = uniform({c.lq, c.lkv}, c.dt, seed + 3, -2, 2);
  } else if (c.mask == "bool_rows") {
    auto r = uniform({c.batch, c.hq, c.lq, c.lkv}, mx::float32, seed + 3);
    auto row = mx::reshape(mx::arange(c.lq, mx::int32, cpu), {c.lq, 1}, cpu);
    auto dead = mx::equal(mx::remainder(row, mx::array(7), cpu), mx::array(3), cpu);
    mask = mx::logical_and(mx::greater(r, mx::array(-0.6f), cpu), mx::logical_not(dead, cpu), cpu);
  } else if (c.mask == "add_ninf") {
    auto r = uniform({c.batch, 1, c.lq, c.lkv}, mx::float32, seed + 3);
    auto row = mx::reshape(mx::arange(c.lq, mx::int32, cpu), {c.lq, 1}, cpu);
    auto ninf =
        mx::logical_or(mx::less(r, mx::array(-0.4f), cpu), mx::equal(row, mx::array(5), cpu), cpu);
    mask = mx::astype(
        mx::where(ninf, mx::array(-INFINITY), mx::multiply(r, mx::array(2.0f), cpu), cpu), c.dt,
        cpu);
  }
  std::optional<mx::array> sinks;
  if (c.sinks) {
    sinks = uniform({c.hq}, c.dt, seed + 4, -1, 3);
  }
  std::string mode = c.mask == "" ? "" : c.mask == "causal" ? "causal" : "array";
  float scale = 1.0f / std::sqrt(static_cast<float>(c.d));
  auto run = [&](const mx::array& qq, const mx::array& kf, const mx::array& vf,
                 const std::optional<mx::array>& m, const std::optional<mx::array>& sk,
                 mx::Device dev) {
    auto k = mx::slice(kf, {0, 0, 0, 0}, {c.batch, c.hkv, c.lkv, c.d}, dev);
    auto v = mx::slice(vf, {0, 0, 0, 0}, {c.batch, c.hkv, c.lkv, c.dv}, dev);
    return mx::fast::scaled_dot_product_attention(qq, k, v, scale, mode, m, sk, false, dev);
  };
  auto want = run(q, kfull, vfull, mask, sinks, cpu);
  want.eval();
  std::optional<mx::array> mask_g, sinks_g;
  if (mask) {
    mask_g = on_device(*mask, gpu);
  }
  if (sinks) {
    sinks_g = on_device(*sinks, gpu);
  }
  auto qg = on_device(q, gpu), kg = on_device(kfull, gpu), vg = on_device(vfull, gpu);
  if (c.misaligned) {
    qg = misaligned_view(qg), kg = misaligned_view(kg), vg = misaligned_view(vg);
  }
  std::string what = "sdpa d=" + std::to_string(c.d) + " dv=" + std::to_string(c.dv) +
                     " heads=" + std::to_string(c.hq) + "/" + std::to_string(c.hkv) +
                     " lq=" + std::to_string(c.lq) + " lkv=" + std::to_string(c.lkv) + " " +
                     mx::dtype_to_string(c.dt) + " mask=" + (c.mask.empty() ? "none" : c.mask) +
                     (c.sinks ? " sinks" : "") + " B=" + std::to_string(c.batch) +
                     (c.cache_view ? " cache view" : "") + (c.misaligned ? " misaligned" : "") +
                     " seed=" + std::to_string(seed);
  auto got = gpu_eval_checked(
      [&] { return std::vector<mx::array>{run(qg, kg, vg, mask_g, sinks_g, gpu)}; }, what)[0];
  Tolerance tol = c.dt == mx::float32 ? Tolerance{1e-4, 1e-5} : default_tolerance(c.dt);
  CHECK_MESSAGE(all_close(got, want, tol, what), what);
}

}  // namespace

TEST_CASE("attention decode on the GPU matches the CPU: head dims, GQA, masks, sinks, splits") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  uint64_t seed = 100;
  // Decode shapes (the vector mode): every GQA ratio, key lengths from 1 to 4097 (the long
  // ones split along the keys and merge), each mask kind, sinks.
  check_attention({128, 128, 8, 8, 1, 1}, seed += 5);
  check_attention({128, 128, 8, 4, 1, 7, mx::float16}, seed += 5);
  check_attention({64, 64, 8, 2, 1, 128, mx::bfloat16, "bool"}, seed += 5);
  check_attention({128, 128, 8, 1, 1, 1000, mx::float32, "add", true}, seed += 5);
  check_attention({80, 80, 4, 2, 2, 4097, mx::float16, "causal", false, 1, true}, seed += 5);
  check_attention({64, 32, 16, 2, 1, 300, mx::float32, "", true, 2, true}, seed += 5);
  check_attention({256, 256, 4, 1, 7, 129, mx::bfloat16, "causal"}, seed += 5);
  check_attention({128, 128, 4, 4, 8, 9, mx::float32, "add_bcast", false, 2}, seed += 5);
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["ScaledDotProductAttention"] == 0);
}

TEST_CASE("attention prefill on the GPU matches the CPU: tiles, causal skips, ragged lengths") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  uint64_t seed = 200;
  // Prefill shapes (the rows mode): query lengths 9, 64 and 257, causal with Lq < Lkv,
  // Lq = Lkv and Lq > Lkv (rows that see no key), array masks, sinks, GQA.
  check_attention({64, 64, 4, 2, 9, 9, mx::float32, "causal"}, seed += 5);
  check_attention({128, 128, 8, 2, 64, 100, mx::float16, "causal", true}, seed += 5);
  check_attention({80, 80, 2, 2, 20, 7, mx::float32, "causal"}, seed += 5);
  check_attention({64, 64, 8, 1, 257, 128, mx::bfloat16, "bool"}, seed += 5);
  check_attention({256, 128, 2, 1, 33, 50, mx::float32, "add", false, 2, true}, seed += 5);
  check_attention({96, 96, 4, 4, 17, 1, mx::float16}, seed += 5);
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["ScaledDotProductAttention"] == 0);
}

TEST_CASE("attention prefill tiles: ragged edges, head dims to 256, row blocks across heads") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  uint64_t seed = 400;
  // Lq and Lkv off the tiles (row blocks of 16 to 64, key tiles of 8 to 32), one key past a
  // tile, an exact tile.
  check_attention({128, 128, 4, 2, 100, 77, mx::float16, "causal"}, seed += 5);
  check_attention({128, 128, 2, 2, 65, 33, mx::bfloat16}, seed += 5);
  check_attention({64, 64, 2, 1, 64, 32, mx::float32, "causal", true}, seed += 5);
  check_attention({64, 64, 2, 2, 31, 31, mx::float16, "add"}, seed += 5);
  // D = 256 with the tiles chosen for it, causal with sinks and a bool mask.
  check_attention({256, 256, 4, 2, 70, 90, mx::float16, "causal", true}, seed += 5);
  check_attention({256, 256, 2, 1, 65, 129, mx::bfloat16, "bool"}, seed += 5);
  check_attention({256, 256, 2, 2, 20, 40, mx::float32, "causal"}, seed += 5);
  // Output quads that do not divide among a row group's lanes, tiny and odd head dims.
  check_attention({64, 40, 4, 2, 33, 50, mx::float16, "causal"}, seed += 5);
  check_attention({8, 8, 2, 1, 40, 45, mx::float32, "causal", true}, seed += 5);
  check_attention({24, 24, 2, 2, 19, 70, mx::bfloat16, "add_bcast"}, seed += 5);
  check_attention({200, 72, 2, 1, 23, 41, mx::float16, "", true}, seed += 5);
  check_attention({128, 256, 2, 1, 30, 30, mx::bfloat16, "causal"}, seed += 5);
  // The smallest cooperative-matrix head dims (on a GPU with them: the output staged in a
  // region larger than the K/V buffers at 16).
  check_attention({16, 16, 4, 2, 70, 90, mx::float16, "causal", true}, seed += 5);
  check_attention({32, 32, 2, 1, 65, 40, mx::bfloat16, "add"}, seed += 5);
  // GQA: a row block holds several query heads' rows (causal limits differ per head row),
  // with Lq < Lkv, Lq = Lkv and Lq > Lkv (rows that see no key average V).
  check_attention({128, 128, 16, 2, 20, 50, mx::float16, "causal"}, seed += 5);
  check_attention({64, 64, 8, 1, 37, 37, mx::bfloat16, "causal", true}, seed += 5);
  check_attention({64, 64, 4, 1, 40, 25, mx::float32, "causal"}, seed += 5);
  check_attention({80, 80, 8, 2, 12, 9, mx::float16, "causal", false, 2, true}, seed += 5);
  // Lq a multiple of the row block: causal blocks run longest first, across G heads.
  check_attention({128, 128, 8, 2, 128, 128, mx::float16, "causal"}, seed += 5);
  check_attention({64, 64, 4, 1, 128, 200, mx::bfloat16, "causal", true, 2}, seed += 5);
  // B = 2, K/V cache views; views whose quads are not 4-element aligned (scalar loads).
  check_attention({128, 128, 4, 2, 50, 60, mx::float16, "causal", false, 2, true}, seed += 5);
  check_attention({64, 64, 4, 2, 45, 40, mx::bfloat16, "causal", true, 2, false, true}, seed += 5);
  check_attention({128, 128, 2, 1, 20, 33, mx::float32, "add", false, 1, true, true}, seed += 5);
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["ScaledDotProductAttention"] == 0);
}

TEST_CASE("attention prefill with fully masked rows and -inf masks matches the CPU") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  uint64_t seed = 500;
  // Rows that see no key average V (0 with a sink); a row of -inf gives NaN (0 with a sink).
  check_attention({64, 64, 4, 2, 40, 37, mx::float16, "bool_rows"}, seed += 5);
  check_attention({128, 128, 2, 1, 30, 70, mx::float32, "bool_rows", true}, seed += 5);
  check_attention({64, 64, 4, 2, 20, 50, mx::float32, "add_ninf"}, seed += 5);
  check_attention({128, 128, 2, 2, 33, 40, mx::bfloat16, "add_ninf", true}, seed += 5);
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["ScaledDotProductAttention"] == 0);
}

TEST_CASE("attention with head dims no kernel serves composes matmul and softmax on the GPU") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  uint64_t seed = 300;
  // 36 is not a multiple of 8 and 320 is past 256: MLX's composition, on the GPU.
  check_attention({36, 36, 4, 2, 3, 20, mx::float32, "causal", true}, seed += 5);
  check_attention({320, 64, 2, 1, 1, 40, mx::float16, "bool"}, seed += 5);
  check_attention({36, 36, 2, 2, 5, 9, mx::bfloat16, "add", false, 2}, seed += 5);
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["ScaledDotProductAttention"] == 0);
  CHECK(counts["Matmul"] == 0);
  // force_fused asks for the kernel: none exists for these dims.
  auto q = mx::zeros({1, 2, 1, 36}, mx::float32, mx::Device::gpu);
  CHECK_THROWS_WITH_AS(mx::fast::scaled_dot_product_attention(q, q, q, 1.0f, "", std::nullopt,
                                                              std::nullopt, true, mx::Device::gpu),
                       doctest::Contains("no fused kernel for head dims 36"),
                       std::invalid_argument);
}
