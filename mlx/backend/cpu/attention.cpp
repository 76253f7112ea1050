// eval_cpu of ScaledDotProductAttention (mlx/fast_primitives.h): the reference the GPU
// kernels are checked against (docs/fast.md).
//
// Per (batch, query head, query row): scores q.k summed in double, times scale, rounded to
// f32 (double for float64); the mask replaces (bool) or adds to them; the softmax, with the
// sink logit, and the weighted sum of V in double; each output element rounded once. Every
// operand is read through its strides, so KV cache slices and broadcast masks need no copy.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "mlx/backend/cpu/indexing.h"
#include "mlx/dtype_utils.h"
#include "mlx/fast_primitives.h"

namespace mlx::core::fast {

namespace {

// Element strides of a 4-d view; a lower-rank operand is aligned to the right with stride 0
// for the missing leading dims.
struct Strides4 {
  int64_t s[4] = {0, 0, 0, 0};
  explicit Strides4(const array& a) {
    int off = 4 - static_cast<int>(a.ndim());
    for (size_t d = 0; d < a.ndim(); ++d) {
      s[off + d] = a.shape(static_cast<int>(d)) == 1 ? 0 : a.strides()[d];
    }
  }
  int64_t at(int64_t i0, int64_t i1, int64_t i2, int64_t i3) const {
    return i0 * s[0] + i1 * s[1] + i2 * s[2] + i3 * s[3];
  }
};

template <typename T>
void attention(const std::vector<array>& inputs, array& out, float scale, bool causal,
               bool has_mask, bool has_sinks) {
  // Scores live in f32 (as MLX's softmax computes them); float64 keeps double.
  using S = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const array& q = inputs[0];
  const array& k = inputs[1];
  const array& v = inputs[2];
  const array* mask = has_mask ? &inputs[3] : nullptr;
  const array* sinks = has_sinks ? &inputs.back() : nullptr;
  const int64_t batch = q.shape(0), n_q_heads = q.shape(1), q_len = q.shape(2), dim = q.shape(3);
  const int64_t n_kv_heads = k.shape(1), kv_len = k.shape(2), v_dim = v.shape(3);
  const int64_t group = n_q_heads / n_kv_heads;
  const int64_t causal_offset = kv_len - q_len;  // causal aligned to the end
  // A bool mask's false positions get the dtype's lowest finite value, as MLX's composition
  // writes where(mask, scores, finfo(dtype).min): a fully masked row is then uniform.
  const S masked = static_cast<S>(std::numeric_limits<T>::lowest());

  Strides4 qs(q), ks(k), vs(v);
  std::optional<Strides4> ms;
  bool bool_mask = false;
  if (mask) {
    ms.emplace(*mask);
    bool_mask = mask->dtype() == bool_;
  }
  const T* qp = q.data<T>();
  const T* kp = k.data<T>();
  const T* vp = v.data<T>();
  const T* sp = sinks ? sinks->data<T>() : nullptr;
  const int64_t sink_stride = sinks ? sinks->strides()[0] : 0;
  T* op = out.data<T>();

  std::vector<double> qrow(dim), acc(v_dim);
  std::vector<S> scores(kv_len);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < n_q_heads; ++h) {
      const int64_t hk = h / group;
      for (int64_t i = 0; i < q_len; ++i) {
        T* orow = op + ((b * n_q_heads + h) * q_len + i) * v_dim;
        if (kv_len == 0) {
          // MLX's composition: a product over an empty axis is 0 (with or without sinks).
          std::fill(orow, orow + v_dim, static_cast<T>(0.0f));
          continue;
        }
        for (int64_t d = 0; d < dim; ++d) {
          qrow[d] = static_cast<double>(qp[qs.at(b, h, i, d)]);
        }
        S row_max = -std::numeric_limits<S>::infinity();
        for (int64_t j = 0; j < kv_len; ++j) {
          bool keep = !causal || j <= i + causal_offset;
          S add = 0;
          if (mask) {
            int64_t m = ms->at(b, h, i, j);
            if (bool_mask) {
              keep = mask->data<bool>()[m];
            } else {
              add = static_cast<S>(mask->data<T>()[m]);
            }
          }
          S s = masked;
          if (keep) {
            double dot = 0;
            for (int64_t d = 0; d < dim; ++d) {
              dot += qrow[d] * static_cast<double>(kp[ks.at(b, hk, j, d)]);
            }
            s = static_cast<S>(dot * static_cast<double>(scale));
            s = static_cast<S>(s + add);
          }
          scores[j] = s;
          row_max = std::max(row_max, s);
        }
        double sink = 0;
        if (sp) {
          sink = static_cast<double>(static_cast<S>(sp[h * sink_stride]));
          row_max = std::max(row_max, static_cast<S>(sink));
        }
        // exp(s - max): an all -inf row (an additive mask without sinks) gives NaN, as MLX's
        // softmax does.
        double denom = sp ? std::exp(sink - static_cast<double>(row_max)) : 0.0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < kv_len; ++j) {
          double p = std::exp(static_cast<double>(scores[j]) - static_cast<double>(row_max));
          denom += p;
          for (int64_t d = 0; d < v_dim; ++d) {
            acc[d] += p * static_cast<double>(vp[vs.at(b, hk, j, d)]);
          }
        }
        for (int64_t d = 0; d < v_dim; ++d) {
          orow[d] = static_cast<T>(static_cast<S>(acc[d] / denom));
        }
      }
    }
  }
}

}  // namespace

void ScaledDotProductAttention::eval_cpu(const std::vector<array>& inputs, array& out) {
  size_t expected = 3 + (has_mask() ? 1 : 0) + (has_sinks_ ? 1 : 0);
  if (inputs.size() != expected) {
    throw std::invalid_argument(std::string("[ScaledDotProductAttention] expects ") +
                                std::to_string(expected) + " inputs, got " +
                                std::to_string(inputs.size()) + ".");
  }
  for (size_t n = 0; n < inputs.size(); ++n) {
    bool bool_mask = has_mask() && n == 3 && inputs[n].dtype() == bool_;
    if (inputs[n].dtype() != out.dtype() && !bool_mask) {
      throw std::invalid_argument(
          "[ScaledDotProductAttention] expects inputs of the output dtype (a mask may be bool).");
    }
  }
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_type_t<T>>) {
      attention<T>(inputs, out, scale_, causal(), has_mask(), has_sinks_);
    } else {
      throw std::invalid_argument(
          std::string("[ScaledDotProductAttention] expects a float output, got ") +
          dtype_to_string(out.dtype()) + ".");
    }
  });
}

// The graph DecodeAttention replaced (mlx/fusion.h), step by step: the same values as the
// unfused ops, the caches updated in place when nothing else holds them.
void DecodeAttention::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& offset = inputs[5];
  const array& start = inputs[6];
  size_t next = 7;
  array q_x = rows_input(inputs, outputs, 0);
  array k_x = rows_input(inputs, outputs, 1);
  array v_x = rows_input(inputs, outputs, 2);
  std::vector<array> q_in{q_x, offset};
  if (q_eps_) {
    q_in.push_back(inputs[next++]);
  }
  std::vector<array> k_in{k_x, offset};
  if (k_eps_) {
    k_in.push_back(inputs[next++]);
  }
  int dims = q_x.shape(-1);
  Dtype dt = outputs[0].dtype();
  array q(q_x.shape(), dt, nullptr, {});
  RoPE(stream(), dims, traditional_, base_, rope_scale_, q_eps_).eval_cpu(q_in, q);
  array k(k_x.shape(), dt, nullptr, {});
  RoPE(stream(), dims, traditional_, base_, rope_scale_, k_eps_).eval_cpu(k_in, k);
  // The caches by reference, so the updates may take their buffers.
  cpu::slice_update_into(inputs[3], k, start, {2}, outputs[1]);
  cpu::slice_update_into(inputs[4], v_x, start, {2}, outputs[2]);
  auto leading_rows = [&](const array& cache) {
    Shape stop = cache.shape();
    stop[2] = lkv_;
    array rows(stop, dt, nullptr, {});
    Slice(stream(), {0, 0, 0, 0}, stop, {1, 1, 1, 1}).eval_cpu({cache}, rows);
    return rows;
  };
  ScaledDotProductAttention(stream(), scale_, AttentionMask::none, false)
      .eval_cpu({q, leading_rows(outputs[1]), leading_rows(outputs[2])}, outputs[0]);
}

}  // namespace mlx::core::fast
