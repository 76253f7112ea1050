#include "generate.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <stdexcept>

namespace qwen3 {

mx::array sample(const mx::array& logits_in, const SamplerOptions& o,
                 const std::optional<mx::array>& key) {
  if (o.temperature <= 0.0f) {
    return mx::astype(mx::argmax(logits_in, -1), mx::int32);
  }
  auto logits = mx::astype(logits_in, mx::float32) / mx::array(o.temperature);
  const auto neg_inf = mx::array(-std::numeric_limits<float>::infinity());
  const int vocab = logits.shape(-1);
  if (o.top_k > 0 && o.top_k < vocab) {
    // The k-th largest logit per row is the threshold.
    auto kth = mx::min(mx::topk(logits, o.top_k, -1), -1, true);
    logits = mx::where(logits < kth, neg_inf, logits);
  }
  if (o.top_p < 1.0f) {
    // Keep the smallest set of most likely tokens whose mass reaches top_p: a token stays when
    // the mass strictly before it (in descending order) is below top_p.
    auto probs = mx::softmax(logits, -1);
    auto sorted = mx::negative(mx::sort(mx::negative(probs), -1));
    auto before = mx::cumsum(sorted, -1) - sorted;
    auto kept = mx::where(before < mx::array(o.top_p), sorted, mx::array(2.0f));
    auto threshold = mx::min(kept, -1, true);
    logits = mx::where(probs < threshold, neg_inf, logits);
  }
  return mx::astype(mx::random::categorical(logits, -1, key), mx::int32);
}

std::vector<int> generate(const Model& model, const std::vector<int>& prompt,
                          const GenerateOptions& o) {
  if (prompt.empty()) {
    throw std::invalid_argument("[qwen3] generate needs a non-empty prompt");
  }
  int capacity =
      o.cache_capacity > 0 ? o.cache_capacity : static_cast<int>(prompt.size()) + o.max_tokens;
  auto cache = model.make_cache(capacity);
  auto key = mx::random::key(o.sampler.seed);
  auto next_key = [&]() {
    auto [a, b] = mx::random::split(key);
    key = a;
    return b;
  };
  auto cache_arrays = [&] {
    std::vector<mx::array> arrays;
    for (auto& c : cache) {
      arrays.push_back(c.keys);
      arrays.push_back(c.values);
    }
    return arrays;
  };
  // Builds one step's graph and starts it on the device without waiting, so the host
  // builds step t + 1 while the device runs step t (as MLX-LM's generate_step does).
  auto step = [&](const mx::array& tokens) {
    auto logits = model(tokens, cache, true);
    auto last = mx::reshape(logits, {logits.shape(0), logits.shape(-1)});
    // Greedy decoding draws nothing: splitting the key anyway would chain one unevaluated
    // split node per token onto it.
    auto token = o.sampler.temperature > 0.0f ? sample(last, o.sampler, next_key())
                                              : sample(last, o.sampler, std::nullopt);
    // The caches go with the token so every node of the step runs in one graph.
    auto outputs = cache_arrays();
    outputs.push_back(token);
    mx::async_eval(outputs);
    return token;
  };
  std::vector<int> out;
  if (o.max_tokens <= 0) {
    return out;
  }
  // Every chunk but the last only fills the cache.
  const int n = static_cast<int>(prompt.size());
  const int chunk = o.prefill_step > 0 ? o.prefill_step : n;
  int start = 0;
  for (; n - start > chunk; start += chunk) {
    mx::array part(prompt.begin() + start, {1, chunk}, mx::int32);
    model(part, cache, true);
    mx::eval(cache_arrays());
  }
  // Tokens scheduled and not yet read, oldest first.
  std::deque<mx::array> queued;
  queued.push_back(step(mx::array(prompt.begin() + start, {1, n - start}, mx::int32)));
  const size_t ahead = static_cast<size_t>(std::max(1, o.steps_ahead));
  while (true) {
    // The next steps are scheduled before this token is read; never more than max_tokens
    // needs.
    while (queued.size() <= ahead && static_cast<int>(out.size() + queued.size()) < o.max_tokens) {
      queued.push_back(step(mx::reshape(queued.back(), {1, 1})));
    }
    int t = queued.front().item<int>();
    queued.pop_front();
    out.push_back(t);
    if ((o.on_token && !o.on_token(t)) || (o.eos_token && t == *o.eos_token) || queued.empty()) {
      for (auto& q : queued) {
        q.eval();  // no device work outlives the arrays it uses
      }
      break;
    }
  }
  return out;
}

bool parse_generate_flag(const std::string& arg, const std::function<std::string()>& value,
                         GenerateOptions& options) {
  if (arg == "--max-tokens") {
    options.max_tokens = std::stoi(value());
  } else if (arg == "--temp") {
    options.sampler.temperature = std::stof(value());
  } else if (arg == "--top-k") {
    options.sampler.top_k = std::stoi(value());
  } else if (arg == "--top-p") {
    options.sampler.top_p = std::stof(value());
  } else if (arg == "--seed") {
    options.sampler.seed = std::stoull(value());
  } else {
    return false;
  }
  return true;
}

}  // namespace qwen3
