// Writes a model directory with random weights in the MLX community layout: config.json and
// model.safetensors (or shards) with MLX-LM's tensor names, linears and the embedding
// quantized with quantize() (bf16 scales and biases), norm weights in bf16.
#pragma once

#include <cstdint>
#include <string>

#include "config.h"
#include "weights.h"

namespace qwen3 {

struct RandomModelOptions {
  uint64_t seed = 0;
  // Standard deviation of the linear and embedding weights (before quantization); small
  // enough that activations stay finite through every layer.
  float weight_scale = 0.02f;
  // Norm weights are 1 + norm_jitter * normal, so the tests see them applied.
  float norm_jitter = 0.1f;
  size_t max_shard_bytes = 0;  // 0: one model.safetensors
  // A tokenizer.json to copy into the directory (empty: none). Its ids must fit the config's
  // vocab_size ("tiny-qwen3-vocab" for Qwen3's).
  std::string tokenizer_json;
  // Where the weights are drawn and quantized. Benchmarks use the GPU, which makes the 0.6b
  // weights in seconds instead of most of a minute; the values may differ from the CPU's in
  // the last bits of the normal transform, so tests keep the CPU.
  mx::Device device = mx::Device::cpu;
};

// The tensors only (evaluated, on the CPU).
Weights random_weights(const Config& config, const RandomModelOptions& options = {});

// config.json + the tensors (+ tokenizer.json) into `model_dir` (created if needed).
void write_random_model(const std::string& model_dir, const Config& config,
                        const RandomModelOptions& options = {});

}  // namespace qwen3
