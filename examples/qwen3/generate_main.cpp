// qwen3_generate --model DIR --tokens 1,2,3 [--max-tokens N] [--device cpu|gpu]
//                [--temp T --top-k K --top-p P --seed S]
// Prefills the token ids and prints generated ids as they come, then timings. There is no
// tokenizer yet (issue 16 item 3), so prompts and outputs are token ids.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "generate.h"

namespace {

std::vector<int> parse_ids(const std::string& text) {
  std::vector<int> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    ids.push_back(std::stoi(item));
  }
  return ids;
}

}  // namespace

int main(int argc, char** argv) {
  namespace mx = mlx::core;
  std::string model_dir, device;
  std::vector<int> prompt{1, 2, 3, 4};
  qwen3::GenerateOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << arg << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (qwen3::parse_generate_flag(arg, value, options)) {
      continue;
    }
    if (arg == "--model") {
      model_dir = value();
    } else if (arg == "--tokens") {
      prompt = parse_ids(value());
    } else if (arg == "--device") {
      device = value();
    } else {
      std::cerr << "usage: " << argv[0]
                << " --model DIR [--tokens 1,2,3] [--max-tokens N] [--device cpu|gpu]"
                   " [--temp T] [--top-k K] [--top-p P] [--seed S]\n";
      return 2;
    }
  }
  if (model_dir.empty()) {
    std::cerr << "--model DIR is required\n";
    return 2;
  }
  try {
    if (device == "cpu") {
      mx::set_default_device(mx::Device::cpu);
    } else if (device == "gpu") {
      mx::set_default_device(mx::Device::gpu);
    }
    std::cerr << "loading " << model_dir << " on " << mx::default_device() << "...\n";
    auto model = qwen3::load_model(model_dir);
    using clock = std::chrono::steady_clock;
    auto start = clock::now();
    clock::time_point first;
    int count = 0;
    options.on_token = [&](int t) {
      if (count++ == 0) {
        first = clock::now();
      }
      std::cout << (count > 1 ? "," : "") << t << std::flush;
      return true;
    };
    qwen3::generate(model, prompt, options);
    std::cout << "\n";
    auto end = clock::now();
    double ttft = std::chrono::duration<double>(first - start).count();
    double decode = std::chrono::duration<double>(end - first).count();
    std::cerr << "time to first token " << ttft * 1e3 << " ms (" << prompt.size()
              << " prompt tokens), decode " << (count > 1 ? (count - 1) / decode : 0.0)
              << " tok/s\n";
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
