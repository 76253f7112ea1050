// mlx::core::fast: fused operations with MLX's signatures (mlx/fast.h upstream). Each is one
// primitive (mlx/fast_primitives.h) with a CPU reference and a GPU kernel; all compute in
// float32 whatever the storage dtype and round once on store (docs/fast.md).
#pragma once

#include <optional>
#include <string>

#include "mlx/array.h"
#include "mlx/stream.h"

namespace mlx::core::fast {

// x * rsqrt(mean(x^2, -1) + eps) * weight over the last axis. weight: 1-d of x.shape(-1),
// or none. The output dtype is result_type(x, weight) (x's without a weight); it must be
// a float.
array rms_norm(const array& x, const std::optional<array>& weight, float eps,
               StreamOrDevice s = {});

// (x - mean) * rsqrt(var + eps) * weight + bias over the last axis (biased variance).
array layer_norm(const array& x, const std::optional<array>& weight,
                 const std::optional<array>& bias, float eps, StreamOrDevice s = {});

// Rotary position embedding of the first `dims` features of x ([B, ..., T, D], ndim >= 3;
// position of row t is (offset + t) * scale, offset per batch entry when it is a vector
// of B). `traditional` rotates adjacent pairs (2i, 2i+1), otherwise (i, i + dims/2).
// Frequencies are base^(-i/(dims/2)), or 1/freqs when freqs (dims/2 values) is given;
// exactly one of base and freqs must be set. Features past `dims` pass through.
array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale,
           int offset, const std::optional<array>& freqs = std::nullopt, StreamOrDevice s = {});
array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale,
           const array& offset, const std::optional<array>& freqs = std::nullopt,
           StreamOrDevice s = {});

// softmax(scale * Q K^T + mask, with sinks) V per (batch, query head) (docs/fast.md).
// queries [B, n_q_heads, L_q, D], keys [B, n_kv_heads, L_kv, D], values [B, n_kv_heads,
// L_kv, D_v], n_q_heads a multiple of n_kv_heads (query head h reads kv head
// h / (n_q_heads / n_kv_heads)); the output is [B, n_q_heads, L_q, D_v] in
// result_type(queries, keys, values), which must be a float.
// mask_mode "causal": query i sees keys j <= i + L_kv - L_q; otherwise mask_arr, when given
// (with "" or "array"), broadcasts to [B, n_q_heads, L_q, L_kv]: bool keeps true positions,
// any other dtype is added to the scores. sinks: [n_q_heads], one extra logit per head in
// the softmax that contributes no value. force_fused is accepted for MLX's signature; the
// op always builds the one fused primitive.
array scaled_dot_product_attention(const array& queries, const array& keys, const array& values,
                                   const float scale, const std::string& mask_mode = "",
                                   std::optional<array> mask_arr = {},
                                   const std::optional<array>& sinks = {}, bool force_fused = false,
                                   StreamOrDevice s = {});

}  // namespace mlx::core::fast
