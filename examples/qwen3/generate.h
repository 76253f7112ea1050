// Sampling and the prefill + decode loop.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model.h"

namespace qwen3 {

struct SamplerOptions {
  float temperature = 0.0f;  // 0: greedy (argmax)
  int top_k = 0;             // 0: off
  float top_p = 1.0f;        // 1: off
  uint64_t seed = 0;
};

// logits [B, vocab] -> tokens [B] (int32). `key` is used when temperature > 0.
mx::array sample(const mx::array& logits, const SamplerOptions& options,
                 const std::optional<mx::array>& key = std::nullopt);

struct GenerateOptions {
  int max_tokens = 16;
  int cache_capacity = 0;  // 0: prompt + max_tokens
  // The prompt goes through the model in chunks of at most this many tokens (MLX-LM's
  // prefill_step_size), which bounds the activations of a long prompt; 0: one chunk.
  int prefill_step = 2048;
  SamplerOptions sampler;
  std::optional<int> eos_token;
  // Called with each new token as soon as it is known; return false to stop.
  std::function<bool(int)> on_token;
  // Decode steps scheduled ahead of the token being read (at least 1). MLX-LM's
  // generate_step keeps 1: step t + 1 is built while the device runs step t, but step t + 2
  // only after token t is read, so the device waits whenever building plus recording a step
  // exceeds its own time. 2 keeps a whole step queued behind the one running. The tokens are
  // the same either way; a stop by on_token or eos leaves up to this many steps unused.
  int steps_ahead = 2;
};

// The generation flags both CLIs share: --max-tokens, --temp, --top-k, --top-p, --seed.
// Sets the option when `arg` is one of them (reading its value with `value`) and returns
// true; false for any other argument.
bool parse_generate_flag(const std::string& arg, const std::function<std::string()>& value,
                         GenerateOptions& options);

// Prefills `prompt` (one sequence) and decodes up to max_tokens tokens (the first comes from
// the prefill's logits). Returns the generated tokens.
std::vector<int> generate(const Model& model, const std::vector<int>& prompt,
                          const GenerateOptions& options);

}  // namespace qwen3
