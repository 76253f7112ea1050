// Binary ops on the GPU match the CPU reference.
#include <bit>
#include <cstdint>
#include <vector>

#include <doctest/doctest.h>

#include "harness.h"

namespace mx = mlx::core;
using namespace gpu_diff;

namespace {

using BinaryFn = mx::array (*)(const mx::array&, const mx::array&, mx::StreamOrDevice);

struct BinaryCase {
  const char* name;
  BinaryFn fn;
  Domain a, b;
  enum { numeric, floats, integers_and_bool, all } types;
};

const std::vector<BinaryCase>& binary_cases() {
  static const std::vector<BinaryCase> cases = {
      {"add", mx::add, {}, {}, BinaryCase::all},
      {"subtract", mx::subtract, {}, {}, BinaryCase::numeric},
      {"multiply", mx::multiply, {}, {}, BinaryCase::all},
      {"divide", mx::divide, {}, {}, BinaryCase::numeric},
      // Integer division by zero is defined (0): the domains include zeros on purpose.
      {"floor_divide", mx::floor_divide, {-50, 50}, {-5, 5}, BinaryCase::numeric},
      {"remainder", mx::remainder, {-50, 50}, {-5, 5}, BinaryCase::numeric},
      {"power", mx::power, {0.1, 3}, {-2, 4}, BinaryCase::numeric},
      {"maximum", mx::maximum, {}, {}, BinaryCase::all},
      {"minimum", mx::minimum, {}, {}, BinaryCase::all},
      {"equal", mx::equal, {-2, 2}, {-2, 2}, BinaryCase::all},
      {"not_equal", mx::not_equal, {-2, 2}, {-2, 2}, BinaryCase::all},
      {"less", mx::less, {-2, 2}, {-2, 2}, BinaryCase::all},
      {"less_equal", mx::less_equal, {-2, 2}, {-2, 2}, BinaryCase::all},
      {"greater", mx::greater, {-2, 2}, {-2, 2}, BinaryCase::all},
      {"greater_equal", mx::greater_equal, {-2, 2}, {-2, 2}, BinaryCase::all},
      {"logical_and", mx::logical_and, {-1, 2}, {-1, 2}, BinaryCase::all},
      {"logical_or", mx::logical_or, {-1, 2}, {-1, 2}, BinaryCase::all},
      {"logaddexp", mx::logaddexp, {}, {}, BinaryCase::floats},
      {"arctan2", mx::arctan2, {}, {}, BinaryCase::floats},
      {"bitwise_and", mx::bitwise_and, {-100, 100}, {-100, 100}, BinaryCase::integers_and_bool},
      {"bitwise_or", mx::bitwise_or, {-100, 100}, {-100, 100}, BinaryCase::integers_and_bool},
      {"bitwise_xor", mx::bitwise_xor, {-100, 100}, {-100, 100}, BinaryCase::integers_and_bool},
      // Shift amounts past the bit width are defined; the domain covers them.
      {"left_shift", mx::left_shift, {-100, 100}, {0, 70}, BinaryCase::integers_and_bool},
      {"right_shift", mx::right_shift, {-100, 100}, {0, 70}, BinaryCase::integers_and_bool},
  };
  return cases;
}

const std::vector<mx::Dtype> ints = {mx::uint8, mx::uint16, mx::uint32, mx::uint64,
                                     mx::int8,  mx::int16,  mx::int32,  mx::int64};
const std::vector<mx::Dtype> floats = {mx::float16, mx::bfloat16, mx::float32};

std::vector<mx::Dtype> types_for(const BinaryCase& bc) {
  std::vector<mx::Dtype> out;
  bool want_ints = bc.types != BinaryCase::floats;
  bool want_floats = bc.types != BinaryCase::integers_and_bool;
  bool want_bool = bc.types == BinaryCase::all || bc.types == BinaryCase::integers_and_bool;
  if (want_bool) out.push_back(mx::bool_);
  if (want_ints) out.insert(out.end(), ints.begin(), ints.end());
  if (want_floats) out.insert(out.end(), floats.begin(), floats.end());
  return out;
}

Op wrap(BinaryFn fn) {
  return [fn](const std::vector<mx::array>& in, mx::StreamOrDevice s) {
    return fn(in[0], in[1], s);
  };
}

Tolerance binary_tolerance(const std::string& name, mx::Dtype dt) {
  auto t = default_tolerance(dt);
  if (dt == mx::float32 && (name == "power" || name == "arctan2" || name == "logaddexp")) {
    return {2e-4, 1e-5}; // pow/atan2/log/exp on the device: a few ulp
  }
  return t;
}

} // namespace

TEST_CASE("binary kernels handle every layout and shape class, including broadcasting") {
  if (!gpu_present()) return;
  for (auto dt : {mx::float32, mx::int64}) {
    sweep("add", wrap(mx::add), {{dt, dt}}, {});
  }
  sweep("less", wrap(mx::less), {{mx::float32, mx::float32}}, {});
}

TEST_CASE("every binary op matches the CPU for every dtype it accepts") {
  if (!gpu_present()) return;
  for (auto& bc : binary_cases()) {
    for (auto dt : types_for(bc)) {
      auto tol = binary_tolerance(bc.name, dt);
      sweep(bc.name, wrap(bc.fn), {{dt, dt}}, {bc.a, bc.b}, &tol, quick_shapes, quick_layouts);
    }
  }
}

TEST_CASE("binary ops with mixed input dtypes promote like the CPU") {
  if (!gpu_present()) return;
  std::vector<std::pair<mx::Dtype, mx::Dtype>> pairs = {
      {mx::uint8, mx::int8}, {mx::int32, mx::float16}, {mx::bfloat16, mx::float16},
      {mx::bool_, mx::float32}, {mx::uint32, mx::int32}};
  for (auto [a, b] : pairs) {
    sweep("add", wrap(mx::add), {{a, b}}, {}, nullptr, quick_shapes, {Layout::contiguous});
  }
}

TEST_CASE("integer division and shifts agree with the CPU on their edge cases") {
  if (!gpu_present()) return;
  for (auto dt : {mx::int8, mx::int32, mx::int64, mx::uint32}) {
    auto a = mx::astype(mx::array({-128, 127, 7, -7, 0, 5, -1, 100}), dt);
    auto b = mx::astype(mx::array({-1, 0, 2, 2, 0, -3, 64, 9}), dt);
    for (auto fn : {mx::floor_divide, mx::remainder, mx::left_shift, mx::right_shift}) {
      auto got = mlx_test::to_doubles(fn(a, b, mx::Device::gpu));
      auto want = mlx_test::to_doubles(fn(a, b, mx::Device::cpu));
      CHECK_MESSAGE(got == want, "dtype " << dt);
    }
  }
}

// m_div (include/math.glsl) corrects the device's 2.5-ulp quotient with an exact integer
// remainder, so f32 division must give the CPU's bits wherever operands and result are
// normal (subnormals go to the hardware, which flushes them). Exact multiples are mixed in:
// one ulp low there turns floor_divide one unit lower.
TEST_CASE("f32 division on the GPU is correctly rounded: the CPU's bits for normal values") {
  if (!gpu_present()) return;
  uint64_t s = 5;
  auto next = [&] {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(s >> 32);
  };
  auto normal = [&] {  // sign, exponent in [-60, 60], any significand
    uint32_t e = 127 - 60 + next() % 121;
    return std::bit_cast<float>((next() & 0x80000000u) | (e << 23) | (next() & 0x007fffffu));
  };
  const int n = 1 << 18;
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    b[i] = normal();
    a[i] = i % 4 == 0 ? b[i] * static_cast<float>(static_cast<int>(next() % 2001) - 1000)
                      : normal();
  }
  auto xa = mx::array(a.begin(), {n}, mx::float32);
  auto xb = mx::array(b.begin(), {n}, mx::float32);
  auto got = mx::divide(xa, xb, mx::Device::gpu);
  auto want = mx::divide(xa, xb, mx::Device::cpu);
  mx::eval({got, want});
  int mismatches = 0;
  for (int i = 0; i < n; ++i) {
    uint32_t g = std::bit_cast<uint32_t>(got.data<float>()[i]);
    uint32_t w = std::bit_cast<uint32_t>(want.data<float>()[i]);
    if (g != w && mismatches++ < 5) {
      FAIL_CHECK(a[i] << " / " << b[i] << ": " << got.data<float>()[i] << ", expected "
                      << want.data<float>()[i]);
    }
  }
  CHECK(mismatches == 0);
}
