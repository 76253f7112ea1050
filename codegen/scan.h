// The scan family ("scan", templates/scan.glsl): cumsum, cumprod, cummax and cummin along
// one axis of a row-contiguous input, planned as rows or columns like the row kernels
// (docs/scan.md). A key, a render (a row of codegen::families()) and a launch packer; no
// arrays, no Vulkan.
#pragma once

#include <cstdint>
#include <string>

#include "codegen/codegen.h"

namespace mlx::core::vulkan::codegen {

// One scan launch, in elements of a row-contiguous input and output of the same shape.
//   rows:    `count` rows of `len` contiguous elements, scanned along the row;
//   columns: an [outer, len, inner] input scanned over len; count = outer * inner.
struct ScanGeometry {
  bool columns = false;
  int64_t count = 0;
  int64_t len = 0;
  int64_t inner = 1;  // columns only
  bool reverse = false;
  bool inclusive = true;
  uint64_t in_offset = 0;
  uint64_t out_offset = 0;
  // Rows only: each row as `segs` segments of `seg` elements, a workgroup each
  // (templates/scan.glsl). totals: store each segment's total (out has count * segs
  // elements); carry_in: start each segment from carries[carry_offset + segment index]
  // (the key's seg=1, a third binding).
  int64_t seg = 0;  // 0: the whole row
  int64_t segs = 1;
  bool totals = false;
  bool carry_in = false;
  uint64_t carry_offset = 0;
};

// "scan:dtype=<dtype>,idx=32|64,mode=row|col,op=Sum|Prod|Max|Min[,seg=1]". The input and
// the output have `dtype`. reverse, inclusive and the segment fields are push constants,
// not part of the key, except carry_in: seg=1 binds the carries.
KernelKey scan_key(const std::string& op, const std::string& dtype, const ScanGeometry& g);

KernelSource render_scan(const KernelKey& key, const DeviceCaps& caps);

// Push constants (in offset, out offset, len, count, inner, flags, seg, segs, carry
// offset) and groups. Throws
// std::invalid_argument when the geometry does not match the key.
Launch scan_launch(const KernelKey& key, const KernelSource& source, const ScanGeometry& g);

}  // namespace mlx::core::vulkan::codegen
