// Matrix products on the GPU, shared by Matmul and AddMM (and the quantized products'
// dense fallbacks): plans the operands' layout, picks gemv (M <= 8) or gemm, binds and
// records. docs/matmul.md.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "codegen/matmul.h"
#include "mlx/array.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/device.h"

namespace mlx::core::vulkan {

// Why the GPU cannot form out = a x b (an operand or the output wider than one storage
// binding, a dtype the kernels do not hold, a grid past the dispatch limits), or nullptr.
// The caller takes the logged CPU route then.
const char* matmul_unsupported(const array& a, const array& b, const array& out);

// out = alpha * a x b (+ beta * out when addmm: out already holds C, broadcast and dense).
// a: [..., M, K] and b: [..., K, N] broadcast to out's batch shape (strides may be 0),
// each read in place when one of its matrix dims is contiguous, else copied dense first.
// out must be allocated and row-contiguous.
void matmul_gpu(int stream, const array& a, const array& b, array& out, bool addmm, float alpha,
                float beta);

// Records the gemm family's launch for g (any m; the caller checked gemv does not apply)
// with bindings A, B, out: the planned tile, memoized.
void record_gemm(const Device& dev, CommandEncoder& enc, const char* dtype,
                 const codegen::MatmulGeometry& g, std::span<const Binding, 3> bindings);

// The tile of a gemm or qmm launch: codegen::gemm_tile for the device, unless
// MLX_VK_GEMM_TILE names a tile that can run the problem (for measurements, docs/matmul.md),
// or, with `tune` and the autotune on, the autotune's choice (autotune.h).
codegen::GemmTile planned_gemm_tile(const codegen::MatmulGeometry& g, const char* dtype,
                                    bool tune = false);
// Forces the tile MLX_VK_GEMM_TILE names (a GemmTile::name(); "" for the planned choice)
// from now on, for benches that compare tiles in one process. Not for concurrent use.
void set_forced_gemm_tile(const std::string& name);

// Elements from element 0 to the last one a product's operand holds (its binding's length):
// rows x cols with leading dimension ld (transposed: stored as columns), over `outer` x nb1
// batches with strides bs0 and bs1.
int64_t operand_span(int64_t rows, int64_t cols, bool transposed, int64_t ld, int64_t outer,
                     int64_t nb1, int64_t bs0, int64_t bs1);

// The launch-memo signature of a product's launch: every field of the geometry that its
// key and numbers depend on.
using MatmulSignature = std::array<int64_t, 24>;
MatmulSignature matmul_signature(const char* family, const char* dtype,
                                 const codegen::MatmulGeometry& g);

}  // namespace mlx::core::vulkan
