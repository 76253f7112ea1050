// mlxvk-generate --model DIR --prompt TEXT [--max-tokens N] [--chat [--no-think]]
//                [--temp T --top-k K --top-p P --seed S] [--device cpu|gpu]
// Text in, text out: tokenizes the prompt with DIR/tokenizer.json (wrapped in Qwen3's chat
// template with --chat), streams the generated text to stdout as tokens arrive, stops at
// <|im_end|> or <|endoftext|>, and ends with prompt and decode speed, time to first token
// and peak memory on stderr.
#include <sys/resource.h>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>
#include <string>

#include "generate.h"
#include "mlx/memory.h"
#include "tokenizer.h"

namespace {

namespace mx = mlx::core;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

void usage(const char* argv0) {
  std::cerr << "usage: " << argv0
            << " --model DIR --prompt TEXT [--max-tokens N] [--chat [--no-think]]"
               " [--temp T] [--top-k K] [--top-p P] [--seed S] [--device cpu|gpu]\n"
               "  --chat      wrap the prompt in Qwen3's chat template (one user turn)\n"
               "  --no-think  with --chat: append the empty <think></think> block, as the\n"
               "              template does for enable_thinking=false\n";
}

// The process's peak resident set (getrusage's ru_maxrss is in KiB on Linux).
size_t max_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<size_t>(usage.ru_maxrss) * 1024;
}

std::string megabytes(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MB", bytes / 1e6);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_dir, prompt, device;
  bool chat = false, thinking = true;
  qwen3::GenerateOptions options;
  options.max_tokens = 256;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) {
          throw std::invalid_argument(arg + " needs a value");
        }
        return argv[++i];
      };
      if (qwen3::parse_generate_flag(arg, value, options)) {
        continue;
      }
      if (arg == "--model") {
        model_dir = value();
      } else if (arg == "--prompt") {
        prompt = value();
      } else if (arg == "--chat") {
        chat = true;
      } else if (arg == "--no-think") {
        thinking = false;
      } else if (arg == "--device") {
        device = value();
      } else {
        throw std::invalid_argument("unknown argument " + arg);
      }
    }
    if (model_dir.empty() || prompt.empty()) {
      throw std::invalid_argument("--model DIR and --prompt TEXT are required");
    }
    if (options.max_tokens < 1) {
      throw std::invalid_argument("--max-tokens must be at least 1");
    }
    if (!device.empty() && device != "cpu" && device != "gpu") {
      throw std::invalid_argument("--device must be cpu or gpu");
    }
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    usage(argv[0]);
    return 2;
  }

  bool progress_open = false;  // the loading line awaits its end
  try {
    if (device == "cpu") {
      mx::set_default_device(mx::Device::cpu);
    } else if (device == "gpu") {
      mx::set_default_device(mx::Device::gpu);
    }
    const std::string tokenizer_path = model_dir + "/tokenizer.json";
    if (!std::filesystem::exists(tokenizer_path)) {
      throw std::invalid_argument("[mlxvk-generate] " + tokenizer_path +
                                  " not found: the model directory needs its tokenizer.json "
                                  "(qwen3_make_random_model --tokenizer PATH copies one)");
    }
    auto load_start = clock_type::now();
    std::cerr << "loading " << model_dir << " on " << mx::default_device() << ": tokenizer"
              << std::flush;
    progress_open = true;
    auto tokenizer = qwen3::Tokenizer::from_file(tokenizer_path);
    std::cerr << ", weights" << std::flush;
    auto model = qwen3::load_model(model_dir);
    std::cerr << ", done in " << seconds_since(load_start) << " s\n";
    progress_open = false;

    auto ids = tokenizer.encode(chat ? qwen3::chat_prompt(prompt, thinking) : prompt);
    if (ids.empty()) {
      throw std::invalid_argument("[mlxvk-generate] the prompt encodes to no tokens");
    }
    // Qwen3 ends a chat turn with <|im_end|> and a document with <|endoftext|>.
    std::set<int> eos;
    for (const char* name : {"<|im_end|>", "<|endoftext|>"}) {
      if (auto id = tokenizer.token_id(name)) {
        eos.insert(*id);
      }
    }

    qwen3::StreamDecoder stream(tokenizer, /*skip_special=*/true);
    auto start = clock_type::now();
    clock_type::time_point first;
    int generated = 0;
    bool stopped_at_eos = false;
    options.on_token = [&](int id) {
      if (generated++ == 0) {
        first = clock_type::now();
      }
      if (eos.count(id)) {
        stopped_at_eos = true;
        return false;
      }
      std::cout << stream.push(id) << std::flush;
      return true;
    };
    qwen3::generate(model, ids, options);
    std::cout << stream.flush() << "\n" << std::flush;
    const double ttft = std::chrono::duration<double>(first - start).count();
    const double decode = seconds_since(first);

    std::cerr << "==========\n"
              << "Prompt: " << ids.size() << " tokens, " << ids.size() / ttft << " tokens-per-sec\n"
              << "Generation: " << generated << " tokens, "
              << (generated > 1 ? (generated - 1) / decode : 0.0) << " tokens-per-sec"
              << (stopped_at_eos ? " (stopped at end of turn)" : "") << "\n"
              << "Time to first token: " << ttft * 1e3 << " ms\n"
              << "Peak memory: " << megabytes(mx::get_peak_memory()) << " (" << mx::default_device()
              << " allocator), " << megabytes(max_rss_bytes()) << " (process max RSS)\n";
  } catch (const std::exception& e) {
    std::cerr << (progress_open ? "\n" : "") << e.what() << "\n";
    return 1;
  }
  return 0;
}
