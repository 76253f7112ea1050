// qwen3_make_random_model --config tiny|tiny-qwen3-vocab|qwen3-0.6b --out DIR [--seed S]
//                         [--shard-mb N] [--tokenizer PATH] [--device cpu|gpu]
// Writes a random-weight model directory in the MLX community layout (random_model.h), with
// a copy of the tokenizer.json at PATH when given. The weights are drawn and quantized on
// the CPU unless --device gpu (faster for qwen3-0.6b; the last bits of some values differ).
#include <cstdlib>
#include <iostream>
#include <string>

#include "random_model.h"

int main(int argc, char** argv) {
  std::string name = "tiny", out;
  qwen3::RandomModelOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << arg << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--config") {
      name = value();
    } else if (arg == "--out") {
      out = value();
    } else if (arg == "--seed") {
      options.seed = std::stoull(value());
    } else if (arg == "--shard-mb") {
      options.max_shard_bytes = std::stoull(value()) << 20;
    } else if (arg == "--tokenizer") {
      options.tokenizer_json = value();
    } else if (arg == "--device") {
      std::string d = value();
      if (d != "cpu" && d != "gpu") {
        std::cerr << "--device takes cpu or gpu\n";
        return 2;
      }
      options.device = d == "gpu" ? mlx::core::Device::gpu : mlx::core::Device::cpu;
    } else {
      std::cerr << "usage: " << argv[0]
                << " --config tiny|tiny-qwen3-vocab|qwen3-0.6b --out DIR [--seed S]"
                   " [--shard-mb N] [--tokenizer PATH] [--device cpu|gpu]\n";
      return 2;
    }
  }
  if (out.empty()) {
    std::cerr << "--out DIR is required\n";
    return 2;
  }
  try {
    qwen3::write_random_model(out, qwen3::named_config(name), options);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  std::cout << "wrote random " << name << " model to " << out << "\n";
  return 0;
}
