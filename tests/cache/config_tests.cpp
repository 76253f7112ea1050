// Environment variables: location, mode and size cap.
#include <doctest/doctest.h>

#include <map>

#include "cache/config.h"
#include "cache_test_utils.h"

using namespace cache_test;

namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) {
      return std::nullopt;
    }
    return it->second;
  };
}

}  // namespace

TEST_CASE("cache location: MLX_VK_CACHE_DIR, then XDG_CACHE_HOME, then HOME") {
  CHECK(config_from_env(
            env_of({{"MLX_VK_CACHE_DIR", "/d"}, {"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}}))
            .dir == fs::path("/d"));
  CHECK(config_from_env(env_of({{"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}})).dir ==
        fs::path("/x/mlx-vulkan"));
  CHECK(config_from_env(env_of({{"HOME", "/h"}})).dir == fs::path("/h/.cache/mlx-vulkan"));
  // Empty counts as unset; a relative XDG_CACHE_HOME is invalid per the XDG spec.
  CHECK(config_from_env(env_of({{"MLX_VK_CACHE_DIR", ""}, {"HOME", "/h"}})).dir ==
        fs::path("/h/.cache/mlx-vulkan"));
  CHECK(config_from_env(env_of({{"XDG_CACHE_HOME", "rel"}, {"HOME", "/h"}})).dir ==
        fs::path("/h/.cache/mlx-vulkan"));
}

TEST_CASE("defaults: readwrite with a 512 MiB cap") {
  auto c = config_from_env(env_of({{"HOME", "/h"}}));
  CHECK(c.mode == CacheMode::ReadWrite);
  CHECK(c.max_bytes == 512ull * 1024 * 1024);
}

TEST_CASE("MLX_VK_CACHE modes parse in any case, and an unknown value warns once and means off") {
  WarningCapture warnings;
  auto mode = [](const std::string& v) {
    return config_from_env(env_of({{"HOME", "/h"}, {"MLX_VK_CACHE", v}})).mode;
  };
  CHECK(mode("off") == CacheMode::Off);
  CHECK(mode("readonly") == CacheMode::ReadOnly);
  CHECK(mode("readwrite") == CacheMode::ReadWrite);
  CHECK(mode("0") == CacheMode::Off);
  CHECK(mode("1") == CacheMode::ReadWrite);
  CHECK(mode("OFF") == CacheMode::Off);
  CHECK(mode("Off") == CacheMode::Off);
  CHECK(mode("ReadOnly") == CacheMode::ReadOnly);
  CHECK(mode("READWRITE") == CacheMode::ReadWrite);
  CHECK(warnings.lines.empty());
  // Fail closed: a mistyped "off" must not leave the cache reading and writing.
  CHECK(mode("sometimes") == CacheMode::Off);
  CHECK(mode("of") == CacheMode::Off);
  CHECK(mode("read-only") == CacheMode::Off);
  REQUIRE(warnings.lines.size() == 1);  // once per process, however often it is parsed
  CHECK(warnings.lines[0].find("MLX_VK_CACHE='sometimes'") != std::string::npos);
  CHECK(warnings.lines[0].find("the disk cache is off") != std::string::npos);
}

TEST_CASE("MLX_VK_CACHE_MAX_MB: whole MiB, 0 for no cap, garbage warns and uses the default") {
  WarningCapture warnings;
  auto cap = [](const std::string& v) {
    return config_from_env(env_of({{"HOME", "/h"}, {"MLX_VK_CACHE_MAX_MB", v}})).max_bytes;
  };
  CHECK(cap("64") == 64ull << 20);
  CHECK(cap("0") == 0);
  CHECK(warnings.lines.empty());
  CHECK(cap("-1") == 512ull << 20);
  CHECK(cap("12abc") == 512ull << 20);
  CHECK(cap("99999999999999999999") == 512ull << 20);
  CHECK(warnings.lines.size() == 1);
}

TEST_CASE("no HOME and no cache directory means no disk cache, with one warning") {
  WarningCapture warnings;
  auto c = config_from_env(env_of({}));
  CHECK(c.mode == CacheMode::Off);
  CHECK(c.dir.empty());
  config_from_env(env_of({}));
  CHECK(warnings.lines.size() == 1);
  // Asked to be off: nothing to warn about.
  CHECK(config_from_env(env_of({{"MLX_VK_CACHE", "off"}})).mode == CacheMode::Off);
  CHECK(warnings.lines.size() == 1);
}

TEST_CASE("mode names print as the environment spells them") {
  CHECK(std::string(to_string(CacheMode::Off)) == "off");
  CHECK(std::string(to_string(CacheMode::ReadOnly)) == "readonly");
  CHECK(std::string(to_string(CacheMode::ReadWrite)) == "readwrite");
}
