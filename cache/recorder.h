// MLX_VK_RECORD_KERNELS=<file>: the canonical key of every kernel a workload uses, one line
// each, so that `spvdump prewarm <file>` can build them all before a deployment starts.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "cache/config.h"

namespace mlx::core::vulkan::cache {

class KeyRecorder {
 public:
  explicit KeyRecorder(std::filesystem::path path);

  // Appends "key\n" unless the key is already in the file or was recorded by this process.
  // Each line is one write() to a file opened with O_APPEND, so lines from concurrent
  // processes never interleave on a local filesystem; two processes may both append the
  // same new key, which read_recorded_keys() folds. Never throws: an unwritable file gives
  // one warning and recording stops.
  void record(const std::string& canonical_key);

  const std::filesystem::path& path() const {
    return path_;
  }

 private:
  std::filesystem::path path_;
  std::mutex mutex_;
  std::unordered_set<std::string> seen_;
  bool loaded_ = false;
  bool failed_ = false;
};

// A recorder when MLX_VK_RECORD_KERNELS names a file, else nullptr.
std::unique_ptr<KeyRecorder> recorder_from_env(const EnvLookup& env = process_env());

// The distinct keys of a recorded file in first-seen order, surrounding blanks trimmed;
// empty lines and lines starting with '#' are skipped. A missing file has no keys; an
// unreadable one throws std::runtime_error("[cache] ...").
std::vector<std::string> read_recorded_keys(const std::filesystem::path& path);

}  // namespace mlx::core::vulkan::cache
