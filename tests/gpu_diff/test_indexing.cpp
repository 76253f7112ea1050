// The indexing kernels ("gather" and "scatter", docs/indexing.md) against the CPU
// reference: take, take_along_axis, gather, scatter and its reductions, put_along_axis,
// scatter_add_axis, and slice / slice_update at an array start, over dtypes, index dtypes,
// layouts, duplicates, empty index arrays and out-of-range indices. Outputs are poisoned and
// guarded (gpu_eval_checked); none of these primitives takes the CPU route.
//
// Tolerance: every comparison is exact. Gathers move bits; a scatter in its "seq" mode
// combines duplicates in index order with the CPU's roundings; in its "atomic" mode the
// order is free, so those tests use values whose sums are exact in any order (integers,
// which wrap the same in any order, and small multiples of 1/8 in f32 / bf16), plus max/min,
// which do not depend on order.
//
// Out-of-range indices raise on the CPU (they are undefined in MLX); on the GPU a gather
// reads zeros and a scatter drops the update: those cases compare with a reference built
// from in-range indices.
//
// Kernel count (each new pipeline costs lavapipe 40-400 ms): gathers move bits, so value
// dtypes share a kernel per width; scatter ops run every dtype for the plain scatter and
// f32 / i32 / bf16 for the reductions.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>

#include "codegen/indexing.h"
#include "harness.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/backend/vulkan/kernel_library.h"

namespace mx = mlx::core;
namespace cg = mlx::core::vulkan::codegen;
using namespace gpu_diff;

namespace {

const auto cpu = mx::Device::cpu;
const auto gpu = mx::Device::gpu;

const std::vector<mx::Dtype> kIndexDtypes = {mx::int8,  mx::int16,  mx::int32,  mx::int64,
                                             mx::uint8, mx::uint16, mx::uint32, mx::uint64};

// Integers in [lo, hi) as `dt` in `layout` on device d.
mx::array ints(const mx::Shape& shape, int lo, int hi, mx::Dtype dt, uint64_t seed, mx::Device d,
               Layout layout = Layout::contiguous) {
  return make_input(shape, dt, layout, seed,
                    Domain{static_cast<double>(lo), static_cast<double>(hi)}, d);
}

// Runs make(d) on the CPU and on the GPU (poisoned, guarded) and compares exactly.
void check_op(const std::string& what, const std::function<mx::array(mx::Device)>& make) {
  auto want = make(cpu);
  want.eval();
  auto got = gpu_eval_checked([&] { return std::vector<mx::array>{make(gpu)}; }, what)[0];
  CHECK_MESSAGE(all_close(got, want, {0, 0}, what), what);
}

// Every primitive of this suite stayed on the GPU.
void check_no_fallback() {
  auto counts = mx::vulkan::fallback_counts();
  for (const char* name :
       {"Take", "TakeAlongAxis", "Gather", "Scatter", "ScatterAdd", "ScatterProd", "ScatterMax",
        "ScatterMin", "PutAlongAxis", "ScatterAddAxis", "DynamicSlice", "DynamicSliceUpdate"}) {
    CHECK_MESSAGE(counts[name] == 0, name << " took the CPU route");
  }
}

std::string dt_name(mx::Dtype dt) {
  return mx::dtype_to_string(dt);
}

}  // namespace

TEST_CASE("take and take_along_axis on the GPU match the CPU for every dtype") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  uint64_t seed = 100;
  for (auto dt : gpu_dtypes) {
    ++seed;
    auto what = "take " + dt_name(dt);
    check_op(what + " axis 1", [&](mx::Device d) {
      return mx::take(make_input({4, 5, 3}, dt, Layout::contiguous, seed, {}, d),
                      ints({2, 3}, -5, 5, mx::int32, seed + 1, d), 1, d);
    });
    check_op(what + " flat", [&](mx::Device d) {
      return mx::take(make_input({4, 5, 3}, dt, Layout::contiguous, seed, {}, d),
                      ints({7}, -60, 60, mx::int32, seed + 2, d), d);
    });
    check_op("take_along_axis " + dt_name(dt), [&](mx::Device d) {
      return mx::take_along_axis(make_input({4, 5, 3}, dt, Layout::contiguous, seed, {}, d),
                                 ints({4, 5, 2}, -3, 3, mx::int32, seed + 3, d), 2, d);
    });
  }
  check_no_fallback();
}

TEST_CASE("take and take_along_axis on the GPU read every layout of source and indices") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  uint64_t seed = 200;
  for (auto layout : all_layouts) {
    ++seed;
    std::string what = std::string("layout ") + layout_name(layout);
    for (int axis : {0, 1, 2, -1}) {
      check_op(what + " take axis " + std::to_string(axis), [&](mx::Device d) {
        return mx::take(make_input({6, 5, 5}, mx::float32, layout, seed, {}, d),
                        ints({3, 4}, -5, 5, mx::int32, seed + 7, d, layout), axis, d);
      });
    }
    check_op(what + " take_along_axis", [&](mx::Device d) {
      return mx::take_along_axis(make_input({6, 5, 5}, mx::float32, layout, seed, {}, d),
                                 ints({6, 3, 5}, -5, 5, mx::int32, seed + 8, d, layout), 1, d);
    });
  }
  // 0-d indices and index arrays broadcast against the source.
  check_op("take 0-d index", [&](mx::Device d) {
    return mx::take(make_input({6, 5}, mx::float32, Layout::contiguous, 1, {}, d), mx::array(-2), 1,
                    d);
  });
  check_op("take_along_axis broadcast indices", [&](mx::Device d) {
    return mx::take_along_axis(make_input({6, 5}, mx::float32, Layout::contiguous, 2, {}, d),
                               ints({1, 3}, -5, 5, mx::int32, 3, d), 1, d);
  });
  check_no_fallback();
}

TEST_CASE("gather kernels accept every integer index dtype") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  uint64_t seed = 300;
  for (auto it : kIndexDtypes) {
    ++seed;
    int lo = mx::is_unsigned(it) ? 0 : -5;
    check_op("take index " + dt_name(it), [&](mx::Device d) {
      return mx::take(make_input({5, 6}, mx::float32, Layout::contiguous, seed, {}, d),
                      ints({4}, lo, 5, it, seed + 1, d), 0, d);
    });
    check_op("take_along_axis index " + dt_name(it), [&](mx::Device d) {
      return mx::take_along_axis(make_input({5, 6}, mx::float32, Layout::contiguous, seed, {}, d),
                                 ints({5, 2}, lo, 5, it, seed + 2, d), 1, d);
    });
  }
  check_no_fallback();
}

TEST_CASE("row gathers copy 16-byte vectors and fall back to narrower ones when misaligned") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // The plan for an embedding lookup: [151936, 1024] bf16 rows, 512 int32 indices.
  cg::GatherGeometry g;
  g.shape = {512, 1024};
  g.src_strides = {0, 1};
  g.idx_strides = {1, 0};
  g.axes = {{0, 1024, 151936, 151935}};
  g.itemsize = 2;
  g.src_hi = int64_t{151936} * 1024 - 1;
  g.win_hi = g.src_hi + 1;
  auto key = cg::gather_key("i32", false, g);
  CHECK(key.params["layout"] == "rows");
  CHECK(key.params["unit"] == "16");
  g.src_offset = 2;  // element 0 4 bytes off a 16-byte boundary: 4-byte units (bf16 pairs)
  g.axes[0].stride = 1026;
  CHECK(cg::gather_key("i32", false, g).params["unit"] == "4");

  struct RowCase {
    mx::Shape shape;
    mx::Dtype dt;
    bool misaligned;  // take from a[:, 1:-1] of a wider array
  };
  std::vector<RowCase> cases = {{{50, 64}, mx::float32, false},
                                {{40, 256}, mx::bfloat16, false},
                                {{30, 200}, mx::uint8, false},
                                {{20, 24}, mx::int64, false},
                                {{50, 64}, mx::float32, true}};
  uint64_t seed = 400;
  for (const auto& c : cases) {
    ++seed;
    std::string what = "row take " + mx::shape_to_string(c.shape) + " " + dt_name(c.dt) +
                       (c.misaligned ? " misaligned" : "");
    auto table = [&](mx::Device d) {
      if (!c.misaligned) {
        return make_input(c.shape, c.dt, Layout::contiguous, seed, {}, d);
      }
      auto wide = make_input({c.shape[0], c.shape[1] + 2}, c.dt, Layout::contiguous, seed, {}, d);
      return mx::slice(wide, {0, 1}, {c.shape[0], c.shape[1] + 1}, d);
    };
    check_op(what, [&](mx::Device d) {
      return mx::take(table(d), ints({3, 5}, -c.shape[0], c.shape[0], mx::int32, seed + 1, d), 0,
                      d);
    });
    check_op(what + " axis 1 of 3-d", [&](mx::Device d) {
      auto t = mx::reshape(table(d), {2, c.shape[0] / 2, c.shape[1]}, d);
      return mx::take(t, ints({4}, 0, c.shape[0] / 2, mx::int32, seed + 2, d), 1, d);
    });
  }
  check_no_fallback();
}

TEST_CASE("out-of-range indices read zeros in GPU gathers (the CPU raises)") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  for (auto shape : {mx::Shape{5, 3}, mx::Shape{5, 64}}) {  // element and row layouts
    std::string what = "take out of range " + mx::shape_to_string(shape);
    auto a = make_input(shape, mx::float32, Layout::contiguous, 500, {}, cpu);
    auto idx = mx::array({0, 5, -6, 100, -1, 4, -2147483647 - 1});
    CHECK_THROWS_WITH_AS(mx::take(a, idx, 0, cpu).eval(), doctest::Contains("[take]"),
                         std::invalid_argument);
    auto valid = mx::logical_and(mx::greater_equal(idx, mx::array(-5), cpu),
                                 mx::less(idx, mx::array(5), cpu), cpu);
    auto safe = mx::where(valid, idx, mx::array(0), cpu);
    auto want =
        mx::where(mx::expand_dims(valid, 1, cpu), mx::take(a, safe, 0, cpu), mx::array(0.0f), cpu);
    auto got =
        gpu_eval_checked([&] { return std::vector<mx::array>{mx::take(a, idx, 0, gpu)}; }, what)[0];
    CHECK_MESSAGE(all_close(got, want, {0, 0}, what), what);
    // A huge unsigned index never wraps into range.
    auto big = mx::array({uint64_t{1} << 63, uint64_t{2}}, mx::uint64);
    auto want_big = mx::concatenate(
        {mx::zeros({1, shape[1]}, cpu), mx::take(a, mx::array({2}), 0, cpu)}, 0, cpu);
    got = gpu_eval_checked([&] { return std::vector<mx::array>{mx::take(a, big, 0, gpu)}; },
                           what + " uint64")[0];
    CHECK_MESSAGE(all_close(got, want_big, {0, 0}, what + " uint64"), what);
  }
  // A gather window that does not fit reads zeros as a whole.
  auto a = make_input({6, 4}, mx::int32, Layout::contiguous, 501, {}, cpu);
  auto got = gpu_eval_checked(
      [&] {
        return std::vector<mx::array>{mx::gather(a, mx::array({4, 5}), 0, {2, 4}, gpu)};
      },
      "gather window")[0];
  auto want = mx::concatenate(
      {mx::gather(a, mx::array({4}), 0, {2, 4}, cpu), mx::zeros({1, 2, 4}, mx::int32, cpu)}, 0,
      cpu);
  CHECK(all_close(got, want, {0, 0}, "gather window out of range"));
  check_no_fallback();
}

TEST_CASE("gather with several index arrays, windows and no index arrays matches the CPU") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  uint64_t seed = 600;
  for (auto layout : all_layouts) {
    ++seed;
    std::string what = std::string("gather layout ") + layout_name(layout);
    check_op(what + " two index arrays", [&](mx::Device d) {
      auto a = make_input({6, 7, 5}, mx::float32, layout, seed, {}, d);
      // Windows of 2 on axis 0 start at 0..4 (or -6..-2); of 1 on axis 2 anywhere.
      auto i0 = ints({4, 3}, 0, 5, mx::int32, seed + 1, d, layout);
      auto i1 = ints({1, 3}, -5, 5, mx::int32, seed + 2, d);
      return mx::gather(a, {i0, i1}, {0, 2}, {2, 3, 1}, d);
    });
    check_op(what + " one index array", [&](mx::Device d) {
      auto a = make_input({6, 7, 5}, mx::float32, layout, seed, {}, d);
      return mx::gather(a, ints({5}, -7, -1, mx::int32, seed + 3, d, layout), 1, {6, 2, 5}, d);
    });
  }
  check_op("gather without index arrays", [&](mx::Device d) {
    auto a = make_input({6, 7}, mx::float32, Layout::transposed, 1, {}, d);
    return mx::gather(a, std::vector<mx::array>{}, std::vector<int>{}, {3, 2}, d);
  });
  check_op("gather mixed index dtypes", [&](mx::Device d) {
    auto a = make_input({6, 7}, mx::float32, Layout::contiguous, 2, {}, d);
    return mx::gather(a, {ints({4}, 0, 6, mx::uint8, 3, d), ints({4}, -7, 7, mx::int16, 4, d)},
                      {0, 1}, {1, 1}, d);
  });
  check_no_fallback();
}

TEST_CASE("a gather source wider than one binding is read in windows") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // Windows of 256 elements (MLX_VK_GATHER_WINDOW, a test knob) over small sources: rows,
  // elements, a reversed view (offsets below element 0) and out-of-range indices, whose
  // zeros exactly one window writes.
  ::setenv("MLX_VK_GATHER_WINDOW", "256", 1);
  uint64_t seed = 700;
  for (auto layout : {Layout::contiguous, Layout::reversed, Layout::transposed}) {
    ++seed;
    std::string what = std::string("windowed take ") + layout_name(layout);
    check_op(what + " rows", [&](mx::Device d) {
      return mx::take(make_input({50, 64}, mx::float32, layout, seed, {}, d),
                      ints({9}, -50, 50, mx::int32, seed + 1, d), 0, d);
    });
    check_op(what + " elements", [&](mx::Device d) {
      return mx::take_along_axis(make_input({40, 7}, mx::float32, layout, seed, {}, d),
                                 ints({40, 3}, -7, 7, mx::int32, seed + 2, d), 1, d);
    });
    check_op(what + " dynamic slice", [&](mx::Device d) {
      return mx::slice(make_input({40, 7}, mx::float32, layout, seed, {}, d), mx::array(29), {0},
                       {5, 7}, d);
    });
  }
  auto a = make_input({50, 64}, mx::float32, Layout::contiguous, 710, {}, cpu);
  auto idx = mx::array({49, 50, -51, 0});
  auto got = gpu_eval_checked([&] { return std::vector<mx::array>{mx::take(a, idx, 0, gpu)}; },
                              "windowed out of range")[0];
  auto want = mx::concatenate({mx::take(a, mx::array({49}), 0, cpu), mx::zeros({2, 64}, cpu),
                               mx::take(a, mx::array({0}), 0, cpu)},
                              0, cpu);
  CHECK(all_close(got, want, {0, 0}, "windowed out of range"));
  ::unsetenv("MLX_VK_GATHER_WINDOW");
  check_no_fallback();
}

TEST_CASE("an embedding gather from a [151936, 1024] bf16 table reads the selected rows") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  const int V = 151936, D = 1024;
  // table[r, c] = r % 61 + c % 67, exact in bf16 (311 MiB: more than lavapipe's 128 MiB
  // binding, so the lookup runs as one launch per window of the table).
  auto rows = mx::astype(mx::remainder(mx::arange(V, gpu), mx::array(61), gpu), mx::bfloat16, gpu);
  auto cols = mx::astype(mx::remainder(mx::arange(D, gpu), mx::array(67), gpu), mx::bfloat16, gpu);
  auto table = mx::add(mx::reshape(rows, {V, 1}, gpu), mx::reshape(cols, {1, D}, gpu), gpu);
  table.eval();
  for (int n : {1, 512}) {
    std::vector<int> ids(n);
    for (int i = 0; i < n; ++i) {
      ids[i] = i == 0 ? V - 1 : i == 1 ? -1 : static_cast<int>((int64_t{i} * 2654435761u) % V);
    }
    auto idx = mx::array(ids.begin(), {n}, mx::int32);
    auto got = gpu_eval_checked(
        [&] { return std::vector<mx::array>{mx::take(table, idx, 0, gpu)}; }, "embedding")[0];
    REQUIRE(got.shape() == mx::Shape{n, D});
    auto v = mlx_test::to_doubles(got);
    int bad = 0;
    for (int i = 0; i < n && bad < 5; ++i) {
      int r = ids[i] < 0 ? ids[i] + V : ids[i];
      for (int c = 0; c < D; ++c) {
        double want = r % 61 + c % 67;
        if (v[static_cast<size_t>(i) * D + c] != want) {
          FAIL_CHECK("embedding row " << i << " (id " << ids[i] << ") column " << c << ": "
                                      << v[static_cast<size_t>(i) * D + c] << ", want " << want);
          ++bad;
          break;
        }
      }
    }
  }
  check_no_fallback();
}

TEST_CASE("scatter and its reductions on the GPU combine duplicates as the CPU does") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  using ScatterFn =
      mx::array (*)(const mx::array&, const mx::array&, const mx::array&, int, mx::StreamOrDevice);
  struct Op {
    const char* name;
    ScatterFn fn;
  };
  const Op ops[] = {{"scatter", mx::scatter},
                    {"scatter_add", mx::scatter_add},
                    {"scatter_prod", mx::scatter_prod},
                    {"scatter_max", mx::scatter_max},
                    {"scatter_min", mx::scatter_min}};
  uint64_t seed = 800;
  // 9 updates of one row each into 7 rows: duplicates, negative indices ("seq" mode).
  auto run = [&](const Op& op, mx::Dtype dt, Layout layout) {
    ++seed;
    std::string what = std::string(op.name) + " " + dt_name(dt) + " " + layout_name(layout);
    check_op(what, [&](mx::Device d) {
      auto a = make_input({7, 6}, dt, layout, seed, {}, d);
      auto idx = ints({9}, -7, 7, mx::int32, seed + 1, d);
      auto upd = make_input({9, 1, 6}, dt, Layout::contiguous, seed + 2, {}, d);
      return op.fn(a, idx, upd, 0, d);
    });
  };
  for (auto dt : gpu_dtypes) {
    run(ops[0], dt, Layout::contiguous);
  }
  for (const auto& op : ops) {
    for (auto dt : {mx::float32, mx::int32, mx::bfloat16}) {
      run(op, dt, Layout::contiguous);
    }
  }
  for (auto layout : {Layout::transposed, Layout::broadcast, Layout::reversed}) {
    run(ops[0], mx::float32, layout);
    run(ops[1], mx::float32, layout);
  }
  // Index arrays on two axes with windows of extent 2 on an indexed axis.
  check_op("scatter_add two axes", [&](mx::Device d) {
    auto a = make_input({5, 6, 4}, mx::float32, Layout::contiguous, 850, {}, d);
    auto i0 = ints({3}, 0, 4, mx::int32, 851, d);  // windows of 2 rows start at 0..3
    auto i1 = ints({3}, 0, 4, mx::int32, 852, d);
    auto upd = make_input({3, 2, 6, 1}, mx::float32, Layout::transposed, 853, {}, d);
    return mx::scatter_add(a, {i0, i1}, upd, {0, 2}, d);
  });
  // One index position ("each" mode) and no index arrays.
  check_op("scatter one index", [&](mx::Device d) {
    auto a = make_input({7, 6}, mx::float32, Layout::contiguous, 860, {}, d);
    return mx::scatter(a, mx::array({-3}),
                       make_input({1, 2, 6}, mx::float32, Layout::contiguous, 861, {}, d), 0, d);
  });
  check_op("scatter no index arrays", [&](mx::Device d) {
    auto a = make_input({7, 6}, mx::float32, Layout::contiguous, 862, {}, d);
    return mx::scatter(a, std::vector<mx::array>{},
                       make_input({2, 3}, mx::float32, Layout::contiguous, 863, {}, d),
                       std::vector<int>{}, d);
  });
  for (auto it : {mx::int64, mx::uint8}) {
    int lo = mx::is_unsigned(it) ? 0 : -7;
    check_op("scatter index " + dt_name(it), [&](mx::Device d) {
      auto a = make_input({7, 6}, mx::float32, Layout::contiguous, 870, {}, d);
      return mx::scatter(a, ints({5}, lo, 7, it, 871, d),
                         make_input({5, 1, 6}, mx::float32, Layout::contiguous, 872, {}, d), 0, d);
    });
  }
  check_no_fallback();
}

TEST_CASE("atomic scatters (many updates into few slots) accumulate duplicates exactly") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // The plan: 5000 updates into 10 slots is "atomic"; a row of 1024 columns is "seq".
  cg::ScatterGeometry g;
  g.n = 5000;
  g.axes = {{0, 1, 10, 9}};
  CHECK(cg::scatter_mode("Sum", "i32", g) == "atomic");
  CHECK(cg::scatter_mode("None", "i32", g) == "seq");
  CHECK(cg::scatter_mode("Sum", "i64", g) == "seq");
  g.outer = {{8192}, {1}, {1}, {0}};
  CHECK(cg::scatter_mode("Sum", "f32", g) == "seq");
  g.n = 1;
  CHECK(cg::scatter_mode("Sum", "f32", g) == "each");

  struct AtomicCase {
    const char* op;
    mx::Dtype dt;
    int n;
    int lo, hi;  // update values (f32: eighths)
  };
  std::vector<AtomicCase> cases = {
      {"scatter_add", mx::int32, 5000, -50, 50},   {"scatter_max", mx::int32, 5000, -50, 50},
      {"scatter_min", mx::int32, 5000, -50, 50},   {"scatter_prod", mx::int32, 5000, -9, 9},
      {"scatter_add", mx::uint8, 5000, 0, 200},    {"scatter_max", mx::int16, 3000, -900, 900},
      {"scatter_add", mx::float32, 5000, -32, 32}, {"scatter_add", mx::bfloat16, 1000, 0, 2},
      {"scatter_min", mx::float16, 2000, -60, 60}, {"scatter_add", mx::bool_, 500, 0, 2}};
  uint64_t seed = 900;
  for (const auto& c : cases) {
    ++seed;
    std::string what = std::string("atomic ") + c.op + " " + dt_name(c.dt);
    check_op(what, [&](mx::Device d) {
      auto a = mx::astype(ints({10}, -3, 3, mx::int32, seed, d), c.dt, d);
      auto idx = ints({c.n}, -10, 10, mx::int32, seed + 1, d);
      auto upd = ints({c.n, 1}, c.lo, c.hi, mx::int32, seed + 2, d);
      auto u = c.dt == mx::float32 ? mx::divide(upd, mx::array(8.0f), d) : mx::astype(upd, c.dt, d);
      if (c.dt == mx::float16) {  // NaNs: min propagates them, in any order
        u = mx::where(mx::equal(upd, mx::array(7), d), mx::array(NAN, mx::float16), u, d);
      }
      std::string op = c.op;
      if (op == "scatter_add")
        return mx::scatter_add(a, idx, u, 0, d);
      if (op == "scatter_max")
        return mx::scatter_max(a, idx, u, 0, d);
      if (op == "scatter_min")
        return mx::scatter_min(a, idx, u, 0, d);
      return mx::scatter_prod(a, idx, u, 0, d);
    });
  }
  // Windows of a row: 3 outer columns, 600 updates each.
  check_op("atomic scatter_add rows", [&](mx::Device d) {
    auto a = mx::zeros({4, 3}, mx::int32, d);
    return mx::scatter_add(a, ints({600}, -4, 4, mx::int32, 950, d),
                           ints({600, 1, 3}, -9, 9, mx::int32, 951, d), 0, d);
  });
  check_no_fallback();
}

TEST_CASE("int64 scatter_add on the GPU sums duplicates exactly, wrapping past 2^63") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // Values near 2^62 (not exact in a double, so compared as int64 words): sums of duplicates
  // wrap, in index order on both devices (64-bit dtypes always use "seq").
  auto big = [](const mx::array& small, mx::Device d) {
    auto s = mx::astype(small, mx::int64, d);
    return mx::add(mx::multiply(s, mx::array(int64_t{1} << 59, mx::int64), d),
                   mx::add(s, mx::array(int64_t{123456789}, mx::int64), d), d);
  };
  struct Shape64 {
    int slots, n, width;
  };
  uint64_t seed = 1300;
  for (auto c : {Shape64{7, 9, 6}, Shape64{10, 5000, 1}}) {
    ++seed;
    std::string what =
        "int64 scatter_add " + std::to_string(c.n) + " into " + std::to_string(c.slots);
    auto make = [&](mx::Device d) {
      auto a = big(ints({c.slots, c.width}, -8, 8, mx::int32, seed, d), d);
      auto idx = ints({c.n}, -c.slots, c.slots, mx::int32, seed + 1, d);
      auto upd = big(ints({c.n, 1, c.width}, -8, 8, mx::int32, seed + 2, d), d);
      return mx::scatter_add(a, idx, upd, 0, d);
    };
    auto want = make(cpu);
    auto got = gpu_eval_checked([&] { return std::vector<mx::array>{make(gpu)}; }, what)[0];
    REQUIRE(got.dtype() == mx::int64);
    CHECK_MESSAGE(mlx_test::to_vector<int64_t>(got) == mlx_test::to_vector<int64_t>(want), what);
  }
  check_no_fallback();
}

TEST_CASE("put_along_axis and scatter_add_axis on the GPU match the CPU") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  uint64_t seed = 1000;
  for (auto layout : all_layouts) {
    ++seed;
    std::string what = std::string("along axis ") + layout_name(layout);
    for (int axis : {0, 1}) {
      check_op(what + " put axis " + std::to_string(axis), [&](mx::Device d) {
        auto a = make_input({5, 6}, mx::float32, layout, seed, {}, d);
        auto idx = ints(axis == 0 ? mx::Shape{3, 6} : mx::Shape{5, 4}, -5, 5, mx::int32, seed + 1,
                        d, layout);
        auto vals = make_input(idx.shape(), mx::float32, Layout::contiguous, seed + 2, {}, d);
        return mx::put_along_axis(a, idx, vals, axis, d);
      });
      check_op(what + " add axis " + std::to_string(axis), [&](mx::Device d) {
        auto a = make_input({5, 6}, mx::float32, layout, seed, {}, d);
        auto idx = ints(axis == 0 ? mx::Shape{3, 6} : mx::Shape{5, 4}, -5, 5, mx::int32, seed + 3,
                        d, layout);
        auto vals = make_input(idx.shape(), mx::float32, Layout::contiguous, seed + 4, {}, d);
        return mx::scatter_add_axis(a, idx, vals, axis, d);
      });
    }
  }
  // Broadcast indices and a scalar value; an int64 index dtype; a long axis ("atomic").
  check_op("put_along_axis broadcast", [&](mx::Device d) {
    return mx::put_along_axis(make_input({5, 6}, mx::int32, Layout::contiguous, 1010, {}, d),
                              ints({1, 2}, 0, 6, mx::int64, 1011, d), mx::array(-7), 1, d);
  });
  check_op("scatter_add_axis long axis", [&](mx::Device d) {
    auto vals = mx::divide(ints({2, 1000}, -16, 16, mx::int32, 1012, d), mx::array(8.0f), d);
    return mx::scatter_add_axis(mx::zeros({2, 9}, d), ints({2, 1000}, -9, 9, mx::int32, 1013, d),
                                vals, 1, d);
  });
  check_no_fallback();
}

namespace {

// The CPU result of a scatter when only its in-range indices apply: `a` gets `extra` more
// slots at the end of `axis`, each out-of-range index points at the first of them (in-range
// negative ones are wrapped first, as the padded axis is longer) and the slots are sliced
// off after. `scatter(padded, indices)` runs the op on the CPU.
mx::array in_range_reference(
    const mx::array& a, const mx::array& idx, int axis, int window,
    const std::function<mx::array(const mx::array&, const mx::array&)>& scatter) {
  int n = a.shape(axis);
  std::vector<int32_t> safe;
  for (double v : mlx_test::to_doubles(idx)) {
    double w = v < 0 ? v + n : v;
    safe.push_back(w >= 0 && w <= n - window ? static_cast<int32_t>(w) : n);
  }
  mx::Shape extra_shape = a.shape();
  extra_shape[axis] = window;
  auto padded = mx::concatenate({a, mx::zeros(extra_shape, a.dtype(), cpu)}, axis, cpu);
  auto out = scatter(padded, mx::array(safe.begin(), idx.shape(), mx::int32));
  mx::Shape start(a.ndim(), 0);
  return mx::slice(out, start, a.shape(), cpu);
}

// The GPU result of make(gpu) equals `want` exactly, and make(cpu) raises at eval.
void check_dropped(const std::string& what, const std::function<mx::array(mx::Device)>& make,
                   const mx::array& want) {
  CHECK_THROWS_WITH_AS(make(cpu).eval(), doctest::Contains("is out of bounds"),
                       std::invalid_argument);
  auto got = gpu_eval_checked([&] { return std::vector<mx::array>{make(gpu)}; }, what)[0];
  CHECK_MESSAGE(all_close(got, want, {0, 0}, what), what);
}

}  // namespace

TEST_CASE("out-of-range indices drop their updates in GPU scatters (the CPU raises)") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  auto a = make_input({7, 6}, mx::float32, Layout::contiguous, 1200, {}, cpu);
  // In range on an axis of 7: -7..6; 7, -8, 100 and INT_MIN are not. Duplicates of 3.
  auto idx = mx::array({0, 7, -8, 3, 100, -1, 3, -2147483647 - 1, 6});
  auto upd = make_input({9, 1, 6}, mx::float32, Layout::contiguous, 1201, {}, cpu);
  // "seq" mode: a plain scatter (the last in-range duplicate wins) and a sum.
  check_dropped(
      "scatter out of range", [&](mx::Device d) { return mx::scatter(a, idx, upd, 0, d); },
      in_range_reference(a, idx, 0, 1, [&](const mx::array& p, const mx::array& i) {
        return mx::scatter(p, i, upd, 0, cpu);
      }));
  check_dropped(
      "scatter_add out of range", [&](mx::Device d) { return mx::scatter_add(a, idx, upd, 0, d); },
      in_range_reference(a, idx, 0, 1, [&](const mx::array& p, const mx::array& i) {
        return mx::scatter_add(p, i, upd, 0, cpu);
      }));
  // A window of 2 rows fits from rows -7..5: index 6 (and -1, which wraps to 6) is dropped.
  auto upd2 = make_input({9, 2, 6}, mx::float32, Layout::contiguous, 1202, {}, cpu);
  check_dropped(
      "scatter_add window out of range",
      [&](mx::Device d) { return mx::scatter_add(a, idx, upd2, 0, d); },
      in_range_reference(a, idx, 0, 2, [&](const mx::array& p, const mx::array& i) {
        return mx::scatter_add(p, i, upd2, 0, cpu);
      }));
  // Two index arrays: a position with either index out of range drops its window (the
  // reference sends those to an extra row of axis 0).
  {
    auto c = make_input({5, 6, 4}, mx::float32, Layout::contiguous, 1205, {}, cpu);
    auto i0 = mx::array({0, 2, 4, 1, 5, -5});
    auto i1 = mx::array({1, 4, -4, -5, 2, 3});  // axis 2 has 4: 4 and -5 are out
    auto uc = make_input({6, 1, 6, 1}, mx::float32, Layout::contiguous, 1206, {}, cpu);
    auto padded = mx::concatenate({c, mx::zeros({1, 6, 4}, cpu)}, 0, cpu);
    auto s0 = mx::array({0, 5, 4, 5, 5, 0});
    auto s1 = mx::array({1, 0, 0, 0, 0, 3});
    auto want =
        mx::slice(mx::scatter_add(padded, {s0, s1}, uc, {0, 2}, cpu), {0, 0, 0}, {5, 6, 4}, cpu);
    check_dropped(
        "scatter_add two index arrays out of range",
        [&](mx::Device d) {
          return mx::scatter_add(c, {i0, i1}, uc, {0, 2}, d);
        },
        want);
  }
  // "each" mode: one index position, out of range, leaves the source as it was.
  check_dropped(
      "scatter one index out of range",
      [&](mx::Device d) {
        return mx::scatter(a, mx::array({-8}), mx::slice(upd, {0, 0, 0}, {1, 1, 6}, d), 0, d);
      },
      a);
  // A huge uint64 index never wraps into range.
  auto big = mx::array({uint64_t{1} << 63, uint64_t{2}}, mx::uint64);
  check_dropped(
      "scatter uint64 out of range",
      [&](mx::Device d) {
        return mx::scatter(a, big, mx::slice(upd, {0, 0, 0}, {2, 1, 6}, d), 0, d);
      },
      mx::scatter(a, mx::array({2}), mx::slice(upd, {1, 0, 0}, {2, 1, 6}, cpu), 0, cpu));
  // "atomic" mode: 5000 int32 updates into 10 slots, about a third of them out of range.
  auto ia = ints({5000}, -15, 15, mx::int32, 1203, cpu);
  auto ua = ints({5000, 1}, -50, 50, mx::int32, 1204, cpu);
  auto za = mx::zeros({10}, mx::int32, cpu);
  check_dropped(
      "atomic scatter_add out of range",
      [&](mx::Device d) { return mx::scatter_add(za, ia, ua, 0, d); },
      in_range_reference(za, ia, 0, 1, [&](const mx::array& p, const mx::array& i) {
        return mx::scatter_add(p, i, ua, 0, cpu);
      }));

  // put_along_axis and scatter_add_axis ("seq"), along either axis.
  auto b = make_input({5, 6}, mx::float32, Layout::contiguous, 1210, {}, cpu);
  for (int axis : {0, 1}) {
    int n = b.shape(axis);
    auto ib = ints(axis == 0 ? mx::Shape{4, 6} : mx::Shape{5, 4}, -n - 3, n + 3, mx::int32,
                   1211 + axis, cpu);
    auto vb = make_input(ib.shape(), mx::float32, Layout::contiguous, 1213 + axis, {}, cpu);
    std::string ax = " axis " + std::to_string(axis);
    check_dropped(
        "put_along_axis out of range" + ax,
        [&](mx::Device d) { return mx::put_along_axis(b, ib, vb, axis, d); },
        in_range_reference(b, ib, axis, 1, [&](const mx::array& p, const mx::array& i) {
          return mx::put_along_axis(p, i, vb, axis, cpu);
        }));
    check_dropped(
        "scatter_add_axis out of range" + ax,
        [&](mx::Device d) { return mx::scatter_add_axis(b, ib, vb, axis, d); },
        in_range_reference(b, ib, axis, 1, [&](const mx::array& p, const mx::array& i) {
          return mx::scatter_add_axis(p, i, vb, axis, cpu);
        }));
  }
  // scatter_add_axis along a long axis ("atomic"): values in eighths, exact in any order.
  auto il = ints({2, 1000}, -12, 12, mx::int32, 1215, cpu);
  auto vl = mx::divide(ints({2, 1000}, -16, 16, mx::int32, 1216, cpu), mx::array(8.0f), cpu);
  auto zl = mx::zeros({2, 9}, cpu);
  check_dropped(
      "atomic scatter_add_axis out of range",
      [&](mx::Device d) { return mx::scatter_add_axis(zl, il, vl, 1, d); },
      in_range_reference(zl, il, 1, 1, [&](const mx::array& p, const mx::array& i) {
        return mx::scatter_add_axis(p, i, vl, 1, cpu);
      }));
  check_no_fallback();
}

TEST_CASE("slice and slice_update at an array start on the GPU match the CPU") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  uint64_t seed = 1100;
  for (auto layout : all_layouts) {
    ++seed;
    std::string what = std::string("dynamic ") + layout_name(layout);
    for (int start : {0, 2, 5, 100, -3}) {
      check_op(what + " slice start " + std::to_string(start), [&](mx::Device d) {
        auto a = make_input({6, 5, 4}, mx::float32, layout, seed, {}, d);
        return mx::slice(a, mx::array({start, 1}), {0, 2}, {3, 5, 2}, d);
      });
      check_op(what + " slice_update start " + std::to_string(start), [&](mx::Device d) {
        auto src = make_input({6, 5, 4}, mx::float32, layout, seed, {}, d);
        auto upd = make_input({3, 5, 2}, mx::float32, layout, seed + 1, {}, d);
        return mx::slice_update(src, upd, mx::array({start, 1}), {0, 2}, d);
      });
    }
  }
  for (auto it : kIndexDtypes) {
    check_op("dynamic start dtype " + dt_name(it), [&](mx::Device d) {
      auto a = make_input({6, 5}, mx::bfloat16, Layout::contiguous, 1150, {}, d);
      auto u =
          mx::slice_update(a, mx::array({1.0f, 2.0f}), mx::astype(mx::array(3), it, d), {1}, d);
      return mx::slice(u, mx::astype(mx::array(4), it, d), {0}, {2, 5}, d);
    });
  }
  check_op("dynamic huge uint64 start", [&](mx::Device d) {
    auto a = make_input({6, 5}, mx::float32, Layout::contiguous, 1160, {}, d);
    return mx::slice(a, mx::array({uint64_t{1} << 63}, mx::uint64), {0}, {2, 5}, d);
  });
  check_no_fallback();
}

TEST_CASE("a decode loop writes its KV cache in place at a moving position with one kernel") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  const int B = 2, T = 12, D = 8;
  auto cache = mx::zeros({B, T, D}, mx::bfloat16, gpu);
  cache.eval();
  const void* buffer = cache.data<uint16_t>();
  auto& lib = mx::vulkan::kernel_library();
  size_t builds = 0;
  for (int t = 0; t < T; ++t) {
    auto step = mx::astype(mx::full({B, 1, D}, static_cast<float>(t + 1), gpu), mx::bfloat16, gpu);
    cache = mx::slice_update(cache, step, mx::array(t), {1}, gpu);
    auto row = mx::slice(cache, mx::array(t), {1}, {B, 1, D}, gpu);
    mx::eval({cache, row});
    CHECK(mlx_test::to_doubles(row)[0] == t + 1);
    if (t == 1) {
      builds = lib.builds();
    } else if (t > 1) {
      CHECK_MESSAGE(lib.builds() == builds, "step " << t << " built a kernel");
    }
  }
  CHECK(cache.data<uint16_t>() == buffer);  // every step wrote in place
  auto v = mlx_test::to_doubles(cache);
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      CHECK(v[(static_cast<size_t>(b) * T + t) * D + 3] == t + 1);
    }
  }
  check_no_fallback();
}

TEST_CASE("empty index arrays and empty outputs on the GPU") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  check_op("take nothing", [&](mx::Device d) {
    return mx::take(make_input({4, 3}, mx::float32, Layout::contiguous, 1, {}, d),
                    mx::zeros({0}, mx::int32, d), 0, d);
  });
  check_op("scatter nothing", [&](mx::Device d) {
    return mx::scatter_add(make_input({4, 3}, mx::float32, Layout::contiguous, 2, {}, d),
                           mx::zeros({0}, mx::int32, d), mx::zeros({0, 1, 3}, d), 0, d);
  });
  check_op("put_along_axis nothing", [&](mx::Device d) {
    return mx::put_along_axis(make_input({4, 3}, mx::float32, Layout::contiguous, 3, {}, d),
                              mx::zeros({4, 0}, mx::int32, d), mx::array(1.0f), 1, d);
  });
  check_op("gather from empty", [&](mx::Device d) {
    return mx::gather(mx::zeros({0, 3}, d), mx::array({0}), 1, {0, 1}, d);
  });
  check_op("slice_update with an empty update", [&](mx::Device d) {
    return mx::slice_update(make_input({4, 3}, mx::float32, Layout::contiguous, 4, {}, d),
                            mx::zeros({0, 3}, d), mx::array(1), {0}, d);
  });
  check_no_fallback();
}
