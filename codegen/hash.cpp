// kernel_hash: the cache identity of a compiled kernel, hashed with the cache's streaming
// xxHash64 (cache/hash.h), the one hasher of the project.
#include <string>

#include "cache/hash.h"
#include "codegen/codegen.h"

namespace mlx::core::vulkan::codegen {

uint64_t kernel_hash(const KernelKey& key, const KernelSource& source, const DeviceCaps& caps,
                     int optimizer_level) {
  cache::Hasher h;
  h.add(std::string("mlxvk-kernel"));
  h.add(key.canonical());
  h.add(source.template_name);
  h.add(source.template_hash);
  h.add(static_cast<uint64_t>(source.defines.size()));
  for (const auto& d : source.defines) {
    h.add(d);
  }
  // The full text as well: it also covers how the engine assembles a kernel around the
  // template (header lines, include markers), which the fields above do not.
  h.add(source.glsl);
  h.add(static_cast<uint64_t>(source.spec_constants.size()));
  for (const auto& [id, value] : source.spec_constants) {
    h.add((static_cast<uint64_t>(id) << 32) | value);
  }
  h.add(compiler_version());
  h.add(static_cast<uint64_t>(optimizer_level));
  h.add(caps.fingerprint);
  if (source.coop_khr) {  // the module is rewritten after compilation (codegen/coop_rewrite.h)
    h.add(std::string(source.coop_khr_bf16 ? "coop_khr_bf16" : "coop_khr"));
  }
  return h.digest();
}

}  // namespace mlx::core::vulkan::codegen
