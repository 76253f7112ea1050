// eval_cpu of the fast:: primitives (mlx/fast_primitives.h): rms_norm, layer_norm, rope.
//
// The reference for the GPU kernels: row statistics accumulate in double, everything else
// is float32 math (double for float64 inputs), and each output element is rounded to the
// storage dtype once. Strided inputs are made row-contiguous first.
#include <cmath>
#include <optional>
#include <stdexcept>

#include "mlx/backend/cpu/copy.h"
#include "mlx/backend/cpu/indexing.h"
#include "mlx/fast_primitives.h"

namespace mlx::core::fast {

namespace {

array dense(const array& a) {
  if (a.flags().row_contiguous) {
    return a;
  }
  array tmp(a.shape(), a.dtype(), nullptr, {});
  cpu::copy_to_new(a, tmp);
  return tmp;
}

// Calls f(tag) for the float dtypes; anything else is an error naming the op.
template <typename F>
void dispatch_float(const char* op, Dtype dt, F&& f) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_type_t<T>>) {
      f(tag);
    } else {
      throw std::invalid_argument(std::string("[") + op + "] expects a float input, got " +
                                  dtype_to_string(dt) + ".");
    }
  });
}

template <typename T>
using Math = std::conditional_t<std::is_same_v<T, double>, double, float>;

// y = (x - mu) * rsqrt(var + eps) * w + b per row (mu = 0 and var = mean(x^2) for rms).
template <typename T>
void norm_rows(const array& x, const array& w, const array* b, bool rms, float eps, array& out) {
  using M = Math<T>;
  int64_t n = x.shape(-1);
  size_t rows = n == 0 ? 0 : x.size() / static_cast<size_t>(n);
  const T* xs = x.data<T>();
  const T* ws = w.data<T>();
  const T* bs = b ? b->data<T>() : nullptr;
  int64_t wstep = w.size() == 1 ? 0 : 1;
  int64_t bstep = b && b->size() == 1 ? 0 : 1;
  T* ys = out.data<T>();
  for (size_t r = 0; r < rows; ++r) {
    const T* xr = xs + r * n;
    double mu = 0;
    if (!rms) {
      for (int64_t j = 0; j < n; ++j) {
        mu += static_cast<double>(xr[j]);
      }
      mu /= static_cast<double>(n);
    }
    double ss = 0;
    for (int64_t j = 0; j < n; ++j) {
      double d = static_cast<double>(xr[j]) - mu;
      ss += d * d;
    }
    M inv = static_cast<M>(1.0 / std::sqrt(ss / static_cast<double>(n) + static_cast<double>(eps)));
    M m = static_cast<M>(mu);
    for (int64_t j = 0; j < n; ++j) {
      M v = (static_cast<M>(xr[j]) - m) * inv * static_cast<M>(ws[j * wstep]);
      if (bs) {
        v += static_cast<M>(bs[j * bstep]);
      }
      ys[r * n + j] = static_cast<T>(v);
    }
  }
}

void eval_norm(const char* op, const std::vector<array>& inputs, bool rms, float eps, array& out) {
  array x = dense(inputs[0]);
  array w = dense(inputs[1]);
  std::optional<array> b;
  if (inputs.size() > 2) {
    b = dense(inputs[2]);
  }
  for (const auto& a : inputs) {
    if (a.dtype() != out.dtype()) {
      throw std::invalid_argument(std::string("[") + op + "] expects inputs of the output dtype.");
    }
  }
  out.set_data(allocator::malloc(out.nbytes()));
  dispatch_float(op, out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    norm_rows<T>(x, w, b ? &*b : nullptr, rms, eps, out);
  });
}

}  // namespace

void RMSNorm::eval_cpu(const std::vector<array>& inputs, array& out) {
  eval_norm("RMSNorm", inputs, true, eps_, out);
}

void LayerNorm::eval_cpu(const std::vector<array>& inputs, array& out) {
  eval_norm("LayerNorm", inputs, false, eps_, out);
}

// Row r of x viewed as [B, rows_per_batch, D] sits at position t = r % T in batch entry
// r / rows_per_batch; its angle for pair i is (offset[b] + t) * scale * inv_freq[i].
void RoPE::eval_cpu(const std::vector<array>& inputs, array& out) {
  if (into_) {
    // The rotated rows, then the absorbed slice_update (mlx/fusion.h).
    std::vector<array> rope_inputs(inputs.begin(), inputs.end() - 2);
    array rotated(inputs[0].shape(), out.dtype(), nullptr, {});
    RoPE(stream(), dims_, traditional_, base_, scale_, norm_eps_).eval_cpu(rope_inputs, rotated);
    // The source by reference, so the update may take its buffer (in place).
    cpu::slice_update_into(inputs[inputs.size() - 2], rotated, inputs.back(),
                           {static_cast<int>(out.ndim()) - 2}, out);
    return;
  }
  if (norm_eps_) {
    // The absorbed rms_norm first, rounded to the dtype as its own output would be.
    array normed(inputs[0].shape(), inputs[0].dtype(), nullptr, {});
    RMSNorm(stream(), *norm_eps_).eval_cpu({inputs[0], inputs.back()}, normed);
    std::vector<array> rest(inputs.begin(), inputs.end() - 1);
    rest[0] = normed;
    RoPE(stream(), dims_, traditional_, base_, scale_).eval_cpu(rest, out);
    return;
  }
  array x = dense(inputs[0]);
  array offset = dense(inputs[1]);
  std::optional<array> freqs;
  if (inputs.size() > 2) {
    freqs = dense(inputs[2]);
  }
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  int64_t d = x.shape(-1);
  int64_t t_len = x.shape(-2);
  int64_t rows = static_cast<int64_t>(x.size()) / d;
  int64_t per_batch = rows / x.shape(0);
  int64_t half = dims_ / 2;
  const int32_t* offs = offset.data<int32_t>();
  std::vector<float> inv_freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    inv_freq[i] =
        freqs ? 1.0f / freqs->data<float>()[i]
              : std::exp2(-static_cast<float>(i) * (std::log2(base_) / static_cast<float>(half)));
  }
  dispatch_float("RoPE", x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = Math<T>;
    const T* xs = x.data<T>();
    T* ys = out.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      int64_t b = r / per_batch;
      int32_t off = offs[offset.size() == 1 ? 0 : b];
      float pos = static_cast<float>(static_cast<int64_t>(off) + r % t_len) * scale_;
      const T* xr = xs + r * d;
      T* yr = ys + r * d;
      for (int64_t i = 0; i < half; ++i) {
        float theta = pos * inv_freq[i];
        M c = static_cast<M>(std::cos(static_cast<double>(theta)));
        M s = static_cast<M>(std::sin(static_cast<double>(theta)));
        int64_t i1 = traditional_ ? 2 * i : i;
        int64_t i2 = traditional_ ? 2 * i + 1 : i + half;
        M x1 = static_cast<M>(xr[i1]);
        M x2 = static_cast<M>(xr[i2]);
        yr[i1] = static_cast<T>(x1 * c - x2 * s);
        yr[i2] = static_cast<T>(x1 * s + x2 * c);
      }
      for (int64_t j = dims_; j < d; ++j) {
        yr[j] = xr[j];
      }
    }
  });
}

}  // namespace mlx::core::fast
