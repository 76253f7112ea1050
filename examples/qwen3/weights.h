// The tensors of a model directory in the MLX community layout: model.safetensors, or shards
// listed by model.safetensors.index.json ("weight_map": tensor name -> shard file).
#pragma once

#include <string>
#include <unordered_map>

#include "mlx/mlx.h"

namespace qwen3 {

namespace mx = mlx::core;

using Weights = std::unordered_map<std::string, mx::array>;

// All tensors of the directory. A tensor that the index names but its shard lacks, or a
// directory with neither file, throws with the file and tensor named.
Weights load_weights(const std::string& model_dir);

// weights[name], or std::invalid_argument("[qwen3] missing tensor 'name' in <where>").
const mx::array& get_tensor(const Weights& weights, const std::string& name,
                            const std::string& where);

// Writes `weights` as model.safetensors, or, when max_shard_bytes > 0 and they exceed it, as
// model-0000N-of-0000M.safetensors shards plus model.safetensors.index.json (tensors in name
// order, a shard closed once it holds max_shard_bytes).
void save_weights(const std::string& model_dir, const Weights& weights, size_t max_shard_bytes = 0);

}  // namespace qwen3
