// Formatting shared by the subcommands: times, durations, tables, key fields.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spvdump {

// "2025-01-31 14:02:11" in local time; "-" for 0.
std::string format_time(int64_t unix_ms);
// "12.34"
std::string format_ms(double ms);

// Left-aligned columns separated by two spaces; the last column is not padded.
std::string format_table(const std::vector<std::vector<std::string>>& rows);

// The family of a canonical key ("binary" of "binary:in=f32,..."), and whether any of its
// parameter values names dtype `dt` (values may list several, dot-separated: "f32.f16").
std::string key_family(const std::string& key);
bool key_has_dtype(const std::string& key, const std::string& dt);

}  // namespace spvdump
