// The fast:: kernel families: "norm" (templates/norm.glsl: rms_norm, layer_norm and
// softmax over rows) and "rope" (templates/rope.glsl). Keys, rendering and launch packing; no
// arrays, no Vulkan. docs/fast.md explains the shapes and the numbers.
#pragma once

#include <cstdint>
#include <string>

#include "codegen/codegen.h"

namespace mlx::core::vulkan::codegen {

// `count` rows of `len` contiguous elements; offsets are element indices within each
// operand's binding. A weight (bias) stride of 0 reads one element for the whole row.
struct NormGeometry {
  int64_t count = 0;
  int64_t len = 0;
  uint64_t in_offset = 0;
  uint64_t w_offset = 0;
  uint64_t b_offset = 0;
  uint64_t out_offset = 0;
  int64_t w_stride = 1;
  int64_t b_stride = 1;
  float eps = 0.0f;
};

// "norm:dtype=f16|bf16|f32,idx=32|64,op=rms|layer|softmax,sg=0|1,vec=1|4|8". vec: the
// dtype's lanes in 16 bytes when every row of x and the output starts at a multiple of them; sg 1
// when the device has subgroup shuffles. softmax binds no weight or bias (their fields are
// ignored).
KernelKey norm_key(const std::string& op, const std::string& dtype, const NormGeometry& g,
                   const DeviceCaps& caps);
KernelSource render_norm(const KernelKey& key, const DeviceCaps& caps);
// Push constants (with the invocations per row, chosen from the row length) and groups.
Launch norm_launch(const KernelKey& key, const KernelSource& source, const NormGeometry& g);

// Rows of x viewed as [B, per_batch, d]; row r has position t = r % t_len. A launch covers
// rows row0 .. row0 + count - 1 (in_offset/out_offset locate row row0).
struct RopeGeometry {
  int64_t row0 = 0;
  int64_t count = 0;  // rows
  int64_t d = 0;
  int64_t half_dims = 0;
  int64_t t_len = 1;
  int64_t per_batch = 1;
  bool offset_per_batch = false;  // offsets hold one value per batch entry
  bool traditional = false;
  bool freqs = false;  // a freqs operand replaces base
  float base = 10000.0f;
  float scale = 1.0f;
  uint64_t in_offset = 0;
  uint64_t out_offset = 0;
  uint64_t offsets_offset = 0;
  uint64_t freqs_offset = 0;
  // rms_norm(x, norm_w, eps) applied to each row first (the rope of an rms_norm's output,
  // mlx/fusion.h); needs 2 * half_dims == d.
  bool prenorm = false;
  float eps = 0.0f;
  uint64_t norm_w_offset = 0;
  // Rows written into a larger output instead (a slice_update of the rope's output,
  // mlx/fusion.h): x viewed as [outer, t_len, d] goes to rows start .. start + t_len - 1 of
  // each of the output's `out_rows`-row blocks, start read from an int32 binding and
  // clamped into [0, out_rows - t_len] as slice_update clamps it. One launch (row0 0).
  bool into = false;
  int64_t out_rows = 0;
  uint64_t start_offset = 0;
};

// "rope:dtype=f16|bf16|f32,freqs=0|1,idx=32|64,into=0|1,norm=0|1,trad=0|1,vec=1|2|4|8".
// vec: pairs per invocation (16 bytes of the dtype, else 4 or 2), the widest whose vectors
// stay aligned; norm: g.prenorm; into: g.into (32-bit indices only).
KernelKey rope_key(const std::string& dtype, const RopeGeometry& g);
// Whether the rope kernel can apply the norm itself on this device: whole rows rotated,
// and a row's invocations (half_dims / vec) a power of two within one subgroup, which
// sums its squares with shuffles. Otherwise the caller runs the norm first.
bool rope_prenorm_fits(const std::string& dtype, const RopeGeometry& g, const DeviceCaps& caps);
// Whether the rope kernel can write g's rows into the larger output (g.into): one launch
// and 32-bit indices (its two extra push constants then fit 128 bytes).
bool rope_into_fits(const RopeGeometry& g);
KernelSource render_rope(const KernelKey& key, const DeviceCaps& caps);
Launch rope_launch(const KernelKey& key, const KernelSource& source, const RopeGeometry& g);

// The inverse frequency of pair k from base, as rope.glsl and the CPU reference compute it:
// 2^(-k * rope_coefficient(base, half_dims)).
float rope_coefficient(float base, int64_t half_dims);

}  // namespace mlx::core::vulkan::codegen
