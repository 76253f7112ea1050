// Unary ops on the GPU match the CPU reference.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <doctest/doctest.h>

#include "harness.h"

namespace mx = mlx::core;
using namespace gpu_diff;

namespace {

using UnaryFn = mx::array (*)(const mx::array&, mx::StreamOrDevice);

struct UnaryCase {
  const char* name;
  UnaryFn fn;
  Domain domain;
  bool float_only; // computes in float (integers promote): test f16/bf16/f32 only
};

// Vulkan's GLSL precision rules allow transcendental functions a few ulp (and sin/cos an
// absolute 2^-11); the tolerances below are what devices actually deliver, with margin.
Tolerance unary_tolerance(const std::string& name, mx::Dtype dt) {
  auto t = default_tolerance(dt);
  if (dt == mx::float32) {
    bool trig = name == "sin" || name == "cos" || name == "tan" || name == "arcsin" ||
                name == "arccos" || name == "arctan" || name == "erf" || name == "erfinv";
    if (trig) return {1e-4, 1e-5};
    return {2e-5 * 8, 1e-6};
  }
  return t;
}

mx::array abs_(const mx::array& a, mx::StreamOrDevice s) { return mx::abs(a, s); }
mx::array round_(const mx::array& a, mx::StreamOrDevice s) { return mx::round(a, 0, s); }

const std::vector<UnaryCase>& unary_cases() {
  static const std::vector<UnaryCase> cases = {
      {"abs", abs_, {}, false},
      {"negative", mx::negative, {}, false},
      {"sign", mx::sign, {}, false},
      {"square", mx::square, {}, false},
      {"floor", mx::floor, {}, false},
      {"ceil", mx::ceil, {}, false},
      {"round", round_, {}, false},
      {"sqrt", mx::sqrt, {0.01, 10}, true},
      {"rsqrt", mx::rsqrt, {0.01, 10}, true},
      {"exp", mx::exp, {}, true},
      {"expm1", mx::expm1, {}, true},
      {"log", mx::log, {0.01, 10}, true},
      {"log1p", mx::log1p, {-0.9, 5}, true},
      {"log2", mx::log2, {0.01, 10}, true},
      {"log10", mx::log10, {0.01, 10}, true},
      {"sin", mx::sin, {}, true},
      {"cos", mx::cos, {}, true},
      {"tan", mx::tan, {-1.2, 1.2}, true},
      {"arcsin", mx::arcsin, {-0.99, 0.99}, true},
      {"arccos", mx::arccos, {-0.99, 0.99}, true},
      {"arctan", mx::arctan, {}, true},
      {"sinh", mx::sinh, {}, true},
      {"cosh", mx::cosh, {}, true},
      {"tanh", mx::tanh, {}, true},
      {"arcsinh", mx::arcsinh, {}, true},
      {"arccosh", mx::arccosh, {1.01, 10}, true},
      {"arctanh", mx::arctanh, {-0.99, 0.99}, true},
      {"sigmoid", mx::sigmoid, {}, true},
      {"erf", mx::erf, {-3, 3}, true},
      {"erfinv", mx::erfinv, {-0.99, 0.99}, true},
      {"logical_not", mx::logical_not, {}, false},
      {"isnan", mx::isnan, {}, true},
      {"isinf", mx::isinf, {}, true},
  };
  return cases;
}

const std::vector<mx::Dtype> float_types = {mx::float16, mx::bfloat16, mx::float32};
const std::vector<mx::Dtype> numeric_types = {mx::uint8,   mx::uint16, mx::uint32, mx::uint64,
                                              mx::int8,    mx::int16,  mx::int32,  mx::int64,
                                              mx::float16, mx::bfloat16, mx::float32};

Op wrap(UnaryFn fn) {
  return [fn](const std::vector<mx::array>& in, mx::StreamOrDevice s) { return fn(in[0], s); };
}

} // namespace

TEST_CASE("unary kernels handle every layout and shape class") {
  if (!gpu_present()) return;
  for (auto& uc : unary_cases()) {
    std::string n = uc.name;
    if (n != "abs" && n != "exp" && n != "logical_not") continue;
    auto dt = n == "abs" ? mx::int32 : mx::float32;
    auto tol = unary_tolerance(n, dt);
    sweep(n, wrap(uc.fn), {{dt}}, {uc.domain}, &tol);
  }
}

TEST_CASE("every unary op matches the CPU for every dtype it accepts") {
  if (!gpu_present()) return;
  for (auto& uc : unary_cases()) {
    auto& types = uc.float_only ? float_types : numeric_types;
    for (auto dt : types) {
      auto tol = unary_tolerance(uc.name, dt);
      sweep(uc.name, wrap(uc.fn), {{dt}}, {uc.domain}, &tol, quick_shapes, quick_layouts);
    }
  }
}

TEST_CASE("bitwise_invert on the GPU matches the CPU for integers and bool") {
  if (!gpu_present()) return;
  auto op = wrap(mx::bitwise_invert);
  Tolerance exact{0, 0};
  for (auto dt : {mx::bool_, mx::uint8, mx::uint16, mx::uint32, mx::uint64, mx::int8,
                  mx::int16, mx::int32, mx::int64}) {
    sweep("bitwise_invert", op, {{dt}}, {{-100, 100}}, &exact, quick_shapes, quick_layouts);
  }
}

TEST_CASE("float unary ops agree with the CPU on NaN and infinities") {
  if (!gpu_present()) return;
  mx::array special({NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1.0f, -1.0f, 2.5f, -2.5f, 0.5f});
  for (auto& uc : unary_cases()) {
    for (auto dt : float_types) {
      auto in = mx::astype(special, dt);
      auto got = mlx_test::to_doubles(uc.fn(in, mx::Device::gpu));
      auto want = mlx_test::to_doubles(uc.fn(in, mx::Device::cpu));
      auto tol = unary_tolerance(uc.name, dt);
      mlx_test::check_all_close(got, want, tol.rtol, tol.atol,
                                std::string(uc.name) + " special values " +
                                    mx::dtype_to_string(dt));
    }
  }
}

namespace {

float half_bits_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  float mag = e == 0    ? std::ldexp(static_cast<float>(m), -24)
              : e == 31 ? (m ? NAN : INFINITY)
                        : std::ldexp(static_cast<float>(m | 0x400u), static_cast<int>(e) - 25);
  return sign ? -mag : mag;
}

// Distance in representable 16-bit values between two results of one sign class.
int steps_apart(uint16_t a, uint16_t b) {
  auto ordered = [](uint16_t v) { return (v & 0x8000u) ? -static_cast<int>(v & 0x7fffu) : v; };
  return std::abs(ordered(a) - ordered(b));
}

}  // namespace

// f16/bf16 exp and sigmoid use the hardware exp (math.glsl, "16-bit results"): its f32
// error is far below half an ulp of the result, so each result is the CPU's or one value
// away next to a rounding midpoint. Every input bit pattern of both dtypes; a GPU may flush
// a subnormal result to zero.
TEST_CASE("f16 and bf16 exp and sigmoid are within one value of the CPU for every input") {
  if (!gpu_present()) return;
  for (auto dt : {mx::float16, mx::bfloat16}) {
    std::vector<float> values(65536);
    for (uint32_t b = 0; b < 65536; ++b) {
      values[b] = dt == mx::bfloat16 ? std::bit_cast<float>(b << 16)
                                     : half_bits_to_float(static_cast<uint16_t>(b));
    }
    auto x = mx::astype(mx::array(values.begin(), {65536}, mx::float32), dt, mx::Device::cpu);
    for (auto fn : {+[](const mx::array& a, mx::StreamOrDevice s) { return mx::exp(a, s); },
                    +[](const mx::array& a, mx::StreamOrDevice s) { return mx::sigmoid(a, s); }}) {
      auto got = fn(x, mx::Device::gpu);
      auto want = fn(x, mx::Device::cpu);
      mx::eval({got, want});
      const uint16_t* g = got.data<uint16_t>();
      const uint16_t* w = want.data<uint16_t>();
      int bad = 0, off_by_one = 0;
      for (int i = 0; i < 65536; ++i) {
        uint16_t exp_mask = dt == mx::bfloat16 ? 0x7f80u : 0x7c00u;
        bool w_nan = (w[i] & exp_mask) == exp_mask && (w[i] & ~(exp_mask | 0x8000u)) != 0;
        bool g_nan = (g[i] & exp_mask) == exp_mask && (g[i] & ~(exp_mask | 0x8000u)) != 0;
        bool flushed = (w[i] & exp_mask) == 0 && (g[i] & 0x7fffu) == 0;
        int d = w_nan || g_nan ? (w_nan == g_nan ? 0 : 99) : steps_apart(g[i], w[i]);
        off_by_one += d == 1;
        if (d > 1 && !flushed && bad++ < 5) {
          FAIL_CHECK(mx::dtype_to_string(dt) << " input " << values[i] << ": GPU bits " << g[i]
                                             << ", CPU bits " << w[i]);
        }
      }
      CHECK(bad == 0);
      MESSAGE(mx::dtype_to_string(dt) << ": " << off_by_one << " of 65536 one value away");
    }
  }
}

TEST_CASE("f32 erf on the GPU is within 4 ulp of the CPU on 2^20 points of [-5, 5]") {
  if (!gpu_present()) return;
  // erf.glsl: within 3 ulp with C++'s exp (tests/codegen); its tail (|x| > 1) uses the
  // device's exp, whose error reaches erf = 1 - erfc attenuated by erfc <= 0.16.
  const int n = 1 << 20;
  std::vector<float> values(n);
  for (int i = 0; i < n; ++i) {
    values[i] = -5.0f + 10.0f * (static_cast<float>(i) + 0.5f) / static_cast<float>(n);
  }
  auto x = mx::array(values.begin(), {n}, mx::float32);
  auto got = mx::erf(x, mx::Device::gpu);
  auto want = mx::erf(x, mx::Device::cpu);
  mx::eval({got, want});
  const float* g = got.data<float>();
  const float* w = want.data<float>();
  // Distance in representable floats (both results lie in [-1, 1], never NaN).
  auto ordered = [](float f) {
    int32_t b = std::bit_cast<int32_t>(f);
    return b < 0 ? static_cast<int64_t>(INT32_MIN) - b : static_cast<int64_t>(b);
  };
  int64_t worst = 0;
  float worst_x = 0;
  for (int i = 0; i < n; ++i) {
    int64_t d = std::llabs(ordered(g[i]) - ordered(w[i]));
    if (d > worst) {
      worst = d;
      worst_x = values[i];
    }
  }
  MESSAGE("erf: at most " << worst << " ulp from the CPU (at x = " << worst_x << ")");
  CHECK(worst <= 4);
}
