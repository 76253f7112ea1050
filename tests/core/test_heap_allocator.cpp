// The heap allocator the build chose (cmake/heap_allocator.cmake) is the one the process
// runs with: a linker that drops an unreferenced library would silently bring back glibc's
// malloc and its cost (docs/performance.md, "The heap allocator").
#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include <doctest/doctest.h>

#include "mlx/mlx.h"

namespace mx = mlx::core;

TEST_CASE("heap allocator: malloc comes from the allocator the build linked") {
  void* symbol = dlsym(RTLD_DEFAULT, "malloc");
  REQUIRE(symbol != nullptr);
  Dl_info info{};
  REQUIRE(dladdr(symbol, &info) != 0);
  REQUIRE(info.dli_fname != nullptr);
  const std::string library = info.dli_fname;
#if MLX_TEST_EXPECT_JEMALLOC
  CHECK_MESSAGE(library.find("jemalloc") != std::string::npos, "malloc resolves to " << library);
  // jemalloc's control interface answers, so it is initialized and serving this process.
  using Mallctl = int (*)(const char*, void*, size_t*, void*, size_t);
  auto mallctl = reinterpret_cast<Mallctl>(dlsym(RTLD_DEFAULT, "mallctl"));
  REQUIRE(reinterpret_cast<void*>(mallctl) != nullptr);
  const char* version = nullptr;
  size_t length = sizeof(version);
  REQUIRE(mallctl("version", &version, &length, nullptr, 0) == 0);
  CHECK(std::string(version).rfind("5.", 0) == 0);
#else
  CHECK_MESSAGE(library.find("jemalloc") == std::string::npos, "malloc resolves to " << library);
#endif
  // Graph nodes and host arrays go through it and come back intact.
  auto a = mx::arange(0, 1000, 1, mx::float32, mx::Device::cpu);
  auto b = mx::sum(mx::multiply(a, a), mx::Device::cpu);
  CHECK(b.item<float>() == doctest::Approx(332833500.0f));
}
