#include "model.h"

#include <cmath>
#include <stdexcept>

namespace qwen3 {

namespace {

std::invalid_argument shape_error(const std::string& name, const mx::Shape& got,
                                  const mx::Shape& want) {
  return std::invalid_argument(std::string("[qwen3] tensor '") + name + "' has shape " +
                               mx::shape_to_string(got) + ", expected " +
                               mx::shape_to_string(want));
}

mx::array cast(const mx::array& a, const LoadOptions& options) {
  return options.dtype ? mx::astype(a, *options.dtype) : a;
}

// Reads `<path>.weight` (+ `.scales`, `.biases` when quantized) for an [out, in] linear.
Linear load_linear(const Config& c, const Weights& w, const std::string& path, int out, int in,
                   const std::string& where, const LoadOptions& options) {
  auto q = c.quantization_for(path);
  const auto& weight = get_tensor(w, path + ".weight", where);
  if (q.group_size == 0) {
    if (weight.shape() != mx::Shape{out, in}) {
      throw shape_error(path + ".weight", weight.shape(), {out, in});
    }
    return Linear{cast(weight, options), std::nullopt, std::nullopt, 0, 0};
  }
  if (in % q.group_size != 0 || (in * q.bits) % 32 != 0) {
    throw std::invalid_argument(std::string("[qwen3] '") + path + "': input size " +
                                std::to_string(in) + " does not fit group_size " +
                                std::to_string(q.group_size) + " / bits " + std::to_string(q.bits));
  }
  mx::Shape w_shape{out, in * q.bits / 32};
  mx::Shape s_shape{out, in / q.group_size};
  if (weight.shape() != w_shape || weight.dtype() != mx::uint32) {
    throw shape_error(path + ".weight (uint32)", weight.shape(), w_shape);
  }
  const auto& scales = get_tensor(w, path + ".scales", where);
  const auto& biases = get_tensor(w, path + ".biases", where);
  if (scales.shape() != s_shape) {
    throw shape_error(path + ".scales", scales.shape(), s_shape);
  }
  if (biases.shape() != s_shape) {
    throw shape_error(path + ".biases", biases.shape(), s_shape);
  }
  return Linear{weight, cast(scales, options), cast(biases, options), q.group_size, q.bits};
}

mx::array load_vector(const Weights& w, const std::string& name, int size, const std::string& where,
                      const LoadOptions& options) {
  const auto& a = get_tensor(w, name, where);
  if (a.shape() != mx::Shape{size}) {
    throw shape_error(name, a.shape(), {size});
  }
  return cast(a, options);
}

}  // namespace

mx::array Linear::operator()(const mx::array& x) const {
  if (scales) {
    return mx::quantized_matmul(x, weight, *scales, biases, true, group_size, bits);
  }
  return mx::matmul(x, mx::transpose(weight));
}

LinearGroup LinearGroup::stack(std::vector<Linear> linears, std::vector<int> sizes) {
  const Linear& first = linears.front();
  bool same = true;
  for (const auto& l : linears) {
    same = same && l.scales.has_value() == first.scales.has_value() &&
           l.group_size == first.group_size && l.bits == first.bits &&
           l.weight.dtype() == first.weight.dtype() &&
           (!l.scales || l.scales->dtype() == first.scales->dtype());
  }
  if (!same) {
    return LinearGroup{std::move(linears), std::move(sizes)};
  }
  auto rows = [&](auto member) {
    std::vector<mx::array> parts;
    for (const auto& l : linears) {
      parts.push_back(member(l));
    }
    return mx::concatenate(parts, 0);
  };
  Linear stacked{rows([](const Linear& l) { return l.weight; }), std::nullopt, std::nullopt,
                 first.group_size, first.bits};
  if (first.scales) {
    stacked.scales = rows([](const Linear& l) { return *l.scales; });
    stacked.biases = rows([](const Linear& l) { return *l.biases; });
  }
  // Now, so the separate tensors are not kept alive by the graph until the first step.
  mx::eval(stacked.weight);
  if (stacked.scales) {
    mx::eval(*stacked.scales, *stacked.biases);
  }
  return LinearGroup{{std::move(stacked)}, std::move(sizes)};
}

std::vector<mx::array> LinearGroup::operator()(const mx::array& x) const {
  if (parts.size() == sizes.size()) {
    std::vector<mx::array> out;
    for (const auto& p : parts) {
      out.push_back(p(x));
    }
    return out;
  }
  mx::Shape at;
  int offset = 0;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    offset += sizes[i];
    at.push_back(offset);
  }
  return mx::split(parts.front()(x), at, -1);
}

mx::array Embedding::operator()(const mx::array& ids) const {
  auto rows = mx::take(table.weight, ids, 0);
  if (!table.scales) {
    return rows;
  }
  return mx::dequantize(rows, mx::take(*table.scales, ids, 0), mx::take(*table.biases, ids, 0),
                        table.group_size, table.bits);
}

Model::Model(Config c, const Weights& w, const std::string& where, const LoadOptions& options)
    : config_(std::move(c)),
      dtype_(mx::float32),
      embed_tokens_{load_linear(config_, w, "model.embed_tokens", config_.vocab_size,
                                config_.hidden_size, where, options)},
      norm_(load_vector(w, "model.norm.weight", config_.hidden_size, where, options)) {
  const int h = config_.hidden_size, d = config_.head_dim;
  const int nq = config_.num_attention_heads * d, nkv = config_.num_key_value_heads * d;
  const int inter = config_.intermediate_size;
  for (int i = 0; i < config_.num_hidden_layers; ++i) {
    std::string p = "model.layers." + std::to_string(i);
    std::string attn = p + ".self_attn", mlp = p + ".mlp";
    layers_.push_back(Layer{
        LinearGroup::stack({load_linear(config_, w, attn + ".q_proj", nq, h, where, options),
                            load_linear(config_, w, attn + ".k_proj", nkv, h, where, options),
                            load_linear(config_, w, attn + ".v_proj", nkv, h, where, options)},
                           {nq, nkv, nkv}),
        load_linear(config_, w, attn + ".o_proj", h, nq, where, options),
        load_vector(w, attn + ".q_norm.weight", d, where, options),
        load_vector(w, attn + ".k_norm.weight", d, where, options),
        load_vector(w, p + ".input_layernorm.weight", h, where, options),
        load_vector(w, p + ".post_attention_layernorm.weight", h, where, options),
        LinearGroup::stack({load_linear(config_, w, mlp + ".gate_proj", inter, h, where, options),
                            load_linear(config_, w, mlp + ".up_proj", inter, h, where, options)},
                           {inter, inter}),
        load_linear(config_, w, mlp + ".down_proj", h, inter, where, options),
    });
  }
  if (!config_.tie_word_embeddings) {
    lm_head_ = load_linear(config_, w, "lm_head", config_.vocab_size, h, where, options);
  }
  // Activations take the dtype of the norm weights (MLX: bf16 for the community models).
  dtype_ = norm_.dtype();
}

std::vector<KVCache> Model::make_cache(int capacity, int batch) const {
  std::vector<KVCache> cache;
  mx::Shape shape{batch, config_.num_key_value_heads, capacity, config_.head_dim};
  for (int i = 0; i < config_.num_hidden_layers; ++i) {
    cache.push_back(KVCache{mx::zeros(shape, dtype_), mx::zeros(shape, dtype_), 0});
  }
  return cache;
}

mx::array Model::attention(const Layer& layer, const mx::array& x, KVCache& cache,
                           const mx::array& offset) const {
  const int B = x.shape(0), L = x.shape(1);
  const int n_heads = config_.num_attention_heads, n_kv = config_.num_key_value_heads;
  const int d = config_.head_dim;
  const float eps = config_.rms_norm_eps;
  if (cache.offset + L > cache.keys.shape(2)) {
    // Grow by whole steps of 256 positions, as MLX-LM's KVCache does: one copy per step,
    // and decode steps in between keep their kernels (the capacity is not in any key).
    constexpr int kStep = 256;
    int grow = (cache.offset + L - cache.keys.shape(2) + kStep - 1) / kStep * kStep;
    mx::Shape extra{B, n_kv, grow, d};
    cache.keys = mx::concatenate({cache.keys, mx::zeros(extra, cache.keys.dtype())}, 2);
    cache.values = mx::concatenate({cache.values, mx::zeros(extra, cache.values.dtype())}, 2);
  }
  // [B, L, n * d] -> [B, n, L, d]. For one token (decode) that is a reshape alone: every
  // graph node costs host time per step (~3.5 us each on the H100 machine), and a decode
  // step has hundreds of views.
  auto heads = [&](const mx::array& y, int n) {
    return L == 1 ? mx::reshape(y, {B, n, 1, d})
                  : mx::transpose(mx::reshape(y, {B, L, n, d}), {0, 2, 1, 3});
  };
  auto qkv = layer.qkv_proj(x);
  auto q = mx::fast::rms_norm(heads(qkv[0], n_heads), layer.q_norm, eps);
  auto k = mx::fast::rms_norm(heads(qkv[1], n_kv), layer.k_norm, eps);
  auto v = heads(qkv[2], n_kv);

  // The position lives in an array, so decode steps differ only in data: same kernels.
  q = mx::fast::rope(q, d, false, config_.rope_theta, 1.0f, offset);
  k = mx::fast::rope(k, d, false, config_.rope_theta, 1.0f, offset);

  // Reassigning the members leaves the old cache referenced only by the update: in place.
  cache.keys = mx::slice_update(cache.keys, mx::astype(k, dtype_), offset, {2});
  cache.values = mx::slice_update(cache.values, mx::astype(v, dtype_), offset, {2});
  cache.offset += L;
  mx::Shape stop{B, n_kv, cache.offset, d};
  auto keys = mx::slice(cache.keys, {0, 0, 0, 0}, stop);
  auto values = mx::slice(cache.values, {0, 0, 0, 0}, stop);

  auto out = mx::fast::scaled_dot_product_attention(
      q, keys, values, 1.0f / std::sqrt(static_cast<float>(d)), L > 1 ? "causal" : "");
  out = L == 1 ? mx::reshape(out, {B, 1, n_heads * d})
               : mx::reshape(mx::transpose(out, {0, 2, 1, 3}), {B, L, n_heads * d});
  return layer.o_proj(out);
}

namespace {

// silu(gate) * up, compiled (shapeless) as MLX-LM compiles its activations: one fused
// kernel instead of three.
std::vector<mx::array> swiglu(const std::vector<mx::array>& in) {
  const auto& gate = in[0];
  return {gate * mx::sigmoid(gate) * in[1]};
}

}  // namespace

mx::array Model::mlp(const Layer& layer, const mx::array& x) const {
  static auto compiled_swiglu = mx::compile(swiglu, true);
  auto gate_up = layer.gate_up_proj(x);
  return layer.down_proj(compiled_swiglu({gate_up[0], gate_up[1]})[0]);
}

mx::array Model::operator()(const mx::array& tokens, std::vector<KVCache>& cache,
                            bool last_only) const {
  if (tokens.ndim() != 2) {
    throw std::invalid_argument("[qwen3] tokens must be [batch, length], got " +
                                mx::shape_to_string(tokens.shape()));
  }
  if (cache.size() != layers_.size()) {
    throw std::invalid_argument("[qwen3] the cache has " + std::to_string(cache.size()) +
                                " layers, the model " + std::to_string(layers_.size()));
  }
  const float eps = config_.rms_norm_eps;
  auto h = mx::astype(embed_tokens_(tokens), dtype_);
  // Every layer's cache is at the same position.
  const int position = cache.empty() ? 0 : cache[0].offset;
  mx::array offset(position, mx::int32);
  for (size_t i = 0; i < layers_.size(); ++i) {
    const auto& layer = layers_[i];
    if (cache[i].offset != position) {
      throw std::invalid_argument("[qwen3] the cache's layers are at different positions");
    }
    h = h + attention(layer, mx::fast::rms_norm(h, layer.input_layernorm, eps), cache[i], offset);
    h = h + mlp(layer, mx::fast::rms_norm(h, layer.post_attention_layernorm, eps));
  }
  if (last_only && h.shape(1) > 1) {
    const int B = h.shape(0), L = h.shape(1), H = h.shape(2);
    h = mx::slice(h, {0, L - 1, 0}, {B, L, H});
  }
  h = mx::fast::rms_norm(h, norm_, eps);
  return lm_head_ ? (*lm_head_)(h) : embed_tokens_.as_linear(h);
}

Model load_model(const std::string& model_dir, const LoadOptions& options) {
  return Model(load_config(model_dir), load_weights(model_dir), model_dir, options);
}

}  // namespace qwen3
