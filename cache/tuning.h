// Tuning records (the GEMM autotune, mlx/backend/vulkan/autotune.h) beside a device's
// kernels: <root>/<fingerprint hash>/tuning.txt, one "<problem class> <choice>" line per
// record, neither part holding spaces. A line that is not two words is skipped (a damaged
// file is a miss, never an error); a later line for a class wins. Records are text so that
// `spvdump tuning` and people can read them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace mlx::core::vulkan::cache {

// The records stored for the device with this fingerprint hash; empty when there are none.
std::map<std::string, std::string> read_tuning(const std::filesystem::path& root,
                                               uint64_t fingerprint_hash);

// Adds one record (rewriting the file atomically with the others kept). Returns an error
// message, or nullopt. `problem_class` and `choice` must be non-empty and hold no
// whitespace.
std::optional<std::string> store_tuning(const std::filesystem::path& root,
                                        const std::string& fingerprint,
                                        const std::string& problem_class,
                                        const std::string& choice);

// What is wrong with a tuning file's bytes (a line that is not two words), or nullopt.
std::optional<std::string> tuning_problem(const std::string& text);

}  // namespace mlx::core::vulkan::cache
