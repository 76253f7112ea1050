// The README's usage example, kept compiling and checked for sensible results.
#include <doctest/doctest.h>

#include <sstream>

#include "mlx/mlx.h"

namespace mx = mlx::core;

TEST_CASE("the README usage example runs and gives normalized probabilities") {
  std::ostringstream out;
  // --- as in README.md ---
  auto x = mx::random::normal({64, 256});
  auto w = mx::random::normal({256, 10});
  auto probs = mx::softmax(mx::matmul(x, w), -1);  // lazy: nothing computed yet
  auto best = mx::argmax(probs, -1);
  mx::eval(probs, best);  // runs on the default device
  out << best << "\n";
  auto on_cpu = mx::exp(x, mx::Device::cpu);  // any op can target a device or stream
  // ---
  CHECK(best.shape() == mx::Shape{64});
  CHECK(best.dtype() == mx::uint32);
  CHECK(mx::allclose(mx::sum(probs, -1), mx::ones({64}), 1e-5, 1e-5).item<bool>());
  CHECK(mx::max(best).item<uint32_t>() < 10);
  CHECK(out.str().rfind("array([", 0) == 0);
  CHECK(mx::allclose(mx::log(on_cpu, mx::Device::cpu), x, 1e-5, 1e-5).item<bool>());
}
