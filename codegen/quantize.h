// The "quant" family (templates/quantize.glsl): MLX's affine quantization format both
// ways, quantize and dequantize, over dense rows. Keys, rendering and launch packing; no
// arrays, no Vulkan. docs/quantization.md describes the format.
#pragma once

#include <cstdint>
#include <string>

#include "codegen/codegen.h"

namespace mlx::core::vulkan::codegen {

// `rows` dense rows of k values; offsets are element indices within each binding (words
// for the packed operand). For dequantize `out_offset` locates the output; for quantize
// it locates the packed words and w_offset the input.
struct QuantGeometry {
  int64_t rows = 0;
  int64_t k = 0;
  int bits = 4;
  int group_size = 64;
  uint64_t w_offset = 0;
  uint64_t scales_offset = 0;
  uint64_t biases_offset = 0;
  uint64_t out_offset = 0;
  // Dequantize through indices: output row r is row ids[r] of w, scales and biases
  // (src_rows rows each; a negative index counts from the end once, and one out of range
  // gives zeros, as the GPU's take does). ids: "i32" or "u32", "" for none.
  std::string ids;
  int64_t src_rows = 0;
  uint64_t ids_offset = 0;
  // Dequantize: scale * q + bias rounded once, as the qmm tiles dequantize a product's
  // weights, instead of the op's T(T(scale * q) + bias).
  bool round_once = false;
  // Dequantize into w's transpose, [k, rows] (no ids; rows and out_offset multiples of 8).
  bool transpose_out = false;
};

// "quant:bits=2..8,dtype=f16|bf16|f32,gs=32|64|128,idx=32|64,op=dequantize|quantize", plus
// "ids=i32|u32" for a dequantize through indices and, for dequantize, "round=1|2" (the
// roundings a value takes: round_once), "vec=0|1" (1: the output's offset is a multiple
// of 8, so each 8-value chunk is stored as 16-byte vectors) and, for transpose_out, "tr=1";
// dtype is the float side's (the output of dequantize, the input of quantize, and the
// scales' and biases').
KernelKey quant_key(const std::string& op, const std::string& dtype, const QuantGeometry& g);
KernelSource render_quant(const KernelKey& key, const DeviceCaps& caps);
Launch quant_launch(const KernelKey& key, const KernelSource& source, const QuantGeometry& g);

}  // namespace mlx::core::vulkan::codegen
