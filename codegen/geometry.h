// Launch geometry shared by the elementwise and transpose kernels (internal to codegen):
// the normalized view of an ElementwiseGeometry and how its numbers are packed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/elementwise.h"

namespace mlx::core::vulkan::codegen {

// The geometry with extent-1 dims dropped and dims merged wherever every input allows
// (the output is row-contiguous, so it always does). Key and launch both use this, so the
// layout class and the packed numbers always agree.
struct Normalized {
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> strides;
  std::vector<uint64_t> offsets;
  uint64_t out_offset = 0;
  uint64_t size = 0;
};

// Throws std::invalid_argument when the geometry does not describe `inputs` inputs.
Normalized normalize(const ElementwiseGeometry& g, size_t inputs);

// The largest |element index| input k's kernel forms: its offset plus every partial sum of
// |stride| * (extent - 1).
uint64_t input_reach(const Normalized& n, size_t k);

// Whether some index the kernel forms (any input's, the output's, or the element count)
// can pass 2^31 - 1, so the kernel needs 64-bit index math.
bool needs_idx64(const Normalized& n);

// Array indices are 32-bit in GLSL: throws std::invalid_argument (naming `where`) when a
// binding would need an element index past 2^32 - 1. That never happens while a binding
// fits in maxStorageBufferRange <= 4 GiB; the runtime splits larger launches.
void check_binding_reach(const Normalized& n, const std::string& where);

// Appends v as one push-constant field: 8 bytes with 64-bit indexing, else 4.
void put(std::vector<uint8_t>& out, int64_t v, bool idx64);

}  // namespace mlx::core::vulkan::codegen
