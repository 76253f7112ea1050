#include "cache/recorder.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "cache/file_io.h"
#include "cache/warn.h"

namespace mlx::core::vulkan::cache {

namespace {

std::string trim(const std::string& s) {
  const char* blanks = " \t\r";
  size_t b = s.find_first_not_of(blanks);
  if (b == std::string::npos) {
    return "";
  }
  size_t e = s.find_last_not_of(blanks);
  return s.substr(b, e - b + 1);
}

}  // namespace

KeyRecorder::KeyRecorder(std::filesystem::path path) : path_(std::move(path)) {}

void KeyRecorder::record(const std::string& canonical_key) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failed_) {
    return;
  }
  if (canonical_key.empty() || canonical_key.find_first_of("\r\n") != std::string::npos ||
      trim(canonical_key) != canonical_key || canonical_key[0] == '#') {
    warn_once("record-key:" + canonical_key,
              "not recording a key that cannot be one line: '" + canonical_key + "'");
    return;
  }
  try {
    if (!loaded_) {
      // Keys recorded by earlier runs are not appended again.
      for (auto& k : read_recorded_keys(path_)) {
        seen_.insert(std::move(k));
      }
      loaded_ = true;
    }
    if (!seen_.insert(canonical_key).second) {
      return;
    }
    std::string line = canonical_key + "\n";
    int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      throw std::runtime_error("cannot open " + path_.string() + ": " + std::strerror(errno));
    }
    ssize_t n;
    do {
      n = ::write(fd, line.data(), line.size());
    } while (n < 0 && errno == EINTR);
    int err = errno;
    ::close(fd);
    if (n != static_cast<ssize_t>(line.size())) {
      throw std::runtime_error("cannot append to " + path_.string() + ": " +
                               (n < 0 ? std::strerror(err) : "short write"));
    }
  } catch (const std::exception& e) {
    failed_ = true;
    warn_once("record:" + path_.string(),
              std::string("MLX_VK_RECORD_KERNELS: ") + e.what() + "; recording stops");
  }
}

std::unique_ptr<KeyRecorder> recorder_from_env(const EnvLookup& env) {
  auto path = env("MLX_VK_RECORD_KERNELS");
  if (!path || path->empty()) {
    return nullptr;
  }
  return std::make_unique<KeyRecorder>(*path);
}

std::vector<std::string> read_recorded_keys(const std::filesystem::path& path) {
  std::string error;
  auto bytes = read_file(path, error);
  if (!bytes) {
    if (!error.empty()) {
      throw std::runtime_error("[cache] " + error);
    }
    return {};
  }
  std::vector<std::string> keys;
  std::unordered_set<std::string> seen;
  size_t start = 0;
  while (start < bytes->size()) {
    size_t end = start;
    while (end < bytes->size() && (*bytes)[end] != '\n') {
      ++end;
    }
    std::string line = trim(std::string(bytes->begin() + start, bytes->begin() + end));
    start = end + 1;
    if (line.empty() || line[0] == '#') {
      continue;
    }
    if (seen.insert(line).second) {
      keys.push_back(std::move(line));
    }
  }
  return keys;
}

}  // namespace mlx::core::vulkan::cache
