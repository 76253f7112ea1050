// compile() on the GPU: each fused group is one dispatch of a "fused" kernel (SwiGLU: one
// instead of three), a shapeless compile reuses one kernel for every shape, and fused
// results equal the unfused kernels' (the emitter uses the same per-op GLSL, rounds each
// node to its dtype and keeps f32 nodes `precise`; both sides run on the same device, so
// they agree exactly; the float checks allow 2 ulp of f32 for a driver that contracts
// inside a shared math routine differently in the two kernels, docs/compile.md). Random
// integer and float graphs over contiguous (vector), offset and broadcast inputs run one
// dispatch per fused group and give the unfused results exactly.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <unordered_set>

#include "harness.h"
#include "mlx/backend/vulkan/command_encoder.h"
#include "mlx/backend/vulkan/kernel_library.h"
#include "mlx/backend/vulkan/stats.h"
#include "mlx/primitives.h"

namespace mx = mlx::core;
using namespace gpu_diff;

namespace {

std::vector<mx::array> swiglu(const std::vector<mx::array>& in) {
  auto g = in[0];
  return {mx::multiply(mx::multiply(g, mx::sigmoid(g)), in[1])};
}

// Dispatches recorded while evaluating `make`'s outputs (inputs evaluated first).
uint64_t dispatches_of(const std::function<std::vector<mx::array>()>& make) {
  auto outs = make();
  uint64_t before = mx::vulkan::dispatch_count();
  mx::eval(outs);
  return mx::vulkan::dispatch_count() - before;
}

// The dispatches evaluating `outs` takes when every primitive but a broadcast runs one
// kernel (a fused group is one primitive, whatever its outputs); `groups` gets the number
// of fused groups.
uint64_t expected_dispatches(const std::vector<mx::array>& outs, int& groups) {
  std::unordered_set<const mx::Primitive*> prims;
  std::unordered_set<std::uintptr_t> seen;
  std::vector<mx::array> stack(outs.begin(), outs.end());
  groups = 0;
  while (!stack.empty()) {
    mx::array a = stack.back();
    stack.pop_back();
    if (a.status() != mx::array::Status::unscheduled || !seen.insert(a.id()).second) {
      continue;
    }
    if (std::strcmp(a.primitive().name(), "Broadcast") != 0 &&
        prims.insert(&a.primitive()).second) {
      groups += std::strcmp(a.primitive().name(), "Compiled") == 0;
    }
    for (auto& in : a.inputs()) {
      stack.push_back(in);
    }
  }
  return prims.size();
}

// A seeded elementwise graph mixing integer and float math through casts: wrapping integer
// arithmetic, floor division, shifts, comparisons into where, float exp/tanh, and scalar
// constants (broadcast views, so groups see stride-0 inputs).
std::vector<mx::array> mixed_graph(const std::vector<mx::array>& in, uint64_t seed) {
  mlx_test::Rng rng(seed);
  std::vector<mx::array> pool = in;
  auto pick = [&]() { return pool[rng.next() % pool.size()]; };
  for (int i = 0; i < 10; ++i) {
    auto a = pick();
    auto b = mx::astype(pick(), a.dtype());
    bool ints = mx::is_integral(a.dtype());
    mx::array v = a;
    switch (rng.next() % 6) {
      case 0:
        v = mx::add(mx::multiply(a, b), mx::array(3, a.dtype()));
        break;
      case 1:
        v = ints ? mx::floor_divide(a, b) : mx::tanh(mx::subtract(a, b));
        break;
      case 2:
        v = ints ? mx::right_shift(mx::left_shift(a, mx::array(3, a.dtype())), b)
                 : mx::exp(mx::negative(mx::abs(a)));
        break;
      case 3:
        v = mx::where(mx::greater(a, b), a, mx::maximum(a, b));
        break;
      case 4:
        v = mx::astype(a, ints ? mx::bfloat16 : mx::int16);
        break;
      default:
        v = mx::astype(mx::remainder(a, mx::array(5, a.dtype())), ints ? mx::float32 : mx::uint8);
        break;
    }
    pool.push_back(v);
  }
  return {pool.back(), pool[pool.size() / 2]};
}

}  // namespace

TEST_CASE("a compiled SwiGLU is one fused dispatch and equals the unfused kernels") {
  if (!gpu_present())
    return;
  auto saved = mx::default_device();
  mx::set_default_device(mx::Device::gpu);
  auto cfun = mx::compile(swiglu, true);
  for (auto dt : {mx::float32, mx::bfloat16, mx::float16}) {
    for (int n : {7, 1000}) {
      CAPTURE(mx::dtype_to_string(dt));
      CAPTURE(n);
      auto g = mx::astype(mx::random::normal({2, n}), dt);
      auto u = mx::astype(mx::random::normal({2, n}), dt);
      mx::eval({g, u});
      CHECK(dispatches_of([&] { return cfun({g, u}); }) == 1);
      CHECK(dispatches_of([&] { return swiglu({g, u}); }) == 3);
      Tolerance tol = dt == mx::float32 ? Tolerance{2.4e-7, 1e-30} : Tolerance{0, 0};
      CHECK(all_close(cfun({g, u})[0], swiglu({g, u})[0], tol, "swiglu"));
    }
  }
  // Shapeless: a new shape of the same rank builds no new kernel.
  auto g = mx::ones({3, 5});
  mx::eval(cfun({g, g}));
  auto compiles = mx::vulkan::kernel_stats().compiles + mx::vulkan::kernel_stats().disk_hits;
  auto h = mx::ones({4, 9});
  mx::eval(cfun({h, h}));
  CHECK(mx::vulkan::kernel_stats().compiles + mx::vulkan::kernel_stats().disk_hits == compiles);
  mx::set_default_device(saved);
}

// Replays of one compiled function share its Compiled primitive, and the GPU memoizes the
// launch per (tape, shape, offsets, strides): each layout must get its own launch and come
// back to the right one, whatever the order.
TEST_CASE("replays of a compiled function with changing layouts each get their own launch") {
  if (!gpu_present())
    return;
  auto saved = mx::default_device();
  mx::set_default_device(mx::Device::gpu);
  auto cfun = mx::compile(swiglu);
  auto big = mx::random::normal({16, 16});
  auto up = mx::random::normal({8, 8});
  mx::eval({big, up});
  std::vector<std::pair<const char*, mx::array>> gates{
      {"contiguous", mx::add(up, mx::array(0.5f))},
      {"row stride 16", mx::slice(big, {0, 0}, {8, 8})},
      {"transposed", mx::transpose(mx::slice(big, {0, 0}, {8, 8}))},
      {"offset", mx::slice(big, {8, 8}, {16, 16})},
      {"every other row", mx::slice(big, {0, 3}, {16, 11}, {2, 1})}};
  for (int round = 0; round < 2; ++round) {
    for (auto& [name, g] : gates) {
      CAPTURE(name);
      CHECK(all_close(cfun({g, up})[0], swiglu({g, up})[0], Tolerance{2.4e-7, 1e-30}, name));
    }
  }
  mx::set_default_device(saved);
}

// The halves of a stacked gate/up product are column slices: the row-strided layout reads
// them in place, in vectors where rows and row strides allow (codegen/fused.h).
TEST_CASE("a compiled SwiGLU of a product's two halves reads them in place, as rows") {
  if (!gpu_present())
    return;
  auto saved = mx::default_device();
  mx::set_default_device(mx::Device::gpu);
  auto cfun = mx::compile(swiglu, true);
  for (auto dt : {mx::float32, mx::bfloat16, mx::float16}) {
    // Rows of 48 (whole vectors), 13 (element by element), every other row of 40, and rows
    // of 24 in reverse order (a negative row stride).
    for (int c : {48, 13, 40, 24}) {
      CAPTURE(mx::dtype_to_string(dt));
      CAPTURE(c);
      auto p = mx::astype(mx::random::normal({2, 6, 2 * c}), dt);
      mx::eval(p);
      auto g = mx::slice(p, {0, 0, 0}, {2, 6, c});
      auto u = mx::slice(p, {0, 0, c}, {2, 6, 2 * c});
      if (c == 40) {
        g = mx::slice(p, {0, 0, 0}, {2, 6, c}, {1, 2, 1});
        u = mx::slice(p, {0, 1, c}, {2, 6, 2 * c}, {1, 2, 1});
      }
      if (c == 24) {
        auto rows = mx::reshape(p, {12, 2 * c});
        g = mx::slice(rows, {11, 0}, {-13, c}, {-1, 1});
        u = mx::slice(rows, {11, c}, {-13, 2 * c}, {-1, 1});
      }
      CHECK(dispatches_of([&] { return cfun({g, u}); }) == 1);
      Tolerance tol = dt == mx::float32 ? Tolerance{2.4e-7, 1e-30} : Tolerance{0, 0};
      CHECK(all_close(cfun({g, u})[0], swiglu({g, u})[0], tol, "swiglu of halves"));
    }
  }
  mx::set_default_device(saved);
}

TEST_CASE("fused groups with broadcast and strided inputs, predicates and several outputs") {
  if (!gpu_present())
    return;
  auto saved = mx::default_device();
  mx::set_default_device(mx::Device::gpu);
  auto fn = [](const std::vector<mx::array>& in) {
    auto x = in[0];          // a transposed view
    auto b = in[1];          // a row broadcast against x
    auto y = mx::add(x, b);  // the broadcast stays a view: a fused input with stride 0
    auto t = mx::tanh(y);
    auto keep = mx::greater(t, mx::array(0.0f));
    return std::vector<mx::array>{mx::where(keep, t, mx::multiply(t, mx::array(0.1f))), t};
  };
  auto base = mx::random::normal({6, 5});
  auto x = mx::transpose(base);
  auto b = mx::random::normal({6});
  mx::eval({x, b});
  auto got = mx::compile(fn)({x, b});
  auto want = fn({x, b});
  CHECK(all_close(got[0], want[0], {2.4e-7, 1e-30}, "leaky tanh"));
  CHECK(all_close(got[1], want[1], {2.4e-7, 1e-30}, "tanh"));
  mx::set_default_device(saved);
}

TEST_CASE("random integer and float graphs run one dispatch per fused group, exactly") {
  if (!gpu_present())
    return;
  auto saved = mx::default_device();
  mx::set_default_device(mx::Device::gpu);
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    CAPTURE(seed);
    // Contiguous at offset 0 (vector steps, a partial last one: 4 x 33), contiguous at an
    // odd offset (element steps), and a broadcast row (any strides).
    mx::Dtype dt = seed % 2 ? mx::int32 : mx::float32;
    auto base = mx::subtract(mx::multiply(mx::arange(133), mx::array(29)), mx::array(1900));
    auto other =
        dt == mx::int32 ? mx::astype(base, mx::int8) : mx::multiply(base, mx::array(0.01f));
    mx::eval({base, other});
    auto x = mx::reshape(mx::slice(mx::astype(base, dt), {0}, {132}), {4, 33});
    auto y = seed % 3 == 0   ? mx::reshape(mx::slice(other, {1}, {133}), {4, 33})
             : seed % 3 == 1 ? mx::broadcast_to(mx::slice(other, {7}, {40}), {4, 33})
                             : mx::reshape(mx::slice(other, {0}, {132}), {4, 33});
    mx::eval({x, y});
    auto fn = [seed](const std::vector<mx::array>& in) { return mixed_graph(in, seed); };
    auto want = fn({x, y});
    mx::eval(want);
    auto got = mx::compile(fn)({x, y});
    int groups = 0;
    uint64_t expected = expected_dispatches(got, groups);
    CHECK(groups >= 1);
    uint64_t before = mx::vulkan::dispatch_count();
    mx::eval(got);
    CHECK(mx::vulkan::dispatch_count() - before == expected);
    for (size_t i = 0; i < got.size(); ++i) {
      CHECK(all_close(got[i], want[i], {0, 0}, "mixed graph output " + std::to_string(i)));
    }
  }
  mx::set_default_device(saved);
}

TEST_CASE("a compiled group's float scalar constants are written into its kernel, exactly") {
  if (!gpu_present())
    return;
  auto saved = mx::default_device();
  mx::set_default_device(mx::Device::gpu);
  // / 2, / -0.25 (multiplies by the exact reciprocal), / 3, * 0.1 + 1 and a bf16 division
  // by 4, over special values: results equal the unfused kernels' bit for bit.
  auto fn = [](const std::vector<mx::array>& in) {  // one chain: one fused group
    auto a = mx::divide(in[0], mx::array(2.0f));
    auto b = mx::divide(a, mx::array(-0.25f));
    auto c = mx::divide(b, mx::array(3.0f));
    return std::vector<mx::array>{a, b, c,
                                  mx::add(mx::multiply(c, mx::array(0.1f)), mx::array(1.0f))};
  };
  auto fn16 = [](const std::vector<mx::array>& in) {
    auto h = mx::astype(in[0], mx::bfloat16);
    return std::vector<mx::array>{
        mx::astype(mx::divide(h, mx::array(4.0f, mx::bfloat16)), mx::float32)};
  };
  std::vector<float> v = {0.0f,     -0.0f,     1.0f,          -3.5f,          1e-38f,   -1.5e-38f,
                          3e38f,    -3e38f,    1e-45f,        6.0f,           7.25e-3f, 12345.678f,
                          INFINITY, -INFINITY, std::nanf(""), 1.17549435e-38f};
  auto x = mx::array(v.begin(), {static_cast<int>(v.size())}, mx::float32);
  mx::eval({x});
  for (auto f : {+fn, +fn16}) {
    auto compiled = mx::compile(f);
    CHECK(dispatches_of([&] { return compiled({x}); }) == 1);  // one fused kernel
    auto got = compiled({x});
    auto want = f({x});
    mx::eval(got);
    mx::eval(want);
    for (size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      CHECK(mx::array_equal(got[i], want[i], true).item<bool>());
    }
  }
  // The constants are part of the kernel key: the same group with another divisor builds
  // another kernel, with the same divisor it reuses the kernel.
  auto builds = [] { return mx::vulkan::kernel_library().builds(); };
  auto scaled = [&](float c) {
    auto f = mx::compile(std::function<std::vector<mx::array>(const std::vector<mx::array>&)>(
        [c](const std::vector<mx::array>& in) {
          return std::vector<mx::array>{mx::add(mx::divide(in[0], mx::array(c)), mx::array(1.0f))};
        }));
    auto y = f({x})[0];
    mx::eval({y});
    CHECK(mx::array_equal(y, mx::add(mx::divide(x, mx::array(c)), mx::array(1.0f)), true)
              .item<bool>());
  };
  scaled(8.0f);
  size_t before = builds();
  scaled(8.0f);
  CHECK(builds() == before);
  scaled(16.0f);
  CHECK(builds() == before + 1);
  mx::set_default_device(saved);
}
