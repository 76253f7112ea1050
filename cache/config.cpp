#include "cache/config.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "cache/warn.h"

namespace mlx::core::vulkan::cache {

namespace {

// Empty counts as unset, as the XDG base-directory spec asks.
std::optional<std::string> non_empty(const EnvLookup& env, const char* name) {
  auto value = env(name);
  if (value && value->empty()) {
    return std::nullopt;
  }
  return value;
}

// Case-insensitive (OFF, ReadOnly). An unknown value fails closed: a typo in a request to
// turn the cache off must not leave it reading and writing.
CacheMode parse_mode(const std::optional<std::string>& value) {
  if (!value) {
    return CacheMode::ReadWrite;
  }
  std::string v = *value;
  std::transform(v.begin(), v.end(), v.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (v == "off" || v == "0") {
    return CacheMode::Off;
  }
  if (v == "readonly") {
    return CacheMode::ReadOnly;
  }
  if (v == "readwrite" || v == "1") {
    return CacheMode::ReadWrite;
  }
  warn_once("env:MLX_VK_CACHE", "MLX_VK_CACHE='" + *value +
                                    "' is not one of off, readonly, readwrite; the disk cache "
                                    "is off");
  return CacheMode::Off;
}

uint64_t parse_max_bytes(const std::optional<std::string>& value) {
  if (!value) {
    return kDefaultMaxMegabytes << 20;
  }
  // Digits only: strtoull would accept "-1" (as a huge number) and "12abc".
  bool digits = value->size() <= 12;
  for (char c : *value) {
    digits = digits && c >= '0' && c <= '9';
  }
  if (!digits) {
    warn_once("env:MLX_VK_CACHE_MAX_MB", "MLX_VK_CACHE_MAX_MB='" + *value +
                                             "' is not a whole number of MiB; using " +
                                             std::to_string(kDefaultMaxMegabytes));
    return kDefaultMaxMegabytes << 20;
  }
  return std::stoull(*value) << 20;
}

}  // namespace

EnvLookup process_env() {
  return [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (!v) {
      return std::nullopt;
    }
    return std::string(v);
  };
}

CacheConfig config_from_env(const EnvLookup& env) {
  CacheConfig config;
  config.mode = parse_mode(non_empty(env, "MLX_VK_CACHE"));
  config.max_bytes = parse_max_bytes(non_empty(env, "MLX_VK_CACHE_MAX_MB"));

  auto xdg = non_empty(env, "XDG_CACHE_HOME");
  if (auto dir = non_empty(env, "MLX_VK_CACHE_DIR")) {
    config.dir = *dir;
  } else if (xdg && std::filesystem::path(*xdg).is_absolute()) {
    config.dir = std::filesystem::path(*xdg) / "mlx-vulkan";
  } else if (auto home = non_empty(env, "HOME")) {
    config.dir = std::filesystem::path(*home) / ".cache" / "mlx-vulkan";
  } else if (config.mode != CacheMode::Off) {
    warn_once("env:HOME",
              "no cache directory: set MLX_VK_CACHE_DIR (HOME and XDG_CACHE_HOME are unset); "
              "running without a disk cache");
    config.mode = CacheMode::Off;
  }
  return config;
}

const char* to_string(CacheMode mode) {
  switch (mode) {
    case CacheMode::Off:
      return "off";
    case CacheMode::ReadOnly:
      return "readonly";
    case CacheMode::ReadWrite:
      return "readwrite";
  }
  return "?";
}

}  // namespace mlx::core::vulkan::cache
