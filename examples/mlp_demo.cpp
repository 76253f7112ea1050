// A 2-layer MLP forward pass on random inputs: builds a lazy graph, evaluates it on the
// default device (the GPU when a Vulkan device exists) and prints a summary that checks
// itself against the CPU.
#include <chrono>
#include <iostream>

#include "mlx/mlx.h"

namespace mx = mlx::core;

namespace {

mx::array mlp(const mx::array& x, const mx::array& w1, const mx::array& b1, const mx::array& w2,
              const mx::array& b2, mx::StreamOrDevice s = {}) {
  auto h = mx::maximum(mx::add(mx::matmul(x, w1, s), b1, s), mx::array(0.0f), s); // ReLU
  auto logits = mx::add(mx::matmul(h, w2, s), b2, s);
  return mx::softmax(logits, -1, false, s);
}

} // namespace

int main() {
  const int batch = 64, in_dim = 256, hidden = 512, classes = 10;
  auto key = mx::random::key(42);
  auto keys = mx::random::split(key, 3);
  auto x = mx::random::normal({batch, in_dim}, mx::float32, 0.0f, 1.0f, mx::take(keys, 0, 0));
  auto w1 = mx::random::normal({in_dim, hidden}, mx::float32, 0.0f, 0.0625f, mx::take(keys, 1, 0));
  auto w2 = mx::random::normal({hidden, classes}, mx::float32, 0.0f, 0.05f, mx::take(keys, 2, 0));
  auto b1 = mx::zeros({hidden});
  auto b2 = mx::full({classes}, 0.01f);
  mx::eval({x, w1, w2, b1, b2});

  auto device = mx::default_device();
  std::cout << "mlx-vulkan MLP demo on " << device << "\n";

  auto start = std::chrono::steady_clock::now();
  auto probs = mlp(x, w1, b1, w2, b2);
  auto predicted = mx::argmax(probs, -1);
  auto row_sums = mx::sum(probs, -1);
  mx::eval({probs, predicted, row_sums});
  auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();

  auto reference = mlp(x, w1, b1, w2, b2, mx::Device::cpu);
  bool matches = mx::allclose(probs, reference, 1e-4, 1e-6).item<bool>();
  float min_sum = mx::min(row_sums).item<float>();
  float max_sum = mx::max(row_sums).item<float>();

  std::cout << "input " << mx::shape_to_string(x.shape()) << " -> hidden " << hidden
            << " (ReLU) -> softmax over " << classes << " classes\n";
  std::cout << "probabilities " << mx::shape_to_string(probs.shape()) << ", row sums in ["
            << min_sum << ", " << max_sum << "]\n";
  std::cout << "first 8 predicted classes: "
            << mx::slice(predicted, {0}, {8}) << "\n";
  std::cout << "probabilities of sample 0: " << mx::take(probs, 0, 0) << "\n";
  std::cout << "forward pass took " << ms << " ms (first run, includes kernel set-up)\n";
  std::cout << "matches the CPU reference: " << (matches ? "yes" : "NO") << "\n";
  return matches && min_sum > 0.999f && max_sum < 1.001f ? 0 : 1;
}
