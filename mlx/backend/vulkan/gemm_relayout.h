// Operands copied into the layout the cooperative-matrix GEMM reads fastest before a large
// product: A as k rows of m (its rows padded to 8) and B as k rows of n. On an H200 the
// f16 4096^3 product takes 519-527 us so (TN), 564-575 with A as rows of k (NN, x as
// stored) and 659-667 with B as rows of k too (NT, a Linear layer's weight): an operand
// whose rows run along k gives each step 32 bytes a row (docs/matmul.md, "What the
// operands' layouts cost the coop GEMM" and "Operands copied into the GEMM's layout").
#pragma once

#include <cstdint>
#include <optional>

#include "codegen/matmul.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/device.h"

namespace mlx::core::vulkan {

// Rows from which a product's A (rows of k) is copied into k rows of m: TN beat NN by 7-10%
// from 1024 rows on every bf16 MLP shape measured, and tied at 512
// (MLX_VK_GEMM_RELAYOUT_ROWS; 0 never).
constexpr int64_t kRelayoutRows = 1024;

// And the least N and K for it: the GEMM's gain is a share of its time (M N K), the copy
// costs M K, and TN's gain was measured on K of 4096 and more. Qwen3-0.6B's products (K of
// 1024 to 3072) took longer with it from N of 2048 or 4096 (MLX_VK_GEMM_RELAYOUT_NK).
constexpr int64_t kRelayoutNK = 4096;

// The largest copy made: each is a temporary of its batch, so it adds to the peak memory of
// a prefill (an 8B's largest x, [4096, 12288] bf16, is 96 MiB; a dense lm_head's weight of
// 151936 x 4096 would be 1.2 GiB, and stays in place).
constexpr int64_t kRelayoutBytes = int64_t{256} << 20;

// Whether g's A is copied into its transpose: not batched, A stored as rows of k, at least
// kRelayoutRows rows, N and K of at least kRelayoutNK, the copy within one binding and
// kRelayoutBytes, and the product on cooperative matrices (the FMA tiles read both layouts
// alike; a forced threshold skips this test).
bool relayout_a(const Device& dev, const codegen::MatmulGeometry& g, const char* dtype);

// Records A (g's a_offset in binding a) into a temporary of k rows of m padded to a
// multiple of 8 and turns g into the product that reads it there (a_t, a_padded). Returns
// the product's binding of the copy.
Binding record_a_relayout(const Device& dev, CommandEncoder& enc, const char* dtype,
                          codegen::MatmulGeometry& g, const Binding& a);

// Rows from which a product's B stored as rows of k (b_t, n a multiple of 8) is copied into
// k rows of n. Its copy costs the same at any M while the GEMM's gain grows with M
// (MLX_VK_GEMM_RELAYOUT_B_ROWS; 0 never).
constexpr int64_t kRelayoutBRows = 1024;

// Whether g's B is copied into k rows of n (not batched, from kRelayoutBRows rows, n a
// multiple of 8, and the binding, size and cooperative-matrix tests above), and records that copy
// (a temporary), turning g into the product that reads it (b_t false). Returns the product's
// binding of the copy.
bool relayout_b(const Device& dev, const codegen::MatmulGeometry& g, const char* dtype);
Binding record_b_relayout(const Device& dev, CommandEncoder& enc, const char* dtype,
                          codegen::MatmulGeometry& g, const Binding& b);

// Tests: A copied from `rows` rows (at any N) and B from `b_rows` (0 never; nullopt: the
// environment's choice), and the products whose A or B was.
void force_relayout_rows(std::optional<int64_t> rows, std::optional<int64_t> b_rows = std::nullopt);
uint64_t relayout_a_count();
uint64_t relayout_b_count();

}  // namespace mlx::core::vulkan
