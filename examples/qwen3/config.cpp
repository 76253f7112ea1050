#include "config.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace qwen3 {

namespace {

using nlohmann::json;

std::invalid_argument config_error(const std::string& source, const std::string& what) {
  return std::invalid_argument(std::string("[qwen3] ") + source + ": " + what);
}

template <typename T>
T required(const json& j, const char* key, const std::string& source) {
  if (!j.contains(key)) {
    throw config_error(source, std::string("missing field \"") + key + "\"");
  }
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    throw config_error(source, std::string("field \"") + key + "\" has the wrong type");
  }
}

template <typename T>
T optional(const json& j, const char* key, T fallback, const std::string& source) {
  if (!j.contains(key) || j.at(key).is_null()) {
    return fallback;
  }
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    throw config_error(source, std::string("field \"") + key + "\" has the wrong type");
  }
}

Quantization parse_quantization(const json& q, const std::string& source) {
  Quantization out;
  out.group_size = required<int>(q, "group_size", source);
  out.bits = required<int>(q, "bits", source);
  return out;
}

}  // namespace

Quantization Config::quantization_for(const std::string& path) const {
  auto it = quantization_overrides.find(path);
  if (it != quantization_overrides.end()) {
    return it->second;
  }
  return quantized ? quantization : Quantization{0, 0};
}

Config parse_config(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw config_error(source, std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) {
    throw config_error(source, "not a JSON object");
  }
  Config c;
  c.hidden_size = required<int>(j, "hidden_size", source);
  c.num_hidden_layers = required<int>(j, "num_hidden_layers", source);
  c.intermediate_size = required<int>(j, "intermediate_size", source);
  c.num_attention_heads = required<int>(j, "num_attention_heads", source);
  c.num_key_value_heads = optional<int>(j, "num_key_value_heads", c.num_attention_heads, source);
  c.head_dim =
      optional<int>(j, "head_dim", c.hidden_size / std::max(c.num_attention_heads, 1), source);
  c.rms_norm_eps = optional<float>(j, "rms_norm_eps", c.rms_norm_eps, source);
  c.rope_theta = optional<float>(j, "rope_theta", c.rope_theta, source);
  c.vocab_size = required<int>(j, "vocab_size", source);
  c.tie_word_embeddings = optional<bool>(j, "tie_word_embeddings", c.tie_word_embeddings, source);
  c.max_position_embeddings =
      optional<int>(j, "max_position_embeddings", c.max_position_embeddings, source);
  if (j.contains("quantization") && !j.at("quantization").is_null()) {
    const auto& q = j.at("quantization");
    if (!q.is_object()) {
      throw config_error(source, "field \"quantization\" is not an object");
    }
    c.quantized = true;
    c.quantization = parse_quantization(q, source);
    for (const auto& [key, value] : q.items()) {
      if (value.is_object()) {
        c.quantization_overrides[key] = parse_quantization(value, source);
      } else if (value.is_boolean() && !value.get<bool>()) {
        c.quantization_overrides[key] = Quantization{0, 0};
      }
    }
  }
  if (c.hidden_size <= 0 || c.num_hidden_layers <= 0 || c.intermediate_size <= 0 ||
      c.num_attention_heads <= 0 || c.num_key_value_heads <= 0 || c.head_dim <= 0 ||
      c.vocab_size <= 0) {
    throw config_error(source, "sizes must be positive");
  }
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    throw config_error(source, "num_attention_heads (" + std::to_string(c.num_attention_heads) +
                                   ") is not a multiple of num_key_value_heads (" +
                                   std::to_string(c.num_key_value_heads) + ")");
  }
  if (c.head_dim % 2 != 0) {
    throw config_error(source, "head_dim must be even for RoPE");
  }
  return c;
}

Config load_config(const std::string& model_dir) {
  std::string path = model_dir + "/config.json";
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error(std::string("[qwen3] cannot open ") + path);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), path);
}

std::string config_to_json(const Config& c) {
  json j;
  j["architectures"] = json::array({"Qwen3ForCausalLM"});
  j["model_type"] = "qwen3";
  j["hidden_act"] = "silu";
  j["attention_bias"] = false;
  j["hidden_size"] = c.hidden_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["intermediate_size"] = c.intermediate_size;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.head_dim;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["vocab_size"] = c.vocab_size;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["torch_dtype"] = "bfloat16";
  if (c.quantized) {
    json q = {{"group_size", c.quantization.group_size}, {"bits", c.quantization.bits}};
    j["quantization"] = q;
    j["quantization_config"] = q;
  }
  return j.dump(2) + "\n";
}

Config named_config(const std::string& name) {
  Config c;
  c.quantized = true;
  c.quantization = {64, 4};
  c.tie_word_embeddings = true;
  c.rms_norm_eps = 1e-6f;
  c.rope_theta = 1e6f;
  if (name == "qwen3-0.6b") {
    c.hidden_size = 1024;
    c.num_hidden_layers = 28;
    c.intermediate_size = 3072;
    c.num_attention_heads = 16;
    c.num_key_value_heads = 8;
    c.head_dim = 128;
    c.vocab_size = 151936;
    c.max_position_embeddings = 40960;
  } else if (name == "qwen3-8b") {
    // Qwen/Qwen3-8B's config.json: 36 layers, 32 query and 8 KV heads of 128, its own
    // lm_head (8.2B parameters, 6.95B without the embeddings).
    c.hidden_size = 4096;
    c.num_hidden_layers = 36;
    c.intermediate_size = 12288;
    c.num_attention_heads = 32;
    c.num_key_value_heads = 8;
    c.head_dim = 128;
    c.vocab_size = 151936;
    c.max_position_embeddings = 40960;
    c.tie_word_embeddings = false;
  } else if (name == "qwen3-32b") {
    // Qwen/Qwen3-32B's config.json: 64 layers, 64 query and 8 KV heads of 128 (8 query rows a
    // KV head), hidden 5120, its own lm_head.
    c.hidden_size = 5120;
    c.num_hidden_layers = 64;
    c.intermediate_size = 25600;
    c.num_attention_heads = 64;
    c.num_key_value_heads = 8;
    c.head_dim = 128;
    c.vocab_size = 151936;
    c.max_position_embeddings = 40960;
    c.tie_word_embeddings = false;
  } else if (name == "tiny" || name == "tiny-qwen3-vocab") {
    c.hidden_size = 128;
    c.num_hidden_layers = 2;
    c.intermediate_size = 256;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = 32;
    c.vocab_size = 512;
    c.max_position_embeddings = 512;
    if (name == "tiny-qwen3-vocab") {
      // Qwen3's vocabulary, so the real tokenizer's ids are valid (11 MB of weights, most of
      // them the 4-bit embedding).
      c.vocab_size = 151936;
      c.max_position_embeddings = 40960;
    }
  } else {
    throw std::invalid_argument(
        std::string("[qwen3] unknown config '") + name +
        "' (known: qwen3-0.6b, qwen3-8b, qwen3-32b, tiny, tiny-qwen3-vocab)");
  }
  return c;
}

}  // namespace qwen3
