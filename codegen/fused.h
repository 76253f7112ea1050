// The "fused" family (templates/fused.glsl): a group of elementwise ops fused by compile(),
// emitted from its key alone (so prewarm and spvdump work), no arrays, no Vulkan.
// docs/compile.md describes the key grammar and what a group may hold.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/codegen.h"

namespace mlx::core::vulkan::codegen {

// One node of the group: family "unary", "binary", "select" or "astype"; op its name
// ("Exp", "Add", "Select", "AsType"); dtype the node's output; args "i<k>" (input k) or
// "n<k>" (node k, earlier).
struct FusedNode {
  std::string family, op, dtype;
  std::vector<std::string> args;
};

struct FusedTape {
  std::vector<std::string> inputs;  // input dtypes
  std::vector<FusedNode> nodes;
  std::vector<int> outputs;  // node indices
};

// Groups the emitter takes: float compute (f32, f16, bf16) with bool predicates and select
// conditions, at most 4 outputs and 11 inputs.
constexpr int kFusedMaxOutputs = 4;
constexpr int kFusedMaxInputs = 11;
constexpr int kFusedMaxRank = 8;

// "fused:in=f32.bf16,out=3.5,tape=unary/Exp/f32/i0;binary/Add/f32/n0/i1;...". Throws
// std::invalid_argument for a tape it cannot emit.
KernelKey fused_key(const FusedTape& tape);
FusedTape parse_fused(const KernelKey& key);
KernelSource render_fused(const KernelKey& key, const DeviceCaps& caps);

// The geometry of one launch: the output shape (rank <= kFusedMaxRank), each input's
// element offset and strides, each output's element offset (outputs are dense).
struct FusedGeometry {
  std::vector<int64_t> shape;
  std::vector<int64_t> in_offsets;
  std::vector<std::vector<int64_t>> in_strides;
  std::vector<int64_t> out_offsets;
};
Launch fused_launch(const KernelKey& key, const KernelSource& source, const FusedGeometry& g);

}  // namespace mlx::core::vulkan::codegen
