// The "sort" family (templates/sort.glsl): a bitonic network over (key, index) pairs for
// sort, argsort, partition and argpartition along an axis. Keys, the launch plan and
// rendering; no arrays, no Vulkan. docs/sort.md explains the network and the keys.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/codegen.h"

namespace mlx::core::vulkan::codegen {

// rows x n elements along an axis with `inner` elements after it, dense; offsets are
// element indices within the input and output bindings.
struct SortGeometry {
  int64_t rows = 1;
  int64_t n = 1;
  int64_t inner = 1;
  uint64_t in_offset = 0;
  uint64_t out_offset = 0;
};

// Elements one workgroup sorts in shared memory (B in sort.glsl).
constexpr int64_t kSortBlock = 1024;

// The padded row length: the power of two at least n.
int64_t sort_padded(int64_t n);

// Whether a launch chain can sort it (every index within uint32).
bool sort_supported(const SortGeometry& g);

// One launch of the chain: its stage and the merge numbers. A row of at most kSortBlock
// elements is one block launch (first and final); longer rows need scratch keys and indices
// of rows * sort_padded(n) elements (key_bytes each for the keys).
struct SortStep {
  bool global = false;
  int64_t k_lo = 2, k_hi = 2, j = 0;
  bool first = false, final = false;
};
std::vector<SortStep> sort_plan(const SortGeometry& g);

// "sort:arg=0|1,dtype,stage=block|global". arg 1 writes uint32 indices.
KernelKey sort_key(const std::string& dtype, bool arg, bool global);
// Bytes of one key for a dtype (4, or 8 for 64-bit integers).
int sort_key_bytes(const std::string& dtype);
KernelSource render_sort(const KernelKey& key, const DeviceCaps& caps);
Launch sort_launch(const KernelKey& key, const KernelSource& source, const SortGeometry& g,
                   const SortStep& step);

}  // namespace mlx::core::vulkan::codegen
