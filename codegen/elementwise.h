// Elementwise kernel families ("unary", "binary", "select", "copy"): how a launch is
// classified into a key and how its numbers are packed. Keeping this beside the templates
// means the GLSL parameter layout and the code that fills it live in one place; the runtime
// only binds buffers, pushes bytes and dispatches.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/codegen.h"

namespace mlx::core::vulkan::codegen {

// The geometry of one elementwise launch, in elements. The output is row-contiguous with
// `shape`; each input is a strided view broadcast to `shape` (stride 0 on broadcast dims).
// The caller collapses contiguous dims first (backend/common/utils.h).
struct ElementwiseGeometry {
  std::vector<int64_t> shape;                    // output shape (collapsed), may be empty (0-d)
  std::vector<std::vector<int64_t>> in_strides;  // one stride vector per input
  std::vector<uint64_t> in_offsets;              // element offset of each input in its binding
  uint64_t out_offset = 0;                       // element offset of the output in its binding
  // Every binding starts at a multiple of this many bytes. The vector path needs 32 (its
  // widest vector); the Vulkan runtime binds at 32, and the default keeps kernels scalar.
  uint32_t binding_alignment = 1;
  uint64_t size() const;
};

// Dtype names used in keys: "b" (bool), "u8", "u16", "u32", "u64", "i8", "i16", "i32",
// "i64", "f16", "bf16", "f32".
//
// family: "unary" (op = a UnaryOp name, e.g. "Exp"), "binary" (a BinaryOp name, e.g. "Add"),
// "select" (op "Select"; inputs: bool condition, x, y), "copy" (op "Copy"; converts in -> out
// dtype, covering astype/copy/contiguous).
//
// plan_elementwise is the planning step: it picks the kernel variant a launch needs and
// returns that variant's key. Today one choice exists: a copy whose input is contiguous
// along the output's second-to-last dim (a transpose) gets the tiled "transpose" kernel
// (codegen/transpose.h); everything else gets elementwise_key's strided kernel. The
// variant is visible in the key's family.
KernelKey plan_elementwise(const std::string& family, const std::string& op,
                           const std::vector<std::string>& in_dtypes, const std::string& out_dtype,
                           const ElementwiseGeometry& geometry);

// The strided elementwise kernel's key (no variant choice). Picks the layout class from the
// geometry: per input 's' (a single element), 'c' (contiguous like the output) or 'g'
// (strided), the strided rank class "1", "2", "3" or "n" (only when some input is 'g'), and
// 32- or 64-bit indexing (64 when any index or offset can exceed 2^31-1). Adds "vec"
// (elements per vector step: 16 bytes of the widest dtype, at least 4 bytes of the
// narrowest) when every operand can be read as whole vectors: bindings 32-byte aligned,
// contiguous operands and the output starting at a multiple of vec, and each strided input
// having an inner extent that is a multiple of vec and an inner stride of 0 or 1 (1: offset
// and strides multiples of vec too).
KernelKey elementwise_key(const std::string& family, const std::string& op,
                          const std::vector<std::string>& in_dtypes, const std::string& out_dtype,
                          const ElementwiseGeometry& geometry);

// Packs the push constants / meta buffer for a key (of any variant plan_elementwise returns)
// rendered into `source`, and computes the dispatch size (splitting large launches over y/z
// so no dimension exceeds device limits).
Launch elementwise_launch(const KernelKey& key, const KernelSource& source,
                          const ElementwiseGeometry& geometry);

// A transposed copy into rows of out_ld elements, for the GEMM's operands copied into k
// rows (A's padded so that each starts on 16 bytes; mlx/backend/vulkan/gemm_relayout.cpp):
//   out[out_offset + r * out_ld + c] = in[in_offset + r + c * col_stride], r < rows, c < cols.
// Elements cols..out_ld-1 of each output row are left unwritten. The tiled "transpose"
// kernel; its key is a transpose key (idx from this geometry's reach; pairs=1 where one
// 16-bit dtype moves two elements a word).
struct PaddedTranspose {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t col_stride = 0;  // the input's stride along c (along r it is 1)
  int64_t out_ld = 0;      // >= cols
  uint64_t in_offset = 0;
  uint64_t out_offset = 0;
};
KernelKey padded_transpose_key(const std::string& in_dtype, const std::string& out_dtype,
                               const PaddedTranspose& t);
// Throws std::invalid_argument for an empty geometry, out_ld < cols, or more tiles than a
// dispatch takes.
Launch padded_transpose_launch(const KernelKey& key, const KernelSource& source,
                               const PaddedTranspose& t);

// The op names a family supports ("Abs", ...; "Select"; "Copy"), for tests and prewarming.
std::vector<std::string> elementwise_ops(const std::string& family);

}  // namespace mlx::core::vulkan::codegen
