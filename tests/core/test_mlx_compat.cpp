// MLX's documented behaviour, pinned (issue 9): scalar dtypes, item(), flags and strides,
// flatten's axis rules, complex max/min, MLX's exact random bits, detach after eval,
// allocator sizes, memory.h and the small APIs MLX code uses. Each case runs on the CPU
// and, where a GPU is available, on the GPU; expected values come from MLX's algorithms
// (see docs/compatibility.md).
#include <doctest/doctest.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <complex>

#include "mlx/mlx.h"
#include "mlx/primitives.h"
#include "test_utils.h"

namespace mx = mlx::core;
using mlx_test::to_doubles;
using mlx_test::to_vector;

namespace {

std::string dev_name(const mx::Device& d) {
  return d == mx::Device::cpu ? "cpu" : "gpu";
}

}  // namespace

TEST_CASE("C++ doubles make float32 arrays, as MLX's TypeToDtype<double>") {
  CHECK(mx::array(1.0).dtype() == mx::float32);
  CHECK(mx::array(1.0).itemsize() == 4);
  CHECK(mx::array({1.0, 2.0}).dtype() == mx::float32);
  CHECK(mx::array(1.0, mx::float64).dtype() == mx::float64);
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(dev_name(d));
    auto x = mx::ones({3}, mx::float16, d);
    // Scalars wrap as array(x) with no weak typing: f16 * 2.0 is float32, f16 * 2 stays f16.
    CHECK((x * 2.0).dtype() == mx::float32);
    CHECK((x * 2).dtype() == mx::float16);
    CHECK((x / 2).dtype() == mx::float32);  // MLX's operator/ takes a double
    CHECK((x + mx::float16_t(1.0f)).dtype() == mx::float16);
    CHECK(to_doubles(mx::ones({2}, mx::int32, d) / 2) == std::vector<double>{0.5, 0.5});
    CHECK(mx::power(mx::ones({2}, mx::float32, d), mx::array(0.5), d).dtype() == mx::float32);
    auto w = mx::where(mx::array({true, false}), mx::ones({2}, mx::int32, d), mx::array(1.0), d);
    CHECK(w.dtype() == mx::float32);
    CHECK(to_doubles((mx::ones({2}, mx::float32, d) * 2.0)) == std::vector<double>{2, 2});
  }
}

TEST_CASE("item<T>() converts from the stored dtype instead of reinterpreting bytes") {
  CHECK(mx::array(1.0).item<float>() == 1.0f);
  CHECK(mx::array(1.5, mx::float64).item<float>() == 1.5f);
  CHECK(mx::array(2.5f).item<double>() == 2.5);
  CHECK(mx::array(7).item<float>() == 7.0f);
  CHECK(mx::array(-3.75f).item<int>() == -3);
  CHECK(mx::array(1e10f).item<int32_t>() == INT32_MAX);  // float -> int saturates, as astype
  auto p = mx::power(mx::array(2.0f), mx::array(0.5, mx::float64), mx::Device::cpu);
  CHECK(p.dtype() == mx::float64);
  CHECK(p.item<float>() == doctest::Approx(std::sqrt(2.0f)));
}

TEST_CASE("flags, data_size and strides follow MLX after creation and views") {
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(dev_name(d));
    // MLX's Full materializes: ones is row-contiguous and owns all its elements.
    auto o = mx::ones({10, 10}, d);
    o.eval();
    CHECK(o.flags().row_contiguous);
    CHECK(o.flags().contiguous);
    CHECK_FALSE(o.flags().col_contiguous);
    CHECK(o.data_size() == 100);
    CHECK(o.strides() == mx::Strides{10, 1});
    auto r = mx::reshape(o, {2, 5, 10}, d);
    r.eval();
    CHECK(r.flags().row_contiguous);
    CHECK(r.data_size() == 100);
    CHECK(r.strides() == mx::Strides{50, 10, 1});

    auto b = mx::broadcast_to(mx::zeros({2, 1, 2}, d), {4, 2, 1, 2}, d);
    b.eval();
    CHECK(b.strides() == mx::Strides{0, 2, 0, 1});
    CHECK(b.data_size() == 4);
    CHECK(b.flags().contiguous);  // no gaps: the repeats are not gaps
    CHECK_FALSE(b.flags().row_contiguous);
    CHECK_FALSE(b.flags().col_contiguous);

    auto bb = mx::broadcast_to(mx::broadcast_to(mx::zeros({2}, d), {2, 2}, d), {2, 2, 2}, d);
    bb.eval();
    CHECK(bb.strides() == mx::Strides{0, 0, 1});
    CHECK(bb.data_size() == 2);

    // Adding unit dims keeps every flag (out.size() == in.size()).
    auto u = mx::broadcast_to(mx::array(3.0f), {1, 1, 1}, d);
    u.eval();
    CHECK(u.flags().row_contiguous);
    CHECK(u.flags().col_contiguous);

    auto t = mx::transpose(mx::ones({2, 3}, d), d);
    t.eval();
    CHECK(t.flags().col_contiguous);
    CHECK_FALSE(t.flags().row_contiguous);
    CHECK(t.flags().contiguous);
    CHECK(t.data_size() == 6);
    auto t3 = mx::transpose(mx::ones({2, 3, 4}, d), d);
    t3.eval();
    CHECK(t3.flags().col_contiguous);
    CHECK_FALSE(t3.flags().row_contiguous);

    // A strided slice has gaps: not contiguous.
    auto sl = mx::slice(mx::ones({4, 4}, d), {0, 0}, {4, 4}, {1, 2}, d);
    sl.eval();
    CHECK_FALSE(sl.flags().contiguous);
    CHECK_FALSE(sl.flags().row_contiguous);
  }
}

TEST_CASE("flatten follows MLX's axis rules: negative axes count once, then clamp") {
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(dev_name(d));
    auto x = mx::reshape(mx::arange(24, d), {2, 3, 4}, d);
    CHECK(mx::flatten(x, 1, 3, d).shape() == mx::Shape{2, 12});
    CHECK(mx::flatten(x, -4, -1, d).shape() == mx::Shape{24});
    CHECK(mx::flatten(x, -2, 10, d).shape() == mx::Shape{2, 12});
    CHECK(mx::flatten(x, 0, 1, d).shape() == mx::Shape{6, 4});
    CHECK(to_doubles(mx::flatten(x, 1, 3, d)) == to_doubles(mx::reshape(x, {2, 12}, d)));
    CHECK(mx::flatten(x, 2, 2, d).id() == x.id());
    CHECK_THROWS_WITH_AS(mx::flatten(x, 2, 1, d), doctest::Contains("[flatten]"),
                         std::invalid_argument);
    CHECK_THROWS_AS(mx::flatten(x, 5, 6, d), std::invalid_argument);
    CHECK_THROWS_AS(mx::flatten(x, -5, -4, d), std::invalid_argument);
    // A 0-d array flattens to one element whatever the axes.
    CHECK(mx::flatten(mx::array(1), -3, -1, d).shape() == mx::Shape{1});
    CHECK(mx::flatten(mx::array(1), 0, 0, d).shape() == mx::Shape{1});
  }
}

TEST_CASE("max, min and comparisons of complex64 order by real part, then imaginary part") {
  using c = std::complex<float>;
  std::vector<mx::complex64_t> v{c(1, 2), c(1, 3), c(0, 9), c(-1, 50)};
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(dev_name(d));
    auto a = mx::array(v.begin(), {4}, mx::complex64);
    auto mx_ = mx::max(a, false, d).item<mx::complex64_t>();
    CHECK(mx_.real() == 1.0f);
    CHECK(mx_.imag() == 3.0f);
    auto mn = mx::min(a, false, d).item<mx::complex64_t>();
    CHECK(mn.real() == -1.0f);
    CHECK(mn.imag() == 50.0f);
    auto rows = mx::max(mx::reshape(a, {2, 2}, d), 1, false, d);
    auto rv = to_vector<mx::complex64_t>(rows);
    CHECK(rv[0].imag() == 3.0f);
    CHECK(rv[1].real() == 0.0f);
    auto nanv = mx::array({mx::complex64_t(c(1, 1)), mx::complex64_t(c(0, std::nanf("")))});
    CHECK(std::isnan(mx::max(nanv, false, d).item<mx::complex64_t>().imag()));
    CHECK(to_doubles(mx::greater(a, mx::array(std::complex<float>(1, 2)), d)) ==
          std::vector<double>{0, 1, 0, 0});
    CHECK(to_doubles(mx::astype(mx::maximum(a, mx::array(std::complex<float>(1, 2)), d),
                                mx::float32, d)) == std::vector<double>{1, 1, 1, 1});
  }
}

TEST_CASE("random keys, split and bits reproduce MLX's threefry stream exactly") {
  // Values from MLX's algorithm (mlx/random.cpp, backend/cpu/threefry.cpp); the first
  // two keys are also in MLX's own tests.
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(dev_name(d));
    CHECK(to_vector<uint32_t>(mx::random::key(0)) == std::vector<uint32_t>{0, 0});
    CHECK(to_vector<uint32_t>(mx::random::key(42)) == std::vector<uint32_t>{0, 42});
    CHECK(to_vector<uint32_t>(mx::random::key(1ull << 32)) == std::vector<uint32_t>{1, 0});
    auto [k1, k2] = mx::random::split(mx::random::key(0), d);
    CHECK(to_vector<uint32_t>(k1) == std::vector<uint32_t>{4146024105u, 967050713u});
    CHECK(to_vector<uint32_t>(k2) == std::vector<uint32_t>{2718843009u, 1272950319u});
    CHECK(to_vector<uint32_t>(mx::random::split(mx::random::key(42), 3, d)) ==
          std::vector<uint32_t>{3134548294u, 3733159049u, 3746501087u, 894150801u, 801545058u,
                                2363201431u});
    CHECK(to_vector<uint32_t>(mx::random::bits({}, 4, mx::random::key(0), d)) ==
          std::vector<uint32_t>{1797259609u});
    CHECK(to_vector<uint32_t>(mx::random::bits({3}, 4, mx::random::key(1), d)) ==
          std::vector<uint32_t>{2441914641u, 1110694964u, 3819641963u});
    CHECK(to_vector<uint8_t>(mx::random::bits({5}, 1, mx::random::key(0), d)) ==
          std::vector<uint8_t>{143, 35, 95, 55, 29});
    CHECK(to_vector<uint16_t>(mx::random::bits({3}, 2, mx::random::key(0), d)) ==
          std::vector<uint16_t>{9103, 14175, 5405});
    CHECK(to_vector<uint16_t>(mx::random::bits({7}, 2, mx::random::key(0), d)) ==
          std::vector<uint16_t>{20137, 63263, 1497, 14756, 16513, 41486, 44591});
    CHECK(to_vector<uint32_t>(mx::random::bits({3, 1}, mx::random::key(0), d)) ==
          std::vector<uint32_t>{4146024105u, 1351547692u, 2718843009u});
    // uniform is MLX's float path op for op, so it is bit-exact.
    CHECK(to_vector<float>(mx::random::uniform({4}, mx::random::key(0), d)) ==
          std::vector<float>{0.965321481f, 0.225159034f, 0.633029997f, 0.296381831f});
    // normal goes through erfinv, whose last bit may differ from MLX's polynomial.
    auto n = to_doubles(mx::random::normal({4}, mx::random::key(0), d));
    std::vector<double> expect{1.81608713, -0.754884779, 0.339889258, -0.534835339};
    for (size_t i = 0; i < 4; ++i) {
      CHECK(n[i] == doctest::Approx(expect[i]).epsilon(1e-6));
    }
    // The overloads MLX code calls.
    CHECK(mx::random::uniform(0.0f, 2.0f, {3}, mx::float16, mx::random::key(3), d).dtype() ==
          mx::float16);
    CHECK(mx::random::randint(0, 10, {5}, mx::int32, mx::random::key(3), d).shape() ==
          mx::Shape{5});
    CHECK(mx::random::normal({2}, 1.0f, 2.0f, mx::random::key(3), d).shape() == mx::Shape{2});
    CHECK(mx::random::normal({2}, mx::float16, mx::random::key(3), d).dtype() == mx::float16);
  }
}

TEST_CASE("RandomBits with a batch of keys fills one MLX-layout block per key") {
  // Keys (N, 2) -> output (N, M): row i equals bits({M}) drawn with key i alone.
  auto keys = mx::random::split(mx::random::key(5), 3);
  auto out = mx::array(
      mx::Shape{3, 5}, mx::uint32,
      std::make_shared<mx::RandomBits>(mx::default_stream(mx::Device::cpu), mx::Shape{3, 5}, 4),
      {keys});
  auto rows = to_vector<uint32_t>(out);
  for (int i = 0; i < 3; ++i) {
    auto k = mx::reshape(mx::slice(keys, {i, 0}, {i + 1, 2}), {2});
    auto one = to_vector<uint32_t>(mx::random::bits({5}, 4, k, mx::Device::cpu));
    CHECK(std::vector<uint32_t>(rows.begin() + 5 * i, rows.begin() + 5 * i + 5) == one);
  }
}

TEST_CASE("eval detaches what it evaluated, and is_tracer is false outside transforms") {
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(dev_name(d));
    auto x = mx::ones({4}, d);
    auto y = mx::exp(x, d);
    auto z = mx::add(y, y, d);
    y.set_tracer(true);  // a tracer flag means nothing outside a transform, as in MLX
    CHECK_FALSE(y.is_tracer());
    mx::eval(z);
    CHECK_FALSE(z.has_primitive());
    CHECK_FALSE(y.has_primitive());
    CHECK(z.inputs().empty());
    CHECK(to_doubles(z) == std::vector<double>(4, 2 * std::exp(1.0f)));
  }
}

TEST_CASE("arrays the user keeps are available after async_eval and eval") {
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(dev_name(d));
    auto a = mx::exp(mx::ones({8}, d), d);
    auto b = mx::multiply(a, a, d);
    mx::async_eval(b);
    mx::eval(b);
    CHECK(b.is_available());
    CHECK(a.is_available());  // an intermediate on the same stream finished with b
    CHECK(to_doubles(a)[0] == doctest::Approx(std::exp(1.0f)));
    // Polling alone (no eval, no wait) sees the work finish, as MLX's event check does.
    auto p = mx::exp(mx::ones({1 << 16}, d), d);
    mx::async_eval(p);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!p.is_available() && std::chrono::steady_clock::now() < deadline) {
    }
    CHECK(p.is_available());
  }
  if (mx::gpu::is_available()) {
    // A view recorded on another stream shares the producer's buffer: reading it waits for
    // the producer's stream, not only its own.
    auto sa = mx::new_stream(mx::Device::gpu);
    auto sb = mx::new_stream(mx::Device::gpu);
    auto x = mx::exp(mx::ones({1 << 20}, sa), sa);
    auto y = mx::reshape(x, {-1, 1024}, sb);
    mx::eval(y);
    CHECK(y.data<float>()[(1 << 20) - 1] == doctest::Approx(std::exp(1.0f)));
  }
}

TEST_CASE("memory.h reports and limits the active allocator") {
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(dev_name(d));
    mx::synchronize();
    size_t before = mx::get_active_memory();
    auto a = mx::ones({1 << 18}, d);  // 1 MiB of float32
    a.eval();
    CHECK(mx::get_active_memory() >= before + (1 << 20));
    CHECK(mx::get_peak_memory() >= mx::get_active_memory());
    mx::reset_peak_memory();
    CHECK(mx::get_peak_memory() <= mx::get_active_memory() + (1 << 20));
    size_t old = mx::set_memory_limit(123456789);
    CHECK(mx::get_memory_limit() == 123456789);
    CHECK(mx::set_memory_limit(old) == 123456789);
    size_t wired_old = mx::set_wired_limit(4096);
    CHECK(mx::set_wired_limit(wired_old) == 4096);
    mx::clear_cache();
    CHECK(mx::get_cache_memory() == 0);
  }
  auto pending = mx::exp(mx::ones({16}));
  mx::async_eval(pending);
  mx::clear_streams();  // waits for every stream's work
  CHECK(pending.is_available());
  CHECK_FALSE(mx::metal::is_available());
  if (mx::gpu::is_available()) {
    CHECK(mx::gpu::device_count() >= 1);
    CHECK(mx::gpu::device_info().count("device_name") == 1);
  }
}

TEST_CASE("allocator size of a buffer is its capacity, at least the request") {
  auto b = mx::allocator::malloc(3000);
  CHECK(mx::allocator::allocator().size(b) >= 3000);
  mx::allocator::free(b);
}

TEST_CASE("clip, stop_gradient, pad, roll, diagonal and diag match MLX") {
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(dev_name(d));
    auto x = mx::array({-2.0f, 0.5f, 3.0f});
    CHECK(to_doubles(mx::clip(x, mx::array(0.0f), mx::array(1.0f), d)) ==
          std::vector<double>{0, 0.5, 1});
    CHECK(to_doubles(mx::clip(x, std::nullopt, mx::array(1.0f), d)) ==
          std::vector<double>{-2, 0.5, 1});
    CHECK_THROWS_WITH_AS(mx::clip(x, std::nullopt, std::nullopt, d), doctest::Contains("[clip]"),
                         std::invalid_argument);
    CHECK(to_doubles(mx::stop_gradient(x, d)) == to_doubles(x));

    auto v = mx::array({1, 2, 3});
    CHECK(to_doubles(mx::pad(v, 1, mx::array(0), "constant", d)) ==
          std::vector<double>{0, 1, 2, 3, 0});
    CHECK(to_doubles(mx::pad(v, {2, 1}, mx::array(9), "constant", d)) ==
          std::vector<double>{9, 9, 1, 2, 3, 9});
    CHECK(to_doubles(mx::pad(v, 2, mx::array(0), "edge", d)) ==
          std::vector<double>{1, 1, 1, 2, 3, 3, 3});
    CHECK(to_doubles(mx::pad(v, 2, mx::array(0), "reflect", d)) ==
          std::vector<double>{3, 2, 1, 2, 3, 2, 1});
    CHECK(to_doubles(mx::pad(v, 2, mx::array(0), "symmetric", d)) ==
          std::vector<double>{2, 1, 1, 2, 3, 3, 2});
    auto m = mx::reshape(mx::arange(6, d), {2, 3}, d);
    auto pm =
        mx::pad(m, std::vector<std::pair<int, int>>{{1, 0}, {0, 1}}, mx::array(-1), "constant", d);
    CHECK(pm.shape() == mx::Shape{3, 4});
    CHECK(to_doubles(pm) == std::vector<double>{-1, -1, -1, -1, 0, 1, 2, -1, 3, 4, 5, -1});
    CHECK_THROWS_AS(mx::pad(v, 1, mx::array(0), "wrap", d), std::invalid_argument);
    CHECK_THROWS_AS(mx::pad(v, -1, mx::array(0), "constant", d), std::invalid_argument);
    CHECK_THROWS_AS(mx::pad(v, 3, mx::array(0), "reflect", d), std::invalid_argument);

    CHECK(to_doubles(mx::roll(mx::array({1, 2, 3, 4}), 1, d)) == std::vector<double>{4, 1, 2, 3});
    CHECK(to_doubles(mx::roll(mx::array({1, 2, 3, 4}), -5, d)) == std::vector<double>{2, 3, 4, 1});
    CHECK(to_doubles(mx::roll(m, 1, d)) == std::vector<double>{5, 0, 1, 2, 3, 4});
    CHECK(to_doubles(mx::roll(m, 1, 1, d)) == std::vector<double>{2, 0, 1, 5, 3, 4});
    CHECK(to_doubles(mx::roll(m, mx::Shape{1, 1}, std::vector<int>{0, 1}, d)) ==
          std::vector<double>{5, 3, 4, 2, 0, 1});

    auto sq = mx::reshape(mx::arange(9, d), {3, 3}, d);
    CHECK(to_doubles(mx::diag(sq, 0, d)) == std::vector<double>{0, 4, 8});
    CHECK(to_doubles(mx::diag(sq, 1, d)) == std::vector<double>{1, 5});
    CHECK(to_doubles(mx::diag(sq, -2, d)) == std::vector<double>{6});
    CHECK(to_doubles(mx::diagonal(mx::transpose(sq, d), 1, 0, 1, d)) == std::vector<double>{3, 7});
    auto dm = mx::diag(mx::array({1, 2}), -1, d);
    CHECK(dm.shape() == mx::Shape{3, 3});
    CHECK(to_doubles(dm) == std::vector<double>{0, 0, 0, 1, 0, 0, 0, 2, 0});
    auto b3 = mx::reshape(mx::arange(8, d), {2, 2, 2}, d);
    CHECK(to_doubles(mx::diagonal(b3, 0, 1, 2, d)) == std::vector<double>{0, 3, 4, 7});
  }
}

TEST_CASE("MLX spellings compile: ArgReduce::ArgMax, Reduce::Sum, {a, b} as a vector") {
  CHECK(mx::ArgReduce::ArgMax == mx::ArgReduceType::ArgMax);
  CHECK(mx::ArgReduce::ArgMin == mx::ArgReduce::ReduceType::ArgMin);
  CHECK(mx::Reduce::Sum == mx::ReduceType::Sum);
  auto a = mx::array({1, 2});
  auto b = mx::array({3});
  CHECK(to_doubles(mx::concatenate({a, b})) == std::vector<double>{1, 2, 3});
  mx::eval({a, b});
  CHECK((a + 1).dtype() == mx::int32);
  CHECK(to_doubles(a > 1) == std::vector<double>{0, 1});
}
