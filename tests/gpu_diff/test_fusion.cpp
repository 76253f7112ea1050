// Producer absorption (mlx/fusion.h, docs/fusion.md): rope and quantized_matmul of an
// rms_norm's output read the norm's input and normalize on the fly. The graph is checked
// (the norm node is no longer an input), then the GPU result against the CPU reference
// built with fusion off, on shapes where the fused kernels apply and where they fall back
// to separate launches (a row's rope invocations not a power of two within a subgroup; a
// product with more than 8 rows; a norm weight not aligned to x's vectors). An add of a
// decode-sized quantized product and an array of its shape becomes the product with a
// residual.
//
// Tolerances (a SwiGLU product's are at its test). rope: the fused kernel sums the squares in another order than the norm
// kernel, so the normalized value, rounded to the dtype, may land one ulp of the dtype away
// before the rotation (two roundings of the dtype for 16-bit outputs); f32 as the rope
// suite (1e-4). quantized_matmul: the fused product does not round the normalized values
// to the dtype (templates/qmv.glsl), the reference does: for bf16 each of the K terms is
// off by up to 2^-9 of itself, with random signs, so 4 * sqrt(K) * 2^-9 absolute (terms are
// below 1 in size) plus two roundings of the output; f32 as the quantized_matmul suite
// (1e-6 * K absolute, inputs in [-1, 1], times 4 for the normalized values' size). A
// residual added by the product is rounded once with it, the reference rounds the product
// first: one more rounding of the dtype, inside the two allowed.
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

Tolerance fused_tolerance(mx::Dtype dt, double f32_atol) {
  if (dt == mx::float32) {
    return {2e-5, f32_atol};
  }
  Tolerance one = default_tolerance(dt);
  return {2 * one.rtol, 2 * one.atol};
}

mx::array norm_rope(const mx::array& x, const mx::array& w, int offset, bool trad,
                    mx::StreamOrDevice s) {
  int d = x.shape(-1);
  return mx::fast::rope(mx::fast::rms_norm(x, w, kEps, s), d, trad, 10000.0f, 1.0f, offset,
                        std::nullopt, s);
}

}  // namespace

TEST_CASE("rope and quantized_matmul of an rms_norm read the norm's input") {
  auto cpu = mx::Device::cpu;
  auto x = uniform({1, 2, 3, 64}, mx::float32, 1);
  auto w = uniform({64}, mx::float32, 2);
  auto fused = norm_rope(x, w, 5, false, cpu);
  REQUIRE(fused.has_primitive());
  auto* rope = dynamic_cast<mx::fast::RoPE*>(&fused.primitive());
  REQUIRE(rope != nullptr);
  CHECK(rope->norm_eps() == kEps);
  CHECK(fused.inputs()[0].id() == x.id());

  auto wq = mx::quantize(uniform({32, 64}, mx::float32, 3), 64, 4, "affine", std::nullopt, cpu);
  auto xs = uniform({2, 64}, mx::float32, 4);
  auto prod = mx::quantized_matmul(mx::fast::rms_norm(xs, w, kEps, cpu), wq[0], wq[1], wq[2], true,
                                   64, 4, "affine", cpu);
  auto* qmm = dynamic_cast<mx::QuantizedMatmul*>(&prod.primitive());
  REQUIRE(qmm != nullptr);
  CHECK(qmm->norm_eps() == kEps);
  CHECK(prod.inputs()[0].id() == xs.id());

  // Not absorbed: fusion off, a norm already evaluated, a partial rotation, while tracing.
  auto plain = with_fusion(false, [&] { return norm_rope(x, w, 5, false, cpu); });
  CHECK_FALSE(dynamic_cast<mx::fast::RoPE&>(plain.primitive()).norm_eps().has_value());
  auto normed = mx::fast::rms_norm(x, w, kEps, cpu);
  normed.eval();
  auto after_eval = mx::fast::rope(normed, 64, false, 10000.0f, 1.0f, 5, std::nullopt, cpu);
  CHECK(after_eval.inputs()[0].id() == normed.id());
  auto partial = mx::fast::rope(mx::fast::rms_norm(x, w, kEps, cpu), 32, false, 10000.0f, 1.0f, 5,
                                std::nullopt, cpu);
  CHECK_FALSE(dynamic_cast<mx::fast::RoPE&>(partial.primitive()).norm_eps().has_value());
  auto traced = mx::compile([&](const std::vector<mx::array>& in) {
    auto y = norm_rope(in[0], in[1], 5, false, cpu);
    CHECK_FALSE(dynamic_cast<mx::fast::RoPE&>(y.primitive()).norm_eps().has_value());
    return std::vector<mx::array>{y};
  });
  auto t = traced({x, w})[0];
  auto want = plain;
  CHECK(mx::allclose(t, want).item<bool>());
  // The fused graph gives the unfused values on the CPU (the same two steps).
  CHECK(mx::array_equal(fused, want, false).item<bool>());
}

TEST_CASE("an add takes over the decode-sized quantized product it adds to") {
  auto cpu = mx::Device::cpu;
  auto wq = mx::quantize(uniform({32, 64}, mx::float32, 5), 64, 4, "affine", std::nullopt, cpu);
  auto product = [&](const mx::array& x) {
    return mx::quantized_matmul(x, wq[0], wq[1], wq[2], true, 64, 4, "affine", cpu);
  };
  auto x = uniform({3, 64}, mx::float32, 6);
  auto r = uniform({3, 32}, mx::float32, 7);
  auto nw = uniform({64}, mx::float32, 8);
  auto residual_of = [](const mx::array& a) {
    auto* q = dynamic_cast<mx::QuantizedMatmul*>(&a.primitive());
    return q != nullptr && q->residual();
  };
  auto left = mx::add(r, product(x), cpu);
  auto right = mx::add(product(x), r, cpu);
  auto both = mx::add(r, product(mx::fast::rms_norm(x, nw, kEps, cpu)), cpu);
  CHECK(residual_of(left));
  CHECK(residual_of(right));
  CHECK(left.inputs().back().id() == r.id());
  REQUIRE(residual_of(both));
  CHECK(dynamic_cast<mx::QuantizedMatmul&>(both.primitive()).norm_eps() == kEps);
  CHECK(both.inputs().size() == 6);
  // Not taken over: a broadcast residual, another dtype, more than 8 rows, fusion off.
  CHECK_FALSE(residual_of(mx::add(product(x), uniform({32}, mx::float32, 9), cpu)));
  CHECK_FALSE(residual_of(mx::add(product(x), mx::astype(r, mx::float16, cpu), cpu)));
  CHECK_FALSE(residual_of(mx::add(product(uniform({9, 64}, mx::float32, 10)),
                                  uniform({9, 32}, mx::float32, 11), cpu)));
  auto plain = with_fusion(false, [&] { return mx::add(r, product(x), cpu); });
  CHECK_FALSE(residual_of(plain));
  // The CPU runs the absorbed steps as they were: the same values.
  CHECK(mx::array_equal(left, plain, false).item<bool>());
}

TEST_CASE("rope of an rms_norm on the GPU matches the unfused CPU reference") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  auto cpu = mx::Device::cpu, gpu = mx::Device::gpu;
  // Decode and prefill heads (a row's 8 or 16 invocations: fused where the subgroup holds
  // them), short rows (4 invocations), and 96 pairs (12 invocations: a separate norm).
  const std::vector<mx::Shape> shapes = {{1, 4, 1, 128}, {1, 2, 5, 128}, {2, 3, 4, 64}, {1, 2, 3, 192}};
  uint64_t seed = 100;
  for (auto dt : {mx::float32, mx::float16, mx::bfloat16}) {
    for (const auto& shape : shapes) {
      for (bool trad : {false, true}) {
        auto x = uniform(shape, dt, seed++);
        auto w = uniform({shape.back()}, dt, seed++);
        auto want = with_fusion(false, [&] { return norm_rope(x, w, 7, trad, cpu); });
        want.eval();
        auto got = gpu_eval_checked(
            [&] {
              return std::vector<mx::array>{
                  norm_rope(on_device(x, gpu), on_device(w, gpu), 7, trad, gpu)};
            },
            "rope(rms_norm)")[0];
        std::string what = "rope(rms_norm) " + std::string(mx::dtype_to_string(dt)) + " " +
                           mx::shape_to_string(shape) + (trad ? " traditional" : "");
        CHECK(all_close(got, want, fused_tolerance(dt, 1e-4), what));
      }
    }
  }
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["RoPE"] == 0);
  CHECK(counts["RMSNorm"] == 0);
}

TEST_CASE("quantized_matmul of an rms_norm on the GPU matches the unfused CPU reference") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  auto cpu = mx::Device::cpu, gpu = mx::Device::gpu;
  const int K = 256;
  uint64_t seed = 200;
  // M = 1, 3 and 8 rows (qmv applies the norm), 12 rows (qmm: a separate norm first).
  const std::vector<mx::Shape> xshapes = {{1, K}, {3, K}, {2, 4, K}, {12, K}};
  for (auto dt : {mx::float32, mx::bfloat16}) {
    for (int bits : {4, 8}) {
      auto q = mx::quantize(uniform({72, K}, dt, seed++), 64, bits, "affine", std::nullopt, cpu);
      auto nw = uniform({K}, dt, seed++);
      for (const auto& xs : xshapes) {
        auto x = uniform(xs, dt, seed++);
        auto make = [&](mx::Device d) {
          return mx::quantized_matmul(mx::fast::rms_norm(on_device(x, d), on_device(nw, d), kEps, d),
                                      on_device(q[0], d), on_device(q[1], d), on_device(q[2], d),
                                      true, 64, bits, "affine", d);
        };
        auto want = with_fusion(false, [&] { return make(cpu); });
        want.eval();
        auto got =
            gpu_eval_checked([&] { return std::vector<mx::array>{make(gpu)}; }, "qmv(rms_norm)")[0];
        std::string what = "quantized_matmul(rms_norm) " + std::string(mx::dtype_to_string(dt)) +
                           " bits " + std::to_string(bits) + " x " + mx::shape_to_string(xs);
        Tolerance tol = dt == mx::float32 ? fused_tolerance(dt, 1e-6 * K * 4)
                                          : Tolerance{1.0 / 128, 4 * std::sqrt(double(K)) / 512};
        CHECK(all_close(got, want, tol, what));
      }
    }
  }
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["QuantizedMatmul"] == 0);
  CHECK(counts["RMSNorm"] == 0);
}

TEST_CASE("quantized products with a residual on the GPU match the unfused CPU reference") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  auto cpu = mx::Device::cpu, gpu = mx::Device::gpu;
  const int K = 256, N = 72;
  uint64_t seed = 300;
  for (auto dt : {mx::float32, mx::bfloat16}) {
    auto q = mx::quantize(uniform({N, K}, dt, seed++), 64, 4, "affine", std::nullopt, cpu);
    // A norm weight at element 1 of its buffer: not aligned to x's vectors, so the GPU
    // runs the norm, the product and the add as separate launches.
    auto nw_buf = uniform({K + 1}, dt, seed++);
    for (int m : {1, 3, 8}) {
      auto x = uniform({m, K}, dt, seed++);
      auto r = uniform({m, N}, dt, seed++);
      for (int norm = 0; norm < 3; ++norm) {
        auto make = [&](mx::Device d) {
          auto xs = on_device(x, d);
          if (norm > 0) {
            auto nw = on_device(nw_buf, d);
            nw = norm == 1 ? mx::slice(nw, {0}, {K}, d) : mx::slice(nw, {1}, {K + 1}, d);
            xs = mx::fast::rms_norm(xs, nw, kEps, d);
          }
          auto p = mx::quantized_matmul(xs, on_device(q[0], d), on_device(q[1], d),
                                        on_device(q[2], d), true, 64, 4, "affine", d);
          return mx::add(on_device(r, d), p, d);
        };
        auto want = with_fusion(false, [&] { return make(cpu); });
        want.eval();
        auto got =
            gpu_eval_checked([&] { return std::vector<mx::array>{make(gpu)}; }, "qmv + residual")[0];
        std::string what = "residual + quantized_matmul " + std::string(mx::dtype_to_string(dt)) +
                           " M " + std::to_string(m) +
                           (norm == 0 ? "" : norm == 1 ? " of rms_norm" : " of rms_norm (unaligned)");
        Tolerance tol = dt == mx::float32 ? fused_tolerance(dt, 1e-6 * K * 4)
                                          : Tolerance{1.0 / 128, 4 * std::sqrt(double(K)) / 512};
        CHECK(all_close(got, want, tol, what));
      }
    }
  }
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["QuantizedMatmul"] == 0);
  CHECK(counts["Add"] == 0);
}

namespace {

// A KV-cache style update: rope (of an rms_norm when `norm`) of x written into `cache` at
// `start` along axis 2.
mx::array rope_update(const mx::array& cache, const mx::array& x, const mx::array& w,
                      const mx::array& start, bool norm, mx::StreamOrDevice s) {
  int d = x.shape(-1);
  auto k = norm ? mx::fast::rms_norm(x, w, kEps, s) : x;
  k = mx::fast::rope(k, d, false, 10000.0f, 1.0f, start, std::nullopt, s);
  return mx::slice_update(cache, k, start, {2}, s);
}

bool writes_into(const mx::array& a) {
  auto* rope = dynamic_cast<mx::fast::RoPE*>(&a.primitive());
  return rope != nullptr && rope->into();
}

}  // namespace

TEST_CASE("a slice_update of a rope's output at an array start is one op") {
  auto cpu = mx::Device::cpu;
  auto cache = uniform({1, 2, 16, 64}, mx::float32, 20);
  auto x = uniform({1, 2, 3, 64}, mx::float32, 21);
  auto w = uniform({64}, mx::float32, 22);
  auto start = mx::array(5, mx::int32);
  auto fused = rope_update(cache, x, w, start, true, cpu);
  REQUIRE(writes_into(fused));
  CHECK(fused.inputs().back().id() == start.id());
  CHECK(fused.inputs()[fused.inputs().size() - 2].id() == cache.id());
  CHECK(dynamic_cast<mx::fast::RoPE&>(fused.primitive()).norm_eps() == kEps);
  CHECK(fused.shape() == cache.shape());
  auto plain = with_fusion(false, [&] { return rope_update(cache, x, w, start, true, cpu); });
  CHECK_FALSE(writes_into(plain));
  CHECK(mx::array_equal(fused, plain, false).item<bool>());
  // Not absorbed: another axis, an int64 start, a broadcast update, another dtype.
  auto k = mx::fast::rope(x, 64, false, 10000.0f, 1.0f, start, std::nullopt, cpu);
  CHECK_FALSE(writes_into(mx::slice_update(cache, k, mx::array(1, mx::int32), {1}, cpu)));
  CHECK_FALSE(writes_into(mx::slice_update(cache, k, mx::array(5, mx::int64), {2}, cpu)));
  auto one_head = mx::fast::rope(uniform({1, 1, 3, 64}, mx::float32, 23), 64, false, 10000.0f, 1.0f,
                                 start, std::nullopt, cpu);
  CHECK_FALSE(writes_into(mx::slice_update(cache, one_head, start, {2}, cpu)));
  auto k16 = mx::fast::rope(mx::astype(x, mx::float16, cpu), 64, false, 10000.0f, 1.0f, start,
                            std::nullopt, cpu);
  CHECK_FALSE(writes_into(mx::slice_update(cache, k16, start, {2}, cpu)));
}

TEST_CASE("a rope written into a slice on the GPU matches the unfused CPU reference") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  auto cpu = mx::Device::cpu, gpu = mx::Device::gpu;
  struct RopeInto {
    mx::Shape cache, x;
    int start;  // clamped by slice_update when the rows would pass the end
  };
  const std::vector<RopeInto> cases = {{{1, 8, 32, 128}, {1, 8, 1, 128}, 7},
                                       {{1, 4, 16, 64}, {1, 4, 5, 64}, 14},
                                       {{2, 2, 8, 64}, {2, 2, 8, 64}, 0}};
  uint64_t seed = 400;
  for (auto dt : {mx::float32, mx::bfloat16}) {
    for (const auto& c : cases) {
      for (bool norm : {false, true}) {
        auto cache = uniform(c.cache, dt, seed++);
        auto x = uniform(c.x, dt, seed++);
        auto w = uniform({c.x.back()}, dt, seed++);
        auto start = mx::array(c.start, mx::int32);
        auto want = with_fusion(false, [&] { return rope_update(cache, x, w, start, norm, cpu); });
        want.eval();
        auto got = gpu_eval_checked(
            [&] {
              return std::vector<mx::array>{rope_update(on_device(cache, gpu), on_device(x, gpu),
                                                        on_device(w, gpu), start, norm, gpu)};
            },
            "slice_update(rope)")[0];
        std::string what = "slice_update(rope" + std::string(norm ? "(rms_norm)" : "") + ") " +
                           std::string(mx::dtype_to_string(dt)) + " " +
                           mx::shape_to_string(c.x) + " into " + mx::shape_to_string(c.cache) +
                           " at " + std::to_string(c.start);
        CHECK(all_close(got, want, fused_tolerance(dt, 1e-4), what));
      }
    }
  }
  // In place: a cache nobody else holds is donated to the update.
  auto cache = on_device(uniform({1, 2, 8, 64}, mx::float32, 500), gpu);
  auto x = on_device(uniform({1, 2, 1, 64}, mx::float32, 501), gpu);
  const void* before = cache.buffer().ptr();
  auto start = mx::array(3, mx::int32);
  auto updated = rope_update(cache, x, x, start, false, gpu);
  cache = mx::array(0.0f);  // the update holds the only reference now
  REQUIRE(writes_into(updated));
  updated.eval();
  CHECK(updated.buffer().ptr() == before);
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["RoPE"] == 0);
  CHECK(counts["DynamicSliceUpdate"] == 0);
}

namespace {

// MLX-LM's SwiGLU, compiled: silu(g) * u with silu(x) = x * sigmoid(x).
std::vector<mx::array> swiglu_fn(const std::vector<mx::array>& in) {
  return {mx::multiply(mx::multiply(in[0], mx::sigmoid(in[0])), in[1])};
}

// An MLP's gate/up product (stacked, as examples/qwen3 stacks it), its SwiGLU and the down
// product's input: silu(P[:, :I]) * P[:, I:] of P = x (rms_norm'd when `norm`) times wq.
mx::array glu_input(const mx::array& x, const std::vector<mx::array>& wq, const mx::array& nw,
                    bool norm, mx::StreamOrDevice s) {
  static auto swiglu = mx::compile(swiglu_fn, true);
  auto xs = norm ? mx::fast::rms_norm(x, nw, kEps, s) : x;
  auto p = mx::quantized_matmul(xs, wq[0], wq[1], wq[2], true, 64, 4, "affine", s);
  auto halves = mx::split(p, 2, -1, s);
  return swiglu({halves[0], halves[1]})[0];
}

// The fused SwiGLU product's reference on the CPU: the fused norm does not round the
// normalized x (templates/qmv.glsl), so x is normalized and the product summed in f32, the
// product rounded to dt, then the SwiGLU taken in dt.
mx::array glu_reference_f32_norm(const mx::array& x, const std::vector<mx::array>& wq,
                                 const mx::array& nw, mx::Dtype dt) {
  auto cpu = mx::Device::cpu;
  auto f32 = [&](const mx::array& a) { return mx::astype(a, mx::float32, cpu); };
  auto xs = mx::fast::rms_norm(f32(x), f32(nw), kEps, cpu);
  auto p = mx::quantized_matmul(xs, wq[0], f32(wq[1]), f32(wq[2]), true, 64, 4, "affine", cpu);
  auto halves = mx::split(mx::astype(p, dt, cpu), 2, -1, cpu);
  const auto& g = halves[0];
  return mx::multiply(mx::multiply(g, mx::sigmoid(g, cpu), cpu), halves[1], cpu);
}

bool is_glu_product(const mx::array& a) {
  auto* q = a.has_primitive() ? dynamic_cast<mx::QuantizedMatmul*>(&a.primitive()) : nullptr;
  return q != nullptr && q->glu() != nullptr;
}

}  // namespace

TEST_CASE("a compiled SwiGLU of a decode-sized product's halves becomes the product's epilogue") {
  auto cpu = mx::Device::cpu;
  mx::StreamOrDevice s = cpu;
  // The compiled group runs on the default stream: make it the CPU's, as the product's.
  auto was = mx::default_device();
  mx::set_default_device(cpu);
  auto wq = mx::quantize(uniform({128, 64}, mx::float32, 30), 64, 4, "affine", std::nullopt, cpu);
  auto wd = mx::quantize(uniform({16, 64}, mx::float32, 31), 64, 4, "affine", std::nullopt, cpu);
  auto down = [&](const mx::array& h) {
    return mx::quantized_matmul(h, wd[0], wd[1], wd[2], true, 64, 4, "affine", s);
  };
  auto x = uniform({2, 64}, mx::float32, 32);
  auto nw = uniform({64}, mx::float32, 33);
  auto h = glu_input(x, wq, nw, true, s);
  REQUIRE(h.has_primitive());
  CHECK(std::string(h.primitive().name()) == "Compiled");
  // The down product reads the gate/up product with the activation as its epilogue.
  auto y = down(h);
  const auto& fused = y.inputs()[0];
  REQUIRE(is_glu_product(fused));
  CHECK(fused.shape() == h.shape());
  CHECK(dynamic_cast<mx::QuantizedMatmul&>(fused.primitive()).norm_eps() == kEps);
  CHECK(fused.inputs()[0].id() == x.id());
  // The CPU runs the product and the compiled group as they were: the same values.
  auto plain = with_fusion(false, [&] { return down(glu_input(x, wq, nw, true, s)); });
  CHECK_FALSE(is_glu_product(plain.inputs()[0]));
  CHECK(mx::array_equal(y, plain, false).item<bool>());
  // Not absorbed: another activation, the halves swapped, more than 8 rows.
  auto p = mx::quantized_matmul(x, wq[0], wq[1], wq[2], true, 64, 4, "affine", s);
  auto halves = mx::split(p, 2, -1, s);
  static auto sum_gate = mx::compile(
      [](const std::vector<mx::array>& in) {
        return std::vector<mx::array>{mx::multiply(mx::add(in[0], mx::sigmoid(in[0])), in[1])};
      },
      true);
  CHECK_FALSE(is_glu_product(down(sum_gate({halves[0], halves[1]})[0]).inputs()[0]));
  static auto swiglu = mx::compile(swiglu_fn, true);
  CHECK_FALSE(is_glu_product(down(swiglu({halves[1], halves[0]})[0]).inputs()[0]));
  auto tall = glu_input(uniform({9, 64}, mx::float32, 34), wq, nw, false, s);
  CHECK_FALSE(is_glu_product(down(tall).inputs()[0]));
  mx::set_default_device(was);
}

TEST_CASE("a SwiGLU product on the GPU matches the unfused CPU reference") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  auto cpu = mx::Device::cpu, gpu = mx::Device::gpu;
  const int K = 256, N = 144;  // 72 columns of each half: the last team's columns ragged
  uint64_t seed = 600;
  for (auto dt : {mx::float32, mx::bfloat16}) {
    std::vector<mx::array> wq;
    for (auto& a : mx::quantize(uniform({N, K}, dt, seed++), 64, 4, "affine", std::nullopt, cpu)) {
      wq.push_back(a);
    }
    auto nw_buf = uniform({K + 1}, dt, seed++);
    for (int m : {1, 3}) {
      auto x = uniform({m, K}, dt, seed++);
      // norm 0: none; 1: an aligned weight; 2: a weight at element 1 (the GPU then runs the
      // norm, the product and the compiled group as separate launches).
      for (int norm = 0; norm < 3; ++norm) {
        auto make = [&](mx::Device d) {
          std::vector<mx::array> w{on_device(wq[0], d), on_device(wq[1], d), on_device(wq[2], d)};
          auto nw = on_device(nw_buf, d);
          nw = norm == 2 ? mx::slice(nw, {1}, {K + 1}, d) : mx::slice(nw, {0}, {K}, d);
          auto h = glu_input(on_device(x, d), w, nw, norm > 0, d);
          auto fused = mx::glu_of_product(h, mx::to_stream(d));
          return fused ? *fused : h;
        };
        // The fused norm does not round the normalized x to the dtype (templates/qmv.glsl),
        // so its reference normalizes in f32; the separate launches (norm 2) round as the
        // graph does.
        auto want = with_fusion(false, [&] {
          return norm != 1 ? make(cpu)
                           : glu_reference_f32_norm(x, wq, mx::slice(nw_buf, {0}, {K}, cpu), dt);
        });
        want.eval();
        auto got = gpu_eval_checked([&] { return std::vector<mx::array>{make(gpu)}; }, "glu")[0];
        std::string what = "swiglu(quantized_matmul) " + std::string(mx::dtype_to_string(dt)) +
                           " M " + std::to_string(m) + " norm " + std::to_string(norm);
        // The product's sums (f32 on the GPU, double on the CPU) may round to neighbouring
        // values of the dtype, which silu(g) * u carries into about two of its roundings.
        Tolerance tol = dt == mx::float32 ? fused_tolerance(dt, 1e-6 * K * 4)
                                          : Tolerance{1.0 / 64, 1.0 / 64};
        CHECK(all_close(got, want, tol, what));
      }
    }
  }
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["QuantizedMatmul"] == 0);
  CHECK(counts["Compiled"] == 0);
}

TEST_CASE("a SwiGLU product with two columns of each half a team matches the CPU reference") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  auto cpu = mx::Device::cpu, gpu = mx::Device::gpu;
  // Long rows in two parts and enough columns that each team takes 2 columns of the gate half
  // and the same 2 of the up half (nc=4, codegen/qmv.cpp): K = 1024 with 8-lane teams
  // (lavapipe), K = 4096 with 32-lane ones (an 8B-class gate/up on the H200), and 3 rows
  // (MR 4, one part) with 16385 columns a half on lavapipe. Odd halves leave the last
  // team's second column past N / 2.
  struct Shape {
    int m, k, n;
  };
  uint64_t seed = 650;
  for (Shape sh : {Shape{1, 1024, 16402}, Shape{1, 4096, 4098}, Shape{3, 1024, 32770}}) {
    for (auto dt : {mx::float32, mx::bfloat16}) {
      std::vector<mx::array> wq;
      for (auto& a :
           mx::quantize(uniform({sh.n, sh.k}, dt, seed++), 64, 4, "affine", std::nullopt, cpu)) {
        wq.push_back(a);
      }
      auto nw = uniform({sh.k}, dt, seed++);
      auto x = uniform({sh.m, sh.k}, dt, seed++);
      auto make = [&](mx::Device d) {
        std::vector<mx::array> w{on_device(wq[0], d), on_device(wq[1], d), on_device(wq[2], d)};
        auto h = glu_input(on_device(x, d), w, on_device(nw, d), true, d);
        auto fused = mx::glu_of_product(h, mx::to_stream(d));
        return fused ? *fused : h;
      };
      auto want = with_fusion(false, [&] { return glu_reference_f32_norm(x, wq, nw, dt); });
      want.eval();
      auto got = gpu_eval_checked([&] { return std::vector<mx::array>{make(gpu)}; }, "glu")[0];
      Tolerance tol =
          dt == mx::float32 ? fused_tolerance(dt, 1e-6 * sh.k * 4) : Tolerance{1.0 / 64, 1.0 / 64};
      CHECK(all_close(got, want, tol,
                      "swiglu(quantized_matmul) M " + std::to_string(sh.m) + " K " +
                          std::to_string(sh.k) + " N " + std::to_string(sh.n) + " " +
                          mx::dtype_to_string(dt)));
    }
  }
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["QuantizedMatmul"] == 0);
  CHECK(counts["Compiled"] == 0);
}

TEST_CASE("a long-K decode product split into parts keeps its norm, residual and SwiGLU") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  auto cpu = mx::Device::cpu, gpu = mx::Device::gpu;
  // K = 8384 (262 packs): qmv's column groups take two parts (codegen/matmul.cpp), whose
  // sums, and the norm's sums of squares, meet before the epilogue.
  const int K = 8384, N = 144;
  uint64_t seed = 700;
  for (auto dt : {mx::float32, mx::bfloat16}) {
    std::vector<mx::array> wq;
    for (auto& a : mx::quantize(uniform({N, K}, dt, seed++), 64, 4, "affine", std::nullopt, cpu)) {
      wq.push_back(a);
    }
    auto nw = uniform({K}, dt, seed++);
    auto x = uniform({1, K}, dt, seed++);
    auto r = uniform({1, N}, dt, seed++);
    auto residual = [&](mx::Device d) {
      std::vector<mx::array> w{on_device(wq[0], d), on_device(wq[1], d), on_device(wq[2], d)};
      auto xs = mx::fast::rms_norm(on_device(x, d), on_device(nw, d), kEps, d);
      auto p = mx::quantized_matmul(xs, w[0], w[1], w[2], true, 64, 4, "affine", d);
      return mx::add(on_device(r, d), p, d);
    };
    auto swiglu = [&](mx::Device d) {
      std::vector<mx::array> w{on_device(wq[0], d), on_device(wq[1], d), on_device(wq[2], d)};
      auto h = glu_input(on_device(x, d), w, on_device(nw, d), false, d);
      auto fused = mx::glu_of_product(h, mx::to_stream(d));
      return fused ? *fused : h;
    };
    std::string name = mx::dtype_to_string(dt);
    Tolerance tol = dt == mx::float32 ? fused_tolerance(dt, 1e-6 * K * 4)
                                      : Tolerance{1.0 / 128, 4 * std::sqrt(double(K)) / 512};
    auto want = with_fusion(false, [&] { return residual(cpu); });
    want.eval();
    auto got = gpu_eval_checked([&] { return std::vector<mx::array>{residual(gpu)}; }, "res")[0];
    CHECK(all_close(got, want, tol, "residual + quantized_matmul(rms_norm) " + name));
    // As the SwiGLU test above: neighbouring roundings of the product carried through.
    Tolerance glu_tol = dt == mx::float32 ? tol : Tolerance{1.0 / 64, 1.0 / 64};
    want = with_fusion(false, [&] { return swiglu(cpu); });
    want.eval();
    got = gpu_eval_checked([&] { return std::vector<mx::array>{swiglu(gpu)}; }, "glu")[0];
    CHECK(all_close(got, want, glu_tol, "swiglu(quantized_matmul) " + name));
  }
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["QuantizedMatmul"] == 0);
  CHECK(counts["Compiled"] == 0);
}

namespace {

// MLX-LM's QuantizedEmbedding: the rows of a quantized table, dequantized.
mx::array embed(const std::vector<mx::array>& table, const mx::array& ids, int bits,
                mx::StreamOrDevice s) {
  return mx::dequantize(mx::take(table[0], ids, 0, s), mx::take(table[1], ids, 0, s),
                        mx::take(table[2], ids, 0, s), 64, bits, "affine", std::nullopt,
                        std::nullopt, s);
}

bool reads_rows(const mx::array& a) {
  auto* dq = a.has_primitive() ? dynamic_cast<mx::Dequantize*>(&a.primitive()) : nullptr;
  return dq != nullptr && dq->rows();
}

}  // namespace

TEST_CASE("a quantized embedding's lookup is one dequantize through the indices") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  auto cpu = mx::Device::cpu, gpu = mx::Device::gpu;
  uint64_t seed = 1200;
  for (int bits : {3, 4, 8}) {
    for (auto dt : {mx::bfloat16, mx::float32}) {
      auto w = uniform({50, 256}, dt, seed++);
      auto table = mx::quantize(w, 64, bits, "affine", std::nullopt, cpu);
      mx::eval(table);
      std::vector<mx::array> gtable;
      for (auto& t : table) {
        gtable.push_back(on_device(t, gpu));
      }
      // A decode step's one token, a batch with repeats, and a negative index (from the end).
      for (auto ids : {mx::array({7}, {1, 1}, mx::int32), mx::array({3, 49, 3, 0, -1, 12}, {2, 3}),
                       mx::array({5u, 44u}, {2}, mx::uint32)}) {
        auto fused = embed(gtable, ids, bits, gpu);
        REQUIRE(reads_rows(fused));
        CHECK(fused.inputs()[3].id() == ids.id());
        auto want = with_fusion(false, [&] { return embed(table, ids, bits, cpu); });
        auto got = gpu_eval_checked([&] { return std::vector<mx::array>{embed(gtable, ids, bits, gpu)}; },
                                    "dequantize(take)")[0];
        std::string what = "embedding " + std::to_string(bits) + " bits " +
                           std::string(mx::dtype_to_string(dt)) + " ids " +
                           mx::shape_to_string(ids.shape());
        CHECK(all_close(got, want, {0.0, 0.0}, what));
      }
    }
  }
  // An index out of range reads zeros on the GPU, fused or not (docs/indexing.md); the CPU
  // raises.
  auto table = mx::quantize(uniform({8, 64}, mx::float32, 1300), 64, 4, "affine", std::nullopt, cpu);
  std::vector<mx::array> gtable;
  for (auto& t : table) {
    gtable.push_back(on_device(t, gpu));
  }
  auto ids = mx::array({1, 9, -9, 2}, {4});
  auto fused = embed(gtable, ids, 4, gpu);
  REQUIRE(reads_rows(fused));
  auto plain = with_fusion(false, [&] { return embed(gtable, ids, 4, gpu); });
  CHECK_FALSE(reads_rows(plain));
  CHECK(mx::array_equal(fused, plain, false).item<bool>());
  CHECK(mx::all(mx::equal(mx::slice(fused, {1, 0}, {3, 64}), mx::array(0.0f))).item<bool>());
  CHECK_THROWS_AS(embed(table, ids, 4, cpu).eval(), std::invalid_argument);
  // Not absorbed: two index arrays, a take along another axis, a CPU stream.
  auto other = mx::array({1, 2, 3, 4}, {4});
  CHECK_FALSE(reads_rows(mx::dequantize(mx::take(gtable[0], ids, 0, gpu),
                                        mx::take(gtable[1], other, 0, gpu),
                                        mx::take(gtable[2], ids, 0, gpu), 64, 4, "affine",
                                        std::nullopt, std::nullopt, gpu)));
  CHECK_FALSE(reads_rows(embed(table, mx::array({1}, {1}), 4, cpu)));
  CHECK(mx::vulkan::fallback_counts()["Dequantize"] == 0);
}
