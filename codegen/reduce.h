// The reduce family ("reduce", templates/reduce.glsl): sum, prod, max, min, and, or over a
// row-contiguous input, planned as rows or columns (docs/reduce.md). Like every family: a
// key, a render (a row of codegen::families()) and a launch packer; no arrays, no Vulkan.
#pragma once

#include <cstdint>
#include <string>

#include "codegen/codegen.h"

namespace mlx::core::vulkan::codegen {

// One reduce launch, in elements of a row-contiguous input.
//   rows:    `count` rows of `len` contiguous elements, each folded in `splits` slices
//            (splits > 1 writes count * splits partials for a second rows launch);
//   columns: an [outer, len, inner] input folded over len; count = outer * inner. With
//            splits > 1, len is cut into slices and the partials form an
//            [outer, splits, inner] array for a second columns launch.
// The key's "vec" (16-byte vector loads) follows from the dtype, in_offset and the shape.
struct ReduceGeometry {
  bool columns = false;
  int64_t count = 0;
  int64_t len = 0;
  int64_t inner = 1;   // columns only
  int64_t splits = 1;  // rows only
  uint64_t in_offset = 0;
  uint64_t out_offset = 0;
  uint64_t aux_offset = 0;  // arg_reduce split/finish: binding 2's element 0
};

// Slices per row for `rows` rows of `len`: enough workgroups to fill a GPU when there are
// few long rows (the all-reduce is one row), one slice otherwise. Never an empty slice.
int64_t reduce_splits(int64_t rows, int64_t len);

// Slices of the reduced axis for `count` columns of `len`: enough (column, slice)
// invocations to fill a GPU, 1 when the columns alone do.
int64_t reduce_column_splits(int64_t count, int64_t len);

// The dtype partials of `op` producing `out_dtype` are stored in between two launches: the
// accumulator's ("f32" for every float dtype, the dtype itself for integers, "b" for
// and/or).
std::string reduce_partial_dtype(const std::string& op, const std::string& out_dtype);

// "reduce:idx=32|64,in=<dtype>,mode=row|col,op=Sum|Prod|Max|Min|And|Or,out=<dtype>".
// in is the input's dtype; out the stored dtype (reduce_partial_dtype for a partial
// launch). Sum/Prod/Max/Min expect in == out or in == the partial dtype of out.
// With `sg` > 0 (the device has subgroup shuffles and the accumulator is 32-bit) the
// key gets "sg=<subgroup size>" and the rows tree runs in subgroup shuffles with one
// barrier instead of a shared-memory level per halving.
KernelKey reduce_key(const std::string& op, const std::string& in_dtype,
                     const std::string& out_dtype, const ReduceGeometry& g, const DeviceCaps& caps);

KernelSource render_reduce(const KernelKey& key, const DeviceCaps& caps);

// Push constants (in offset, out offset, len, count, inner or slice length, splits) and
// groups. Throws std::invalid_argument when the geometry does not match the key.
Launch reduce_launch(const KernelKey& key, const KernelSource& source, const ReduceGeometry& g);

// The row kernels built on the same plan (rows of a row-contiguous input, or columns of an
// [outer, len, inner] one), without slices: ReduceGeometry with splits == 1.
//
// "arg_reduce:idx=32|64,in=<dtype>,mode=row|col,op=ArgMax|ArgMin,[sg=<size>,]
// stage=one|split|finish,vec=<lanes>" (templates/arg_reduce.glsl; sg as reduce's: rows of
// a 32-bit compute type on a device with subgroup shuffles finish with a butterfly instead
// of a shared-memory tree): uint32 index of the first extreme, NaN
// counting as the extreme. Long rows that leave the GPU idle are split (reduce_splits):
// a Split launch (g.splits > 1) stores per slice the best index (binding 1) and its value
// in arg_reduce_value_dtype(in) (binding 2, g.aux_offset); a Finish launch over those
// (in = the value dtype, len = splits) reads the indices at binding 2 and stores the row's.
enum class ArgStage { One, Split, Finish };
std::string arg_reduce_value_dtype(const std::string& in_dtype);
KernelKey arg_reduce_key(const std::string& op, const std::string& in_dtype,
                         const ReduceGeometry& g, ArgStage stage, const DeviceCaps& caps);
KernelSource render_arg_reduce(const KernelKey& key, const DeviceCaps& caps);
Launch arg_reduce_launch(const KernelKey& key, const KernelSource& source, const ReduceGeometry& g);

}  // namespace mlx::core::vulkan::codegen
