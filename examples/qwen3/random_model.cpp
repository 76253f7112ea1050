#include "random_model.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace qwen3 {

namespace {

// One generator per tensor, keyed by its index, so a tensor's values do not depend on which
// others exist.
class TensorFactory {
 public:
  TensorFactory(const Config& c, const RandomModelOptions& o, Weights& out)
      : config_(c), options_(o), out_(out) {}

  void linear(const std::string& path, int out_dim, int in_dim) {
    auto w = mx::random::normal({out_dim, in_dim}, mx::bfloat16, 0.0f, options_.weight_scale,
                                next_key(), options_.device);
    auto q = config_.quantization_for(path);
    if (q.group_size == 0) {
      put(path + ".weight", w);
      return;
    }
    auto parts = mx::quantize(w, q.group_size, q.bits, "affine", std::nullopt, options_.device);
    put(path + ".weight", parts[0]);
    put(path + ".scales", parts[1]);
    put(path + ".biases", parts[2]);
  }

  void norm(const std::string& name, int size) {
    auto jitter = mx::random::normal({size}, mx::float32, 0.0f, options_.norm_jitter, next_key(),
                                     options_.device);
    put(name, mx::astype(mx::array(1.0f) + jitter, mx::bfloat16, options_.device));
  }

 private:
  mx::array next_key() {
    return mx::random::key(options_.seed * 1000003ULL + index_++);
  }

  void put(const std::string& name, mx::array a) {
    // Evaluate now so only the quantized tensors stay alive (the 0.6b embedding alone is
    // 155M bf16 values before quantization).
    mx::eval(a);
    out_.insert_or_assign(name, a);
  }

  const Config& config_;
  const RandomModelOptions& options_;
  Weights& out_;
  uint64_t index_ = 0;
};

}  // namespace

Weights random_weights(const Config& c, const RandomModelOptions& o) {
  Weights w;
  TensorFactory f(c, o, w);
  const int h = c.hidden_size, d = c.head_dim;
  const int nq = c.num_attention_heads * d, nkv = c.num_key_value_heads * d;
  f.linear("model.embed_tokens", c.vocab_size, h);
  for (int i = 0; i < c.num_hidden_layers; ++i) {
    std::string p = "model.layers." + std::to_string(i);
    f.linear(p + ".self_attn.q_proj", nq, h);
    f.linear(p + ".self_attn.k_proj", nkv, h);
    f.linear(p + ".self_attn.v_proj", nkv, h);
    f.linear(p + ".self_attn.o_proj", h, nq);
    f.norm(p + ".self_attn.q_norm.weight", d);
    f.norm(p + ".self_attn.k_norm.weight", d);
    f.norm(p + ".input_layernorm.weight", h);
    f.norm(p + ".post_attention_layernorm.weight", h);
    f.linear(p + ".mlp.gate_proj", c.intermediate_size, h);
    f.linear(p + ".mlp.up_proj", c.intermediate_size, h);
    f.linear(p + ".mlp.down_proj", h, c.intermediate_size);
  }
  f.norm("model.norm.weight", h);
  if (!c.tie_word_embeddings) {
    f.linear("lm_head", c.vocab_size, h);
  }
  return w;
}

void write_random_model(const std::string& model_dir, const Config& c,
                        const RandomModelOptions& o) {
  if (!o.tokenizer_json.empty() && !std::filesystem::is_regular_file(o.tokenizer_json)) {
    throw std::invalid_argument("[qwen3] tokenizer " + o.tokenizer_json + " is not a file");
  }
  std::filesystem::create_directories(model_dir);
  save_weights(model_dir, random_weights(c, o), o.max_shard_bytes);
  std::string path = model_dir + "/config.json";
  std::ofstream out(path);
  out << config_to_json(c);
  if (!out) {
    throw std::runtime_error(std::string("[qwen3] cannot write ") + path);
  }
  if (!o.tokenizer_json.empty()) {
    std::filesystem::copy_file(o.tokenizer_json, model_dir + "/tokenizer.json",
                               std::filesystem::copy_options::overwrite_existing);
  }
}

}  // namespace qwen3
