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

// The largest file read_file accepts unless told otherwise.
inline constexpr uint64_t kMaxFileBytes = uint64_t{1} << 32;

// A whole file, or nullopt with `error` set ("" when the file simply does not exist).
// Files above max_bytes are refused so that a garbage size can never exhaust memory.
// Never blocks: anything but a regular file (a FIFO, a socket, a device, a directory) is
// refused without reading it, and `not_regular`, when given, says that was the reason.
std::optional<std::vector<uint8_t>> read_file(const std::filesystem::path& path, std::string& error,
                                              uint64_t max_bytes = kMaxFileBytes,
                                              bool* not_regular = nullptr);

// Opens a regular file for reading without blocking (a FIFO would block open() until a
// writer came). Returns the descriptor, or -1 with `error` set ("" when the file does not
// exist) and `not_regular` telling whether the file type was the reason.
int open_regular(const std::filesystem::path& path, std::string& error, bool& not_regular);

// "a FIFO", "a directory", ...: what a file of mode `mode` is, for messages.
std::string file_type_name(unsigned mode);

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
