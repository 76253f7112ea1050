// AffineQuantize, Dequantize and QuantizedMatmul::eval_cpu (docs/quantization.md).
//
// Quantization follows MLX's CPU backend step by step, in float32 whatever w's dtype, so
// weights quantized by MLX and here give the same words, scales and biases. Dequantization
// rounds scale * q to the output dtype before adding the bias, as MLX's multiply-then-add
// does. QuantizedMatmul dequantizes one batch of w at a time in the compute type (f32 for
// the 16-bit dtypes: scale * q + bias with no rounding to the dtype between, as MLX's GPU
// kernels and ours do; MLX's CPU backend rounds each weight, which moves a bfloat16
// product by tenths) into the packed B that Matmul builds, and runs Matmul's loop (double
// accumulation, one rounding). So it equals matmul(x, dequantize(w)) bit for bit for
// float32; for 16-bit dtypes, the product with the weights dequantized in f32.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "mlx/backend/common/utils.h"
#include "mlx/dtype_utils.h"
#include "mlx/fast_primitives.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace {

// The 3-, 5- and 6-bit formats are byte streams that MLX hands out as a uint32 view.
static_assert(std::endian::native == std::endian::little,
              "the packed formats assume a little-endian host");

// Element e of a row occupies bits [e*bits, (e+1)*bits) of the row's little-endian bit
// stream. For bits 2, 4 and 8 that is bits [j*bits, (j+1)*bits) of word e / (32/bits) with
// j = e % (32/bits); for bits 3, 5 and 6 it is MLX's byte packing (8 values in 3 or 5
// bytes, 4 values in 3 bytes, lowest bits first). Words are `stride` elements apart.
inline uint32_t unpack(const uint32_t* words, int64_t stride, int64_t e, int bits) {
  int64_t pos = e * bits;
  int64_t w = pos >> 5;
  int off = static_cast<int>(pos & 31);
  uint64_t v = words[w * stride] >> off;
  if (off + bits > 32) {
    v |= static_cast<uint64_t>(words[(w + 1) * stride]) << (32 - off);
  }
  return static_cast<uint32_t>(v) & ((1u << bits) - 1);
}

// The inverse, into a zeroed dense row.
inline void pack(uint32_t* words, int64_t e, int bits, uint32_t q) {
  int64_t pos = e * bits;
  int64_t w = pos >> 5;
  int off = static_cast<int>(pos & 31);
  words[w] |= q << off;
  if (off + bits > 32) {
    words[w + 1] |= q >> (32 - off);
  }
}

// Strides of every dim but the last `drop`.
Strides leading(const Strides& strides, size_t drop) {
  return Strides(strides.begin(), strides.end() - static_cast<std::ptrdiff_t>(drop));
}
Shape leading(const Shape& shape, size_t drop) {
  return Shape(shape.begin(), shape.end() - static_cast<std::ptrdiff_t>(drop));
}

// One group as MLX's CPU quantize computes it: min and max in float32, the scale from the
// range, then moved so that the end of larger magnitude (the edge) is exactly a grid point.
// q = clamp(rint((w - bias) / scale), 0, n_bins) uses these float32 values, not the
// scale and bias as rounded for storage.
template <typename T>
void quantize_group(const T* w, int64_t stride, int group_size, int bits, float* vals,
                    uint32_t* row_words, int64_t first, T& scale_out, T& bias_out) {
  const float n_bins = static_cast<float>((1 << bits) - 1);
  const float eps = 1e-7f;
  float w_min = std::numeric_limits<float>::infinity();
  float w_max = -w_min;
  for (int j = 0; j < group_size; ++j) {
    vals[j] = static_cast<float>(w[j * stride]);
    w_max = std::max(w_max, vals[j]);
    w_min = std::min(w_min, vals[j]);
  }
  bool mask = std::abs(w_min) > std::abs(w_max);
  float scale = std::max((w_max - w_min) / n_bins, eps);
  scale = mask ? scale : -scale;
  float edge = mask ? w_min : w_max;
  float q0 = std::rint(edge / scale);
  float bias = 0;
  if (q0 != 0) {
    scale = edge / q0;
    bias = edge;
  }
  for (int j = 0; j < group_size; ++j) {
    float q = std::rint((vals[j] - bias) / scale);
    q = std::min(std::max(q, 0.0f), n_bins);
    // A NaN element (NaN min/max are skipped above) becomes 0; MLX leaves it undefined.
    pack(row_words, first + j, bits, q >= 0 ? static_cast<uint32_t>(q) : 0u);
  }
  scale_out = static_cast<T>(scale);
  bias_out = static_cast<T>(bias);
}

template <typename T>
void quantize_rows(const array& w, array& wq, array& scales, array& biases, int group_size,
                   int bits) {
  int64_t K = w.shape(-1);
  if (K == 0 || w.size() == 0) {
    return;
  }
  int64_t rows = static_cast<int64_t>(w.size()) / K;
  int64_t words_per_row = K / 32 * bits;
  int64_t groups = K / group_size;
  int64_t ks = w.strides(-1);
  StridedIterator row_it(leading(w.shape(), 1), leading(w.strides(), 1));
  std::vector<float> vals(static_cast<size_t>(group_size));
  uint32_t* q = wq.data<uint32_t>();
  T* s = scales.data<T>();
  T* b = biases.data<T>();
  std::fill(q, q + rows * words_per_row, 0u);
  for (int64_t r = 0; r < rows; ++r, row_it.step()) {
    const T* row = w.data<T>() + row_it.loc();
    for (int64_t g = 0; g < groups; ++g) {
      quantize_group(row + g * group_size * ks, ks, group_size, bits, vals.data(),
                     q + r * words_per_row, g * group_size, s[r * groups + g], b[r * groups + g]);
    }
  }
}

// A strided row of packed words with its scales and biases; emit(k, value) receives the
// row's K dequantized values in order, each T(T(scale * q) + bias).
template <typename T>
struct QuantizedRow {
  const uint32_t* words;
  int64_t word_stride;
  const T* scales;
  int64_t scale_stride;
  const T* biases;
  int64_t bias_stride;

  template <typename F>
  void dequantize(int64_t K, int group_size, int bits, F&& emit) const {
    using C = compute_type_t<T>;
    for (int64_t k = 0; k < K; ++k) {
      int64_t g = k / group_size;
      C scale = static_cast<C>(scales[g * scale_stride]);
      C bias = static_cast<C>(biases[g * bias_stride]);
      C q = static_cast<C>(unpack(words, word_stride, k, bits));
      T scaled = static_cast<T>(scale * q);
      emit(k, static_cast<T>(static_cast<C>(scaled) + bias));
    }
  }

  // The same values in the compute type, scale * q + bias with no rounding to T between
  // (quantized_matmul's weights, as MLX's GPU kernels and ours form them).
  template <typename F>
  void dequantize_wide(int64_t K, int group_size, int bits, F&& emit) const {
    using C = compute_type_t<T>;
    for (int64_t k = 0; k < K; ++k) {
      int64_t g = k / group_size;
      C scale = static_cast<C>(scales[g * scale_stride]);
      C bias = static_cast<C>(biases[g * bias_stride]);
      C scaled = scale * static_cast<C>(unpack(words, word_stride, k, bits));
      emit(k, scaled + bias);
    }
  }
};

template <typename T>
void dequantize_rows(const array& w, const array& scales, const array& biases, array& out,
                     int group_size, int bits) {
  int64_t K = out.shape(-1);
  if (K == 0 || out.size() == 0) {
    return;
  }
  int64_t rows = static_cast<int64_t>(out.size()) / K;
  StridedIterator w_it(leading(w.shape(), 1), leading(w.strides(), 1));
  StridedIterator s_it(leading(scales.shape(), 1), leading(scales.strides(), 1));
  StridedIterator b_it(leading(biases.shape(), 1), leading(biases.strides(), 1));
  T* o = out.data<T>();
  for (int64_t r = 0; r < rows; ++r, w_it.step(), s_it.step(), b_it.step()) {
    QuantizedRow<T> row{w.data<uint32_t>() + w_it.loc(), w.strides(-1),
                        scales.data<T>() + s_it.loc(),   scales.strides(-1),
                        biases.data<T>() + b_it.loc(),   biases.strides(-1)};
    T* dst = o + r * K;
    row.dequantize(K, group_size, bits, [dst](int64_t k, T v) { dst[k] = v; });
  }
}

// Matmul::eval_cpu's loop with B dequantized per batch (see the file comment).
template <typename T>
void quantized_matmul(const array& x, const array& w, const array& scales, const array& biases,
                      array& out, int group_size, int bits, bool transpose) {
  using Acc = double;
  using Packed = compute_type_t<T>;
  size_t nd = out.ndim();
  int64_t M = out.shape(-2);
  int64_t N = out.shape(-1);
  int64_t K = x.shape(-1);
  if (out.size() == 0) {
    return;
  }
  Shape batch_shape = leading(out.shape(), 2);
  // 2-d weights serve every batch: batch strides 0.
  auto batch_strides = [&](const array& a) {
    return a.ndim() == nd ? leading(a.strides(), 2) : Strides(nd - 2, 0);
  };
  StridedIterator x_it(batch_shape, batch_strides(x));
  StridedIterator w_it(batch_shape, batch_strides(w));
  StridedIterator s_it(batch_shape, batch_strides(scales));
  StridedIterator b_it(batch_shape, batch_strides(biases));
  size_t batches = out.size() / static_cast<size_t>(M * N);
  int64_t x_rs = x.strides(-2), x_cs = x.strides(-1);

  std::vector<Packed> packed(static_cast<size_t>(K * N));
  std::vector<Acc> acc(static_cast<size_t>(N));
  T* c = out.data<T>();
  for (size_t batch = 0; batch < batches;
       ++batch, x_it.step(), w_it.step(), s_it.step(), b_it.step()) {
    // transpose: w's row n is column n of B; else w's row k is row k of B.
    int64_t rows = transpose ? N : K;
    int64_t cols = transpose ? K : N;
    for (int64_t r = 0; r < rows; ++r) {
      QuantizedRow<T> row{
          w.data<uint32_t>() + w_it.loc() + r * w.strides(-2),    w.strides(-1),
          scales.data<T>() + s_it.loc() + r * scales.strides(-2), scales.strides(-1),
          biases.data<T>() + b_it.loc() + r * biases.strides(-2), biases.strides(-1)};
      Packed* dst = packed.data();
      if (transpose) {
        row.dequantize_wide(cols, group_size, bits,
                            [dst, r, N](int64_t k, Packed v) { dst[k * N + r] = v; });
      } else {
        row.dequantize_wide(cols, group_size, bits,
                            [dst, r, N](int64_t n, Packed v) { dst[r * N + n] = v; });
      }
    }
    const T* A = x.data<T>() + x_it.loc();
    for (int64_t i = 0; i < M; ++i) {
      std::fill(acc.begin(), acc.end(), Acc(0));
      for (int64_t k = 0; k < K; ++k) {
        Acc aik = static_cast<Acc>(A[i * x_rs + k * x_cs]);
        const Packed* bk = packed.data() + k * N;
        for (int64_t j = 0; j < N; ++j) {
          acc[j] += aik * bk[j];
        }
      }
      T* ci = c + (batch * M + i) * N;
      for (int64_t j = 0; j < N; ++j) {
        ci[j] = static_cast<T>(acc[j]);
      }
    }
  }
}

// Calls f(TypeTag<T>{}) for the float dtypes the quantized kernels hold.
template <typename F>
void dispatch_quantized_float(Dtype dt, const char* name, bool allow_double, F&& f) {
  if (dt == float32) {
    f(TypeTag<float>{});
  } else if (dt == float16) {
    f(TypeTag<float16_t>{});
  } else if (dt == bfloat16) {
    f(TypeTag<bfloat16_t>{});
  } else if (dt == float64 && allow_double) {
    f(TypeTag<double>{});
  } else {
    throw std::invalid_argument(std::string("[") + name + "] unsupported dtype " +
                                dtype_to_string(dt) + ".");
  }
}

void check_bits(const char* name, int group_size, int bits) {
  if ((group_size != 32 && group_size != 64 && group_size != 128) || bits < 2 || bits > 8 ||
      bits == 7) {
    throw std::invalid_argument(std::string("[") + name + "] unsupported group_size " +
                                std::to_string(group_size) + " or bits " + std::to_string(bits) +
                                ".");
  }
}

}  // namespace

void AffineQuantize::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  check_bits(name(), group_size_, bits_);
  const auto& w = inputs[0];
  auto& wq = outputs[0];
  auto& scales = outputs[1];
  auto& biases = outputs[2];
  if (w.ndim() < 1 || w.shape(-1) % group_size_ != 0 || scales.dtype() != w.dtype() ||
      biases.dtype() != w.dtype() || wq.dtype() != uint32) {
    throw std::invalid_argument(
        "[AffineQuantize] expects w (..., K) with K a multiple of group_size, uint32 words "
        "and scales/biases in w's dtype.");
  }
  for (auto& o : outputs) {
    o.set_data(allocator::malloc(o.nbytes()));
  }
  dispatch_quantized_float(w.dtype(), name(), false, [&](auto tag) {
    using T = typename decltype(tag)::type;
    quantize_rows<T>(w, wq, scales, biases, group_size_, bits_);
  });
}

void Dequantize::eval_cpu(const std::vector<array>& inputs, array& out) {
  if (rows_) {
    // The rows as take() picks them (its bounds errors included), then dequantized.
    std::vector<array> taken;
    for (int i = 0; i < 3; ++i) {
      Shape shape = inputs[3].shape();
      shape.push_back(inputs[i].shape(1));
      taken.emplace_back(shape, inputs[i].dtype(), nullptr, std::vector<array>{});
      Take(stream(), 0).eval_cpu({inputs[i], inputs[3]}, taken.back());
    }
    Dequantize(stream(), group_size_, bits_).eval_cpu(taken, out);
    return;
  }
  check_bits(name(), group_size_, bits_);
  const auto& w = inputs[0];
  const auto& scales = inputs[1];
  const auto& biases = inputs[2];
  if (w.dtype() != uint32 || scales.dtype() != out.dtype() || biases.dtype() != out.dtype() ||
      w.ndim() != out.ndim() || scales.shape() != biases.shape() || scales.ndim() != out.ndim() ||
      out.ndim() < 1 || int64_t{out.shape(-1)} * bits_ != int64_t{w.shape(-1)} * 32 ||
      int64_t{out.shape(-1)} != int64_t{scales.shape(-1)} * group_size_) {
    throw std::invalid_argument(
        "[Dequantize] expects uint32 words, and scales and biases of the output's dtype, "
        "shaped as the op makes them.");
  }
  out.set_data(allocator::malloc(out.nbytes()));
  dispatch_quantized_float(out.dtype(), name(), true, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dequantize_rows<T>(w, scales, biases, out, group_size_, bits_);
  });
}

void QuantizedMatmul::eval_cpu(const std::vector<array>& inputs, array& out) {
  if (glu_) {
    // The product, then the compiled activation of its halves, as they were built.
    Shape pshape = out.shape();
    pshape.back() *= 2;
    array product(pshape, out.dtype(), nullptr, {});
    QuantizedMatmul(stream(), group_size_, bits_, transpose_, norm_eps_).eval_cpu(inputs, product);
    auto halves = glu_halves(product, stream(), false);
    std::vector<array> outs{out};
    glu_->eval_cpu(halves, outs);
    return;
  }
  if (norm_eps_ || residual_) {
    // The absorbed ops as their own steps (mlx/fusion.h): the rms_norm first, rounded to
    // the dtype as its own output would be; then the product; then the residual's add.
    std::vector<array> product_inputs(inputs.begin(), inputs.begin() + 4);
    if (norm_eps_) {
      array normed(inputs[0].shape(), inputs[0].dtype(), nullptr, {});
      fast::RMSNorm(stream(), *norm_eps_).eval_cpu({inputs[0], inputs[4]}, normed);
      product_inputs[0] = normed;
    }
    QuantizedMatmul plain(stream(), group_size_, bits_, transpose_);
    if (!residual_) {
      plain.eval_cpu(product_inputs, out);
      return;
    }
    array product(out.shape(), out.dtype(), nullptr, {});
    plain.eval_cpu(product_inputs, product);
    Binary(stream(), BinaryOp::Add).eval_cpu({inputs.back(), product}, out);
    return;
  }
  check_bits(name(), group_size_, bits_);
  const auto& x = inputs[0];
  const auto& w = inputs[1];
  const auto& scales = inputs[2];
  const auto& biases = inputs[3];
  size_t nd = out.ndim();
  auto rank_ok = [nd](const array& a) { return a.ndim() == 2 || a.ndim() == nd; };
  if (nd < 2 || x.ndim() != nd || x.dtype() != out.dtype() || w.dtype() != uint32 ||
      scales.dtype() != out.dtype() || biases.dtype() != out.dtype() || !rank_ok(w) ||
      scales.ndim() != w.ndim() || biases.shape() != scales.shape() ||
      int64_t{scales.shape(-1)} * group_size_ * bits_ != int64_t{w.shape(-1)} * 32 ||
      (transpose_ ? w.shape(-2) != out.shape(-1) : w.shape(-2) != x.shape(-1)) ||
      int64_t{scales.shape(-1)} * group_size_ != (transpose_ ? x.shape(-1) : out.shape(-1))) {
    throw std::invalid_argument(
        "[QuantizedMatmul] expects x (..., M, K), uint32 w, and scales and biases of the "
        "output's dtype, shaped as the op makes them.");
  }
  out.set_data(allocator::malloc(out.nbytes()));
  dispatch_quantized_float(out.dtype(), name(), false, [&](auto tag) {
    using T = typename decltype(tag)::type;
    quantized_matmul<T>(x, w, scales, biases, out, group_size_, bits_, transpose_);
  });
}

}  // namespace mlx::core
