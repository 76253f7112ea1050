// Helpers for the disk-cache tests: temp roots (never the real ~/.cache), deterministic
// entries whose content says who wrote them, captured warnings, forked children.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "cache/config.h"
#include "cache/entry.h"
#include "cache/format.h"
#include "cache/warn.h"

namespace cache_test {

namespace fs = std::filesystem;
using namespace mlx::core::vulkan::cache;

inline const std::string kDeviceA = "10de:2330:535.1:GH100-uuid-0001:nvidia 535:ptr64";
inline const std::string kDeviceB = "10005:0:1.0:lavapipe-uuid-0002:llvmpipe 15:ptr64";

// A fresh directory under /tmp, removed (whatever its permissions) at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "mlxvk-cache-test-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) {
      std::abort();
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(path_, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory(ec)) {
        fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
      }
    }
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const {
    return path_;
  }

 private:
  fs::path path_;
};

inline CacheConfig config_for(const fs::path& root, uint64_t max_bytes = 0,
                              CacheMode mode = CacheMode::ReadWrite) {
  CacheConfig c;
  c.dir = root;
  c.mode = mode;
  c.max_bytes = max_bytes;
  return c;
}

inline uint32_t pattern_word(uint64_t hash, uint32_t writer, uint32_t i) {
  uint64_t x = hash * 0x9E3779B97F4A7C15ull + writer * 0x85EBCA6Bull + i * 0xC2B2AE35ull;
  return static_cast<uint32_t>(x ^ (x >> 29));
}

// A SPIR-V-shaped entry: header words, then the writer id, then words derived from
// (hash, writer), so that a reader can tell a whole entry from a mix of two writers.
inline KernelEntry make_entry(uint64_t hash, uint32_t writer = 0, uint32_t body_words = 256) {
  KernelEntry e;
  e.hash = hash;
  char key[64];
  std::snprintf(key, sizeof(key), "binary:in=f32,layout=vv,op=Add,n=%08llx",
                static_cast<unsigned long long>(hash));
  e.key = key;
  e.template_name = "binary.glsl";
  e.template_hash = 0x1234567890abcdefull;
  e.defines = {"IN_T float", "OUT_T float", "OP(a,b) ((a)+(b))"};
  e.glsl = "#version 450\n#define IN_T float\nvoid main() {}\n";
  e.compiler_version = "glslang 11.13 / SPIRV-Tools 2023.1";
  e.optimizer_level = 1;
  e.glslang_ms = 1.5;
  e.optimize_ms = 0.25;
  e.pipeline_ms = 3.0;
  e.created_ms = 1700000000000;
  e.spirv = {kSpirvMagic, 0x00010500, 0, 64, 0, writer};
  for (uint32_t i = 0; i < body_words; ++i) {
    e.spirv.push_back(pattern_word(hash, writer, i));
  }
  return e;
}

// True when the SPIR-V body is exactly what one writer produced for this hash.
inline bool is_whole_entry(const KernelEntry& e, uint64_t hash) {
  if (e.hash != hash || e.spirv.size() < 6) {
    return false;
  }
  uint32_t writer = e.spirv[5];
  KernelEntry expected = make_entry(hash, writer, static_cast<uint32_t>(e.spirv.size() - 6));
  return e.spirv == expected.spirv && e.key == expected.key;
}

// A minimal VkPipelineCacheHeaderVersionOne followed by `extra` bytes of driver data.
inline std::vector<uint8_t> make_pipeline_blob(uint8_t fill, size_t extra = 100) {
  std::vector<uint8_t> b(32 + extra, fill);
  b[0] = 32;
  b[1] = b[2] = b[3] = 0;
  b[4] = 1;
  b[5] = b[6] = b[7] = 0;
  return b;
}

// Collects warnings instead of printing them, for the lifetime of the object.
class WarningCapture {
 public:
  WarningCapture() {
    previous_ = set_warning_handler([this](const std::string& m) { lines.push_back(m); });
  }
  ~WarningCapture() {
    set_warning_handler(previous_);
  }
  WarningCapture(const WarningCapture&) = delete;
  WarningCapture& operator=(const WarningCapture&) = delete;
  std::vector<std::string> lines;

 private:
  WarningHandler previous_;
};

inline std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline void write_bytes(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// Runs fn in a forked child and returns its exit status (fn's return value), or -1 when
// the child died abnormally. doctest assertions must not run in the child: fn reports
// failures through distinct non-zero codes instead. With timeout_s > 0 a child still
// running after that long is killed and -2 returned, so that a hang fails the test
// instead of stalling CI.
inline int run_in_child(const std::function<int()>& fn, int timeout_s = 0) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int code = 99;
    try {
      code = fn();
    } catch (...) {
      code = 98;
    }
    ::_exit(code);
  }
  if (pid < 0) {
    return -1;
  }
  int status = 0;
  if (timeout_s > 0) {
    for (int waited_ms = 0;; waited_ms += 10) {
      pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid) {
        break;
      }
      if (done < 0) {
        return -1;
      }
      if (waited_ms >= timeout_s * 1000) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        return -2;
      }
      ::usleep(10000);
    }
  } else if (::waitpid(pid, &status, 0) != pid) {
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace cache_test
