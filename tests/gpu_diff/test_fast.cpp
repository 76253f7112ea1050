// fast::rms_norm, fast::layer_norm ("norm" family) and fast::rope ("rope" family) on the GPU
// match the CPU reference for f32, f16 and bf16: register-held rows (vector and scalar
// loads), rows longer than the registers hold, short rows sharing a workgroup, transposed
// inputs (copied dense first), with and without weight and bias; rope in both pair
// layouts, with passed-through features, per-batch offsets, freqs, and large positions.
//
// Tolerances: f32 rows accumulate in a different order on the device (a tree, not a loop),
// so a norm's statistics differ by a few f32 roundings of the row sum: 2e-5 relative. For
// rope the angle is the same f32 product on both sides, but the GPU's exp2 for the inverse
// frequency may differ by an ulp or two, which moves theta by ~2.4e-7 * theta: with
// positions below ~100 and |x| <= 4 that is < 1e-4 absolute. 16-bit outputs: one rounding
// of the dtype (default_tolerance).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include "harness.h"
#include "mlx/backend/vulkan/cpu_fallback.h"

namespace mx = mlx::core;
using namespace gpu_diff;

namespace {

// The last row of `a` as a 1-d array: a weight or bias of a.shape(-1) values.
mx::array last_row(const mx::array& a, mx::StreamOrDevice s) {
  auto flat = mx::reshape(a, {-1, a.shape(-1)}, s);
  int rows = flat.shape(0);
  return mx::reshape(mx::slice(flat, {rows - 1, 0}, {rows, a.shape(-1)}, s), {-1}, s);
}

const std::vector<mx::Shape> norm_shapes = {
    {7},         {3, 5},  // scalar loads, several rows per workgroup
    {4, 3, 128},          // head-sized rows: vector loads, rows share a workgroup
    {67, 1031},           // scalar loads, one row per workgroup
    {5, 4096},            // vector loads held in registers
    {2, 9000},            // longer than the registers hold: looped passes
    {1, 100003},          // > 100k, prime: looped passes with scalar loads
};

}  // namespace

TEST_CASE("rms_norm and layer_norm match the CPU over dtypes, shapes and layouts") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  for (auto dt : {mx::float32, mx::float16, mx::bfloat16}) {
    Tolerance tol = dt == mx::float32 ? Tolerance{2e-5, 1e-5} : default_tolerance(dt);
    for (const auto& shape : norm_shapes) {
      for (auto layout : {Layout::contiguous, Layout::transposed}) {
        Op rms = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
          return mx::fast::rms_norm(in[0], last_row(in[1], s), 1e-5f, s);
        };
        Op rms_plain = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
          return mx::fast::rms_norm(in[0], std::nullopt, 1e-6f, s);
        };
        Op ln = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
          return mx::fast::layer_norm(in[0], last_row(in[1], s), last_row(in[2], s), 1e-5f, s);
        };
        Op ln_plain = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
          return mx::fast::layer_norm(in[0], std::nullopt, std::nullopt, 1e-5f, s);
        };
        Case c2{"rms_norm", {dt, dt}, shape, layout, 21};
        CHECK_MESSAGE(run_case(c2, rms, {}, tol), c2.describe());
        Case c1{"rms_norm(no weight)", {dt}, shape, layout, 22};
        CHECK_MESSAGE(run_case(c1, rms_plain, {}, tol), c1.describe());
        Case c3{"layer_norm", {dt, dt, dt}, shape, layout, 23};
        CHECK_MESSAGE(run_case(c3, ln, {}, tol), c3.describe());
        Case c0{"layer_norm(no affine)", {dt}, shape, layout, 24};
        CHECK_MESSAGE(run_case(c0, ln_plain, {}, tol), c0.describe());
      }
    }
  }
  auto counts = mx::vulkan::fallback_counts();
  CHECK(counts["RMSNorm"] == 0);
  CHECK(counts["LayerNorm"] == 0);
}

TEST_CASE("rope matches the CPU over dtypes, pair layouts, offsets and freqs") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  struct RopeCase {
    mx::Shape shape;
    int dims;
  };
  const std::vector<RopeCase> cases = {
      {{1, 4, 9, 128}, 128},  // a model's heads: 4 pairs per invocation
      {{2, 3, 5, 16}, 8},     // features past dims pass through
      {{2, 7, 12}, 12},       // 3-d [B, T, D]; dims/2 = 6: 2 pairs per invocation
      {{1, 2, 3, 3, 6}, 6},   // 5-d; dims/2 = 3: one pair per invocation
  };
  for (auto dt : {mx::float32, mx::float16, mx::bfloat16}) {
    Tolerance tol = dt == mx::float32 ? Tolerance{1e-4, 1e-4} : default_tolerance(dt);
    for (const auto& rc : cases) {
      for (bool trad : {false, true}) {
        int dims = rc.dims;
        int batch = rc.shape[0];
        Op plain = [=](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
          return mx::fast::rope(in[0], dims, trad, 10000.0f, 1.0f, 11, std::nullopt, s);
        };
        Op per_batch = [=](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
          auto off = mx::astype(mx::multiply(mx::arange(batch, s), mx::array(5), s), mx::int32, s);
          return mx::fast::rope(in[0], dims, trad, 500.0f, 0.25f, off, std::nullopt, s);
        };
        Op freqs = [=](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
          auto f = mx::add(mx::arange(dims / 2, mx::float32, s), mx::array(1.5f), s);
          return mx::fast::rope(in[0], dims, trad, std::nullopt, 1.0f, 3, f, s);
        };
        for (auto layout : {Layout::contiguous, Layout::transposed}) {
          Case c{trad ? "rope(traditional)" : "rope", {dt}, rc.shape, layout, 31};
          CHECK_MESSAGE(run_case(c, plain, {}, tol), c.describe());
        }
        Case cb{"rope(per-batch offsets)", {dt}, rc.shape, Layout::contiguous, 32};
        CHECK_MESSAGE(run_case(cb, per_batch, {}, tol), cb.describe());
        Case cf{"rope(freqs)", {dt}, rc.shape, Layout::contiguous, 33};
        CHECK_MESSAGE(run_case(cf, freqs, {}, tol), cf.describe());
      }
    }
  }
  // Positions near 10^5 (long contexts): the angle is reduced before sin/cos on the GPU.
  // theta itself is an f32 product, so an ulp of the inverse frequency moves it by up to
  // ~0.01 rad here: a looser absolute tolerance for this case only.
  Op far = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::fast::rope(in[0], 64, false, 10000.0f, 1.0f, 100000, std::nullopt, s);
  };
  Case c{"rope(position 1e5)", {mx::float32}, {1, 2, 4, 64}, Layout::contiguous, 34};
  CHECK_MESSAGE(run_case(c, far, {}, Tolerance{0, 5e-2}), c.describe());
  CHECK(mx::vulkan::fallback_counts()["RoPE"] == 0);
}

TEST_CASE("norms of rows with NaN or infinities give what the CPU gives") {
  if (!gpu_present())
    return;
  float nan = std::nanf("");
  float inf = INFINITY;
  // Row 0 holds a NaN, row 1 an infinity, row 2 is finite: NaN or inf propagate through the
  // row statistics exactly as on the CPU (both compute in f32 or wider).
  mx::array x({1.0f, nan, 2.0f, 3.0f, 1.0f, inf, 2.0f, 3.0f, 1.0f, -2.0f, 2.0f, 3.0f}, {3, 4});
  for (int which = 0; which < 3; ++which) {
    auto f = [&](mx::Device d) {
      if (which == 0) {
        return mx::fast::rms_norm(x, std::nullopt, 1e-5f, d);
      }
      if (which == 1) {
        return mx::fast::layer_norm(x, std::nullopt, std::nullopt, 1e-5f, d);
      }
      return mx::softmax(x, -1, false, d);
    };
    auto g = mlx_test::to_doubles(f(mx::Device::gpu));
    auto c = mlx_test::to_doubles(f(mx::Device::cpu));
    REQUIRE(g.size() == c.size());
    for (size_t i = 0; i < g.size(); ++i) {
      bool same = (std::isnan(g[i]) && std::isnan(c[i])) || g[i] == c[i] ||
                  std::abs(g[i] - c[i]) <= 1e-6 * std::max(1.0, std::abs(c[i]));
      CHECK_MESSAGE(same, "op " << which << " element " << i << ": " << g[i] << " vs " << c[i]);
    }
  }
}

TEST_CASE("norms of rows wider than one binding run on the GPU and match a double loop") {
  size_t range = small_binding_range();
  if (!range)
    return;
  mx::vulkan::reset_fallback_counts();
  auto gpu = mx::Device::gpu;
  // Rows longer than one binding: the statistics from the reduce family, the rest from
  // elementwise launches. Against double-precision loops: a plain f32 sum of 2^25 squares
  // on the CPU loses digits. One op at a time: the device holds 2 GiB on lavapipe.
  int n = static_cast<int>(range / 4) + 4100;
  auto x = small_ints(1, n, 71);
  auto w = mx::reshape(mx::multiply(small_ints(1, n, 72), mx::array(0.25f), gpu), {n}, gpu);
  auto xd = mlx_test::to_doubles(x);
  auto wd = mlx_test::to_doubles(w);
  double sum = 0, squares = 0;
  for (double v : xd) {
    sum += v;
    squares += v * v;
  }
  double mean = sum / n;
  double centered = 0;
  for (double v : xd) {
    centered += (v - mean) * (v - mean);
  }
  auto check = [&](const mx::array& y, const std::function<double(size_t)>& want,
                   const std::string& what) {
    auto g = mlx_test::to_doubles(y);
    size_t bad = g.size();
    for (size_t i = 0; i < g.size() && bad == g.size(); ++i) {
      if (!mlx_test::close(g[i], want(i), 2e-5, 1e-5)) {
        bad = i;
      }
    }
    CHECK_MESSAGE(bad == g.size(), what << ": element " << bad << " GPU "
                                        << (bad < g.size() ? g[bad] : 0.0) << " reference "
                                        << (bad < g.size() ? want(bad) : 0.0));
  };
  double rms = 1 / std::sqrt(squares / n + 1e-5);
  check(
      gpu_eval_checked([&] { return std::vector<mx::array>{mx::fast::rms_norm(x, w, 1e-5f, gpu)}; },
                       "long-row rms_norm")[0],
      [&](size_t i) { return xd[i] * rms * wd[i]; }, "rms_norm");
  double ln = 1 / std::sqrt(centered / n + 1e-5);
  // The weight doubles as the bias.
  check(
      gpu_eval_checked(
          [&] { return std::vector<mx::array>{mx::fast::layer_norm(x, w, w, 1e-5f, gpu)}; },
          "long-row layer_norm")[0],
      [&](size_t i) { return (xd[i] - mean) * ln * wd[i] + wd[i]; }, "layer_norm");
  // A bf16 row longer than a bf16 binding: read through an f32 copy, rounded once on store.
  // Constant (the values would not fit the host twice over): 2 * 3 / sqrt(9 + eps) is 2 in
  // bf16.
  int nb = static_cast<int>(range / 2) + 4100;
  auto xb = mx::full({1, nb}, mx::array(3.0f), mx::bfloat16, gpu);
  auto wb = mx::full({nb}, mx::array(2.0f), mx::bfloat16, gpu);
  auto yb = gpu_eval_checked(
      [&] { return std::vector<mx::array>{mx::fast::rms_norm(xb, wb, 1e-5f, gpu)}; },
      "long-row bf16 rms_norm")[0];
  CHECK(yb.dtype() == mx::bfloat16);
  CHECK(mx::min(yb, false, mx::Device::cpu).item<float>() == 2.0f);
  CHECK(mx::max(yb, false, mx::Device::cpu).item<float>() == 2.0f);
  CHECK(mx::vulkan::fallback_counts().empty());
}

TEST_CASE("norms and softmax of rows of millions of elements match a double loop") {
  if (!gpu_present())
    return;
  // Rows past 2^20 elements that fit a binding take the reduce + elementwise path: on
  // lavapipe the row kernel's loops over an 8M-element row hit llvmpipe's 65535-iteration
  // limit and gave zeros (rms_norm) and sums of 64 (softmax times n).
  mx::vulkan::reset_fallback_counts();
  auto gpu = mx::Device::gpu;
  const int n = (8 << 20) + 3;
  auto x = small_ints(1, n, 73);
  auto xd = mlx_test::to_doubles(x);
  double squares = 0, top = -1e30;
  for (double v : xd) {
    squares += v * v;
    top = std::max(top, v);
  }
  double denom = 0;
  for (double v : xd) {
    denom += std::exp(v - top);
  }
  double rms = 1 / std::sqrt(squares / n + 1e-5);
  auto got = gpu_eval_checked(
      [&] {
        return std::vector<mx::array>{mx::fast::rms_norm(x, std::nullopt, 1e-5f, gpu),
                                      mx::softmax(x, -1, false, gpu)};
      },
      "8M-element rows");
  auto r = mlx_test::to_doubles(got[0]);
  auto s = mlx_test::to_doubles(got[1]);
  size_t bad_r = r.size(), bad_s = s.size();
  for (size_t i = 0; i < r.size(); ++i) {
    if (bad_r == r.size() && !mlx_test::close(r[i], xd[i] * rms, 2e-5, 1e-5)) {
      bad_r = i;
    }
    if (bad_s == s.size() && !mlx_test::close(s[i], std::exp(xd[i] - top) / denom, 2e-5, 1e-12)) {
      bad_s = i;
    }
  }
  CHECK_MESSAGE(bad_r == r.size(), "rms_norm element " << bad_r);
  CHECK_MESSAGE(bad_s == s.size(), "softmax element " << bad_s);
  CHECK(mx::vulkan::fallback_counts().empty());
}

TEST_CASE("rope of rows wider than one binding runs on the GPU in pieces and matches") {
  size_t range = small_binding_range();
  if (!range)
    return;
  mx::vulkan::reset_fallback_counts();
  // Pairs in pieces of one binding, both pair layouts, computed frequencies and a freqs
  // table, and features past dims passed through.
  int n = static_cast<int>(range / 4) + 4100;
  int dims = n - 100;
  auto x = mx::reshape(small_ints(1, n, 76), {1, 1, 1, n}, mx::Device::gpu);
  auto freqs =
      mx::add(mx::arange(dims / 2, mx::float32, mx::Device::cpu), mx::array(1.5f), mx::Device::cpu);
  freqs.eval();
  for (bool trad : {false, true}) {
    auto op = [&](mx::Device d) {
      return trad ? mx::fast::rope(x, dims, true, std::nullopt, 0.5f, 2, freqs, d)
                  : mx::fast::rope(x, dims, false, 10000.0f, 1.0f, 3, std::nullopt, d);
    };
    auto got =
        gpu_eval_checked([&] { return std::vector<mx::array>{op(mx::Device::gpu)}; }, "rope")[0];
    CHECK(all_close(got, op(mx::Device::cpu), {1e-4, 1e-4},
                    trad ? "long-row rope (traditional, freqs)" : "long-row rope"));
  }
  CHECK(mx::vulkan::fallback_counts().empty());
}

TEST_CASE("norms and rope of views wider than one binding run on the GPU and match") {
  size_t range = small_binding_range();
  if (!range)
    return;
  mx::vulkan::reset_fallback_counts();
  // A transposed square just wider than one binding: copied dense in staged blocks first.
  int side = (static_cast<int>(std::sqrt(range / 4.0)) + 64) / 2 * 2;
  auto sq = small_ints(side, side, 74);
  auto sw = mx::reshape(small_ints(1, side, 75), {side}, mx::Device::gpu);
  int long_side = static_cast<int>(range / 4 / 16 + 64) / 2 * 2;
  auto tall = small_ints(long_side, 16, 76);
  using Make = std::function<mx::array(mx::Device)>;
  const std::vector<std::pair<const char*, Make>> ops = {
      {"transposed rms_norm",
       [&](mx::Device d) { return mx::fast::rms_norm(mx::transpose(sq, d), sw, 1e-5f, d); }},
      {"transposed layer_norm",
       [&](mx::Device d) { return mx::fast::layer_norm(mx::transpose(sq, d), sw, sw, 1e-5f, d); }},
      {"transposed rope", [&](mx::Device d) {
         // Few rows (positions stay small: f32 angles of large positions differ by ulps),
         // each long.
         auto t = mx::transpose(mx::reshape(tall, {1, long_side, 16}, d), {0, 2, 1}, d);
         return mx::fast::rope(t, long_side, false, 10000.0f, 1.0f, 5, std::nullopt, d);
       }}};
  for (const auto& [what, make] : ops) {
    auto got =
        gpu_eval_checked([&] { return std::vector<mx::array>{make(mx::Device::gpu)}; }, what)[0];
    CHECK(all_close(got, make(mx::Device::cpu), {1e-4, 1e-4}, what));
  }
  CHECK(mx::vulkan::fallback_counts().empty());
}
