// Lazy graph evaluation: ordering, siblings, freeing intermediates, deep graphs.
#include <doctest/doctest.h>

#include "mlx/mlx.h"
#include "mlx/primitives.h"
#include "test_utils.h"

namespace mx = mlx::core;
using mlx_test::to_doubles;

TEST_CASE("ops are lazy until eval") {
  auto a = mx::array({1.0f, 2.0f});
  auto b = mx::add(a, a, mx::Device::cpu);
  CHECK(b.status() == mx::array::Status::unscheduled);
  CHECK(b.has_primitive());
  CHECK(std::string(b.primitive().name()) == "Add");
  b.eval();
  CHECK(b.status() == mx::array::Status::available);
  CHECK_FALSE(b.has_primitive());  // detached: the graph behind it is released
  CHECK(to_doubles(b) == std::vector<double>{2, 4});
}

TEST_CASE("a diamond graph evaluates shared nodes once and in order") {
  auto x = mx::array({1.0f, 2.0f, 3.0f});
  auto y = mx::multiply(x, x, mx::Device::cpu);  // shared
  auto z = mx::add(y, mx::array(1.0f), mx::Device::cpu);
  auto w = mx::subtract(y, mx::array(1.0f), mx::Device::cpu);
  auto out = mx::multiply(z, w, mx::Device::cpu);  // (x^2+1)(x^2-1) = x^4 - 1
  CHECK(to_doubles(out) == std::vector<double>{0, 15, 80});
}

TEST_CASE("a 100k-node chain evaluates and frees without overflowing the stack") {
  auto x = mx::array(0.0f);
  auto one = mx::array(1.0f);
  auto y = x;
  for (int i = 0; i < 100000; ++i) {
    y = mx::add(y, one, mx::Device::cpu);
  }
  CHECK(y.item<float>() == 100000.0f);
  // An unevaluated deep chain is also destroyed iteratively.
  auto z = x;
  for (int i = 0; i < 100000; ++i) {
    z = mx::add(z, one, mx::Device::cpu);
  }
  z = mx::array(0.0f);
  CHECK(z.item<float>() == 0.0f);
}

TEST_CASE("intermediates are released as soon as they are dead") {
  mx::Shape shape{1024, 1024};  // 4 MiB per float32 array
  auto a = mx::full(shape, 1.0f, mx::Device::cpu);
  a.eval();
  size_t base = mx::get_active_memory();
  mx::reset_peak_memory();
  auto y = a;
  for (int i = 0; i < 20; ++i) {
    y = mx::add(y, a, mx::Device::cpu);
  }
  y.eval();
  CHECK(y.size() == a.size());
  // A chain of 20 adds holds at most a couple of 4 MiB buffers at once, not 20.
  // Donation lets each add write into the previous (dead) result.
  CHECK(mx::get_peak_memory() - base <= 3 * 4 * 1024 * 1024 + 4096);
  CHECK(to_doubles(mx::slice(mx::reshape(y, {-1}), {0}, {1}))[0] == 21.0);
}

TEST_CASE("multi-output primitives produce siblings evaluated together") {
  auto a = mx::array({7, -7, 9, 5});
  auto b = mx::array({2, 2, -4, 5});
  auto outs = mx::divmod(a, b, mx::Device::cpu);
  REQUIRE(outs.size() == 2);
  CHECK(outs[0].siblings().size() == 1);
  CHECK(outs[0].outputs()[1].id() == outs[1].id());
  outs[1].eval();  // evaluating one output evaluates its sibling too
  CHECK(outs[0].status() == mx::array::Status::available);
  CHECK(to_doubles(outs[0]) == std::vector<double>{3, -4, -3, 1});
  CHECK(to_doubles(outs[1]) == std::vector<double>{1, 1, -3, 0});
}

namespace {

// Two outputs, x + 1 and x * 2; its first eval throws (a recoverable failure).
class FailsOnce : public mx::Primitive {
 public:
  explicit FailsOnce(mx::Stream s) : mx::Primitive(s) {}
  void eval_cpu(const std::vector<mx::array>& inputs, std::vector<mx::array>& outputs) override {
    if (!failed_) {
      failed_ = true;
      throw std::runtime_error("[FailsOnce] first try");
    }
    const float* x = inputs[0].data<float>();
    for (auto& o : outputs) {
      o.set_data(mx::allocator::malloc(o.nbytes()));
    }
    for (size_t i = 0; i < inputs[0].size(); ++i) {
      outputs[0].data<float>()[i] = x[i] + 1.0f;
      outputs[1].data<float>()[i] = x[i] * 2.0f;
    }
  }
  void eval_gpu(const std::vector<mx::array>&, std::vector<mx::array>&) override {
    throw std::runtime_error("[FailsOnce] CPU only");
  }
  const char* name() const override {
    return "FailsOnce";
  }

 private:
  bool failed_ = false;
};

}  // namespace

TEST_CASE("a sibling group whose eval failed keeps its inputs for another try") {
  // The eval loop drops the siblings' copies of the input list before a multi-output node
  // runs (so it may donate an input); a failure must give them back.
  auto x = mx::array({1.0f, 2.0f});
  auto outs =
      mx::array::make_arrays({{2}, {2}}, {mx::float32, mx::float32},
                             std::make_shared<FailsOnce>(mx::default_stream(mx::Device::cpu)), {x});
  CHECK_THROWS_AS(outs[0].eval(), std::runtime_error);
  CHECK(outs[1].inputs().size() == 1);
  CHECK(outs[1].status() == mx::array::Status::unscheduled);
  outs[1].eval();  // the sibling's own inputs: it runs, and so does outs[0]
  CHECK(to_doubles(outs[0]) == std::vector<double>{2, 3});
  CHECK(to_doubles(outs[1]) == std::vector<double>{2, 4});
}

TEST_CASE("an unevaluated sibling group is freed when its outputs go out of scope") {
  size_t before = mx::get_active_memory();
  {
    auto outs = mx::divmod(mx::full({256, 256}, 9), mx::array(4), mx::Device::cpu);
    auto q = outs[0];
    outs.clear();
    CHECK(mx::get_active_memory() > before);  // the 0-d inputs hold a little memory
  }
  CHECK(mx::get_active_memory() == before);
}

TEST_CASE("keeping only one sibling alive still evaluates correctly") {
  mx::array r(0);
  {
    auto outs = mx::divmod(mx::array({10, 11}), mx::array(3), mx::Device::cpu);
    r = outs[1];
  }
  CHECK(to_doubles(r) == std::vector<double>{1, 2});
}

TEST_CASE("eval of several outputs and of already evaluated arrays") {
  auto a = mx::array({1.0f, 2.0f});
  auto b = mx::add(a, a, mx::Device::cpu);
  auto c = mx::multiply(a, a, mx::Device::cpu);
  mx::eval(b, c);
  mx::eval(b, c);  // no-op
  mx::async_eval(b);
  b.wait();
  CHECK(to_doubles(b) == std::vector<double>{2, 4});
  CHECK(to_doubles(c) == std::vector<double>{1, 4});
}

TEST_CASE("a loop of 10,000 evals keeps active memory flat") {
  auto a = mx::full({64}, 1.0f, mx::Device::cpu);
  a.eval();
  size_t start = 0, end = 0;
  for (int i = 0; i < 10000; ++i) {
    auto b = mx::add(mx::multiply(a, a, mx::Device::cpu), a, mx::Device::cpu);
    b.eval();
    // Measured at the same point of the iteration (with b alive) early and late.
    if (i == 10)
      start = mx::get_active_memory();
    if (i == 9999)
      end = mx::get_active_memory();
  }
  CHECK(end == start);
}
