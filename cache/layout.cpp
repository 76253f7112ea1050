#include "cache/layout.h"

#include <sys/stat.h>

#include <algorithm>
#include <string_view>

#include "cache/file_io.h"
#include "cache/hash.h"

namespace mlx::core::vulkan::cache {

namespace {

constexpr std::string_view kKernelSuffix = ".kernel";
constexpr const char* kPipelineName = "pipeline.cache";
constexpr const char* kFingerprintName = "fingerprint.txt";
constexpr const char* kTuningName = "tuning.txt";

// The standard tag (https://bford.info/cachedir/) that backup tools honour.
constexpr std::string_view kCacheDirTag =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by mlx-vulkan.\n";

std::optional<CacheFile> classify(const std::filesystem::path& path, uint64_t fp_hash) {
  std::string name = path.filename().string();
  CacheFile f;
  f.path = path;
  f.fingerprint_hash = fp_hash;
  if (is_temp_name(name)) {
    f.role = FileRole::Temp;
  } else if (name == kPipelineName) {
    f.role = FileRole::PipelineCache;
  } else if (name == kFingerprintName) {
    f.role = FileRole::Fingerprint;
  } else if (name == kTuningName) {
    f.role = FileRole::Tuning;
  } else if (name.size() == 16 + kKernelSuffix.size() && name.ends_with(kKernelSuffix) &&
             from_hex(std::string_view(name).substr(0, 16), f.key_hash)) {
    f.role = FileRole::Kernel;
  } else {
    return std::nullopt;
  }
  // stat, not lstat: a link is judged by what load() would read through it. A directory
  // is not a file of ours; a FIFO, socket or device under our name is, as a bad one.
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) {
    return std::nullopt;
  }
  f.regular = S_ISREG(st.st_mode);
  f.size = f.regular ? static_cast<uint64_t>(st.st_size) : 0;
  f.mtime_ms = int64_t{st.st_mtim.tv_sec} * 1000 + st.st_mtim.tv_nsec / 1000000;
  return f;
}

}  // namespace

std::filesystem::path device_dir(const std::filesystem::path& root, uint64_t fingerprint_hash) {
  return root / to_hex(fingerprint_hash);
}

std::filesystem::path kernel_path(const std::filesystem::path& root, uint64_t fingerprint_hash,
                                  uint64_t key_hash) {
  return device_dir(root, fingerprint_hash) / (to_hex(key_hash) + std::string(kKernelSuffix));
}

std::filesystem::path pipeline_cache_path(const std::filesystem::path& root,
                                          uint64_t fingerprint_hash) {
  return device_dir(root, fingerprint_hash) / kPipelineName;
}

std::filesystem::path fingerprint_path(const std::filesystem::path& root,
                                       uint64_t fingerprint_hash) {
  return device_dir(root, fingerprint_hash) / kFingerprintName;
}

std::filesystem::path tuning_path(const std::filesystem::path& root, uint64_t fingerprint_hash) {
  return device_dir(root, fingerprint_hash) / kTuningName;
}

std::vector<CacheFile> scan(const std::filesystem::path& root) {
  std::vector<CacheFile> files;
  std::error_code ec;
  for (std::filesystem::directory_iterator dirs(root, ec), end; !ec && dirs != end;
       dirs.increment(ec)) {
    uint64_t fp_hash;
    if (!from_hex(dirs->path().filename().string(), fp_hash) || !dirs->is_directory(ec)) {
      continue;
    }
    std::error_code ec2;
    for (std::filesystem::directory_iterator it(dirs->path(), ec2); !ec2 && it != end;
         it.increment(ec2)) {
      if (auto f = classify(it->path(), fp_hash)) {
        files.push_back(std::move(*f));
      }
    }
  }
  std::sort(files.begin(), files.end(),
            [](const CacheFile& a, const CacheFile& b) { return a.path < b.path; });
  return files;
}

std::optional<std::string> prepare_device_dir(const std::filesystem::path& root,
                                              const std::string& fingerprint) {
  uint64_t fp_hash = fingerprint_hash(fingerprint);
  if (auto err = make_dirs(device_dir(root, fp_hash))) {
    return err;
  }
  std::error_code ec;
  if (!std::filesystem::exists(root / "CACHEDIR.TAG", ec)) {
    auto tag =
        std::span(reinterpret_cast<const uint8_t*>(kCacheDirTag.data()), kCacheDirTag.size());
    if (auto err = atomic_write(root / "CACHEDIR.TAG", tag, false)) {
      return err;
    }
  }
  if (!read_fingerprint(root, fp_hash)) {
    std::string text = fingerprint + "\n";
    auto bytes = std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size());
    if (auto err = atomic_write(fingerprint_path(root, fp_hash), bytes, false)) {
      return err;
    }
  }
  return std::nullopt;
}

std::optional<std::string> read_fingerprint(const std::filesystem::path& root,
                                            uint64_t fingerprint_hash) {
  std::string error;
  auto bytes = read_file(fingerprint_path(root, fingerprint_hash), error, kMaxFingerprintBytes);
  if (!bytes || bytes->empty() || bytes->back() != '\n') {
    return std::nullopt;
  }
  std::string text(bytes->begin(), bytes->end() - 1);
  if (cache::fingerprint_hash(text) != fingerprint_hash) {
    return std::nullopt;
  }
  return text;
}

}  // namespace mlx::core::vulkan::cache
