// compile() from several threads at once: glslang's process state is set up exactly once and
// concurrent compiles produce the same SPIR-V as sequential ones.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "codegen/codegen.h"

using namespace mlx::core::vulkan::codegen;

TEST_CASE("8 threads compiling different kernels at once get valid, deterministic SPIR-V") {
  DeviceCaps caps;
  caps.storage_8bit = caps.storage_16bit = caps.shader_int64 = true;
  const std::vector<std::pair<std::string, std::string>> ops = {
      {"Exp", "f32"},  {"Sin", "f16"},    {"Erf", "bf16"}, {"Abs", "i8"},
      {"Sqrt", "f32"}, {"Square", "u64"}, {"Tanh", "f32"}, {"Negative", "i16"}};
  std::vector<KernelKey> keys;
  for (const auto& [op, dt] : ops) {
    keys.push_back(
        {"unary",
         {{"op", op}, {"in", dt}, {"out", dt}, {"layout", "g"}, {"rank", "2"}, {"idx", "32"}}});
  }
  std::vector<std::vector<uint32_t>> concurrent(keys.size());
  std::atomic<int> failures{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < keys.size(); ++t) {
    threads.emplace_back([&, t] {
      ++ready;
      while (ready.load() < static_cast<int>(keys.size())) {
        std::this_thread::yield();  // start together
      }
      try {
        concurrent[t] = compile(keys[t], render(keys[t], caps)).words;
      } catch (...) {
        ++failures;
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  CHECK(failures == 0);
  for (size_t t = 0; t < keys.size(); ++t) {
    CAPTURE(keys[t].canonical());
    CHECK(validate_spirv(concurrent[t]) == "");
    CHECK(concurrent[t] == compile(keys[t], render(keys[t], caps)).words);
  }
}
