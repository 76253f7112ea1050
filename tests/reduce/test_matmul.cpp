// matmul against a double reference: 1-d operands, batches with broadcasting, M/N/K = 1,
// odd sizes, K = 0, strided operands, every float dtype; dtype rules and errors.
#include <doctest/doctest.h>

#include <cmath>

#include "reduce_test_utils.h"

using namespace reduce_test;
using mlx_test::random_array;
using mlx_test::Rng;
using mlx_test::to_doubles;

namespace {

// Reference C = A @ B with NumPy's rules, plus sum_k |a_ik b_kj| per element (the scale of
// an inner product's rounding error). Operands are given as row-major doubles.
struct RefMatmul {
  mx::Shape shape;
  std::vector<double> value;
  std::vector<double> scale;
};

RefMatmul ref_matmul(const std::vector<double>& a, mx::Shape as, const std::vector<double>& b,
                     mx::Shape bs) {
  bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec)
    as.insert(as.begin(), 1);
  if (b_vec)
    bs.push_back(1);
  int M = as[as.size() - 2], K = as.back(), N = bs.back();
  mx::Shape abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2);
  auto batch = mx::broadcast_shapes(abatch, bbatch);
  size_t nb = shape_size(batch);
  // Flat batch offset of operand `s` for output batch index `bi` (broadcast dims repeat).
  auto batch_offset = [&](const mx::Shape& s, size_t bi) {
    size_t off = 0, stride = 1, rem = bi;
    int diff = static_cast<int>(batch.size() - s.size());
    for (int d = static_cast<int>(batch.size()) - 1; d >= 0; --d) {
      size_t idx = rem % batch[d];
      rem /= batch[d];
      int sd = d - diff;
      if (sd >= 0) {
        off += (s[sd] == 1 ? 0 : idx) * stride;
        stride *= s[sd];
      }
    }
    return off;
  };
  RefMatmul r;
  r.shape = batch;
  if (!a_vec)
    r.shape.push_back(M);
  if (!b_vec)
    r.shape.push_back(N);
  for (size_t bi = 0; bi < nb; ++bi) {
    const double* A = a.data() + batch_offset(abatch, bi) * M * K;
    const double* B = b.data() + batch_offset(bbatch, bi) * K * N;
    for (int i = 0; i < M; ++i) {
      for (int j = 0; j < N; ++j) {
        double s = 0, sa = 0;
        for (int k = 0; k < K; ++k) {
          s += A[i * K + k] * B[k * N + j];
          sa += std::abs(A[i * K + k] * B[k * N + j]);
        }
        r.value.push_back(s);
        r.scale.push_back(sa);
      }
    }
  }
  return r;
}

// Error bound of an inner product of length K accumulated in precision u_acc and stored
// with precision u_out (Higham's gamma_K bound): (K * u_acc + u_out) * sum |a b|.
double bound_factor(mx::Dtype dt, int K) {
  double u_acc = dt == mx::float64 ? 0x1.0p-53 : 0x1.0p-24;  // halves accumulate in float32
  double u_out = dt == mx::float16    ? 0x1.0p-11
                 : dt == mx::bfloat16 ? 0x1.0p-8
                 : dt == mx::float32  ? 0x1.0p-24
                                      : 0x1.0p-53;
  return (K + 1) * u_acc + u_out;
}

void check_matmul(const mx::array& a, const mx::array& b, const std::string& lbl) {
  auto out = mx::matmul(a, b);
  auto ref = ref_matmul(to_doubles(a), a.shape(), to_doubles(b), b.shape());
  CHECK_MESSAGE(out.shape() == ref.shape, lbl << ": shape " << mx::shape_to_string(out.shape()));
  CHECK_MESSAGE(out.dtype() == mx::promote_types(a.dtype(), b.dtype()), lbl);
  auto got = to_doubles(out);
  REQUIRE_MESSAGE(got.size() == ref.value.size(), lbl);
  int K = a.shape(-1);
  double f = bound_factor(out.dtype(), K);
  for (size_t i = 0; i < got.size(); ++i) {
    double tol = f * ref.scale[i] + 1e-300;
    if (!(std::abs(got[i] - ref.value[i]) <= tol)) {
      FAIL_CHECK(lbl << ": element " << i << " is " << got[i] << ", expected " << ref.value[i]
                     << " (tol " << tol << ")");
      return;
    }
  }
}

}  // namespace

TEST_CASE("matmul matches a double reference over shapes, batches and float dtypes") {
  Rng rng(51);
  const std::vector<std::pair<mx::Shape, mx::Shape>> cases = {{{1, 1}, {1, 1}},
                                                              {{3, 5}, {5, 7}},
                                                              {{17, 33}, {33, 9}},
                                                              {{1, 8}, {8, 1}},
                                                              {{6, 1}, {1, 4}},
                                                              {{5}, {5}},
                                                              {{5}, {5, 3}},
                                                              {{4, 5}, {5}},
                                                              {{2, 3, 4, 5}, {5, 6}},
                                                              {{4, 5}, {2, 5, 3}},
                                                              {{2, 1, 4, 5}, {3, 5, 6}},
                                                              {{7}, {2, 7, 3}},
                                                              {{2, 3, 7}, {7}},
                                                              {{2, 4, 3}, {2, 3, 2}},
                                                              {{0, 3}, {3, 4}},
                                                              {{3, 0}, {0, 4}},
                                                              {{2, 0, 3}, {3, 5}},
                                                              {{65, 40}, {40, 3}}};
  for (auto dt : {mx::float16, mx::bfloat16, mx::float32, mx::float64}) {
    for (auto& [as, bs] : cases) {
      auto a = random_array(as, dt, rng, -2, 2);
      auto b = random_array(bs, dt, rng, -2, 2);
      check_matmul(a, b,
                   "matmul " + mx::dtype_to_string(dt) + " " + mx::shape_to_string(as) + " x " +
                       mx::shape_to_string(bs));
    }
  }
}

TEST_CASE("matmul of K = 0 is all zeros") {
  auto out = mx::matmul(mx::zeros({3, 0}), mx::zeros({0, 4}));
  CHECK(out.shape() == mx::Shape{3, 4});
  for (double v : to_doubles(out))
    CHECK(v == 0.0);
}

TEST_CASE("matmul by hand: 2x2, vector-vector dot and vector-matrix") {
  mx::array a({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2});
  mx::array b({5.0f, 6.0f, 7.0f, 8.0f}, {2, 2});
  CHECK(to_doubles(mx::matmul(a, b)) == std::vector<double>{19, 22, 43, 50});
  auto dot = mx::matmul(mx::array({1.0f, 2.0f, 3.0f}), mx::array({4.0f, 5.0f, 6.0f}));
  CHECK(dot.ndim() == 0);
  CHECK(dot.item<float>() == 32.0f);
  CHECK(to_doubles(mx::matmul(mx::array({1.0f, 1.0f}), a)) == std::vector<double>{4, 6});
  CHECK(to_doubles(mx::matmul(a, mx::array({1.0f, 1.0f}))) == std::vector<double>{3, 7});
}

TEST_CASE("matmul reads transposed and broadcast operands through their strides") {
  Rng rng(61);
  for (auto dt : {mx::float32, mx::float16}) {
    auto a = random_array({6, 5}, dt, rng, -2, 2);
    auto b = random_array({7, 6}, dt, rng, -2, 2);
    // (5,6) x (6,7): both operands are transposed views.
    check_matmul(mx::transpose(a), mx::transpose(b),
                 "matmul transposed " + mx::dtype_to_string(dt));
    auto v = random_array({6}, dt, rng, -2, 2);
    check_matmul(mx::broadcast_to(v, {3, 6}), mx::transpose(b),
                 "matmul broadcast rows " + mx::dtype_to_string(dt));
    auto x = random_array({2, 4, 6}, dt, rng, -2, 2);
    check_matmul(mx::transpose(x, {0, 2, 1}), random_array({2, 4, 3}, dt, rng, -2, 2),
                 "matmul batched transposed " + mx::dtype_to_string(dt));
  }
}

TEST_CASE("matmul promotes mixed float dtypes and integer-float pairs") {
  auto h = mx::ones({2, 3}, mx::float16);
  auto f = mx::ones({3, 2}, mx::float32);
  CHECK(mx::matmul(h, f).dtype() == mx::float32);
  auto i = mx::ones({2, 3}, mx::int32);
  auto r = mx::matmul(i, f);
  CHECK(r.dtype() == mx::float32);
  CHECK(to_doubles(r) == std::vector<double>{3, 3, 3, 3});
}

TEST_CASE("matmul rejects integer operands, 0-d operands and mismatched shapes") {
  auto i = mx::ones({2, 2}, mx::int32);
  CHECK_THROWS_WITH_AS(mx::matmul(i, i), doctest::Contains("[matmul]"), std::invalid_argument);
  CHECK_THROWS_AS(mx::matmul(mx::ones({2, 2}, mx::bool_), mx::ones({2, 2}, mx::bool_)),
                  std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::matmul(mx::array(1.0f), mx::ones({2})), doctest::Contains("[matmul]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::matmul(mx::ones({2, 3}), mx::ones({2, 3})),
                       doctest::Contains("[matmul]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::matmul(mx::ones({3}), mx::ones({4})), doctest::Contains("[matmul]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::matmul(mx::ones({2, 2, 3}), mx::ones({3, 3, 4})),
                       doctest::Contains("[matmul]"), std::invalid_argument);
  CHECK_THROWS_AS(mx::matmul(mx::ones({2, 2}, mx::complex64), mx::ones({2, 2}, mx::complex64)),
                  std::invalid_argument);
}
