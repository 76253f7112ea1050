// The "gather" and "scatter" families (templates/gather.glsl, templates/scatter.glsl): reads
// and writes at positions held in index arrays, for take, take_along_axis, gather,
// slice with an array start (gather), and scatter, put_along_axis, scatter_add_axis and
// slice_update with an array start (scatter). Keys, rendering and launch packing; no arrays,
// no Vulkan. docs/indexing.md describes the semantics and the kernels.
//
// Index values are read by the kernel, never by the host, so a key never depends on them: a
// decode loop indexing at a moving position reuses one kernel and one planned launch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/codegen.h"

namespace mlx::core::vulkan::codegen {

// One index array (or one entry of a start array) and the axis it indexes: its position 0
// in the index binding (elements), the axis's stride in the indexed operand (elements), its
// size (a negative index adds it) and the largest valid start, size - window extent.
// Bounds mode "fill": an index outside [0, limit] after wrapping is out of range (a gather
// writes zero, a scatter drops the update); mode "clamp": it is clamped into [0, limit].
struct IndexAxis {
  int64_t idx_offset = 0;
  int64_t stride = 0;
  int64_t size = 0;
  int64_t limit = 0;
};

// A gather launch: the output is row-contiguous over `shape` and its element at coordinate
// c reads the source element
//   sum_d c[d] * src_strides[d] + sum_k v_k * axes[k].stride,
//   v_k = index at axes[k].idx_offset + sum_d c[d] * idx_strides[d] (resolved by the mode).
// Element offsets are relative to the source's element 0, which sits at src_offset in its
// binding (negative when the binding starts past it: a window of a wide source).
struct GatherGeometry {
  std::vector<int64_t> shape;
  std::vector<int64_t> src_strides;
  std::vector<int64_t> idx_strides;
  std::vector<IndexAxis> axes;
  int itemsize = 4;  // bytes per element
  int64_t src_offset = 0;
  uint64_t out_offset = 0;
  // The elements of the source view relative to element 0: [src_lo, src_hi].
  int64_t src_lo = 0, src_hi = 0;
  // This launch reads only source elements in [win_lo, win_hi); others are another launch's.
  // `fill`: this launch writes the zeros of out-of-range indices (exactly one launch does).
  int64_t win_lo = 0, win_hi = 0;
  bool fill = true;
};

// Layout "rows" when the innermost dim is a run of the source (stride 1, one index
// position): one workgroup per row copying `unit`-byte vectors (16, 8 or 4: the widest that
// divides the row, every stride and offset); else "elem": one invocation per element.
// "gather:idx=32|64,index=<dtype>,layout=elem|rows,mode=fill|clamp,unit=<bytes>".
KernelKey gather_key(const std::string& index_dtype, bool clamp, const GatherGeometry& g);
KernelSource render_gather(const KernelKey& key, const DeviceCaps& caps);
Launch gather_launch(const KernelKey& key, const KernelSource& source, const GatherGeometry& g);

// Dims of a scatter's update window: extents, and strides in the output, the updates and
// (outer dims only) the index binding.
struct ScatterDims {
  std::vector<int64_t> shape;
  std::vector<int64_t> out_strides;
  std::vector<int64_t> upd_strides;
  std::vector<int64_t> idx_strides;  // outer dims only
};

// A scatter launch: update element (i, p, q), i < n an index position, p a coordinate over
// the `outer` window dims (not indexed), q over the `inner` ones (indexed axes), lands at
//   sum_k v_k * axes[k].stride + <p, outer.out_strides> + <q, inner.out_strides>
// with v_k the index at axes[k].idx_offset + i * idx_mul_i + <p, outer.idx_strides>, and is
// read at upd_offset + i * upd_mul_i + <p, outer.upd_strides> + <q, inner.upd_strides>.
// Output offsets are relative to out_offset in the output binding.
struct ScatterGeometry {
  int64_t n = 0;
  ScatterDims outer, inner;
  std::vector<IndexAxis> axes;
  int64_t idx_mul_i = 0, upd_mul_i = 0;
  uint64_t upd_offset = 0, out_offset = 0;
  // Largest element offsets the kernel forms in each binding (for the index width).
  uint64_t out_reach = 0, upd_reach = 0, idx_reach = 0;
};

// How updates are applied (codegen picks; docs/indexing.md):
//   "each"   one invocation per update, plain read-modify-write: only when no two updates
//            can meet (n == 1);
//   "seq"    one invocation per outer coordinate p, looping over i then q in order, so
//            duplicates combine in index order exactly as on the CPU;
//   "atomic" one invocation per update with an atomic read-modify-write of the element's
//            32-bit word: for reductions of 8/16/32-bit dtypes when the outer dims are too
//            few to fill the GPU and the loops too long (e.g. a histogram's scatter_add).
std::string scatter_mode(const std::string& op, const std::string& dtype, const ScatterGeometry& g);

// "scatter:dtype=<dtype>,idx=32|64,index=<dtype>,mode=each|seq|atomic,bounds=fill|clamp,
// op=None|Sum|Prod|Max|Min".
KernelKey scatter_key(const std::string& op, const std::string& dtype,
                      const std::string& index_dtype, bool clamp, const ScatterGeometry& g);
KernelSource render_scatter(const KernelKey& key, const DeviceCaps& caps);
Launch scatter_launch(const KernelKey& key, const KernelSource& source, const ScatterGeometry& g);

}  // namespace mlx::core::vulkan::codegen
