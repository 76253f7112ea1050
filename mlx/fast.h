// mlx::core::fast: fused operations with MLX's signatures (mlx/fast.h upstream). Each is one
// primitive (mlx/fast_primitives.h) with a CPU reference and a GPU kernel; all compute in
// float32 whatever the storage dtype and round once on store (docs/fast.md).
#pragma once

#include <optional>

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

}  // namespace mlx::core::fast
