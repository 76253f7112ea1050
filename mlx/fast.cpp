// mlx::core::fast ops: MLX's argument checks and error messages, the output dtype, and the
// casts that leave each primitive one float dtype (mlx/fast_primitives.h).
#include "mlx/fast.h"

#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "mlx/backend/common/views.h"
#include "mlx/fast_primitives.h"
#include "mlx/fusion.h"
#include "mlx/ops.h"
#include "mlx/utils.h"

namespace mlx::core::fast {

namespace {

[[noreturn]] void fail(const std::string& msg) {
  throw std::invalid_argument(msg);
}

// A weight or bias: 1-d with x.shape(-1) elements.
void check_affine(const char* op, const char* what, const array& x, const array& p) {
  if (p.ndim() != 1) {
    fail(std::string("[") + op + "] " + what + " must have 1 dimension but has " +
         std::to_string(p.ndim()) + " dimensions.");
  }
  if (p.size() != static_cast<size_t>(x.shape(-1))) {
    fail(std::string("[") + op + "] " + what +
         " must have the same size as the last dimension of x but has " + std::to_string(p.size()) +
         " elements.");
  }
}

void check_rank(const char* op, const array& x) {
  if (x.ndim() == 0) {
    fail(std::string("[") + op +
         "] Input must have at least 1 dimension but got input with 0 dimensions.");
  }
}

Dtype float_out(const char* op, Dtype t) {
  if (!issubdtype(t, floating)) {
    fail(std::string("[") + op + "] Received unsupported type " + dtype_to_string(t) + ".");
  }
  return t;
}

// The scalar 1 or 0 standing in for a missing weight or bias, made once per dtype and
// value: arrays are immutable, and a new host scalar per call cost a host allocation and an
// upload on every decode step (layer_norm without bias measured 8.4 us of host time per
// call against 3.0 for rms_norm with a weight).
array constant_scalar(float value, Dtype dtype) {
  static std::mutex mtx;
  static std::map<std::pair<float, Dtype::Val>, array>* cache =
      new std::map<std::pair<float, Dtype::Val>, array>();  // never destroyed: used at exit
  std::lock_guard lk(mtx);
  auto key = std::make_pair(value, dtype.val);
  auto it = cache->find(key);
  if (it == cache->end()) {
    array a(value, dtype);
    a.eval();
    it = cache->emplace(key, a).first;
  }
  return it->second;
}

}  // namespace

array rms_norm(const array& x, const std::optional<array>& weight, float eps, StreamOrDevice s) {
  check_rank("rms_norm", x);
  if (weight) {
    check_affine("rms_norm", "weight", x, *weight);
  }
  Dtype out = float_out("rms_norm", weight ? promote_types(x.dtype(), weight->dtype()) : x.dtype());
  auto stream = to_stream(s);
  array w = weight ? astype(*weight, out, stream) : constant_scalar(1.0f, out);
  return array(x.shape(), out, std::make_shared<RMSNorm>(stream, eps), {astype(x, out, stream), w});
}

array layer_norm(const array& x, const std::optional<array>& weight,
                 const std::optional<array>& bias, float eps, StreamOrDevice s) {
  check_rank("layer_norm", x);
  if (weight) {
    check_affine("layer_norm", "weight", x, *weight);
  }
  if (bias) {
    check_affine("layer_norm", "bias", x, *bias);
  }
  Dtype t = x.dtype();
  if (weight) {
    t = promote_types(t, weight->dtype());
    if (bias) {
      t = promote_types(t, bias->dtype());
    }
  }
  Dtype out = float_out("layer_norm", t);
  auto stream = to_stream(s);
  array w = weight ? astype(*weight, out, stream) : constant_scalar(1.0f, out);
  array b = bias ? astype(*bias, out, stream) : constant_scalar(0.0f, out);
  return array(x.shape(), out, std::make_shared<LayerNorm>(stream, eps),
               {astype(x, out, stream), w, b});
}

array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale,
           const array& offset, const std::optional<array>& freqs, StreamOrDevice s) {
  if (x.ndim() < 3) {
    fail("[rope] Input must have at least 3 dimensions but got input with " +
         std::to_string(x.ndim()) + " dimensions.");
  }
  if (!issubdtype(x.dtype(), floating)) {
    fail("[rope] Input must be a floating type but got " + dtype_to_string(x.dtype()) + ".");
  }
  if (offset.ndim() > 1) {
    fail("[rope] offset must have at most one dimension but has shape " +
         shape_to_string(offset.shape()) + ".");
  }
  if (offset.size() != 1 && offset.size() != static_cast<size_t>(x.shape(0))) {
    fail("[rope] offset must be a scalar or vector with " + std::to_string(x.shape(0)) +
         " elements but has shape " + shape_to_string(offset.shape()) + ".");
  }
  if (!issubdtype(offset.dtype(), integer)) {
    fail("[rope] offset must be an integer but got type " + dtype_to_string(offset.dtype()) + ".");
  }
  if (dims <= 0) {
    fail("[rope] dims must be positive but got " + std::to_string(dims) + ".");
  }
  if (dims % 2 != 0) {
    fail("[rope] dims must be even but got " + std::to_string(dims) + ".");
  }
  if (dims > x.shape(-1)) {
    fail("[rope] dims must not exceed the input's last dimension (" + std::to_string(x.shape(-1)) +
         ") but got " + std::to_string(dims) + ".");
  }
  if (freqs && base) {
    fail("[rope] Only one of base or freqs can have a value.");
  }
  if (!freqs && !base) {
    fail("[rope] Neither base nor freqs has a value.");
  }
  if (freqs && (freqs->ndim() != 1 || freqs->shape(0) != dims / 2)) {
    fail("[rope] freqs must be one dimensional with size " + std::to_string(dims / 2) +
         " but got shape " + shape_to_string(freqs->shape()) + ".");
  }
  auto stream = to_stream(s);
  // The rope of a whole-row rms_norm reads the norm's input (mlx/fusion.h).
  std::optional<NormPrologue> norm;
  if (dims == x.shape(-1)) {
    norm = absorbable_rms_norm(x, stream);
  }
  // A 0-d offset is read with stride 0: no reshape node (it would cost a dispatch per call).
  std::vector<array> inputs{norm ? norm->x : x, astype(offset, int32, stream)};
  if (freqs) {
    inputs.push_back(astype(*freqs, float32, stream));
  }
  std::optional<float> norm_eps;
  if (norm) {
    inputs.push_back(norm->weight);
    norm_eps = norm->eps;
  }
  return array(
      x.shape(), x.dtype(),
      std::make_shared<RoPE>(stream, dims, traditional, base.value_or(1.0f), scale, norm_eps),
      std::move(inputs));
}

array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale,
           int offset, const std::optional<array>& freqs, StreamOrDevice s) {
  return rope(x, dims, traditional, base, scale, array(offset, int32), freqs, s);
}

// Argument checks in MLX's order with MLX's messages; MLX accepts mask_arr with mode "" and
// ignores mode "array" without one, and so does this op.
namespace {

// Head dims the GPU's sdpa kernels serve (codegen/attention.cpp): multiples of 8 up to 256.
bool fused_head_dim(int d) {
  return d >= 8 && d <= 256 && d % 8 == 0;
}

// MLX's own composition, for GPU shapes no fused kernel serves: scores = (q * scale) k^T in
// f32 per (batch, kv head, query group), the mask (finfo.min where a bool mask is false, or
// added), the sink as one more logit column, softmax, then the weights in the output dtype
// times v. inputs are {q, k, v, [mask], [sinks]} as the primitive would get them.
array composed_attention(const std::vector<array>& inputs, float scale, AttentionMask kind,
                         bool has_sinks, Dtype out, const Stream& s) {
  const array& q = inputs[0];
  const array& k = inputs[1];
  const array& v = inputs[2];
  int b = q.shape(0), hq = q.shape(1), lq = q.shape(2), d = q.shape(3);
  int hkv = k.shape(1), lkv = k.shape(2), dv = v.shape(3);
  int groups = hq / hkv;
  auto qg = reshape(multiply(astype(q, float32, s), array(scale), s), {b, hkv, groups, lq, d}, s);
  auto kt = expand_dims(swapaxes(astype(k, float32, s), -1, -2, s), 2, s);
  auto scores = matmul(qg, kt, s);  // [b, hkv, groups, lq, lkv]
  double lowest = out == float16    ? -65504.0
                  : out == bfloat16 ? -3.3895313892515355e38
                                    : -3.4028234663852886e38;
  if (kind == AttentionMask::causal) {
    auto rows = reshape(arange(0, lq, s), {lq, 1}, s);
    auto cols = reshape(arange(0, lkv, s), {1, lkv}, s);
    auto keep = greater_equal(add(rows, array(lkv - lq), s), cols, s);
    scores = where(keep, scores, array(lowest, float32), s);
  } else if (kind == AttentionMask::array) {
    auto m = reshape(inputs[3], {b, hkv, groups, lq, lkv}, s);
    scores = m.dtype() == bool_ ? where(m, scores, array(lowest, float32), s)
                                : add(scores, astype(m, float32, s), s);
  }
  if (has_sinks) {
    auto sk = reshape(astype(inputs.back(), float32, s), {1, hkv, groups, 1, 1}, s);
    scores = concatenate({broadcast_to(sk, {b, hkv, groups, lq, 1}, s), scores}, -1, s);
  }
  auto weights = softmax(scores, -1, true, s);
  if (has_sinks) {
    weights = slice(weights, {0, 0, 0, 0, 1}, {b, hkv, groups, lq, lkv + 1}, s);
  }
  auto o = matmul(astype(weights, out, s), expand_dims(v, 2, s), s);  // [b, hkv, groups, lq, dv]
  return reshape(o, {b, hq, lq, dv}, s);
}

}  // namespace

array scaled_dot_product_attention(const array& queries, const array& keys, const array& values,
                                   const float scale, const std::string& mask_mode,
                                   std::optional<array> mask_arr, const std::optional<array>& sinks,
                                   bool force_fused, StreamOrDevice s) {
  const std::string op = "[scaled_dot_product_attention] ";
  for (const array* t : {&queries, &keys, &values}) {
    if (t->ndim() != 4) {
      fail(op + "input with shape " + shape_to_string(t->shape()) + " expected to be rank 4");
    }
  }
  if (mask_mode != "" && mask_mode != "causal" && mask_mode != "array") {
    fail(op + "Invalid mask_mode " + mask_mode + ". mask_mode must be 'causal', 'array' or ''.");
  }
  AttentionMask kind = AttentionMask::none;
  if (mask_mode == "causal") {
    kind = AttentionMask::causal;
    if (mask_arr) {
      // MLX's wording, its misspelling included.
      fail(op + "Invalid mask_arr for mask_mode 'casusal'. No array mask should be passed.");
    }
  } else if (mask_arr) {
    kind = AttentionMask::array;
    if (mask_arr->ndim() > 4) {
      fail(op + "the mask with shape " + shape_to_string(mask_arr->shape()) +
           " expected to have at most rank 4.");
    }
  }
  for (const array* t : {&keys, &values}) {
    if (t->shape(0) != queries.shape(0)) {
      fail(op + "mismatching batch dimension for input with shape " + shape_to_string(t->shape()) +
           ".");
    }
  }
  if (queries.shape(-1) != keys.shape(-1)) {
    fail(op + "query, keys expected to have matching last dimension; found query shape " +
         shape_to_string(queries.shape()) + " for keys shape " + shape_to_string(keys.shape()) +
         ".");
  }
  int n_q_heads = queries.shape(1);
  int n_kv_heads = keys.shape(1);
  if (values.shape(1) != n_kv_heads) {
    fail(op + "keys, values expected to have matching n_kv_heads; found keys with n_heads " +
         std::to_string(n_kv_heads) + " for values with n_heads " +
         std::to_string(values.shape(1)) + ".");
  }
  // Not checked by MLX (its composition fails in matmul); the fused loop needs it.
  if (values.shape(2) != keys.shape(2)) {
    fail(op + "keys, values expected to have matching sequence length; found keys shape " +
         shape_to_string(keys.shape()) + " for values shape " + shape_to_string(values.shape()) +
         ".");
  }
  if (n_kv_heads == 0 ? n_q_heads != 0 : n_q_heads % n_kv_heads != 0) {
    fail(op + "n_heads must be a multiple of n_kv_heads, found n_heads " +
         std::to_string(n_q_heads) + " for n_kv_heads " + std::to_string(n_kv_heads) + ".");
  }
  Dtype out = promote_types(promote_types(queries.dtype(), keys.dtype()), values.dtype());
  if (!issubdtype(out, floating)) {
    fail(op + "Received unsupported type " + dtype_to_string(out) + ".");
  }
  auto stream = to_stream(s);
  std::vector<array> inputs{astype(queries, out, stream), astype(keys, out, stream),
                            astype(values, out, stream)};
  if (kind == AttentionMask::array) {
    if (promote_types(mask_arr->dtype(), out) != out) {
      fail(op + "Mask type must promote to output type " + dtype_to_string(out) + ".");
    }
    array m = mask_arr->dtype() == bool_ ? *mask_arr : astype(*mask_arr, out, stream);
    Shape mask_shape{queries.shape(0), n_q_heads, queries.shape(2), keys.shape(2)};
    inputs.push_back(broadcast_to(m, mask_shape, stream));
  }
  if (sinks) {
    if (promote_types(sinks->dtype(), out) != out) {
      fail(op + "Type of sinks must promote to output type " + dtype_to_string(out) + ".");
    }
    if (sinks->ndim() != 1 || sinks->shape(0) != n_q_heads) {
      fail(op + "Received invalid shape for sinks " + shape_to_string(sinks->shape()) + ".");
    }
    inputs.push_back(astype(*sinks, out, stream));
  }
  bool kernel_dims = fused_head_dim(queries.shape(-1)) && fused_head_dim(values.shape(-1));
  if (kind == AttentionMask::none && !sinks && kernel_dims) {
    // One decode step over a KV cache: the ropes and cache updates in the same launch.
    if (auto step = attention_over_cache_update(inputs[0], inputs[1], inputs[2], scale, stream)) {
      return *step;
    }
  }
  if (stream.device == Device::gpu && !kernel_dims) {
    if (force_fused) {
      fail(op + "no fused kernel for head dims " + std::to_string(queries.shape(-1)) + " and " +
           std::to_string(values.shape(-1)) + " (multiples of 8 up to 256 are served).");
    }
    if (values.shape(2) > 0) {
      return composed_attention(inputs, scale, kind, sinks.has_value(), out, stream);
    }
  }
  Shape out_shape{queries.shape(0), n_q_heads, queries.shape(2), values.shape(3)};
  return array(std::move(out_shape), out,
               std::make_shared<ScaledDotProductAttention>(stream, scale, kind, sinks.has_value(),
                                                           force_fused),
               std::move(inputs));
}

bool ScaledDotProductAttention::is_equivalent(const Primitive& other) const {
  const auto& o = static_cast<const ScaledDotProductAttention&>(other);
  return scale_ == o.scale_ && mask_ == o.mask_ && has_sinks_ == o.has_sinks_ &&
         force_fused_ == o.force_fused_;
}

bool DecodeAttention::is_equivalent(const Primitive& other) const {
  const auto& o = static_cast<const DecodeAttention&>(other);
  return scale_ == o.scale_ && lkv_ == o.lkv_ && traditional_ == o.traditional_ &&
         base_ == o.base_ && rope_scale_ == o.rope_scale_ && q_eps_ == o.q_eps_ &&
         k_eps_ == o.k_eps_ && stacked_cols_ == o.stacked_cols_;
}

array DecodeAttention::rows_input(const std::vector<array>& inputs,
                                  const std::vector<array>& outputs, int i) const {
  if (!stacked_cols_) {
    return inputs[i];
  }
  // q: the attention's heads and the key cache's head dim; k and v: the caches'.
  int heads = i == 0 ? outputs[0].shape(1) : outputs[1].shape(1);
  int d = i == 2 ? outputs[2].shape(3) : outputs[1].shape(3);
  return stacked_rows_view(inputs[i], (*stacked_cols_)[i], heads, d);
}

bool RMSNorm::is_equivalent(const Primitive& other) const {
  return eps_ == static_cast<const RMSNorm&>(other).eps_;
}

bool LayerNorm::is_equivalent(const Primitive& other) const {
  return eps_ == static_cast<const LayerNorm&>(other).eps_;
}

bool RoPE::is_equivalent(const Primitive& other) const {
  const auto& o = static_cast<const RoPE&>(other);
  return dims_ == o.dims_ && traditional_ == o.traditional_ && base_ == o.base_ &&
         scale_ == o.scale_ && norm_eps_ == o.norm_eps_ && into_ == o.into_;
}

}  // namespace mlx::core::fast
