// Reductions on the GPU (the "reduce" family) match the CPU reference over shapes x axis
// sets x layouts x dtypes, including empty reductions, NaN and infinities, keepdims, and
// inputs larger than one binding.
//
// Tolerances (docs/reduce.md): float32 sums within rtol 1e-5 and atol 4e-6 x the reduced
// length (inputs in [-4, 4]; the GPU sums compensated f32, the CPU exact doubles); 16-bit
// outputs add their dtype's rounding; max, min, all, any and integer sums are exact.
#include <doctest/doctest.h>

#include <cmath>

#include "harness.h"
#include "mlx/backend/vulkan/cpu_fallback.h"

namespace mx = mlx::core;
using namespace gpu_diff;

namespace {

using ReduceFn = mx::array (*)(const mx::array&, const std::vector<int>&, bool, mx::StreamOrDevice);

struct AxisCase {
  mx::Shape shape;
  std::vector<int> axes;
};

// Rows, columns, the middle axis, interleaved axes, all axes, negative axes, empty and
// length-1 reductions, > 2^16 elements.
const std::vector<AxisCase>& axis_cases() {
  static const std::vector<AxisCase> cases = {
      {{}, {}},
      {{7}, {0}},
      {{0}, {0}},
      {{3, 5}, {1}},
      {{3, 5}, {0}},
      {{3, 5}, {0, 1}},
      {{4, 3, 5}, {1}},
      {{4, 3, 5}, {0, 2}},
      {{4, 3, 5}, {-1}},
      {{2, 0, 3}, {1}},
      {{2, 3, 2, 3, 2}, {1, 3}},
      {{2, 3, 2, 3, 2}, {0, 1, 2, 3, 4}},
      {{67, 1031}, {1}},
      {{67, 1031}, {0}},
      {{67, 1031}, {0, 1}},
      {{1031, 1}, {0}},
  };
  return cases;
}

int64_t reduced_len(const AxisCase& c) {
  int64_t n = 1;
  for (int ax : c.axes) {
    n *= c.shape[ax < 0 ? ax + static_cast<int>(c.shape.size()) : ax];
  }
  return n;
}

Tolerance sum_tolerance(mx::Dtype out, int64_t len) {
  auto t = default_tolerance(out);
  if (out == mx::float32) {
    return {1e-5, 1e-6 * 4.0 * static_cast<double>(std::max<int64_t>(len, 1))};
  }
  if (out == mx::float16 || out == mx::bfloat16) {
    return {t.rtol, t.atol + 1e-6 * 4.0 * static_cast<double>(std::max<int64_t>(len, 1))};
  }
  return t;
}

void sweep_axes(const char* name, ReduceFn fn, mx::Dtype dt, bool keepdims,
                const std::vector<Layout>& layouts, const Domain& domain, bool exact) {
  bool extremum = std::string(name) == "max" || std::string(name) == "min";
  for (const auto& ac : axis_cases()) {
    if (extremum && reduced_len(ac) == 0) {
      continue;  // an error on both devices (NumPy's rule), tested in tests/reduce
    }
    for (auto layout : layouts) {
      Op op = [&](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
        return fn(in[0], ac.axes, keepdims, s);
      };
      Case c{std::string(name) + " axes=" + std::to_string(ac.axes.size()) +
                 (keepdims ? " keepdims" : ""),
             {dt},
             ac.shape,
             layout,
             static_cast<uint64_t>(ac.shape.size() * 31 + ac.axes.size())};
      Tolerance tol = exact ? Tolerance{0, 0} : sum_tolerance(dt, reduced_len(ac));
      CHECK_MESSAGE(run_case(c, op, {domain}, tol), c.describe());
    }
  }
}

mx::array sum_(const mx::array& a, const std::vector<int>& ax, bool k, mx::StreamOrDevice s) {
  return mx::sum(a, ax, k, s);
}
mx::array prod_(const mx::array& a, const std::vector<int>& ax, bool k, mx::StreamOrDevice s) {
  return mx::prod(a, ax, k, s);
}
mx::array max_(const mx::array& a, const std::vector<int>& ax, bool k, mx::StreamOrDevice s) {
  return mx::max(a, ax, k, s);
}
mx::array min_(const mx::array& a, const std::vector<int>& ax, bool k, mx::StreamOrDevice s) {
  return mx::min(a, ax, k, s);
}
mx::array all_(const mx::array& a, const std::vector<int>& ax, bool k, mx::StreamOrDevice s) {
  return mx::all(a, ax, k, s);
}
mx::array any_(const mx::array& a, const std::vector<int>& ax, bool k, mx::StreamOrDevice s) {
  return mx::any(a, ax, k, s);
}

const std::vector<Layout> kLayouts = {Layout::contiguous, Layout::transposed, Layout::broadcast,
                                      Layout::strided, Layout::reversed};

}  // namespace

TEST_CASE("sum, max, min, all and any match the CPU over axis sets and layouts (f32)") {
  if (!gpu_present())
    return;
  sweep_axes("sum", sum_, mx::float32, false, kLayouts, {}, false);
  sweep_axes("sum", sum_, mx::float32, true, {Layout::contiguous}, {}, false);
  sweep_axes("max", max_, mx::float32, false, kLayouts, {}, true);
  sweep_axes("min", min_, mx::float32, true, {Layout::transposed}, {}, true);
  // A third of the values are zero, so all/any see both answers.
  sweep_axes("all", all_, mx::float32, false, {Layout::contiguous, Layout::strided}, {-1, 1.5},
             true);
  sweep_axes("any", any_, mx::float32, false, {Layout::contiguous}, {-0.5, 0.6}, true);
}

TEST_CASE("reductions of every GPU dtype match the CPU") {
  if (!gpu_present())
    return;
  for (auto dt : gpu_dtypes) {
    CAPTURE(dt);
    bool float_dt = dt == mx::float16 || dt == mx::bfloat16 || dt == mx::float32;
    Domain d = dt == mx::bool_ ? Domain{0, 1.4} : Domain{};
    for (auto [name, fn] : {std::pair<const char*, ReduceFn>{"sum", sum_},
                            std::pair<const char*, ReduceFn>{"max", max_},
                            std::pair<const char*, ReduceFn>{"any", any_}}) {
      // Prime extents (scalar loads), then rows and split columns read as 16-byte vectors.
      for (const AxisCase& ac :
           {AxisCase{{67, 1031}, {1}}, AxisCase{{67, 1031}, {0}}, AxisCase{{4, 3, 5}, {0, 2}},
            AxisCase{{67, 1031}, {0, 1}}, AxisCase{{96, 64}, {1}}, AxisCase{{3, 130, 48}, {1}}}) {
        Op op = [&](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
          return fn(in[0], ac.axes, false, s);
        };
        Case c{name, {dt}, ac.shape, Layout::contiguous, 7};
        bool exact = !(float_dt && std::string(name) == "sum");
        auto out_dt =
            std::string(name) == "any" ? mx::bool_ : fn(mx::zeros({1}, dt), {0}, false, {}).dtype();
        Tolerance tol = exact ? Tolerance{0, 0} : sum_tolerance(out_dt, reduced_len(ac));
        CHECK_MESSAGE(run_case(c, op, {d}, tol), c.describe());
      }
    }
  }
}

TEST_CASE("prod matches the CPU on short rows and columns") {
  if (!gpu_present())
    return;
  for (auto dt : {mx::float32, mx::int32, mx::float16}) {
    for (const AxisCase& ac :
         {AxisCase{{4, 3, 5}, {1}}, AxisCase{{4, 3, 5}, {2}}, AxisCase{{3, 5}, {0, 1}}}) {
      Op op = [&](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
        return prod_(in[0], ac.axes, false, s);
      };
      Case c{"prod", {dt}, ac.shape, Layout::contiguous, 11};
      Tolerance tol = dt == mx::int32 ? Tolerance{0, 0} : default_tolerance(dt);
      CHECK_MESSAGE(run_case(c, op, {{0.5, 1.5}}, tol), c.describe());
    }
  }
}

TEST_CASE("max and min propagate NaN and handle infinities like the CPU") {
  if (!gpu_present())
    return;
  float nan = std::nanf("");
  float inf = INFINITY;
  mx::array x({1.0f, nan, 3.0f, -inf, 2.0f, 5.0f, inf, -1.0f, nan, nan, 0.0f, 4.0f}, {3, 4});
  for (int axis : {0, 1}) {
    for (ReduceFn fn : {max_, min_, sum_}) {
      auto got = mlx_test::to_doubles(fn(x, {axis}, false, mx::Device::gpu));
      auto want = mlx_test::to_doubles(fn(x, {axis}, false, mx::Device::cpu));
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        CHECK_MESSAGE((got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i]))),
                      "axis " << axis << " element " << i << ": " << got[i] << " vs " << want[i]);
      }
    }
  }
}

TEST_CASE("an all-reduce larger than one binding is split and still accurate") {
  if (!gpu_present())
    return;
  // 2^25 + 3 float32 elements: 128 MiB and a bit, more than lavapipe's
  // maxStorageBufferRange, so the row is cut into segments whose partials are finished by
  // a second launch. Integer-valued inputs keep every partial exact in float32.
  int n = (1 << 25) + 3;
  auto x = mx::astype(mx::remainder(mx::arange(n, mx::Device::cpu), mx::array(7)), mx::float32);
  x.eval();
  double want = 0;
  for (int i = 0; i < n; ++i) {
    want += i % 7;
  }
  auto got = mx::sum(x, false, mx::Device::gpu).item<float>();
  CHECK(static_cast<double>(got) == doctest::Approx(want).epsilon(1e-6));
  auto mx_ = mx::max(x, false, mx::Device::gpu).item<float>();
  CHECK(mx_ == 6.0f);
}

TEST_CASE("8-bit max and min of rows longer than one binding keep their identities wide") {
  if (!gpu_present())
    return;
  // On lavapipe (128 MiB bindings) 2^27 + 3 int8 elements need two segments; the short last
  // one has empty slices, whose partials must hold a 32-bit identity, not a truncated one.
  int n = (1 << 27) + 3;
  auto neg = mx::full({n}, mx::array(int8_t{-5}), mx::Device::gpu);
  auto pos = mx::full({n}, mx::array(int8_t{5}), mx::Device::gpu);
  CHECK(mx::max(neg, false, mx::Device::gpu).item<int8_t>() == -5);
  CHECK(mx::min(pos, false, mx::Device::gpu).item<int8_t>() == 5);
}

TEST_CASE("reductions of operands wider than one binding run on the GPU and match the CPU") {
  size_t range = small_binding_range();
  if (!range)
    return;
  mx::vulkan::reset_fallback_counts();
  // A square f32 matrix just wider than one binding, and views of it: its transpose is read
  // in memory order (columns cut into chunks of rows, rows, one long row for the
  // all-reduce); a 3-d transpose whose kept axes run backwards in memory is copied in
  // staged blocks first. Integer values keep every sum exact.
  int side = (static_cast<int>(std::sqrt(range / 4.0)) + 64) / 2 * 2;
  auto x = small_ints(side, side, 41);
  auto views = [&](mx::Device d) {
    auto t = mx::transpose(x, d);
    auto t3 = mx::transpose(mx::reshape(x, {2, side / 2, side}, d), {2, 1, 0}, d);
    return std::vector<mx::array>{mx::sum(t, {1}, false, d),   mx::sum(t, {0}, false, d),
                                  mx::max(t, {1}, false, d),   mx::min(x, {0}, false, d),
                                  mx::sum(t, false, d),        mx::sum(t3, {1}, false, d),
                                  mx::max(t3, {0, 1}, true, d)};
  };
  auto got = gpu_eval_checked([&] { return views(mx::Device::gpu); }, "wide reductions");
  auto want = views(mx::Device::cpu);
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(all_close(got[i], want[i], {0, 0}, "wide reduction " + std::to_string(i)));
  }
  CHECK(mx::vulkan::fallback_counts().empty());
}

TEST_CASE("mean, var and std (with ddof) match the CPU on the GPU") {
  if (!gpu_present())
    return;
  for (const AxisCase& ac :
       {AxisCase{{67, 1031}, {1}}, AxisCase{{67, 1031}, {0}}, AxisCase{{4, 3, 5}, {0, 2}}}) {
    for (int ddof : {0, 1}) {
      Op op = [&](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
        return mx::std(in[0], ac.axes, false, ddof, s);
      };
      Op vop = [&](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
        return mx::var(in[0], ac.axes, true, ddof, s);
      };
      Case c{"std", {mx::float32}, ac.shape, Layout::contiguous, 13};
      CHECK_MESSAGE(run_case(c, op, {}, {1e-5, 1e-6}), c.describe());
      Case v{"var", {mx::float16}, ac.shape, Layout::transposed, 14};
      CHECK_MESSAGE(run_case(v, vop, {}, default_tolerance(mx::float16)), v.describe());
    }
  }
  Op mop = [](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return mx::mean(in[0], std::vector<int>{0, 1}, false, s);
  };
  Case m{"mean", {mx::bfloat16}, {67, 1031}, Layout::strided, 15};
  CHECK_MESSAGE(run_case(m, mop, {}, default_tolerance(mx::bfloat16)), m.describe());
}
