// The bounded GEMM autotune (issue 12, item 5; docs/matmul.md), for gemm and qmm (a
// quantized B) launches: the first time a problem class meets a device, a few candidate
// tiles (codegen::gemm_tile_candidates) run on scratch operands of the problem's size and
// the fastest is kept, in memory and in the disk cache's tuning records for the device
// (cache/tuning.h), so a warm start never tunes again.
//
// Off by default until its choices have been measured on a GPU against the heuristic's:
// MLX_VK_AUTOTUNE=on turns it on (read once), set_autotune for tests. With it off, and for
// a tile forced by MLX_VK_GEMM_TILE, the heuristic's (or the forced) tile is used as before.
#pragma once

#include <cstdint>
#include <string>

#include "codegen/matmul.h"

namespace mlx::core::vulkan {

bool autotune_enabled();
void set_autotune(bool enabled);

// The problem class a tuning record is kept under: the family, dtype, the operands'
// transposes, the path (cooperative matrices, NV/KHR, or FMA), M, N and K rounded up to
// powers of four, batched or not, and the quantization's bits and group size.
std::string gemm_tuning_class(const char* family, const char* dtype,
                              const codegen::MatmulGeometry& g, const codegen::GemmTile& heuristic);

// The tile to use for a gemm launch of this geometry: the recorded choice for its class,
// else (tuning now) the fastest of the candidates timed on scratch operands, recorded. The
// timing runs on a private stream and waits for it; the caller's stream and its open batch
// are not touched. `heuristic` is codegen::gemm_tile's choice.
codegen::GemmTile autotuned_gemm_tile(const codegen::MatmulGeometry& g, const char* dtype,
                                      const codegen::GemmTile& heuristic);

// Problem classes tuned (timed) by this process, for tests.
int64_t autotune_count();
// Forgets the in-memory records (tests: the next lookup reads the disk again).
void forget_tuning_records();

}  // namespace mlx::core::vulkan
