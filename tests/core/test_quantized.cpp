// quantize, dequantize, quantized_matmul and addmm on the CPU: MLX's packed words for known
// groups, a reference quantizer written from the format's description (docs/quantization.md),
// round-trip bounds, products against matmul, and every argument error with its op's name.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "mlx/mlx.h"
#include "test_utils.h"

namespace mx = mlx::core;
using mlx_test::to_doubles;
using mlx_test::to_vector;

namespace {

const mx::Device cpu = mx::Device::cpu;
constexpr int kAllBits[] = {2, 3, 4, 5, 6, 8};
constexpr int kGroupSizes[] = {32, 64, 128};
const mx::Dtype kFloats[] = {mx::float32, mx::float16, mx::bfloat16};

std::string dtype_name(mx::Dtype t) {
  return t == mx::float32 ? "float32" : t == mx::float16 ? "float16" : "bfloat16";
}

// Unit roundoff of a float dtype: half an ulp at 1.
double unit_roundoff(mx::Dtype t) {
  return t == mx::float16 ? 0x1p-11 : t == mx::bfloat16 ? 0x1p-8 : 0x1p-24;
}

// v rounded to dtype t (nearest even), as a double.
double round_to(double v, mx::Dtype t) {
  if (t == mx::float16) {
    return static_cast<float>(mx::float16_t(static_cast<float>(v)));
  }
  if (t == mx::bfloat16) {
    return static_cast<float>(mx::bfloat16_t(static_cast<float>(v)));
  }
  return static_cast<float>(v);
}

// MLX's words for one row of q values, built the way the format is described rather than
// the way the library builds them: bits 2, 4, 8 put element j of a word at bits
// [j*bits, (j+1)*bits); bits 3, 5, 6 pack 8 (or, for 6, 4) values into a 64-bit integer,
// lowest first, write its low 3 or 5 bytes out, and view the byte stream as uint32.
std::vector<uint32_t> pack_words(const std::vector<uint32_t>& q, int bits) {
  if (bits == 2 || bits == 4 || bits == 8) {
    int per_word = 32 / bits;
    std::vector<uint32_t> words(q.size() / per_word, 0);
    for (size_t j = 0; j < q.size(); ++j) {
      words[j / per_word] |= q[j] << ((j % per_word) * bits);
    }
    return words;
  }
  size_t per_pack = bits == 6 ? 4 : 8;
  size_t bytes_per_pack = bits == 5 ? 5 : 3;
  std::vector<uint8_t> bytes;
  for (size_t p = 0; p < q.size() / per_pack; ++p) {
    uint64_t v = 0;
    for (size_t k = 0; k < per_pack; ++k) {
      v |= uint64_t{q[p * per_pack + k]} << (k * bits);
    }
    for (size_t i = 0; i < bytes_per_pack; ++i) {
      bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
    }
  }
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), words.size() * 4);
  return words;
}

struct RefGroup {
  float scale;
  float bias;
  std::vector<uint32_t> q;
};

// One group as MLX's CPU quantizer computes it, each step in float32 (the formula).
RefGroup ref_group(const std::vector<float>& w, int bits) {
  float n_bins = static_cast<float>((1 << bits) - 1);
  float w_min = w[0], w_max = w[0];
  for (float v : w) {
    w_min = std::min(w_min, v);
    w_max = std::max(w_max, v);
  }
  bool min_is_edge = std::abs(w_min) > std::abs(w_max);
  float scale = std::max((w_max - w_min) / n_bins, 1e-7f);
  float edge = min_is_edge ? w_min : w_max;
  if (!min_is_edge) {
    scale = -scale;
  }
  float q0 = std::rint(edge / scale);
  float bias = 0;
  if (q0 != 0) {
    scale = edge / q0;
    bias = edge;
  }
  RefGroup g{scale, bias, {}};
  for (float v : w) {
    float q = std::rint((v - bias) / scale);
    g.q.push_back(static_cast<uint32_t>(std::clamp(q, 0.0f, n_bins)));
  }
  return g;
}

mx::array row_array(const std::vector<double>& v, mx::Shape shape, mx::Dtype t) {
  return mx::array(v.begin(), std::move(shape), t);
}

// {w_q, scales, biases} of w, evaluated.
std::vector<mx::array> quantize_cpu(const mx::array& w, int group_size, int bits) {
  auto out = mx::quantize(w, group_size, bits, "affine", std::nullopt, cpu);
  mx::eval(out);
  return out;
}

}  // namespace

TEST_CASE("quantize packs groups of known q values into MLX's words for bits 2 to 8") {
  for (auto t : kFloats) {
    for (int bits : kAllBits) {
      CAPTURE(dtype_name(t));
      CAPTURE(bits);
      // w = (q - n_bins) / 4: the minimum -n_bins/4 is the edge, so scale 1/4, bias
      // -n_bins/4 and q come back exactly (every value is exact in bfloat16 too).
      int n = (1 << bits) - 1;
      std::vector<uint32_t> q0(32), q1(32);
      for (int i = 0; i < 32; ++i) {
        q0[i] = static_cast<uint32_t>((i * 7 + 3) % (n + 1));
        q1[i] = static_cast<uint32_t>(n) - q0[i];  // a second row, q reversed
      }
      q0[0] = 0;
      q0[1] = static_cast<uint32_t>(n);
      q1[0] = 0;
      q1[1] = static_cast<uint32_t>(n);
      std::vector<double> wv;
      for (auto* q : {&q0, &q1}) {
        for (uint32_t v : *q) {
          wv.push_back((double(v) - n) / 4);
        }
      }
      auto w = row_array(wv, {2, 32}, t);
      auto out = quantize_cpu(w, 32, bits);
      CHECK(out[0].dtype() == mx::uint32);
      CHECK(out[0].shape() == mx::Shape{2, bits});
      CHECK(out[1].dtype() == t);
      CHECK(out[1].shape() == mx::Shape{2, 1});
      auto words = to_vector<uint32_t>(out[0]);
      auto want = pack_words(q0, bits);
      auto want1 = pack_words(q1, bits);
      want.insert(want.end(), want1.begin(), want1.end());
      CHECK(words == want);
      CHECK(to_doubles(out[1]) == std::vector<double>{0.25, 0.25});
      CHECK(to_doubles(out[2]) == std::vector<double>{-n / 4.0, -n / 4.0});
      auto dq = mx::dequantize(out[0], out[1], out[2], 32, bits, "affine", std::nullopt,
                               std::nullopt, cpu);
      CHECK(dq.dtype() == t);
      CHECK(to_doubles(dq) == wv);
    }
  }
}

TEST_CASE("the worked example of docs/quantization.md: exact words for bits 4 and 3") {
  // w_i = (i - 10) / 8 for i = 0..31: min -1.25, max 2.625. The max has the larger
  // magnitude, so it is the edge and the scale is negative.
  std::vector<double> wv(32);
  for (int i = 0; i < 32; ++i) {
    wv[i] = (i - 10) / 8.0;
  }
  auto w = row_array(wv, {1, 32}, mx::float32);
  auto bits_of = [](float f) { return std::bit_cast<uint32_t>(f); };

  auto q4 = quantize_cpu(w, 32, 4);
  CHECK(to_vector<uint32_t>(q4[0]) ==
        std::vector<uint32_t>{0xbccddeefu, 0x8899aaabu, 0x44556677u, 0x00112233u});
  CHECK(bits_of(q4[1].item<float>()) == 0xbe866666u);  // 2.625 / -10 = -0.2625 in float32
  CHECK(q4[2].item<float>() == 2.625f);

  auto q3 = quantize_cpu(w, 32, 3);
  CHECK(to_vector<uint32_t>(q3[0]) == std::vector<uint32_t>{0x6ddb6fffu, 0x36dc925bu, 0x00124a49u});
  CHECK(bits_of(q3[1].item<float>()) == 0xbf066666u);  // 2.625 / -5 = -0.525 in float32
  CHECK(q3[2].item<float>() == 2.625f);

  // The first element, -1.25: q = rint((-1.25 - 2.625) / -0.2625) = rint(14.76) = 15.
  auto dq = to_doubles(
      mx::dequantize(q4[0], q4[1], q4[2], 32, 4, "affine", std::nullopt, std::nullopt, cpu));
  CHECK(dq[0] == double(-0.2625f * 15 + 2.625f));
}

TEST_CASE("quantize: a clamped end of a group can be off by a whole |scale|") {
  // The bound |w - dq| <= |scale| / 2 does not hold for MLX's format: moving the
  // scale to put the edge on the grid can push the other end past q = n_bins, where it is
  // clamped. Here w = {-1.5, 1.5, 0, ...} with bits 4: the edge is the max (|-1.5| > |1.5|
  // is false), the scale -3/15 = -0.2 (float32 0.2000000030), 1.5 / -0.2 rounds to -7.5 in
  // float32 and rint(-7.5) = -8, so scale = 1.5 / -8 = -0.1875 and bias 1.5; w = -1.5 wants
  // q = 16, gets 15, and dequantizes to -1.3125.
  std::vector<double> wv(32, 0.0);
  wv[0] = -1.5;
  wv[1] = 1.5;
  auto out = quantize_cpu(row_array(wv, {1, 32}, mx::float32), 32, 4);
  CHECK(out[1].item<float>() == -0.1875f);
  CHECK(out[2].item<float>() == 1.5f);
  auto dq = to_doubles(
      mx::dequantize(out[0], out[1], out[2], 32, 4, "affine", std::nullopt, std::nullopt, cpu));
  CHECK(dq[0] == -1.3125);
  CHECK(dq[1] == 1.5);
  CHECK(dq[2] == 0.0);
}

TEST_CASE("quantize and dequantize equal the reference quantizer bit for bit") {
  mlx_test::Rng rng(12);
  for (auto t : kFloats) {
    for (int gs : kGroupSizes) {
      for (int bits : kAllBits) {
        CAPTURE(dtype_name(t));
        CAPTURE(gs);
        CAPTURE(bits);
        const int rows = 5, K = 256;
        // Row 0 mixed signs, row 1 all negative, row 2 all positive, row 3 small values,
        // row 4 zeros in its first group (scale +-1e-7, bias 0).
        std::vector<double> wv(rows * K);
        for (int r = 0; r < rows; ++r) {
          for (int k = 0; k < K; ++k) {
            double v = rng.uniform(-3, 3);
            v = r == 1 ? -std::abs(v) - 0.5 : r == 2 ? std::abs(v) + 0.5 : r == 3 ? v * 1e-3 : v;
            wv[r * K + k] = (r == 4 && k < gs) ? 0.0 : v;
          }
        }
        // w is a transposed view of its transpose: the op reads w through its strides.
        std::vector<double> col(rows * K);
        for (int r = 0; r < rows; ++r) {
          for (int k = 0; k < K; ++k) {
            col[k * rows + r] = wv[r * K + k];
          }
        }
        auto w = mx::transpose(row_array(col, {K, rows}, t));
        auto wr = to_doubles(w);  // w's values as stored in t
        auto out = quantize_cpu(w, gs, bits);
        auto words = to_vector<uint32_t>(out[0]);
        auto scales = to_doubles(out[1]);
        auto biases = to_doubles(out[2]);
        auto dq = to_doubles(mx::dequantize(out[0], out[1], out[2], gs, bits, "affine",
                                            std::nullopt, std::nullopt, cpu));
        int groups = K / gs, words_per_row = K * bits / 32;
        bool ok = true;
        for (int r = 0; r < rows && ok; ++r) {
          std::vector<uint32_t> q_row;
          for (int g = 0; g < groups && ok; ++g) {
            std::vector<float> vals(wr.begin() + r * K + g * gs, wr.begin() + r * K + (g + 1) * gs);
            auto ref = ref_group(vals, bits);
            q_row.insert(q_row.end(), ref.q.begin(), ref.q.end());
            double S = round_to(ref.scale, t), B = round_to(ref.bias, t);
            if (scales[r * groups + g] != S || biases[r * groups + g] != B) {
              FAIL_CHECK("row " << r << " group " << g << ": scale/bias " << scales[r * groups + g]
                                << "/" << biases[r * groups + g] << ", expected " << S << "/" << B);
              ok = false;
            }
            // Dequantized: scale * q rounded to t, plus the bias, rounded to t.
            for (int j = 0; j < gs && ok; ++j) {
              double want = round_to(round_to(S * ref.q[j], t) + B, t);
              if (dq[r * K + g * gs + j] != want) {
                FAIL_CHECK("row " << r << " element " << g * gs + j << ": dequantized "
                                  << dq[r * K + g * gs + j] << ", expected " << want);
                ok = false;
              }
            }
          }
          auto want = pack_words(q_row, bits);
          std::vector<uint32_t> got(words.begin() + r * words_per_row,
                                    words.begin() + (r + 1) * words_per_row);
          if (ok && got != want) {
            FAIL_CHECK("row " << r << ": packed words differ from the reference");
            ok = false;
          }
        }
      }
    }
  }
}

TEST_CASE("quantize then dequantize is within |scale| plus rounding, for every dtype, size, bits") {
  // Per element, with S and B the stored scale and bias and u the dtype's unit roundoff:
  //   |w - dq| <= |S| / 2 + slack   where q = rint((w - bias) / scale) was in [0, n_bins];
  //   |w - dq| <= |S| + slack       where it was clamped (an end of the group, see above);
  //   slack = u * (2 * n_bins * |S| + |B| + 2 * |dq|) + 1e-6 * |S|.
  // The u terms: q was computed with the float32 scale and bias, which are stored rounded
  // to the dtype (up to u * n_bins * |S| + u * |B| + u * |S|), and scale * q and then the
  // sum are rounded to the dtype (u * n_bins * |S| + u * |dq|). 1e-6 * |S| covers float32
  // division and rint at a tie. In float32 the u terms are negligible.
  mlx_test::Rng rng(7);
  size_t total_clamped = 0;
  for (auto t : kFloats) {
    for (int gs : kGroupSizes) {
      for (int bits : kAllBits) {
        CAPTURE(dtype_name(t));
        CAPTURE(gs);
        CAPTURE(bits);
        auto w = mlx_test::random_array({6, 384}, t, rng, -2, 2);
        auto out = quantize_cpu(w, gs, bits);
        auto dq = to_doubles(mx::dequantize(out[0], out[1], out[2], gs, bits, "affine",
                                            std::nullopt, std::nullopt, cpu));
        auto wv = to_doubles(w);
        auto S = to_doubles(out[1]), B = to_doubles(out[2]);
        double u = unit_roundoff(t), n = (1 << bits) - 1;
        size_t clamped = 0;
        for (size_t g = 0; g < S.size(); ++g) {
          std::vector<float> vals(wv.begin() + g * gs, wv.begin() + (g + 1) * gs);
          auto ref = ref_group(vals, bits);  // the float32 scale and bias q was computed with
          for (int j = 0; j < gs; ++j) {
            size_t i = g * gs + j;
            float raw = std::rint((vals[j] - ref.bias) / ref.scale);
            bool was_clamped = raw < 0 || raw > n;
            clamped += was_clamped;
            double slack = u * (2 * n * std::abs(S[g]) + std::abs(B[g]) + 2 * std::abs(dq[i])) +
                           1e-6 * std::abs(S[g]);
            double bound = (was_clamped ? 1.0 : 0.5) * std::abs(S[g]) + slack;
            double err = std::abs(wv[i] - dq[i]);
            if (err > bound) {
              FAIL_CHECK("element " << i << (was_clamped ? " (clamped)" : "") << ": w " << wv[i]
                                    << ", dequantized " << dq[i] << ", scale " << S[g] << ", bias "
                                    << B[g] << ", bound " << bound);
              g = S.size();
              break;
            }
          }
        }
        total_clamped += clamped;
      }
    }
  }
  CHECK(total_clamped > 0);  // the |S| branch of the bound was exercised
  // Zeros come back as zeros (scale -1e-7, bias 0).
  for (auto t : kFloats) {
    for (int bits : kAllBits) {
      auto out = quantize_cpu(mx::zeros({4, 128}, t), 64, bits);
      auto dq = mx::dequantize(out[0], out[1], out[2], 64, bits, "affine", std::nullopt,
                               std::nullopt, cpu);
      CHECK(mx::all(mx::equal(dq, mx::array(0.0f), cpu), cpu).item<bool>());
    }
  }
}

TEST_CASE("dequantize: output dtype, dtype argument, mixed scale and bias dtypes as MLX") {
  mlx_test::Rng rng(3);
  auto w = mlx_test::random_array({4, 128}, mx::float16, rng);
  auto out = quantize_cpu(w, 64, 4);
  auto base =
      mx::dequantize(out[0], out[1], out[2], 64, 4, "affine", std::nullopt, std::nullopt, cpu);
  CHECK(base.dtype() == mx::float16);
  CHECK(base.shape() == mx::Shape{4, 128});
  // dtype: the float16 result, then cast (MLX's astype after dequantizing).
  auto as_f32 =
      mx::dequantize(out[0], out[1], out[2], 64, 4, "affine", std::nullopt, mx::float32, cpu);
  CHECK(as_f32.dtype() == mx::float32);
  CHECK(to_doubles(as_f32) == to_doubles(base));
  // Defaults are group_size 64 and bits 4.
  CHECK(to_doubles(mx::dequantize(out[0], out[1], out[2])) == to_doubles(base));
  // float16 scales with float32 biases: scale * q rounded to float16, then the float32 sum.
  auto b32 = mx::astype(out[2], mx::float32, cpu);
  auto mixed =
      mx::dequantize(out[0], out[1], b32, 64, 4, "affine", std::nullopt, std::nullopt, cpu);
  CHECK(mixed.dtype() == mx::float32);
  auto words = to_vector<uint32_t>(out[0]);
  auto S = to_doubles(out[1]), Bv = to_doubles(b32), got = to_doubles(mixed);
  for (int r = 0; r < 4; ++r) {
    for (int k = 0; k < 128; ++k) {
      uint32_t q = (words[r * 16 + k / 8] >> ((k % 8) * 4)) & 15u;
      double want =
          static_cast<float>(round_to(S[r * 2 + k / 64] * q, mx::float16) + Bv[r * 2 + k / 64]);
      REQUIRE(got[r * 128 + k] == want);
    }
  }
}

TEST_CASE("quantized_matmul equals matmul with the dequantized weights") {
  // QuantizedMatmul dequantizes in the compute type (f32 for 16-bit dtypes, no rounding of
  // each weight to the dtype) and runs Matmul's loop (double accumulation, one rounding).
  // So it equals matmul(x, dequantize(w)) bit for bit for float32; for 16-bit dtypes it
  // equals the product with the weights dequantized from f32 scales and biases, up to
  // the double rounding (double -> f32 -> dtype) of that reference: one unit of the dtype.
  // The check against a double reference below has a tolerance.
  mlx_test::Rng rng(5);
  const int K = 128, N = 64;
  struct Case {
    mx::Shape x_batch;
    mx::Shape w_batch;
    mx::Shape out_batch;
    bool vector_x;
  };
  const Case cases[] = {
      {{}, {}, {}, false},   {{2}, {}, {2}, false}, {{2, 1}, {3}, {2, 3}, false},
      {{}, {2}, {2}, false},  // a 2-d x with batched w: every batch (MLX reads w[0] only)
      {{}, {}, {}, true},    {{}, {3}, {3}, true},
  };
  for (auto t : kFloats) {
    for (int bits : kAllBits) {
      for (bool transpose : {true, false}) {
        for (int M : {1, 3}) {
          for (const auto& c : cases) {
            int gs = bits % 2 == 0 ? 64 : 32;
            CAPTURE(dtype_name(t));
            CAPTURE(bits);
            CAPTURE(transpose);
            CAPTURE(M);
            CAPTURE(mx::shape_to_string(c.x_batch));
            CAPTURE(mx::shape_to_string(c.w_batch));
            CAPTURE(c.vector_x);
            mx::Shape xs = c.x_batch;
            if (!c.vector_x) {
              xs.push_back(M);
            }
            xs.push_back(K);
            mx::Shape ws = c.w_batch;
            ws.insert(ws.end(), {transpose ? N : K, transpose ? K : N});
            auto x = mlx_test::random_array(xs, t, rng, -1, 1);
            auto wf = mlx_test::random_array(ws, t, rng, -1, 1);
            auto q = quantize_cpu(wf, gs, bits);
            auto y = mx::quantized_matmul(x, q[0], q[1], q[2], transpose, gs, bits, "affine", cpu);
            auto f32 = mx::float32;
            auto dq = mx::dequantize(q[0], mx::astype(q[1], f32, cpu), mx::astype(q[2], f32, cpu),
                                     gs, bits, "affine", std::nullopt, std::nullopt, cpu);
            auto ref = mx::astype(mx::matmul(mx::astype(x, f32, cpu),
                                             transpose ? mx::swapaxes(dq, -1, -2, cpu) : dq, cpu),
                                  t, cpu);
            mx::Shape want_shape = c.out_batch;
            if (!c.vector_x) {
              want_shape.push_back(M);
            }
            want_shape.push_back(N);
            CHECK(y.dtype() == t);
            REQUIRE(y.shape() == want_shape);
            REQUIRE(ref.shape() == want_shape);
            auto yv = to_doubles(y), rv = to_doubles(ref);
            if (t == mx::float32) {
              CHECK(yv == rv);
            } else {
              mlx_test::check_all_close(yv, rv, 2 * unit_roundoff(t), 0.0, "quantized_matmul");
            }
            // Against double sums of the dequantized values (2-d cases): the result is the
            // double sum rounded once to t (float16/bfloat16 through float: 2u at most);
            // 1e-12 * sum |x w| covers the double accumulation.
            if (c.x_batch.empty() && c.w_batch.empty() && !c.vector_x) {
              auto xv = to_doubles(x), dv = to_doubles(dq);
              double u = unit_roundoff(t);
              for (int i = 0; i < M; ++i) {
                for (int n = 0; n < N; ++n) {
                  double s = 0, mag = 0;
                  for (int k = 0; k < K; ++k) {
                    double wkn = transpose ? dv[n * K + k] : dv[k * N + n];
                    s += xv[i * K + k] * wkn;
                    mag += std::abs(xv[i * K + k] * wkn);
                  }
                  // float16_t from double goes through float: two roundings, 2u at most.
                  REQUIRE(std::abs(yv[i * N + n] - s) <= 2 * u * std::abs(s) + 1e-12 * mag);
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("quantized_matmul reads strided x and w views and promotes x to the scales' dtype") {
  mlx_test::Rng rng(9);
  auto wf = mlx_test::random_array({64, 128}, mx::float32, rng);
  auto q = quantize_cpu(wf, 64, 4);
  // x as a transposed view, w_q/scales/biases as row slices (every other row).
  auto xt = mlx_test::random_array({128, 3}, mx::float32, rng);
  auto x = mx::transpose(xt, cpu);
  auto w = mx::slice(q[0], {0, 0}, {64, 16}, {2, 1}, cpu);
  auto s = mx::slice(q[1], {0, 0}, {64, 2}, {2, 1}, cpu);
  auto b = mx::slice(q[2], {0, 0}, {64, 2}, {2, 1}, cpu);
  auto y = mx::quantized_matmul(x, w, s, b, true, 64, 4, "affine", cpu);
  auto dq = mx::dequantize(w, s, b, 64, 4, "affine", std::nullopt, std::nullopt, cpu);
  auto ref = mx::matmul(mx::contiguous(x, false, cpu), mx::transpose(dq, cpu), cpu);
  CHECK(y.shape() == mx::Shape{3, 32});
  CHECK(to_doubles(y) == to_doubles(ref));
  // float16 x with float32 scales: float32 out (MLX promotes x with the scales' type).
  auto y16 =
      mx::quantized_matmul(mx::astype(x, mx::float16, cpu), w, s, b, true, 64, 4, "affine", cpu);
  CHECK(y16.dtype() == mx::float32);
  // bfloat16 scales with a float32 x: float32 out; int32 x takes the scales' float type.
  auto y_int = mx::quantized_matmul(mx::astype(x, mx::int32, cpu), w, mx::astype(s, mx::bfloat16),
                                    mx::astype(b, mx::bfloat16), true, 64, 4, "affine", cpu);
  CHECK(y_int.dtype() == mx::bfloat16);
  y_int.eval();
}

TEST_CASE("addmm equals alpha * (a @ b) + beta * c, with broadcast c and 1-d operands") {
  mlx_test::Rng rng(11);
  struct Case {
    mx::Shape a, b, c;
    float alpha, beta;
  };
  const Case cases[] = {
      {{3, 4}, {4, 5}, {3, 5}, 1.f, 1.f},
      {{3, 4}, {4, 5}, {5}, 2.f, 0.5f},
      {{3, 4}, {4, 5}, {3, 1}, -1.5f, 3.f},
      {{3, 4}, {4, 5}, {}, 0.25f, -2.f},
      {{2, 3, 4}, {4, 5}, {3, 5}, 1.f, 1.f},
      {{2, 1, 3, 4}, {3, 4, 5}, {1, 5}, 2.f, 1.f},
      {{4}, {4, 5}, {5}, 1.f, 2.f},
      {{3, 4}, {4}, {3}, 3.f, 1.f},
      {{4}, {4}, {}, 1.f, 1.f},
      {{2, 3, 4}, {4}, {2, 1}, 1.f, -1.f},
      {{3, 0}, {0, 5}, {3, 5}, 2.f, 0.5f},  // K = 0: beta * c
  };
  for (auto t : {mx::float32, mx::float16, mx::bfloat16, mx::float64}) {
    for (const auto& c : cases) {
      CAPTURE(mx::dtype_to_string(t));
      CAPTURE(mx::shape_to_string(c.a));
      CAPTURE(mx::shape_to_string(c.b));
      CAPTURE(mx::shape_to_string(c.c));
      auto a = mlx_test::random_array(c.a, t, rng, -2, 2);
      auto b = mlx_test::random_array(c.b, t, rng, -2, 2);
      auto cc = mlx_test::random_array(c.c, t, rng, -2, 2);
      auto got = mx::addmm(cc, a, b, c.alpha, c.beta, cpu);
      auto mm = mx::matmul(a, b, cpu);
      auto composite = mx::add(mx::multiply(mx::array(c.alpha, t), mm, cpu),
                               mx::multiply(mx::array(c.beta, t), cc, cpu), cpu);
      CHECK(got.dtype() == t);
      REQUIRE(got.shape() == composite.shape());
      // Against double sums: addmm forms alpha * sum + beta * c in double and rounds once
      // (float16/bfloat16 through float: 2u); the composite rounds the product, each
      // scaling and the sum (4u of the magnitudes involved).
      auto gv = to_doubles(got), cv = to_doubles(composite), mv = to_doubles(mm);
      auto cb = to_doubles(mx::broadcast_to(cc, got.shape(), cpu));
      double u = t == mx::float64 ? 0x1p-53 : unit_roundoff(t);
      for (size_t i = 0; i < gv.size(); ++i) {
        double mag = std::abs(c.alpha * mv[i]) + std::abs(c.beta * cb[i]);
        REQUIRE(std::abs(gv[i] - cv[i]) <= 6 * u * mag + 1e-300);
      }
    }
  }
}

TEST_CASE("addmm against double sums, c read through strides, beta 0 skips c") {
  mlx_test::Rng rng(13);
  auto a = mlx_test::random_array({2, 3, 7}, mx::float32, rng);
  auto b = mlx_test::random_array({7, 4}, mx::float32, rng);
  auto c = mx::transpose(mlx_test::random_array({4, 3}, mx::float32, rng), cpu);  // (3, 4) view
  auto got = to_doubles(mx::addmm(c, a, b, 0.5f, -2.f, cpu));
  auto av = to_doubles(a), bv = to_doubles(b), cv = to_doubles(c);
  for (int batch = 0; batch < 2; ++batch) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 4; ++j) {
        double s = 0;
        for (int k = 0; k < 7; ++k) {
          s += av[(batch * 3 + i) * 7 + k] * bv[k * 4 + j];
        }
        double want = 0.5 * s - 2.0 * cv[i * 4 + j];
        CHECK(got[(batch * 3 + i) * 4 + j] == doctest::Approx(want).epsilon(1e-6));
        // One rounding from double: within half an ulp of float32.
        CHECK(std::abs(got[(batch * 3 + i) * 4 + j] - want) <= 0x1p-24 * std::abs(want) + 1e-30);
      }
    }
  }
  // beta == 0: c is not read (BLAS's rule, as MLX's CPU gemm), so NaN in c does not show.
  auto nan_c = mx::full({3, 4}, std::numeric_limits<float>::quiet_NaN());
  auto y = mx::addmm(nan_c, mx::slice(a, {0, 0, 0}, {1, 3, 7}, cpu), b, 1.f, 0.f, cpu);
  CHECK_FALSE(mx::any(mx::isnan(y, cpu), cpu).item<bool>());
  // Mixed dtypes promote as matmul: float16 c with float32 a and b gives float32.
  CHECK(mx::addmm(mx::ones({4}, mx::float16), a, b).dtype() == mx::float32);
  CHECK(
      mx::addmm(mx::ones({4}, mx::bfloat16), mx::astype(a, mx::float16), mx::astype(b, mx::float16))
          .dtype() == mx::float32);
}

TEST_CASE("quantization and addmm argument errors name the op") {
  auto err = [](auto f, const char* msg) {
    CHECK_THROWS_WITH_AS(f(), doctest::Contains(msg), std::invalid_argument);
  };
  auto w = mx::ones({4, 256});
  auto q = quantize_cpu(w, 64, 4);  // w_q (4, 32), scales/biases (4, 4)
  const auto& wq = q[0];
  const auto& s = q[1];
  const auto& b = q[2];

  // quantize
  err([&] { return mx::quantize(w, 64, 4, "xyz"); }, "[quantize] Invalid quantization mode 'xyz'");
  err([&] { return mx::quantize(w, 32, 4, "mxfp4"); },
      "[quantize] Quantization mode 'mxfp4' is not supported here");
  err(
      [&] {
        return mx::quantize(mx::ones({4, 256}, mx::int32));
      },
      "[quantize] Only real floating types can be quantized but w has type int32");
  err(
      [&] {
        return mx::quantize(mx::ones({4, 256}, mx::float64));
      },
      "[quantize] float64 cannot be quantized");
  err([&] { return mx::quantize(mx::ones({256})); },
      "[quantize] The matrix to be quantized must have at least 2 dimension but it has only 1");
  err(
      [&] {
        return mx::quantize(mx::ones({4, 96}), 64);
      },
      "[quantize] The last dimension of the matrix needs to be divisible by the quantization "
      "group size 64");
  err([&] { return mx::quantize(w, 16); },
      "[quantize] The requested group size 16 is not supported");
  err([&] { return mx::quantize(w, 0); }, "[quantize] The requested group size 0 is not supported");
  err([&] { return mx::quantize(w, 64, 4, "affine", mx::array(1.0f)); },
      "[quantize] Global scale is only supported for 'nvfp4' quantization mode");
  for (int bits : {0, 1, 7, 9, 16}) {
    CAPTURE(bits);
    err([&] { return mx::quantize(w, 64, bits); }, "[quantize] The requested number of bits");
  }

  // dequantize
  err([&] { return mx::dequantize(wq, s, b, 64, 4, "xyz"); },
      "[dequantize] Invalid quantization mode 'xyz'");
  err([&] { return mx::dequantize(wq, s); },
      "[dequantize] Biases must be provided for affine quantization");
  err([&] { return mx::dequantize(wq, mx::astype(s, mx::int32), mx::astype(b, mx::int32)); },
      "[dequantize] Only real floating types are supported but scales.dtype() == int32");
  err([&] { return mx::dequantize(wq, s, b, 64, 4, "affine", std::nullopt, mx::int32); },
      "[dequantize] Only real floating types are supported but output dtype == int32");
  err([&] { return mx::dequantize(wq, s, b, 64, 4, "affine", mx::array(1.0f)); },
      "[dequantize] Global scale is only supported for 'nvfp4' quantization mode");
  err([&] { return mx::dequantize(wq, s, b, 64, 7); },
      "[dequantize] The requested number of bits 7");
  err([&] { return mx::dequantize(wq, s, b, 16, 4); }, "[dequantize] The requested group size 16");
  err([&] { return mx::dequantize(mx::astype(wq, mx::int32), s, b); },
      "[dequantize] The matrix should be given as a uint32");
  err(
      [&] {
        return mx::dequantize(mx::reshape(wq, {128}), mx::reshape(s, {16}), mx::reshape(b, {16}));
      },
      "[dequantize] The matrix to be dequantized must have at least 2 dimension");
  err(
      [&] {
        return mx::dequantize(wq, mx::ones({2, 4}), mx::ones({2, 4}));
      },
      "[dequantize] Shape of scales and biases does not match the matrix");
  err(
      [&] {
        return mx::dequantize(wq, s, mx::ones({4, 2}));
      },
      "[dequantize] Shape of scales and biases does not match the matrix");
  err(
      [&] {
        return mx::dequantize(wq, mx::ones({1, 4, 4}), mx::ones({1, 4, 4}));
      },
      "[dequantize] Shape of scales and biases does not match the matrix");
  err([&] { return mx::dequantize(wq, s, b, 64, 8); },
      "[dequantize] Shape of scales and biases does not match the matrix given the "
      "quantization parameters");

  // quantized_matmul
  auto x = mx::ones({3, 256});
  err([&] { return mx::quantized_matmul(x, wq, s, b, true, 64, 4, "xyz"); },
      "[quantized_matmul] Invalid quantization mode 'xyz'");
  err([&] { return mx::quantized_matmul(x, wq, s); },
      "[quantized_matmul] Biases must be provided for affine quantization");
  err(
      [&] {
        return mx::quantized_matmul(x, wq, mx::astype(s, mx::int32), mx::astype(b, mx::int32));
      },
      "[quantized_matmul] Only real floating types are supported but scales.dtype() == int32");
  err([&] { return mx::quantized_matmul(x, wq, s, b, true, 64, 7); },
      "[quantized_matmul] The requested number of bits 7");
  err([&] { return mx::quantized_matmul(x, wq, s, b, true, 256, 4); },
      "[quantized_matmul] The requested group size 256");
  err([&] { return mx::quantized_matmul(x, mx::astype(wq, mx::float32), s, b); },
      "[quantized_matmul] The weight matrix should be uint32 but received float32");
  err(
      [&] {
        return mx::quantized_matmul(x, wq, s, mx::ones({4, 2}));
      },
      "[quantized_matmul] Scales and biases should have the same shape");
  err([&] { return mx::quantized_matmul(mx::array(1.0f), wq, s, b); },
      "[quantized_matmul] x must have at least 1 dimension");
  err([&] { return mx::quantized_matmul(x, mx::reshape(wq, {128}), s, b); },
      "[quantized_matmul] x must have at least 1 dimension and w at least 2");
  err(
      [&] {
        return mx::quantized_matmul(x, mx::reshape(wq, {2, 2, 32}), s, b);
      },
      "[quantized_matmul] Weight and scales should have the same batch shape");
  err(
      [&] {
        return mx::quantized_matmul(x, wq, mx::ones({2, 4}), mx::ones({2, 4}));
      },
      "[quantized_matmul] Weight and scales should have the same number of rows");
  err([&] { return mx::quantized_matmul(x, wq, s, b, true, 64, 8); },
      "[quantized_matmul] The shapes of the weight and scales are incompatible");
  err(
      [&] {
        return mx::quantized_matmul(x, mx::transpose(wq), mx::transpose(s), mx::transpose(b));
      },
      "[quantized_matmul] Weight and scales should have the same number of rows");
  err(
      [&] {
        return mx::quantized_matmul(mx::ones({3, 128}), wq, s, b);
      },
      "[quantized_matmul] Last dimension of first input with shape (..., 128) does not match the "
      "expanded quantized matrix (256, 4)");
  err([&] { return mx::quantized_matmul(x, wq, s, b, false); },
      "[quantized_matmul] Last dimension of first input with shape (..., 256) does not match the "
      "expanded quantized matrix (4, 256)");
  err(
      [&] {
        return mx::quantized_matmul(mx::ones({3, 256}, mx::complex64), wq, s, b);
      },
      "[quantized_matmul] Only real floating types are supported but x.dtype() == complex64");
  err(
      [&] {
        return mx::quantized_matmul(mx::ones({3, 256}, mx::float64), wq, s, b);
      },
      "[quantized_matmul] float64 is not supported");
  {
    auto q3 = quantize_cpu(mx::ones({4, 8, 256}), 64, 4);
    err(
        [&] {
          return mx::quantized_matmul(mx::ones({2, 3, 256}), q3[0], q3[1], q3[2]);
        },
        "[quantized_matmul] batch dimensions of x (2,3,256) and w (4,8,32) cannot be broadcast");
  }

  // addmm
  err([&] { return mx::addmm(mx::ones({3}), mx::array(1.0f), mx::ones({3})); },
      "[addmm] Got 0 dimension input");
  err(
      [&] {
        return mx::addmm(mx::ones({3, 5}), mx::ones({3, 4}), mx::ones({3, 5}));
      },
      "[addmm] Last dimension of first input with shape (3,4) must match second to last "
      "dimension of second input with shape (3,5)");
  err(
      [&] {
        return mx::addmm(mx::ones({3, 5}, mx::int32), mx::ones({3, 4}, mx::int32),
                         mx::ones({4, 5}, mx::int32));
      },
      "[addmm] Only real floating point types are supported");
  err(
      [&] {
        return mx::addmm(mx::ones({4}), mx::ones({3, 4}), mx::ones({4, 5}));
      },
      "[addmm] input c must broadcast to the output shape");
  err(
      [&] {
        return mx::addmm(mx::ones({2, 3, 5}), mx::ones({3, 4}), mx::ones({4, 5}));
      },
      "[addmm] input c must broadcast to the output shape");
  err(
      [&] {
        return mx::addmm(mx::ones({5}), mx::ones({2, 3, 4}), mx::ones({3, 4, 5}));
      },
      "[addmm] batch dimensions of shapes (2,3,4) and (3,4,5) cannot be broadcast");
}

TEST_CASE("quantization ops and addmm on every test device give the CPU's results") {
  // On a GPU stream the kernels (mlx/backend/vulkan/quantized.cpp) give the same words,
  // scales and biases, and products within a dtype tolerance.
  mlx_test::Rng rng(21);
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == mx::Device::cpu ? "cpu" : "gpu");
    for (auto t : kFloats) {
      for (int bits : {3, 4, 8}) {
        CAPTURE(dtype_name(t));
        CAPTURE(bits);
        auto w = mlx_test::random_array({32, 128}, t, rng);
        auto x = mlx_test::random_array({2, 3, 128}, t, rng);
        auto ref = quantize_cpu(w, 64, bits);
        auto got = mx::quantize(w, 64, bits, "affine", std::nullopt, d);
        mx::eval(got);
        CHECK(to_vector<uint32_t>(got[0]) == to_vector<uint32_t>(ref[0]));
        CHECK(to_doubles(got[1]) == to_doubles(ref[1]));
        CHECK(to_doubles(got[2]) == to_doubles(ref[2]));
        auto dq = mx::dequantize(ref[0], ref[1], ref[2], 64, bits, "affine", std::nullopt,
                                 std::nullopt, d);
        auto dq_ref = mx::dequantize(ref[0], ref[1], ref[2], 64, bits, "affine", std::nullopt,
                                     std::nullopt, cpu);
        CHECK(to_doubles(dq) == to_doubles(dq_ref));
        double rtol = mlx_test::rtol_for(t);
        auto y = mx::quantized_matmul(x, ref[0], ref[1], ref[2], true, 64, bits, "affine", d);
        auto y_ref = mx::quantized_matmul(x, ref[0], ref[1], ref[2], true, 64, bits, "affine", cpu);
        // The dtype's rounding, plus f32 accumulation over K = 128 products in any order: the
        // GPU sums s * sum(x q) + b * sum(x) per pack, whose terms can cancel, so its error is
        // bounded by 2 K u sum_k |x_k| |w_k| (u = 2^-24), not by the result's magnitude (an
        // H200 was 5e-5 relative off on one f32 element at 8 bits). The 6 rows here take the
        // cooperative-matrix kernel (qmvc) on a GPU that has them, which multiplies the
        // weights rounded to the 16-bit dtype (as the coop qmm, docs/quantization.md): up to
        // u_dtype sum_k |x_k| |w_k| more, the bound tests/gpu_diff/test_quantized.cpp uses.
        auto mag =
            to_doubles(mx::matmul(mx::abs(x, cpu), mx::transpose(mx::abs(dq_ref, cpu), cpu), cpu));
        double u_weights = t == mx::float16 ? 0x1p-11 : t == mx::bfloat16 ? 0x1p-8 : 0.0;
        auto yg = to_doubles(y), yr = to_doubles(y_ref);
        size_t bad = yg.size();
        for (size_t i = 0; i < yg.size() && bad == yg.size(); ++i) {
          double atol = rtol + (2.0 * 128 * std::ldexp(1.0, -24) + u_weights) * mag[i];
          if (!mlx_test::close(yg[i], yr[i], rtol, atol)) {
            bad = i;
          }
        }
        CHECK_MESSAGE(bad == yg.size(), "quantized_matmul: element "
                                            << bad << " is " << (bad < yg.size() ? yg[bad] : 0.0)
                                            << ", expected " << (bad < yg.size() ? yr[bad] : 0.0));
        auto c = mlx_test::random_array({32}, t, rng);
        auto z = mx::addmm(c, x, mx::transpose(w), 0.5f, 2.f, d);
        auto z_ref = mx::addmm(c, x, mx::transpose(w), 0.5f, 2.f, cpu);
        mlx_test::check_all_close(to_doubles(z), to_doubles(z_ref), rtol, rtol, "addmm");
      }
    }
  }
}
