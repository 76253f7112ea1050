// sort, argsort, partition, argpartition and topk: MLX's semantics on every test device
// (ascending, stable, NaN last, -0.0 equal to 0.0), the partition property, and MLX's
// argument errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "mlx/mlx.h"
#include "test_utils.h"

namespace mx = mlx::core;
using mlx_test::to_doubles;

namespace {

std::vector<uint32_t> to_u32(const mx::array& a) {
  std::vector<uint32_t> out;
  for (double v : to_doubles(a)) {
    out.push_back(static_cast<uint32_t>(v));
  }
  return out;
}

}  // namespace

TEST_CASE("sort and argsort are ascending, stable and put NaN last") {
  float nan = std::numeric_limits<float>::quiet_NaN();
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == mx::Device::cpu ? "cpu" : "gpu");
    auto x = mx::array({3.0f, nan, -1.0f, 0.0f, -0.0f, 3.0f, nan, -2.0f});
    auto s = to_doubles(mx::sort(x, d));
    CHECK(s[0] == -2.0);
    CHECK(s[1] == -1.0);
    CHECK(s[4] == 3.0);
    CHECK(s[5] == 3.0);
    CHECK(std::isnan(s[6]));
    CHECK(std::isnan(s[7]));
    // Equal keys keep their order: 0.0 (index 3) before -0.0 (4), the first 3.0 (0) before
    // the second (5), the first NaN (1) before the second (6).
    CHECK(to_u32(mx::argsort(x, d)) == std::vector<uint32_t>{7, 2, 3, 4, 0, 5, 1, 6});
    auto m = mx::array({3, 1, 2, 1, 3, 1}, {2, 3}, mx::int32);
    CHECK(to_u32(mx::argsort(m, 0, d)) == std::vector<uint32_t>{1, 0, 1, 0, 1, 0});
    CHECK(to_u32(mx::argsort(m, 1, d)) == std::vector<uint32_t>{1, 2, 0, 0, 2, 1});
    CHECK(mx::argsort(m, 1, d).dtype() == mx::uint32);
    CHECK(to_doubles(mx::sort(m, d)) == std::vector<double>{1, 1, 1, 2, 3, 3});
  }
}

TEST_CASE("partition puts kth in place and topk returns the k largest") {
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d == mx::Device::cpu ? "cpu" : "gpu");
    auto x = mx::array({5.0f, 1.0f, 4.0f, 2.0f, 3.0f, 0.0f, 6.0f});
    for (int kth : {0, 2, -1}) {
      CAPTURE(kth);
      auto p = to_doubles(mx::partition(x, kth, d));
      size_t k = static_cast<size_t>(kth < 0 ? kth + 7 : kth);
      for (size_t i = 0; i < p.size(); ++i) {
        bool placed = i < k ? p[i] <= p[k] : p[i] >= p[k];
        CHECK(placed);
      }
      CHECK(p[k] == static_cast<double>(k));
      auto ip = to_u32(mx::argpartition(x, kth, d));
      CHECK(to_doubles(x)[ip[k]] == static_cast<double>(k));
    }
    auto t = to_doubles(mx::topk(x, 3, d));
    std::sort(t.begin(), t.end());
    CHECK(t == std::vector<double>{4, 5, 6});
    CHECK(mx::topk(x, 7, d).shape() == mx::Shape{7});
    CHECK(mx::topk(mx::reshape(x, {1, 7}), 0, -1, d).shape() == mx::Shape{1, 0});
  }
}

TEST_CASE("sort ops give MLX's errors") {
  auto x = mx::zeros({2, 3});
  CHECK_THROWS_WITH_AS(mx::sort(x, 2),
                       "[sort] axis 2 is out of bounds for array with 2 dimensions.",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      mx::partition(x, 3, 1),
      "[partition] Received invalid kth 3 along axis 1 for array with shape: (2,3)",
      std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::argpartition(x, -4, -1),
                       "[argpartition] Received invalid kth -4 along axis -1 for array with shape: "
                       "(2,3)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::topk(x, 4, 1),
                       "[topk] Received invalid k=4 along axis 1 for array with shape: (2,3)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::argsort(mx::zeros({2}, mx::complex64)),
                       "[argsort] complex64 is not supported.", std::invalid_argument);
}
