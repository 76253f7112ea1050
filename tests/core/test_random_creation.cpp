// CPU semantics of the random distributions added after uniform/normal/randint (bernoulli,
// truncated_normal, gumbel, categorical, laplace, permutation), the per-thread default key,
// and the creation ops linspace, tri, tril, triu and arange's float arithmetic, checked
// against MLX's definitions. Statistical checks use fixed keys (deterministic) with bounds of
// 4 standard errors, which would hold for ~99.99% of keys.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <thread>

#include "mlx/backend/common/arange.h"
#include "test_utils.h"

namespace mx = mlx::core;
namespace rnd = mlx::core::random;
using mlx_test::to_doubles;
using mlx_test::to_vector;

namespace {

const mx::Device kCpu = mx::Device::cpu;

double mean_of(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}

double var_of(const std::vector<double>& v) {
  double m = mean_of(v), ss = 0;
  for (double x : v) {
    ss += (x - m) * (x - m);
  }
  return ss / (v.size() - 1);
}

}  // namespace

TEST_CASE("bernoulli compares 32 random bits with p * 2^32, as MLX does") {
  auto key = rnd::key(9);
  auto p = mx::array({0.0f, 0.25f, 0.5f, 1.0f, -1.0f, 2.0f}, {6});
  auto b = rnd::bernoulli(p, {1000, 6}, key, kCpu);
  CHECK(b.dtype() == mx::bool_);
  CHECK(b.shape() == mx::Shape{1000, 6});
  // The same comparison done here from the bits: identical.
  auto bits = to_vector<uint32_t>(rnd::bits({1000, 6}, key, kCpu));
  auto got = to_vector<bool>(b);
  float upper = std::nextafter(4294967296.0f, INFINITY);
  std::vector<float> pv = {0.0f, 0.25f, 0.5f, 1.0f, -1.0f, 2.0f};
  for (size_t i = 0; i < got.size(); ++i) {
    REQUIRE(got[i] == (static_cast<float>(bits[i]) < pv[i % 6] * upper));
  }
  // p <= 0 is never true, p >= 1 always.
  for (size_t i = 0; i < got.size(); i += 6) {
    CHECK_FALSE(got[i]);
    CHECK(got[i + 3]);
    CHECK_FALSE(got[i + 4]);
    CHECK(got[i + 5]);
  }
  // The overloads: p's shape, a scalar template, and the default p = 0.5 (a 0-d bool).
  CHECK(rnd::bernoulli(mx::array({2.0f, -2.0f}), key, kCpu).shape() == mx::Shape{2});
  CHECK(to_vector<bool>(rnd::bernoulli(mx::array({2.0f, -2.0f}), key, kCpu)) ==
        std::vector<bool>{true, false});
  CHECK(rnd::bernoulli(0.5f, {5}, key, kCpu).shape() == mx::Shape{5});
  auto half = rnd::bernoulli(key, kCpu);
  CHECK(half.shape() == mx::Shape{});
  CHECK(half.dtype() == mx::bool_);
  auto many = to_doubles(rnd::bernoulli(mx::array(0.3f), {100000}, key, kCpu));
  CHECK(std::abs(mean_of(many) - 0.3) < 4 * std::sqrt(0.21 / 100000));
  // Float16 probabilities (widened with the float32 scale, as in MLX).
  CHECK(to_vector<bool>(rnd::bernoulli(mx::array(1.0, mx::float16), {4}, key, kCpu)) ==
        std::vector<bool>(4, true));
}

TEST_CASE("bernoulli rejects integer probabilities and shapes p does not broadcast to") {
  auto p = mx::array({0.1f, 0.2f, 0.3f}, {3});
  CHECK_THROWS_WITH_AS(rnd::bernoulli(p, {2}, rnd::key(0), kCpu), doctest::Contains("[bernoulli]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(rnd::bernoulli(mx::array(0), {2}, rnd::key(0), kCpu),
                       doctest::Contains("floating point"), std::invalid_argument);
  CHECK_THROWS_AS(rnd::bernoulli(p, {-1, 3}, rnd::key(0), kCpu), std::invalid_argument);
  CHECK(rnd::bernoulli(mx::reshape(p, {1, 3}), {4, 3}, rnd::key(0), kCpu).shape() ==
        mx::Shape{4, 3});
}

TEST_CASE("truncated_normal stays in [lower, upper] with the truncated normal's moments") {
  const int n = 200000;
  auto t = to_doubles(rnd::truncated_normal(mx::array(-1.0f), mx::array(2.0f), {n}, mx::float32,
                                            rnd::key(4), kCpu));
  for (double x : t) {
    REQUIRE(x >= -1.0);
    REQUIRE(x <= 2.0);
  }
  const double pi = 3.14159265358979323846;
  auto phi = [&](double x) { return std::exp(-x * x / 2) / std::sqrt(2 * pi); };
  auto Phi = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  double Z = Phi(2) - Phi(-1);
  double mean = (phi(-1) - phi(2)) / Z;
  double var = 1 + (-1 * phi(-1) - 2 * phi(2)) / Z - mean * mean;
  CHECK(std::abs(mean_of(t) - mean) < 4 * std::sqrt(var / n));
  CHECK(std::abs(var_of(t) - var) < 4 * var * std::sqrt(2.0 / n));
  // Bounds broadcast to the output shape (MLX's test: (1, 2) with (3, 1) gives (3, 2)).
  auto lower = mx::array({-2.0f, 0.0f}, {1, 2});
  auto upper = mx::array({0.0f, 1.0f, 2.0f}, {3, 1});
  auto b = rnd::truncated_normal(lower, upper, mx::float32, rnd::key(5), kCpu);
  CHECK(b.shape() == mx::Shape{3, 2});
  auto bv = to_doubles(b);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 2; ++c) {
      double lo = c == 0 ? -2.0 : 0.0;
      double hi = r;
      // With lower > upper the clip gives lower, as in MLX.
      if (lo <= hi) {
        CHECK(bv[r * 2 + c] >= lo);
        CHECK(bv[r * 2 + c] <= hi);
      } else {
        CHECK(bv[r * 2 + c] == lo);
      }
    }
  }
  auto flipped = to_doubles(rnd::truncated_normal(mx::array(2.0f), mx::array(-2.0f), {5},
                                                  mx::float32, rnd::key(6), kCpu));
  CHECK(flipped == std::vector<double>(5, 2.0));
  CHECK(
      rnd::truncated_normal(mx::array(-1.0f), mx::array(1.0f), {4}, mx::bfloat16, rnd::key(7), kCpu)
          .dtype() == mx::bfloat16);
  CHECK(rnd::truncated_normal(mx::zeros({0}), mx::zeros({0}), mx::float32, rnd::key(7), kCpu)
            .size() == 0);
  CHECK_THROWS_WITH_AS(
      rnd::truncated_normal(mx::zeros({2}), mx::ones({3}), mx::float32, rnd::key(0), kCpu),
      doctest::Contains("[truncated_normal]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      rnd::truncated_normal(mx::array(0.0f), mx::array(1.0f), {2}, mx::int32, rnd::key(0), kCpu),
      doctest::Contains("[truncated_normal]"), std::invalid_argument);
}

TEST_CASE("gumbel and laplace have their distributions' means and variances") {
  const int n = 200000;
  const double pi = 3.14159265358979323846;
  auto g = to_doubles(rnd::gumbel({n}, mx::float32, rnd::key(8), kCpu));
  double gvar = pi * pi / 6;
  // Gumbel: kurtosis 5.4, so the sample variance's standard error is var * sqrt(4.4 / n).
  CHECK(std::abs(mean_of(g) - 0.5772156649) < 4 * std::sqrt(gvar / n));
  CHECK(std::abs(var_of(g) - gvar) < 4 * gvar * std::sqrt(4.4 / n));
  // gumbel is -log(-log(u)) of the same key's uniform.
  auto u = to_doubles(rnd::uniform({16}, mx::float32, rnd::key(8), kCpu));
  auto g16 = to_doubles(rnd::gumbel({16}, mx::float32, rnd::key(8), kCpu));
  for (int i = 0; i < 16; ++i) {
    CHECK(g16[i] == doctest::Approx(-std::log(-std::log(u[i]))).epsilon(1e-5));
  }
  CHECK(rnd::gumbel({2, 3}, mx::float16, rnd::key(1), kCpu).dtype() == mx::float16);
  CHECK_THROWS_WITH_AS(rnd::gumbel({2}, mx::int32, rnd::key(1), kCpu),
                       doctest::Contains("[gumbel]"), std::invalid_argument);
  // Laplace(0, 1): variance 2, kurtosis 6.
  auto l = to_doubles(rnd::laplace({n}, rnd::key(9), kCpu));
  CHECK(std::abs(mean_of(l)) < 4 * std::sqrt(2.0 / n));
  CHECK(std::abs(var_of(l) - 2.0) < 4 * 2.0 * std::sqrt(5.0 / n));
  // loc and scale: scale * base + loc with the same key (MLX's test).
  auto base = to_doubles(rnd::laplace({3, 2}, rnd::key(10), kCpu));
  auto shifted = to_doubles(rnd::laplace({3, 2}, 1.0f, 2.0f, rnd::key(10), kCpu));
  for (size_t i = 0; i < base.size(); ++i) {
    CHECK(shifted[i] == doctest::Approx(2 * base[i] + 1).epsilon(1e-6));
  }
  for (auto dt : {mx::float16, mx::bfloat16}) {
    auto h = to_doubles(rnd::laplace({10000}, dt, rnd::key(11), kCpu));
    CHECK(std::all_of(h.begin(), h.end(), [](double x) { return std::isfinite(x); }));
  }
  CHECK_THROWS_WITH_AS(rnd::laplace({2}, mx::int32, rnd::key(1), kCpu),
                       doctest::Contains("[laplace]"), std::invalid_argument);
}

TEST_CASE("categorical has MLX's shapes and dtype and samples softmax(logits)") {
  auto key = rnd::key(12);
  auto logits = mx::zeros({10, 20});
  CHECK(rnd::categorical(logits, -1, key, kCpu).shape() == mx::Shape{10});
  CHECK(rnd::categorical(logits, 0, key, kCpu).shape() == mx::Shape{20});
  auto out = rnd::categorical(logits, -1, key, kCpu);
  CHECK(out.dtype() == mx::uint32);
  auto ov = to_doubles(out);
  CHECK(*std::max_element(ov.begin(), ov.end()) < 20);
  auto shaped = rnd::categorical(logits, 0, mx::Shape{5, 20}, key, kCpu);
  CHECK(shaped.shape() == mx::Shape{5, 20});
  auto sv = to_doubles(shaped);
  CHECK(*std::max_element(sv.begin(), sv.end()) < 10);
  CHECK(rnd::categorical(logits, 1, 7, key, kCpu).shape() == mx::Shape{10, 7});
  CHECK(rnd::categorical(logits, 0, 7, key, kCpu).shape() == mx::Shape{20, 7});
  // A single distribution: MLX's inverse CDF for a sample shape or num_samples.
  auto one = mx::zeros({20});
  CHECK(rnd::categorical(one, 0, 7, key, kCpu).shape() == mx::Shape{7});
  CHECK(rnd::categorical(one, 0, mx::Shape{5, 3}, key, kCpu).shape() == mx::Shape{5, 3});
  CHECK(rnd::categorical(one, 0, 1, key, kCpu).shape() == mx::Shape{1});
  CHECK(rnd::categorical(one, 0, 0, key, kCpu).shape() == mx::Shape{0});
  auto iv = to_doubles(rnd::categorical(one, 0, 1000, key, kCpu));
  CHECK(*std::max_element(iv.begin(), iv.end()) < 20);
  // Frequencies, both methods.
  std::vector<float> lp = {std::log(0.1f), std::log(0.2f), std::log(0.3f), std::log(0.4f)};
  auto l1 = mx::array(lp.begin(), {4}, mx::float32);
  const int n = 100000;
  for (int method = 0; method < 2; ++method) {
    auto s = method == 0 ? rnd::categorical(l1, 0, n, key, kCpu)
                         : rnd::categorical(mx::broadcast_to(mx::reshape(l1, {1, 4}), {n, 4}), 1,
                                            key, kCpu);
    std::vector<double> counts(4, 0);
    for (double x : to_doubles(s)) {
      counts[static_cast<size_t>(x)]++;
    }
    for (int c = 0; c < 4; ++c) {
      double p = 0.1 * (c + 1);
      CHECK_MESSAGE(std::abs(counts[c] / n - p) < 4 * std::sqrt(p * (1 - p) / n),
                    "method " << method << " category " << c);
    }
  }
  // Infinite logits: an +inf category is always drawn; -inf ones never.
  float inf = INFINITY;
  auto sure = mx::array({0.0f, inf, 0.0f}, {3});
  CHECK(to_vector<uint32_t>(rnd::categorical(sure, 0, 50, key, kCpu)) ==
        std::vector<uint32_t>(50, 1u));
  CHECK(to_vector<uint32_t>(rnd::categorical(mx::reshape(sure, {1, 3}), 1, key, kCpu)) ==
        std::vector<uint32_t>{1u});
  auto never = mx::array({-inf, 0.0f, -inf, 0.0f}, {4});
  for (double x : to_doubles(rnd::categorical(never, 0, 2000, key, kCpu))) {
    REQUIRE((x == 1 || x == 3));
  }
  // Two +inf categories split the draws between them (MLX: uniform over the maxima).
  auto two = to_doubles(rnd::categorical(mx::array({inf, 0.0f, inf}, {3}), 0, 4000, key, kCpu));
  double firsts = std::count(two.begin(), two.end(), 0.0);
  CHECK(std::count(two.begin(), two.end(), 1.0) == 0);
  CHECK(std::abs(firsts / 4000 - 0.5) < 4 * std::sqrt(0.25 / 4000));
}

TEST_CASE("categorical rejects bad axes, shapes, sample counts and empty categories") {
  auto logits = mx::zeros({10, 20});
  auto key = rnd::key(0);
  CHECK_THROWS_WITH_AS(rnd::categorical(logits, 2, key, kCpu), doctest::Contains("[categorical]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(rnd::categorical(logits, -3, key, kCpu), doctest::Contains("[categorical]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(rnd::categorical(logits, 1, mx::Shape{10, 5}, key, kCpu),
                       doctest::Contains("[categorical]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(rnd::categorical(logits, 1, -1, key, kCpu),
                       doctest::Contains("[categorical]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(rnd::categorical(mx::zeros({3, 0}), 1, key, kCpu),
                       doctest::Contains("no categories"), std::invalid_argument);
  CHECK_THROWS_AS(rnd::categorical(mx::zeros({}), 0, key, kCpu), std::invalid_argument);
}

TEST_CASE("permutation shuffles along an axis and permutes arange(n)") {
  auto key = rnd::key(13);
  auto p = to_vector<uint32_t>(rnd::permutation(16384, key, kCpu));
  std::vector<uint32_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  std::vector<uint32_t> iota(16384);
  std::iota(iota.begin(), iota.end(), 0u);
  CHECK(sorted == iota);
  CHECK(p != iota);  // 1 / 16384! odds of failing
  // As MLX: the order that sorts the key's bits.
  auto bits = to_vector<uint32_t>(rnd::bits({16384}, key, kCpu));
  CHECK(std::is_sorted(p.begin(), p.end(),
                       [&](uint32_t a, uint32_t b) { return bits[a] < bits[b]; }));
  auto x = mx::reshape(mx::arange(16, kCpu), {4, 4}, kCpu);
  for (int axis : {0, 1, -1}) {
    auto shuffled = rnd::permutation(x, axis, key, kCpu);
    CHECK(shuffled.shape() == mx::Shape{4, 4});
    CHECK(mx::array_equal(mx::sort(shuffled, axis, kCpu), x, kCpu).item<bool>());
  }
  auto keep = rnd::permutation(mx::reshape(mx::array(1), {1, 1}), 0, key, kCpu);
  CHECK(keep.shape() == mx::Shape{1, 1});
  CHECK(keep.dtype() == mx::int32);
  CHECK_THROWS_WITH_AS(rnd::permutation(x, 2, key, kCpu), doctest::Contains("[permutation]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(rnd::permutation(-1, key, kCpu), doctest::Contains("[permutation]"),
                       std::invalid_argument);
}

TEST_CASE("each thread has its own default key sequence, as in MLX") {
  rnd::seed(7);
  auto a = to_doubles(rnd::uniform({4}, mx::float32, std::nullopt, kCpu));
  std::vector<double> in_thread, in_thread_seeded;
  std::thread t([&] {
    // A new thread starts from key(0) (MLX: from the clock) and seeding it leaves the main
    // thread's sequence alone.
    in_thread = to_doubles(rnd::uniform({4}, mx::float32, std::nullopt, kCpu));
    rnd::seed(7);
    in_thread_seeded = to_doubles(rnd::uniform({4}, mx::float32, std::nullopt, kCpu));
  });
  t.join();
  auto b = to_doubles(rnd::uniform({4}, mx::float32, std::nullopt, kCpu));
  CHECK(in_thread ==
        to_doubles(rnd::uniform({4}, mx::float32, rnd::split(rnd::key(0)).second, kCpu)));
  CHECK(in_thread_seeded == a);
  // The main thread went on from its own state: its second draw is the seed-7 sequence's.
  auto k = rnd::split(rnd::key(7)).first;
  CHECK(b == to_doubles(rnd::uniform({4}, mx::float32, rnd::split(k).second, kCpu)));
}

TEST_CASE("linspace follows MLX: (1 - t) * start + t * stop with t = i / (num - 1)") {
  auto l = mx::linspace(0.0, 1.0, 5, mx::float32, kCpu);
  CHECK(l.dtype() == mx::float32);
  CHECK(to_doubles(l) == std::vector<double>{0, 0.25, 0.5, 0.75, 1});
  CHECK(to_doubles(mx::linspace(0.0, 1.0, 4, false, mx::float32, kCpu)) ==
        std::vector<double>{0, 0.25, 0.5, 0.75});
  // The endpoints are exact, and the values follow the float32 formula.
  auto v = to_vector<float>(mx::linspace(-3.0, 7.0, 101, mx::float32, kCpu));
  CHECK(v.front() == -3.0f);
  CHECK(v.back() == 7.0f);
  for (int i = 0; i < 101; ++i) {
    float t = static_cast<float>(i) / 100.0f;
    volatile float a = (1.0f - t) * -3.0f;
    volatile float b = t * 7.0f;
    CHECK(v[i] == a + b);
  }
  CHECK(to_doubles(mx::linspace(2.5, 9.0, 1, mx::float32, kCpu)) == std::vector<double>{2.5});
  CHECK(mx::linspace(0.0, 1.0, 0, mx::float32, kCpu).shape() == mx::Shape{0});
  CHECK(mx::linspace(0.0, 1.0).shape() == mx::Shape{50});
  CHECK(to_doubles(mx::linspace(-10.0, 10.0, 5, mx::int32, kCpu)) ==
        std::vector<double>{-10, -5, 0, 5, 10});
  auto d = mx::linspace(0.0, 1.0, 3, mx::float64, kCpu);
  CHECK(d.dtype() == mx::float64);
  CHECK(to_doubles(d) == std::vector<double>{0, 0.5, 1});
  CHECK_THROWS_WITH_AS(mx::linspace(0.0, 1.0, -1), doctest::Contains("[linspace]"),
                       std::invalid_argument);
}

TEST_CASE("tri, tril and triu follow MLX's column <= row + k masks") {
  CHECK(to_doubles(mx::tri(3, 3, 0, mx::float32, kCpu)) ==
        std::vector<double>{1, 0, 0, 1, 1, 0, 1, 1, 1});
  CHECK(to_doubles(mx::tri(2, 4, 1, mx::int32, kCpu)) ==
        std::vector<double>{1, 1, 0, 0, 1, 1, 1, 0});
  CHECK(to_doubles(mx::tri(3, 2, -1, mx::float32, kCpu)) == std::vector<double>{0, 0, 1, 0, 1, 1});
  CHECK(to_doubles(mx::tri(2, 2, 100, mx::float32, kCpu)) == std::vector<double>{1, 1, 1, 1});
  CHECK(to_doubles(mx::tri(2, 2, -100, mx::float32, kCpu)) == std::vector<double>{0, 0, 0, 0});
  CHECK(to_doubles(mx::tri(2, 2, std::numeric_limits<int>::min(), mx::float32, kCpu)) ==
        std::vector<double>(4, 0));
  CHECK(mx::tri(3, mx::bool_, kCpu).dtype() == mx::bool_);
  CHECK(mx::tri(0, 3, 0, mx::float32, kCpu).shape() == mx::Shape{0, 3});
  auto x = mx::reshape(mx::arange(1.0, 13.0, mx::float32, kCpu), {2, 2, 3}, kCpu);
  CHECK(to_doubles(mx::tril(x, 0, kCpu)) ==
        std::vector<double>{1, 0, 0, 4, 5, 0, 7, 0, 0, 10, 11, 0});
  CHECK(to_doubles(mx::triu(x, 0, kCpu)) ==
        std::vector<double>{1, 2, 3, 0, 5, 6, 7, 8, 9, 0, 11, 12});
  CHECK(to_doubles(mx::triu(x, 1, kCpu)) ==
        std::vector<double>{0, 2, 3, 0, 0, 6, 0, 8, 9, 0, 0, 12});
  CHECK(to_doubles(mx::tril(x, -1, kCpu)) ==
        std::vector<double>{0, 0, 0, 4, 0, 0, 0, 0, 0, 10, 0, 0});
  CHECK(to_doubles(mx::triu(x, std::numeric_limits<int>::min(), kCpu)) == to_doubles(x));
  CHECK(mx::tril(mx::astype(x, mx::int16, kCpu), 0, kCpu).dtype() == mx::int16);
  CHECK_THROWS_WITH_AS(mx::tril(mx::zeros({3}), 0, kCpu), doctest::Contains("[tril]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::triu(mx::zeros({}), 0, kCpu), doctest::Contains("[triu]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::tri(-1, 2, 0, mx::float32, kCpu), doctest::Contains("[tri]"),
                       std::invalid_argument);
}

TEST_CASE("float arange is start + i * step rounded once, without drift, past 2^22 elements") {
  // The float-float form against the double formula of the reference NumPy uses, over
  // ranges with steps that float32 cannot hold: equal everywhere here.
  struct R {
    double start, step;
    int n;
  };
  for (const auto& r : std::vector<R>{{0, 0.1, 10000},
                                      {-1, 0.1, 20},
                                      {-3, 1.0 / 3, 30},
                                      {1e6, 1e-3, 1000},
                                      {100, -0.7, 286},
                                      {-7.25, 0.1, (1 << 22) + 5}}) {
    auto a = to_vector<float>(mx::arange(r.start, r.start + r.n * r.step, r.step, kCpu));
    REQUIRE(static_cast<int>(a.size()) >= r.n);
    int mismatches = 0;
    for (int i = 0; i < r.n; ++i) {
      mismatches += a[i] != static_cast<float>(r.start + i * r.step);
    }
    CHECK_MESSAGE(mismatches == 0, "start " << r.start << " step " << r.step);
  }
  // Overflow gives inf, not NaN (inf - inf in the error terms).
  auto over = mx::arange_float_value(mx::arange_float_split(3e38, 1e38), 1);
  CHECK(std::isinf(over));
  CHECK(over > 0);
  // 16-bit floats round the float32 value once more, as a double -> half cast does.
  auto h = to_vector<mx::float16_t>(mx::arange(0.0, 1.0, 0.1, mx::float16, kCpu));
  for (int i = 0; i < 10; ++i) {
    CHECK(static_cast<float>(h[i]) == static_cast<float>(mx::float16_t(i * 0.1)));
  }
}
