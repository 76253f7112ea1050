// Helpers the matrix-product families share across their files (codegen/matmul.cpp,
// codegen/qmv_coop.cpp); not part of the codegen contract.
#pragma once

#include <cstdint>
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
// std::invalid_argument for negative sizes or strides.
void check_geometry(const MatmulGeometry& g, const std::string& where);
// The key's dtype, which must be a float dtype.
const DtypeInfo& float_dtype(const KernelKey& key, const std::string& where);

}  // namespace mlx::core::vulkan::codegen
