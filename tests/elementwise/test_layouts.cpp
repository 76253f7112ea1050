// Elementwise kernels on every input layout: 0-d, empty, broadcast, scalar-vector,
// transposed, stepped and negative-stride views, and with donated input buffers.
#include <doctest/doctest.h>

#include <numeric>

#include "elementwise/helpers.h"

using namespace elementwise_test;
using mlx_test::check_all_close;
using mlx_test::to_doubles;

namespace {

// 0, 1, 2, ... n-1 as dtype dt, shaped.
mx::array iota(mx::Shape shape, mx::Dtype dt = mx::float32, double start = 0) {
  size_t n = 1;
  for (auto d : shape)
    n *= d;
  std::vector<double> v(n);
  std::iota(v.begin(), v.end(), start);
  return mx::array(v.begin(), shape, dt);
}

// The elementwise reference for a binary op on two views of equal shape.
std::vector<double> zip(const mx::array& a, const mx::array& b,
                        const std::function<double(double, double)>& f) {
  auto x = to_doubles(a), y = to_doubles(b);
  std::vector<double> out;
  for (size_t i = 0; i < x.size(); ++i)
    out.push_back(f(x[i], y[i]));
  return out;
}

double sub(double x, double y) {
  return x - y;
}

}  // namespace

TEST_CASE("0-d inputs give 0-d outputs for unary, binary, divmod and where") {
  auto a = mx::array(7.5f), b = mx::array(2.0f);
  auto s = mx::subtract(a, b);
  CHECK(s.ndim() == 0);
  CHECK(s.item<float>() == 5.5f);
  CHECK(mx::negative(a).item<float>() == -7.5f);
  auto qr = mx::divmod(a, b);
  CHECK(qr[0].ndim() == 0);
  CHECK(qr[0].item<float>() == 3.0f);
  CHECK(qr[1].item<float>() == 1.5f);
  CHECK(mx::where(mx::array(false), a, b).item<float>() == 2.0f);
  // 0-d with a vector broadcasts the scalar.
  check_all_close(to_doubles(mx::subtract(a, iota({3}))), {7.5, 6.5, 5.5}, 0, 0, "0-d - vec");
}

TEST_CASE("empty inputs of shape {0} and {2,0} give empty outputs of the broadcast shape") {
  for (mx::Shape shape : {mx::Shape{0}, mx::Shape{2, 0}}) {
    auto e = mx::zeros(shape, mx::float32);
    auto add = mx::add(e, mx::array(1.0f));
    add.eval();
    CHECK(add.shape() == shape);
    CHECK(add.size() == 0);
    auto un = mx::exp(e);
    un.eval();
    CHECK(un.shape() == shape);
    auto pred = mx::less(e, e);
    pred.eval();
    CHECK(pred.dtype() == mx::bool_);
    CHECK(pred.shape() == shape);
    auto qr = mx::divmod(mx::astype(e, mx::int32), mx::array(3));
    mx::eval({qr[0], qr[1]});
    CHECK(qr[1].shape() == shape);
    auto w = mx::where(mx::astype(e, mx::bool_), e, mx::array(2.0f));
    w.eval();
    CHECK(w.shape() == shape);
  }
  // {2,0} against {1,0} and {2,1}: broadcasting keeps the zero dim.
  auto out = mx::multiply(mx::zeros({2, 1}, mx::int32), mx::zeros({1, 0}, mx::int32));
  out.eval();
  CHECK(out.shape() == mx::Shape{2, 0});
}

TEST_CASE("broadcasting {3,1} with {1,4} gives every pair, for every dtype") {
  for (auto dt : mx::all_dtypes) {
    auto a = iota({3, 1}, dt, 1);
    auto b = iota({1, 4}, dt, 1);
    auto out = mx::multiply(a, b);
    CHECK(out.shape() == mx::Shape{3, 4});
    std::vector<double> want;
    for (int i = 1; i <= 3; ++i) {
      for (int j = 1; j <= 4; ++j)
        want.push_back(dt == mx::bool_ ? 1 : i * j);
    }
    check_all_close(to_doubles(out), want, 0, 0, label("outer product", dt));
  }
}

TEST_CASE("scalar-vector and vector-scalar operands keep their order") {
  auto v = iota({5}, mx::float32);
  auto s = mx::array(10.0f);
  check_all_close(to_doubles(mx::subtract(s, v)), {10, 9, 8, 7, 6}, 0, 0, "s - v");
  check_all_close(to_doubles(mx::subtract(v, s)), {-10, -9, -8, -7, -6}, 0, 0, "v - s");
  check_all_close(to_doubles(mx::divide(v, mx::array(2.0f))), {0, 0.5, 1, 1.5, 2}, 0, 0, "v / s");
  auto iv5 = iota({5}, mx::int32);
  CHECK(to_int64s(mx::remainder(mx::array(7), mx::add(iv5, mx::array(1)))) == iv({0, 1, 1, 3, 2}));
  CHECK(to_int64s(mx::left_shift(mx::array(1), iv5)) == iv({1, 2, 4, 8, 16}));
  // A size-1 1-d operand broadcast along a larger dim (data_size 1, stride 0).
  check_all_close(to_doubles(mx::subtract(mx::array({3.0f}), v)), {3, 2, 1, 0, -1}, 0, 0,
                  "[s] - v");
}

TEST_CASE("strided views (transposed, stepped, negative, broadcast) match contiguous results") {
  // Views are built with make_view (shape/strides/offset on the base buffer), independent of
  // the shape ops. Each is compared with the same op on a contiguous copy of its values.
  auto base = iota({48}, mx::float32, -20);
  auto base2 = iota({48}, mx::float32, 3);
  struct View {
    const char* name;
    mx::Shape shape;
    mx::Strides strides;
    int64_t offset;
  };
  std::vector<View> views = {
      {"row-major", {4, 6}, {6, 1}, 0},
      {"transposed", {6, 4}, {1, 6}, 0},
      {"stepped", {4, 3}, {12, 2}, 1},
      {"reversed", {24}, {-1}, 23},
      {"reversed rows", {4, 6}, {-6, 1}, 18},
      {"reversed cols, transposed", {6, 4}, {-1, 6}, 5},
      {"broadcast rows", {4, 6}, {0, 1}, 2},
      {"3-d permuted", {2, 3, 4}, {1, 8, 2}, 0},
      {"3-d mixed signs", {2, 3, 4}, {-24, 8, -1}, 27},
  };
  for (auto& va : views) {
    for (auto& vb : views) {
      if (va.shape != vb.shape)
        continue;
      auto a = make_view(base, va.shape, va.strides, va.offset);
      auto b = make_view(base2, vb.shape, vb.strides, vb.offset);
      std::string what = std::string(va.name) + " - " + vb.name;
      auto out = mx::subtract(a, b);
      CHECK(out.flags().row_contiguous);
      check_all_close(to_doubles(out), zip(a, b, sub), 0, 0, what);
      auto cond = mx::greater(a, mx::array(0.0f));
      check_all_close(to_doubles(mx::where(cond, a, b)),
                      zip(a, b, [](double x, double y) { return x > 0 ? x : y; }), 0, 0,
                      "where " + what);
    }
    auto a = make_view(base, va.shape, va.strides, va.offset);
    std::vector<double> want;
    for (double x : to_doubles(a))
      want.push_back(x * x);
    check_all_close(to_doubles(mx::square(a)), want, 0, 0, std::string("square ") + va.name);
    // A view against a broadcast scalar and against a row broadcast.
    check_all_close(to_doubles(mx::subtract(a, mx::array(1.0f))),
                    zip(a, mx::full(va.shape, 1.0f), sub), 0, 0,
                    std::string("view - scalar ") + va.name);
  }
}

TEST_CASE("strided views of 16-bit, integer and complex dtypes match contiguous results") {
  for (auto dt : {mx::float16, mx::bfloat16, mx::int8, mx::uint16, mx::int64, mx::complex64}) {
    auto base = iota({30}, dt, 1);
    auto a = make_view(base, {5, 3}, {1, 5}, 0);     // transposed
    auto b = make_view(base, {5, 3}, {-3, -1}, 29);  // fully reversed
    auto out = mx::add(a, b);
    CHECK(out.dtype() == dt);
    auto want = zip(a, b, [](double x, double y) { return x + y; });
    check_all_close(to_doubles(out), round_all(want, dt), 0, 0, label("add views", dt));
  }
}

TEST_CASE("views made by transpose, slice, broadcast_to and as_strided give correct results") {
  // These use the shape engineer's view ops; they pass once those ops are implemented.
  auto a = mx::reshape(iota({12}, mx::float32), {3, 4});
  auto t = mx::transpose(a);
  auto b = mx::reshape(iota({12}, mx::float32, 100), {4, 3});
  check_all_close(to_doubles(mx::add(t, b)), zip(t, b, std::plus<double>()), 0, 0,
                  "transpose + contiguous");
  auto rev = mx::slice(a, {2, 3}, {-4, -5}, {-1, -2});  // rows 2,1,0; cols 3,1
  CHECK(rev.shape() == mx::Shape{3, 2});
  check_all_close(to_doubles(mx::negative(rev)), {-11, -9, -7, -5, -3, -1}, 0, 0,
                  "negative of reversed slice");
  auto bc = mx::broadcast_to(mx::array({1.0f, 2.0f}), {3, 2});
  check_all_close(to_doubles(mx::multiply(rev, bc)), {11, 18, 7, 10, 3, 2}, 0, 0,
                  "slice * broadcast");
  auto win = mx::as_strided(iota({6}, mx::int32), {4, 3}, {1, 1}, 0);  // sliding windows
  CHECK(to_int64s(mx::multiply(win, mx::array(2))) == iv({0, 2, 4, 2, 4, 6, 4, 6, 8, 6, 8, 10}));
}

TEST_CASE("a donated input buffer is reused for the output and the result is correct") {
  auto x = iota({64}, mx::float32);
  auto y = iota({64}, mx::float32, 1);
  x.eval();
  y.eval();

  // Binary: t is an intermediate nobody else holds once we drop our reference.
  auto t = mx::exp(mx::multiply(x, mx::array(0.01f)));
  t.eval();
  const float* t_data = t.data<float>();
  auto t_values = to_doubles(t);
  auto out = mx::add(t, y);
  t = mx::array(0.0f);  // drop the caller's reference: the graph holds the only one
  out.eval();
  CHECK(out.data<float>() == t_data);
  auto sum = zip(from_doubles(t_values, mx::float32), y, std::plus<double>());
  check_all_close(to_doubles(out), round_all(sum, mx::float32), 0, 0, "donated add");

  // Unary, donating into the same dtype; the second operand position donates too.
  auto u = mx::multiply(x, mx::array(2.0f));
  u.eval();
  const float* u_data = u.data<float>();
  auto neg = mx::subtract(y, u);
  u = mx::array(0.0f);
  neg.eval();
  CHECK(neg.data<float>() == u_data);
  std::vector<double> want;
  for (int i = 0; i < 64; ++i)
    want.push_back((i + 1) - 2.0 * i);
  check_all_close(to_doubles(neg), want, 0, 0, "donated b operand");

  // Different element size (float32 -> bool): no donation, still correct.
  auto v = mx::multiply(x, mx::array(1.0f));
  v.eval();
  auto pred = mx::greater(v, mx::array(31.5f));
  v = mx::array(0.0f);
  auto p = to_int64s(pred);
  CHECK(std::accumulate(p.begin(), p.end(), int64_t(0)) == 32);
}

TEST_CASE("an input the caller still holds is never overwritten by the output") {
  auto x = iota({16}, mx::int32);
  auto t = mx::add(x, mx::array(1));
  t.eval();
  auto before = to_int64s(t);
  auto out = mx::multiply(t, mx::array(3));
  out.eval();
  CHECK(out.data<int32_t>() != t.data<int32_t>());
  CHECK(to_int64s(t) == before);
  auto q = mx::divmod(t, mx::array(4));
  mx::eval({q[0], q[1]});
  CHECK(to_int64s(t) == before);
  auto w = mx::where(mx::greater(t, mx::array(8)), t, mx::array(0));
  w.eval();
  CHECK(to_int64s(t) == before);
}

TEST_CASE("a 4-d permuted view with a broadcast operand walks every element once") {
  // Enough dims that collapsing leaves several outer loops.
  auto base = iota({120}, mx::float64);
  auto a = make_view(base, {2, 3, 4, 5}, {1, 40, 10, 2}, 0);
  auto b = make_view(iota({4}, mx::float64, 1000), {2, 3, 4, 5}, {0, 0, 1, 0}, 0);
  auto out = mx::add(a, b);
  check_all_close(to_doubles(out), zip(a, b, std::plus<double>()), 0, 0, "4-d add");
  auto av = to_doubles(a);
  std::vector<double> sorted = av;
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());  // distinct elements
}
