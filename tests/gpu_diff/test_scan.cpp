// cumsum, cumprod, cummax and cummin on the GPU (the "scan" family) match the CPU reference:
// rows (axis last), columns (axis not last, and short rows), copies of other layouts,
// reverse and exclusive scans, every dtype class, rows longer than 100k elements, few long
// rows scanned in segments, empty
// and length-1 axes, NaN and infinities, and no CPU route.
//
// Tolerances (docs/scan.md). Integer scans (wrapping) and max/min are exact. A float sum
// is compared per element against the CPU's double sum: |gpu - cpu| <= 80 u S_i (+ the
// dtype's rounding for f16/bf16), where u = 2^-24 and S_i is the sum of |x| over the
// prefix. That is the error bound of f32 summation in a tree of height <= 80: each element
// passes through at most 16 + 15 + 30 + 16 + 2 additions in the row kernel (fewer in the
// column kernel), and the carry between chunks is compensated, so the bound does not grow
// with the number of chunks. It grows with the length only through S_i. Products: both
// devices round each multiplication in f32 (the CPU serially), so the relative error grows
// with the length: (2 len + 160) u.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "codegen/codegen.h"
#include "codegen/scan.h"
#include "harness.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/kernels.h"

namespace mx = mlx::core;
using namespace gpu_diff;

namespace {

enum class ScanOp { Sum, Prod, Max, Min };

const char* scan_name(ScanOp op) {
  switch (op) {
    case ScanOp::Sum:
      return "cumsum";
    case ScanOp::Prod:
      return "cumprod";
    case ScanOp::Max:
      return "cummax";
    case ScanOp::Min:
      return "cummin";
  }
  return "?";
}

const std::vector<ScanOp> all_ops = {ScanOp::Sum, ScanOp::Prod, ScanOp::Max, ScanOp::Min};

mx::array scan(ScanOp op, const mx::array& x, int axis, bool reverse, bool inclusive,
               mx::StreamOrDevice s) {
  switch (op) {
    case ScanOp::Sum:
      return mx::cumsum(x, axis, reverse, inclusive, std::nullopt, s);
    case ScanOp::Prod:
      return mx::cumprod(x, axis, reverse, inclusive, std::nullopt, s);
    case ScanOp::Max:
      return mx::cummax(x, axis, reverse, inclusive, s);
    case ScanOp::Min:
      return mx::cummin(x, axis, reverse, inclusive, s);
  }
  return x;
}

constexpr double kU = 1.0 / (1 << 24);  // f32 unit roundoff

// Values each op is tested on: products stay away from 0 and from overflow for long.
Domain domain_for(ScanOp op, mx::Dtype dt) {
  bool unsigned_int = dt == mx::uint8 || dt == mx::uint16 || dt == mx::uint32 || dt == mx::uint64;
  if (op == ScanOp::Prod) {
    return mx::issubdtype(dt, mx::floating) ? Domain{0.5, 1.5} : Domain{1, 4};
  }
  return unsigned_int ? Domain{0, 8} : Domain{-4, 4};
}

struct ScanCase {
  ScanOp op;
  mx::Dtype dtype;
  mx::Shape shape;
  int axis;
  Layout layout;
  bool reverse;
  bool inclusive;
  uint64_t seed;
  std::string describe() const {
    std::ostringstream os;
    os << scan_name(op) << " dtype=" << dtype << " shape=" << mx::shape_to_string(shape)
       << " axis=" << axis << " layout=" << layout_name(layout) << " reverse=" << reverse
       << " inclusive=" << inclusive << " seed=" << seed;
    return os.str();
  }
};

// The per-element bound: |gpu - cpu| <= atol_i + rtol * |cpu| (see the top of the file).
std::vector<double> tolerances(const ScanCase& c, const mx::array& cpu_in,
                               const std::vector<double>& want, mx::Dtype out, double* rtol) {
  std::vector<double> atol(want.size(), 0.0);
  *rtol = 0;
  if (!mx::issubdtype(out, mx::floating) || c.op == ScanOp::Max || c.op == ScanOp::Min) {
    return atol;  // exact
  }
  Tolerance dt = out == mx::float32 ? Tolerance{0, 0} : default_tolerance(out);
  if (c.op == ScanOp::Sum) {
    auto s =
        mlx_test::to_doubles(mx::cumsum(mx::abs(mx::astype(cpu_in, mx::float32, mx::Device::cpu)),
                                        c.axis, c.reverse, true, std::nullopt, mx::Device::cpu));
    for (size_t i = 0; i < s.size(); ++i) {
      atol[i] =
          std::isfinite(s[i]) ? 80 * kU * s[i] + dt.atol : std::numeric_limits<double>::infinity();
    }
    *rtol = 2 * kU + dt.rtol;
  } else {
    int64_t len = c.shape.empty() ? 1 : c.shape[(c.axis + c.shape.size()) % c.shape.size()];
    // f32 products may flush subnormals on the device.
    std::fill(atol.begin(), atol.end(), out == mx::float32 ? 1e-36 : dt.atol);
    *rtol = (2.0 * static_cast<double>(len) + 160) * kU + dt.rtol;
  }
  return atol;
}

// Runs one case on both devices (poisoned outputs, guard check) and compares per element.
bool run_scan(const ScanCase& c) {
  Domain d = domain_for(c.op, c.dtype);
  auto cpu_in = make_input(c.shape, c.dtype, c.layout, c.seed, d, mx::Device::cpu);
  auto gpu_in = make_input(c.shape, c.dtype, c.layout, c.seed, d, mx::Device::gpu);
  auto want = scan(c.op, cpu_in, c.axis, c.reverse, c.inclusive, mx::Device::cpu);
  mx::array got = want;
  {
    mx::gpu::debug::PoisonScope poison;
    got = scan(c.op, gpu_in, c.axis, c.reverse, c.inclusive, mx::Device::gpu);
    got.eval();
    auto bad = mx::gpu::debug::check_guards();
    CHECK_MESSAGE(bad == 0, c.describe() << ": " << bad << " buffer guard region(s) overwritten");
    if (bad != 0) {
      return false;
    }
  }
  bool same_kind = got.shape() == want.shape() && got.dtype() == want.dtype();
  CHECK_MESSAGE(same_kind, c.describe()
                               << ": GPU gave " << mx::shape_to_string(got.shape()) << " "
                               << got.dtype() << ", CPU " << mx::shape_to_string(want.shape())
                               << " " << want.dtype());
  if (!same_kind) {
    return false;
  }
  auto g = mlx_test::to_doubles(got);
  auto w = mlx_test::to_doubles(want);
  double rtol = 0;
  auto atol = tolerances(c, cpu_in, w, want.dtype(), &rtol);
  size_t bad = g.size();
  for (size_t i = 0; i < g.size() && bad == g.size(); ++i) {
    if (!mlx_test::close(g[i], w[i], rtol, atol[i])) {
      bad = i;
    }
  }
  // One assertion per case: every element within its bound (poison shows as a mismatch).
  CHECK_MESSAGE(bad == g.size(),
                c.describe() << ": element " << bad << " GPU " << (bad < g.size() ? g[bad] : 0.0)
                             << " CPU " << (bad < g.size() ? w[bad] : 0.0) << " (rtol " << rtol
                             << ", atol " << (bad < g.size() ? atol[bad] : 0.0) << ")");
  return bad == g.size();
}

// Runs `cases` and stops after 5 failures, so a broken kernel does not flood the log.
void run_all(const std::vector<ScanCase>& cases) {
  int failures = 0;
  for (const auto& c : cases) {
    if (!run_scan(c) && ++failures >= 5) {
      return;
    }
  }
}

}  // namespace

TEST_CASE("scans (cumsum, cumprod, cummax, cummin) match the CPU over axes, flags and layouts") {
  if (!gpu_present())
    return;
  // Rows (axis last), columns (0, 1 of 3-d; a long axis 0 with few columns), short rows.
  const std::vector<std::pair<mx::Shape, int>> shapes = {
      {{1}, 0},       {{7}, 0},       {{13}, -1},      {{3, 5}, 0},     {{3, 5}, 1},
      {{4, 3, 5}, 0}, {{4, 3, 5}, 1}, {{4, 3, 5}, 2},  {{4, 3, 5}, -1}, {{4, 3, 5}, -3},
      {{97, 61}, 1},  {{97, 61}, 0},  {{2, 5003}, -1}, {{5003, 3}, 0},  {{2, 3, 2, 3, 2}, 2}};
  std::vector<ScanCase> cases;
  uint64_t seed = 100;
  for (auto op : all_ops) {
    for (auto [shape, axis] : shapes) {
      for (auto layout : {Layout::contiguous, Layout::transposed, Layout::broadcast}) {
        if (layout == Layout::broadcast && shape.size() < 2) {
          continue;
        }
        for (bool reverse : {false, true}) {
          for (bool inclusive : {true, false}) {
            cases.push_back({op, mx::float32, shape, axis, layout, reverse, inclusive, ++seed});
          }
        }
      }
    }
  }
  run_all(cases);
}

TEST_CASE("scans of integer, bool and 16-bit float dtypes match the CPU") {
  if (!gpu_present())
    return;
  // Every dtype class: 16-bit floats (f32 math, one rounding per output), 8/32/64-bit
  // integers (sums and products wrap: int8 after a few dozen elements), bool (cumsum and
  // cumprod count in int32, cummax/cummin stay bool). Each (op, dtype, mode) is a kernel,
  // and each costs 40-400 ms to JIT on lavapipe, so: rows with every op, columns with sum
  // (and max for one float and one integer type, whose identity and NaN rule differ), and
  // the unsigned types only for a wrapping sum and where their identity differs
  // (exclusive cummin).
  std::vector<mx::Dtype> dtypes = {mx::float16, mx::bfloat16, mx::int32, mx::int8, mx::bool_};
  bool int64 = mlx::core::vulkan::gpu_supports(mx::int64);
  if (int64) {
    dtypes.push_back(mx::int64);
  }
  std::vector<ScanCase> cases;
  uint64_t seed = 500;
  for (auto dt : dtypes) {
    for (auto op : all_ops) {
      cases.push_back({op, dt, {13, 1031}, 1, Layout::contiguous, false, true, ++seed});
      cases.push_back({op, dt, {13, 1031}, -1, Layout::contiguous, true, false, ++seed});
      bool columns =
          op == ScanOp::Sum || (op == ScanOp::Max && (dt == mx::float16 || dt == mx::int8));
      if (columns) {
        cases.push_back({op, dt, {67, 40}, 0, Layout::contiguous, false, false, ++seed});
        cases.push_back({op, dt, {5, 7}, 1, Layout::transposed, true, true, ++seed});
      }
    }
  }
  cases.push_back({ScanOp::Sum, mx::uint8, {13, 1031}, 1, Layout::contiguous, true, true, ++seed});
  cases.push_back({ScanOp::Min, mx::uint8, {13, 1031}, 1, Layout::contiguous, true, false, ++seed});
  cases.push_back(
      {ScanOp::Min, mx::uint16, {13, 1031}, 1, Layout::contiguous, false, false, ++seed});
  cases.push_back(
      {ScanOp::Max, mx::int16, {13, 1031}, 1, Layout::contiguous, false, false, ++seed});
  if (int64) {
    cases.push_back(
        {ScanOp::Min, mx::uint64, {13, 1031}, 1, Layout::contiguous, true, false, ++seed});
  }
  run_all(cases);
}

TEST_CASE("scans along rows and columns longer than 100k elements carry across chunks") {
  if (!gpu_present())
    return;
  std::vector<ScanCase> cases;
  uint64_t seed = 900;
  for (bool reverse : {false, true}) {
    for (bool inclusive : {true, false}) {
      cases.push_back({ScanOp::Sum,
                       mx::float32,
                       {2, 150001},
                       1,
                       Layout::contiguous,
                       reverse,
                       inclusive,
                       ++seed});
      cases.push_back({ScanOp::Sum,
                       mx::float32,
                       {100003, 2},
                       0,
                       Layout::contiguous,
                       reverse,
                       inclusive,
                       ++seed});
    }
  }
  cases.push_back(
      {ScanOp::Max, mx::float32, {1, 150001}, -1, Layout::contiguous, true, false, ++seed});
  cases.push_back(
      {ScanOp::Min, mx::float32, {100003, 2}, 0, Layout::transposed, false, true, ++seed});
  cases.push_back(
      {ScanOp::Prod, mx::float32, {1, 120007}, 1, Layout::contiguous, false, true, ++seed});
  cases.push_back(
      {ScanOp::Sum, mx::float16, {1, 120007}, 1, Layout::contiguous, false, true, ++seed});
  cases.push_back({ScanOp::Sum, mx::int32, {1, 120007}, 1, Layout::contiguous, true, true, ++seed});
  run_all(cases);
}

TEST_CASE("scans of empty arrays, 0-d inputs and length-1 axes match the CPU") {
  if (!gpu_present())
    return;
  std::vector<ScanCase> cases;
  uint64_t seed = 1300;
  const std::vector<std::pair<mx::Shape, int>> shapes = {
      {{0}, 0}, {{2, 0, 3}, 0}, {{2, 0, 3}, 1}, {{2, 0, 3}, 2}, {{5, 1}, 1}, {{1, 5}, 0}};
  for (auto op : all_ops) {
    for (auto [shape, axis] : shapes) {
      cases.push_back({op, mx::float32, shape, axis, Layout::contiguous, false, false, ++seed});
    }
  }
  run_all(cases);
  // Without an axis, the op flattens: a 0-d input scans as one element.
  for (auto op : all_ops) {
    mx::array x(2.5f);
    auto flat = [&](mx::StreamOrDevice s) {
      switch (op) {
        case ScanOp::Sum:
          return mx::cumsum(x, false, false, std::nullopt, s);
        case ScanOp::Prod:
          return mx::cumprod(x, false, false, std::nullopt, s);
        case ScanOp::Max:
          return mx::cummax(x, false, false, s);
        case ScanOp::Min:
          return mx::cummin(x, false, false, s);
      }
      return x;
    };
    auto g = mlx_test::to_doubles(flat(mx::Device::gpu));
    auto c = mlx_test::to_doubles(flat(mx::Device::cpu));
    CHECK_MESSAGE(g == c, scan_name(op) << " of a 0-d array");
    CHECK(flat(mx::Device::gpu).shape() == mx::Shape{1});
  }
}

TEST_CASE("scans of rows with NaN and infinities give what the CPU gives") {
  if (!gpu_present())
    return;
  float nan = std::nanf("");
  float inf = INFINITY;
  // Row 0: a NaN after numbers; row 1: +inf then -inf (NaN from there for sums); row 2:
  // -inf and +inf only; row 3: NaN first.
  mx::array small({1.0f, 2.0f, nan, 0.0f, -3.0f, inf,  1.0f, -inf, 0.0f,  1.0f,
                   -inf, -inf, inf, -inf, 2.0f,  3.0f, nan,  5.0f, -1.0f, 7.0f},
                  {4, 5});
  // A long row with the specials in later chunks (the carry must hold them).
  std::vector<float> long_vals(20000);
  for (size_t i = 0; i < long_vals.size(); ++i) {
    long_vals[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
  }
  long_vals[9000] = inf;
  long_vals[13000] = nan;
  long_vals[15000] = -inf;
  mx::array longer(long_vals.begin(), {2, 10000});
  for (const auto& x : {small, longer}) {
    for (auto op : all_ops) {
      for (int axis : {0, 1}) {
        for (bool reverse : {false, true}) {
          for (bool inclusive : {true, false}) {
            auto g = mlx_test::to_doubles(scan(op, x, axis, reverse, inclusive, mx::Device::gpu));
            auto c = mlx_test::to_doubles(scan(op, x, axis, reverse, inclusive, mx::Device::cpu));
            REQUIRE(g.size() == c.size());
            size_t bad = g.size();
            for (size_t i = 0; i < g.size() && bad == g.size(); ++i) {
              // Exact for max/min; sums of small integers are exact in f32 too.
              if (!mlx_test::close(g[i], c[i], op == ScanOp::Prod ? 1e-5 : 0, 0)) {
                bad = i;
              }
            }
            CHECK_MESSAGE(bad == g.size(), scan_name(op)
                                               << " shape=" << mx::shape_to_string(x.shape())
                                               << " axis=" << axis << " reverse=" << reverse
                                               << " inclusive=" << inclusive << ": element " << bad
                                               << " GPU " << (bad < g.size() ? g[bad] : 0.0)
                                               << " CPU " << (bad < c.size() ? c[bad] : 0.0));
          }
        }
      }
    }
  }
}

TEST_CASE(
    "float32 scans: cumsum of a long row stays within 80 roundings, not drifting with length") {
  if (!gpu_present())
    return;
  // Every prefix of 300001 ones is exact in f32: the GPU must give it exactly.
  auto ones =
      mx::cumsum(mx::ones({300001}, mx::float32), 0, false, true, std::nullopt, mx::Device::gpu);
  auto o = mlx_test::to_doubles(ones);
  size_t bad = o.size();
  for (size_t i = 0; i < o.size() && bad == o.size(); ++i) {
    if (o[i] != static_cast<double>(i + 1)) {
      bad = i;
    }
  }
  CHECK_MESSAGE(bad == o.size(), "cumsum of ones: element " << bad);
  // 0.1f repeated: a plain f32 running sum drifts by 2e-3 relative over 200k elements;
  // here each output stays within the 80 u bound of the whole file (measured on lavapipe:
  // 1.3e-6, the rounding of the chunk-local prefix of up to 4096 elements).
  auto tenth = mx::full({200000}, 0.1f);
  auto g = mlx_test::to_doubles(mx::cumsum(tenth, 0, false, true, std::nullopt, mx::Device::gpu));
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    double exact = static_cast<double>(0.1f) * static_cast<double>(i + 1);
    worst = std::max(worst, std::abs(g[i] - exact) / exact);
  }
  CHECK_MESSAGE(worst < 80 * kU, "worst relative error " << worst);
  // 1e7 and then four million 0.1f: each chunk's total (409.6) added to a plain f32 carry
  // near 1e7 (ulp 1) rounds up by 0.4, a drift of ~400 over 977 chunks, far past the
  // 80 u S bound (~50). With the compensated carry only the rounding inside the chunk
  // that holds 1e7 remains (16 on lavapipe), and it does not grow with the length.
  std::vector<float> vals(4000001, 0.1f);
  vals[0] = 1e7f;
  mx::array x(vals.begin(), {static_cast<int>(vals.size())});
  auto gb = mlx_test::to_doubles(mx::cumsum(x, 0, false, true, std::nullopt, mx::Device::gpu));
  auto cb = mlx_test::to_doubles(mx::cumsum(x, 0, false, true, std::nullopt, mx::Device::cpu));
  double worst_abs = 0;
  for (size_t i = 0; i < gb.size(); ++i) {
    worst_abs = std::max(worst_abs, std::abs(gb[i] - cb[i]));
  }
  double bound = 80 * kU * (1e7 + 0.1 * 4e6);
  CHECK_MESSAGE(worst_abs <= bound, "worst absolute error " << worst_abs << ", bound " << bound);
}

TEST_CASE("scans on the GPU device take no CPU route") {
  if (!gpu_present())
    return;
  mlx::core::vulkan::reset_fallback_counts();
  auto x = mx::ones({3, 4, 5}, mx::float32, mx::Device::gpu);
  for (auto op : all_ops) {
    for (int axis : {0, 2}) {
      scan(op, x, axis, false, true, mx::Device::gpu).eval();
      scan(op, mx::transpose(x, mx::Device::gpu), axis, true, false, mx::Device::gpu).eval();
    }
  }
  auto counts = mlx::core::vulkan::fallback_counts();
  for (const char* name : {"CumSum", "CumProd", "CumMax", "CumMin"}) {
    CHECK_MESSAGE(counts.count(name) == 0, name << " took the CPU route");
  }
  // float64 stays on the CPU, as in MLX: the explicit route, counted, with CPU results.
  auto d = mx::arange(5.0, mx::float64, mx::Device::cpu);
  auto g = mlx_test::to_doubles(mx::cumsum(d, 0, false, true, std::nullopt, mx::Device::gpu));
  CHECK(g == std::vector<double>{0, 1, 3, 6, 10});
  CHECK(mlx::core::vulkan::fallback_counts().count("CumSum") == 1);
}

TEST_CASE("few long rows are scanned in segments: every op, direction and dtype class") {
  if (!gpu_present())
    return;
  // Rows of at least 2 * 4096 elements, fewer than 128 of them, take the segmented path
  // (totals, their exclusive scan, each segment from its carry): lengths that end inside a
  // segment and on its boundary, every op both ways, ints (exact, wrapping) and f32.
  // bf16 rows go through an f32 copy of the segments (one rounding per output).
  std::vector<ScanCase> cases;
  uint64_t seed = 900;
  for (auto op : all_ops) {
    for (mx::Shape shape : {mx::Shape{3, 10007}, mx::Shape{1, 16384}}) {
      for (auto dt : {mx::float32, mx::int32, mx::uint8, mx::bfloat16}) {
        for (bool reverse : {false, true}) {
          for (bool inclusive : {true, false}) {
            cases.push_back({op, dt, shape, -1, Layout::contiguous, reverse, inclusive, ++seed});
          }
        }
      }
    }
  }
  run_all(cases);
  // A bf16 row of 8M ones: every f32 prefix is exact, so both devices round the same
  // integers once. lavapipe cut one workgroup's walk over such a row short (zeros from
  // element 3.7M) before long 16-bit rows took the f32 segments.
  {
    auto ones = mx::full({1, (8 << 20) + 3}, mx::array(1.0f), mx::bfloat16, mx::Device::gpu);
    auto g = mx::cumsum(ones, -1, false, true, std::nullopt, mx::Device::gpu);
    auto c = mx::cumsum(ones, -1, false, true, std::nullopt, mx::Device::cpu);
    CHECK(mx::array_equal(g, c, false, mx::Device::cpu).item<bool>());
  }
  // NaN: the first NaN in scan order wins cummax, across a segment boundary.
  std::vector<float> v(9000, 1.0f);
  v[5000] = std::numeric_limits<float>::quiet_NaN();
  mx::array x(v.begin(), {1, 9000});
  for (bool reverse : {false, true}) {
    auto g = mlx_test::to_doubles(mx::cummax(x, -1, reverse, true, mx::Device::gpu));
    CHECK(std::isnan(g[reverse ? 0 : 8999]));
    CHECK(g[reverse ? 8999 : 0] == 1.0);
    CHECK(std::isnan(g[5000]));
    CHECK(g[reverse ? 5001 : 4999] == 1.0);
  }
}

TEST_CASE("scans of lines wider than one binding run on the GPU and carry across chunks") {
  size_t range = small_binding_range();
  if (!range)
    return;
  mx::vulkan::reset_fallback_counts();
  auto gpu = mx::Device::gpu;
  auto cpu = mx::Device::cpu;
  // One int32 row longer than a binding (a two-level scan over segments of the row); a
  // square just wider than a binding scanned down its columns (segments of rows), also
  // transposed (a staged copy first); two rows of more than half a binding scanned across
  // them (one elementwise launch per row). Integers: every result is exact. Each input lives
  // for its own cases only (the device holds 2 GiB on lavapipe).
  auto check = [&](const char* what, const mx::array& x, int axis, ScanOp op, bool reverse,
                   bool inclusive) {
    auto got = gpu_eval_checked(
        [&] { return std::vector<mx::array>{scan(op, x, axis, reverse, inclusive, gpu)}; },
        what)[0];
    auto want = scan(op, x, axis, reverse, inclusive, cpu);
    // array_equal first: converting 2^25 elements to doubles is the slow part.
    bool same = mx::array_equal(got, want, cpu).item<bool>();
    CHECK_MESSAGE((same || all_close(got, want, {0, 0}, what)), what);
  };
  {
    int n = static_cast<int>(range / 4) + 4099;
    auto row = mx::astype(mx::reshape(small_ints(1, n, 51), {n}, cpu), mx::int32, cpu);
    row.eval();
    check("row cumsum", row, 0, ScanOp::Sum, false, true);
    check("row reverse exclusive cumsum", row, 0, ScanOp::Sum, true, false);
  }
  {
    int side = static_cast<int>(std::sqrt(range / 4.0)) + 64;
    auto square = small_ints(side, side, 52);
    check("columns reverse exclusive cummin", square, 0, ScanOp::Min, true, false);
    check("transposed columns exclusive cumsum", mx::transpose(square, cpu), 0, ScanOp::Sum, false,
          false);
  }
  {
    auto rows = mx::astype(small_ints(2, static_cast<int>(range / 8) + 5, 53), mx::int32, cpu);
    rows.eval();
    check("across rows of half a binding, reverse exclusive", rows, 0, ScanOp::Sum, true, false);
  }
  CHECK(mx::vulkan::fallback_counts().empty());
}

TEST_CASE("scan keys render and compile for both modes and index widths") {
  namespace cg = mlx::core::vulkan::codegen;
  cg::DeviceCaps caps;
  caps.storage_8bit = caps.storage_16bit = caps.shader_int64 = true;
  caps.max_workgroup_invocations = 256;
  caps.fingerprint = "test-device";
  for (bool columns : {false, true}) {
    cg::ScanGeometry g;
    g.columns = columns;
    g.len = 1000;
    g.inner = columns ? 10 : 1;
    g.count = 100;
    CHECK(cg::scan_key("Sum", "f32", g).canonical() ==
          std::string("scan:dtype=f32,idx=32,mode=") + (columns ? "col" : "row") + ",op=Sum");
    g.count = 3000000;  // 3e9 elements: 64-bit indices
    for (const char* dt : {"f32", "i64", "bf16"}) {
      auto key = cg::scan_key(columns ? "Max" : "Sum", dt, g);
      CHECK(key.params.at("idx") == "64");
      auto src = cg::render(key, caps);
      CHECK(cg::validate_spirv(cg::compile(key, src).words) == "");
      auto launch = cg::scan_launch(key, src, g);
      CHECK(launch.push_constants.size() == 72);
      g.count = 100;
      CHECK_THROWS_AS(cg::scan_launch(key, src, g), std::invalid_argument);
      g.count = 3000000;
    }
  }
  // Segments: totals and carry-in are flags; carry-in binds the carries (seg=1).
  cg::ScanGeometry s;
  s.count = 2;
  s.len = 151936;
  s.seg = 4096;
  s.segs = 38;
  s.carry_in = true;
  auto key = cg::scan_key("Sum", "f32", s);
  CHECK(key.canonical() == "scan:dtype=f32,idx=32,mode=row,op=Sum,seg=1");
  auto src = cg::render(key, caps);
  CHECK(src.num_buffers == 3);
  CHECK(cg::validate_spirv(cg::compile(key, src).words) == "");
  CHECK(cg::scan_launch(key, src, s).groups[0] == 76);
  s.segs = 37;  // 37 segments do not cover the row
  CHECK_THROWS_AS(cg::scan_launch(key, src, s), std::invalid_argument);
  s.segs = 38;
  s.carry_in = false;  // the key binds carries, the geometry has none
  CHECK_THROWS_AS(cg::scan_launch(key, src, s), std::invalid_argument);
  CHECK_THROWS_AS(
      cg::render(cg::KernelKey::parse("scan:dtype=f32,idx=32,mode=col,op=Sum,seg=1"), caps),
      std::invalid_argument);
  CHECK_THROWS_AS(cg::render(cg::KernelKey::parse("scan:dtype=f32,idx=32,mode=row,op=Mean"), caps),
                  std::invalid_argument);
  CHECK_THROWS_AS(cg::render(cg::KernelKey::parse("scan:dtype=f64,idx=32,mode=row,op=Sum"), caps),
                  std::invalid_argument);
}

TEST_CASE("logcumsumexp on the GPU matches the CPU: rows, columns, reverse, exclusive, -inf") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // Each step is one logaddexp in f32 on the GPU (log(1 + e^d) with d <= 0) against double
  // on the CPU: a few f32 roundings of a result of magnitude up to ~log(len) + 8, so 2e-5
  // relative and 2e-5 absolute for len <= 5000; 16-bit outputs: one rounding of the dtype.
  uint64_t seed = 900;
  auto specials = [](const mx::array& x, mx::StreamOrDevice s) {
    // -inf where x < -7.5: exp(-inf) = 0 terms, and a leading -inf start.
    auto ninf = mx::astype(mx::array(-std::numeric_limits<float>::infinity()), x.dtype(), s);
    return mx::where(mx::less(x, mx::array(-7.5f), s), ninf, x, s);
  };
  for (auto dt : {mx::float32, mx::float16, mx::bfloat16}) {
    Tolerance tol = dt == mx::float32 ? Tolerance{2e-5, 2e-5} : default_tolerance(dt);
    for (int axis : {-1, 0}) {
      for (bool reverse : {false, true}) {
        bool inclusive = !(reverse && axis == 0);
        Op op = [=](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
          return mx::logcumsumexp(specials(in[0], s), axis, reverse, inclusive, s);
        };
        Case c{"logcumsumexp axis " + std::to_string(axis) + (reverse ? " reverse" : "") +
                   (inclusive ? "" : " exclusive"),
               {dt},
               {37, 130},
               Layout::contiguous,
               ++seed};
        CHECK_MESSAGE(run_case(c, op, {Domain{-8, 8}}, tol), c.describe());
      }
    }
  }
  Op flat = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::logcumsumexp(in[0], false, true, s);
  };
  Case c{"logcumsumexp flattened", {mx::float32}, {5000}, Layout::contiguous, ++seed};
  CHECK_MESSAGE(run_case(c, flat, {Domain{-8, 8}}, Tolerance{2e-5, 2e-5}), c.describe());
  CHECK(mx::vulkan::fallback_counts()["CumLogAddExp"] == 0);
}
