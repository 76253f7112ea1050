// Looking ahead in the tape an eval runs (gpu::begin_tape): the quantized products on it,
// in order, so that one product's launch can bring the next one's weights into L2
// (templates/include/prefetch.glsl, docs/matmul.md "Weights brought into L2").
//
// MLX_VK_PREFETCH_WEIGHTS: "auto" (default: on for discrete GPUs, where it was measured,
// for products of >= 1 MiB of weights), "on" (every product) or "off".
#pragma once

#include <cstdint>
#include <optional>

#include "mlx/array.h"

namespace mlx::core {
class Primitive;
}

namespace mlx::core::vulkan {

// Whether launches bring the next product's weights into L2 on this device.
bool prefetch_weights_enabled();
// The weights a product must read itself (w's bytes) to carry a prefetch: smaller ones end
// before the prefetch's reads would. 1 MiB in "auto", 0 when forced or set "on".
uint64_t prefetch_min_product_bytes();
// Tests: forces prefetching on or off for this process (nullopt: the environment's choice).
// Takes effect at the next eval.
void force_prefetch_weights(std::optional<bool> on);

// Launches that carried prefetch workgroups, process-wide (tests), and their counting.
uint64_t prefetch_launch_count();
void count_prefetch_launch();

// The quantized product that runs after the node whose primitive is `current` in the tape
// being run on this thread (its inputs 1..3 are the weights, scales and biases), or nullptr
// when there is none, no tape, or prefetch is off. Expects the products to ask in tape
// order (each call moves past `current`).
const array* next_quantized_product(const Primitive& current);

}  // namespace mlx::core::vulkan
