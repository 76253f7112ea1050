// Qwen3's config.json (the fields MLX-LM reads for model_type "qwen3"), and the named
// configurations the random-model generator writes.
#pragma once

#include <map>
#include <string>

namespace qwen3 {

// group_size 0 means "not quantized".
struct Quantization {
  int group_size = 64;
  int bits = 4;
};

struct Config {
  int hidden_size = 0;
  int num_hidden_layers = 0;
  int intermediate_size = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;
  int head_dim = 0;
  float rms_norm_eps = 1e-6f;
  float rope_theta = 1e6f;
  int vocab_size = 0;
  bool tie_word_embeddings = true;
  int max_position_embeddings = 40960;
  // Absent from config.json: a bf16/f16/f32 model.
  bool quantized = false;
  Quantization quantization;
  // Per-tensor overrides from "quantization": {"model.layers.0.mlp.down_proj": {...}}
  // (false in the JSON is stored as group_size 0).
  std::map<std::string, Quantization> quantization_overrides;

  // The quantization of the linear/embedding at `path` (e.g. "model.layers.3.mlp.up_proj").
  Quantization quantization_for(const std::string& path) const;
};

// Parses `text` (the contents of config.json); `source` names it in errors. Missing required
// fields, wrong types and inconsistent sizes throw std::invalid_argument("[qwen3] ...").
Config parse_config(const std::string& text, const std::string& source = "config.json");
Config load_config(const std::string& model_dir);

// config.json text in the MLX community layout (model_type, architectures, quantization).
std::string config_to_json(const Config& config);

// "qwen3-0.6b", "qwen3-8b" (its own lm_head), "qwen3-32b" (8 query heads a KV head), "tiny"
// (vocabulary 512) or "tiny-qwen3-vocab" (tiny with Qwen3's 151936-token vocabulary, for the
// real tokenizer); other names throw std::invalid_argument listing them.
Config named_config(const std::string& name);

}  // namespace qwen3
