// async_eval on the eval thread (mlx/eval_worker.h): graphs built on the results of queued
// graphs, waiting for one job and not the later ones, failures and cancellation, the switch.
#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <stdexcept>

#include "mlx/eval_worker.h"
#include "mlx/mlx.h"
#include "mlx/primitives.h"
#include "test_utils.h"

namespace mx = mlx::core;
using mlx_test::to_doubles;

namespace {

// Restores the eval thread switch when a test case ends.
struct EvalThreadSwitch {
  explicit EvalThreadSwitch(bool on) : was(mx::detail::eval_thread_enabled()) {
    mx::detail::set_eval_thread(on);
  }
  ~EvalThreadSwitch() {
    mx::detail::set_eval_thread(was);
  }
  bool was;
};

// x + 1 on the CPU, after `gate` opens (a job the test holds back), or throwing the first
// time when `fail_once` is set.
class Gated : public mx::UnaryPrimitive {
 public:
  Gated(mx::Stream s, std::shared_future<void> gate, bool fail_once)
      : mx::UnaryPrimitive(s), gate_(std::move(gate)), fail_(fail_once) {}
  void eval_cpu(const std::vector<mx::array>& inputs, mx::array& out) override {
    if (gate_.valid()) {
      gate_.wait();
    }
    if (std::exchange(fail_, false)) {
      throw std::runtime_error("[Gated] failed on purpose");
    }
    out.set_data(mx::allocator::malloc(out.nbytes()));
    for (size_t i = 0; i < out.size(); ++i) {
      out.data<float>()[i] = inputs[0].data<float>()[i] + 1.0f;
    }
  }
  void eval_gpu(const std::vector<mx::array>&, mx::array&) override {
    throw std::runtime_error("[Gated] CPU only");
  }
  const char* name() const override {
    return "Gated";
  }

 private:
  std::shared_future<void> gate_;
  bool fail_;
};

mx::array gated(const mx::array& x, std::shared_future<void> gate = {}, bool fail_once = false) {
  mx::Stream s = mx::default_stream(mx::Device::cpu);
  return mx::array(x.shape(), mx::float32, std::make_shared<Gated>(s, std::move(gate), fail_once),
                   {x});
}

}  // namespace

TEST_CASE("a decode-like loop builds each graph on the last one's queued results") {
  EvalThreadSwitch on(true);
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d.type == mx::Device::gpu ? "gpu" : "cpu");
    // y(t + 1) = y(t) * 0.5 + t, queued before y(t) is read, as qwen3::generate does.
    auto y = mx::full({1}, 1.0f, d);
    mx::async_eval(y);
    double expect = 1.0;
    for (int t = 0; t < 40; ++t) {
      auto next = mx::add(mx::multiply(y, mx::array(0.5f), d), mx::array(float(t)), d);
      mx::async_eval(next);
      CHECK(next.status() != mx::array::Status::unscheduled);
      CHECK(next.eval_job() != 0);
      CHECK(y.item<float>() == doctest::Approx(expect));
      expect = expect * 0.5 + t;
      y = next;
    }
    CHECK(to_doubles(y)[0] == doctest::Approx(expect));
  }
}

TEST_CASE("reading a result waits for its own job, not for one queued after it") {
  EvalThreadSwitch on(true);
  std::promise<void> open;
  auto a = mx::add(mx::full({1}, 2.0f, mx::Device::cpu), mx::array(1.0f), mx::Device::cpu);
  mx::async_eval(a);
  auto held = gated(a, open.get_future().share());  // its job waits for the test
  mx::async_eval(held);
  // Waiting for every job here would never return: the second is held until after it.
  CHECK(a.item<float>() == 3.0f);
  CHECK(held.status() != mx::array::Status::available);
  open.set_value();
  CHECK(held.item<float>() == 4.0f);
}

TEST_CASE("a failed job's error reaches the caller and the jobs queued after it are cancelled") {
  EvalThreadSwitch on(true);
  std::promise<void> open;
  auto x = mx::full({3}, 1.0f, mx::Device::cpu);
  x.eval();
  auto bad = gated(x, open.get_future().share(), /*fail_once=*/true);
  mx::async_eval(bad);
  auto after = mx::multiply(bad, mx::array(2.0f), mx::Device::cpu);  // reads the failed result
  mx::async_eval(after);
  open.set_value();
  // The failure is reported once, to the first reader; the cancelled job's node is
  // unscheduled again, so evaluating it again runs the graph again (which now succeeds).
  CHECK_THROWS_WITH_AS(bad.wait(), "[Gated] failed on purpose", std::runtime_error);
  CHECK(after.status() == mx::array::Status::unscheduled);
  CHECK(bad.status() == mx::array::Status::unscheduled);
  CHECK(to_doubles(after) == std::vector<double>{4, 4, 4});
  CHECK(to_doubles(bad) == std::vector<double>{2, 2, 2});
  // And the thread takes new work.
  auto more = mx::add(after, mx::array(1.0f), mx::Device::cpu);
  mx::async_eval(more);
  CHECK(to_doubles(more) == std::vector<double>{5, 5, 5});
}

TEST_CASE("a failure no one has read yet is reported by the next async_eval, eval or synchronize") {
  EvalThreadSwitch on(true);
  auto x = mx::full({2}, 1.0f, mx::Device::cpu);
  x.eval();
  auto bad = gated(x, {}, /*fail_once=*/true);
  mx::async_eval(bad);
  CHECK_THROWS_WITH_AS(mx::synchronize(), "[Gated] failed on purpose", std::runtime_error);
  mx::synchronize();  // reported once
  CHECK(to_doubles(bad) == std::vector<double>{2, 2});

  auto bad2 = gated(x, {}, /*fail_once=*/true);
  mx::async_eval(bad2);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (bad2.status() == mx::array::Status::scheduled &&
         std::chrono::steady_clock::now() < deadline) {
  }
  auto other = mx::add(x, x, mx::Device::cpu);
  CHECK_THROWS_WITH_AS(mx::async_eval(other), "[Gated] failed on purpose", std::runtime_error);
  CHECK(other.status() == mx::array::Status::unscheduled);  // refused, not queued
  CHECK(other.eval_job() == 0);
  CHECK(to_doubles(other) == std::vector<double>{2, 2});
}

TEST_CASE("with the eval thread off, async_eval records on the caller's thread") {
  EvalThreadSwitch off(false);
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d.type == mx::Device::gpu ? "gpu" : "cpu");
    auto a = mx::exp(mx::zeros({16}, mx::float32, d), d);
    mx::async_eval(a);
    CHECK(a.eval_job() == 0);
    CHECK(a.status() != mx::array::Status::scheduled);
    CHECK(a.status() != mx::array::Status::unscheduled);
    CHECK(to_doubles(a) == std::vector<double>(16, 1.0));
  }
}

TEST_CASE("an update queued behind the job that made its input still takes the input's buffer") {
  // Each step's cache is the output of the step before; a finished job must not keep it
  // (it would make the update copy the whole cache every step, as a KV cache in decode).
  EvalThreadSwitch on(true);
  for (auto d : mlx_test::test_devices()) {
    CAPTURE(d.type == mx::Device::gpu ? "gpu" : "cpu");
    auto cache = mx::add(mx::zeros({4, 64}, mx::float32, d), mx::array(0.0f), d);
    cache.eval();
    const auto* first = cache.data_shared_ptr().get();
    for (int t = 0; t < 16; ++t) {
      cache = mx::slice_update(cache, mx::full({4, 1}, float(t + 1), d), mx::array(t), {1}, d);
      mx::async_eval(cache);
    }
    cache.eval();
    CHECK(cache.data_shared_ptr().get() == first);
    auto got = to_doubles(cache);
    CHECK(got[0] == 1.0);
    CHECK(got[15] == 16.0);
    CHECK(got[64 + 15] == 16.0);
    CHECK(got[16] == 0.0);
  }
}
