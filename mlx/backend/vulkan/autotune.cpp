// The bounded GEMM autotune (autotune.h).
#include "mlx/backend/vulkan/autotune.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>

#include "cache/config.h"
#include "cache/hash.h"
#include "cache/tuning.h"
#include "mlx/allocator.h"
#include "mlx/backend/vulkan/allocator.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/device.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/matmul.h"
#include "mlx/backend/vulkan/reduce_plan.h"
#include "mlx/backend/vulkan/utils.h"

namespace mlx::core::vulkan {

namespace {

// At most this many tiles are timed for a class, each in one warm-up and one timed
// submission of kReps dispatches.
constexpr size_t kMaxCandidates = 4;
constexpr int kReps = 3;
// The tuning runs' stream index: no MLX stream has it.
constexpr int kTuningStream = 1 << 20;
// Scratch operands above this are not worth a tuning (they would double the product's
// memory for a moment): such a class keeps the heuristic's tile.
constexpr int64_t kMaxScratchBytes = int64_t{256} << 20;

std::atomic<bool>& flag() {
  static std::atomic<bool> on{env_string("MLX_VK_AUTOTUNE", "off") == "on"};
  return on;
}

std::atomic<int64_t> tuned_count{0};

struct Records {
  std::mutex mutex;
  bool loaded = false;
  std::map<std::string, std::string> choice;
};

Records& records() {
  static Records r;
  return r;
}

// Up to the next power of four: classes stay few, and tiles change their fit slowly.
int64_t bucket(int64_t x) {
  int64_t b = 1;
  while (b < x) {
    b *= 4;
  }
  return b;
}

std::optional<std::string> recorded(const std::string& cls) {
  auto& r = records();
  std::lock_guard lock(r.mutex);
  if (!r.loaded) {
    auto config = cache::config_from_env();
    if (config.mode != cache::CacheMode::Off) {
      const auto& fp = device("autotune").caps().fingerprint;
      r.choice = cache::read_tuning(config.dir, cache::fingerprint_hash(fp));
    }
    r.loaded = true;
  }
  auto it = r.choice.find(cls);
  if (it == r.choice.end()) {
    return std::nullopt;
  }
  return it->second;
}

void record(const std::string& cls, const std::string& tile) {
  auto& r = records();
  std::lock_guard lock(r.mutex);
  r.choice[cls] = tile;
  auto config = cache::config_from_env();
  if (config.mode == cache::CacheMode::ReadWrite) {
    const auto& fp = device("autotune").caps().fingerprint;
    if (auto err = cache::store_tuning(config.dir, fp, cls, tile)) {
      std::fprintf(stderr, "[vulkan] autotune: not storing the record for %s: %s\n", cls.c_str(),
                   err->c_str());
    }
  }
}

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

bool autotune_enabled() {
  return flag().load(std::memory_order_relaxed);
}

void set_autotune(bool enabled) {
  flag().store(enabled);
}

int64_t autotune_count() {
  return tuned_count.load();
}

void forget_tuning_records() {
  auto& r = records();
  std::lock_guard lock(r.mutex);
  r.loaded = false;
  r.choice.clear();
}

std::string gemm_tuning_class(const char* family, const char* dtype,
                              const codegen::MatmulGeometry& g,
                              const codegen::GemmTile& heuristic) {
  std::string path = heuristic.coop ? (heuristic.khr ? "khr" : "nv") : "fma";
  std::string cls = std::string(family) + ":" + dtype + ",a_t=" + (g.a_t ? "1" : "0") +
                    ",b_t=" + (g.b_t ? "1" : "0") + ",path=" + path +
                    ",m=" + std::to_string(bucket(g.m)) + ",n=" + std::to_string(bucket(g.n)) +
                    ",k=" + std::to_string(bucket(g.k)) + ",batched=" + (g.batches > 1 ? "1" : "0");
  if (g.bits > 0) {
    cls += ",bits=" + std::to_string(g.bits) + ",gs=" + std::to_string(g.group_size);
  }
  return cls;
}

codegen::GemmTile autotuned_gemm_tile(const codegen::MatmulGeometry& g, const char* dtype,
                                      const codegen::GemmTile& heuristic) {
  auto& dev = device("autotune");
  const bool quant = g.bits > 0;  // qmm: B is packed words with scales and biases
  std::string cls = gemm_tuning_class(quant ? "qmm" : "gemm", dtype, g, heuristic);
  if (auto name = recorded(cls)) {
    try {
      auto t = codegen::parse_gemm_tile(*name);
      if (codegen::gemm_tile_usable(t, g, dev.caps(), dtype)) {
        return t;
      }
    } catch (const std::invalid_argument&) {
      // A damaged record is a miss: tune again below.
    }
  }
  auto candidates = codegen::gemm_tile_candidates(g, dev.caps(), dtype, kMaxCandidates);
  // The scratch operands, in binding order: elements and item size of each. A and the
  // output are of the dtype; B is the dtype, or for qmm words (b_* count words) followed
  // by scales and biases, one per group_size values of B's words.
  int64_t isz = std::string(dtype) == "f32" ? 4 : 2;  // the gemm dtypes: f32, f16, bf16
  int64_t outer = g.batches / g.nb1;
  struct Operand {
    int64_t elems, itemsize;
    bool output;
    const char* dtype;
  };
  std::vector<Operand> operands;
  operands.push_back(
      {operand_span(g.m, g.k, g.a_t, g.lda, outer, g.nb1, g.a_bs0, g.a_bs1), isz, false, dtype});
  if (quant) {
    int64_t rows = g.b_t ? g.n : g.k;
    int64_t words = rows * g.ldb + (outer - 1) * g.b_bs0 + (g.nb1 - 1) * g.b_bs1;
    int64_t groups = words * 32 / g.bits / std::max(g.group_size, 1) + 1;
    operands.push_back({words, 4, false, "u32"});
    operands.push_back({groups, isz, false, dtype});
    operands.push_back({groups, isz, false, dtype});
  } else {
    operands.push_back(
        {operand_span(g.k, g.n, g.b_t, g.ldb, outer, g.nb1, g.b_bs0, g.b_bs1), isz, false, dtype});
  }
  operands.push_back({g.batches * g.m * g.n, isz, true, dtype});
  int64_t bytes = 0;
  for (const auto& o : operands) {
    bytes += o.elems * o.itemsize;
  }
  // Nothing to time (an empty product, or one with nothing to sum), or scratch operands
  // that would cost more memory than the tuning is worth: the heuristic's tile, recorded.
  if (candidates.size() < 2 || g.m <= 0 || g.n <= 0 || g.k <= 0 || bytes > kMaxScratchBytes) {
    record(cls, heuristic.name());
    return heuristic;
  }
  // Scratch operands of the problem's size (their values do not matter for timing), at
  // offset 0; addmm reads the scratch output, which is as good as any C.
  codegen::MatmulGeometry s = g;
  s.a_offset = s.b_offset = s.out_offset = s.scales_offset = s.biases_offset = 0;
  std::vector<allocator::Buffer> scratch;
  std::vector<Binding> bindings;
  for (const auto& o : operands) {
    scratch.push_back(
        allocator::malloc(static_cast<size_t>(std::max<int64_t>(o.elems, 1) * o.itemsize)));
    Buf b{allocation(scratch.back()), 0, o.dtype, o.itemsize};
    bindings.push_back(bind_run(dev, b, o.elems, o.output).binding);
  }
  // A stream of its own: the caller's open batch (and the temporaries it holds) is left
  // alone, and the timings see only the candidates.
  create_encoder(kTuningStream);
  CommandEncoder& enc = encoder(kTuningStream);
  codegen::GemmTile best = heuristic;
  double best_ms = 1e30, start_ms = now_ms(), heuristic_ms = 0;
  std::string timings;  // for MLX_VK_LOG_AUTOTUNE=1
  for (const auto& t : candidates) {
    auto key = quant ? codegen::qmm_key(dtype, s, t) : codegen::gemm_key(dtype, s, t);
    const Kernel* kernel = get_kernel_or_drop_coop(key, t.coop);
    if (kernel == nullptr) {
      continue;  // cooperative matrices were just turned off: only FMA tiles remain
    }
    auto launch = quant ? codegen::qmm_launch(key, kernel->source, s)
                        : codegen::gemm_launch(key, kernel->source, s);
    record_launch(enc, *kernel, launch, bindings);  // warm-up: first-dispatch costs, clocks
    enc.synchronize();
    double t0 = now_ms();
    for (int r = 0; r < kReps; ++r) {
      record_launch(enc, *kernel, launch, bindings);
    }
    enc.synchronize();
    double ms = (now_ms() - t0) / kReps;
    char line[96];
    std::snprintf(line, sizeof(line), " %s %.3f", t.name().c_str(), ms);
    timings += line;
    if (t.name() == heuristic.name()) {
      heuristic_ms = ms;
    }
    if (ms < best_ms) {
      best_ms = ms;
      best = t;
    }
  }
  for (auto& b : scratch) {
    allocator::free(b);
  }
  ++tuned_count;
  record(cls, best.name());
  static const bool log = env_string("MLX_VK_LOG_AUTOTUNE", "0") == "1";
  if (log) {
    // What the first use cost (pipeline builds included) and what it gained.
    std::fprintf(stderr,
                 "[vulkan] autotune %s: tuned in %.1f ms; ms per product:%s; kept %s (%.3f ms, "
                 "heuristic %s %.3f ms)\n",
                 cls.c_str(), now_ms() - start_ms, timings.c_str(), best.name().c_str(), best_ms,
                 heuristic.name().c_str(), heuristic_ms);
  }
  return best;
}

}  // namespace mlx::core::vulkan
