#include "lookup.h"

#include <filesystem>

#include "cache/hash.h"
#include "codegen/codegen.h"
#include "text.h"

namespace spvdump {

namespace codegen = mlx::core::vulkan::codegen;

cache::CacheConfig tool_config(const Args& args) {
  cache::CacheConfig config = cache::config_from_env();
  if (auto dir = args.option("--dir")) {
    config.dir = *dir;
  }
  if (config.dir.empty()) {
    throw ToolError("no cache directory: set MLX_VK_CACHE_DIR or HOME, or pass --dir");
  }
  return config;
}

cache::DiskCache open_cache(const Args& args, const std::string& fingerprint) {
  return cache::DiskCache::open(tool_config(args), fingerprint);
}

cache::DiskCache open_existing_cache(const Args& args) {
  cache::CacheConfig config = tool_config(args);
  std::error_code ec;
  auto status = std::filesystem::status(config.dir, ec);
  std::string where = args.option("--dir") ? "" : " (from the environment; --dir picks another)";
  // Test not_found before ec: libstdc++ sets ec for a missing path too.
  if (status.type() == std::filesystem::file_type::not_found) {
    throw ToolError("cache directory " + config.dir.string() + " does not exist" + where);
  }
  if (ec) {
    throw ToolError("cannot access cache directory " + config.dir.string() + ": " + ec.message() +
                    where);
  }
  if (!std::filesystem::is_directory(status)) {
    throw ToolError("cache directory " + config.dir.string() + " is not a directory" + where);
  }
  return cache::DiskCache::open(config, "");
}

bool device_matches(const cache::KernelEntry& e, const std::string& device) {
  if (device.empty()) {
    return true;
  }
  return cache::to_hex(cache::fingerprint_hash(e.fingerprint)).starts_with(device) ||
         e.fingerprint.find(device) != std::string::npos;
}

namespace {

bool is_hash_prefix(const std::string& s) {
  if (s.size() < 4 || s.size() > 16) {
    return false;
  }
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

}  // namespace

cache::KernelEntry resolve_entry(const cache::DiskCache& cache, const std::string& query,
                                 const std::string& device) {
  bool by_hash = is_hash_prefix(query);
  std::string key = query;
  if (!by_hash) {
    try {
      key = codegen::KernelKey::parse(query).canonical();
    } catch (const std::exception&) {
      // Not a well-formed key: match the text as given, which finds nothing useful but
      // gives the clearest message.
    }
  }
  std::vector<cache::KernelEntry> found;
  for (auto& e : cache.list()) {
    if (!device_matches(e, device)) {
      continue;
    }
    if (by_hash ? cache::to_hex(e.hash).starts_with(query) : e.key == key) {
      found.push_back(std::move(e));
    }
  }
  if (found.empty()) {
    throw ToolError("no cached kernel matches '" + query + "' in " + cache.config().dir.string() +
                    (by_hash ? "" : " (give a key or a hash prefix of 4+ hex digits)"));
  }
  if (found.size() > 1) {
    std::string message = "'" + query + "' matches " + std::to_string(found.size()) +
                          " kernels; give a longer hash prefix or --device:\n";
    for (const auto& e : found) {
      message += "  " + cache::to_hex(e.hash) + "  " +
                 cache::to_hex(cache::fingerprint_hash(e.fingerprint)).substr(0, 8) + "  " + e.key +
                 "\n";
    }
    message.pop_back();
    throw ToolError(message);
  }
  return std::move(found.front());
}

}  // namespace spvdump
