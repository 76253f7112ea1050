// One decode step's attention over a KV cache (mlx/fusion.h attention_over_cache_update,
// fast::DecodeAttention, docs/fusion.md): built as a model builds it (rope of rms_norm for
// q and k, the key cache updated through the rope, the value cache by slice_update, then
// scaled_dot_product_attention over the caches' leading rows), on a GPU stream the
// attention takes over the ropes and both updates, and the caches' nodes become its other
// outputs. The graph is checked, then the GPU's attention and caches against the CPU
// reference built with fusion off: Qwen3's shape, GQA 1 and 2, batch 2, a split key range
// with the new row in its last chunk and in its first, a start past the attended keys and
// one clamped to the cache's end, traditional and half rotations, with and without norms.
//
// Tolerances: the caches' new key row as the fused rope's (test_fusion.cpp: the norm's
// statistic summed in another order can move a normalized value by one ulp of the dtype
// before the rotation, so two roundings of the dtype for 16-bit, 1e-4 for f32); the value
// row is copied exactly. The attention: as test_attention.cpp's (1e-4 relative, 1e-5
// absolute for f32, one rounding for 16-bit) plus what those moved q and k elements do to
// the scores: two roundings of the dtype for 16-bit, 1e-4 absolute for f32.
#include <doctest/doctest.h>

#include <cmath>

#include "fusion_util.h"
#include "harness.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/fast_primitives.h"
#include "mlx/fusion.h"

namespace mx = mlx::core;
using namespace gpu_diff;

namespace {

constexpr float kEps = 1e-6f;

struct Step {
  mx::array out, keys, values;
};

struct StepInputs {
  mx::array k_cache, v_cache, qx, kx, vx, qw, kw, offset;
};

// One decode step as MLX-LM's attention writes it; lkv keys attended.
Step decode_step(const StepInputs& in, int lkv, bool norm, bool traditional, mx::StreamOrDevice s) {
  int d = in.qx.shape(-1);
  auto q = norm ? mx::fast::rms_norm(in.qx, in.qw, kEps, s) : in.qx;
  auto k = norm ? mx::fast::rms_norm(in.kx, in.kw, kEps, s) : in.kx;
  q = mx::fast::rope(q, d, traditional, 10000.0f, 1.0f, in.offset, std::nullopt, s);
  k = mx::fast::rope(k, d, traditional, 10000.0f, 1.0f, in.offset, std::nullopt, s);
  auto keys = mx::slice_update(in.k_cache, k, in.offset, {2}, s);
  auto values = mx::slice_update(in.v_cache, in.vx, in.offset, {2}, s);
  mx::Shape stop = keys.shape();
  stop[2] = lkv;
  mx::Shape vstop = values.shape();
  vstop[2] = lkv;
  auto out = mx::fast::scaled_dot_product_attention(
      q, mx::slice(keys, {0, 0, 0, 0}, stop, s), mx::slice(values, {0, 0, 0, 0}, vstop, s),
      1.0f / std::sqrt(static_cast<float>(d)), "", std::nullopt, std::nullopt, false, s);
  return {out, keys, values};
}

struct Dims {
  int b, hq, hkv, cap, d;
};

StepInputs make_inputs(const Dims& c, mx::Dtype dt, int offset, uint64_t seed) {
  return {uniform({c.b, c.hkv, c.cap, c.d}, dt, seed),
          uniform({c.b, c.hkv, c.cap, c.d}, dt, seed + 1),
          uniform({c.b, c.hq, 1, c.d}, dt, seed + 2),
          uniform({c.b, c.hkv, 1, c.d}, dt, seed + 3),
          uniform({c.b, c.hkv, 1, c.d}, dt, seed + 4),
          uniform({c.d}, dt, seed + 5),
          uniform({c.d}, dt, seed + 6),
          mx::array(offset, mx::int32)};
}

StepInputs to_device(const StepInputs& in, mx::Device dev) {
  return {on_device(in.k_cache, dev), on_device(in.v_cache, dev),
          on_device(in.qx, dev),      on_device(in.kx, dev),
          on_device(in.vx, dev),      on_device(in.qw, dev),
          on_device(in.kw, dev),      in.offset};
}

bool is_step(const mx::array& a) {
  return a.has_primitive() && dynamic_cast<mx::fast::DecodeAttention*>(&a.primitive()) != nullptr;
}

// The GPU's step {attention, key cache, value cache} against the CPU reference, with the
// tolerances of the file comment.
void check_step(const std::vector<mx::array>& got, const Step& want, mx::Dtype dt,
                const std::string& what) {
  Tolerance two = dt == mx::float32
                      ? Tolerance{1e-4, 1e-4}
                      : Tolerance{2 * default_tolerance(dt).rtol, 2 * default_tolerance(dt).atol};
  CHECK(all_close(got[0], want.out, two, "attention, " + what));
  CHECK(all_close(got[1], want.keys, two, "key cache, " + what));
  CHECK(all_close(got[2], want.values, {0.0, 0.0}, "value cache, " + what));
}

}  // namespace

TEST_CASE("a decode step's ropes and cache updates join its attention on a GPU stream") {
  if (!gpu_present())
    return;
  auto gpu = mx::Device::gpu;
  Dims dims{1, 4, 2, 16, 64};
  auto in = to_device(make_inputs(dims, mx::float32, 5, 10), gpu);
  auto step = decode_step(in, 6, true, false, gpu);
  REQUIRE(is_step(step.out));
  // The caches the model holds are the step's other outputs.
  CHECK(step.keys.primitive_id() == step.out.primitive_id());
  CHECK(step.values.primitive_id() == step.out.primitive_id());
  CHECK(step.out.siblings().size() == 2);
  auto& prim = dynamic_cast<mx::fast::DecodeAttention&>(step.out.primitive());
  CHECK(prim.lkv() == 6);
  CHECK(prim.q_eps() == kEps);
  CHECK(prim.k_eps() == kEps);
  CHECK(step.out.inputs()[3].id() == in.k_cache.id());
  CHECK(step.out.inputs()[4].id() == in.v_cache.id());
  // Evaluating only a cache runs the step too.
  auto want_keys = with_fusion(false, [&] { return decode_step(in, 6, true, false, gpu).keys; });
  step.keys.eval();
  CHECK(all_close(step.keys, want_keys, {1e-5, 1e-4}, "keys of a step evaluated alone"));

  // Not joined: fusion off, a CPU stream, a mask, two query rows, ropes at other positions.
  CHECK_FALSE(
      is_step(with_fusion(false, [&] { return decode_step(in, 6, true, false, gpu).out; })));
  CHECK_FALSE(is_step(decode_step(in, 6, true, false, mx::Device::cpu).out));
  auto plain = decode_step(in, 6, false, false, gpu);
  CHECK(is_step(plain.out));  // no norms: still one step
  {
    auto q = mx::fast::rope(in.qx, 64, false, 10000.0f, 1.0f, in.offset, std::nullopt, gpu);
    auto k = mx::fast::rope(in.kx, 64, false, 10000.0f, 1.0f, in.offset, std::nullopt, gpu);
    auto keys = mx::slice_update(in.k_cache, k, in.offset, {2}, gpu);
    auto values = mx::slice_update(in.v_cache, in.vx, in.offset, {2}, gpu);
    CHECK_FALSE(is_step(mx::fast::scaled_dot_product_attention(
        q, keys, values, 0.125f, "causal", std::nullopt, std::nullopt, false, gpu)));
  }
  {
    auto q2 = mx::fast::rope(uniform({1, 4, 2, 64}, mx::float32, 30), 64, false, 10000.0f, 1.0f,
                             in.offset, std::nullopt, gpu);
    auto k = mx::fast::rope(in.kx, 64, false, 10000.0f, 1.0f, in.offset, std::nullopt, gpu);
    auto keys = mx::slice_update(in.k_cache, k, in.offset, {2}, gpu);
    auto values = mx::slice_update(in.v_cache, in.vx, in.offset, {2}, gpu);
    CHECK_FALSE(is_step(mx::fast::scaled_dot_product_attention(
        q2, keys, values, 0.125f, "", std::nullopt, std::nullopt, false, gpu)));
  }
  {
    auto other = mx::array(5, mx::int32);  // equal value, another array
    auto q = mx::fast::rope(in.qx, 64, false, 10000.0f, 1.0f, other, std::nullopt, gpu);
    auto k = mx::fast::rope(in.kx, 64, false, 10000.0f, 1.0f, in.offset, std::nullopt, gpu);
    auto keys = mx::slice_update(in.k_cache, k, in.offset, {2}, gpu);
    auto values = mx::slice_update(in.v_cache, in.vx, in.offset, {2}, gpu);
    CHECK_FALSE(is_step(mx::fast::scaled_dot_product_attention(
        q, keys, values, 0.125f, "", std::nullopt, std::nullopt, false, gpu)));
  }
}

TEST_CASE("a decode step on the GPU matches the unfused CPU reference") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  auto cpu = mx::Device::cpu, gpu = mx::Device::gpu;
  struct StepCase {
    Dims dims;
    mx::Dtype dt;
    int offset, lkv;
    bool norm, traditional;
  };
  const std::vector<StepCase> cases = {
      // Qwen3-0.6B's heads; then the same kernel with the new row past the attended keys.
      {{1, 16, 8, 32, 128}, mx::bfloat16, 7, 8, true, false},
      {{1, 16, 8, 32, 128}, mx::bfloat16, 20, 10, true, false},
      // Split keys (few workgroups, 518 keys): the new row in the last chunk, then the first.
      {{2, 4, 2, 600, 64}, mx::float32, 517, 518, false, true},
      {{2, 4, 2, 600, 64}, mx::float32, 100, 518, false, true},
      // GQA 1, a start clamped to the cache's last row (the rope still at position 40).
      {{1, 2, 2, 16, 64}, mx::float16, 40, 16, true, false},
  };
  uint64_t seed = 700;
  for (const auto& c : cases) {
    auto in = make_inputs(c.dims, c.dt, c.offset, seed);
    seed += 10;
    auto want =
        with_fusion(false, [&] { return decode_step(in, c.lkv, c.norm, c.traditional, cpu); });
    mx::eval({want.out, want.keys, want.values});
    auto gin = to_device(in, gpu);
    auto got = gpu_eval_checked(
        [&] {
          auto s = decode_step(gin, c.lkv, c.norm, c.traditional, gpu);
          REQUIRE(is_step(s.out));
          return std::vector<mx::array>{s.out, s.keys, s.values};
        },
        "decode step");
    std::string what = std::string(mx::dtype_to_string(c.dt)) + " heads " +
                       std::to_string(c.dims.hq) + "/" + std::to_string(c.dims.hkv) + " d " +
                       std::to_string(c.dims.d) + " cache " + std::to_string(c.dims.cap) + " at " +
                       std::to_string(c.offset) + " attending " + std::to_string(c.lkv);
    check_step(got, want, c.dt, what);
  }
  CHECK(mx::vulkan::fallback_counts()["DecodeAttention"] == 0);
}

TEST_CASE("a decode step updates caches nothing else holds in place, and copies the others") {
  if (!gpu_present())
    return;
  auto gpu = mx::Device::gpu;
  Dims dims{1, 4, 2, 16, 64};
  auto host = make_inputs(dims, mx::float32, 3, 900);
  auto in = to_device(host, gpu);
  const void* k_before = in.k_cache.buffer().ptr();
  const void* v_before = in.v_cache.buffer().ptr();
  auto step = decode_step(in, 4, true, false, gpu);
  REQUIRE(is_step(step.out));
  in.k_cache = mx::array(0.0f);  // the step holds the only references now
  in.v_cache = mx::array(0.0f);
  step.out.eval();
  CHECK(step.keys.buffer().ptr() == k_before);
  CHECK(step.values.buffer().ptr() == v_before);

  // A cache still held elsewhere keeps its values: the step writes a copy.
  auto held = to_device(host, gpu);
  auto step2 = decode_step(held, 4, true, false, gpu);
  REQUIRE(is_step(step2.out));
  mx::eval({step2.out, step2.keys, step2.values});
  CHECK(step2.keys.buffer().ptr() != held.k_cache.buffer().ptr());
  CHECK(mx::array_equal(held.k_cache, on_device(host.k_cache, gpu), false).item<bool>());
  CHECK(mx::array_equal(held.v_cache, on_device(host.v_cache, gpu), false).item<bool>());
  // Row 3 of the value cache is the new row; the rest is the old cache.
  auto row = mx::slice(step2.values, {0, 0, 3, 0}, {1, 2, 4, 64}, gpu);
  CHECK(mx::array_equal(row, on_device(host.vx, gpu), false).item<bool>());
}

TEST_CASE("a decode step reads q, k and v as columns of a stacked product") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  auto cpu = mx::Device::cpu, gpu = mx::Device::gpu;
  // Batch 2, GQA 2, bf16 with norms (Qwen3's kind), then f32 with a stacked array that is
  // itself a strided view (every other column of a wider one: the rows are then copied).
  struct StackCase {
    Dims dims;
    mx::Dtype dt;
    bool norm, strided_base;
  };
  const std::vector<StackCase> cases = {{{2, 4, 2, 16, 64}, mx::bfloat16, true, false},
                                        {{1, 4, 2, 16, 32}, mx::float32, false, true}};
  uint64_t seed = 1100;
  for (const auto& c : cases) {
    const Dims& dm = c.dims;
    int n = (dm.hq + 2 * dm.hkv) * dm.d;
    auto wide = uniform({dm.b, 1, c.strided_base ? 2 * n : n}, c.dt, seed);
    auto host = make_inputs(dm, c.dt, 5, seed + 1);
    seed += 10;
    // The rows as a model makes them from one product: a split and a head reshape each.
    auto rows_of = [&](const mx::array& stacked_in, const StepInputs& base, mx::Device dev) {
      auto stacked = c.strided_base
                         ? mx::slice(stacked_in, {0, 0, 0}, {dm.b, 1, 2 * n}, {1, 1, 2}, dev)
                         : stacked_in;
      auto parts = mx::split(stacked, {dm.hq * dm.d, (dm.hq + dm.hkv) * dm.d}, -1, dev);
      StepInputs in = base;
      in.qx = mx::reshape(parts[0], {dm.b, dm.hq, 1, dm.d}, dev);
      in.kx = mx::reshape(parts[1], {dm.b, dm.hkv, 1, dm.d}, dev);
      in.vx = mx::reshape(parts[2], {dm.b, dm.hkv, 1, dm.d}, dev);
      return std::make_pair(stacked, in);
    };
    auto want = with_fusion(false, [&] {
      auto [stacked, in] = rows_of(wide, host, cpu);
      return decode_step(in, 6, c.norm, false, cpu);
    });
    mx::eval({want.out, want.keys, want.values});
    auto gwide = on_device(wide, gpu);
    auto ghost = to_device(host, gpu);
    auto got = gpu_eval_checked(
        [&] {
          auto [stacked, in] = rows_of(gwide, ghost, gpu);
          auto s = decode_step(in, 6, c.norm, false, gpu);
          REQUIRE(is_step(s.out));
          auto& prim = dynamic_cast<mx::fast::DecodeAttention&>(s.out.primitive());
          REQUIRE(prim.stacked_cols().has_value());
          CHECK(*prim.stacked_cols() ==
                std::array<int, 3>{0, dm.hq * dm.d, (dm.hq + dm.hkv) * dm.d});
          for (int i = 0; i < 3; ++i) {
            CHECK(s.out.inputs()[i].id() == stacked.id());
          }
          return std::vector<mx::array>{s.out, s.keys, s.values};
        },
        "stacked decode step");
    std::string what = std::string(mx::dtype_to_string(c.dt)) +
                       (c.strided_base ? ", strided stacked array" : ", dense stacked array");
    check_step(got, want, c.dt, what);
  }
  // Rows that are not all whole columns of [B, 1, N] arrays keep their own inputs: here k
  // and v are, q is columns of a [B, 2, N] array.
  Dims dm{1, 4, 2, 16, 64};
  auto in = to_device(make_inputs(dm, mx::float32, 5, 1200), gpu);
  auto wide = on_device(uniform({1, 2, 8 * 64}, mx::float32, 1201), gpu);
  auto good = on_device(uniform({1, 1, 8 * 64}, mx::float32, 1202), gpu);
  in.qx = mx::reshape(mx::slice(wide, {0, 0, 0}, {1, 1, 4 * 64}, gpu), {1, 4, 1, 64}, gpu);
  in.kx = mx::reshape(mx::slice(good, {0, 0, 4 * 64}, {1, 1, 6 * 64}, gpu), {1, 2, 1, 64}, gpu);
  in.vx = mx::reshape(mx::slice(good, {0, 0, 6 * 64}, {1, 1, 8 * 64}, gpu), {1, 2, 1, 64}, gpu);
  auto step = decode_step(in, 6, true, false, gpu);
  REQUIRE(is_step(step.out));
  CHECK_FALSE(
      dynamic_cast<mx::fast::DecodeAttention&>(step.out.primitive()).stacked_cols().has_value());
  CHECK(mx::vulkan::fallback_counts()["DecodeAttention"] == 0);
}
