#include "cache/warn.h"

#include <cstdio>
#include <mutex>
#include <unordered_set>

namespace mlx::core::vulkan::cache {

namespace {

std::mutex& warn_mutex() {
  static std::mutex m;
  return m;
}

WarningHandler& handler() {
  static WarningHandler h;
  return h;
}

std::unordered_set<std::string>& seen_topics() {
  static std::unordered_set<std::string> s;
  return s;
}

void emit_locked(const std::string& message) {
  std::string line = "[mlx-vulkan cache] " + message;
  if (handler()) {
    handler()(line);
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

}  // namespace

void warn(const std::string& message) {
  std::lock_guard<std::mutex> lock(warn_mutex());
  emit_locked(message);
}

void warn_once(const std::string& topic, const std::string& message) {
  std::lock_guard<std::mutex> lock(warn_mutex());
  if (seen_topics().insert(topic).second) {
    emit_locked(message);
  }
}

WarningHandler set_warning_handler(WarningHandler h) {
  std::lock_guard<std::mutex> lock(warn_mutex());
  WarningHandler old = std::move(handler());
  handler() = std::move(h);
  return old;
}

}  // namespace mlx::core::vulkan::cache
