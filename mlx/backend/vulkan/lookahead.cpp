// gpu::begin_tape / end_tape and the quantized products ahead (lookahead.h).
#include "mlx/backend/vulkan/lookahead.h"

#include <atomic>
#include <typeinfo>
#include <utility>
#include <vector>

#include "mlx/backend/gpu/eval.h"
#include "mlx/backend/vulkan/device.h"
#include "mlx/backend/vulkan/utils.h"
#include "mlx/primitives.h"

namespace mlx::core {

namespace vulkan {

namespace {

// Per thread: the eval thread and the caller's thread each run their own tapes.
struct Ahead {
  const std::vector<array>* tape = nullptr;
  // (primitive, tape index) of each GPU quantized product, in tape order.
  std::vector<std::pair<const Primitive*, size_t>> products;
  size_t cursor = 0;
};
thread_local Ahead ahead;

std::atomic<int> forced{-1};  // -1: the environment's choice
std::atomic<uint64_t> prefetch_launches{0};

}  // namespace

void force_prefetch_weights(std::optional<bool> on) {
  forced = on ? int(*on) : -1;
}

uint64_t prefetch_launch_count() {
  return prefetch_launches.load();
}

void count_prefetch_launch() {
  prefetch_launches.fetch_add(1, std::memory_order_relaxed);
}

namespace {

enum class Mode { off, on, auto_ };

Mode mode() {
  if (int f = forced.load(); f >= 0) {
    return f == 1 ? Mode::on : Mode::off;
  }
  static const Mode env = [] {
    std::string m = env_string("MLX_VK_PREFETCH_WEIGHTS", "auto");
    if (m == "on" || m == "1") {
      return Mode::on;
    }
    if (m == "off" || m == "0") {
      return Mode::off;
    }
    const Device* dev = device_or_null();
    return dev != nullptr && dev->is_discrete() ? Mode::auto_ : Mode::off;
  }();
  return env;
}

}  // namespace

bool prefetch_weights_enabled() {
  return mode() != Mode::off;
}

uint64_t prefetch_min_product_bytes() {
  // A product of 0.5 MiB of weights is over before its prefetch workgroups' DRAM round trip:
  // a chain of [1,1024] x [1024,1024]^T 4-bit links went 4.8 -> 5.4 us a link with them,
  // [1,2048] x [2048,2048]^T (2 MiB) 6.5 -> 6.2 (H100, matmul_bench's chain, run 249).
  return mode() == Mode::auto_ ? (uint64_t{1} << 20) : 0;
}

const array* next_quantized_product(const Primitive& current) {
  auto& a = ahead;
  // Nodes may share a primitive (a compiled function's calls share its traced ones), and a
  // product that did not ask leaves its entry behind the cursor: a match whose successor
  // has already run (run_tape moved it out, id 0) is an earlier node's, not this one's.
  // Every node still on the tape runs after the current one.
  for (size_t j = a.cursor; j + 1 < a.products.size(); ++j) {
    if (a.products[j].first != &current) {
      continue;
    }
    const array& next = (*a.tape)[a.products[j + 1].second];
    if (next.id() == 0) {
      continue;
    }
    a.cursor = j + 1;
    return next.has_primitive() && next.inputs().size() >= 4 ? &next : nullptr;
  }
  return nullptr;
}

}  // namespace vulkan

namespace gpu {

void begin_tape(const std::vector<array>& tape) {
  auto& a = vulkan::ahead;
  a.tape = nullptr;
  a.products.clear();
  a.cursor = 0;
  for (size_t i = 0; i < tape.size(); ++i) {
    const array& node = tape[i];
    if (node.has_primitive() && node.primitive().stream().device == Device::gpu &&
        typeid(node.primitive()) == typeid(QuantizedMatmul)) {
      a.products.emplace_back(&node.primitive(), i);
    }
  }
  // Two products at least, and only then the device's answer (a CPU-only eval never
  // creates the device).
  if (a.products.size() < 2 || !vulkan::prefetch_weights_enabled()) {
    a.products.clear();
    return;
  }
  a.tape = &tape;
}

void end_tape() {
  auto& a = vulkan::ahead;
  a.tape = nullptr;
  a.products.clear();
  a.cursor = 0;
}

}  // namespace gpu

}  // namespace mlx::core
