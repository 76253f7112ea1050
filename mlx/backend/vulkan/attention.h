// What the sdpa family's two evals share (attention.cpp: ScaledDotProductAttention,
// decode_attention.cpp: DecodeAttention): operands read through their strides, the launch
// memo's signature of a geometry, and the merge of a decode split along the keys.
#pragma once

#include <array>
#include <cstdint>

#include "codegen/attention.h"
#include "mlx/array.h"
#include "mlx/backend/vulkan/kernels.h"
#include "mlx/backend/vulkan/launch_memo.h"
#include "mlx/backend/vulkan/reduce_plan.h"

namespace mlx::core::vulkan {

// An operand read through its strides: in place when its last dim is contiguous (or size
// 1) and no stride is negative, else a dense copy.
struct Strided {
  Buf buf;
  Strides strides;
  int64_t elems = 1;  // from element 0 to the last element, inclusive
};
Strided strided(CommandEncoder& enc, int stream, const array& a, const char* dtype,
                bool need_unit_last);

// The launch-memo signature of a main or merge launch: every field of the geometry. A new
// field of codegen::AttentionGeometry must join it (a size check trips when one is added).
std::array<int64_t, 33> attention_signature(const char* family, const char* dtype,
                                            const codegen::AttentionGeometry& g);

// The geometry a vector-mode or merge launch is memoized under: the key length replaced by
// minus the split count (codegen::set_attention_length moves a launch to another length),
// so a decode loop reuses one entry while its cache grows.
codegen::AttentionGeometry length_free(const codegen::AttentionGeometry& g);

// `planned`'s launch for g's key length, in a per-thread scratch (no allocation once warm).
const codegen::Launch& launch_for_length(const MemoEntry& planned,
                                         const codegen::AttentionGeometry& g);

// A split key's merge as MLX_VK_SDPA_MERGE asks (launch: split=1, inline: split=2 where it
// fits; auto, the default: the key as planned). For measuring the two.
void choose_merge(codegen::KernelKey& key, const codegen::AttentionGeometry& g);
// Whether a planned decode launch merges its splits itself (split=2).
bool merges_in_launch(const MemoEntry& planned);
// The stream's zeroed counters of a split=2 launch (one per row block; the kernels leave
// them zeroed), bound as written so that the encoder orders two such launches.
Binding merge_counters(CommandEncoder& enc);

// The f32 scratch of a split decode: (m, l, o) per row and chunk.
struct SplitScratch {
  Buf buf;
  int64_t elems = 0;
  BoundOperand bound;
};
SplitScratch split_scratch(Device& dev, CommandEncoder& enc, const codegen::AttentionGeometry& g,
                           int64_t splits);

// Records the merge launch that combines a split decode's chunks into `out`.
void record_attention_merge(Device& dev, CommandEncoder& enc, const char* dtype,
                            const codegen::AttentionGeometry& g, const SplitScratch& scratch,
                            const Binding& sinks, const Binding& out);

}  // namespace mlx::core::vulkan
