// mlx::core::fast::scaled_dot_product_attention against a plain double-precision loop written
// here (MLX's composition: where(mask, scores, finfo.min) or scores + mask, a sink logit
// joining the softmax), on the CPU and (when present) the GPU device; MLX's argument errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "mlx/fast_primitives.h"
#include "mlx/mlx.h"
#include "test_utils.h"

namespace mx = mlx::core;
using mlx_test::to_doubles;

namespace {

enum class MaskKind { none, causal, bool_full, add_full, bool_2d, bool_b11k, add_1h1k, add_1d };

const char* mask_name(MaskKind m) {
  switch (m) {
    case MaskKind::none:
      return "none";
    case MaskKind::causal:
      return "causal";
    case MaskKind::bool_full:
      return "bool[B,Hq,Lq,Lkv]";
    case MaskKind::add_full:
      return "additive[B,Hq,Lq,Lkv]";
    case MaskKind::bool_2d:
      return "bool[Lq,Lkv]";
    case MaskKind::bool_b11k:
      return "bool[B,1,1,Lkv]";
    case MaskKind::add_1h1k:
      return "additive[1,Hq,1,Lkv]";
    case MaskKind::add_1d:
      return "additive[Lkv]";
  }
  return "?";
}

bool is_bool(MaskKind m) {
  return m == MaskKind::bool_full || m == MaskKind::bool_2d || m == MaskKind::bool_b11k;
}

double lowest(mx::Dtype dt) {
  if (dt == mx::float16) {
    return -65504.0;
  }
  if (dt == mx::bfloat16) {
    return -0x1.fep127;
  }
  return std::numeric_limits<float>::lowest();
}

// Row-major dims of the four logical axes, for indexing the doubles read back.
struct Dims {
  int B, Hq, Hkv, Lq, Lkv, D, Dv;
};

// softmax(scale q.k [mask] [sink]) v in double: the definition the op must meet. q, k, v, mask
// and sinks are the values the op sees (already rounded to the dtype). mask holds the mask's
// own shape `mshape` and is broadcast here by index.
std::vector<double> reference(const Dims& n, const std::vector<double>& q,
                              const std::vector<double>& k, const std::vector<double>& v,
                              double scale, MaskKind mk, const std::vector<double>& mask,
                              const mx::Shape& mshape, const std::vector<double>* sinks,
                              double fill) {
  std::vector<double> out(size_t(n.B) * n.Hq * n.Lq * n.Dv);
  int group = n.Hq / n.Hkv;
  // Broadcast index into the mask: dims aligned to the right, size-1 dims read index 0.
  auto mask_at = [&](int b, int h, int i, int j) {
    int idx[4] = {b, h, i, j};
    size_t flat = 0;
    int off = 4 - static_cast<int>(mshape.size());
    for (size_t d = 0; d < mshape.size(); ++d) {
      int x = mshape[d] == 1 ? 0 : idx[off + d];
      flat = flat * mshape[d] + x;
    }
    return mask[flat];
  };
  std::vector<double> s(n.Lkv);
  for (int b = 0; b < n.B; ++b) {
    for (int h = 0; h < n.Hq; ++h) {
      int hk = h / group;
      for (int i = 0; i < n.Lq; ++i) {
        double mx_s = -INFINITY;
        for (int j = 0; j < n.Lkv; ++j) {
          double dot = 0;
          for (int d = 0; d < n.D; ++d) {
            dot += q[((size_t(b) * n.Hq + h) * n.Lq + i) * n.D + d] *
                   k[((size_t(b) * n.Hkv + hk) * n.Lkv + j) * n.D + d];
          }
          double sc = dot * scale;
          if (mk == MaskKind::causal && j > i + (n.Lkv - n.Lq)) {
            sc = fill;
          } else if (mk != MaskKind::none && mk != MaskKind::causal) {
            double m = mask_at(b, h, i, j);
            if (is_bool(mk)) {
              sc = m != 0 ? sc : fill;
            } else {
              sc += m;
            }
          }
          s[j] = sc;
          mx_s = std::max(mx_s, sc);
        }
        double sink = sinks ? (*sinks)[h] : -INFINITY;
        mx_s = std::max(mx_s, sink);
        double denom = sinks ? std::exp(sink - mx_s) : 0.0;
        std::vector<double> acc(n.Dv, 0.0);
        for (int j = 0; j < n.Lkv; ++j) {
          double p = std::exp(s[j] - mx_s);
          denom += p;
          for (int d = 0; d < n.Dv; ++d) {
            acc[d] += p * v[((size_t(b) * n.Hkv + hk) * n.Lkv + j) * n.Dv + d];
          }
        }
        for (int d = 0; d < n.Dv; ++d) {
          out[((size_t(b) * n.Hq + h) * n.Lq + i) * n.Dv + d] = acc[d] / denom;
        }
      }
    }
  }
  return out;
}

// Tolerances. CPU: the reference rounds each score to f32 and the output once, so f32 is
// within a few 1e-6 (score roundings of logits up to ~16) and 16-bit outputs within one ulp
// of the dtype (2^-10, 2^-7 relative). GPU: f32 math in another order with the device's exp,
// 16-bit probabilities possibly rounded before the second product: a few ulps of the dtype.
struct Tol {
  double rtol, atol;
};
Tol tolerance(mx::Dtype dt, mx::Device dev) {
  bool cpu = dev == mx::Device::cpu;
  if (dt == mx::float16) {
    return cpu ? Tol{0x1p-10, 1e-5} : Tol{4e-3, 4e-3};
  }
  if (dt == mx::bfloat16) {
    return cpu ? Tol{0x1p-7, 1e-5} : Tol{3e-2, 3e-2};
  }
  return cpu ? Tol{1e-5, 1e-5} : Tol{1e-4, 1e-4};
}

// A [d0, d1, d2, d3] operand whose logical values come from `vals` (row-major), laid out as
// asked: dense, or transposed (stored [d0, d2, d1, d3], viewed through swapaxes), or a
// slice of a longer axis 2 (a KV cache view starting at row 3).
enum class Layout { dense, transposed, cache_slice };
mx::array make_operand(const std::vector<double>& vals, const mx::Shape& shape, mx::Dtype dt,
                       Layout layout) {
  if (layout == Layout::dense) {
    return mx::array(vals.begin(), shape, dt);
  }
  int d0 = shape[0], d1 = shape[1], d2 = shape[2], d3 = shape[3];
  if (layout == Layout::transposed) {
    std::vector<double> t(vals.size());
    for (int a = 0; a < d0; ++a)
      for (int b = 0; b < d1; ++b)
        for (int c = 0; c < d2; ++c)
          for (int e = 0; e < d3; ++e)
            t[((size_t(a) * d2 + c) * d1 + b) * d3 + e] =
                vals[((size_t(a) * d1 + b) * d2 + c) * d3 + e];
    auto stored = mx::array(t.begin(), mx::Shape{d0, d2, d1, d3}, dt);
    return mx::swapaxes(stored, 1, 2);
  }
  const int cap = d2 + 5, start = 3;
  std::vector<double> big(size_t(d0) * d1 * cap * d3, 1e4);  // poison outside the view
  for (int a = 0; a < d0; ++a)
    for (int b = 0; b < d1; ++b)
      for (int c = 0; c < d2; ++c)
        for (int e = 0; e < d3; ++e)
          big[((size_t(a) * d1 + b) * cap + start + c) * d3 + e] =
              vals[((size_t(a) * d1 + b) * d2 + c) * d3 + e];
  auto stored = mx::array(big.begin(), mx::Shape{d0, d1, cap, d3}, dt);
  return mx::slice(stored, {0, 0, start, 0}, {d0, d1, start + d2, d3});
}

std::vector<double> uniform(size_t n, mlx_test::Rng& rng, double lo, double hi) {
  std::vector<double> v(n);
  for (auto& x : v) {
    x = rng.uniform(lo, hi);
  }
  return v;
}

const char* dtype_name(mx::Dtype dt) {
  return dt == mx::float16 ? "f16" : dt == mx::bfloat16 ? "bf16" : "f32";
}

}  // namespace

TEST_CASE(
    "scaled_dot_product_attention equals the double-precision definition: head dims, "
    "GQA, masks, sinks, strided K/V, dtypes") {
  const int B = 2, Hkv = 2;
  const MaskKind masks[] = {MaskKind::none,     MaskKind::causal,  MaskKind::bool_full,
                            MaskKind::add_full, MaskKind::bool_2d, MaskKind::bool_b11k,
                            MaskKind::add_1h1k, MaskKind::add_1d};
  const mx::Dtype dtypes[] = {mx::float32, mx::float16, mx::bfloat16};
  int cases = 0;
  for (auto dev : mlx_test::test_devices()) {
    uint64_t seed = 0;
    for (int D : {64, 80}) {
      for (int ratio : {1, 2, 4}) {
        for (int Lq : {1, 7}) {
          for (int Lkv : {1, 9}) {
            for (MaskKind mk : masks) {
              for (bool with_sinks : {false, true}) {
                for (mx::Dtype dt : dtypes) {
                  for (bool strided : {false, true}) {
                    ++seed;
                    const int Hq = Hkv * ratio, Dv = D;
                    Dims n{B, Hq, Hkv, Lq, Lkv, D, Dv};
                    std::ostringstream label;
                    label << (dev == mx::Device::cpu ? "cpu" : "gpu") << " D=" << D
                          << " Hq/Hkv=" << Hq << "/" << Hkv << " Lq=" << Lq << " Lkv=" << Lkv
                          << " mask=" << mask_name(mk) << " sinks=" << with_sinks
                          << " dtype=" << dtype_name(dt) << " strided=" << strided
                          << " seed=" << seed;
                    mlx_test::Rng rng(seed);
                    auto qv = uniform(size_t(B) * Hq * Lq * D, rng, -2, 2);
                    auto kv = uniform(size_t(B) * Hkv * Lkv * D, rng, -2, 2);
                    auto vv = uniform(size_t(B) * Hkv * Lkv * Dv, rng, -2, 2);
                    auto q = make_operand(qv, {B, Hq, Lq, D}, dt,
                                          strided ? Layout::transposed : Layout::dense);
                    auto k = make_operand(kv, {B, Hkv, Lkv, D}, dt,
                                          strided ? Layout::transposed : Layout::dense);
                    auto v = make_operand(vv, {B, Hkv, Lkv, Dv}, dt,
                                          strided ? Layout::cache_slice : Layout::dense);

                    mx::Shape mshape;
                    switch (mk) {
                      case MaskKind::bool_full:
                      case MaskKind::add_full:
                        mshape = {B, Hq, Lq, Lkv};
                        break;
                      case MaskKind::bool_2d:
                        mshape = {Lq, Lkv};
                        break;
                      case MaskKind::bool_b11k:
                        mshape = {B, 1, 1, Lkv};
                        break;
                      case MaskKind::add_1h1k:
                        mshape = {1, Hq, 1, Lkv};
                        break;
                      case MaskKind::add_1d:
                        mshape = {Lkv};
                        break;
                      default:
                        break;
                    }
                    size_t msize = 1;
                    for (int d : mshape) {
                      msize *= size_t(d);
                    }
                    std::vector<double> mvals(
                        mk == MaskKind::none || mk == MaskKind::causal ? 0 : msize);
                    for (size_t e = 0; e < mvals.size(); ++e) {
                      if (is_bool(mk)) {
                        mvals[e] = rng.uniform(0, 1) < 0.7 ? 1 : 0;  // Lkv=1: rows fully masked
                      } else {
                        // -inf at some positions past the first key: no row is all -inf.
                        bool inf = Lkv > 1 && e % size_t(Lkv) != 0 && e % 5 == 3;
                        mvals[e] = inf ? -INFINITY : rng.uniform(-3, 1);
                      }
                    }
                    std::optional<mx::array> mask;
                    std::string mode = mk == MaskKind::causal ? "causal" : "";
                    if (!mvals.empty()) {
                      mask = mx::array(mvals.begin(), mshape, is_bool(mk) ? mx::bool_ : dt);
                      if (!is_bool(mk)) {
                        mode = "array";
                      }
                    }
                    std::optional<mx::array> sinks;
                    std::vector<double> sinkv;
                    if (with_sinks) {
                      sinks = mx::array(uniform(Hq, rng, -1, 3).begin(), {Hq}, dt);
                      sinkv = to_doubles(*sinks);
                    }
                    double scale = 1.0 / std::sqrt(double(D));
                    auto out = mx::fast::scaled_dot_product_attention(
                        q, k, v, static_cast<float>(scale), mode, mask, sinks, false, dev);
                    REQUIRE(out.shape() == mx::Shape{B, Hq, Lq, Dv});
                    REQUIRE(out.dtype() == dt);
                    auto want = reference(n, to_doubles(q), to_doubles(k), to_doubles(v),
                                          double(static_cast<float>(scale)), mk,
                                          mask ? to_doubles(*mask) : std::vector<double>{}, mshape,
                                          with_sinks ? &sinkv : nullptr, lowest(dt));
                    auto tol = tolerance(dt, dev);
                    mlx_test::check_all_close(to_doubles(out), want, tol.rtol, tol.atol,
                                              label.str());
                    ++cases;
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  CHECK(cases >= 2304);
}

TEST_CASE("scaled_dot_product_attention with D_v != D, B = 2 and a KV cache slice") {
  const int B = 2, Hq = 4, Hkv = 2, Lq = 3, Lkv = 9, D = 64, Dv = 32;
  for (auto dev : mlx_test::test_devices()) {
    mlx_test::Rng rng(7);
    auto qv = uniform(size_t(B) * Hq * Lq * D, rng, -2, 2);
    auto kv = uniform(size_t(B) * Hkv * Lkv * D, rng, -2, 2);
    auto vv = uniform(size_t(B) * Hkv * Lkv * Dv, rng, -2, 2);
    auto q = make_operand(qv, {B, Hq, Lq, D}, mx::float32, Layout::dense);
    auto k = make_operand(kv, {B, Hkv, Lkv, D}, mx::float32, Layout::cache_slice);
    auto v = make_operand(vv, {B, Hkv, Lkv, Dv}, mx::float32, Layout::cache_slice);
    k.eval();
    v.eval();
    CHECK_FALSE(k.flags().row_contiguous);  // read in place, through the view's strides
    CHECK_FALSE(v.flags().row_contiguous);
    auto out =
        mx::fast::scaled_dot_product_attention(q, k, v, 0.125f, "causal", {}, {}, false, dev);
    REQUIRE(out.shape() == mx::Shape{B, Hq, Lq, Dv});
    auto want = reference({B, Hq, Hkv, Lq, Lkv, D, Dv}, qv, kv, vv, 0.125, MaskKind::causal, {}, {},
                          nullptr, lowest(mx::float32));
    auto tol = tolerance(mx::float32, dev);
    mlx_test::check_all_close(to_doubles(out), want, tol.rtol, tol.atol,
                              dev == mx::Device::cpu ? "cpu" : "gpu");
  }
}

// MLX's composition fills masked scores with finfo(dtype).min, not -inf: a row with no
// visible key is a uniform average of V; a sink then takes all the weight (output 0). An
// additive row of -inf has max -inf and gives NaN, as MLX's softmax does.
TEST_CASE(
    "scaled_dot_product_attention fully masked rows behave as MLX's composition: uniform over V, 0 "
    "with sinks") {
  const int B = 2, H = 2, Lq = 5, Lkv = 3, D = 8;
  for (auto dev : mlx_test::test_devices()) {
    CAPTURE(dev == mx::Device::cpu ? "cpu" : "gpu");
    for (mx::Dtype dt : {mx::float32, mx::float16, mx::bfloat16}) {
      CAPTURE(dtype_name(dt));
      mlx_test::Rng rng(11);
      auto qv = uniform(size_t(B) * H * Lq * D, rng, -2, 2);
      auto kv = uniform(size_t(B) * H * Lkv * D, rng, -2, 2);
      auto vv = uniform(size_t(B) * H * Lkv * D, rng, -2, 2);
      auto q = mx::array(qv.begin(), {B, H, Lq, D}, dt);
      auto k = mx::array(kv.begin(), {B, H, Lkv, D}, dt);
      auto v = mx::array(vv.begin(), {B, H, Lkv, D}, dt);
      auto vd = to_doubles(v);
      double tol = dt == mx::float32 ? 1e-5 : dt == mx::float16 ? 4e-3 : 3e-2;
      // Mean of V over all keys for (b, h, d).
      auto mean_v = [&](int b, int h, int d) {
        double s = 0;
        for (int j = 0; j < Lkv; ++j) {
          s += vd[((size_t(b) * H + h) * Lkv + j) * D + d];
        }
        return s / Lkv;
      };

      // All-false bool mask (a 0-d mask, as MLX's test_sdpa_fully_masked).
      auto none = to_doubles(mx::fast::scaled_dot_product_attention(
          q, k, v, 1.0f, "", mx::array(false), {}, false, dev));
      // Causal with Lq > Lkv: rows i < Lq - Lkv = 2 see no key.
      auto causal = to_doubles(
          mx::fast::scaled_dot_product_attention(q, k, v, 1.0f, "causal", {}, {}, false, dev));
      auto sinks = mx::array({0.5f, -1.0f}, mx::Shape{H}, dt);
      auto none_sink = to_doubles(mx::fast::scaled_dot_product_attention(
          q, k, v, 1.0f, "", mx::array(false), sinks, false, dev));
      auto causal_sink = to_doubles(
          mx::fast::scaled_dot_product_attention(q, k, v, 1.0f, "causal", {}, sinks, false, dev));
      for (int b = 0; b < B; ++b) {
        for (int h = 0; h < H; ++h) {
          for (int i = 0; i < Lq; ++i) {
            for (int d = 0; d < D; ++d) {
              size_t o = ((size_t(b) * H + h) * Lq + i) * D + d;
              CHECK(none[o] == doctest::Approx(mean_v(b, h, d)).epsilon(tol).scale(1));
              CHECK(none_sink[o] == 0.0);
              if (i < Lq - Lkv) {
                CHECK(causal[o] == doctest::Approx(mean_v(b, h, d)).epsilon(tol).scale(1));
                CHECK(causal_sink[o] == 0.0);
              }
            }
          }
        }
      }
      // An additive row of -inf: NaN without sinks, 0 with them.
      auto ninf = mx::full({Lq, Lkv}, -INFINITY, dt);
      for (double x : to_doubles(
               mx::fast::scaled_dot_product_attention(q, k, v, 1.0f, "", ninf, {}, false, dev))) {
        CHECK(std::isnan(x));
      }
      for (double x : to_doubles(mx::fast::scaled_dot_product_attention(q, k, v, 1.0f, "", ninf,
                                                                        sinks, false, dev))) {
        CHECK(x == 0.0);
      }
      // L_kv = 0: the product over an empty axis, 0.
      auto k0 = mx::zeros({B, H, 0, D}, dt);
      for (double x : to_doubles(
               mx::fast::scaled_dot_product_attention(q, k0, k0, 1.0f, "", {}, {}, false, dev))) {
        CHECK(x == 0.0);
      }
    }
  }
}

TEST_CASE("scaled_dot_product_attention dtypes and the primitive's inputs follow MLX") {
  auto q = mx::ones({1, 4, 3, 8}, mx::float16);
  auto k = mx::ones({1, 2, 5, 8}, mx::float16);
  auto v = mx::ones({1, 2, 5, 16}, mx::float16);
  // result_type(q, k, v); a bool mask stays bool; other masks and sinks take the output dtype.
  CHECK(mx::fast::scaled_dot_product_attention(q, mx::astype(k, mx::float32), v, 1.0f).dtype() ==
        mx::float32);
  auto mask = mx::ones({3, 5}, mx::bool_);
  auto sinks = mx::zeros({4}, mx::float16);
  auto out = mx::fast::scaled_dot_product_attention(q, k, v, 0.5f, "", mask, sinks);
  CHECK(out.shape() == mx::Shape{1, 4, 3, 16});
  CHECK(out.dtype() == mx::float16);
  auto& p = dynamic_cast<mx::fast::ScaledDotProductAttention&>(out.primitive());
  CHECK(p.scale() == 0.5f);
  CHECK(p.has_mask());
  CHECK_FALSE(p.causal());
  CHECK(p.has_sinks());
  CHECK(p.mask_kind() == mx::fast::AttentionMask::array);
  REQUIRE(out.inputs().size() == 5);
  CHECK(out.inputs()[3].dtype() == mx::bool_);
  CHECK(out.inputs()[3].shape() == mx::Shape{1, 4, 3, 5});  // broadcast view
  CHECK(out.inputs()[4].shape() == mx::Shape{4});
  // An integer mask promotes to the output dtype and is added.
  auto im =
      mx::fast::scaled_dot_product_attention(q, k, v, 0.5f, "array", mx::zeros({5}, mx::int32));
  CHECK(im.inputs()[3].dtype() == mx::float16);
  auto causal_out = mx::fast::scaled_dot_product_attention(q, k, v, 0.5f, "causal");
  auto& pc = dynamic_cast<mx::fast::ScaledDotProductAttention&>(causal_out.primitive());
  CHECK(pc.causal());
  CHECK_FALSE(pc.has_mask());
  CHECK_FALSE(pc.has_sinks());
  // MLX: mode "array" without a mask array is no mask; a mask array with mode "" is used.
  auto a0 = mx::fast::scaled_dot_product_attention(q, k, v, 0.5f, "array");
  CHECK(a0.inputs().size() == 3);
  CHECK(mx::fast::scaled_dot_product_attention(q, k, v, 0.5f, "", mask).inputs().size() == 4);
  // Same values: an all-true mask is no mask.
  CHECK(mx::allclose(a0, mx::fast::scaled_dot_product_attention(q, k, v, 0.5f, "", mask))
            .item<bool>());
}

TEST_CASE("scaled_dot_product_attention argument errors are MLX's") {
  auto q = mx::ones({2, 4, 3, 8});
  auto k = mx::ones({2, 2, 5, 8});
  auto v = mx::ones({2, 2, 5, 8});
  auto err = [](auto f, const char* msg) {
    CHECK_THROWS_WITH_AS(f(), doctest::Contains(msg), std::invalid_argument);
  };
  using mx::fast::scaled_dot_product_attention;
  err(
      [&] {
        return scaled_dot_product_attention(mx::ones({4, 3, 8}), k, v, 1.0f);
      },
      "[scaled_dot_product_attention] input with shape (4,3,8) expected to be rank 4");
  err(
      [&] {
        return scaled_dot_product_attention(q, k, mx::ones({1, 2, 2, 5, 8}), 1.0f);
      },
      "[scaled_dot_product_attention] input with shape (1,2,2,5,8) expected to be rank 4");
  err([&] { return scaled_dot_product_attention(q, k, v, 1.0f, "sliding"); },
      "[scaled_dot_product_attention] Invalid mask_mode sliding. mask_mode must be 'causal', "
      "'array' or ''.");
  err(
      [&] {
        return scaled_dot_product_attention(q, k, v, 1.0f, "causal", mx::ones({3, 5}));
      },
      "[scaled_dot_product_attention] Invalid mask_arr for mask_mode 'casusal'. No array mask "
      "should be passed.");
  err(
      [&] {
        return scaled_dot_product_attention(q, k, v, 1.0f, "array", mx::ones({1, 2, 4, 3, 5}));
      },
      "[scaled_dot_product_attention] the mask with shape (1,2,4,3,5) expected to have at most "
      "rank 4.");
  err(
      [&] {
        return scaled_dot_product_attention(q, mx::ones({1, 2, 5, 8}), v, 1.0f);
      },
      "[scaled_dot_product_attention] mismatching batch dimension for input with shape "
      "(1,2,5,8).");
  err(
      [&] {
        return scaled_dot_product_attention(q, k, mx::ones({3, 2, 5, 8}), 1.0f);
      },
      "[scaled_dot_product_attention] mismatching batch dimension for input with shape "
      "(3,2,5,8).");
  err(
      [&] {
        return scaled_dot_product_attention(q, mx::ones({2, 2, 5, 16}), v, 1.0f);
      },
      "[scaled_dot_product_attention] query, keys expected to have matching last dimension; "
      "found query shape (2,4,3,8) for keys shape (2,2,5,16).");
  err(
      [&] {
        return scaled_dot_product_attention(q, k, mx::ones({2, 1, 5, 8}), 1.0f);
      },
      "[scaled_dot_product_attention] keys, values expected to have matching n_kv_heads; found "
      "keys with n_heads 2 for values with n_heads 1.");
  err(
      [&] {
        return scaled_dot_product_attention(q, k, mx::ones({2, 2, 6, 8}), 1.0f);
      },
      "[scaled_dot_product_attention] keys, values expected to have matching sequence length");
  err(
      [&] {
        return scaled_dot_product_attention(q, mx::ones({2, 3, 5, 8}), mx::ones({2, 3, 5, 8}),
                                            1.0f);
      },
      "[scaled_dot_product_attention] n_heads must be a multiple of n_kv_heads, found n_heads 4 "
      "for n_kv_heads 3.");
  err(
      [&] {
        return scaled_dot_product_attention(mx::ones({2, 4, 3, 8}, mx::int32),
                                            mx::ones({2, 2, 5, 8}, mx::int32),
                                            mx::ones({2, 2, 5, 8}, mx::int32), 1.0f);
      },
      "[scaled_dot_product_attention] Received unsupported type int32.");
  err(
      [&] {
        auto h = mx::ones({2, 2, 5, 8}, mx::float16);
        return scaled_dot_product_attention(mx::ones({2, 4, 3, 8}, mx::float16), h, h, 1.0f, "",
                                            mx::zeros({3, 5}, mx::float32));
      },
      "[scaled_dot_product_attention] Mask type must promote to output type float16.");
  // A mask that does not broadcast to [B, n_q_heads, L_q, L_kv] (here a head dim of
  // n_kv_heads under GQA): MLX's error comes from broadcast_to.
  err(
      [&] {
        return scaled_dot_product_attention(q, k, v, 1.0f, "", mx::ones({2, 2, 3, 5}));
      },
      "[broadcast_to] cannot broadcast array of shape (2,2,3,5) to shape (2,4,3,5).");
  err(
      [&] {
        return scaled_dot_product_attention(q, k, v, 1.0f, "", mx::ones({3, 4}));
      },
      "[broadcast_to] cannot broadcast");
  err(
      [&] {
        auto h = mx::ones({2, 2, 5, 8}, mx::float16);
        return scaled_dot_product_attention(mx::ones({2, 4, 3, 8}, mx::float16), h, h, 1.0f, "", {},
                                            mx::zeros({4}, mx::float32));
      },
      "[scaled_dot_product_attention] Type of sinks must promote to output type float16.");
  err([&] { return scaled_dot_product_attention(q, k, v, 1.0f, "", {}, mx::zeros({5})); },
      "[scaled_dot_product_attention] Received invalid shape for sinks (5).");
  err([&] { return scaled_dot_product_attention(q, k, v, 1.0f, "", {}, mx::array(0.0f)); },
      "[scaled_dot_product_attention] Received invalid shape for sinks ().");
}
