// Issue 10: float32 accumulation that keeps growing, element counts past 2^31, sizes that
// overflow, and the small wrong answers found by a hostile probe. Every case here runs in
// CI (views stand in for multi-GiB arrays: a broadcast has the shape without the memory);
// the one that needs a real 2 GiB GPU array is in tools/large_probe.cpp (device machine).
#include <doctest/doctest.h>

#include <climits>
#include <cmath>
#include <complex>

#include "mlx/backend/common/cpu_allocator.h"
#include "mlx/backend/common/utils.h"
#include "mlx/mlx.h"
#include "test_utils.h"

namespace mx = mlx::core;
using mlx_test::to_doubles;

TEST_CASE("float32 sums, means, variances and dot products of 4e7 terms are exact") {
  // A float32 accumulator stops at 2^24 (or 2^25 with a float32 compensation term).
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == mx::Device::cpu ? "cpu" : "gpu");
    auto x = mx::full({40000000}, 1.0f, d);
    CHECK(mx::sum(x, false, d).item<float>() == 40000000.0f);
    CHECK(mx::mean(x, false, d).item<float>() == 1.0f);
    CHECK(mx::var(x, false, 0, d).item<float>() == 0.0f);
    // log(4e7) = 17.50439...; one float32 rounding of the exact sum.
    CHECK(mx::logsumexp(mx::zeros({40000000}, d), false, d).item<float>() ==
          doctest::Approx(std::log(4e7)).epsilon(1e-6));
    auto dot = mx::matmul(mx::ones({1, 20000000}, d), mx::ones({20000000, 1}, d), d);
    CHECK(dot.item<float>() == 20000000.0f);
    // Small terms after a large one: 1 + 1e7 * 1e-7 = 2 (a float32 running sum gives 1).
    auto mixed = mx::concatenate({mx::array({1.0f}), mx::full({10000000}, 1e-7f, d)}, 0, d);
    CHECK(mx::sum(mixed, false, d).item<float>() == doctest::Approx(2.0).epsilon(1e-6));
    // complex64 sums too (each part keeps growing past 2^24).
    auto c1 = mx::broadcast_to(mx::array(std::complex<float>(1, -1)), {40000000}, d);
    auto cs = mx::sum(c1, false, d).item<mx::complex64_t>();
    CHECK(cs.real() == 40000000.0f);
    CHECK(cs.imag() == -40000000.0f);
    // float16 sums accumulate wider too: 4096 ones overflow nothing and stay exact.
    CHECK(mx::sum(mx::ones({4096}, mx::float16, d), false, d).item<float>() == 4096.0f);
  }
}

TEST_CASE("collapsing dims never builds a dimension larger than 2^31 - 1") {
  auto [shape, strides] = mx::collapse_contiguous_dims({65536, 32768}, {{32768, 1}, {0, 0}});
  CHECK(shape == mx::Shape{65536, 32768});
  auto [s2, st2] = mx::collapse_contiguous_dims({1024, 1024, 1024}, {{1 << 20, 1024, 1}});
  CHECK(s2 == mx::Shape{1 << 30});  // 2^30 still merges into one dim
  auto [s3, st3] =
      mx::collapse_contiguous_dims({2, 1024, 1024, 1024}, {{1 << 30, 1 << 20, 1024, 1}});
  CHECK(s3 == mx::Shape{2 << 20, 1024});  // greedy from the left; 2^31 would not fit
}

TEST_CASE("reductions over 2^31 and 2^32 elements count every element (CPU)") {
  mx::Device cpu = mx::Device::cpu;
  // Broadcast views: the shapes of the probe without allocating 2-16 GiB.
  auto ones31 = mx::broadcast_to(mx::array(1.0f), {65536, 32768}, cpu);
  CHECK(mx::sum(ones31, false, cpu).item<float>() == 2147483648.0f);
  auto u8 = mx::broadcast_to(mx::array(uint8_t{255}), {65536, 32768}, cpu);
  CHECK(mx::max(u8, false, cpu).item<uint8_t>() == 255);
  CHECK(mx::any(u8, false, cpu).item<bool>());
  auto zero8 = mx::broadcast_to(mx::array(uint8_t{0}), {65536, 32768}, cpu);
  CHECK_FALSE(mx::all(zero8, false, cpu).item<bool>());
  auto ones32 = mx::broadcast_to(mx::array(1.0f), {65536, 65536}, cpu);
  CHECK(mx::sum(ones32, false, cpu).item<float>() == 4294967296.0f);
  CHECK(mx::max(ones32, false, cpu).item<float>() == 1.0f);
  // Per-axis reductions keep working at these sizes.
  auto rows = mx::sum(ones31, 1, false, cpu);
  CHECK(rows.shape() == mx::Shape{65536});
  CHECK(mx::max(rows, false, cpu).item<float>() == 32768.0f);
  // A flattened arg-reduction cannot hold 2^32 elements in one dimension: a clear error.
  CHECK_THROWS_WITH_AS(mx::argmax(ones32, false, cpu), doctest::Contains("[argmax]"),
                       std::invalid_argument);
  CHECK(mx::argmax(ones32, 1, false, cpu).shape() == mx::Shape{65536});
}

TEST_CASE("shapes and byte counts that overflow are refused where the array is made") {
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == mx::Device::cpu ? "cpu" : "gpu");
    // 2^64 elements: a wrapped count would make an empty array.
    CHECK_THROWS_WITH_AS(mx::ones({65536, 65536, 65536, 65536}, d),
                         doctest::Contains("more elements or bytes than fit"),
                         std::invalid_argument);
    // INT_MAX^2 float32 elements: the count fits 63 bits, the bytes do not.
    CHECK_THROWS_AS(mx::ones({INT_MAX, INT_MAX}, d), std::invalid_argument);
    // The bool version fits 63 bits; casting it to int32 does not.
    auto big_bool = mx::ones({INT_MAX, INT_MAX}, mx::bool_, d);
    CHECK(big_bool.size() == size_t(INT_MAX) * INT_MAX);
    CHECK_THROWS_AS(mx::astype(big_bool, mx::int32, d), std::invalid_argument);
    CHECK_THROWS_AS(mx::sum(big_bool, false, d), std::invalid_argument);
    // Evaluating it asks for 4.6e18 bytes: the allocator's clear error, not a crash.
    CHECK_THROWS_AS(big_bool.eval(), std::runtime_error);
    CHECK_THROWS_AS(mx::reshape(mx::ones({4}, d), {-1, 0}, d), std::invalid_argument);
  }
  CHECK_THROWS_WITH_AS(mx::reshape(mx::broadcast_to(mx::array(1.0f), {65536, 65536}), {-1}),
                       doctest::Contains("2^31 - 1"), std::invalid_argument);
}

TEST_CASE("allocators refuse sizes near SIZE_MAX instead of wrapping them") {
  CHECK_THROWS_AS(mx::allocator::malloc(SIZE_MAX), std::runtime_error);
  CHECK_THROWS_AS(mx::allocator::malloc(SIZE_MAX - 63), std::runtime_error);
  // Even with the memory limit lifted, a size near SIZE_MAX must not wrap to a tiny block.
  size_t old_limit = mx::set_memory_limit(SIZE_MAX);
  CHECK_THROWS_AS(mx::allocator::malloc(SIZE_MAX), std::runtime_error);
  CHECK_THROWS_AS(mx::allocator::malloc(SIZE_MAX / 2), std::runtime_error);
  mx::set_memory_limit(old_limit);
  mx::allocator::CpuAllocator cpu;
  CHECK_THROWS_AS(cpu.malloc(SIZE_MAX), std::runtime_error);
  CHECK_THROWS_AS(cpu.malloc(SIZE_MAX / 2 + 1), std::runtime_error);
  auto ok = cpu.malloc(100);
  CHECK(cpu.size(ok) >= 100);
  cpu.free(ok);
}

TEST_CASE("round with negative decimals rounds integers to tens and hundreds, as MLX") {
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == mx::Device::cpu ? "cpu" : "gpu");
    auto r = mx::round(mx::array({1234, 2550, -1251}), -2, d);
    CHECK(r.dtype() == mx::int32);
    CHECK(to_doubles(r) == std::vector<double>{1200, 2600, -1300});
    CHECK(to_doubles(mx::round(mx::array({1.25f, 2.5f}), 1, d)) ==
          std::vector<double>{1.2000000476837158, 2.5});
    CHECK(to_doubles(mx::round(mx::array({15.0f, 25.0f}), -1, d)) ==
          std::vector<double>{20, 20});  // half to even
    CHECK(to_doubles(mx::round(mx::array({7, 8}), 0, d)) == std::vector<double>{7, 8});
  }
}

TEST_CASE("a complex value is true when either part is non-zero, in astype and any") {
  using c = std::complex<float>;
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == mx::Device::cpu ? "cpu" : "gpu");
    auto z =
        mx::array({mx::complex64_t(c(0, 2)), mx::complex64_t(c(0, 0)), mx::complex64_t(c(3, 0))});
    CHECK(to_doubles(mx::astype(z, mx::bool_, d)) == std::vector<double>{1, 0, 1});
    CHECK(mx::any(mx::slice(z, {0}, {1}), false, d).item<bool>());
    CHECK(mx::astype(mx::array(std::complex<float>(0, 2)), mx::bool_, d).item<bool>());
  }
}
