// compile(): a compiled function gives the uncompiled results on every test device, traces
// once per input signature (shapes and dtypes, or ranks and dtypes when shapeless),
// treats captured arrays as constants, handles outputs that are inputs, repeated outputs
// and unused inputs, nests, simplifies common subexpressions, and gives MLX's errors for
// functions that evaluate arrays during tracing.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <set>

#include "mlx/mlx.h"
#include "mlx/primitives.h"
#include "test_utils.h"

namespace mx = mlx::core;
using mlx_test::to_doubles;

namespace {

std::atomic<int> pointer_calls{0};

std::vector<mx::array> gelu_like(const std::vector<mx::array>& in) {
  ++pointer_calls;
  auto x = in[0];
  return {mx::multiply(x, mx::sigmoid(mx::multiply(x, mx::array(1.702f))))};
}

}  // namespace

TEST_CASE("compiled functions equal uncompiled ones and trace once per signature") {
  int calls = 0;
  auto fun = [&calls](const std::vector<mx::array>& in) {
    ++calls;
    auto y = mx::add(mx::exp(in[0]), mx::multiply(in[1], mx::array(2.0f)));
    return std::vector<mx::array>{y, mx::negative(y)};
  };
  auto cfun = mx::compile(fun);
  auto saved = mx::default_device();
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == mx::Device::cpu ? "cpu" : "gpu");
    // The default device is part of the signature: ops in fun run on it.
    mx::set_default_device(d);
    auto a = mx::astype(mx::arange(6), mx::float32);
    auto b = mx::full({6}, 0.5f, mx::float32);
    auto want = fun({a, b});
    int before = calls;
    auto got = cfun({a, b});
    CHECK(calls == before + 1);
    CHECK(to_doubles(got[0]) == to_doubles(want[0]));
    CHECK(to_doubles(got[1]) == to_doubles(want[1]));
    auto again = cfun({mx::add(a, a), b});
    CHECK(calls == before + 1);
    CHECK(to_doubles(again[0])[1] == doctest::Approx(std::exp(2.0) + 1.0));
  }
  mx::set_default_device(saved);
  int traced = calls;
  cfun({mx::zeros({3}), mx::zeros({3})});  // a new shape: traces
  CHECK(calls == traced + 1);
  cfun({mx::zeros({3}, mx::float16), mx::zeros({3})});  // a new dtype: traces
  CHECK(calls == traced + 2);
  cfun({mx::ones({3}), mx::ones({3})});  // seen: does not
  CHECK(calls == traced + 2);
}

TEST_CASE("shapeless compile traces once for every shape of the same rank") {
  int calls = 0;
  auto cfun = mx::compile(
      [&calls](const std::vector<mx::array>& in) {
        ++calls;
        return std::vector<mx::array>{mx::maximum(mx::multiply(in[0], in[0]), in[1])};
      },
      true);
  for (int n : {2, 5, 17}) {
    auto x = mx::astype(mx::arange(n), mx::float32);
    auto y = mx::full({n}, 3.0f);
    auto out = to_doubles(cfun({x, y})[0]);
    REQUIRE(out.size() == static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      CHECK(out[i] == std::max(double(i) * i, 3.0));
    }
  }
  CHECK(calls == 1);
  // Replays share one Compiled primitive, which remembers the last call's shapes: shapes
  // that change back and forth give the right outputs.
  auto fn = [](const std::vector<mx::array>& in) {
    return std::vector<mx::array>{mx::add(mx::multiply(in[0], in[1]), in[0])};
  };
  auto fused = mx::compile(fn, true);
  const std::vector<mx::Shape> shapes = {{4, 5}, {2, 3}, {2, 3}, {4, 5}, {3, 7}};
  for (size_t k = 0; k < shapes.size(); ++k) {
    int n = static_cast<int>(shapes[k][0] * shapes[k][1]);
    auto a = mx::reshape(mx::astype(mx::arange(n), mx::float32), shapes[k]);
    auto b = mx::full(shapes[k], static_cast<float>(k + 1));
    auto got = fused({a, b})[0];
    CHECK(std::string(got.primitive().name()) == "Compiled");
    CHECK(got.shape() == shapes[k]);
    CHECK(to_doubles(got) == to_doubles(fn({a, b})[0]));
  }
  cfun({mx::zeros({2, 2}), mx::zeros({2, 2})});  // a new rank traces again
  CHECK(calls == 2);
  // A primitive whose shape does not follow from its inputs cannot be shapeless.
  auto bad = mx::compile(
      [](const std::vector<mx::array>& in) { return std::vector<mx::array>{mx::sum(in[0], 0)}; },
      true);
  CHECK_THROWS_WITH_AS(bad({mx::ones({4})}),
                       doctest::Contains("[compile] Cannot compile a function with shapeless=true"),
                       std::invalid_argument);
}

TEST_CASE("compile: constants, inputs as outputs, repeated and unused, nesting, pointers") {
  auto c = mx::array({10.0f, 20.0f});
  auto cfun = mx::compile([c](const std::vector<mx::array>& in) {
    auto y = mx::add(in[0], c);
    return std::vector<mx::array>{y, in[1], y};
  });
  auto out = cfun({mx::array({1.0f, 2.0f}), mx::array({7.0f}), mx::array({9.0f})});
  REQUIRE(out.size() == 3);
  CHECK(to_doubles(out[0]) == std::vector<double>{11, 22});
  CHECK(to_doubles(out[1]) == std::vector<double>{7});
  CHECK(to_doubles(out[2]) == std::vector<double>{11, 22});

  auto inner = mx::compile(
      [](const std::vector<mx::array>& in) { return std::vector<mx::array>{mx::square(in[0])}; });
  auto outer = mx::compile([inner](const std::vector<mx::array>& in) {
    return std::vector<mx::array>{mx::add(inner({in[0]})[0], mx::array(1.0f))};
  });
  CHECK(to_doubles(outer({mx::array({3.0f})})[0]) == std::vector<double>{10});

  // A function pointer's traces are shared by every compile() of it.
  pointer_calls = 0;
  auto f1 = mx::compile(gelu_like);
  auto f2 = mx::compile(&gelu_like);
  auto x = mx::array({0.5f, -1.0f});
  auto y1 = f1({x})[0];
  auto y2 = f2({x})[0];
  CHECK(pointer_calls == 1);
  CHECK(to_doubles(y1) == to_doubles(y2));
  CHECK(to_doubles(y1)[0] == doctest::Approx(0.5 / (1 + std::exp(-0.851))).epsilon(1e-5));
}

TEST_CASE("compile merges common subexpressions and equal scalar constants") {
  // Without fusion, so the simplified graph is visible in the outputs' inputs.
  mx::set_compile_mode(mx::CompileMode::no_fuse);
  auto cfun = mx::compile([](const std::vector<mx::array>& in) {
    auto a = mx::exp(in[0]);
    auto b = mx::exp(in[0]);
    auto k1 = mx::multiply(a, mx::array(2.0f));
    auto k2 = mx::multiply(b, mx::array(2.0f));
    return std::vector<mx::array>{mx::add(k1, k2)};
  });
  auto out = cfun({mx::array({0.0f, 1.0f})})[0];
  // Both operands of the add are one node after simplification.
  REQUIRE(out.inputs().size() == 2);
  CHECK(out.inputs()[0].id() == out.inputs()[1].id());
  CHECK(to_doubles(out) == std::vector<double>{4, 4 * std::exp(1.0f)});
  // Without simplification the two stay apart.
  mx::set_compile_mode(mx::CompileMode::no_simplify);
  auto plain = mx::compile([](const std::vector<mx::array>& in) {
    return std::vector<mx::array>{mx::add(mx::exp(in[0]), mx::exp(in[0]))};
  });
  auto p = plain({mx::array({0.0f})})[0];
  CHECK(p.inputs()[0].id() != p.inputs()[1].id());
  mx::enable_compile();
}

TEST_CASE("compile gives MLX's errors for functions that read array values, and can be off") {
  auto evaluates = mx::compile([](const std::vector<mx::array>& in) {
    auto y = mx::exp(in[0]);
    y.eval();
    return std::vector<mx::array>{y};
  });
  CHECK_THROWS_WITH_AS(evaluates({mx::array({1.0f})}),
                       "[eval] Attempting to eval an array during function transformations like "
                       "compile or vmap is not allowed.",
                       std::invalid_argument);
  auto reads = mx::compile([](const std::vector<mx::array>& in) {
    float v = mx::sum(in[0]).item<float>();
    return std::vector<mx::array>{mx::multiply(in[0], mx::array(v))};
  });
  CHECK_THROWS_AS(reads({mx::array({1.0f})}), std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      mx::compile(std::function<std::vector<mx::array>(const std::vector<mx::array>&)>{}),
      "[compile] Cannot compile a function without a target.", std::invalid_argument);
  // Disabled: the function runs on every call (and may read values).
  mx::disable_compile();
  int calls = 0;
  auto f = mx::compile([&calls](const std::vector<mx::array>& in) {
    ++calls;
    return std::vector<mx::array>{mx::negative(in[0])};
  });
  f({mx::array({1.0f})});
  f({mx::array({2.0f})});
  CHECK(calls == 2);
  mx::enable_compile();
}

namespace {

// A seeded random elementwise graph over `inputs`: unary and binary ops, casts, scalar
// constants, broadcasts, shared subexpressions and several outputs.
std::vector<mx::array> random_graph(const std::vector<mx::array>& in, uint64_t seed, int depth) {
  mlx_test::Rng rng(seed);
  std::vector<mx::array> pool = in;
  auto pick = [&]() { return pool[rng.next() % pool.size()]; };
  for (int i = 0; i < depth; ++i) {
    auto a = pick();
    auto b = pick();
    mx::array v = a;
    switch (rng.next() % 9) {
      case 0:
        v = mx::add(a, b);
        break;
      case 1:
        v = mx::multiply(a, b);
        break;
      case 2:
        v = mx::subtract(a, mx::array(0.5f));
        break;
      case 3:
        v = mx::tanh(a);
        break;
      case 4:
        v = mx::maximum(a, b);
        break;
      case 5:
        v = mx::where(mx::greater(a, b), a, b);
        break;
      case 6:
        v = mx::astype(mx::astype(a, mx::float16), mx::float32);
        break;
      case 7:
        v = mx::exp(mx::negative(mx::abs(a)));
        break;
      default:
        v = mx::add(a, mx::sum(b, -1, true));
        break;  // a reduction between groups
    }
    pool.push_back(v);
  }
  // The last value, one from the middle and a repeated one.
  return {pool.back(), pool[pool.size() / 2], pool.back()};
}

}  // namespace

namespace {

// The values of `a` for an exact comparison: integers through their own type (doubles would
// round 64-bit values), floats as doubles.
std::vector<double> exact_values(const mx::array& a, std::vector<uint64_t>& bits) {
  bits.clear();
  if (mx::is_integral(a.dtype()) || a.dtype() == mx::bool_) {
    mx::dispatch_dtype(a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_integral_v<T>) {
        for (auto v : mlx_test::to_vector<T>(a)) {
          bits.push_back(static_cast<uint64_t>(v));
        }
      }
    });
    return {};
  }
  return to_doubles(a);
}

// Compiled equals uncompiled exactly (same dtype, same values; NaN matches NaN).
void check_exact(const mx::array& got, const mx::array& want) {
  CHECK(got.dtype() == want.dtype());
  CHECK(got.shape() == want.shape());
  std::vector<uint64_t> gb, wb;
  auto g = exact_values(got, gb);
  auto w = exact_values(want, wb);
  REQUIRE(gb.size() == wb.size());
  for (size_t i = 0; i < gb.size(); ++i) {
    if (gb[i] != wb[i]) {
      FAIL_CHECK("element " << i << " is " << static_cast<int64_t>(gb[i]) << ", expected "
                            << static_cast<int64_t>(wb[i]));
      return;
    }
  }
  REQUIRE(g.size() == w.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (!(g[i] == w[i] || (std::isnan(g[i]) && std::isnan(w[i])))) {
      FAIL_CHECK("element " << i << " is " << g[i] << ", expected " << w[i]);
      return;
    }
  }
}

// The fuzzers' inputs: two [3, 5] arrays of `dts`, laid out by `layout`: 0 contiguous
// (vectors on the GPU), 1 contiguous at an odd offset (no vectors), 2 transposed (any
// strides), 3 a row broadcast against a contiguous one.
std::vector<mx::array> fuzz_inputs(int layout, mx::Dtype a_dt, mx::Dtype b_dt, bool ints) {
  auto values = [&](int n, int offset, mx::Dtype dt) {
    // Integers sweep signs and wrap in narrow types; floats stay small.
    auto i = mx::add(mx::arange(n), mx::array(offset));
    auto v = ints ? mx::subtract(mx::multiply(i, mx::array(37)), mx::array(200))
                  : mx::multiply(mx::astype(i, mx::float32), mx::array(0.25f));
    return mx::astype(v, dt);
  };
  std::vector<mx::array> in;
  switch (layout) {
    case 0:
      in = {mx::reshape(values(15, 0, a_dt), {3, 5}), mx::reshape(values(15, 3, b_dt), {3, 5})};
      break;
    case 1:
      in = {mx::reshape(mx::slice(values(16, 0, a_dt), {1}, {16}), {3, 5}),
            mx::reshape(mx::slice(values(17, 5, b_dt), {1}, {16}), {3, 5})};
      break;
    case 2:
      in = {mx::transpose(mx::reshape(values(15, 0, a_dt), {5, 3})),
            mx::reshape(values(15, 7, b_dt), {3, 5})};
      break;
    default:
      in = {mx::reshape(values(15, 2, a_dt), {3, 5}), mx::broadcast_to(values(5, 1, b_dt), {3, 5})};
      break;
  }
  mx::eval(in);
  return in;
}

// A seeded random integer graph: wrapping arithmetic, floor division and remainder (by
// zero too), shifts in and out of range, bitwise and bool ops, comparisons into where, and
// casts between the integer types, mixed so that the op layer promotes.
std::vector<mx::array> random_int_graph(const std::vector<mx::array>& in, uint64_t seed,
                                        int depth) {
  static const mx::Dtype kInts[] = {mx::int8,  mx::uint8,  mx::int16, mx::uint16,
                                    mx::int32, mx::uint32, mx::int64, mx::uint64};
  mlx_test::Rng rng(seed);
  std::vector<mx::array> pool = in;
  auto pick = [&]() { return pool[rng.next() % pool.size()]; };
  for (int i = 0; i < depth; ++i) {
    auto a = pick();
    auto b = pick();
    mx::array v = a;
    switch (rng.next() % 12) {
      case 0:
        v = mx::add(a, b);
        break;
      case 1:
        v = mx::multiply(mx::subtract(a, b), b);
        break;
      case 2:
        v = mx::floor_divide(a, b);
        break;
      case 3:
        v = mx::remainder(a, b);
        break;
      case 4:
        v = mx::maximum(mx::negative(a), mx::minimum(mx::abs(b), mx::square(a)));
        break;
      case 5:
        v = mx::bitwise_xor(mx::bitwise_and(a, mx::astype(b, a.dtype())),
                            mx::bitwise_or(a, mx::array(6, a.dtype())));
        break;
      case 6:
        v = mx::left_shift(a, mx::astype(mx::remainder(b, mx::array(40, b.dtype())), a.dtype()));
        break;
      case 7:
        v = mx::right_shift(a, mx::astype(b, a.dtype()));
        break;
      case 8:
        v = mx::where(mx::less(a, b), a, mx::power(b, mx::array(3, b.dtype())));
        break;
      case 9:
        v = mx::astype(a, kInts[rng.next() % 8]);
        break;
      case 10:
        v = mx::astype(mx::logical_or(mx::greater(a, b), mx::logical_not(mx::equal(a, b))),
                       kInts[rng.next() % 8]);
        break;
      default:
        v = mx::add(a, mx::astype(mx::sum(b, -1, true), a.dtype()));
        break;  // a reduction between groups
    }
    if (v.dtype() == mx::bool_ || mx::is_floating_point(v.dtype())) {
      v = mx::astype(v, mx::int32);
    }
    pool.push_back(v);
  }
  return {pool.back(), pool[pool.size() / 2], pool.back()};
}

}  // namespace

TEST_CASE("fused groups give the unfused results: a fuzzer over random elementwise graphs") {
  // Both sides compute every node with the same expression and round it to its dtype, so
  // results are exact: on the CPU the fused loop runs the separate ops' code; on the GPU the
  // fused kernel runs the elementwise family's GLSL, and every f32 node is `precise`, so no
  // multiply-add contracts across nodes (docs/compile.md gives the bound for other drivers).
  // The seed picks the inputs' layout: contiguous, odd offset, transposed, broadcast.
  auto saved = mx::default_device();
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == mx::Device::cpu ? "cpu" : "gpu");
    mx::set_default_device(d);
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      CAPTURE(seed);
      int depth = 1 + static_cast<int>(seed * 7 % 30);
      auto fn = [seed, depth](const std::vector<mx::array>& in) {
        return random_graph(in, seed, depth);
      };
      auto in = fuzz_inputs(static_cast<int>(seed % 4), mx::float32, mx::float32, false);
      auto want = fn(in);
      auto got = mx::compile(fn)(in);
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        check_exact(got[i], want[i]);
      }
    }
  }
  mx::set_default_device(saved);
}

TEST_CASE("fused integer groups give the unfused results exactly: a seeded fuzzer") {
  static const mx::Dtype kIn[][2] = {{mx::int32, mx::int32},   {mx::int8, mx::uint8},
                                     {mx::int16, mx::uint32},  {mx::int64, mx::int8},
                                     {mx::uint64, mx::uint16}, {mx::uint8, mx::uint8}};
  auto saved = mx::default_device();
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == mx::Device::cpu ? "cpu" : "gpu");
    mx::set_default_device(d);
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      CAPTURE(seed);
      int depth = 1 + static_cast<int>(seed * 11 % 24);
      auto fn = [seed, depth](const std::vector<mx::array>& in) {
        return random_int_graph(in, seed, depth);
      };
      const auto* dts = kIn[seed % 6];
      auto in = fuzz_inputs(static_cast<int>(seed / 3 % 4), dts[0], dts[1], true);
      auto want = fn(in);
      auto got = mx::compile(fn)(in);
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i);
        check_exact(got[i], want[i]);
      }
    }
  }
  mx::set_default_device(saved);
}

TEST_CASE("compile fuses elementwise runs into Compiled nodes, shapeless too") {
  auto swiglu = [](const std::vector<mx::array>& in) {
    auto g = in[0];
    return std::vector<mx::array>{mx::multiply(mx::multiply(g, mx::sigmoid(g)), in[1])};
  };
  auto cfun = mx::compile(swiglu, true);
  for (int n : {3, 8}) {
    auto g = mx::astype(mx::arange(n), mx::float32);
    auto u = mx::full({n}, 2.0f);
    auto out = cfun({g, u})[0];
    CHECK(std::string(out.primitive().name()) == "Compiled");
    CHECK(to_doubles(out) == to_doubles(swiglu({g, u})[0]));
  }
  // An intermediate used outside the group becomes a second output.
  auto two = mx::compile([](const std::vector<mx::array>& in) {
    auto a = mx::exp(in[0]);
    auto b = mx::add(a, mx::array(1.0f));
    return std::vector<mx::array>{b, mx::sum(a)};
  });
  auto outs = two({mx::array({0.0f, 1.0f})});
  CHECK(to_doubles(outs[0]) == std::vector<double>{2.0, std::exp(1.0f) + 1.0f});
  CHECK(to_doubles(outs[1])[0] == doctest::Approx(1.0 + std::exp(1.0)));
}

TEST_CASE("a group that starts on its own merges into its consumer's, unless that is a cycle") {
  // Counts the Compiled primitives (siblings share one) and the nodes left outside them on
  // the way to `out`.
  auto census = [](const mx::array& out, int& compiled, int& others) {
    compiled = others = 0;
    std::vector<mx::array> stack{out};
    std::set<std::uintptr_t> seen;
    std::set<const mx::Primitive*> prims;
    while (!stack.empty()) {
      auto a = stack.back();
      stack.pop_back();
      if (!a.has_primitive() || !seen.insert(a.id()).second ||
          !prims.insert(&a.primitive()).second) {
        continue;
      }
      bool fused = std::string(a.primitive().name()) == "Compiled";
      compiled += fused;
      others += !fused && std::string(a.primitive().name()) != "Broadcast";
      for (auto& in : a.inputs()) {
        stack.push_back(in);
      }
    }
  };
  // sigmoid(y) reads only inputs: it starts a group; v's group takes it in.
  auto merged = mx::compile([](const std::vector<mx::array>& in) {
    auto v = mx::tanh(mx::add(in[0], in[1]));
    auto s = mx::sigmoid(in[1]);
    return std::vector<mx::array>{mx::multiply(mx::exp(v), s)};
  });
  auto x = mx::array({0.5f, -1.0f, 2.0f}), y = mx::array({1.0f, 0.25f, -3.0f});
  auto out = merged({x, y})[0];
  int compiled = 0, others = 0;
  census(out, compiled, others);
  CHECK(compiled == 1);
  CHECK(others == 0);
  auto want = mx::multiply(mx::exp(mx::tanh(mx::add(x, y))), mx::sigmoid(y));
  CHECK(to_doubles(out) == to_doubles(want));
  // b depends on a's group through a sum: merging b's group into a's would make a cycle.
  auto cyclic = mx::compile([](const std::vector<mx::array>& in) {
    auto a = mx::exp(mx::negative(in[0]));
    auto b = mx::sigmoid(mx::multiply(mx::sum(a), in[1]));
    return std::vector<mx::array>{mx::multiply(mx::add(a, mx::array(1.0f)), b)};
  });
  out = cyclic({x, y})[0];
  census(out, compiled, others);
  CHECK(compiled == 2);
  auto a = mx::exp(mx::negative(x));
  want = mx::multiply(mx::add(a, mx::array(1.0f)), mx::sigmoid(mx::multiply(mx::sum(a), y)));
  auto got = to_doubles(out), expect = to_doubles(want);
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i] == doctest::Approx(expect[i]).epsilon(1e-6));
  }
}
