// sum, prod, max, min, all, any, mean: every dtype against double references, over 0-d,
// empty, odd and multi-axis cases; MLX's output dtypes; wrapping; NaN; strided inputs; errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "reduce_test_utils.h"

using namespace reduce_test;
using mlx_test::check_all_close;
using mlx_test::random_array;
using mlx_test::Rng;
using mlx_test::rtol_for;
using mlx_test::to_doubles;

namespace {

// MLX's sum/prod output dtype.
mx::Dtype sum_dtype(mx::Dtype dt) {
  if (dt == mx::bool_ || dt == mx::int8 || dt == mx::int16)
    return mx::int32;
  if (dt == mx::uint8 || dt == mx::uint16)
    return mx::uint32;
  return dt;
}

// Interprets a uint64 as the integer dtype dt would store it (two's-complement wrap).
double wrap_to(mx::Dtype dt, uint64_t v) {
  return mx::dispatch_dtype(dt, [&](auto tag) -> double {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      return static_cast<double>(static_cast<T>(v));
    } else {
      return static_cast<double>(v);
    }
  });
}

mx::array input_for(mx::Dtype dt, const mx::Shape& shape, Rng& rng, bool for_prod) {
  if (for_prod) {
    if (mx::is_floating_point(dt))
      return random_array(shape, dt, rng, 0.5, 1.5);
    return random_array(shape, dt, rng, mx::is_unsigned(dt) ? 0 : -2, 3);
  }
  if (mx::is_unsigned(dt))
    return random_array(shape, dt, rng, 0, 9);
  return random_array(shape, dt, rng, -8, 8);
}

using OpFn = mx::array (*)(const mx::array&, const std::vector<int>&, bool, mx::StreamOrDevice);

// Runs one reduction over every dtype, case and keepdims, checking dtype, shape and values.
// `expect_dtype` gives the output dtype; `reference` the expected values of a case.
template <typename DtypeFn, typename RefFn, typename TolFn>
void sweep(const char* name, OpFn op, DtypeFn expect_dtype, bool for_prod, bool throws_on_empty,
           RefFn reference, TolFn tolerance) {
  Rng rng(1234);
  for (auto dt : real_dtypes()) {
    for (auto& c : reduce_cases()) {
      for (bool keepdims : {false, true}) {
        auto lbl = label(name, dt, c.shape, c.axes, keepdims);
        auto x = input_for(dt, c.shape, rng, for_prod);
        auto axes = normalized(c.axes, static_cast<int>(c.shape.size()));
        auto oshape = keepdims ? keepdims_shape(c.shape, axes) : squeezed_shape(c.shape, axes);
        bool empty_groups = false;
        for (int a : axes)
          empty_groups |= c.shape[a] == 0;
        if (throws_on_empty && empty_groups && shape_size(oshape) > 0) {
          CHECK_THROWS_AS_MESSAGE(op(x, c.axes, keepdims, {}), std::invalid_argument, lbl);
          continue;
        }
        auto out = op(x, c.axes, keepdims, {});
        CHECK_MESSAGE(out.dtype() == expect_dtype(dt), lbl << ": dtype " << out.dtype());
        CHECK_MESSAGE(out.shape() == oshape, lbl << ": shape " << mx::shape_to_string(out.shape()));
        auto xs = to_doubles(x);
        auto groups = group_by_output(xs, c.shape, axes);
        auto got = to_doubles(out);
        REQUIRE_MESSAGE(got.size() == groups.size(), lbl);
        for (size_t i = 0; i < groups.size(); ++i) {
          double want = reference(dt, groups[i]);
          double tol = tolerance(expect_dtype(dt), groups[i], want);
          bool ok = std::isnan(want) ? std::isnan(got[i]) : std::abs(got[i] - want) <= tol;
          if (!ok) {
            FAIL_CHECK(lbl << ": element " << i << " is " << got[i] << ", expected " << want
                           << " (tol " << tol << ")");
            break;
          }
        }
      }
    }
  }
}

// Exact for integers; floats: a few roundings of the output dtype relative to sum(|x|),
// which bounds the error of a (compensated) sum even under cancellation.
double sum_tolerance(mx::Dtype out, const std::vector<double>& g, double) {
  return rtol_for(out) * ref_abs_sum(g);
}

double exact_or_rtol(mx::Dtype out, const std::vector<double>&, double want) {
  return rtol_for(out) * std::abs(want);
}

}  // namespace

TEST_CASE("sum matches a double reference for every dtype, axis set and keepdims") {
  sweep(
      "sum", static_cast<OpFn>(mx::sum), sum_dtype, false, false,
      [](mx::Dtype, const std::vector<double>& g) { return ref_sum(g); }, sum_tolerance);
}

TEST_CASE("prod matches a double reference with integer wrap-around for every dtype") {
  sweep(
      "prod", static_cast<OpFn>(mx::prod), sum_dtype, true, false,
      [](mx::Dtype dt, const std::vector<double>& g) {
        if (mx::is_floating_point(dt)) {
          double p = 1;
          for (double v : g)
            p *= v;
          return p;
        }
        uint64_t p = 1;
        for (double v : g)
          p *= static_cast<uint64_t>(static_cast<int64_t>(v));
        return wrap_to(sum_dtype(dt), p);
      },
      exact_or_rtol);
}

TEST_CASE("max and min match a reference for every dtype and throw on empty reductions") {
  auto same = [](mx::Dtype dt) { return dt; };
  auto zero_tol = [](mx::Dtype, const std::vector<double>&, double) { return 0.0; };
  sweep(
      "max", static_cast<OpFn>(mx::max), same, false, true,
      [](mx::Dtype, const std::vector<double>& g) { return *std::max_element(g.begin(), g.end()); },
      zero_tol);
  sweep(
      "min", static_cast<OpFn>(mx::min), same, false, true,
      [](mx::Dtype, const std::vector<double>& g) { return *std::min_element(g.begin(), g.end()); },
      zero_tol);
}

TEST_CASE("all and any output bool for every dtype, true and false on empty reductions") {
  auto to_bool = [](mx::Dtype) { return mx::bool_; };
  auto zero_tol = [](mx::Dtype, const std::vector<double>&, double) { return 0.0; };
  sweep(
      "all", static_cast<OpFn>(mx::all), to_bool, false, false,
      [](mx::Dtype, const std::vector<double>& g) {
        return std::all_of(g.begin(), g.end(), [](double v) { return v != 0; }) ? 1.0 : 0.0;
      },
      zero_tol);
  sweep(
      "any", static_cast<OpFn>(mx::any), to_bool, false, false,
      [](mx::Dtype, const std::vector<double>& g) {
        return std::any_of(g.begin(), g.end(), [](double v) { return v != 0; }) ? 1.0 : 0.0;
      },
      zero_tol);
}

TEST_CASE("mean is floating (float32 for integers) and matches a double reference") {
  sweep(
      "mean", static_cast<OpFn>(mx::mean), [](mx::Dtype dt) { return mx::at_least_float(dt); },
      false, false,
      [](mx::Dtype, const std::vector<double>& g) {
        return g.empty() ? std::numeric_limits<double>::quiet_NaN() : ref_sum(g) / g.size();
      },
      [](mx::Dtype out, const std::vector<double>& g, double) {
        // The sum's bound divided by n, plus one rounding of the scale and the product.
        return g.empty() ? 0.0 : 3 * rtol_for(out) * ref_abs_sum(g) / g.size();
      });
}

TEST_CASE("reductions without axes reduce everything; int overloads take one axis") {
  mx::array a({1, 2, 3, 4, 5, 6}, {2, 3}, mx::int32);
  CHECK(mx::sum(a).item<int>() == 21);
  CHECK(mx::sum(a).ndim() == 0);
  CHECK(mx::sum(a, true).shape() == mx::Shape{1, 1});
  CHECK(mx::prod(a).item<int>() == 720);
  CHECK(mx::max(a).item<int>() == 6);
  CHECK(mx::min(a).item<int>() == 1);
  CHECK(mx::mean(a).item<float>() == doctest::Approx(3.5));
  CHECK(mlx_test::to_vector<int>(mx::sum(a, 0)) == std::vector<int>{5, 7, 9});
  CHECK(mlx_test::to_vector<int>(mx::sum(a, -1)) == std::vector<int>{6, 15});
  CHECK(mx::sum(a, 1, true).shape() == mx::Shape{2, 1});
  CHECK(mlx_test::to_vector<bool>(mx::any(a > 4, 1)) == std::vector<bool>{false, true});
  CHECK(mlx_test::to_vector<bool>(mx::all(a > 1, 1)) == std::vector<bool>{false, true});
}

TEST_CASE("0-d inputs reduce to themselves with MLX output dtypes") {
  mx::array a(int8_t{-3});
  CHECK(mx::sum(a).dtype() == mx::int32);
  CHECK(mx::sum(a).item<int>() == -3);
  CHECK(mx::sum(a, true).ndim() == 0);
  CHECK(mx::max(a).item<int8_t>() == -3);
  CHECK(mx::all(a).item<bool>());
  CHECK(mx::mean(a).item<float>() == -3.0f);
  CHECK_THROWS_AS(mx::sum(a, 0), std::invalid_argument);
}

TEST_CASE("empty reductions give the identity: sum 0, prod 1, all true, any false, mean NaN") {
  auto e = mx::zeros({0}, mx::float32);
  CHECK(mx::sum(e).item<float>() == 0.0f);
  CHECK(mx::prod(e).item<float>() == 1.0f);
  CHECK(mx::all(e).item<bool>());
  CHECK_FALSE(mx::any(e).item<bool>());
  CHECK(std::isnan(mx::mean(e).item<float>()));
  auto ei = mx::zeros({3, 0}, mx::int16);
  CHECK(mlx_test::to_vector<int>(mx::sum(ei, 1)) == std::vector<int>{0, 0, 0});
  CHECK(mlx_test::to_vector<int>(mx::prod(ei, 1)) == std::vector<int>{1, 1, 1});
  // Reducing the non-empty axis of an empty array is an empty result, not an error.
  CHECK(mx::max(ei, 0).shape() == mx::Shape{0});
  CHECK(mx::sum(ei, 0).size() == 0);
}

TEST_CASE("max and min of an empty reduction throw invalid_argument naming the op") {
  auto e = mx::zeros({2, 0}, mx::float32);
  CHECK_THROWS_WITH_AS(mx::max(e), doctest::Contains("[max]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::min(e, 1), doctest::Contains("[min]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::logsumexp(e), doctest::Contains("[logsumexp]"), std::invalid_argument);
}

TEST_CASE("bad axes throw invalid_argument naming the op") {
  auto a = mx::ones({2, 3});
  CHECK_THROWS_WITH_AS(mx::sum(a, {0, 0}), doctest::Contains("[sum]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::sum(a, {1, -1}), doctest::Contains("[sum]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::prod(a, 2), doctest::Contains("[prod]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::max(a, -3), doctest::Contains("[max]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::all(a, {5}), doctest::Contains("[all]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::mean(a, {0, -2}), doctest::Contains("[mean]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mx::var(a, 3), doctest::Contains("[var]"), std::invalid_argument);
}

TEST_CASE("integer sums and products wrap in the output dtype") {
  int32_t big = std::numeric_limits<int32_t>::max();
  CHECK(mx::sum(mx::array({big, 1}, mx::int32)).item<int32_t>() ==
        std::numeric_limits<int32_t>::min());
  CHECK(mx::prod(mx::array({65536, 65536}, mx::int32)).item<int32_t>() == 0);
  int64_t big64 = std::numeric_limits<int64_t>::max();
  CHECK(mx::sum(mx::array({big64, int64_t{2}})).item<int64_t>() ==
        std::numeric_limits<int64_t>::min() + 1);
  // uint8 and int8 widen first, so these do not wrap.
  CHECK(mx::sum(mx::array({200, 100}, mx::uint8)).item<uint32_t>() == 300u);
  CHECK(mx::sum(mx::array({-100, -100}, mx::int8)).item<int32_t>() == -200);
  CHECK(mx::prod(mx::array({100, 100}, mx::int16)).item<int32_t>() == 10000);
  CHECK(mx::sum(mx::array({true, true, true})).item<int32_t>() == 3);
  // uint32 keeps its width and wraps modulo 2^32.
  CHECK(mx::sum(mx::array({4000000000u, 500000000u})).item<uint32_t>() == 205032704u);
}

TEST_CASE("max and min propagate NaN; sum and prod of NaN are NaN; NaN is truthy") {
  float nan = std::numeric_limits<float>::quiet_NaN();
  float inf = std::numeric_limits<float>::infinity();
  mx::array a({1.0f, nan, 3.0f});
  CHECK(std::isnan(mx::max(a).item<float>()));
  CHECK(std::isnan(mx::min(a).item<float>()));
  CHECK(std::isnan(mx::sum(a).item<float>()));
  CHECK(std::isnan(mx::prod(a).item<float>()));
  CHECK(mx::all(a).item<bool>());
  CHECK(std::isnan(mx::max(mx::array({nan, 1.0f})).item<float>()));
  CHECK(std::isnan(mx::min(mx::array({1.0f, 2.0f, nan})).item<float>()));
  auto h = mx::astype(a, mx::float16);
  CHECK(std::isnan(static_cast<float>(mx::max(h).item<mx::float16_t>())));
  // Infinities: +inf + -inf is NaN, and the compensated sum must not turn inf into NaN.
  CHECK(mx::sum(mx::array({1.0f, inf, 2.0f})).item<float>() == inf);
  CHECK(std::isnan(mx::sum(mx::array({inf, -inf})).item<float>()));
  CHECK(mx::max(mx::array({-inf, -inf})).item<float>() == -inf);
  CHECK(mx::min(mx::array({inf, 5.0f})).item<float>() == 5.0f);
}

TEST_CASE("float32 sums are compensated: small terms survive next to large ones") {
  // 1e8 + 1000 ones - 1e8: plain float32 accumulation gives 0.
  std::vector<float> v(1002, 1.0f);
  v.front() = 1e8f;
  v.back() = -1e8f;
  mx::array a(v.begin(), {1002});
  CHECK(mx::sum(a).item<float>() == 1000.0f);
  // A long sum of 2^20 random values agrees with double to about one float32 rounding.
  Rng rng(7);
  auto x = random_array({1 << 20}, mx::float32, rng, -1, 1.5);
  auto xs = to_doubles(x);
  double want = ref_sum(xs);
  CHECK(std::abs(mx::sum(x).item<float>() - want) <= 2e-7 * ref_abs_sum(xs));
}

TEST_CASE("16-bit float sums accumulate in float32 and round once") {
  // 4096 + 1 + 1 + ... in float16 would stick at 4096 (ulp 4); in float32 it reaches 4352.
  std::vector<float> v(257, 1.0f);
  v[0] = 4096.0f;
  mx::array h(v.begin(), {257}, mx::float16);
  CHECK(static_cast<float>(mx::sum(h).item<mx::float16_t>()) == 4352.0f);
  mx::array b(v.begin(), {257}, mx::bfloat16);
  CHECK(static_cast<float>(mx::sum(b).item<mx::bfloat16_t>()) == 4352.0f);
  // mean of float16 rounds once from float32: (1 + 2 + 2) / 3 = 1.6667 -> 1.666 (nearest half).
  mx::array m({1.0f, 2.0f, 2.0f}, mx::float16);
  CHECK(static_cast<float>(mx::mean(m).item<mx::float16_t>()) ==
        static_cast<float>(mx::float16_t(5.0f / 3.0f)));
}

TEST_CASE("integer means do not wrap: they are computed in float32") {
  int32_t big = 2000000000;
  auto m = mx::mean(mx::array({big, big}, mx::int32));
  CHECK(m.dtype() == mx::float32);
  CHECK(m.item<float>() == doctest::Approx(2e9));
}

TEST_CASE("reductions read broadcast and transposed inputs through their strides") {
  Rng rng(99);
  // Broadcast: every row is the same vector, so the sum over rows is 4x it.
  auto v = random_array({5}, mx::float32, rng);
  auto b = mx::broadcast_to(v, {4, 5});
  check_all_close(to_doubles(mx::sum(b, 0)), to_doubles(mx::multiply(v, mx::array(4.0f))), 2e-6,
                  1e-6, "sum of broadcast rows");
  CHECK(mx::max(b, 1).shape() == mx::Shape{4});
  // Transposed (non-contiguous) input against a reference computed on its logical values.
  for (auto dt : {mx::int32, mx::float32, mx::float16}) {
    auto x = random_array({3, 4, 5}, dt, rng);
    auto t = mx::transpose(x, {2, 0, 1});
    t.eval();
    CHECK_FALSE(t.flags().row_contiguous);  // a view with permuted strides
    auto ts = to_doubles(t);
    for (auto axes : std::vector<std::vector<int>>{{0}, {1}, {2}, {0, 2}, {1, 2}}) {
      auto got = to_doubles(mx::sum(t, axes));
      auto want = ref_reduce(ts, t.shape(), axes, ref_sum);
      check_all_close(got, want, rtol_for(dt), rtol_for(dt) * 40,
                      label("transposed sum", dt, t.shape(), axes, false));
      auto gmax = to_doubles(mx::max(t, axes));
      auto wmax = ref_reduce(ts, t.shape(), axes, [](const std::vector<double>& g) {
        return *std::max_element(g.begin(), g.end());
      });
      check_all_close(gmax, wmax, 0, 0, label("transposed max", dt, t.shape(), axes, false));
    }
  }
}

TEST_CASE("complex sums, products and max (lexicographic, as MLX)") {
  mx::array a(std::complex<float>(1, 2));
  auto c = mx::broadcast_to(a, {3});
  auto s = mx::sum(c);
  CHECK(s.dtype() == mx::complex64);
  CHECK(s.item<mx::complex64_t>() == mx::complex64_t(3, 6));
  CHECK(mx::prod(c).item<mx::complex64_t>() == mx::complex64_t(-11, -2));
  CHECK(mx::any(mx::array(std::complex<float>(0, 1))).item<bool>());
  CHECK(mx::max(c).item<mx::complex64_t>() == mx::complex64_t(1, 2));
}
