// Warnings from the cache. The cache never throws out of load/store; it degrades and says
// so once on stderr. Tests install a handler to count what would have been printed.
#pragma once

#include <functional>
#include <string>

namespace mlx::core::vulkan::cache {

using WarningHandler = std::function<void(const std::string&)>;

// Prints "[mlx-vulkan cache] <message>" through the handler (stderr by default).
void warn(const std::string& message);

// Like warn(), but only the first time this process sees `topic` (a file path, a root
// directory, an environment variable): a bad file is reported once, not on every lookup.
void warn_once(const std::string& topic, const std::string& message);

// Replaces the handler (nullptr restores stderr) and returns the previous one.
WarningHandler set_warning_handler(WarningHandler handler);

}  // namespace mlx::core::vulkan::cache
