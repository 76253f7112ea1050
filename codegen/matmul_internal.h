// Helpers the matrix-product families share across their files (codegen/matmul.cpp,
// codegen/qmv.cpp, codegen/qmv_coop.cpp); not part of the codegen contract.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "codegen/codegen.h"
#include "codegen/dtypes.h"
#include "codegen/matmul.h"

namespace mlx::core::vulkan::codegen {

// The push-constant fields every matrix-product template packs (matmul_params.glsl), each
// IDX_T, before a template's own extras.
inline constexpr uint32_t kFields = 15;

// The largest element index any invocation computes, with m, n and k rounded up to whole
// tiles of bm x bn x bk: whether the launch needs 64-bit indices.
bool geometry_idx64(const MatmulGeometry& g, int64_t bm, int64_t bn, int64_t bk);
int64_t ceil_div(int64_t a, int64_t b);
// A 0/1 key parameter as a bool (throws naming the key otherwise), and a bool as one.
bool flag(const KernelKey& key, const char* name, const std::string& where);
std::string bit(bool v);
uint32_t dtype_bits(const std::string& dtype);
// The lanes of a `bits`-wide dtype in 16 bytes when every listed value is a multiple of
// them, else 1.
uint32_t lanes_if_aligned(uint32_t bits, std::initializer_list<int64_t> values);
// Rows held in registers by the row kernels: m rounded up to a power of two.
uint32_t gemv_rows(int64_t m);
// std::invalid_argument for negative sizes or strides.
void check_geometry(const MatmulGeometry& g, const std::string& where);
// The key's dtype, which must be a float dtype.
const DtypeInfo& float_dtype(const KernelKey& key, const std::string& where);

}  // namespace mlx::core::vulkan::codegen
