// The primitives behind mlx/fast.h. Inputs arrive already validated and cast by the ops
// (mlx/fast.cpp), so each eval sees one float dtype for x, weights and output.
#pragma once

#include <array>

#include <optional>

#include "mlx/primitives.h"

namespace mlx::core::fast {

// inputs: {x, weight}; weight is 1-d of x.shape(-1), or a scalar 1 when the op had none.
class RMSNorm final : public UnaryPrimitive {
 public:
  RMSNorm(Stream s, float eps) : UnaryPrimitive(s), eps_(eps) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "RMSNorm";
  }
  bool is_equivalent(const Primitive& other) const override;
  float eps() const {
    return eps_;
  }

 private:
  float eps_;
};

// inputs: {x, weight, bias}; weight/bias are 1-d of x.shape(-1), or scalars 1 and 0.
class LayerNorm : public UnaryPrimitive {
 public:
  LayerNorm(Stream s, float eps) : UnaryPrimitive(s), eps_(eps) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "LayerNorm";
  }
  bool is_equivalent(const Primitive& other) const override;
  float eps() const {
    return eps_;
  }

 private:
  float eps_;
};

// inputs: {x, offset (int32, 1 or B values)}, optionally freqs (float32, dims/2 values),
// with norm_eps the weight of an rms_norm that rope applies to x first, and with `into` a
// source array and an int32 start: the output is the source with x's rotated rows written
// at that start along axis -2 (mlx/fusion.h: the rope of an rms_norm's output reads the
// norm's input; a slice_update of a rope's output at an array start is one op).
class RoPE final : public UnaryPrimitive {
 public:
  RoPE(Stream s, int dims, bool traditional, float base, float scale,
       std::optional<float> norm_eps = std::nullopt, bool into = false)
      : UnaryPrimitive(s),
        dims_(dims),
        traditional_(traditional),
        base_(base),
        scale_(scale),
        norm_eps_(norm_eps),
        into_(into) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "RoPE";
  }
  bool is_equivalent(const Primitive& other) const override;
  int dims() const {
    return dims_;
  }
  bool traditional() const {
    return traditional_;
  }
  float base() const {
    return base_;
  }
  float scale() const {
    return scale_;
  }
  // The absorbed rms_norm's eps; its weight is inputs[norm_weight_index(n)].
  const std::optional<float>& norm_eps() const {
    return norm_eps_;
  }
  // Whether the rows are written into inputs[n - 2] at start inputs[n - 1].
  bool into() const {
    return into_;
  }
  bool has_freqs(size_t n_inputs) const {
    return n_inputs > 2u + (norm_eps_ ? 1u : 0u) + (into_ ? 2u : 0u);
  }
  size_t norm_weight_index(size_t n_inputs) const {
    return n_inputs - 1 - (into_ ? 2u : 0u);
  }

 private:
  int dims_;
  bool traditional_;
  float base_;  // unused when freqs is an input
  float scale_;
  std::optional<float> norm_eps_;
  bool into_;
};

// How ScaledDotProductAttention masks the scores.
enum class AttentionMask {
  none,    // every key
  causal,  // query i sees keys j <= i + L_kv - L_q; no mask input
  array,   // inputs[3]: bool (keep true) or the output dtype (added to the scores)
};

// inputs: {queries, keys, values, [mask], [sinks]}, all in the output dtype except a bool
// mask. q [B, Hq, Lq, D], k [B, Hkv, Lkv, D], v [B, Hkv, Lkv, Dv], any strides; the mask is a
// view of shape [B, Hq, Lq, Lkv] (broadcast: strides may be 0); sinks are 1-d of Hq.
// Output [B, Hq, Lq, Dv], row-contiguous.
class ScaledDotProductAttention : public UnaryPrimitive {
 public:
  ScaledDotProductAttention(Stream s, float scale, AttentionMask mask, bool has_sinks,
                            bool force_fused = false)
      : UnaryPrimitive(s),
        scale_(scale),
        mask_(mask),
        has_sinks_(has_sinks),
        force_fused_(force_fused) {}
  MLX_DECLARE_UNARY_EVAL
  const char* name() const override {
    return "ScaledDotProductAttention";
  }
  bool is_equivalent(const Primitive& other) const override;
  float scale() const {
    return scale_;
  }
  AttentionMask mask_kind() const {
    return mask_;
  }
  bool causal() const {
    return mask_ == AttentionMask::causal;
  }
  // True when inputs[3] is a mask array.
  bool has_mask() const {
    return mask_ == AttentionMask::array;
  }
  // True when inputs.back() holds the sinks.
  bool has_sinks() const {
    return has_sinks_;
  }
  // MLX's force_fused argument, kept for a GPU path that would otherwise compose.
  bool force_fused() const {
    return force_fused_;
  }

 private:
  float scale_;
  AttentionMask mask_;
  bool has_sinks_;
  bool force_fused_;
};

// One decode step's attention over a KV cache, made by mlx/fusion.h from
//   q = rope(q_x), cache_k' = slice_update(cache_k, rope(k_x), start),
//   cache_v' = slice_update(cache_v, v_x, start),
//   scaled_dot_product_attention(q, cache_k'[..., :lkv, :], cache_v'[..., :lkv, :])
// (each rope optionally of an rms_norm, rotating whole rows): one launch rotates the new
// query and key rows, writes the key and value rows into the caches and attends.
// inputs: {q_x [B, Hq, 1, D], k_x [B, Hkv, 1, D], v_x [B, Hkv, 1, Dv], cache_k, cache_v
// ([B, Hkv, cap, D|Dv]), offset (the ropes' position, int32, one value), start (the row
// the caches take, int32, one value), [q norm weight], [k norm weight]}.
// outputs: {attention [B, Hq, 1, Dv], cache_k', cache_v'}.
// With `stacked_cols`, inputs 0-2 are instead the [B, 1, N] arrays the rows are columns of
// (a stacked q/k/v product, the same array three times): q_x, k_x and v_x are columns
// [c, c + H * D) of them viewed as [B, H, 1, D] (stacked_rows_view), so a decode step needs
// no slice and reshape nodes to reach them.
class DecodeAttention : public Primitive {
 public:
  DecodeAttention(Stream s, float scale, int lkv, bool traditional, float base, float rope_scale,
                  std::optional<float> q_eps, std::optional<float> k_eps,
                  std::optional<std::array<int, 3>> stacked_cols = std::nullopt)
      : Primitive(s),
        scale_(scale),
        lkv_(lkv),
        traditional_(traditional),
        base_(base),
        rope_scale_(rope_scale),
        q_eps_(q_eps),
        k_eps_(k_eps),
        stacked_cols_(stacked_cols) {}
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  const char* name() const override {
    return "DecodeAttention";
  }
  bool is_equivalent(const Primitive& other) const override;
  float scale() const {
    return scale_;
  }
  // Keys attended: rows [0, lkv) of the updated caches.
  int lkv() const {
    return lkv_;
  }
  bool traditional() const {
    return traditional_;
  }
  float base() const {
    return base_;
  }
  float rope_scale() const {
    return rope_scale_;
  }
  const std::optional<float>& q_eps() const {
    return q_eps_;
  }
  const std::optional<float>& k_eps() const {
    return k_eps_;
  }
  const std::optional<std::array<int, 3>>& stacked_cols() const {
    return stacked_cols_;
  }
  // Input i < 3 (q_x, k_x or v_x) as the rows the kernels read: the input itself, or its
  // columns viewed as [B, H, 1, D] with `stacked_cols` (no data moves). outputs give H and D.
  array rows_input(const std::vector<array>& inputs, const std::vector<array>& outputs,
                   int i) const;

 private:
  float scale_;
  int lkv_;
  bool traditional_;
  float base_;
  float rope_scale_;
  std::optional<float> q_eps_;
  std::optional<float> k_eps_;
  std::optional<std::array<int, 3>> stacked_cols_;
};

}  // namespace mlx::core::fast
