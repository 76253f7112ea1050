// The tiled transpose copy (family "transpose", templates/transpose.glsl): a copy whose
// input is contiguous along the output's second-to-last dim. elementwise_key picks it for
// such copies, elementwise_launch packs it.
#include "codegen/transpose.h"

#include <algorithm>
#include <limits>
#include <set>
#include <stdexcept>

#include "codegen/dtypes.h"
#include "codegen/internal.h"

namespace mlx::core::vulkan::codegen {

namespace {

constexpr uint64_t kTile = 32;          // = TILE in transpose.glsl
constexpr uint32_t kTileRows = 8;       // invocation rows per workgroup (32 x 8 = 256)
constexpr uint64_t kMaxGroups = 65535;  // the minimum maxComputeWorkGroupCount
// Below this extent on either side of the tile the strided copy is as good: the tile
// would run mostly empty.
constexpr int64_t kMinExtent = 8;

// rows, cols and batch of a transposable geometry.
struct Extents {
  int64_t batch = 1, rows = 0, cols = 0;
  int64_t col_stride = 0, batch_stride = 0;
};

Extents extents(const Normalized& n) {
  size_t r = n.shape.size();
  Extents e;
  e.rows = n.shape[r - 2];
  e.cols = n.shape[r - 1];
  e.col_stride = n.strides[0][r - 1];
  if (r == 3) {
    e.batch = n.shape[0];
    e.batch_stride = n.strides[0][0];
  }
  return e;
}

bool parse_idx64(const KernelKey& key, const std::string& where) {
  for (const auto& [name, value] : key.params) {
    static const std::set<std::string> known{"in", "out", "idx", "pairs"};
    if (!known.count(name)) {
      throw std::invalid_argument("[render] " + where + ": unknown parameter '" + name + "'.");
    }
  }
  const std::string& idx = key_param(key, "idx", where);
  if (idx != "32" && idx != "64") {
    throw std::invalid_argument("[render] " + where + ": idx must be 32 or 64.");
  }
  return idx == "64";
}

// The largest element index a padded transpose forms, input or output.
uint64_t padded_reach(const PaddedTranspose& t) {
  if (t.rows < 1 || t.cols < 1) {
    return 0;
  }
  uint64_t in = t.in_offset + static_cast<uint64_t>(t.rows - 1) +
                static_cast<uint64_t>(t.cols - 1) * static_cast<uint64_t>(t.col_stride);
  uint64_t out = t.out_offset +
                 static_cast<uint64_t>(t.rows - 1) * static_cast<uint64_t>(t.out_ld) +
                 static_cast<uint64_t>(t.cols - 1);
  return std::max(in, out);
}

// Whether a key moves 16-bit elements two a word (transpose.glsl's PAIRS): "pairs=1".
bool parse_pairs(const KernelKey& key, const std::string& where) {
  auto it = key.params.find("pairs");
  if (it == key.params.end()) {
    return false;
  }
  if (it->second != "1" || key_param(key, "in", where) != key_param(key, "out", where) ||
      dtype_info(key_param(key, "in", where), where).bits != 16) {
    throw std::invalid_argument("[render] " + where +
                                ": pairs=1 needs one 16-bit dtype in and out.");
  }
  return true;
}

// Whether a padded transpose can move its elements in pairs: one 16-bit dtype, even rows,
// offsets and strides (every word read or written holds two of its elements), and with odd
// cols a padding element for each row's last word.
bool pairs_fit(const std::string& in_dtype, const std::string& out_dtype,
               const PaddedTranspose& t) {
  const DtypeInfo* dt = find_dtype(in_dtype);
  return in_dtype == out_dtype && dt != nullptr && dt->bits == 16 && t.rows % 2 == 0 &&
         t.col_stride % 2 == 0 && t.out_ld % 2 == 0 && t.in_offset % 2 == 0 &&
         t.out_offset % 2 == 0 && (t.cols % 2 == 0 || t.out_ld > t.cols);
}

// The same for a dense transposed copy (its rows are not padded), whose batch stride must
// be even too.
bool dense_pairs_fit(const std::string& in_dtype, const std::string& out_dtype,
                     const Normalized& n) {
  Extents e = extents(n);
  PaddedTranspose t;
  t.rows = e.rows;
  t.cols = e.cols;
  t.col_stride = e.col_stride;
  t.out_ld = e.cols;
  t.in_offset = n.offsets[0];
  t.out_offset = n.out_offset;
  return e.batch_stride % 2 == 0 && pairs_fit(in_dtype, out_dtype, t);
}

bool padded_idx64(const PaddedTranspose& t) {
  return padded_reach(t) > static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
}

// "transpose:idx=32|64,in=<dtype>,out=<dtype>[,pairs=1]".
KernelKey make_key(const std::string& in_dtype, const std::string& out_dtype, bool idx64,
                   bool pairs) {
  KernelKey key;
  key.family = "transpose";
  key.params["in"] = in_dtype;
  key.params["out"] = out_dtype;
  key.params["idx"] = idx64 ? "64" : "32";
  if (pairs) {
    key.params.emplace("pairs", "1");  // (operator= on a literal trips GCC 12's -Wrestrict)
  }
  return key;
}

// Push constants (transpose.glsl's block) and groups: column tiles, row tiles, batch.
// A pairs kernel's tile is twice as wide.
Launch pack(const Extents& e, uint64_t in_offset, uint64_t out_offset, int64_t out_ld, bool idx64,
            bool pairs, const KernelSource& source, const std::string& where) {
  const int64_t tile = pairs ? 2 * kTile : kTile;
  Launch launch;
  auto& pc = launch.push_constants;
  for (int64_t v : {e.rows, e.cols, static_cast<int64_t>(in_offset),
                    static_cast<int64_t>(out_offset), e.col_stride, e.batch_stride, out_ld}) {
    put(pc, v, idx64);
  }
  if (pc.size() != source.push_constant_bytes) {
    throw std::invalid_argument("[elementwise_launch] " + where +
                                ": packed push constants do not match the kernel's block.");
  }
  launch.groups = {static_cast<uint32_t>((e.cols + tile - 1) / tile),
                   static_cast<uint32_t>((e.rows + tile - 1) / tile),
                   static_cast<uint32_t>(e.batch)};
  return launch;
}

}  // namespace

bool is_transpose(const Normalized& n) {
  size_t r = n.shape.size();
  if (n.strides.size() != 1 || (r != 2 && r != 3)) {
    return false;
  }
  const auto& s = n.strides[0];
  if (s[r - 2] != 1 || s[r - 1] == 0 || s[r - 1] == 1) {
    return false;
  }
  Extents e = extents(n);
  auto groups = [](int64_t extent) { return (static_cast<uint64_t>(extent) + kTile - 1) / kTile; };
  return e.rows >= kMinExtent && e.cols >= kMinExtent && groups(e.rows) <= kMaxGroups &&
         groups(e.cols) <= kMaxGroups && static_cast<uint64_t>(e.batch) <= kMaxGroups;
}

KernelKey transpose_key(const std::string& in_dtype, const std::string& out_dtype,
                        const Normalized& n) {
  return make_key(in_dtype, out_dtype, needs_idx64(n), dense_pairs_fit(in_dtype, out_dtype, n));
}

KernelSource render_transpose(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  bool idx64 = parse_idx64(key, where);
  const DtypeInfo& in = dtype_info(key_param(key, "in", where), where);
  const DtypeInfo& out = dtype_info(key_param(key, "out", where), where);
  std::vector<std::string> defines = storage_defines({&in, &out}, idx64, caps, where);
  defines.push_back("IDX64 " + std::string(idx64 ? "1" : "0"));
  add_input_defines("IN0_", in, defines);
  add_output_defines(out, defines);
  defines.push_back("OP(x) " + convert_expr(in, out, "x"));
  defines.push_back(std::string("PAIRS ") + (parse_pairs(key, where) ? "1" : "0"));

  KernelSource source = render_template("transpose.glsl", defines);
  source.num_buffers = 2;
  source.push_constant_bytes = 7 * (idx64 ? 8 : 4);
  uint32_t rows = std::clamp<uint32_t>(caps.max_workgroup_invocations / kTile, 1, kTileRows);
  source.workgroup_size = {static_cast<uint32_t>(kTile), rows, 1};
  source.spec_constants = {{1, rows}};
  return source;
}

Launch transpose_launch(const KernelKey& key, const KernelSource& source, const Normalized& n) {
  const std::string where = "kernel " + key.canonical();
  bool idx64 = parse_idx64(key, where);
  if (!is_transpose(n) || needs_idx64(n) != idx64) {
    throw std::invalid_argument("[elementwise_launch] " + where +
                                " does not match the geometry (not a transposed copy, or "
                                "another index width).");
  }
  check_binding_reach(n, where);
  bool pairs = parse_pairs(key, where);
  if (pairs && !dense_pairs_fit(key_param(key, "in", where), key_param(key, "out", where), n)) {
    throw std::invalid_argument("[elementwise_launch] " + where +
                                ": the geometry cannot move in pairs (odd extents, offsets "
                                "or strides).");
  }
  Extents e = extents(n);
  return pack(e, n.offsets[0], n.out_offset, e.cols, idx64, pairs, source, where);
}

KernelKey padded_transpose_key(const std::string& in_dtype, const std::string& out_dtype,
                               const PaddedTranspose& t) {
  return make_key(in_dtype, out_dtype, padded_idx64(t), pairs_fit(in_dtype, out_dtype, t));
}

Launch padded_transpose_launch(const KernelKey& key, const KernelSource& source,
                               const PaddedTranspose& t) {
  const std::string where = "kernel " + key.canonical();
  bool idx64 = parse_idx64(key, where);
  auto groups = [](int64_t extent) { return (static_cast<uint64_t>(extent) + kTile - 1) / kTile; };
  if (t.rows < 1 || t.cols < 1 || t.out_ld < t.cols || t.col_stride < 1 ||
      groups(t.rows) > kMaxGroups || groups(t.cols) > kMaxGroups || padded_idx64(t) != idx64) {
    throw std::invalid_argument("[elementwise_launch] " + where +
                                ": not a padded transpose this kernel takes (empty, rows "
                                "shorter than their columns, too many tiles, or another "
                                "index width).");
  }
  if (padded_reach(t) > std::numeric_limits<uint32_t>::max()) {
    throw std::invalid_argument("[elementwise_launch] " + where +
                                ": a binding would need an element index beyond 2^32 - 1.");
  }
  bool pairs = parse_pairs(key, where);
  if (pairs && !pairs_fit(key_param(key, "in", where), key_param(key, "out", where), t)) {
    throw std::invalid_argument("[elementwise_launch] " + where +
                                ": the geometry cannot move in pairs (odd rows, offsets or "
                                "strides, or no padding for an odd row's last word).");
  }
  Extents e;
  e.rows = t.rows;
  e.cols = t.cols;
  e.col_stride = t.col_stride;
  return pack(e, t.in_offset, t.out_offset, t.out_ld, idx64, pairs, source, where);
}

}  // namespace mlx::core::vulkan::codegen
