// A Qwen3 decoder written as an MLX user writes one (MLX-LM's models/qwen3.py): ops and fast
// ops on mlx::core arrays, quantized linears through quantized_matmul, a preallocated KV cache
// per layer updated in place with slice_update at an array start.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config.h"
#include "weights.h"

namespace qwen3 {

// y = x @ W.T: quantized_matmul when the tensor has scales, else a matmul.
struct Linear {
  mx::array weight;
  std::optional<mx::array> scales;
  std::optional<mx::array> biases;
  int group_size = 0;
  int bits = 0;

  mx::array operator()(const mx::array& x) const;
};

// Rows of a (possibly quantized) table: take the rows of w/scales/biases, then dequantize.
// as_linear(x) = x @ table.T, the tied lm_head.
struct Embedding {
  Linear table;

  mx::array operator()(const mx::array& ids) const;
  mx::array as_linear(const mx::array& x) const {
    return table(x);
  }
};

// Linears that read the same input (q/k/v, gate/up), stacked along their outputs at load so
// a decode step makes one product (one dispatch, the input read once) instead of one each;
// the outputs come back as views of the stacked result. Linears whose quantization differs
// stay separate.
struct LinearGroup {
  std::vector<Linear> parts;  // one stacked Linear, or one per original linear
  std::vector<int> sizes;     // each original linear's output size

  static LinearGroup stack(std::vector<Linear> linears, std::vector<int> sizes);
  std::vector<mx::array> operator()(const mx::array& x) const;
};

struct Layer {
  LinearGroup qkv_proj;  // q_proj, k_proj, v_proj
  Linear o_proj;
  mx::array q_norm, k_norm;
  mx::array input_layernorm, post_attention_layernorm;
  LinearGroup gate_up_proj;  // gate_proj, up_proj
  Linear down_proj;
};

// keys/values [B, n_kv_heads, capacity, head_dim]; positions [0, offset) are filled. A step
// past the capacity grows both by whole steps of 256 positions (a copy).
struct KVCache {
  mx::array keys;
  mx::array values;
  int offset = 0;
};

struct LoadOptions {
  // Cast the non-integer tensors (norm weights, scales, biases, unquantized weights) to this
  // dtype, so the whole forward pass runs in it (float32 for reference comparisons).
  std::optional<mx::Dtype> dtype;
};

class Model {
 public:
  Model(Config config, const Weights& weights, const std::string& where,
        const LoadOptions& options = {});

  const Config& config() const {
    return config_;
  }
  // The dtype of activations and of the KV cache.
  mx::Dtype dtype() const {
    return dtype_;
  }

  // One cache per layer with room for `capacity` positions of `batch` sequences.
  std::vector<KVCache> make_cache(int capacity, int batch = 1) const;

  // tokens [B, L] (integers) at positions cache.offset .. +L: logits [B, L, vocab] (only the
  // last position, [B, 1, vocab], when last_only). Appends to the cache (lazily: the caches
  // hold the new graph until it is evaluated).
  mx::array operator()(const mx::array& tokens, std::vector<KVCache>& cache,
                       bool last_only = false) const;

 private:
  // `offset`: cache.offset as an int32 scalar array, made once per step for every layer.
  mx::array attention(const Layer& layer, const mx::array& x, KVCache& cache,
                      const mx::array& offset) const;
  mx::array mlp(const Layer& layer, const mx::array& x) const;

  Config config_;
  mx::Dtype dtype_;
  Embedding embed_tokens_;
  std::vector<Layer> layers_;
  mx::array norm_;
  std::optional<Linear> lm_head_;
};

// load_config + load_weights + Model.
Model load_model(const std::string& model_dir, const LoadOptions& options = {});

}  // namespace qwen3
