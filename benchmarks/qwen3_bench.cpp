// Qwen3 decode and prefill on the GPU (issue 16 item 8, docs/performance.md) on a random
// model of a named config (examples/qwen3; default qwen3-0.6b: 4-bit g64, bf16), made on the
// GPU in-process so nothing is read from disk.
//
// 1. The run's bandwidth peak (our copy and read kernels on 512 MiB int64 arrays).
// 2. Decode after prompts of 1, 512 and 4096 tokens (QWEN3_BENCH_CONTEXTS=1024,2048 sets
//    others), through qwen3::generate (greedy; two
//    steps scheduled ahead of the token read, generate's steps_ahead, QWEN3_BENCH_STEPS_AHEAD
//    to change it): wall time per token, GPU busy time
//    per token from per-dispatch timestamps (a separate run), the GPU's time inside and
//    between submitted batches from batch timestamps only (another run), dispatches /
//    barriers / submissions per token, and the bandwidth floor: (weight bytes + KV bytes
//    read) / peak.
// 3. Prefill of 512- and 4096-token prompts in one forward pass: tok/s
//    (QWEN3_BENCH_PREFILL=300,1000 sets other lengths), after warming the GPU's clocks
//    for QWEN3_BENCH_PREFILL_WARM_MS (300; 0 measures from idle clocks);
//    QWEN3_BENCH_PREFILL_KERNELS=1 prints each length's last run by kernel.
// 4. Host time of a decode step: graph building, recording, waiting, with the eval thread
//    (mlx/eval_worker.h) off and on.
// 5. The kernels of one decode step by GPU time (MLX_VK_PROFILE's table), after prompts of
//    QWEN3_BENCH_PROFILE_CONTEXTS tokens (default 1).
//
// Usage: qwen3_bench [config name, default qwen3-0.6b] [decode steps, default 64]
//        (QWEN3_BENCH_ONLY=decode,prefill,host,profile runs a subset; QWEN3_BENCH_HOST_STEPS
//        sets the host block's step count, 64, e.g. for a profiler; QWEN3_BENCH_LAYERS=n
//        keeps the config's first n layers)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_util.h"
#include "generate.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/host_profile.h"
#include "mlx/eval_worker.h"
#include "random_model.h"

namespace {

namespace mx = mlx::core;
using bench::now_ms;

struct Counts {
  size_t dispatches, barriers, submissions;
};

Counts counts() {
  auto s = mx::vulkan::encoder_stats();
  return {s.dispatches, s.barriers, s.submissions};
}

// Bytes of every weight tensor: a decode step reads each once (the tied embedding once more
// as the lm_head; its one gathered row is negligible).
double weight_bytes(const qwen3::Weights& w) {
  double total = 0;
  for (auto& [name, a] : w) {
    total += static_cast<double>(a.nbytes());
  }
  return total;
}

// Greedy decode as a user gets it: qwen3::generate after a prompt of `context` tokens (one
// for context 0), each step scheduled before the previous token is read. The rate and the
// counts span the tokens after the first (the first comes from the prefill).
struct DecodeRun {
  double ms_per_token;
  double gpu_busy_ms_per_token;  // 0 unless profiling
  double gpu_idle_ms_per_token;  // between the timed intervals
  Counts per_token;
};

DecodeRun run_decode(const qwen3::Model& model, int context, int steps) {
  std::vector<int> prompt(std::max(context, 1));
  for (size_t i = 0; i < prompt.size(); ++i) {
    prompt[i] = static_cast<int>((i * 7919 + 13) % model.config().vocab_size);
  }
  qwen3::GenerateOptions o;
  o.max_tokens = steps + 1;
  // QWEN3_BENCH_STEPS_AHEAD: decode steps scheduled ahead of the token read (generate's
  // steps_ahead, default 2; MLX-LM's loop is 1).
  if (const char* ahead = std::getenv("QWEN3_BENCH_STEPS_AHEAD")) {
    o.steps_ahead = std::atoi(ahead);
  }
  double t_first = 0, t_last = 0;
  Counts c_first{}, c_last{};
  int count = 0;
  o.on_token = [&](int) {
    t_last = now_ms();
    c_last = counts();
    if (count++ == 0) {
      t_first = t_last;
      c_first = c_last;
      mx::vulkan::reset_kernel_times();
    }
    return true;
  };
  qwen3::generate(model, prompt, o);
  mx::synchronize();
  double n = count - 1;
  return {(t_last - t_first) / n,
          mx::vulkan::gpu_busy_us() / 1000.0 / n,
          mx::vulkan::gpu_gaps().total_us / 1000.0 / n,
          {static_cast<size_t>((c_last.dispatches - c_first.dispatches) / n),
           static_cast<size_t>((c_last.barriers - c_first.barriers) / n),
           static_cast<size_t>((c_last.submissions - c_first.submissions) / n)}};
}

void prefill(const qwen3::Model& model, std::vector<qwen3::KVCache>& cache, int length) {
  std::vector<int> ids(length);
  for (int i = 0; i < length; ++i) {
    ids[i] = (i * 7919 + 13) % model.config().vocab_size;
  }
  auto logits = model(mx::array(ids.begin(), {1, length}, mx::int32), cache, true);
  std::vector<mx::array> outputs{logits};
  for (auto& c : cache) {
    outputs.push_back(c.keys);
    outputs.push_back(c.values);
  }
  mx::eval(outputs);
}

}  // namespace

int main(int argc, char** argv) {
  if (!mx::gpu::is_available()) {
    std::fprintf(stderr, "qwen3_bench: no Vulkan device found\n");
    return 1;
  }
  std::string name = argc > 1 ? argv[1] : "qwen3-0.6b";
  const int steps = argc > 2 ? std::stoi(argv[2]) : 64;
  mx::set_default_device(mx::Device::gpu);
  const auto& info = mx::gpu::device_info();
  std::printf("device: %s\nmodel: random %s\n",
              std::get<std::string>(info.at("device_name")).c_str(), name.c_str());

  auto config = qwen3::named_config(name);
  // QWEN3_BENCH_LAYERS=n: the config's first n layers only (a layer's kernels measured
  // without making every layer's weights; the floor and the rates follow the smaller model).
  if (const char* layers = std::getenv("QWEN3_BENCH_LAYERS"); layers && *layers) {
    config.num_hidden_layers = std::clamp(std::atoi(layers), 1, config.num_hidden_layers);
    std::printf("layers: %d (QWEN3_BENCH_LAYERS)\n", config.num_hidden_layers);
  }
  qwen3::RandomModelOptions ro;
  ro.device = mx::Device::gpu;
  double t0 = now_ms();
  auto weights = qwen3::random_weights(config, ro);
  qwen3::Model model(config, weights, "random " + name);
  const double wbytes = weight_bytes(weights);
  std::printf("weights: %.1f MiB, made on the GPU in %.0f ms\n", wbytes / (1 << 20), now_ms() - t0);

  mx::vulkan::set_profiling(true);
  double peak = 0;
  if (bench::wanted("QWEN3_BENCH_ONLY", "decode")) {  // only decode's floors need it
    // 512 MiB arrays (a peak needs buffers far larger than caches); 32 MiB for the tiny
    // model, which is for trying the benchmark on small devices such as lavapipe.
    int n = name == "tiny" ? 1 << 22 : 1 << 26;
    auto a = mx::astype(bench::gpu_uniform({n}, 1, mx::float32), mx::int64);
    auto b = mx::astype(bench::gpu_uniform({n}, 2, mx::float32), mx::int64);
    bench::warm_gpu(a, 300);
    peak = bench::measure_peak(a, b, 10, 5);
  }
  const double kv_bytes_per_position = 2.0 * config.num_hidden_layers * config.num_key_value_heads *
                                       config.head_dim * mx::size_of(model.dtype());

  if (bench::wanted("QWEN3_BENCH_ONLY", "decode")) {
    // Two profiled runs besides the timed one: per-kernel timestamps (GPU busy, inflated
    // by the timestamps themselves), and batch timestamps only (profile.h): the time the GPU
    // spent inside submitted command buffers per token, and the time it waited between them.
    std::printf(
        "\n| decode at context | tok/s (wall) | ms/token (wall) | GPU busy ms/token | floor ms "
        "(bytes/peak) | GPU busy / floor | dispatches/token | barriers/token | "
        "submissions/token | in batches ms/token | between batches ms/token | wall with batch "
        "timing ms/token | tok/s eval thread off "
        "|\n|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        "\n");
    // QWEN3_BENCH_CONTEXTS=1,1024 sets the contexts decoded after (default 0, 512, 4096;
    // the list takes counts from 1).
    std::vector<int> decode_contexts{0, 512, 4096};
    if (!bench::env_counts("QWEN3_BENCH_CONTEXTS", 32768, decode_contexts)) {
      return 1;
    }
    for (int context : decode_contexts) {
      mx::vulkan::set_profiling(false);
      // Kernels for this context class, and the clocks up, the host's too. With 8 warm-up
      // tokens the first timed run of a process sometimes ran at a third of the speed of
      // the runs after it (H100 runs 226 and 230: 335-344 tok/s against 920-950, with the
      // same GPU time per token). 64 did not remove every slow run (run 231: one of six
      // processes at 643 tok/s), so read the decode rows over several processes.
      run_decode(model, context, std::max(64, steps / 2));
      auto timed = run_decode(model, context, steps);
      // The same with async_eval recording on this thread (mlx/eval_worker.h), for scale.
      DecodeRun inline_run;
      {
        bench::EvalThreadOff off;
        inline_run = run_decode(model, context, steps);
      }
      mx::vulkan::set_batch_profiling(true);
      auto batches = run_decode(model, context, steps);
      mx::vulkan::set_batch_profiling(false);
      mx::vulkan::set_profiling(true);
      auto profiled = run_decode(model, context, steps / 2);
      double mid_context = context + steps / 2.0;
      double floor = (wbytes + kv_bytes_per_position * mid_context) / (peak * 1e9) * 1e3;
      std::printf(
          "| %d | %.1f | %.3f | %.3f | %.3f | %.2f | %zu | %zu | %zu | %.3f | %.3f | %.3f | %.1f "
          "|\n",
          context, 1e3 / timed.ms_per_token, timed.ms_per_token, profiled.gpu_busy_ms_per_token,
          floor, profiled.gpu_busy_ms_per_token / floor, timed.per_token.dispatches,
          timed.per_token.barriers, timed.per_token.submissions, batches.gpu_busy_ms_per_token,
          batches.gpu_idle_ms_per_token, batches.ms_per_token, 1e3 / inline_run.ms_per_token);
    }
  }

  if (bench::wanted("QWEN3_BENCH_ONLY", "prefill")) {
    std::printf("\n| prefill prompt | ms (wall) | tok/s | GPU busy ms |\n|---|---|---|---|\n");
    // QWEN3_BENCH_PREFILL=300,1000 sets the prompt lengths (a real prompt's is ragged).
    std::vector<int> lengths{512, 4096};
    if (!bench::env_counts("QWEN3_BENCH_PREFILL", 32768, lengths)) {
      return 1;
    }
    // Otherwise a process's first prefills start from idle clocks (H200: the 8B's first
    // 300-token prefill 47.3 ms cold against 45.0 warmed; docs/performance.md).
    const char* warm_env = std::getenv("QWEN3_BENCH_PREFILL_WARM_MS");
    const double warm_ms = warm_env ? std::atof(warm_env) : 300.0;
    if (warm_ms > 0) {
      bench::warm_gpu(bench::gpu_uniform({name == "tiny" ? 1 << 22 : 1 << 26}, 3, mx::float32),
                      warm_ms);
    }
    for (int length : lengths) {
      double best = 1e30, best_busy = 0;
      for (int r = 0; r < 4; ++r) {
        auto cache = model.make_cache(length + 8);
        mx::synchronize();
        mx::vulkan::reset_kernel_times();
        double w0 = now_ms();
        prefill(model, cache, length);
        mx::synchronize();
        double ms = now_ms() - w0;
        if (r > 0 && ms < best) {  // the first run builds this length's kernels
          best = ms;
          best_busy = mx::vulkan::gpu_busy_us() / 1000.0;
        }
      }
      std::printf("| %d | %.2f | %.0f | %.2f |\n", length, best, length / best * 1e3, best_busy);
      // QWEN3_BENCH_PREFILL_KERNELS=1: the last run's kernels, to compare processes whose
      // first prefill ran slow (docs/performance.md) with those that did not.
      if (std::getenv("QWEN3_BENCH_PREFILL_KERNELS")) {
        std::printf("%s", mx::vulkan::profile_report().c_str());
      }
    }
  }

  if (bench::wanted("QWEN3_BENCH_ONLY", "host")) {
    // Where a pipelined decode step's wall time goes on the host: building the graph
    // (model + argmax), async_eval, and waiting for the previous token (item), as generate()
    // interleaves them. First with the eval thread off, so that async_eval is the recording
    // and submission (and the per-primitive table below is theirs); then with it on, where
    // async_eval only queues the graph (mlx/eval_worker.h) and the recording overlaps the
    // next step's building.
    mx::vulkan::set_profiling(false);
    const bool thread_was = mx::detail::eval_thread_enabled();
    const char* steps_env = std::getenv("QWEN3_BENCH_HOST_STEPS");  // for profiling the host
    const int n = steps_env ? std::max(1, std::atoi(steps_env)) : 64;
    for (bool threaded : {false, true}) {
      mx::detail::set_eval_thread(threaded);
      auto cache = model.make_cache(256);
      auto step = [&](const mx::array& tokens, double& build, double& record) {
        double t0 = now_ms();
        auto logits = model(tokens, cache, true);
        auto token = mx::astype(mx::argmax(mx::reshape(logits, {1, -1}), -1), mx::int32);
        std::vector<mx::array> outputs{token};
        for (auto& c : cache) {
          outputs.push_back(c.keys);
          outputs.push_back(c.values);
        }
        double t1 = now_ms();
        mx::async_eval(outputs);
        build += t1 - t0;
        record += now_ms() - t1;
        return token;
      };
      double build = 0, record = 0, wait = 0;
      auto y = step(mx::array({1}, {1, 1}, mx::int32), build, record);
      bool host_profile_was = mx::vulkan::host_profiling_enabled();
      double start = 0;
      for (int i = 0; i < n + 8; ++i) {
        if (i == 8) {  // the first steps build kernels
          build = record = wait = 0;
          start = now_ms();
          mx::vulkan::reset_host_times();
          mx::vulkan::set_host_profiling(true);
        }
        auto next = step(mx::reshape(y, {1, 1}), build, record);
        double t0 = now_ms();
        y.item<int>();
        wait += now_ms() - t0;
        y = next;
      }
      double total = now_ms() - start;
      mx::vulkan::set_host_profiling(host_profile_was);
      y.eval();
      std::printf(
          "\nHost time per decode step at context ~8-72, eval thread %s (ms): total %.3f = "
          "build graph %.3f + async_eval %.3f + wait for the previous token %.3f\n",
          threaded ? "on" : "off", total / n, build / n, record / n, wait / n);
      if (!threaded) {
        // Where "async_eval" goes (mlx/backend/vulkan/host_profile.h): per primitive, for
        // all n steps; the rest of it is the graph walk.
        std::printf("\nHost time of the eval loop per primitive, %d steps (us):\n%s", n,
                    mx::vulkan::host_profile_report().c_str());
      } else {
        // The eval thread's own ops (the primitives' rows; "(...)" rows are parts of them).
        double us = 0;
        for (const auto& t : mx::vulkan::host_times()) {
          us += t.primitive.rfind('(', 0) == 0 ? 0.0 : t.total_us;
        }
        std::printf("Eval thread's ops per decode step: %.3f ms\n", us / 1e3 / n);
      }
    }
    mx::detail::set_eval_thread(thread_was);
  }

  if (bench::wanted("QWEN3_BENCH_ONLY", "profile")) {
    // QWEN3_BENCH_PROFILE_CONTEXTS=1,512,4096: the prompt lengths to profile after (1).
    std::vector<int> contexts{1};
    if (!bench::env_counts("QWEN3_BENCH_PROFILE_CONTEXTS", 32768, contexts)) {
      return 1;
    }
    // The clocks up first (alone, this block's first steps ran at idle clocks: an 8B step
    // took 8.9 ms at context 1 against 3.6 at 4096 after it).
    bench::warm_gpu(bench::gpu_uniform({name == "tiny" ? 1 << 22 : 1 << 26}, 4, mx::float32), 300);
    mx::vulkan::set_profiling(true);
    for (int context : contexts) {
      run_decode(model, context, 4);  // this context's kernels built, not timed
      auto run = run_decode(model, context, 16);
      std::printf("\nKernels of 16 decode steps at context %d (GPU busy %.1f us per step):\n%s\n",
                  context, run.gpu_busy_ms_per_token * 1e3, mx::vulkan::profile_report().c_str());
    }
  }
  return 0;
}
