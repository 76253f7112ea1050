// The byte format of cache files (docs/cache-format.md is the reference): a 64-byte header
// of ours, then a payload. Decoding validates everything and throws FormatError with the
// reason; DiskCache turns that into a miss.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "cache/entry.h"

namespace mlx::core::vulkan::cache {

// Bumped on any change of the header or a payload layout; other versions are misses.
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kHeaderSize = 64;
inline constexpr uint32_t kSpirvMagic = 0x07230203;

enum class FileKind { Kernel, PipelineCache, Bundle };

struct FileHeader {
  FileKind kind = FileKind::Kernel;
  uint32_t version = kFormatVersion;
  uint64_t payload_size = 0;
  uint64_t payload_hash = 0;  // xxHash64 (seed 0) of the payload bytes
  uint64_t fingerprint_hash = 0;
  uint64_t key_hash = 0;  // kernels only; 0 otherwise
};

struct FormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::array<uint8_t, kHeaderSize> encode_header(const FileHeader& header);

// Checks magic, version, header size and reserved bytes, nothing about the payload.
FileHeader decode_header(std::span<const uint8_t> bytes, FileKind expected);

// decode_header plus: the payload is exactly payload_size bytes and its hash matches.
FileHeader check_file(std::span<const uint8_t> file, FileKind expected);

std::vector<uint8_t> encode_kernel(const KernelEntry& entry, const std::string& fingerprint);

// Fully validates a kernel file. A nullopt expectation accepts whatever the file says
// (tools listing every device); the runtime always passes both.
KernelEntry decode_kernel(std::span<const uint8_t> file,
                          std::optional<uint64_t> expected_fingerprint_hash,
                          std::optional<uint64_t> expected_key_hash);

struct PipelineCacheFile {
  std::string fingerprint;
  std::vector<uint8_t> data;  // the driver's VkPipelineCache data, untouched
};

std::vector<uint8_t> encode_pipeline_cache(std::span<const uint8_t> data,
                                           const std::string& fingerprint);
PipelineCacheFile decode_pipeline_cache(std::span<const uint8_t> file,
                                        std::optional<uint64_t> expected_fingerprint_hash);

// Structural checks on what would be handed to a driver; nullopt when it looks sound.
std::optional<std::string> spirv_problem(std::span<const uint32_t> words);
std::optional<std::string> pipeline_cache_problem(std::span<const uint8_t> data);

}  // namespace mlx::core::vulkan::cache
