// The quantization kernels on the GPU ("quant", "qmv", "qmm") against the CPU reference,
// for every bits x group size x dtype x transpose combination, M from 1 to 128, and
// batched weights; addmm on the gemm family's epilogue. No call takes the CPU route.
//
// quantize and dequantize: bit for bit (the same f32 steps; the GPU corrects its
// divisions to the rounded quotient).
// quantized_matmul: the GPU sums s * sum(x q) + b * sum(x) in f32, as MLX's GPU kernels
// do, while the CPU reference (as MLX's CPU backend) rounds each dequantized weight to the
// dtype first. So the reference here is the product with the weights dequantized in f32
// (scales and biases widened to f32), summed in double and rounded once: f32 outputs are
// within the f32 sum's error (1e-6 * K absolute, inputs in [-1, 1]), 16-bit outputs within
// one rounding of the dtype (default_tolerance) plus u * sum|x||w| (u: the dtype's unit
// roundoff), since the cooperative-matrix qmm multiplies weights rounded to the dtype.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>

#include <algorithm>

#include "codegen/matmul.h"
#include "harness.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/gemm_relayout.h"
#include "mlx/backend/vulkan/qmm_dequant.h"

namespace mx = mlx::core;
namespace cg = mlx::core::vulkan::codegen;
using namespace gpu_diff;

namespace {

mx::array uniform(const mx::Shape& shape, mx::Dtype dt, uint64_t seed) {
  auto u = mx::random::uniform(shape, mx::float32, mx::random::key(seed), mx::Device::cpu);
  return mx::astype(mx::subtract(mx::multiply(u, mx::array(2.0f), mx::Device::cpu), mx::array(1.0f),
                                 mx::Device::cpu),
                    dt, mx::Device::cpu);
}

struct QCase {
  int bits, gs;
  mx::Dtype dt;
  bool transpose;
  int m;
  int n = 40;
  int k_groups = 3;
  std::vector<int> batch = {};
  float x_shift = 0.0f;  // added to x's uniform [-1, 1) values
  float x_split = 0.0f;  // added to values 0-3 of every 8, subtracted from values 4-7
  float x_scale = 1.0f;  // a power of two x is multiplied by; the check undoes it
};

void check_qmm(const QCase& c, uint64_t seed) {
  int k = c.gs * c.k_groups;
  // Groups run along w's last dim: n (transpose false) must be whole groups too.
  int n = c.transpose ? c.n : (c.n + c.gs - 1) / c.gs * c.gs;
  mx::Shape xs(c.batch.begin(), c.batch.end()), ws(c.batch.begin(), c.batch.end());
  xs.insert(xs.end(), {c.m, k});
  if (c.transpose) {
    ws.insert(ws.end(), {n, k});
  } else {
    ws.insert(ws.end(), {k, n});
  }
  auto cpu = mx::Device::cpu;
  auto x = uniform(xs, c.dt, seed);
  if (c.x_shift != 0.0f || c.x_split != 0.0f) {
    std::vector<float> offset(static_cast<size_t>(k));
    for (int j = 0; j < k; ++j) {
      offset[static_cast<size_t>(j)] = c.x_shift + (j % 8 < 4 ? c.x_split : -c.x_split);
    }
    auto ox = mx::array(offset.data(), {k}, mx::float32);
    x = mx::astype(mx::add(mx::astype(x, mx::float32, cpu), ox, cpu), c.dt, cpu);
  }
  if (c.x_scale != 1.0f) {  // exact: a power of two, far from the dtype's limits
    x = mx::astype(mx::multiply(mx::astype(x, mx::float32, cpu), mx::array(c.x_scale), cpu), c.dt,
                   cpu);
  }
  auto w = uniform(ws, c.dt, seed + 1);
  auto q = mx::quantize(w, c.gs, c.bits, "affine", std::nullopt, cpu);
  mx::eval(q);
  // Reference: weights dequantized in f32, product in double, rounded once.
  auto f32 = mx::float32;
  auto wd = mx::dequantize(q[0], mx::astype(q[1], f32, cpu), mx::astype(q[2], f32, cpu), c.gs,
                           c.bits, "affine", std::nullopt, std::nullopt, cpu);
  auto b = c.transpose ? mx::swapaxes(wd, -1, -2, cpu) : wd;
  auto want = mx::astype(mx::matmul(mx::astype(x, f32, cpu), b, cpu), c.dt, cpu);
  want.eval();
  auto gpu = mx::Device::gpu;
  auto xg = on_device(x, gpu), wq = on_device(q[0], gpu), sg = on_device(q[1], gpu),
       bg = on_device(q[2], gpu);
  std::string what = "quantized_matmul bits=" + std::to_string(c.bits) +
                     " gs=" + std::to_string(c.gs) + " " + mx::dtype_to_string(c.dt) +
                     " transpose=" + std::to_string(c.transpose) + " x " + mx::shape_to_string(xs) +
                     " seed=" + std::to_string(seed);
  auto got = gpu_eval_checked(
      [&] {
        return std::vector<mx::array>{
            mx::quantized_matmul(xg, wq, sg, bg, c.transpose, c.gs, c.bits, "affine", gpu)};
      },
      what)[0];
  if (c.dt == mx::float32) {
    CHECK_MESSAGE(all_close(got, want, Tolerance{2e-5, 1e-6 * k}, what), what);
    return;
  }
  // 16-bit: one rounding of the output, plus the weights' own rounding to the dtype where
  // a kernel multiplies them in it (the cooperative-matrix qmm, as MLX's CPU backend):
  // at most u * sum_k |x||w| for the dtype's unit roundoff u.
  auto absprod = mx::matmul(mx::astype(mx::abs(x, cpu), f32, cpu), mx::abs(b, cpu), cpu);
  auto gv = mlx_test::to_doubles(got), wv = mlx_test::to_doubles(want),
       av = mlx_test::to_doubles(absprod);
  // The product is linear in x: compared at x's unscaled size, the tolerance keeps its
  // meaning for tiny x (where the absolute tolerance would pass anything).
  for (auto* v : {&gv, &wv, &av}) {
    for (double& e : *v) {
      e /= c.x_scale;
    }
  }
  Tolerance tol = default_tolerance(c.dt);
  double u = c.dt == mx::float16 ? 0x1p-11 : 0x1p-8;
  for (size_t i = 0; i < gv.size(); ++i) {
    if (!mlx_test::close(gv[i], wv[i], tol.rtol, tol.atol + u * av[i])) {
      FAIL_CHECK(what << ": element " << i << " GPU " << gv[i] << " reference " << wv[i]
                      << " (rtol " << tol.rtol << ", atol " << tol.atol << " + " << u * av[i]
                      << ")");
      return;
    }
  }
}

const int kBits[] = {2, 3, 4, 5, 6, 8};
const int kGroups[] = {32, 64, 128};

}  // namespace

TEST_CASE("quantize and dequantize on the GPU give the CPU's words, scales and values") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  uint64_t seed = 2000;
  struct QuantCase {
    int bits, gs;
    mx::Dtype dt;
  };
  std::vector<QuantCase> cases;
  for (int bits : kBits) {
    cases.push_back({bits, 64, mx::float32});
  }
  cases.push_back({4, 32, mx::float32});
  cases.push_back({4, 128, mx::float32});
  for (auto dt : {mx::float16, mx::bfloat16}) {
    cases.push_back({4, 64, dt});
    cases.push_back({3, 64, dt});
  }
  for (const auto& c : cases) {
    // 7 rows of 256 values: random, except that row 0 is constant (range 0: the 1e-7
    // floor of the scale) and row 1 is all non-negative with a zero (the edge is max).
    mlx_test::Rng rng(++seed);
    std::vector<float> vals(7 * 256);
    for (size_t j = 0; j < vals.size(); ++j) {
      double v = rng.uniform(-4, 4);
      vals[j] = static_cast<float>(j < 256 ? 0.375 : j < 512 ? (j % 17 == 0 ? 0.0 : v * v) : v);
    }
    auto cpu = mx::Device::cpu;
    auto w = mx::astype(mx::array(vals.begin(), {7, 256}, mx::float32), c.dt, cpu);
    auto want = mx::quantize(w, c.gs, c.bits, "affine", std::nullopt, cpu);
    auto want_dq = mx::dequantize(want[0], want[1], want[2], c.gs, c.bits, "affine", std::nullopt,
                                  std::nullopt, cpu);
    mx::eval(want);
    want_dq.eval();
    auto wg = on_device(w, mx::Device::gpu);
    std::string what = "quantize bits=" + std::to_string(c.bits) + " gs=" + std::to_string(c.gs) +
                       " " + mx::dtype_to_string(c.dt);
    auto got = gpu_eval_checked(
        [&] { return mx::quantize(wg, c.gs, c.bits, "affine", std::nullopt, mx::Device::gpu); },
        what);
    CHECK_MESSAGE(all_close(got[0], want[0], {0, 0}, what + " words"), what);
    CHECK_MESSAGE(all_close(got[1], want[1], {0, 0}, what + " scales"), what);
    CHECK_MESSAGE(all_close(got[2], want[2], {0, 0}, what + " biases"), what);
    auto qg = std::vector<mx::array>{on_device(want[0], mx::Device::gpu),
                                     on_device(want[1], mx::Device::gpu),
                                     on_device(want[2], mx::Device::gpu)};
    auto dq = gpu_eval_checked(
        [&] {
          return std::vector<mx::array>{mx::dequantize(qg[0], qg[1], qg[2], c.gs, c.bits, "affine",
                                                       std::nullopt, std::nullopt,
                                                       mx::Device::gpu)};
        },
        what + " dequantize")[0];
    CHECK_MESSAGE(all_close(dq, want_dq, {0, 0}, what + " dequantize"), what);
  }
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["AffineQuantize"] == 0);
  CHECK(counts["Dequantize"] == 0);
}

TEST_CASE("quantized_matmul on the GPU matches the reference for every bits x group size") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  const int ms[] = {1, 2, 7, 8, 9, 33, 128};
  uint64_t seed = 3000;
  int i = 0;
  // Every bits x gs x dtype x transpose, M cycling through the list (qmv for M <= 8 with
  // transpose, qmm otherwise), and N ragged.
  for (int bits : kBits) {
    for (int gs : kGroups) {
      for (auto dt : {mx::float32, mx::float16, mx::bfloat16}) {
        for (bool transpose : {true, false}) {
          check_qmm({bits, gs, dt, transpose, ms[i++ % 7]}, seed += 2);
        }
      }
    }
  }
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["QuantizedMatmul"] == 0);
}

TEST_CASE("quantized_matmul on the GPU: every M, batched x and batched weights") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  uint64_t seed = 4000;
  for (int m : {1, 2, 7, 8, 9, 33, 128}) {
    for (bool transpose : {true, false}) {
      check_qmm({4, 64, mx::bfloat16, transpose, m, 72, 4}, seed += 2);
    }
  }
  // Wide products, where each qmv team owns several columns (nc 4 for M = 2..4, 2 for
  // M = 5..8) and the last team's columns run past a ragged N.
  for (int m : {3, 8}) {
    check_qmm({4, 64, mx::bfloat16, true, m, 16411, 4}, seed += 2);
  }
  // x with batch dims and 2-d weights (rows fold into M), then weights with batch dims.
  QCase folded{4, 64, mx::float16, true, 3, 40, 2, {}};
  check_qmm(folded, seed += 2);
  check_qmm({4, 32, mx::float32, true, 2, 24, 2, {3}}, seed += 2);
  check_qmm({8, 64, mx::float32, false, 12, 24, 2, {2}}, seed += 2);
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["QuantizedMatmul"] == 0);
}

// Large products dequantize their weights into a scratch buffer of the stream, then take
// the gemm family (mlx/backend/vulkan/qmm_dequant.h; past 64 rows on devices with
// cooperative matrices). Forced here, so that lavapipe runs it at small sizes too.
TEST_CASE("quantized_matmul dequantized first: every bits, both layouts, the scratch reused") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  mx::vulkan::force_qmm_dequant(true);
  uint64_t before = mx::vulkan::qmm_dequant_count();
  uint64_t before_t = mx::vulkan::qmm_dequant_transposed_count();
  uint64_t seed = 7000;
  int i = 0;
  const mx::Dtype dts[] = {mx::float32, mx::float16, mx::bfloat16};
  for (int bits : kBits) {
    for (bool transpose : {true, false}) {
      // n = 40: a block of 32 rows and one of 8; k = 128: two blocks of 8 chunks.
      check_qmm({bits, 64, dts[i++ % 3], transpose, 33, 40, 2}, seed += 2);
    }
  }
  CHECK(mx::vulkan::qmm_dequant_count() - before == 12);
  // Weights of rows of k values (transpose) are dequantized into their transpose.
  CHECK(mx::vulkan::qmm_dequant_transposed_count() - before_t == 6);
  // Group size 32, k = 96 (12 chunks: a last block of 4), n = 136 (blocks of 32 rows, the
  // last of 8).
  check_qmm({4, 32, mx::bfloat16, true, 20, 136, 3}, seed += 2);
  check_qmm({3, 32, mx::float16, true, 20, 136, 3}, seed += 2);
  // k = 1088: 17 columns of 8 chunks, in bands of 4, 4, 4, 4 and 1 (DEQ_BAND in
  // templates/quantize.glsl); n = 72, row blocks of 32, 32 and 8.
  check_qmm({4, 64, mx::bfloat16, true, 20, 72, 17}, seed += 2);

  // Three products in one batch, the second's weights larger than the first's (the scratch
  // grows while the first product may still read it), the third reading the first's again:
  // each must see its own weights.
  auto cpu = mx::Device::cpu, gpu = mx::Device::gpu;
  struct Product {
    int n, k;
  };
  const Product ps[] = {{40, 128}, {96, 256}, {40, 128}};
  std::vector<mx::array> xs, qs_w, qs_s, qs_b, wants;
  for (const auto& p : ps) {
    auto x = uniform({17, p.k}, mx::float32, seed += 2);
    auto q = mx::quantize(uniform({p.n, p.k}, mx::float32, seed += 2), 64, 4, "affine",
                          std::nullopt, cpu);
    wants.push_back(mx::quantized_matmul(x, q[0], q[1], q[2], true, 64, 4, "affine", cpu));
    xs.push_back(on_device(x, gpu));
    qs_w.push_back(on_device(q[0], gpu));
    qs_s.push_back(on_device(q[1], gpu));
    qs_b.push_back(on_device(q[2], gpu));
  }
  mx::eval(wants);
  before = mx::vulkan::qmm_dequant_count();
  auto got = gpu_eval_checked(
      [&] {
        std::vector<mx::array> outs;
        for (size_t j = 0; j < 3; ++j) {
          outs.push_back(
              mx::quantized_matmul(xs[j], qs_w[j], qs_s[j], qs_b[j], true, 64, 4, "affine", gpu));
        }
        return outs;
      },
      "three dequantized products in one batch");
  CHECK(mx::vulkan::qmm_dequant_count() - before == 3);
  for (size_t j = 0; j < 3; ++j) {
    CHECK_MESSAGE(all_close(got[j], wants[j], Tolerance{2e-5, 1e-6 * ps[j].k}, "product"),
                  "product " << j);
  }
  // With the transpose off a Linear layer's weights keep their layout (rows of k values).
  mx::vulkan::force_qmm_dequant(true, false);
  before = mx::vulkan::qmm_dequant_count();
  before_t = mx::vulkan::qmm_dequant_transposed_count();
  check_qmm({4, 64, mx::float16, true, 33, 40, 2}, seed += 2);
  check_qmm({6, 64, mx::bfloat16, true, 9, 24, 3}, seed += 2);
  CHECK(mx::vulkan::qmm_dequant_count() - before == 2);
  CHECK(mx::vulkan::qmm_dequant_transposed_count() == before_t);
  mx::vulkan::force_qmm_dequant(std::nullopt);
  CHECK(mx::vulkan::fallback_counts()["QuantizedMatmul"] == 0);
}

TEST_CASE("quantized_matmul dequantized first with x copied into its transpose, rows padded") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // From one row, so these small products take it (by default from kRelayoutRows).
  mx::vulkan::force_qmm_dequant(true);
  mx::vulkan::force_relayout_rows(1);
  uint64_t before = mx::vulkan::relayout_a_count();
  uint64_t seed = 7600;
  // Ragged rows (padded to 40, 24, 16, 56 and 16 in the transposed copy), every dtype;
  // weights already k rows of n (transpose false).
  for (const QCase& c :
       {QCase{4, 64, mx::float16, true, 33, 40, 2}, QCase{3, 32, mx::bfloat16, true, 20, 136, 3},
        QCase{8, 64, mx::float32, true, 9, 24, 3}, QCase{4, 64, mx::bfloat16, true, 50, 40, 2},
        QCase{2, 128, mx::float16, false, 12, 128, 2}}) {
    check_qmm(c, seed += 2);
  }
  CHECK(mx::vulkan::relayout_a_count() - before == 5);
  // 0 turns it off.
  mx::vulkan::force_relayout_rows(0);
  before = mx::vulkan::relayout_a_count();
  check_qmm({4, 64, mx::float16, true, 33, 40, 2}, seed += 2);
  CHECK(mx::vulkan::relayout_a_count() == before);
  mx::vulkan::force_relayout_rows(std::nullopt);
  mx::vulkan::force_qmm_dequant(std::nullopt);
  CHECK(mx::vulkan::fallback_counts()["QuantizedMatmul"] == 0);
}

TEST_CASE("quantized_matmul of one row with a long K: parts of a column group split the packs") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // K = 8384: 262 packs, >= 4 a lane for 32-lane teams (and 8-lane ones), so qmv gives
  // each column group of <= 4 bits two parts of 4 columns (codegen/matmul.cpp), and the
  // last run of packs is ragged; 8 bits stays one part. N = 72 leaves the last team's
  // columns ragged.
  uint64_t seed = 4500;
  const mx::Dtype dts[] = {mx::float32, mx::float16, mx::bfloat16, mx::float32};
  const int bits[] = {2, 3, 4, 8};
  for (int i = 0; i < 4; ++i) {
    check_qmm({bits[i], 64, dts[i], true, 1, 72, 131}, seed += 2);
  }
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["QuantizedMatmul"] == 0);
}

TEST_CASE(
    "quantized_matmul of one f16 or bf16 row of 4 bits: f16 pair sums, and where they "
    "cannot serve") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // Long rows in two parts (K = 1024: 32 packs, >= 4 a team of 8 lanes; K = 8384 for
  // 32-lane teams) take qmv's f16 pair sums on devices with f16 arithmetic (dot=f16,
  // codegen/qmv.cpp). With x near 1000 every pack's f16 sum of 16 products passes 65504:
  // those packs are summed again in f32, and the outputs (|sum| well inside f16) stay finite.
  // With x near +1000 in values 0-3 of every 8 and -1000 in 4-7, the pairs' two halves
  // overflow to +inf and -inf, whose sum is NaN: summed again too.
  check_qmm({4, 64, mx::float16, true, 1, 72, 131}, 4700);
  check_qmm({4, 64, mx::float16, true, 1, 40, 16, {}, 1000.0f}, 4702);
  check_qmm({4, 32, mx::float16, true, 1, 40, 32, {}, -1000.0f}, 4704);
  check_qmm({4, 64, mx::float16, true, 1, 40, 16, {}, 0.0f, 1000.0f}, 4706);
  // bf16 x takes the same sums where a lane has >= 3 steps (K = 8384 here, for 8- and
  // 32-lane teams), each pack's x converted to f16 (templates/qmv.glsl, X_BF16): exact from
  // 2^-17 up to 65504, infinite above (x near 10^5: summed again in f32), and inexact
  // below: x scaled by 2^-30 is below f16's smallest subnormal, and only the f32 sums give
  // the product (with f16 sums every output would be 0).
  check_qmm({4, 64, mx::bfloat16, true, 1, 72, 131}, 4710);
  check_qmm({4, 64, mx::bfloat16, true, 1, 40, 131, {}, 1000.0f}, 4712);
  check_qmm({4, 64, mx::bfloat16, true, 1, 40, 131, {}, 0.0f, 1000.0f}, 4714);
  check_qmm({4, 64, mx::bfloat16, true, 1, 40, 131, {}, 100000.0f}, 4716);
  check_qmm({4, 64, mx::bfloat16, true, 1, 40, 131, {}, 0.0f, 0.0f, 0x1p-30f}, 4718);
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["QuantizedMatmul"] == 0);
}

TEST_CASE(
    "quantized_matmul of one f16 or bf16 row of 4 bits: within one rounding of the exact product") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // On devices with integer dot products one 16-bit row of 4 bits takes x as two bytes a
  // value per pack of 32 (templates/qmv.glsl, X8): each value within m / 64516 of itself,
  // m the pack's largest |x|. So the output may differ from the exact product (double,
  // weights as dequantized) by its one rounding, u |exact|, plus sum_j m / 64516 |w_j|,
  // plus the f32 sums' error (K 2^-23 sum |x||w|, loose). Every other path meets it too.
  // One value of each pack is 100x the rest, so most values sit far below their pack's m.
  auto cpu = mx::Device::cpu, gpu = mx::Device::gpu;
  uint64_t seed = 4900;
  struct Shape {
    int n, k;
    bool norm_like;  // x all positive (as a norm's output times a positive weight can be)
  };
  for (auto dt : {mx::bfloat16, mx::float16}) {
    for (Shape sh : {Shape{40, 256, false}, Shape{72, 8384, false}, Shape{24, 1024, true}}) {
      std::vector<float> boost(static_cast<size_t>(sh.k));
      for (int j = 0; j < sh.k; ++j) {
        boost[static_cast<size_t>(j)] = j % 32 == 5 ? 100.0f : 1.0f;
      }
      auto x = mx::multiply(uniform({1, sh.k}, mx::float32, seed += 2),
                            mx::array(boost.data(), {sh.k}, mx::float32), cpu);
      if (sh.norm_like) {
        x = mx::abs(x, cpu);
      }
      x = mx::astype(x, dt, cpu);
      auto q =
          mx::quantize(uniform({sh.n, sh.k}, dt, seed + 1), 64, 4, "affine", std::nullopt, cpu);
      mx::eval(x, q[0], q[1], q[2]);
      auto wd = mx::dequantize(q[0], mx::astype(q[1], mx::float32, cpu),
                               mx::astype(q[2], mx::float32, cpu), 64, 4, "affine", std::nullopt,
                               std::nullopt, cpu);
      auto got = mlx_test::to_doubles(
          mx::quantized_matmul(on_device(x, gpu), on_device(q[0], gpu), on_device(q[1], gpu),
                               on_device(q[2], gpu), true, 64, 4, "affine", gpu));
      auto xv = mlx_test::to_doubles(x), wv = mlx_test::to_doubles(wd);
      double u = dt == mx::float16 ? 0x1p-11 : 0x1p-8;
      std::string what = std::string("one ") + mx::dtype_to_string(dt) + " row, N " +
                         std::to_string(sh.n) + ", K " + std::to_string(sh.k);
      REQUIRE(got.size() == static_cast<size_t>(sh.n));
      for (int i = 0; i < sh.n; ++i) {
        double exact = 0, staged = 0, abs_sum = 0;
        for (int p = 0; p < sh.k / 32; ++p) {
          double m = 0;
          for (int j = 32 * p; j < 32 * p + 32; ++j) {
            m = std::max(m, std::abs(xv[static_cast<size_t>(j)]));
          }
          for (int j = 32 * p; j < 32 * p + 32; ++j) {
            double w = wv[static_cast<size_t>(i) * sh.k + j], xj = xv[static_cast<size_t>(j)];
            exact += xj * w;
            staged += m / 64516.0 * std::abs(w);
            abs_sum += std::abs(xj * w);
          }
        }
        double bound = u * std::abs(exact) + (1 + u) * staged + sh.k * 0x1p-23 * abs_sum;
        double err = std::abs(got[static_cast<size_t>(i)] - exact);
        if (!(err <= bound)) {
          FAIL_CHECK(what << ": column " << i << " GPU " << got[static_cast<size_t>(i)] << " exact "
                          << exact << " (error " << err << ", bound " << bound << ")");
          break;
        }
      }
    }
  }
  CHECK(mx::vulkan::fallback_counts()["QuantizedMatmul"] == 0);
}

TEST_CASE("quantized_matmul of a few f16 or bf16 rows of 4 bits: f16 pair sums shared by rows") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // 2 to 4 f16 rows and 2 bf16 rows with >= 2 packs a lane (>= 3 for bf16) take the same
  // f16 pair sums, each pack's values made once for all rows (templates/qmv.glsl, F16_DOT
  // with MR > 1) where qmv serves them (every device without cooperative matrices;
  // MLX_VK_QMV_COOP=off on one with them). M = 3 leaves a row of MR unused; the
  // overflowing and inexact x of the single-row case above send every row's sums of the
  // step to f32; 5 and 8 rows keep the f32 sums.
  uint64_t seed = 4800;
  for (int m : {2, 3, 4, 5, 8}) {
    check_qmm({4, 64, mx::float16, true, m, 72, 131}, seed += 2);
  }
  check_qmm({4, 64, mx::bfloat16, true, 2, 72, 131}, seed += 2);
  check_qmm({4, 64, mx::bfloat16, true, 3, 40, 131}, seed += 2);
  check_qmm({4, 64, mx::float16, true, 4, 40, 16, {}, 1000.0f}, seed += 2);
  check_qmm({4, 64, mx::float16, true, 3, 40, 16, {}, 0.0f, 1000.0f}, seed += 2);
  check_qmm({4, 64, mx::bfloat16, true, 2, 40, 131, {}, 100000.0f}, seed += 2);
  check_qmm({4, 64, mx::bfloat16, true, 2, 40, 131, {}, 0.0f, 0.0f, 0x1p-30f}, seed += 2);
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["QuantizedMatmul"] == 0);
}

namespace {

// Sets an environment variable for a scope (the planner reads the measuring overrides when
// it plans a launch).
struct ScopedEnv {
  const char* name;
  ScopedEnv(const char* n, const char* value) : name(n) {
    ::setenv(n, value, 1);
  }
  ~ScopedEnv() {
    ::unsetenv(name);
  }
};

}  // namespace

TEST_CASE("quantized_matmul of one f16 or bf16 row of 4 bits: x staged a step at a time") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // On devices with integer dot products a long row of a huge output stages x one step of
  // packs at a time, during the step before (templates/qmv.glsl, X8_STREAM; codegen/qmv.cpp).
  // Such outputs are too large for CI, so MLX_VK_QMV_I8_STREAM=2 streams every i8 row whose
  // shares leave one pack in flight here (shapes no other case plans, so no launch planned
  // without it is reused): K = 4096 in 2 parts and K = 1056 whole on 32-lane teams (2 steps
  // each, K = 1056's last ragged), both in 2 parts on 8-lane ones (8 and 3 steps), and K =
  // 320; ragged columns. The planner streams all three on 8- and 32-lane teams and the
  // first and last on 16-lane ones (K = 1056 leaves those lanes 2 packs in flight); the
  // test checks that it streams at least one. A template that staged each step's own packs
  // instead of the next step's failed all three on lavapipe.
  ScopedEnv stream("MLX_VK_QMV_I8_STREAM", "2");
  const auto& caps = mx::vulkan::device("test").caps();
  struct Case {
    int gs;
    mx::Dtype dt;
    int n, k_groups;
  };
  uint64_t seed = 4800;
  int i8_cases = 0, streamed = 0;
  for (const Case& c : {Case{64, mx::bfloat16, 4104, 64}, Case{32, mx::float16, 4096, 33},
                        Case{64, mx::bfloat16, 24, 5}}) {
    cg::MatmulGeometry g;
    g.m = 1, g.n = c.n, g.k = c.gs * c.k_groups, g.lda = g.k;
    g.b_t = true, g.ldb = g.k / 8, g.bits = 4, g.group_size = c.gs;
    auto key = cg::qmv_key(c.dt == mx::float16 ? "f16" : "bf16", g, caps);
    INFO("kernel " << key.canonical());
    i8_cases += key.params["dot"] == "i8" ? 1 : 0;
    streamed += key.params["stream"] == "1" ? 1 : 0;
    check_qmm({4, c.gs, c.dt, true, 1, c.n, c.k_groups}, seed += 2);
  }
  // Devices without integer dot products take the other sums.
  CHECK((i8_cases == 0 || streamed > 0));
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["QuantizedMatmul"] == 0);
}

TEST_CASE("quantized_matmul of one row with a huge N: 4 columns a team") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // An lm_head's shape: short rows and so many columns that qmv gives each team 4 of them
  // (codegen/matmul.cpp; >= 1024 workgroups of 4 columns: 8 teams a workgroup on NVIDIA,
  // 64 on lavapipe for K = 128). N = 262150 leaves the last team's columns ragged.
  check_qmm({4, 64, mx::bfloat16, true, 1, 262150, 2}, 4600);
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["QuantizedMatmul"] == 0);
}

TEST_CASE("quantized_matmul keeps a NaN or infinite scale: qmv, and qmvc on a GPU with it") {
  if (!gpu_present())
    return;
  // 1 row takes qmv; 8 and 16 take qmvc where the device has cooperative matrices, whose
  // bf16 rounding skips the NaN test for packs of finite scales and biases.
  auto cpu = mx::Device::cpu, gpu = mx::Device::gpu;
  uint64_t seed = 6000;
  for (auto dt : {mx::bfloat16, mx::float16}) {
    for (int m : {1, 8, 16}) {
      auto x = uniform({m, 256}, dt, seed += 2);
      auto q = mx::quantize(uniform({32, 256}, dt, seed + 1), 64, 4, "affine", std::nullopt, cpu);
      mx::eval(q);
      // Column 3's first group gets a NaN scale, column 5's an infinite one.
      auto scales = mlx_test::to_doubles(q[1]);
      scales[3 * 4] = std::nan("");
      scales[5 * 4] = INFINITY;
      std::vector<float> sf(scales.begin(), scales.end());
      auto s = mx::astype(mx::array(sf.data(), q[1].shape(), mx::float32), dt, cpu);
      auto want = mx::quantized_matmul(x, q[0], s, q[2], true, 64, 4, "affine", cpu);
      auto got = mx::quantized_matmul(on_device(x, gpu), on_device(q[0], gpu), on_device(s, gpu),
                                      on_device(q[2], gpu), true, 64, 4, "affine", gpu);
      auto gv = mlx_test::to_doubles(got), wv = mlx_test::to_doubles(want);
      std::string what = mx::dtype_to_string(dt) + " rows " + std::to_string(m);
      CAPTURE(what);
      for (int r = 0; r < m; ++r) {
        CHECK(std::isnan(gv[r * 32 + 3]));
        CHECK(!std::isfinite(gv[r * 32 + 5]));
        CHECK(std::isfinite(gv[r * 32 + 4]));
      }
      // The other columns as check_qmm bounds them: one rounding of the output plus the
      // weights' rounding to the dtype (qmvc multiplies them in it).
      auto wd = mx::dequantize(q[0], q[1], q[2], 64, 4, "affine", std::nullopt, mx::float32, cpu);
      auto av = mlx_test::to_doubles(mx::matmul(mx::abs(mx::astype(x, mx::float32, cpu), cpu),
                                                mx::transpose(mx::abs(wd, cpu), cpu), cpu));
      Tolerance tol = default_tolerance(dt);
      double u = dt == mx::float16 ? 0x1p-11 : 0x1p-8;
      for (size_t i = 0; i < gv.size(); ++i) {
        if (i % 32 == 3 || i % 32 == 5) {
          continue;  // checked above (inf * 0 makes column 5 NaN or infinite by sum order)
        }
        if (!mlx_test::close(gv[i], wv[i], tol.rtol, tol.atol + u * av[i])) {
          FAIL_CHECK(what << ": element " << i << " GPU " << gv[i] << " CPU " << wv[i]);
          break;
        }
      }
    }
  }
}

TEST_CASE(
    "dequantize keeps a NaN or infinite scale or bias: the op, a product's weights, qmm tiles") {
  if (!gpu_present())
    return;
  // A bf16 dequantize rounds without the NaN test where its scales and biases are finite
  // (pack_bf16x8_not_nan in templates/include/types.glsl); groups with a non-finite one must still
  // give what the CPU gives. Rows 3 and 9 get a NaN scale or bias, row 5 an infinite scale
  // (q = 0 makes NaN), row 7 a bias of -infinity.
  auto cpu = mx::Device::cpu, gpu = mx::Device::gpu;
  uint64_t seed = 6100;
  for (auto dt : {mx::bfloat16, mx::float16}) {
    auto q = mx::quantize(uniform({32, 256}, dt, seed += 2), 64, 4, "affine", std::nullopt, cpu);
    mx::eval(q);
    auto sv = mlx_test::to_doubles(q[1]), bv = mlx_test::to_doubles(q[2]);
    sv[3 * 4] = std::nan("");
    sv[5 * 4 + 1] = INFINITY;
    bv[7 * 4 + 2] = -INFINITY;
    bv[9 * 4 + 3] = std::nan("");
    auto to_array = [&](const std::vector<double>& v) {
      std::vector<float> f(v.begin(), v.end());
      return mx::astype(mx::array(f.data(), q[1].shape(), mx::float32), dt, cpu);
    };
    auto s = to_array(sv), b = to_array(bv);
    std::string what = mx::dtype_to_string(dt);
    CAPTURE(what);

    // The op: every value as the CPU's, NaN where it is NaN.
    auto want = mlx_test::to_doubles(
        mx::dequantize(q[0], s, b, 64, 4, "affine", std::nullopt, std::nullopt, cpu));
    auto got = mlx_test::to_doubles(mx::dequantize(on_device(q[0], gpu), on_device(s, gpu),
                                                   on_device(b, gpu), 64, 4, "affine", std::nullopt,
                                                   std::nullopt, gpu));
    int wrong = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      bool same = std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i];
      if (!same && wrong++ < 3) {
        FAIL_CHECK("dequantize element " << i << " GPU " << got[i] << " CPU " << want[i]);
      }
    }
    CHECK(wrong == 0);

    // Products of 72 rows (past qmvc's 64): the weights dequantized into their transpose
    // first, then the qmm tiles (gemm_coop.glsl's bf16 dequantize also skips the NaN test,
    // on a GPU with cooperative matrices). The non-finite rows give non-finite columns, the
    // others finite ones.
    auto x = uniform({72, 256}, dt, seed + 1);
    for (bool dequant_first : {true, false}) {
      CAPTURE(dequant_first);
      mx::vulkan::force_qmm_dequant(dequant_first);
      uint64_t before_t = mx::vulkan::qmm_dequant_transposed_count();
      auto pv = mlx_test::to_doubles(mx::quantized_matmul(on_device(x, gpu), on_device(q[0], gpu),
                                                          on_device(s, gpu), on_device(b, gpu),
                                                          true, 64, 4, "affine", gpu));
      mx::vulkan::force_qmm_dequant(std::nullopt);
      CHECK(mx::vulkan::qmm_dequant_transposed_count() - before_t == (dequant_first ? 1u : 0u));
      int wrong_columns = 0;
      for (int r = 0; r < 72; ++r) {
        for (int c = 0; c < 32; ++c) {
          double v = pv[r * 32 + c];
          bool ok = c == 3 || c == 9   ? std::isnan(v)
                    : c == 5 || c == 7 ? !std::isfinite(v)
                                       : std::isfinite(v);
          if (!ok && wrong_columns++ < 3) {
            FAIL_CHECK("row " << r << " column " << c << ": " << v);
          }
        }
      }
      CHECK(wrong_columns == 0);
    }
  }
}

TEST_CASE("quantized_matmul with x batch dims and 2-d weights folds rows") {
  if (!gpu_present())
    return;
  auto cpu = mx::Device::cpu, gpu = mx::Device::gpu;
  auto x = uniform({2, 3, 128}, mx::float32, 5000);
  auto w = uniform({48, 128}, mx::float32, 5001);
  auto q = mx::quantize(w, 64, 4, "affine", std::nullopt, cpu);
  auto want = mx::quantized_matmul(x, q[0], q[1], q[2], true, 64, 4, "affine", cpu);
  want.eval();
  auto got = gpu_eval_checked(
      [&] {
        return std::vector<mx::array>{
            mx::quantized_matmul(on_device(x, gpu), on_device(q[0], gpu), on_device(q[1], gpu),
                                 on_device(q[2], gpu), true, 64, 4, "affine", gpu)};
      },
      "folded")[0];
  CHECK(all_close(got, want, {2e-5, 1e-6 * 128}, "quantized_matmul [2,3,128] x 2-d weights"));
}

TEST_CASE("addmm on the GPU matches the CPU: broadcast C, alpha and beta, beta = 0, K = 0") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  auto cpu = mx::Device::cpu, gpu = mx::Device::gpu;
  struct AddCase {
    mx::Shape a, b, c;
    float alpha, beta;
    mx::Dtype dt;
  };
  uint64_t seed = 6000;
  for (const auto& t : std::vector<AddCase>{
           {{9, 24}, {24, 33}, {9, 33}, 1.0f, 1.0f, mx::float32},
           {{2, 5, 24}, {24, 33}, {33}, 0.5f, 2.0f, mx::float32},  // C broadcast
           {{3, 16}, {16, 8}, {3, 1}, -1.5f, 0.25f, mx::bfloat16},
           {{4, 16}, {16, 8}, {4, 8}, 2.0f, 0.0f, mx::float16},  // beta 0: C not read
           {{4, 0}, {0, 6}, {4, 6}, 1.0f, 3.0f, mx::float32},    // K = 0: beta * C
           {{40}, {40, 12}, {12}, 1.0f, 1.0f, mx::float32},      // 1-d a
       }) {
    auto a = uniform(t.a, t.dt, ++seed), b = uniform(t.b, t.dt, ++seed),
         c = uniform(t.c, t.dt, ++seed);
    auto want = mx::addmm(c, a, b, t.alpha, t.beta, cpu);
    want.eval();
    std::string what = "addmm " + mx::shape_to_string(t.a) + " x " + mx::shape_to_string(t.b) +
                       " + " + mx::shape_to_string(t.c);
    auto got = gpu_eval_checked(
        [&] {
          return std::vector<mx::array>{mx::addmm(on_device(c, gpu), on_device(a, gpu),
                                                  on_device(b, gpu), t.alpha, t.beta, gpu)};
        },
        what)[0];
    Tolerance tol = t.dt == mx::float32 ? Tolerance{2e-5, 1e-5} : default_tolerance(t.dt);
    CHECK_MESSAGE(all_close(got, want, tol, what), what);
  }
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["AddMM"] == 0);
}
