// Plain POSIX file operations for the cache, reporting errors as text instead of throwing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mlx::core::vulkan::cache {

// A whole file, or nullopt with `error` set ("" when the file simply does not exist).
// Files above max_bytes are refused so that a garbage size can never exhaust memory.
std::optional<std::vector<uint8_t>> read_file(const std::filesystem::path& path, std::string& error,
                                              uint64_t max_bytes = uint64_t{1} << 32);

// Writes to a unique temp file in the same directory, then renames it over `path`, so a
// reader sees the old file or the new one, never a mix. `sync` fsyncs the file and the
// directory (for data that is costly to lose). Returns an error message, or nullopt; on
// failure the temp file is removed and `path` is untouched.
std::optional<std::string> atomic_write(const std::filesystem::path& path,
                                        std::span<const uint8_t> bytes, bool sync);

// Temp files are ".tmp-<final name>-<pid>-<n>": never read as entries, and removed by
// verify/eviction once they are old enough that no writer can still own them.
bool is_temp_name(std::string_view filename);

// Sets the mtime to now (the LRU clock). Failures are ignored: it is only a hint.
void touch(const std::filesystem::path& path);

// Unix time in milliseconds, and a file's mtime in the same unit (nullopt if it is gone).
int64_t now_ms();
std::optional<int64_t> mtime_ms(const std::filesystem::path& path);

// create_directories that reports instead of throwing.
std::optional<std::string> make_dirs(const std::filesystem::path& dir);

}  // namespace mlx::core::vulkan::cache
