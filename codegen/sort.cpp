// The "sort" family (codegen/sort.h): the launch chain, keys, rendering and launch packing
// for templates/sort.glsl.
#include "codegen/sort.h"

#include <limits>
#include <stdexcept>

#include "codegen/dtypes.h"
#include "codegen/internal.h"

namespace mlx::core::vulkan::codegen {

namespace {

constexpr uint32_t kFields = 10;  // uint push constants (sort.glsl's Params)

bool flag(const KernelKey& key, const char* name, const std::string& where) {
  const std::string& v = key_param(key, name, where);
  if (v != "0" && v != "1") {
    throw std::invalid_argument("[render] " + where + ": " + name + " must be 0 or 1.");
  }
  return v == "1";
}

// The order-preserving unsigned key of a compute value, by the dtype's kind.
std::string make_key(const DtypeInfo& dt) {
  switch (dt.kind) {
    case Kind::Float:
      return "float_key(float(v))";
    case Kind::Int:
      return dt.bits == 64 ? "(uint64_t(v) ^ (uint64_t(1) << 63))" : "(uint(v) ^ 0x80000000u)";
    default:
      return dt.bits == 64 ? "uint64_t(v)" : "uint(v)";
  }
}

}  // namespace

int64_t sort_padded(int64_t n) {
  int64_t p = 1;
  while (p < n) {
    p *= 2;
  }
  return p;
}

bool sort_supported(const SortGeometry& g) {
  constexpr uint64_t kMax = std::numeric_limits<uint32_t>::max();
  uint64_t elems = static_cast<uint64_t>(g.rows) * static_cast<uint64_t>(sort_padded(g.n));
  return elems < kMax / 2 && g.in_offset + elems < kMax && g.out_offset + elems < kMax;
}

std::vector<SortStep> sort_plan(const SortGeometry& g) {
  int64_t p = sort_padded(g.n);
  if (p <= kSortBlock) {
    return {SortStep{false, 2, p, 0, true, true}};
  }
  std::vector<SortStep> steps{SortStep{false, 2, kSortBlock, 0, true, false}};
  for (int64_t k = 2 * kSortBlock; k <= p; k *= 2) {
    for (int64_t j = k / 2; j >= kSortBlock; j /= 2) {
      steps.push_back(SortStep{true, k, k, j, false, false});
    }
    steps.push_back(SortStep{false, k, k, 0, false, k == p});
  }
  return steps;
}

int sort_key_bytes(const std::string& dtype) {
  const DtypeInfo* dt = find_dtype(dtype);
  return dt && dt->bits == 64 ? 8 : 4;
}

KernelKey sort_key(const std::string& dtype, bool arg, bool global) {
  return KernelKey{
      "sort", {{"arg", arg ? "1" : "0"}, {"dtype", dtype}, {"stage", global ? "global" : "block"}}};
}

KernelSource render_sort(const KernelKey& key, const DeviceCaps& caps) {
  const std::string where = "kernel " + key.canonical();
  check_params(key, {"arg", "dtype", "stage"}, where);
  const DtypeInfo& dt = dtype_info(key_param(key, "dtype", where), where);
  bool arg = flag(key, "arg", where);
  const std::string& stage = key_param(key, "stage", where);
  if (stage != "block" && stage != "global") {
    throw std::invalid_argument("[render] " + where + ": stage must be block or global.");
  }
  const DtypeInfo& u32 = dtype_info("u32", where);
  bool wide = dt.bits == 64;
  std::vector<std::string> defines = storage_defines({&dt, &u32}, wide, caps, where);
  // 64-bit keys need int64 arithmetic; indices stay 32-bit (sort_supported).
  defines.push_back("IDX64 0");
  add_input_defines("IN0_", dt, defines);
  add_output_defines(arg ? u32 : dt, defines);
  defines.push_back(std::string("STAGE ") + (stage == "global" ? "STAGE_GLOBAL" : "STAGE_BLOCK"));
  defines.push_back(std::string("ARG ") + (arg ? "1" : "0"));
  defines.push_back("B " + std::to_string(kSortBlock));
  defines.push_back(std::string("KEY_T ") + (wide ? "uint64_t" : "uint"));
  defines.push_back(std::string("KEY_MAX ") + (wide ? "(~uint64_t(0))" : "0xffffffffu"));
  defines.push_back("MAKE_KEY(v) " + make_key(dt));
  return row_kernel_source("sort.glsl", defines, 4, kFields, false, caps);
}

Launch sort_launch(const KernelKey& key, const KernelSource& source, const SortGeometry& g,
                   const SortStep& step) {
  const std::string where = "kernel " + key.canonical();
  if (!sort_supported(g) || (key_param(key, "stage", where) == "global") != step.global) {
    throw std::invalid_argument("[launch] " + where + " does not match the step.");
  }
  int64_t p = sort_padded(g.n);
  uint64_t wg = source.workgroup_size[0];
  uint64_t groups = step.global ? (static_cast<uint64_t>(g.rows * p / 2) + wg - 1) / wg
                                : static_cast<uint64_t>(g.rows * (p / std::min(p, kSortBlock)));
  return pack_launch(source,
                     {g.n, p, g.inner, g.rows, static_cast<int64_t>(g.in_offset),
                      static_cast<int64_t>(g.out_offset), step.k_lo, step.k_hi, step.j,
                      (step.first ? 1 : 0) | (step.final ? 2 : 0)},
                     false, groups, where);
}

}  // namespace mlx::core::vulkan::codegen
