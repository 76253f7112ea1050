// The capabilities of an NVIDIA-like device (32-lane subgroups with shuffles, 16-bit
// storage, 48 KB of shared memory) for the codegen tests of the matrix-product families;
// cooperative-matrix paths as asked. And the quantized products' usual geometry.
#pragma once

#include "codegen/codegen.h"
#include "codegen/matmul.h"

namespace mlx_test {

inline mlx::core::vulkan::codegen::DeviceCaps nvidia_like(bool coop_nv, bool coop_khr = false,
                                                          bool coop_bf16 = false) {
  mlx::core::vulkan::codegen::DeviceCaps caps;
  caps.subgroup_size = 32;
  caps.subgroup_shuffle = true;
  caps.shader_float16 = true;
  caps.shader_int16 = true;
  caps.shader_int64 = true;
  caps.storage_16bit = true;
  caps.cooperative_matrix = coop_nv;
  caps.cooperative_matrix_khr = coop_khr;
  caps.cooperative_matrix_bf16 = coop_bf16;
  caps.max_workgroup_invocations = 1024;
  caps.max_shared_memory = 49152;
  return caps;
}

// x [m, k] times `bits`-bit weights [n, k] in groups of `gs`, read as W^T (transpose = true).
inline mlx::core::vulkan::codegen::MatmulGeometry quant_rows(int64_t m, int64_t n, int64_t k,
                                                             int bits = 4, int gs = 64) {
  mlx::core::vulkan::codegen::MatmulGeometry g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.lda = k;
  g.b_t = true;
  g.ldb = k * bits / 32;
  g.bits = bits;
  g.group_size = gs;
  return g;
}

}  // namespace mlx_test
