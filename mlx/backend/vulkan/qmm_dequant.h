// Large quantized products as two launches: the weights dequantized into a scratch buffer
// of the stream, then the f16 / bf16 GEMM on them (its cooperative-matrix tiles). Past the
// qmvc blocks' 64 rows that beats the qmm tiles, which dequantize inside their loop: on an
// H200 the qmm loop's loads and dequantization cost it 40% against the same loop on dense
// operands, and its ragged rows cost it up to 2x more (docs/matmul.md, "Prefill's products:
// dequantize, then multiply" and "Dequantized from 65 rows").
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "codegen/matmul.h"
#include "codegen/quantize.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/device.h"

namespace mlx::core::vulkan {

// Records a "quant" launch (op "dequantize" or "quantize"; the float side's dtype) through
// the launch memo: a decode step dequantizes its token's embedding row every step. Here
// because the path below is its second user (Dequantize and AffineQuantize the first).
void record_quant(CommandEncoder& enc, const char* op, const char* dtype,
                  const codegen::QuantGeometry& g, std::span<const Binding> bindings);

// Whether QuantizedMatmul's product g (2-d weights, nothing absorbed) dequantizes first:
// at least kQmmDequantRows rows (MLX_VK_QMM_DEQUANT_ROWS), a GEMM on cooperative matrices
// for the dtype, and dequantized weights of at most kQmmDequantBytes that fit one binding.
// MLX_VK_QMM_DEQUANT=on takes it wherever the scratch fits, off never.
bool qmm_dequantizes(const Device& dev, const char* dtype, const codegen::MatmulGeometry& g);

// Records it: W (with its scales and biases, g's offsets into their bindings) into the
// stream's scratch, then the GEMM of x and the scratch into out. A weight stored as rows
// of k values (a Linear layer's, transpose) is dequantized into its transpose where its n
// is a multiple of 8, so that the GEMM reads k rows of n; x of many rows is copied into
// k rows of m as well (gemm_relayout.h).
void record_qmm_dequantized(const Device& dev, CommandEncoder& enc, const char* dtype,
                            const codegen::MatmulGeometry& g, const Binding& x, const Binding& w,
                            const Binding& scales, const Binding& biases, const Binding& out);

// Rows from which a product dequantizes first: past the 16-row qmvc blocks' 64
// (kQmvcBlockedRows in quantized.cpp). From 65 to 255 rows the qmm tiles took 1.2-2x its
// time on an H200 (ragged rows worst: 4-bit [80,14336] x [4096,14336]^T 467.6 against 248.7
// us f16; docs/matmul.md, "Dequantized from 65 rows"). And the most scratch a stream keeps
// for it (Qwen3-8B's largest weight, gate/up, is 192 MiB as bf16; an lm_head of 151936 x
// 4096 is not kept, it keeps the qmm tiles).
constexpr int64_t kQmmDequantRows = 65;
constexpr int64_t kQmmDequantBytes = int64_t{256} << 20;

// Tests: forces the path on (wherever the scratch fits) or off for this process (nullopt:
// the environment's choice), and the weights' transpose with it, and counts the products
// that took it.
void force_qmm_dequant(std::optional<bool> on, std::optional<bool> transpose = std::nullopt);
uint64_t qmm_dequant_count();
// Of those, the ones whose weights were dequantized into their transpose.
uint64_t qmm_dequant_transposed_count();

}  // namespace mlx::core::vulkan
