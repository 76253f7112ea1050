// The "fused" family (templates/fused.glsl): a group of elementwise ops fused by compile(),
// emitted from its key alone (so prewarm and spvdump work), no arrays, no Vulkan.
// docs/compile.md describes the key grammar and what a group may hold.
#pragma once

#include <cstdint>
#include <optional>
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
  // The layout variant (classify_fused sets it from a launch's geometry): "" for any
  // strides, else one letter per input, 'c' (contiguous like the output), 's' (one element
  // for all) or 'r' (row-strided, classify_fused); vec > 1 (only with a layout): contiguous
  // and row-strided inputs and the outputs are read and written as vectors of vec elements.
  std::string layout;
  uint32_t vec = 0;
  // Per input, empty or the value it holds for every element, in lowercase hex: a scalar
  // constant written into the kernel (key param "c<k>") instead of loaded, so the compiler
  // folds it (and x / 2^k becomes an exact x * 2^-k). A float input's value as f32 bits (8
  // digits), an integer or bool input's as stored (2 digits a byte). Empty vector: none.
  std::vector<std::string> consts;
};

// Groups the emitter takes: any GPU dtype (bool, 8- to 64-bit integers with MLX's integer
// semantics, f16, bf16, f32) in any mix the elementwise ops accept, at most 4 outputs and
// 11 inputs.
constexpr int kFusedMaxOutputs = 4;
constexpr int kFusedMaxInputs = 11;
constexpr int kFusedMaxRank = 8;

// "fused:in=f32.bf16,out=3.5,tape=unary/Exp/f32/i0;binary/Add/f32/n0/i1;..." with
// ",layout=cs" and ",vec=4" for the layout variants and ",c1=3f000000" for an input written
// into the kernel as a constant. Throws std::invalid_argument for a tape it cannot emit.
KernelKey fused_key(const FusedTape& tape);
FusedTape parse_fused(const KernelKey& key);
KernelSource render_fused(const KernelKey& key, const DeviceCaps& caps);

// The group as a readable comment, one line per node ("//   v2 = Multiply(v1, i1) : bf16
// -> out0"); the rendered GLSL carries it, and `spvdump glsl` prints it for fused keys.
std::string fused_comment(const FusedTape& tape);

// The geometry of one launch: the output shape (rank <= kFusedMaxRank), each input's
// element offset and strides, each output's element offset (outputs are dense), and the
// byte alignment every binding starts at.
struct FusedGeometry {
  std::vector<int64_t> shape;
  std::vector<int64_t> in_offsets;
  std::vector<std::vector<int64_t>> in_strides;
  std::vector<int64_t> out_offsets;
  uint32_t binding_alignment = 1;
};

// Sets the tape's layout variant for this geometry: a layout when every input is contiguous
// ('c'), one element ('s') or row-strided ('r': contiguous rows of the last dimension, each
// row a fixed stride after the one before, as a slice of a wider matrix's columns), and vec
// when moreover the contiguous and row-strided inputs and the outputs start at multiples of
// the vector width (16 bytes of the widest operand, at least 4 bytes of the narrowest) in
// bindings aligned to 32 bytes, and rows and row strides are multiples of it too.
void classify_fused(FusedTape& tape, const FusedGeometry& g);

// The row stride of an input with these strides over `shape` when it is row-strided (its
// last dimension contiguous, and row r of the dims before it at r * row stride); nullopt
// otherwise. Rank >= 2; 0 when there is a single row.
std::optional<int64_t> fused_row_stride(const std::vector<int64_t>& shape,
                                        const std::vector<int64_t>& strides);
Launch fused_launch(const KernelKey& key, const KernelSource& source, const FusedGeometry& g);

}  // namespace mlx::core::vulkan::codegen
