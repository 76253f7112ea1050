// Counter-based random numbers: Threefry known answers, reproducibility, key splitting and
// the distributions' ranges and moments. Statistical checks use fixed keys, so they are
// deterministic; the bounds (4 standard errors) would hold for ~99.99% of keys.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <set>

#include "mlx/backend/cpu/threefry.h"
#include "reduce_test_utils.h"

using mlx_test::to_doubles;
using mlx_test::to_vector;
namespace mx = mlx::core;
namespace rnd = mlx::core::random;

namespace {

struct Moments {
  double mean, var, lo, hi;
};

Moments moments(const std::vector<double>& v) {
  double s = 0, lo = INFINITY, hi = -INFINITY;
  for (double x : v) {
    s += x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  double m = s / v.size(), ss = 0;
  for (double x : v)
    ss += (x - m) * (x - m);
  return {m, ss / (v.size() - 1), lo, hi};
}

}  // namespace

TEST_CASE("threefry2x32_20 reproduces Random123's known-answer vectors") {
  using mlx::core::random_detail::threefry2x32_20;
  auto zero = threefry2x32_20(0, 0, 0, 0);
  CHECK(zero.first == 0x6b200159u);
  CHECK(zero.second == 0x99ba4efeu);
  auto ones = threefry2x32_20(0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu);
  CHECK(ones.first == 0x1cb996fcu);
  CHECK(ones.second == 0xbb002be7u);
  // key = digits of pi after the counter's (Random123 kat_vectors).
  auto pi = threefry2x32_20(0x13198a2eu, 0x03707344u, 0x243f6a88u, 0x85a308d3u);
  CHECK(pi.first == 0xc4923a9cu);
  CHECK(pi.second == 0x483df7a0u);
}

TEST_CASE("key(seed) holds the high and low 32 bits of the seed") {
  auto k = rnd::key(0x0000000100000002ull);
  CHECK(k.dtype() == mx::uint32);
  CHECK(k.shape() == mx::Shape{2});
  CHECK(to_vector<uint32_t>(k) == std::vector<uint32_t>{1u, 2u});
}

TEST_CASE("bits follow MLX's layout: counter (j, j + H + odd) fills words j and j + H + odd") {
  // W words, H = W / 2: the hash of (j, j + H + odd) gives words j and j + H + odd, and an
  // odd middle word H is the first half of the hash of (H, 0).
  using mlx::core::random_detail::threefry2x32_20;
  auto b = to_vector<uint32_t>(rnd::bits({4}, 4, rnd::key(0)));
  auto c0 = threefry2x32_20(0, 0, 0, 2);
  auto c1 = threefry2x32_20(0, 0, 1, 3);
  CHECK(b == std::vector<uint32_t>{c0.first, c1.first, c0.second, c1.second});
  auto k = rnd::key(12345);
  auto kk = to_vector<uint32_t>(k);
  auto odd = to_vector<uint32_t>(rnd::bits({5}, 4, k));
  auto o0 = threefry2x32_20(kk[0], kk[1], 0, 3);
  auto o1 = threefry2x32_20(kk[0], kk[1], 1, 4);
  auto mid = threefry2x32_20(kk[0], kk[1], 2, 0);
  CHECK(odd == std::vector<uint32_t>{o0.first, o1.first, mid.first, o0.second, o1.second});
}

TEST_CASE("the bits of a draw depend on the key and the byte count, not the shape") {
  auto k = rnd::key(42);
  auto flat = to_vector<uint32_t>(rnd::bits({12}, 4, k));
  auto shaped = to_vector<uint32_t>(rnd::bits({3, 4}, 4, k));
  CHECK(flat == shaped);
  // Narrow widths read the byte stream of a draw of the same byte count, low byte first,
  // with the last word cut to the bytes that remain (13 bytes: words 0-2 and 1 byte).
  auto bytes = to_vector<uint8_t>(rnd::bits({13}, 1, k));
  auto kk = to_vector<uint32_t>(k);
  using mlx::core::random_detail::threefry2x32_20;
  auto h0 = threefry2x32_20(kk[0], kk[1], 0, 2);
  auto h1 = threefry2x32_20(kk[0], kk[1], 1, 3);
  std::vector<uint32_t> words{h0.first, h1.first, h0.second, h1.second};
  for (int i = 0; i < 13; ++i) {
    CHECK(bytes[i] == ((words[i / 4] >> (8 * (i % 4))) & 0xffu));
  }
  auto halves = to_vector<uint16_t>(rnd::bits({8}, 2, k));
  for (int i = 0; i < 8; ++i) {
    CHECK(halves[i] == ((words[i / 2] >> (16 * (i % 2))) & 0xffffu));
  }
  CHECK(rnd::bits({2}, 1, k).dtype() == mx::uint8);
  CHECK(rnd::bits({2}, 2, k).dtype() == mx::uint16);
  CHECK(rnd::bits({0, 3}, 4, k).size() == 0);
}

TEST_CASE("the same key gives the same numbers; different keys give different numbers") {
  auto a = to_vector<uint32_t>(rnd::bits({1000}, 4, rnd::key(1)));
  auto b = to_vector<uint32_t>(rnd::bits({1000}, 4, rnd::key(1)));
  auto c = to_vector<uint32_t>(rnd::bits({1000}, 4, rnd::key(2)));
  auto d = to_vector<uint32_t>(rnd::bits({1000}, 4, rnd::key(1ull << 32)));
  CHECK(a == b);
  int same_c = 0, same_d = 0;
  for (int i = 0; i < 1000; ++i) {
    same_c += a[i] == c[i];
    same_d += a[i] == d[i];
  }
  CHECK(same_c == 0);
  CHECK(same_d == 0);
  std::set<uint32_t> distinct(a.begin(), a.end());
  CHECK(distinct.size() >= 999);  // 32-bit collisions among 1000 draws are rare
  auto u1 = to_doubles(rnd::uniform({100}, rnd::key(9)));
  auto u2 = to_doubles(rnd::uniform({100}, rnd::key(9)));
  CHECK(u1 == u2);
}

TEST_CASE("split derives distinct, reproducible keys from the key's bit stream") {
  auto k = rnd::key(3);
  auto keys = rnd::split(k, 3);
  CHECK(keys.shape() == mx::Shape{3, 2});
  CHECK(keys.dtype() == mx::uint32);
  auto kv = to_vector<uint32_t>(keys);
  CHECK(kv == to_vector<uint32_t>(rnd::bits({6}, 4, k)));
  auto [k0, k1] = rnd::split(k);
  auto two = to_vector<uint32_t>(rnd::split(k, 2));
  CHECK(to_vector<uint32_t>(k0) == std::vector<uint32_t>{two[0], two[1]});
  CHECK(to_vector<uint32_t>(k1) == std::vector<uint32_t>{two[2], two[3]});
  CHECK(to_vector<uint32_t>(k0) != to_vector<uint32_t>(k1));
  CHECK(to_vector<uint32_t>(rnd::bits({4}, 4, k0)) != to_vector<uint32_t>(rnd::bits({4}, 4, k1)));
  CHECK(rnd::split(k, 0).shape() == mx::Shape{0, 2});
}

TEST_CASE("seed makes calls without a key reproducible, and each call advances the key") {
  rnd::seed(7);
  auto a = to_doubles(rnd::uniform({8}));
  auto b = to_doubles(rnd::uniform({8}));
  rnd::seed(7);
  auto a2 = to_doubles(rnd::uniform({8}));
  auto b2 = to_doubles(rnd::uniform({8}));
  CHECK(a == a2);
  CHECK(b == b2);
  CHECK(a != b);
  rnd::seed(8);
  CHECK(to_doubles(rnd::uniform({8})) != a);
}

TEST_CASE("uniform stays in [low, high) with the expected mean and variance for float dtypes") {
  const int n = 100000;
  for (auto dt : {mx::float16, mx::bfloat16, mx::float32, mx::float64}) {
    auto u = rnd::uniform(mx::array(-2.0), mx::array(3.0), {n}, dt, rnd::key(17));
    CHECK(u.dtype() == dt);
    auto m = moments(to_doubles(u));
    CHECK(m.lo >= -2.0);
    CHECK(m.hi < 3.0);
    // Uniform on an interval of width 5: mean 0.5, variance 25/12; standard errors
    // 5/sqrt(12 n) and (25/12) * sqrt(0.8 / n) (the variance of a uniform's sample variance).
    CHECK(std::abs(m.mean - 0.5) < 4 * 5 / std::sqrt(12.0 * n));
    // 16-bit grids add a little variance (bf16 rounds to 2^-6 steps here).
    double grid = dt == mx::bfloat16 ? 2e-3 : 0.0;
    CHECK(std::abs(m.var - 25.0 / 12) < 4 * (25.0 / 12) * std::sqrt(0.8 / n) + grid);
  }
}

TEST_CASE("uniform never rounds up to high, even on a coarse float16 grid") {
  // In [1, 2) float16 has 1024 values; 1 + u rounds to 2 for u within 2^-12 of 1.
  auto h = rnd::uniform(mx::array(1.0), mx::array(2.0), {200000}, mx::float16, rnd::key(5));
  auto m = moments(to_doubles(h));
  CHECK(m.hi < 2.0);
  CHECK(m.hi == 2.0 - 0x1.0p-10);  // the top value below 2 is still reached
  CHECK(m.lo >= 1.0);
  // Negative and zero upper bounds too.
  auto neg = moments(to_doubles(
      rnd::uniform(mx::array(-2.0), mx::array(-1.0), {100000}, mx::bfloat16, rnd::key(6))));
  CHECK(neg.hi < -1.0);
  CHECK(neg.lo >= -2.0);
  auto zero = moments(to_doubles(
      rnd::uniform(mx::array(-1.0), mx::array(0.0), {100000}, mx::float16, rnd::key(8))));
  CHECK(zero.hi < 0.0);
}

TEST_CASE("uniform broadcasts low and high to the shape; default is [0, 1) float32") {
  mx::array low({0.0f, 10.0f, 100.0f}, {3, 1});
  auto u = rnd::uniform(low, mx::array(101.0f), {3, 50}, mx::float32, rnd::key(2));
  auto v = to_doubles(u);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 50; ++c) {
      double x = v[r * 50 + c];
      CHECK(x >= to_doubles(low)[r]);
      CHECK(x < 101.0);
    }
  }
  auto d = rnd::uniform({1000}, rnd::key(4));
  CHECK(d.dtype() == mx::float32);
  auto m = moments(to_doubles(d));
  CHECK(m.lo >= 0.0);
  CHECK(m.hi < 1.0);
}

TEST_CASE("uniform rejects non-float dtypes, mismatched bounds and bad keys") {
  CHECK_THROWS_WITH_AS(rnd::uniform({3}, mx::int32, rnd::key(0)), doctest::Contains("[uniform]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(rnd::uniform(mx::zeros({3}), mx::ones({3}), {2}, mx::float32),
                       doctest::Contains("[uniform]"), std::invalid_argument);
  CHECK_THROWS_AS(rnd::uniform({3}, mx::float32, mx::array({1, 2, 3}, mx::uint32)),
                  std::invalid_argument);
  CHECK_THROWS_AS(rnd::uniform({3}, mx::float32, mx::array({1, 2}, mx::int32)),
                  std::invalid_argument);
  CHECK_THROWS_AS(rnd::bits({3}, 3, rnd::key(0)), std::invalid_argument);
  CHECK_THROWS_AS(rnd::bits({-1}, 4, rnd::key(0)), std::invalid_argument);
  CHECK_THROWS_AS(rnd::split(rnd::key(0), -1), std::invalid_argument);
}

TEST_CASE("normal has mean loc and variance scale^2 within 4 standard errors") {
  const int n = 100000;
  auto z = rnd::normal({n}, rnd::key(23));
  CHECK(z.dtype() == mx::float32);
  auto m = moments(to_doubles(z));
  CHECK(std::abs(m.mean) < 4 / std::sqrt(double(n)));
  // The sample variance of n normals has standard error sqrt(2 / (n - 1)).
  CHECK(std::abs(m.var - 1.0) < 4 * std::sqrt(2.0 / (n - 1)));
  CHECK(std::isfinite(m.lo));
  CHECK(std::isfinite(m.hi));
  CHECK(m.lo < -3.5);  // tails are reached (P(|z| > 3.5) * n ~ 47 draws)
  CHECK(m.hi > 3.5);
  auto s = moments(to_doubles(rnd::normal({n}, mx::float32, 5.0f, 2.0f, rnd::key(24))));
  CHECK(std::abs(s.mean - 5.0) < 4 * 2 / std::sqrt(double(n)));
  CHECK(std::abs(s.var - 4.0) < 4 * 4 * std::sqrt(2.0 / (n - 1)));
  for (auto dt : {mx::float16, mx::bfloat16, mx::float64}) {
    auto zh = rnd::normal({20000}, dt, 0.0f, 1.0f, rnd::key(25));
    CHECK(zh.dtype() == dt);
    auto mh = moments(to_doubles(zh));
    CHECK(std::isfinite(mh.lo));
    CHECK(std::isfinite(mh.hi));
    CHECK(std::abs(mh.mean) < 4 / std::sqrt(20000.0) + 0.01);
    CHECK(std::abs(mh.var - 1.0) < 4 * std::sqrt(2.0 / 20000) + 0.01);
  }
  CHECK_THROWS_WITH_AS(rnd::normal({2}, mx::int32), doctest::Contains("[normal]"),
                       std::invalid_argument);
}

TEST_CASE("randint draws every integer of [low, high) and nothing else") {
  auto r = rnd::randint(mx::array(-5), mx::array(7), {20000}, mx::int32, rnd::key(31));
  CHECK(r.dtype() == mx::int32);
  auto v = to_vector<int32_t>(r);
  std::vector<int> counts(12, 0);
  for (int x : v) {
    REQUIRE(x >= -5);
    REQUIRE(x < 7);
    counts[x + 5]++;
  }
  // Each value expects 20000/12 = 1667 draws, standard deviation ~39.
  for (int c : counts)
    CHECK(std::abs(c - 20000.0 / 12) < 4 * 39.0);
  for (auto dt : {mx::uint8, mx::int8, mx::uint16, mx::int16, mx::uint32, mx::int64, mx::uint64}) {
    bool sgn = !mx::is_unsigned(dt);
    double lo = sgn ? -100 : 250, hi = sgn ? 27 : 255;
    auto x = rnd::randint(mx::array(lo), mx::array(hi), {2000}, dt, rnd::key(32));
    CHECK(x.dtype() == dt);
    auto m = moments(to_doubles(x));
    CHECK(m.lo == lo);  // 2000 draws over at most 127 values reach both ends
    CHECK(m.hi == hi - 1);
  }
}

TEST_CASE("randint stays in wide ranges beyond 32 bits and yields low for empty ranges") {
  int64_t lo = -(int64_t{1} << 40), hi = int64_t{1} << 40;
  auto x = to_vector<int64_t>(
      rnd::randint(mx::array(lo), mx::array(hi), {1000}, mx::int64, rnd::key(33)));
  int beyond32 = 0;
  for (auto v : x) {
    REQUIRE(v >= lo);
    REQUIRE(v < hi);
    beyond32 += std::abs(v) > (int64_t{1} << 33);
  }
  CHECK(beyond32 > 900);  // 99.2% of the range lies beyond 2^33
  auto e =
      to_vector<int32_t>(rnd::randint(mx::array(5), mx::array(5), {4}, mx::int32, rnd::key(1)));
  CHECK(e == std::vector<int32_t>{5, 5, 5, 5});
  auto e2 =
      to_vector<int32_t>(rnd::randint(mx::array(5), mx::array(2), {2}, mx::int32, rnd::key(1)));
  CHECK(e2 == std::vector<int32_t>{5, 5});
  CHECK_THROWS_WITH_AS(rnd::randint(mx::array(0), mx::array(4), {3}, mx::float32),
                       doctest::Contains("[randint]"), std::invalid_argument);
  // As MLX, bool is an allowed randint dtype.
  CHECK(rnd::randint(mx::array(0), mx::array(2), {3}, mx::bool_).dtype() == mx::bool_);
  CHECK_THROWS_AS(rnd::randint(mx::zeros({2}), mx::array(4), {3}), std::invalid_argument);
}
