// The Qwen3 example model (examples/qwen3) on the random tiny model: config round trip,
// loader errors, sharded loading, the KV cache against a full recomputation, sampling, and
// GPU logits and greedy tokens against the CPU reference.
#include <doctest/doctest.h>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "generate.h"
#ifdef MLX_VULKAN
#include "mlx/backend/vulkan/kernel_library.h"
#endif
#include "random_model.h"
#include "test_utils.h"

namespace {

namespace fs = std::filesystem;
namespace mx = mlx::core;
using mlx_test::to_doubles;

const std::vector<int> kPrompt{7, 300, 42, 511, 0, 128, 77, 250, 3, 199, 64, 420};
constexpr int kSteps = 32;  // issue 16 item 7: 32 decode steps
constexpr uint64_t kSeed = 1234;

// A directory removed at exit.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() /
             (std::string("mlx_qwen3_") + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The tiny model, generated once per process.
const std::string& tiny_dir() {
  static TempDir dir("tiny");
  static bool written = [] {
    qwen3::RandomModelOptions o;
    o.seed = kSeed;
    qwen3::write_random_model(dir.path.string(), qwen3::named_config("tiny"), o);
    return true;
  }();
  (void)written;
  static const std::string path = dir.path.string();
  return path;
}

// Prefill of the prompt (logits at every position) then greedy decode steps; the logits of
// each step's new position are kept.
struct Run {
  std::vector<double> prefill;             // [L * vocab]
  std::vector<std::vector<double>> steps;  // the last position's logits, per step
  std::vector<int> tokens;                 // greedy tokens (one per step)
  std::vector<qwen3::KVCache> cache;
};

Run run_greedy(const qwen3::Model& model, const std::vector<int>& prompt, int steps) {
  Run r;
  r.cache = model.make_cache(static_cast<int>(prompt.size()) + steps);
  mx::array tokens(prompt.begin(), {1, static_cast<int>(prompt.size())}, mx::int32);
  for (int s = 0; s < steps; ++s) {
    auto logits = mx::astype(model(tokens, r.cache), mx::float32);
    const int L = logits.shape(1), V = logits.shape(2);
    auto last = mx::reshape(mx::slice(logits, {0, L - 1, 0}, {1, L, V}), {V});
    auto token = mx::argmax(last);
    std::vector<mx::array> outs{logits, token};
    for (auto& c : r.cache) {
      outs.push_back(c.keys);
      outs.push_back(c.values);
    }
    mx::eval(outs);
    if (s == 0) {
      r.prefill = to_doubles(logits);
    }
    r.steps.push_back(to_doubles(last));
    r.tokens.push_back(static_cast<int>(token.item<uint32_t>()));
    tokens = mx::array({r.tokens.back()}, {1, 1}, mx::int32);
  }
  return r;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    m = std::max(m, std::abs(a[i] - b[i]));
  }
  return m;
}

double max_abs(const std::vector<double>& a) {
  double m = 0;
  for (double v : a) {
    m = std::max(m, std::abs(v));
  }
  return m;
}

// Top-1 minus top-2 logit: how far the greedy choice is from a tie.
double top2_margin(std::vector<double> v) {
  std::partial_sort(v.begin(), v.begin() + 2, v.end(), std::greater<double>());
  return v[0] - v[1];
}

struct DefaultDevice {
  mx::Device saved = mx::default_device();
  explicit DefaultDevice(mx::Device d) {
    mx::set_default_device(d);
  }
  ~DefaultDevice() {
    mx::set_default_device(saved);
  }
};

}  // namespace

TEST_CASE("qwen3 config.json round-trips the named configs and rejects bad ones") {
  for (const char* name : {"tiny", "qwen3-0.6b", "qwen3-8b", "qwen3-32b"}) {
    auto c = qwen3::named_config(name);
    auto back = qwen3::parse_config(qwen3::config_to_json(c));
    CHECK(back.hidden_size == c.hidden_size);
    CHECK(back.num_hidden_layers == c.num_hidden_layers);
    CHECK(back.intermediate_size == c.intermediate_size);
    CHECK(back.num_attention_heads == c.num_attention_heads);
    CHECK(back.num_key_value_heads == c.num_key_value_heads);
    CHECK(back.head_dim == c.head_dim);
    CHECK(back.vocab_size == c.vocab_size);
    CHECK(back.rope_theta == c.rope_theta);
    CHECK(back.rms_norm_eps == c.rms_norm_eps);
    CHECK(back.tie_word_embeddings == c.tie_word_embeddings);
    CHECK(back.max_position_embeddings == c.max_position_embeddings);
    CHECK(back.quantized);
    CHECK(back.quantization.group_size == 64);
    CHECK(back.quantization.bits == 4);
  }
  auto c06 = qwen3::named_config("qwen3-0.6b");
  CHECK(c06.hidden_size == 1024);
  CHECK(c06.vocab_size == 151936);
  auto c8 = qwen3::named_config("qwen3-8b");
  CHECK(c8.hidden_size == 4096);
  CHECK(c8.num_hidden_layers == 36);
  CHECK(c8.num_attention_heads * c8.head_dim == c8.hidden_size);
  CHECK_FALSE(c8.tie_word_embeddings);
  auto c32 = qwen3::named_config("qwen3-32b");
  CHECK(c32.num_attention_heads / c32.num_key_value_heads == 8);
  CHECK(c32.num_hidden_layers == 64);
  CHECK_THROWS_WITH_AS(qwen3::parse_config(R"({"hidden_size": 8})"),
                       doctest::Contains("missing field \"num_hidden_layers\""),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(qwen3::named_config("qwen9"), doctest::Contains("unknown config 'qwen9'"),
                       std::invalid_argument);
  // A per-layer override (MLX's mixed quantization) is read.
  auto mixed = qwen3::parse_config(
      R"({"hidden_size": 64, "num_hidden_layers": 1, "intermediate_size": 64,
          "num_attention_heads": 2, "vocab_size": 64,
          "quantization": {"group_size": 64, "bits": 4,
                           "model.layers.0.mlp.down_proj": {"group_size": 32, "bits": 8}}})");
  CHECK(mixed.quantization_for("model.layers.0.mlp.down_proj").bits == 8);
  CHECK(mixed.quantization_for("model.layers.0.mlp.up_proj").bits == 4);
}

TEST_CASE("qwen3 loader names a missing or misshapen tensor") {
  auto config = qwen3::load_config(tiny_dir());
  auto weights = qwen3::load_weights(tiny_dir());
  CHECK(weights.at("model.embed_tokens.weight").dtype() == mx::uint32);
  CHECK(weights.at("model.embed_tokens.scales").dtype() == mx::bfloat16);
  CHECK(weights.at("model.embed_tokens.biases").dtype() == mx::bfloat16);
  CHECK(weights.count("lm_head.weight") == 0);  // tied

  auto missing = weights;
  missing.erase("model.layers.1.mlp.up_proj.scales");
  CHECK_THROWS_WITH_AS(qwen3::Model(config, missing, "tinydir"),
                       "[qwen3] missing tensor 'model.layers.1.mlp.up_proj.scales' in tinydir",
                       std::invalid_argument);

  auto bad = weights;
  bad.insert_or_assign("model.norm.weight", mx::ones({7}, mx::bfloat16));
  CHECK_THROWS_WITH_AS(qwen3::Model(config, bad, "tinydir"),
                       doctest::Contains("'model.norm.weight' has shape (7), expected (128)"),
                       std::invalid_argument);

  TempDir empty("empty");
  CHECK_THROWS_WITH_AS(qwen3::load_weights(empty.path.string()),
                       doctest::Contains("neither model.safetensors nor"), std::runtime_error);
}

TEST_CASE("qwen3 sharded model directory loads the same tensors as one file") {
  TempDir sharded("sharded");
  qwen3::RandomModelOptions o;
  o.seed = kSeed;
  o.max_shard_bytes = 64 << 10;
  qwen3::write_random_model(sharded.path.string(), qwen3::named_config("tiny"), o);
  CHECK(fs::exists(sharded.path / "model.safetensors.index.json"));
  CHECK(!fs::exists(sharded.path / "model.safetensors"));
  int shards = 0;
  for (const auto& entry : fs::directory_iterator(sharded.path)) {
    auto name = entry.path().filename().string();
    shards += name.rfind("model-0000", 0) == 0 && name.find("-of-0000") != std::string::npos;
  }
  CHECK(shards >= 3);  // ~210 KB of tensors in 64 KB shards

  auto one = qwen3::load_weights(tiny_dir());
  auto many = qwen3::load_weights(sharded.path.string());
  REQUIRE(one.size() == many.size());
  for (const auto& [name, a] : one) {
    REQUIRE_MESSAGE(many.count(name), name);
    CHECK_MESSAGE(mx::array_equal(a, many.at(name)).item<bool>(), name);
  }
}

// The cache after prefill + decode steps, and the last step's logits, equal one prefill of
// the whole sequence: the in-place slice_update at an array start and the causal offset are
// right. Both runs are on one device in f32, so only summation order (the prefill's
// attention sees more rows per tile) separates them.
TEST_CASE("qwen3 KV cache after decode steps equals a full recomputation (f32)") {
  for (auto device : mlx_test::test_devices()) {
    CAPTURE(device);
    DefaultDevice guard(device);
    auto model = qwen3::load_model(tiny_dir(), {mx::float32});
    auto run = run_greedy(model, kPrompt, kSteps);
    auto full_prompt = kPrompt;
    full_prompt.insert(full_prompt.end(), run.tokens.begin(), run.tokens.end() - 1);
    auto cache = model.make_cache(static_cast<int>(full_prompt.size()));
    mx::array tokens(full_prompt.begin(), {1, static_cast<int>(full_prompt.size())}, mx::int32);
    auto logits = mx::astype(model(tokens, cache, true), mx::float32);
    auto last = to_doubles(logits);
    const double tol = 1e-4 * std::max(1.0, max_abs(last));
    CHECK_MESSAGE(max_abs_diff(run.steps.back(), last) <= tol,
                  "max |diff| " << max_abs_diff(run.steps.back(), last));
    const int n = static_cast<int>(full_prompt.size());
    for (size_t i = 0; i < cache.size(); ++i) {
      CAPTURE(i);
      REQUIRE(run.cache[i].offset == n);
      auto shape = cache[i].keys.shape();
      auto k_inc = to_doubles(mx::slice(run.cache[i].keys, {0, 0, 0, 0}, shape));
      auto v_inc = to_doubles(mx::slice(run.cache[i].values, {0, 0, 0, 0}, shape));
      CHECK(max_abs_diff(k_inc, to_doubles(cache[i].keys)) <= 1e-4);
      CHECK(max_abs_diff(v_inc, to_doubles(cache[i].values)) <= 1e-4);
    }
  }
}

// GPU against the CPU reference. Both devices read the same bf16/4-bit weights; in f32
// (LoadOptions{float32}: scales, biases and norms cast exactly) every op computes in f32 on
// both, so the logits differ only by summation order and the last-ulp differences of
// exp/rsqrt/sin/cos: each op contributes ~1e-6 relative, and the tiny model chains ~25 of
// them, so at most ~2.5e-5 of the largest logit; the bound is 5e-5 (lavapipe shows 4e-7). In bf16
// (the model's own dtype, MLX's default) each op's output is rounded to 8 bits of mantissa
// and a CPU/GPU difference of 1 bf16 ulp (2^-8 relative) can propagate through both layers:
// 0.05 of the largest logit. Greedy tokens must match where the CPU's top-2 margin exceeds
// the bound (checked, so the comparison is never vacuous).
TEST_CASE("qwen3 GPU logits and greedy tokens match the CPU for the tiny model") {
  if (!mx::gpu::is_available()) {
    MESSAGE("no GPU device: skipped");
    return;
  }
  struct Case {
    std::optional<mx::Dtype> dtype;
    double rel_tol;
    std::string label;
  };
  for (const auto& c : {Case{mx::float32, 5e-5, "f32"}, Case{std::nullopt, 5e-2, "bf16"}}) {
    CAPTURE(c.label);
    Run cpu, gpu;
    {
      DefaultDevice guard(mx::Device::cpu);
      cpu = run_greedy(qwen3::load_model(tiny_dir(), {c.dtype}), kPrompt, kSteps);
    }
    {
      DefaultDevice guard(mx::Device::gpu);
      gpu = run_greedy(qwen3::load_model(tiny_dir(), {c.dtype}), kPrompt, kSteps);
    }
    for (double v : cpu.prefill) {
      REQUIRE(std::isfinite(v));
    }
    const double tol = c.rel_tol * max_abs(cpu.prefill);
    MESSAGE(c.label << ": prefill max |logit| " << max_abs(cpu.prefill) << ", GPU-CPU max |diff| "
                    << max_abs_diff(gpu.prefill, cpu.prefill) << " (bound " << tol << ")");
    CHECK(max_abs_diff(gpu.prefill, cpu.prefill) <= tol);
    if (c.dtype) {
      // In f32 the free-running decode must agree step for step.
      CHECK(gpu.tokens == cpu.tokens);
      for (int s = 0; s < kSteps && gpu.tokens[s] == cpu.tokens[s]; ++s) {
        CAPTURE(s);
        CHECK(max_abs_diff(gpu.steps[s], cpu.steps[s]) <= tol);
        CHECK_MESSAGE(top2_margin(cpu.steps[s]) > 2 * tol,
                      "the CPU's top-2 margin " << top2_margin(cpu.steps[s])
                                                << " is within the tolerance: a tie");
      }
    } else {
      // In bf16 the first token (from the prefill) must agree where it is not a near tie.
      if (top2_margin(cpu.steps[0]) > 2 * tol) {
        CHECK(gpu.tokens[0] == cpu.tokens[0]);
      }
    }
  }
}

// The caches are written in place (their buffers never move) on every device, and on the GPU
// decode steps after the second build no kernel: the position is data, not a key.
TEST_CASE("qwen3 decode steps update the KV cache in place and reuse their kernels") {
  for (auto device : mlx_test::test_devices()) {
    CAPTURE(device);
    DefaultDevice guard(device);
    auto model = qwen3::load_model(tiny_dir());
    auto cache = model.make_cache(static_cast<int>(kPrompt.size()) + 8);
    mx::array tokens(kPrompt.begin(), {1, static_cast<int>(kPrompt.size())}, mx::int32);
    std::vector<const void*> buffers;
    size_t builds = 0;
    for (int s = 0; s < 8; ++s) {
      CAPTURE(s);
      auto token = mx::astype(mx::argmax(model(tokens, cache, true), -1), mx::int32);
      std::vector<mx::array> outs{token};
      for (auto& c : cache) {
        outs.push_back(c.keys);
        outs.push_back(c.values);
      }
      mx::eval(outs);
      std::vector<const void*> now;
      for (auto& c : cache) {
        now.push_back(c.keys.data<void>());
        now.push_back(c.values.data<void>());
      }
      if (s > 0) {
        CHECK(now == buffers);
      }
      buffers = now;
#ifdef MLX_VULKAN
      if (device == mx::Device::gpu) {
        size_t b = mx::vulkan::kernel_library().builds();
        if (s > 2) {
          CHECK_MESSAGE(b == builds, "decode step " << s << " built a kernel");
        }
        builds = b;
      }
#endif
      tokens = mx::reshape(token, {1, 1});
    }
    (void)builds;
  }
}

TEST_CASE("qwen3 sampling: greedy, top-k 1, tiny top-p and seeded temperature") {
  DefaultDevice guard(mx::Device::cpu);
  auto model = qwen3::load_model(tiny_dir());
  qwen3::GenerateOptions o;
  o.max_tokens = 6;
  auto greedy = qwen3::generate(model, kPrompt, o);
  CHECK(greedy.size() == 6);
  o.sampler.temperature = 0.8f;
  o.sampler.top_k = 1;
  CHECK(qwen3::generate(model, kPrompt, o) == greedy);
  o.sampler.top_k = 0;
  o.sampler.top_p = 1e-6f;
  CHECK(qwen3::generate(model, kPrompt, o) == greedy);
  o.sampler.top_p = 1.0f;
  o.sampler.temperature = 5.0f;
  o.sampler.seed = 9;
  auto a = qwen3::generate(model, kPrompt, o);
  CHECK(qwen3::generate(model, kPrompt, o) == a);  // same seed, same tokens
  for (int t : a) {
    CHECK(t >= 0);
    CHECK(t < 512);
  }
  int stopped = 0;
  o.on_token = [&](int) { return ++stopped < 3; };
  CHECK(qwen3::generate(model, kPrompt, o).size() == 3);
}

// A cache made too small grows by steps of 256 positions and gives the tokens of one made
// large enough.
TEST_CASE("qwen3 KV cache grows past its capacity") {
  DefaultDevice guard(mx::Device::cpu);
  auto model = qwen3::load_model(tiny_dir(), {mx::float32});
  qwen3::GenerateOptions o;
  o.max_tokens = 6;
  auto want = qwen3::generate(model, kPrompt, o);
  o.cache_capacity = 3;  // smaller than the prompt
  CHECK(qwen3::generate(model, kPrompt, o) == want);
  auto cache = model.make_cache(2);
  mx::array tokens(kPrompt.begin(), {1, static_cast<int>(kPrompt.size())}, mx::int32);
  model(tokens, cache, true);
  CHECK(cache[0].keys.shape(2) == 258);
  CHECK(cache[0].offset == static_cast<int>(kPrompt.size()));
}

// A prompt prefilled in chunks fills the cache as one pass does: the same greedy tokens (f32,
// so no near ties from rounding), for chunks that divide the prompt and chunks that do not.
TEST_CASE("qwen3 chunked prefill generates what one prefill does") {
  for (auto device : mlx_test::test_devices()) {
    CAPTURE(device);
    DefaultDevice guard(device);
    auto model = qwen3::load_model(tiny_dir(), {mx::float32});
    qwen3::GenerateOptions o;
    o.max_tokens = 6;
    o.prefill_step = 0;
    auto whole = qwen3::generate(model, kPrompt, o);
    for (int step : {1, 4, 5, static_cast<int>(kPrompt.size())}) {
      CAPTURE(step);
      o.prefill_step = step;
      CHECK(qwen3::generate(model, kPrompt, o) == whole);
    }
  }
}

// Steps scheduled ahead change when the device gets work, not what it computes: the same
// tokens greedy and seeded, exactly max_tokens of them, and a stop after any token.
TEST_CASE("qwen3 generate gives the same tokens whatever the steps scheduled ahead") {
  for (auto device : mlx_test::test_devices()) {
    CAPTURE(device);
    DefaultDevice guard(device);
    auto model = qwen3::load_model(tiny_dir(), {mx::float32});
    qwen3::GenerateOptions o;
    o.max_tokens = 7;
    o.steps_ahead = 1;
    auto greedy = qwen3::generate(model, kPrompt, o);
    REQUIRE(greedy.size() == 7);
    o.sampler.temperature = 5.0f;
    o.sampler.seed = 3;
    auto seeded = qwen3::generate(model, kPrompt, o);
    for (int ahead : {2, 3, 10}) {
      CAPTURE(ahead);
      o.steps_ahead = ahead;
      o.sampler.temperature = 0.0f;
      CHECK(qwen3::generate(model, kPrompt, o) == greedy);
      o.sampler.temperature = 5.0f;
      CHECK(qwen3::generate(model, kPrompt, o) == seeded);
      int seen = 0;
      o.on_token = [&](int) { return ++seen < 2; };
      auto stopped = qwen3::generate(model, kPrompt, o);
      CHECK(stopped == std::vector<int>(seeded.begin(), seeded.begin() + 2));
      o.on_token = nullptr;
    }
    o.max_tokens = 1;  // the prefill's token alone: nothing scheduled ahead
    o.sampler.temperature = 0.0f;
    CHECK(qwen3::generate(model, kPrompt, o) == std::vector<int>{greedy[0]});
  }
}
