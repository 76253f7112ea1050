#include "cache/tuning.h"

#include <span>
#include <sstream>
#include <vector>

#include "cache/file_io.h"
#include "cache/hash.h"
#include "cache/layout.h"

namespace mlx::core::vulkan::cache {

namespace {

constexpr uint64_t kMaxTuningBytes = uint64_t{1} << 20;

bool one_word(const std::string& s) {
  return !s.empty() && s.find_first_of(" \t\r\n") == std::string::npos;
}

// Calls f(class, choice) for each well-formed line; returns the first bad line's number.
template <typename F>
int for_each_record(const std::string& text, F&& f) {
  std::istringstream in(text);
  std::string line;
  int bad = 0;
  for (int n = 1; std::getline(in, line); ++n) {
    std::istringstream words(line);
    std::string cls, choice, extra;
    if (!(words >> cls >> choice) || (words >> extra)) {
      bad = bad ? bad : n;
      continue;
    }
    f(cls, choice);
  }
  return bad;
}

}  // namespace

std::map<std::string, std::string> read_tuning(const std::filesystem::path& root,
                                               uint64_t fingerprint_hash) {
  std::map<std::string, std::string> records;
  std::string error;
  auto bytes = read_file(tuning_path(root, fingerprint_hash), error, kMaxTuningBytes);
  if (!bytes) {
    return records;
  }
  for_each_record(std::string(bytes->begin(), bytes->end()),
                  [&](const std::string& c, const std::string& v) { records[c] = v; });
  return records;
}

std::optional<std::string> store_tuning(const std::filesystem::path& root,
                                        const std::string& fingerprint,
                                        const std::string& problem_class,
                                        const std::string& choice) {
  if (!one_word(problem_class) || !one_word(choice)) {
    return "a tuning record's class and choice must be single words";
  }
  if (auto err = prepare_device_dir(root, fingerprint)) {
    return err;
  }
  uint64_t fp = fingerprint_hash(fingerprint);
  auto records = read_tuning(root, fp);
  records[problem_class] = choice;
  std::string text;
  for (const auto& [c, v] : records) {
    text += c + " " + v + "\n";
  }
  auto bytes = std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  return atomic_write(tuning_path(root, fp), bytes, false);
}

std::optional<std::string> tuning_problem(const std::string& text) {
  int bad = for_each_record(text, [](const std::string&, const std::string&) {});
  if (bad) {
    return "line " + std::to_string(bad) + " is not \"<class> <choice>\"";
  }
  return std::nullopt;
}

}  // namespace mlx::core::vulkan::cache
