// mlx::core::fast: rms_norm, layer_norm and rope against plain double-precision loops, on
// the CPU and (when present) the GPU device, and MLX's argument errors.
#include <doctest/doctest.h>

#include <cmath>

#include "mlx/mlx.h"
#include "test_utils.h"

namespace mx = mlx::core;
using mlx_test::to_doubles;

namespace {

// Deterministic values in [-2, 2).
std::vector<float> values(size_t n, int seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>(
        ((i * 2654435761u + static_cast<size_t>(seed) * 97u) % 4001) / 1000.0 - 2.0);
  }
  return v;
}

mx::array make(const std::vector<float>& v, mx::Shape shape) {
  return mx::array(v.data(), std::move(shape), mx::float32);
}

}  // namespace

TEST_CASE("rms_norm and layer_norm equal the formula in double") {
  const int rows = 3, n = 37;
  auto xv = values(rows * n, 1), wv = values(n, 2), bv = values(n, 3);
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == mx::Device::cpu ? "cpu" : "gpu");
    auto x = make(xv, {rows, n});
    auto rms = to_doubles(mx::fast::rms_norm(x, make(wv, {n}), 1e-5f, d));
    auto rms_nw = to_doubles(mx::fast::rms_norm(x, std::nullopt, 1e-5f, d));
    auto ln = to_doubles(mx::fast::layer_norm(x, make(wv, {n}), make(bv, {n}), 1e-5f, d));
    auto ln_nb = to_doubles(mx::fast::layer_norm(x, make(wv, {n}), std::nullopt, 1e-5f, d));
    for (int r = 0; r < rows; ++r) {
      double ss = 0, mu = 0;
      for (int j = 0; j < n; ++j) {
        ss += double(xv[r * n + j]) * xv[r * n + j];
        mu += xv[r * n + j];
      }
      mu /= n;
      double var = 0;
      for (int j = 0; j < n; ++j) {
        var += (xv[r * n + j] - mu) * (xv[r * n + j] - mu);
      }
      double inv_rms = 1 / std::sqrt(ss / n + 1e-5), inv_ln = 1 / std::sqrt(var / n + 1e-5);
      for (int j = 0; j < n; ++j) {
        size_t i = r * n + j;
        // float32 math on the devices: a few roundings of values of order 1.
        CHECK(rms[i] == doctest::Approx(xv[i] * inv_rms * wv[j]).epsilon(1e-5));
        CHECK(rms_nw[i] == doctest::Approx(xv[i] * inv_rms).epsilon(1e-5));
        CHECK(ln[i] == doctest::Approx((xv[i] - mu) * inv_ln * wv[j] + bv[j]).epsilon(1e-5));
        CHECK(ln_nb[i] == doctest::Approx((xv[i] - mu) * inv_ln * wv[j]).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("norm dtypes follow MLX: result_type of x and weight, floats only") {
  auto x = mx::ones({2, 4}, mx::float16);
  CHECK(mx::fast::rms_norm(x, mx::ones({4}, mx::float32), 1e-5f).dtype() == mx::float32);
  CHECK(mx::fast::rms_norm(x, std::nullopt, 1e-5f).dtype() == mx::float16);
  CHECK(mx::fast::layer_norm(x, mx::ones({4}, mx::bfloat16), std::nullopt, 1e-5f).dtype() ==
        mx::float32);
  CHECK_THROWS_WITH_AS(mx::fast::rms_norm(mx::ones({2, 4}, mx::int32), std::nullopt, 1e-5f),
                       doctest::Contains("[rms_norm] Received unsupported type"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::fast::rms_norm(mx::array(1.0f), std::nullopt, 1e-5f),
                       doctest::Contains("[rms_norm] Input must have at least 1 dimension"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::fast::rms_norm(x, mx::ones({5}), 1e-5f),
                       doctest::Contains("same size as the last dimension"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::fast::layer_norm(x, std::nullopt, mx::ones({2, 4}), 1e-5f),
                       doctest::Contains("[layer_norm] bias must have 1 dimension"),
                       std::invalid_argument);
}

TEST_CASE("rope equals the rotation formula in double, halves and traditional") {
  const int B = 2, H = 2, T = 5, D = 12, dims = 8;
  auto xv = values(B * H * T * D, 4);
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == mx::Device::cpu ? "cpu" : "gpu");
    for (bool traditional : {false, true}) {
      for (bool per_batch : {false, true}) {
        CAPTURE(traditional);
        CAPTURE(per_batch);
        auto x = make(xv, {B, H, T, D});
        mx::array offset = per_batch ? mx::array({3, 17}) : mx::array(7);
        auto y = to_doubles(
            mx::fast::rope(x, dims, traditional, 10000.0f, 0.5f, offset, std::nullopt, d));
        for (int b = 0; b < B; ++b) {
          int off = per_batch ? (b == 0 ? 3 : 17) : 7;
          for (int h = 0; h < H; ++h) {
            for (int t = 0; t < T; ++t) {
              size_t row = ((size_t(b) * H + h) * T + t) * D;
              for (int k = 0; k < dims / 2; ++k) {
                double theta = (off + t) * 0.5 * std::pow(10000.0, -double(k) / (dims / 2));
                int i1 = traditional ? 2 * k : k, i2 = traditional ? 2 * k + 1 : k + dims / 2;
                double x1 = xv[row + i1], x2 = xv[row + i2];
                CHECK(y[row + i1] ==
                      doctest::Approx(x1 * std::cos(theta) - x2 * std::sin(theta)).epsilon(1e-5));
                CHECK(y[row + i2] ==
                      doctest::Approx(x1 * std::sin(theta) + x2 * std::cos(theta)).epsilon(1e-5));
              }
              for (int j = dims; j < D; ++j) {
                CHECK(y[row + j] == xv[row + j]);  // passed through
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("rope with freqs, an int offset, 3-d input, and an array offset that changes") {
  auto xv = values(4 * 6 * 4, 5);
  for (auto d : mlx_test::test_devices()) {
    auto x = make(xv, {4, 6, 4});  // [B, T, D]: 3-d input, one head
    auto freqs = mx::array({2.0f, 50.0f});
    auto y = to_doubles(mx::fast::rope(x, 4, false, std::nullopt, 1.0f, 2, freqs, d));
    for (int b = 0; b < 4; ++b) {
      for (int t = 0; t < 6; ++t) {
        size_t row = (size_t(b) * 6 + t) * 4;
        for (int k = 0; k < 2; ++k) {
          double theta = (2 + t) / (k == 0 ? 2.0 : 50.0);
          double x1 = xv[row + k], x2 = xv[row + k + 2];
          CHECK(y[row + k] ==
                doctest::Approx(x1 * std::cos(theta) - x2 * std::sin(theta)).epsilon(1e-5));
        }
      }
    }
    // A decode loop: the same graph with a new offset value gives the new rotation.
    auto a = mx::fast::rope(x, 4, false, 10000.0f, 1.0f, mx::array(5), std::nullopt, d);
    auto b = mx::fast::rope(x, 4, false, 10000.0f, 1.0f, 5, std::nullopt, d);
    CHECK(mx::array_equal(a, b, false, mx::Device::cpu).item<bool>());
  }
}

TEST_CASE("rope argument errors are MLX's") {
  auto x = mx::ones({1, 2, 3, 8});
  auto err = [](auto f, const char* msg) {
    CHECK_THROWS_WITH_AS(f(), doctest::Contains(msg), std::invalid_argument);
  };
  err(
      [&] {
        return mx::fast::rope(mx::ones({2, 8}), 8, false, 1e4f, 1.0f, 0);
      },
      "[rope] Input must have at least 3 dimensions");
  err(
      [&] {
        return mx::fast::rope(mx::ones({1, 2, 8}, mx::int32), 8, false, 1e4f, 1.0f, 0);
      },
      "[rope] Input must be a floating type");
  err([&] { return mx::fast::rope(x, 7, false, 1e4f, 1.0f, 0); }, "[rope] dims must be even");
  err([&] { return mx::fast::rope(x, 0, false, 1e4f, 1.0f, 0); }, "[rope] dims must be positive");
  err([&] { return mx::fast::rope(x, 10, false, 1e4f, 1.0f, 0); },
      "[rope] dims must not exceed the input's last dimension");
  err([&] { return mx::fast::rope(x, 8, false, 1e4f, 1.0f, 0, mx::ones({4})); },
      "[rope] Only one of base or freqs can have a value");
  err([&] { return mx::fast::rope(x, 8, false, std::nullopt, 1.0f, 0); },
      "[rope] Neither base nor freqs has a value");
  err([&] { return mx::fast::rope(x, 8, false, std::nullopt, 1.0f, 0, mx::ones({3})); },
      "[rope] freqs must be one dimensional with size 4");
  err([&] { return mx::fast::rope(x, 8, false, 1e4f, 1.0f, mx::array(1.5f)); },
      "[rope] offset must be an integer");
  err(
      [&] {
        return mx::fast::rope(x, 8, false, 1e4f, 1.0f, mx::array({1, 2, 3}));
      },
      "[rope] offset must be a scalar or vector with 1 elements");
}
