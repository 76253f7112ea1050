// Differential testing of GPU ops against the CPU reference.
//
// A case is (op, input dtypes, shape, layout, seed). The harness builds the same inputs on
// both devices (views are made on each device, so the GPU sees real strided views), runs
// the op on each, and compares with a dtype-aware tolerance. Before the GPU run the backend
// is asked to poison new buffers and add guard regions; after it every guard is checked,
// so an element the kernel forgot to write (poison) or wrote out of bounds (guard) fails.
// A failure prints the seed and the case so it can be replayed alone.
#pragma once

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "mlx/backend/gpu/available.h"
#include "mlx/backend/gpu/debug.h"
#include "test_utils.h"

namespace gpu_diff {

namespace mx = mlx::core;

enum class Layout {
  contiguous,
  transposed,  // reversed axes of a contiguous base
  broadcast,   // size-1 dims (every other one) broadcast up
  strided,     // every second element along the last axis
  reversed,    // negative step along the first axis
  scalar,      // a 0-d value broadcast to the shape
};

const char* layout_name(Layout l);

inline const std::vector<Layout> all_layouts = {Layout::contiguous, Layout::transposed,
                                                Layout::broadcast,  Layout::strided,
                                                Layout::reversed,   Layout::scalar};

// Every dtype the GPU kernels hold.
inline const std::vector<mx::Dtype> gpu_dtypes = {
    mx::bool_, mx::uint8, mx::uint16, mx::uint32,  mx::uint64,   mx::int8,
    mx::int16, mx::int32, mx::int64,  mx::float16, mx::bfloat16, mx::float32};

// Shapes every op is tried on: 0-d, empty, one element, odd sizes, > 2^16 elements, and
// ranks from 1 to 5 (the general N-d path).
inline const std::vector<mx::Shape> standard_shapes = {
    {}, {0}, {1}, {7}, {3, 5}, {2, 0, 3}, {4, 3, 5}, {2, 3, 2, 3, 2}, {67, 1031}};

// Values drawn for an input; ops with restricted domains pass their own.
struct Domain {
  double lo = -4;
  double hi = 4;
  // Float inputs also get NaN, inf, -inf and -0.0, about one element in 8 (integer inputs
  // ignore it).
  bool specials = false;
};

struct Tolerance {
  double rtol;
  double atol;
};

// Tolerance for an output dtype: one rounding of the dtype plus float32 math on the device.
Tolerance default_tolerance(mx::Dtype out);

using Op = std::function<mx::array(const std::vector<mx::array>&, mx::StreamOrDevice)>;

struct Case {
  std::string op_name;
  std::vector<mx::Dtype> dtypes;
  mx::Shape shape;
  Layout layout;
  uint64_t seed;
  std::string describe() const;
};

// Makes an input with logical `shape` and the given layout on `device`.
mx::array make_input(const mx::Shape& shape, mx::Dtype dtype, Layout layout, uint64_t seed,
                     const Domain& domain, mx::Device device);

// Runs one case on both devices and checks values, poison and guards. Returns false (after
// reporting through doctest) on a mismatch.
bool run_case(const Case& c, const Op& op, const std::vector<Domain>& domains, Tolerance tol);

// Runs op over dtypes x standard_shapes x all_layouts; `tol` defaults by output dtype.
// The first input gets the layout; others are contiguous (and broadcast from a smaller
// shape for the broadcast layout), which covers mixed layouts without a cartesian product.
//
// Kernel count matters on lavapipe (each new pipeline costs 40-400 ms to JIT), so suites use
// two sweeps: every layout x standard shape on a few representative ops (index math is
// shared by all ops of a template), and every op x dtype on `quick_shapes`/`quick_layouts`.
void sweep(const std::string& name, const Op& op, const std::vector<std::vector<mx::Dtype>>& dtypes,
           const std::vector<Domain>& domains = {}, const Tolerance* tol = nullptr,
           const std::vector<mx::Shape>& shapes = standard_shapes,
           const std::vector<Layout>& layouts = all_layouts);

// A contiguous 1-d case, a > 2^16-element case and a strided 3-d case.
inline const std::vector<mx::Shape> quick_shapes = {{7}, {67, 1031}, {4, 3, 5}};
inline const std::vector<Layout> quick_layouts = {Layout::contiguous, Layout::transposed};

// Evaluates `make` on the GPU with poisoned new buffers, then checks the guard regions
// (for ops whose inputs do not fit run_case's one-shape cases).
std::vector<mx::array> gpu_eval_checked(const std::function<std::vector<mx::array>()>& make,
                                        const std::string& what);

// Every element of `got` within `tol` of `want` (same shape and dtype); reports the first
// mismatch through doctest, naming `what`.
bool all_close(const mx::array& got, const mx::array& want, Tolerance tol, const std::string& what);

// A copy of `a` on device `d`, evaluated.
mx::array on_device(const mx::array& a, mx::Device d);

inline bool gpu_present() {
  return mx::gpu::is_available();
}

// The device's maxStorageBufferRange in bytes when operands just wider than one binding
// stay cheap to test (at most 256 MiB: lavapipe's 128 MiB), else 0 (after saying so).
size_t small_binding_range();

// A [rows, cols] float32 array of integers in [-6, 6] drawn from `seed`: sums of such
// values are exact in f32 in any order, and ties are common.
mx::array small_ints(int rows, int cols, uint64_t seed);

}  // namespace gpu_diff
