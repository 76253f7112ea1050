// random and the creation ops on the GPU against the CPU reference.
//
// random::bits (the "random" family): the same key gives the same bits on both devices, bit
// for bit, for every width, odd byte counts (the word mode and its partial last word),
// batched and strided keys. The distributions are compositions of bits with elementwise
// ops, so the tests check their moments on both devices (1M samples; bounds of 4 standard
// errors with fixed keys: deterministic, and they would hold for ~99.99% of keys) and that
// the GPU draws agree with the CPU's within the float ops' tolerance.
// arange (the "arange" family) is bit for bit the CPU's for every dtype; linspace, eye,
// identity, tri, tril and triu compose existing kernels. None of it takes the CPU route.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "harness.h"
#include "mlx/backend/cpu/threefry.h"
#include "mlx/backend/gpu/device_info.h"
#include "mlx/backend/vulkan/cpu_fallback.h"
#include "mlx/primitives.h"

namespace mx = mlx::core;
namespace rnd = mlx::core::random;
using namespace gpu_diff;
using mlx_test::to_doubles;
using mlx_test::to_vector;

namespace {

const mx::Device kCpu = mx::Device::cpu;
const mx::Device kGpu = mx::Device::gpu;
constexpr double kPi = 3.14159265358979323846;

// The elements of an unsigned integer array as uint64 (exact for every width).
std::vector<uint64_t> words_of(const mx::array& a) {
  std::vector<uint64_t> out;
  for (double d : to_doubles(a)) {
    out.push_back(static_cast<uint64_t>(d));
  }
  return out;
}

// The raw bytes of a row-contiguous array, so float results compare bit for bit.
std::vector<uint8_t> bytes_of(mx::array a) {
  a.eval();
  auto c = mx::contiguous(a, false, kCpu);
  c.eval();
  const auto* p = c.data<uint8_t>();
  return std::vector<uint8_t>(p, p + c.nbytes());
}

void check_no_route(const char* primitive) {
  auto counts = mx::vulkan::fallback_counts();
  CHECK_MESSAGE(counts[primitive] == 0, primitive << " took the CPU route");
}

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
  for (double x : v) {
    ss += (x - m) * (x - m);
  }
  return {m, ss / (v.size() - 1), lo, hi};
}

// RandomBits with a batch of keys (..., 2), as MLX's vmap over keys builds it.
mx::array batched_bits(const mx::array& keys, const mx::Shape& shape, int width, mx::Device d) {
  mx::Dtype dt = width == 1 ? mx::uint8 : width == 2 ? mx::uint16 : mx::uint32;
  return mx::array(shape, dt, std::make_shared<mx::RandomBits>(mx::default_stream(d), shape, width),
                   {keys});
}

}  // namespace

TEST_CASE("random bits on the GPU are the CPU's bits for the same key, for every width") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // Word counts even and odd, byte counts that end inside a word, > 2^16 elements, empty.
  const std::vector<mx::Shape> shapes = {{},     {1},    {2},     {3},        {4},
                                         {5},    {7},    {13},    {3, 5},     {2, 0, 3},
                                         {1000}, {1001}, {4, 33}, {67, 1031}, {0}};
  for (uint64_t seed : {0ull, 1ull, 0x123456789abcdefull}) {
    for (int width : {1, 2, 4}) {
      for (const auto& shape : shapes) {
        auto key = rnd::key(seed);
        std::string what = "bits width=" + std::to_string(width) +
                           " shape=" + mx::shape_to_string(shape) + " seed=" + std::to_string(seed);
        auto want = rnd::bits(shape, width, key, kCpu);
        auto got = gpu_eval_checked(
            [&] { return std::vector<mx::array>{rnd::bits(shape, width, key, kGpu)}; }, what)[0];
        REQUIRE(got.dtype() == want.dtype());
        REQUIRE(got.shape() == shape);
        CHECK_MESSAGE(words_of(got) == words_of(want), what);
      }
    }
  }
  // MLX's own values for key(0) (tests/core/test_mlx_compat.cpp), now drawn on the GPU.
  CHECK(to_vector<uint32_t>(rnd::bits({3, 1}, rnd::key(0), kGpu)) ==
        std::vector<uint32_t>{4146024105u, 1351547692u, 2718843009u});
  CHECK(to_vector<uint8_t>(rnd::bits({5}, 1, rnd::key(0), kGpu)) ==
        std::vector<uint8_t>{143, 35, 95, 55, 29});
  check_no_route("RandomBits");
}

TEST_CASE("batched and strided keys draw on the GPU what each key draws on the CPU") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  auto keys = rnd::split(rnd::key(11), 6, kCpu);  // (6, 2)
  keys.eval();
  // Each batch is a view of the (6, 2) keys, made on each device so the GPU sees the view.
  struct Batch {
    std::function<mx::array(const mx::array&, mx::Device)> view;
    std::string name;
  };
  std::vector<Batch> batches = {
      {[](const mx::array& k, mx::Device) { return k; }, "(6, 2)"},
      {[](const mx::array& k, mx::Device d) {
         return mx::reshape(k, {2, 3, 2}, d);
       },
       "(2, 3, 2)"},
      // Every other key, and the keys read backwards: strided views, copied dense first.
      {[](const mx::array& k, mx::Device d) {
         return mx::slice(k, {0, 0}, {6, 2}, {2, 1}, d);
       },
       "every other key"},
      {[](const mx::array& k, mx::Device d) {
         return mx::slice(k, {5, 0}, {-7, 2}, {-1, 1}, d);
       },
       "reversed keys"},
  };
  auto keys_gpu = on_device(keys, kGpu);
  for (const auto& b : batches) {
    auto kc = b.view(keys, kCpu);
    auto kview = b.view(keys_gpu, kGpu);
    mx::Shape batch(kc.shape().begin(), kc.shape().end() - 1);
    int num_keys = 1;
    for (int d : batch) {
      num_keys *= d;
    }
    // Blocks of 5 bytes (width 1): words that straddle two keys' blocks.
    for (auto [width, tail] : std::vector<std::pair<int, mx::Shape>>{
             {1, {5}}, {1, {8}}, {2, {3}}, {4, {7}}, {4, {2, 2}}}) {
      mx::Shape shape = batch;
      shape.insert(shape.end(), tail.begin(), tail.end());
      std::string what = "batched keys " + b.name + " width=" + std::to_string(width) +
                         " shape=" + mx::shape_to_string(shape);
      auto want = batched_bits(kc, shape, width, kCpu);
      auto got = gpu_eval_checked(
          [&] { return std::vector<mx::array>{batched_bits(kview, shape, width, kGpu)}; }, what)[0];
      auto g = words_of(got), w = words_of(want);
      CHECK_MESSAGE(g == w, what);
      // Each key's block is what that key alone draws (MLX's per-key layout).
      auto flat_keys = mx::reshape(kc, {num_keys, 2}, kCpu);
      size_t per_key = g.size() / num_keys;
      for (int i = 0; i < num_keys; ++i) {
        auto k = mx::reshape(mx::slice(flat_keys, {i, 0}, {i + 1, 2}, kCpu), {2}, kCpu);
        auto one = words_of(rnd::bits(tail, width, k, kCpu));
        CHECK_MESSAGE(std::equal(one.begin(), one.end(), g.begin() + i * per_key),
                      what << " key " << i);
      }
    }
  }
  check_no_route("RandomBits");
}

TEST_CASE("keys, splits and draws made on the GPU equal the CPU's") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  auto key = rnd::key(2024);
  CHECK(words_of(rnd::split(key, 7, kGpu)) == words_of(rnd::split(key, 7, kCpu)));
  auto [a_gpu, b_gpu] = rnd::split(key, kGpu);
  auto [a_cpu, b_cpu] = rnd::split(key, kCpu);
  CHECK(words_of(a_gpu) == words_of(a_cpu));
  CHECK(words_of(b_gpu) == words_of(b_cpu));
  // A chain of splits that stays on the GPU.
  auto kg = key, kc = key;
  for (int i = 0; i < 5; ++i) {
    kg = rnd::split(kg, kGpu).second;
    kc = rnd::split(kc, kCpu).second;
  }
  CHECK(words_of(kg) == words_of(kc));
  // uniform maps the same bits with the same float32 ops (a division by 2^32 - 1, a
  // minimum, a multiply-add): equal bits, and the ops within one f32 rounding each.
  Tolerance f32{1e-6, 1e-7};
  for (auto dt : {mx::float32, mx::float16, mx::bfloat16}) {
    auto want = rnd::uniform(mx::array(-3.0f), mx::array(5.0f), {4099}, dt, key, kCpu);
    auto got = gpu_eval_checked(
        [&] {
          return std::vector<mx::array>{
              rnd::uniform(mx::array(-3.0f), mx::array(5.0f), {4099}, dt, key, kGpu)};
        },
        "uniform")[0];
    // 16-bit results: one rounding of the dtype (the f32 values may sit either side of a
    // rounding boundary).
    CHECK(all_close(got, want, dt == mx::float32 ? f32 : default_tolerance(dt),
                    "uniform " + mx::dtype_to_string(dt)));
  }
  // normal goes through erfinv (the GPU's polynomial may differ in the last bits).
  CHECK(all_close(rnd::normal({4099}, key, kGpu), rnd::normal({4099}, key, kCpu),
                  default_tolerance(mx::float32), "normal"));
  // Integer results: floor of the same uniform, so equal unless a draw sits within an
  // f32 rounding of an integer boundary; these keys have none.
  CHECK(to_doubles(rnd::randint(-50, 70, {4099}, mx::int32, key, kGpu)) ==
        to_doubles(rnd::randint(-50, 70, {4099}, mx::int32, key, kCpu)));
  CHECK(words_of(rnd::bernoulli(mx::array(0.3f), {4099}, key, kGpu)) ==
        words_of(rnd::bernoulli(mx::array(0.3f), {4099}, key, kCpu)));
  check_no_route("RandomBits");
  check_no_route("Arange");
}

TEST_CASE("distributions drawn on either device have the expected moments (1M samples)") {
  const int n = 1 << 20;
  const double sn = std::sqrt(static_cast<double>(n));
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == kGpu ? "gpu" : "cpu");
    if (gpu_present()) {
      mx::vulkan::reset_fallback_counts();
    }
    // uniform on [-2, 3): mean 0.5, variance 25/12; the variance of a uniform's sample
    // variance is (25/12)^2 * 0.8 / n.
    auto u = moments(to_doubles(
        rnd::uniform(mx::array(-2.0f), mx::array(3.0f), {n}, mx::float32, rnd::key(101), d)));
    CHECK(u.lo >= -2.0);
    CHECK(u.hi < 3.0);
    CHECK(std::abs(u.mean - 0.5) < 4 * 5 / std::sqrt(12.0 * n));
    CHECK(std::abs(u.var - 25.0 / 12) < 4 * (25.0 / 12) * std::sqrt(0.8 / n));
    // normal(loc 1, scale 2): the sample variance of normals has standard error
    // var * sqrt(2 / (n - 1)).
    auto z = moments(to_doubles(rnd::normal({n}, mx::float32, 1.0f, 2.0f, rnd::key(102), d)));
    CHECK(std::abs(z.mean - 1.0) < 4 * 2 / sn);
    CHECK(std::abs(z.var - 4.0) < 4 * 4 * std::sqrt(2.0 / (n - 1)));
    // bernoulli(0.3): a proportion, standard error sqrt(p (1 - p) / n).
    auto b = moments(to_doubles(rnd::bernoulli(mx::array(0.3f), {n}, rnd::key(103), d)));
    CHECK(std::abs(b.mean - 0.3) < 4 * std::sqrt(0.21 / n));
    // randint in [-5, 7): every value, each with frequency 1/12.
    auto r = to_doubles(rnd::randint(-5, 7, {n}, mx::int32, rnd::key(104), d));
    std::vector<int> counts(12, 0);
    for (double x : r) {
      REQUIRE(x >= -5);
      REQUIRE(x < 7);
      counts[static_cast<int>(x) + 5]++;
    }
    for (int c : counts) {
      CHECK(std::abs(c - n / 12.0) < 4 * std::sqrt(n * (1.0 / 12) * (11.0 / 12)));
    }
    // truncated_normal on [-1, 2]: the truncated normal's mean phi(a) - phi(b) over
    // Z = Phi(b) - Phi(a), and variance 1 + (a phi(a) - b phi(b)) / Z - mean^2.
    {
      double a = -1, bb = 2;
      auto phi = [](double x) { return std::exp(-x * x / 2) / std::sqrt(2 * kPi); };
      auto Phi = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
      double Z = Phi(bb) - Phi(a);
      double mean = (phi(a) - phi(bb)) / Z;
      double var = 1 + (a * phi(a) - bb * phi(bb)) / Z - mean * mean;
      auto t = moments(to_doubles(rnd::truncated_normal(mx::array(-1.0f), mx::array(2.0f), {n},
                                                        mx::float32, rnd::key(105), d)));
      CHECK(t.lo >= -1.0);
      CHECK(t.hi <= 2.0);
      CHECK(std::abs(t.mean - mean) < 4 * std::sqrt(var / n));
      // The sample variance's standard error is below var * sqrt(2 / n) here (a truncated
      // normal has lighter tails than a normal).
      CHECK(std::abs(t.var - var) < 4 * var * std::sqrt(2.0 / n));
    }
    // gumbel: mean Euler's gamma, variance pi^2 / 6; kurtosis 5.4, so the sample variance's
    // standard error is var * sqrt(4.4 / n).
    auto g = moments(to_doubles(rnd::gumbel({n}, mx::float32, rnd::key(106), d)));
    double gvar = kPi * kPi / 6;
    CHECK(std::abs(g.mean - 0.5772156649) < 4 * std::sqrt(gvar / n));
    CHECK(std::abs(g.var - gvar) < 4 * gvar * std::sqrt(4.4 / n));
    // laplace(loc 0.5, scale 2): mean 0.5, variance 2 scale^2 = 8 (kurtosis 6, so the sample
    // variance's standard error is var sqrt(5 / n)).
    auto l = moments(to_doubles(rnd::laplace({n}, mx::float32, 0.5f, 2.0f, rnd::key(107), d)));
    CHECK(std::abs(l.mean - 0.5) < 4 * std::sqrt(8.0 / n));
    CHECK(std::abs(l.var - 8.0) < 4 * 8.0 * std::sqrt(5.0 / n));
    if (d == kGpu) {
      auto routes = mx::vulkan::fallback_counts();
      CHECK_MESSAGE(routes.empty(), "a primitive took the CPU route: " << routes.begin()->first);
    }
  }
}

TEST_CASE("categorical frequencies follow softmax(logits) on both devices and both methods") {
  const std::vector<double> p = {0.1, 0.2, 0.3, 0.4};
  std::vector<float> logp;
  for (double x : p) {
    logp.push_back(static_cast<float>(std::log(x)));
  }
  auto check_freq = [&](const std::vector<double>& idx, const std::string& what) {
    std::vector<double> counts(p.size(), 0);
    for (double x : idx) {
      REQUIRE_MESSAGE(x < p.size(), what);
      counts[static_cast<size_t>(x)]++;
    }
    double n = static_cast<double>(idx.size());
    for (size_t c = 0; c < p.size(); ++c) {
      CHECK_MESSAGE(std::abs(counts[c] / n - p[c]) < 4 * std::sqrt(p[c] * (1 - p[c]) / n),
                    what << " category " << c << ": " << counts[c] / n << " vs " << p[c]);
    }
  };
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == kGpu ? "gpu" : "cpu");
    if (gpu_present()) {
      mx::vulkan::reset_fallback_counts();
    }
    // One distribution with num_samples: MLX's inverse CDF (2^18 samples x 4 categories).
    auto logits = mx::array(logp.begin(), {4}, mx::float32);
    auto inv = rnd::categorical(logits, 0, 1 << 18, rnd::key(201), d);
    CHECK(inv.shape() == mx::Shape{1 << 18});
    CHECK(inv.dtype() == mx::uint32);
    check_freq(to_doubles(inv), "inverse CDF");
    // 2^18 rows of the same logits: the Gumbel-max trick along axis 1.
    auto rows = mx::broadcast_to(mx::reshape(logits, {1, 4}, d), {1 << 18, 4}, d);
    auto gm = rnd::categorical(rows, -1, rnd::key(202), d);
    CHECK(gm.shape() == mx::Shape{1 << 18});
    check_freq(to_doubles(gm), "gumbel max");
    // The logits along axis 0, with a sample shape.
    auto cols = mx::broadcast_to(mx::reshape(logits, {4, 1}, d), {4, 512}, d);
    auto gs = rnd::categorical(cols, 0, mx::Shape{256, 512}, rnd::key(203), d);
    CHECK(gs.shape() == mx::Shape{256, 512});
    check_freq(to_doubles(gs), "gumbel max, axis 0");
    if (d == kGpu) {
      auto routes = mx::vulkan::fallback_counts();
      CHECK_MESSAGE(routes.empty(), "a primitive took the CPU route: " << routes.begin()->first);
    }
  }
}

TEST_CASE("categorical over a vocabulary-sized row samples on the GPU what the CPU samples") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  const int vocab = 151936;
  auto logits = mx::multiply(rnd::normal({1, vocab}, rnd::key(300), kCpu), mx::array(3.0f), kCpu);
  logits.eval();
  auto lg = on_device(logits, kGpu);
  for (uint64_t k = 0; k < 4; ++k) {
    // [1, V] logits and a sample shape: the inverse CDF. The indices agree unless a
    // uniform lands within the f32 cumsum's rounding of a category boundary (probability
    // ~1e-6 per draw); these keys do not.
    auto want = to_vector<uint32_t>(rnd::categorical(logits, -1, 4, rnd::key(310 + k), kCpu));
    auto got = to_vector<uint32_t>(rnd::categorical(lg, -1, 4, rnd::key(310 + k), kGpu));
    CHECK(got == want);
    // A 1-d row without a shape: the Gumbel-max trick.
    auto wg = to_vector<uint32_t>(
        rnd::categorical(mx::reshape(logits, {vocab}, kCpu), -1, rnd::key(320 + k), kCpu));
    auto gg = to_vector<uint32_t>(
        rnd::categorical(mx::reshape(lg, {vocab}, kGpu), -1, rnd::key(320 + k), kGpu));
    CHECK(gg == wg);
  }
  auto routes = mx::vulkan::fallback_counts();
  CHECK_MESSAGE(routes.empty(), "a primitive took the CPU route: " << routes.begin()->first);
}

TEST_CASE("arange on the GPU is the CPU's arange bit for bit for every dtype") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  struct Range {
    double start, stop, step;
  };
  // Integral and fractional steps, negative steps, odd lengths (partial last words for 8-
  // and 16-bit dtypes), a > 2^16-element range, values past an 8-bit type's range (they
  // wrap, as on the CPU) and negative values for unsigned types (saturated casts).
  const std::vector<Range> ranges = {{0, 1, 1},        {0, 7, 1},        {3, 12, 2},
                                     {10, -3, -1},     {0.5, 9, 1.5},    {0, 1000, 0.1},
                                     {-1, 1, 0.1},     {-3, 7, 1.0 / 3}, {250, 300, 1},
                                     {-5, 5, 1},       {0, 70001, 1},    {1e6, 1e6 + 1, 1e-3},
                                     {100, -100, -0.7}};
  const std::vector<mx::Dtype> dtypes = {mx::uint8,   mx::uint16,   mx::uint32, mx::uint64,
                                         mx::int8,    mx::int16,    mx::int32,  mx::int64,
                                         mx::float16, mx::bfloat16, mx::float32};
  for (auto dt : dtypes) {
    for (const auto& r : ranges) {
      std::string what = "arange(" + std::to_string(r.start) + ", " + std::to_string(r.stop) +
                         ", " + std::to_string(r.step) + ") " + mx::dtype_to_string(dt);
      auto want = mx::arange(r.start, r.stop, r.step, dt, kCpu);
      auto got = gpu_eval_checked(
          [&] { return std::vector<mx::array>{mx::arange(r.start, r.stop, r.step, dt, kGpu)}; },
          what)[0];
      REQUIRE(got.shape() == want.shape());
      CHECK_MESSAGE(bytes_of(got) == bytes_of(want), what);
    }
  }
  // A range past 2^22 elements uses every piece of the index split.
  auto big_want = mx::arange(-7.25, 4.2e5, 0.1, mx::float32, kCpu);
  auto big = mx::arange(-7.25, 4.2e5, 0.1, mx::float32, kGpu);
  REQUIRE(big.size() > (size_t{1} << 22));
  CHECK(bytes_of(big) == bytes_of(big_want));
  check_no_route("Arange");
}

TEST_CASE("random bits and arange wider than one storage binding are written in windows") {
  if (!gpu_present())
    return;
  size_t range = std::get<size_t>(mx::gpu::device_info(0).at("max_storage_buffer_range"));
  if (range > (size_t(1) << 28)) {
    MESSAGE("maxStorageBufferRange is " << range << " bytes: windows not exercised here");
    return;
  }
  mx::vulkan::reset_fallback_counts();
  // Past one binding by an odd number of bytes: two windows of the word mode, the second
  // ending in a partial word.
  int bytes = static_cast<int>(range + 13);
  auto key = rnd::key(77);
  auto want = rnd::bits({bytes}, 1, key, kCpu);
  auto got = gpu_eval_checked(
      [&] { return std::vector<mx::array>{rnd::bits({bytes}, 1, key, kGpu)}; }, "wide bits")[0];
  CHECK(mx::array_equal(got, want, kCpu).item<bool>());
  // uint32 draws past one binding: whole-word blocks, windows by word index (mode 2).
  int words = static_cast<int>(range / 4 + 7);
  auto wwant = rnd::bits({words}, 4, key, kCpu);
  auto wgot = gpu_eval_checked(
      [&] { return std::vector<mx::array>{rnd::bits({words}, 4, key, kGpu)}; }, "wide words")[0];
  CHECK(mx::array_equal(wgot, wwant, kCpu).item<bool>());
  // float32 arange over more words than one binding holds.
  int n = static_cast<int>(range / 4 + 7);
  auto awant = mx::arange(-3.0, -3.0 + 0.01 * n, 0.01, mx::float32, kCpu);
  auto agot = gpu_eval_checked(
      [&] {
        return std::vector<mx::array>{mx::arange(-3.0, -3.0 + 0.01 * n, 0.01, mx::float32, kGpu)};
      },
      "wide arange")[0];
  REQUIRE(agot.size() > range / 4);
  CHECK(mx::array_equal(agot, awant, kCpu).item<bool>());
  check_no_route("RandomBits");
  check_no_route("Arange");
}

TEST_CASE("random bits of more than 2 GiB stay on the GPU and follow MLX's layout") {
  if (!gpu_present())
    return;
  // 2.25 GiB of uint32 draws from one key, where the device can hold them twice over.
  const int64_t n = (int64_t{9} << 30) / 16;
  auto info = mx::gpu::device_info(0);
  if (std::get<size_t>(info.at("memory_size")) < (size_t{8} << 30)) {
    MESSAGE("device memory below 8 GiB: the 2.25 GiB draw is not run here");
    return;
  }
  mx::vulkan::reset_fallback_counts();
  auto key = rnd::key(2024);
  auto kw = words_of(key);
  auto bits = rnd::bits({static_cast<int>(n)}, 4, key, kGpu);
  // Word j of one key's block of W words (docs/random.md): j < H is the first word of the
  // hash of (j, j + H + odd), the words after the middle the second word of (j - H - odd, j).
  const uint64_t h = n / 2, odd = n % 2, shift = h + odd;
  std::vector<int32_t> at;
  for (int64_t j : {int64_t{0}, int64_t{1}, n / 2 - 1, n / 2, n / 2 + 1, n - 2, n - 1}) {
    at.push_back(static_cast<int32_t>(j));
  }
  for (int64_t j = 12345; j < n; j += n / 997) {
    at.push_back(static_cast<int32_t>(j));
  }
  auto idx = mx::array(at.data(), {static_cast<int>(at.size())}, mx::int32);
  auto got = words_of(mx::take(bits, idx, 0, kGpu));
  int wrong = 0;
  for (size_t i = 0; i < at.size(); ++i) {
    uint64_t j = static_cast<uint64_t>(at[i]);
    auto hash = [&](uint64_t c0, uint64_t c1) {
      return mlx::core::random_detail::threefry2x32_20(
          static_cast<uint32_t>(kw[0]), static_cast<uint32_t>(kw[1]), static_cast<uint32_t>(c0),
          static_cast<uint32_t>(c1));
    };
    uint32_t want = j < h       ? hash(j, j + shift).first
                    : j < shift ? hash(h, 0).first
                                : hash(j - shift, j).second;
    wrong += got[i] != want;
  }
  CHECK_MESSAGE(wrong == 0, wrong << " of " << at.size() << " sampled words differ");
  check_no_route("RandomBits");
}

TEST_CASE("linspace, eye, identity, tri, tril and triu on the GPU match the CPU") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  // linspace divides on the device: f32 outputs within one division's rounding (exact on
  // lavapipe), other dtypes within one rounding of the dtype; integers exact.
  struct Lin {
    double start, stop;
    int num;
    bool endpoint;
    mx::Dtype dt;
  };
  for (const auto& l : std::vector<Lin>{{0, 1, 5, true, mx::float32},
                                        {-3, 7, 101, false, mx::float32},
                                        {2, -2, 1000, true, mx::float16},
                                        {0, 1, 1, true, mx::bfloat16},
                                        {0, 10, 0, true, mx::float32},
                                        {-10, 10, 21, true, mx::int32}}) {
    std::string what = "linspace(" + std::to_string(l.start) + ", " + std::to_string(l.stop) +
                       ", " + std::to_string(l.num) + ")";
    auto want = mx::linspace(l.start, l.stop, l.num, l.endpoint, l.dt, kCpu);
    auto got = gpu_eval_checked(
        [&] {
          return std::vector<mx::array>{
              mx::linspace(l.start, l.stop, l.num, l.endpoint, l.dt, kGpu)};
        },
        what)[0];
    CHECK(all_close(got, want, default_tolerance(l.dt), what));
  }
  // eye, identity and tri are exact (zeros, ones, slice updates, comparisons).
  for (auto [n, m, k] : std::vector<std::tuple<int, int, int>>{
           {3, 3, 0}, {4, 7, 2}, {7, 4, -3}, {5, 5, 9}, {5, 5, -9}, {1, 1, 0}, {0, 3, 0}}) {
    std::string what =
        "eye/tri(" + std::to_string(n) + ", " + std::to_string(m) + ", " + std::to_string(k) + ")";
    for (auto dt : {mx::float32, mx::int32, mx::bfloat16}) {
      CHECK_MESSAGE(bytes_of(mx::eye(n, m, k, dt, kGpu)) == bytes_of(mx::eye(n, m, k, dt, kCpu)),
                    what);
      CHECK_MESSAGE(bytes_of(mx::tri(n, m, k, dt, kGpu)) == bytes_of(mx::tri(n, m, k, dt, kCpu)),
                    what);
    }
  }
  CHECK(bytes_of(mx::identity(9, mx::float16, kGpu)) ==
        bytes_of(mx::identity(9, mx::float16, kCpu)));
  // tril/triu of batched, transposed and sliced inputs.
  mlx_test::Rng rng(77);
  auto base = mlx_test::random_array({3, 6, 5}, mx::float32, rng);
  std::vector<std::pair<mx::array, std::string>> inputs = {
      {base, "contiguous"},
      {mx::swapaxes(base, 1, 2, kCpu), "transposed"},
      {mx::slice(base, {0, 0, 0}, {3, 6, 5}, {1, 2, 1}, kCpu), "strided"}};
  for (const auto& [x, name] : inputs) {
    auto xg = on_device(x, kGpu);
    for (int k : {-2, 0, 1, 4}) {
      std::string what = name + " k=" + std::to_string(k);
      auto lo = gpu_eval_checked([&] { return std::vector<mx::array>{mx::tril(xg, k, kGpu)}; },
                                 "tril " + what)[0];
      auto up = gpu_eval_checked([&] { return std::vector<mx::array>{mx::triu(xg, k, kGpu)}; },
                                 "triu " + what)[0];
      CHECK_MESSAGE(bytes_of(lo) == bytes_of(mx::tril(x, k, kCpu)), "tril " << what);
      CHECK_MESSAGE(bytes_of(up) == bytes_of(mx::triu(x, k, kCpu)), "triu " << what);
    }
  }
  auto routes = mx::vulkan::fallback_counts();
  CHECK_MESSAGE(routes.empty(), "a primitive took the CPU route: " << routes.begin()->first);
}

namespace {

// Every GPU draw within bound(CPU draw) of the CPU's (NaN and inf must match); reports the
// first that is not.
bool within(const mx::array& got, const mx::array& want, const std::function<double(double)>& bound,
            const std::string& what) {
  REQUIRE_MESSAGE(got.shape() == want.shape(), what);
  REQUIRE_MESSAGE(got.dtype() == want.dtype(), what);
  auto g = to_doubles(got), w = to_doubles(want);
  for (size_t i = 0; i < g.size(); ++i) {
    if (!mlx_test::close(g[i], w[i], 0, bound(w[i]))) {
      FAIL_CHECK(what << ": draw " << i << " GPU " << g[i] << " CPU " << w[i] << " (bound "
                      << bound(w[i]) << ")");
      return false;
    }
  }
  return true;
}

}  // namespace

// Tolerances of the float draws below (measured on lavapipe over 2^18 draws and 4 keys: at
// most 2.2 of the units below; the bounds allow 8).
// - normal and truncated_normal are sqrt(2) * erfinv(u) (times scale, plus loc): erfinv's
//   polynomial and, for truncated_normal, erf of the bounds (which set u's range) may differ
//   in their last bits between devices. An error of a few float32 ulps in u becomes that many
//   times the map's slope, sqrt(pi / 2) exp(z^2 / 2) scale at z = (x - loc) / scale (113x at
//   z = 3), so the unit is 2^-24 (slope + |x|), bounded by 8 units.
// - gumbel is -log(-log(u)): Vulkan allows log an absolute error of 2^-21 on [0.5, 2] (8 ulps
//   of 1) and 3 ulps elsewhere, so 8 * 2^-24 (1 + |x|).
// - 16-bit outputs round the float32 result once: default_tolerance (one rounding of the
//   dtype), which holds as long as the bounds' erf, rounded to the dtype, agree (they do for
//   these bounds: a flip would move every draw).
TEST_CASE("truncated_normal, gumbel and 16-bit normals draw on the GPU what the CPU draws") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  const int n = 1 << 16;
  const double unit = 0x1.0p-24;
  auto erfinv_bound = [&](double loc, double scale) {
    return [=](double x) {
      double z = (x - loc) / scale;
      return 8 * unit * (std::sqrt(kPi / 2) * std::exp(z * z / 2) * scale + std::abs(x));
    };
  };
  for (uint64_t k : {400, 401}) {
    auto key = rnd::key(k);
    std::string seed = " key " + std::to_string(k);
    // Scalar bounds, and per-column bounds out to 3 standard deviations.
    auto t = [&](mx::Dtype dt, mx::Device d) {
      return rnd::truncated_normal(mx::array(-1.0f), mx::array(2.0f), {n}, dt, key, d);
    };
    auto tc = [&](mx::Dtype dt, mx::Device d) {
      return rnd::truncated_normal(mx::array({-3.0f, -0.5f, 0.0f}), mx::array({3.0f, 0.5f, 2.0f}),
                                   {n / 4, 3}, dt, key, d);
    };
    CHECK(within(t(mx::float32, kGpu), t(mx::float32, kCpu), erfinv_bound(0, 1),
                 "truncated_normal f32" + seed));
    CHECK(within(tc(mx::float32, kGpu), tc(mx::float32, kCpu), erfinv_bound(0, 1),
                 "truncated_normal f32 column bounds" + seed));
    CHECK(all_close(tc(mx::bfloat16, kGpu), tc(mx::bfloat16, kCpu), default_tolerance(mx::bfloat16),
                    "truncated_normal bf16" + seed));
    auto g = [&](mx::Dtype dt, mx::Device d) { return rnd::gumbel({n}, dt, key, d); };
    CHECK(within(
        g(mx::float32, kGpu), g(mx::float32, kCpu),
        [&](double x) { return 8 * unit * (1 + std::abs(x)); }, "gumbel f32" + seed));
    CHECK(all_close(g(mx::float16, kGpu), g(mx::float16, kCpu), default_tolerance(mx::float16),
                    "gumbel f16" + seed));
    // normal(loc 0.5, scale 3) in 16-bit floats, and float32 over 2^16 draws.
    for (auto dt : {mx::float16, mx::bfloat16, mx::float32}) {
      auto z = [&](mx::Device d) { return rnd::normal({n}, dt, 0.5f, 3.0f, key, d); };
      std::string what = "normal " + mx::dtype_to_string(dt) + seed;
      if (dt == mx::float32) {
        CHECK(within(z(kGpu), z(kCpu), erfinv_bound(0.5, 3), what));
      } else {
        CHECK(all_close(z(kGpu), z(kCpu), default_tolerance(dt), what));
      }
    }
  }
  auto routes = mx::vulkan::fallback_counts();
  CHECK_MESSAGE(routes.empty(), "a primitive took the CPU route: " << routes.begin()->first);
}

// randint floors the same float32 uniform on both devices and categorical takes the argmax of
// logits + gumbel: equal unless a draw lands within a float32 rounding of an integer (randint)
// or two perturbed logits within the gumbel tolerance of each other (probability ~1e-6 per
// draw); these keys have none, so the draws compare exactly.
TEST_CASE("randint in 8- and 64-bit dtypes and multi-row categorical draw on the GPU exactly") {
  if (!gpu_present())
    return;
  mx::vulkan::reset_fallback_counts();
  struct Ints {
    mx::Dtype dt;
    mx::array lo, hi;
  };
  // int64 bounds past 2^31 (exact in float32: multiples of 2^9 near 3e9).
  std::vector<Ints> cases = {{mx::int8, mx::array(-100), mx::array(100)},
                             {mx::uint8, mx::array(0), mx::array(250)},
                             {mx::int64, mx::array(int64_t{-3000000000}, mx::int64),
                              mx::array(int64_t{3000000512}, mx::int64)},
                             {mx::int64, mx::array(-7), mx::array(9)}};
  for (uint64_t k : {410, 411}) {
    for (const auto& c : cases) {
      std::string what = "randint " + mx::dtype_to_string(c.dt) + " key " + std::to_string(k);
      auto want = rnd::randint(c.lo, c.hi, {4099}, c.dt, rnd::key(k), kCpu);
      auto got = gpu_eval_checked(
          [&] {
            return std::vector<mx::array>{
                rnd::randint(c.lo, c.hi, {4099}, c.dt, rnd::key(k), kGpu)};
          },
          what)[0];
      REQUIRE(got.dtype() == c.dt);
      CHECK_MESSAGE(bytes_of(got) == bytes_of(want), what);
    }
  }
  // Rows of logits along either axis, several samples per row (the Gumbel-max trick).
  auto logits = mx::multiply(rnd::normal({8, 1000}, rnd::key(420), kCpu), mx::array(3.0f), kCpu);
  auto cols = mx::multiply(rnd::normal({300, 6}, rnd::key(421), kCpu), mx::array(2.0f), kCpu);
  mx::eval({logits, cols});
  auto lg = on_device(logits, kGpu), cg = on_device(cols, kGpu);
  for (uint64_t k : {430, 431}) {
    std::string seed = " key " + std::to_string(k);
    auto want = rnd::categorical(logits, -1, 5, rnd::key(k), kCpu);
    auto got = rnd::categorical(lg, -1, 5, rnd::key(k), kGpu);
    REQUIRE(got.shape() == mx::Shape{8, 5});
    CHECK_MESSAGE(words_of(got) == words_of(want), "categorical rows" << seed);
    auto want0 = rnd::categorical(cols, 0, 4, rnd::key(k), kCpu);
    auto got0 = rnd::categorical(cg, 0, 4, rnd::key(k), kGpu);
    REQUIRE(got0.shape() == mx::Shape{6, 4});
    CHECK_MESSAGE(words_of(got0) == words_of(want0), "categorical along axis 0" << seed);
  }
  auto routes = mx::vulkan::fallback_counts();
  CHECK_MESSAGE(routes.empty(), "a primitive took the CPU route: " << routes.begin()->first);
}
