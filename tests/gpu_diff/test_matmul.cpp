// matmul on the GPU ("gemm" and "gemv" families) matches the CPU reference for f32, f16
// and bf16: M in {1, 2, 7, 8, 9, 33, 128} (gemv up to 8 rows, gemm past it), ragged and
// tile-aligned sizes, each operand read in place as rows or as columns (transposed views)
// and as slices of a wider matrix, broadcast and non-collapsible batch dims, 1-d operands,
// one column (turned into a matrix-vector product), K = 1 and empty dims; no call takes
// the CPU route.
//
// Tolerances: the CPU sums in double and rounds once; the GPU sums in f32 in another
// order. For f32 the difference is a few f32 roundings of the running sum, at most about
// K * 2^-24 * max|a||b| = K * 16 * 6e-8 absolute for inputs in [-4, 4]: atol 1e-6 * K plus
// rtol 2e-5. 16-bit outputs: one rounding of the dtype (default_tolerance), which the f32
// sum's error stays far below.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "harness.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/device.h"
#include "mlx/backend/vulkan/gemm_relayout.h"
#include "mlx/backend/vulkan/matmul.h"

namespace mx = mlx::core;
using namespace gpu_diff;

namespace {

// One product's shape and operand layout: a is M x K, b is K x N, each cut from an input
// of shape [..., D, D] (D >= M, N, K), transposed first when a_t / b_t (so its other dim
// is the contiguous one) and sliced, so its leading stride is D, not its width.
struct Product {
  int m, n, k;
  bool a_t = false, b_t = false;
  std::vector<int> batch = {};
  bool broadcast_b = false;  // b drops the batch dims: broadcast over a's
};

mx::array cut(const mx::array& x, int rows, int cols, bool transposed, mx::StreamOrDevice s) {
  auto v = transposed ? mx::swapaxes(x, -1, -2, s) : x;
  int nd = static_cast<int>(v.ndim());
  mx::Shape start(nd, 0), stop = v.shape();
  stop[nd - 2] = rows;
  stop[nd - 1] = cols;
  return mx::slice(v, start, stop, s);
}

Op product_op(const Product& p) {
  return [p](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    auto a = cut(in[0], p.m, p.k, p.a_t, s);
    auto bsrc = in[1];
    if (p.broadcast_b) {
      int nd = static_cast<int>(bsrc.ndim());
      mx::Shape start(nd, 0), stop(nd, 1);
      stop[nd - 2] = bsrc.shape(-2);
      stop[nd - 1] = bsrc.shape(-1);
      bsrc = mx::reshape(mx::slice(bsrc, start, stop, s), {bsrc.shape(-2), bsrc.shape(-1)}, s);
    }
    auto b = cut(bsrc, p.k, p.n, p.b_t, s);
    return mx::matmul(a, b, s);
  };
}

Tolerance tolerance(mx::Dtype dt, int k) {
  return dt == mx::float32 ? Tolerance{2e-5, 1e-6 * std::max(k, 1)} : default_tolerance(dt);
}

void check_product(const Product& p, mx::Dtype dt, uint64_t seed) {
  int d = std::max({p.m, p.n, p.k, 1});
  mx::Shape shape(p.batch.begin(), p.batch.end());
  shape.push_back(d);
  shape.push_back(d);
  std::string name = "matmul m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) +
                     " k=" + std::to_string(p.k) + (p.a_t ? " a^T" : "") + (p.b_t ? " b^T" : "") +
                     (p.broadcast_b ? " b broadcast" : "");
  Case c{name, {dt, dt}, shape, Layout::contiguous, seed};
  CHECK_MESSAGE(run_case(c, product_op(p), {}, tolerance(dt, p.k)), c.describe());
}

}  // namespace

TEST_CASE("matmul matches the CPU for gemv and gemm sizes, both operand orientations") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  uint64_t seed = 700;
  for (auto dt : {mx::float32, mx::float16, mx::bfloat16}) {
    for (int m : {1, 2, 7, 8, 9, 33, 128}) {
      // Ragged n and k; for m = 128 also a tile-aligned product.
      check_product({m, 65, 40, false, true}, dt, ++seed);
      check_product({m, 72, 33, false, false}, dt, ++seed);
      if (m == 128) {
        check_product({m, 64, 64, false, true}, dt, ++seed);
      }
    }
    // A read through its columns (gemm at any M), and B both ways.
    check_product({5, 40, 24, true, false}, dt, ++seed);
    check_product({33, 17, 50, true, true}, dt, ++seed);
  }
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["Matmul"] == 0);
}

TEST_CASE("matmul with its operands copied into the GEMM's layout first (A padded to 8)") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // From one row (by default from kRelayoutRows / kRelayoutBRows, on cooperative matrices).
  mx::vulkan::force_relayout_rows(1, 1);
  uint64_t a0 = mx::vulkan::relayout_a_count(), b0 = mx::vulkan::relayout_b_count();
  uint64_t seed = 900;
  for (auto dt : {mx::float32, mx::float16, mx::bfloat16}) {
    check_product({33, 40, 24, false, true}, dt, ++seed);  // both: A padded to 40 rows
    check_product({20, 65, 40, false, true}, dt, ++seed);  // A; n = 65 keeps B^T
    check_product({9, 72, 33, false, false}, dt, ++seed);  // A; B already k rows of n
    check_product({17, 16, 50, true, true}, dt, ++seed);   // B; A already k rows of m
    check_product({130, 48, 72, false, true}, dt, ++seed);  // both, over several tiles
  }
  CHECK(mx::vulkan::relayout_a_count() - a0 == 12);
  CHECK(mx::vulkan::relayout_b_count() - b0 == 9);
  mx::vulkan::force_relayout_rows(std::nullopt);
  CHECK(mx::vulkan::fallback_counts()["Matmul"] == 0);
}

TEST_CASE("matmul matches the CPU for batches: collapsed, broadcast and general") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  uint64_t seed = 800;
  for (auto dt : {mx::float32, mx::bfloat16}) {
    check_product({9, 20, 16, false, true, {3}}, dt, ++seed);
    check_product({2, 24, 16, false, false, {2, 3}}, dt, ++seed);
    check_product({1, 40, 32, false, true, {4}, true}, dt, ++seed);  // gemv, b broadcast
    check_product({12, 40, 32, false, false, {2, 2}, true}, dt, ++seed);
  }
  // Batch dims that do not collapse to two: b broadcast in the middle of three.
  for (auto dt : {mx::float32, mx::float16}) {
    Op op = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
      auto a = mx::reshape(in[0], {2, 3, 4, 6, 5}, s);
      auto b = mx::reshape(mx::slice(in[1], {0}, {2 * 4 * 5 * 7}, s), {2, 1, 4, 5, 7}, s);
      return mx::matmul(a, b, s);
    };
    Case c{"matmul 3 batch dims, b broadcast in the middle",
           {dt, dt},
           {2 * 3 * 4 * 6 * 5},
           Layout::contiguous,
           ++seed};
    CHECK_MESSAGE(run_case(c, op, {}, tolerance(dt, 5)), c.describe());
  }
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["Matmul"] == 0);
}

TEST_CASE("matmul matches the CPU for vectors, one column, K = 1 and empty dims") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  uint64_t seed = 900;
  for (auto dt : {mx::float32, mx::float16}) {
    struct Shapes {
      mx::Shape a, b;
    };
    for (const auto& sh : std::vector<Shapes>{
             {{37}, {37, 50}},        // vector x matrix: gemv
             {{50, 37}, {37}},        // matrix x vector: one column, turned around
             {{70, 37}, {37, 1}},     // one column
             {{3, 70, 37}, {37, 1}},  // one column, batched
             {{37}, {37}},            // dot product
             {{20, 1}, {1, 30}},      // K = 1: outer product
             {{0, 5}, {5, 6}},        // M = 0
             {{4, 5}, {5, 0}},        // N = 0
             {{4, 0}, {0, 6}},        // K = 0: zeros
             {{2, 0}, {0, 3}},
         }) {
      int64_t na = 1, nb = 1;
      for (int v : sh.a)
        na *= v;
      for (int v : sh.b)
        nb *= v;
      int total = static_cast<int>(std::max<int64_t>(na + nb, 1));
      Op op = [sh, na, nb](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
        auto a = mx::reshape(mx::slice(in[0], {0}, {static_cast<int>(na)}, s), sh.a, s);
        auto b = mx::reshape(
            mx::slice(in[1], {static_cast<int>(na)}, {static_cast<int>(na + nb)}, s), sh.b, s);
        return mx::matmul(a, b, s);
      };
      Case c{"matmul " + mx::shape_to_string(sh.a) + " x " + mx::shape_to_string(sh.b),
             {dt, dt},
             {total},
             Layout::contiguous,
             ++seed};
      CHECK_MESSAGE(run_case(c, op, {}, tolerance(dt, 50)), c.describe());
    }
  }
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["Matmul"] == 0);
}

TEST_CASE("matmul on the GPU splits long k for few columns and uses the large tile") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // gemv axpy with n small: workgroups split k and a second launch adds the partials.
  check_product({1, 64, 2048, false, false}, mx::float32, 1001);
  check_product({3, 24, 1500, false, false}, mx::float16, 1002);
  // Enough 128 x 128 tiles to pick the large tile (aligned, then ragged).
  check_product({256, 1024, 32, false, true, {8}}, mx::float32, 1003);
  check_product({250, 1000, 20, false, false, {8}}, mx::float32, 1004);
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["Matmul"] == 0);
}

TEST_CASE("f16 products on every cooperative-matrix tile, layout and number of k steps") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // Where the device has cooperative matrices (docs/matmul.md), these pick the
  // 128x256x16, 128x128x32 and 64x64x32 tiles in turn (grids of >= 128 workgroups, then
  // fewer); k of 16 to 80 runs the two-stage pipeline for 1 to 5 steps, ragged m and n
  // take the edge checks. Elsewhere they run the FMA tiles.
  // On a device with the KHR path each product also runs on each tile forced in turn, as
  // the tile rule (by waves where the device reports its compute units) need not pick them
  // all. Ragged m alone (300, 296) takes the row-only checks (edge=m).
  std::vector<std::string> tiles{""};
  if (mx::vulkan::device("test").caps().cooperative_matrix_khr) {
    tiles.insert(tiles.end(), {"coopkhr128x256x16w64x64", "coopkhr128x128x16w64x32",
                               "coopkhr128x128x32w64x32", "coopkhr64x64x32w32x32"});
  }
  uint64_t seed = 1100;
  for (const auto& tile : tiles) {
    mx::vulkan::set_forced_gemm_tile(tile);
    for (int k : {16, 48, 80}) {
      check_product({1024, 4096, k, false, true}, mx::float16, ++seed);
    }
    check_product({1000, 4088, 64, false, false}, mx::float16, ++seed);
    for (int k : {32, 96, 160}) {
      check_product({1024, 2048, k, false, k == 96}, mx::float16, ++seed);
    }
    check_product({1016, 2040, 40, true, false}, mx::float16, ++seed);
    check_product({200, 136, 72, true, true, {2}}, mx::float16, ++seed);
    check_product({64, 64, 32, false, true}, mx::float16, ++seed);
    check_product({300, 512, 64, false, true}, mx::float16, ++seed);
    check_product({300, 512, 64, false, false}, mx::float16, ++seed);
    check_product({296, 256, 96, true, false}, mx::float16, ++seed);
  }
  mx::vulkan::set_forced_gemm_tile("");
  check_product({300, 512, 64, false, false}, mx::bfloat16, ++seed);
  check_product({300, 512, 64, false, true}, mx::bfloat16, ++seed);
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["Matmul"] == 0);
}
