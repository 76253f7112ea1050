// The matrix-product families: "gemm" (templates/gemm.glsl: tiled, any M) and "gemv"
// (templates/gemv.glsl: M <= 8, bound by reading B once). Keys, tile choice, rendering and
// launch packing; no arrays, no Vulkan. docs/matmul.md explains the choices.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "codegen/codegen.h"

namespace mlx::core::vulkan::codegen {

// out[z] = alpha * A[z] x B[z] (+ beta * out[z]) for z < batches, A: m x k, B: k x n.
// Offsets are element indices within each operand's binding; strides are elements.
// a_t: A's m dimension is the contiguous one (A[i, j] at j * lda + i), else k is
// (i * lda + j). b_t: B's k dimension is contiguous (B[i, j] at j * ldb + i), else n is.
// The batch index z splits into (z / nb1, z % nb1), with strides bs0, bs1 for each.
struct MatmulGeometry {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t batches = 1;
  uint64_t a_offset = 0;
  uint64_t b_offset = 0;
  uint64_t out_offset = 0;
  int64_t lda = 0;
  int64_t ldb = 0;
  bool a_t = false;
  bool b_t = false;
  // With a_t: each of A's k rows may be read up to m rounded up to 8 (its rows are padded
  // to lda, a multiple of 8, as gemm_relayout.cpp's copy of x is), so a ragged m still
  // takes the cooperative-matrix tiles. The padding's values reach only output rows >= m,
  // which are not stored.
  bool a_padded = false;
  int64_t nb1 = 1;
  int64_t a_bs0 = 0;
  int64_t a_bs1 = 0;
  int64_t b_bs0 = 0;
  int64_t b_bs1 = 0;
  bool addmm = false;  // out already holds C: out = alpha * A x B + beta * out
  float alpha = 1.0f;
  float beta = 0.0f;
  // Quantized B (qmm, qmv; docs/quantization.md): B is MLX's packed uint32 matrix W, with
  // b_t for transpose=true (W is n x k) and ldb, b_offset, b_bs* in words; the scales
  // and biases are dense, one per group_size values of each row of W.
  int bits = 0;
  int group_size = 0;
  uint64_t scales_offset = 0;
  uint64_t biases_offset = 0;
  // qmv only: rms_norm(A's rows, norm_w, eps) applied on the fly (the product of an
  // rms_norm's output, mlx/fusion.h); norm_w holds k elements of A's dtype.
  bool prenorm = false;
  float eps = 0.0f;
  uint64_t norm_w_offset = 0;
  // qmv only: out = residual + the product, rounded once (an add that took the product
  // over, mlx/fusion.h); the residual is dense, of out's shape and dtype.
  bool residual = false;
  uint64_t residual_offset = 0;
  // qmv only: out = silu(P[:, :n/2]) * P[:, n/2:] of the product P (n columns, even), each
  // node rounded to the dtype as a compiled SwiGLU rounds them (mlx/fusion.h); out has n/2
  // columns.
  bool glu = false;
  // qmv only: the launch also brings the next product's weights into L2
  // (templates/include/prefetch.glsl; its regions are set per launch by add_prefetch).
  // Taken where qmv_prefetch_fits.
  bool prefetch = false;
};

// A GEMM tile: BM x BN outputs per workgroup, BK steps of k per shared-memory stage, TM x TN
// outputs per invocation (so the workgroup has (BM / TM) * (BN / TN) invocations).
struct GemmTile {
  int bm, bn, bk, tm, tn;
  // The f16 cooperative-matrix kernel (templates/gemm_coop.glsl): tm x tn is then each
  // subgroup's part of the tile (a multiple of 16 x 16), not each invocation's.
  bool coop = false;
  // The cooperative-matrix kernel on VK_KHR_cooperative_matrix (the NV module rewritten,
  // codegen/coop_rewrite.h): f16, or bf16 where the device multiplies bf16.
  bool khr = false;
  // "128x128x16x8x8", "coopnv128x128x32w64x32" or "coopkhr128x128x32w64x32": the key's form
  std::string name() const;
};

// Whether gemm_coop.glsl can read the operands: f16 rows that start on 16 bytes and
// contiguous extents that are multiples of 8 values (not quantized).
bool coop_aligned(const MatmulGeometry& g);

// The heuristic tile for a problem on a device: the largest tile that still gives enough
// workgroups to fill the device, among those its workgroup and shared-memory limits allow.
// A product whose operands are coop_aligned takes a cooperative-matrix tile where the device
// multiplies its dtype (f16 on VK_NV_cooperative_matrix first, else f16 or bf16 on the KHR
// extension), the larger one when it still fills the device.
GemmTile gemm_tile(const MatmulGeometry& g, const DeviceCaps& caps, const std::string& dtype = "");

// The autotune's candidates for a problem (mlx/backend/vulkan/autotune.h): gemm_tile's
// choice first, then the other tiles of the same kind (cooperative-matrix tiles with the
// same path, or the FMA tiles) that can run it, at most max_count in all.
std::vector<GemmTile> gemm_tile_candidates(const MatmulGeometry& g, const DeviceCaps& caps,
                                           const std::string& dtype, size_t max_count);

// A tile from its name (GemmTile::name()); std::invalid_argument if malformed.
GemmTile parse_gemm_tile(const std::string& name);
// Whether a tile can run the problem on the device (its limits, and for a cooperative-matrix
// tile f16 and coop_aligned operands): MLX_VK_GEMM_TILE's check (docs/matmul.md).
bool gemm_tile_usable(const GemmTile& t, const MatmulGeometry& g, const DeviceCaps& caps,
                      const std::string& dtype);

// "gemm:a_t=0|1,addmm=0|1,b_t=0|1,dtype=f16|bf16|f32,edge=0|1,idx=32|64,tile=BMxBNxBKxTMxTN".
// edge 0 when m, n, k are multiples of the tile (no bounds checks).
KernelKey gemm_key(const std::string& dtype, const MatmulGeometry& g, const GemmTile& tile);
KernelSource render_gemm(const KernelKey& key, const DeviceCaps& caps);
Launch gemm_launch(const KernelKey& key, const KernelSource& source, const MatmulGeometry& g);

// "qmm:bits=2..8,dtype,edge=0|1,gs=32|64|128,idx=32|64,tile=...,trans=0|1": the gemm
// template reading B from the quantized format (any m; a_t must be false).
KernelKey qmm_key(const std::string& dtype, const MatmulGeometry& g, const GemmTile& tile);
KernelSource render_qmm(const KernelKey& key, const DeviceCaps& caps);
Launch qmm_launch(const KernelKey& key, const KernelSource& source, const MatmulGeometry& g);

// Whether the qmvc family (templates/qmv_coop.glsl: 1 to 16 rows on cooperative matrices)
// can run the quantized product: transpose=true, k a multiple of 64, x's rows on 16 bytes,
// f16 (NV or KHR) or bf16 (KHR) on 32-lane subgroups, no absorbed ops. Preferred to qmv
// where it applies (docs/matmul.md).
bool qmvc_applies(const std::string& dtype, const MatmulGeometry& g, const DeviceCaps& caps);
// Whether qmvc is the faster choice where it applies (by rows: qmv wins for few; dq=magic
// moves the line down).
bool qmvc_preferred(const std::string& dtype, const MatmulGeometry& g, const DeviceCaps& caps);
// "qmvc:bits,dq=magic|convert,dtype=f16|bf16,frag=n8|n16,gs,idx=32|64,kc=64,path=nv|khr,
// rows=8|16,sg=8,wvec=0|1". dq=magic (W's values as exact offset integers, scales and biases
// applied in f32) where the accumulators have NVIDIA's layout, for 4 bits, groups of >= 64,
// and at most 8 rows (any rows for bf16 and for f16 with W's rows on 16 bytes); rows=8
// stages 8 rows of x. frag=n8: f16 dq=magic fragments built in registers as 16 x 8 products
// (x's rows as B), where the device multiplies 16x8x16.
KernelKey qmvc_key(const std::string& dtype, const MatmulGeometry& g, const DeviceCaps& caps);
KernelSource render_qmvc(const KernelKey& key, const DeviceCaps& caps);
Launch qmvc_launch(const KernelKey& key, const KernelSource& source, const MatmulGeometry& g);

// Whether the qmv family can run the quantized product: m <= 8, transpose=true (b_t).
bool qmv_applies(const MatmulGeometry& g);
// Whether qmv can also apply g's rms_norm (g.prenorm) and residual (g.residual): qmv
// applies, 32-bit indices (the extra push constants then fit 128 bytes), and a norm
// weight aligned to x's vectors. value_bits: the width of x's dtype (16 or 32).
bool qmv_fusion_fits(uint32_t value_bits, const MatmulGeometry& g, const DeviceCaps& caps);
// Whether a qmv launch of g can carry prefetch workgroups (g.prefetch): one batch and
// 32-bit indices (the regions' push constants are 32-bit).
bool qmv_prefetch_fits(const MatmulGeometry& g);
// "qmv:bits,dot=f32|f16|i8,dtype,glu=0|1,gs,idx,ks=1|2|4,mr=1|2|4|8,nc=1|2|4,norm=0|1,
// pf=0|1,res=0|1,sg=0|1,stream=0|1,tpr=N,u=1|2|4,vec=1|4|8,wvec=0|1,xpacks=N" (glu: g.glu,
// nc 2 or 4; norm: g.prenorm, res: g.residual, pf: g.prefetch; u: packs in flight per lane
// and column, at most 4 / nc and what a lane has; nc: columns per team, sharing each lane's
// x values; ks: parts of a column group; dot: the sums (i8: x staged as bytes, xpacks the
// row's packs, stream 1 a step at a time)).
KernelKey qmv_key(const std::string& dtype, const MatmulGeometry& g, const DeviceCaps& caps);
KernelSource render_qmv(const KernelKey& key, const DeviceCaps& caps);
// With pf 1 the launch's prefetch regions are empty and it has no prefetch workgroups:
// add_prefetch fills both in per launch.
Launch qmv_launch(const KernelKey& key, const KernelSource& source, const MatmulGeometry& g);

// A region of a buffer to bring into L2: its first 32-bit word in the binding, and bytes.
struct PrefetchRegion {
  uint64_t first_word = 0;
  uint64_t bytes = 0;
};
// At most this many bytes are brought in per launch, the regions cut in order: an lm_head's
// 80 MB would take longer than the product beside it and evict what was brought for it.
constexpr uint64_t kPrefetchBytes = uint64_t{4} << 20;
// Completes a pf 1 launch for `regions` (at most 3; the rest empty): writes the regions
// into `push` (a copy of launch.push_constants, same size) and returns the group counts
// with the prefetch workgroups after the launch's own. workgroup_size: the kernel's.
std::array<uint32_t, 3> add_prefetch(const Launch& launch, uint32_t workgroup_size,
                                     std::span<const PrefetchRegion> regions,
                                     std::span<uint8_t> push);

// Whether the gemv family can run the problem: m <= 8, no addmm and alpha 1, k contiguous
// in A, B not quantized.
bool gemv_applies(const MatmulGeometry& g);

// Workgroups along k for the axpy shape (B_T 0), 1 for the dot shape: enough workgroups
// to fill the device even when n is small. More than 1 needs an f32 scratch buffer of
// batches * splits * m * n elements and a finishing launch (gemv_finish_key).
int64_t gemv_splits(const MatmulGeometry& g, const std::string& dtype);

// "gemv:b_t=0|1,dtype,idx=32|64,mr=1|2|4|8,sg=0|1,split=0|1,stage=main,tpr=N,vec=1|4|8".
// The finishing launch of a split axpy: "gemv:dtype,idx,stage=finish".
KernelKey gemv_key(const std::string& dtype, const MatmulGeometry& g, const DeviceCaps& caps);
KernelKey gemv_finish_key(const std::string& dtype, const MatmulGeometry& g);
KernelSource render_gemv(const KernelKey& key, const DeviceCaps& caps);
// For the finish stage, g.out_offset locates the output and g.a_offset the partial sums.
Launch gemv_launch(const KernelKey& key, const KernelSource& source, const MatmulGeometry& g);

}  // namespace mlx::core::vulkan::codegen
