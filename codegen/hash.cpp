// kernel_hash: the cache identity of a compiled kernel.
#include <string>

// GCC 12 reports -Warray-bounds false positives inside the inlined xxHash update loop.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#define XXH_INLINE_ALL
#include <xxhash.h>
#pragma GCC diagnostic pop

#include "codegen/codegen.h"

namespace mlx::core::vulkan::codegen {

namespace {

// Length-prefixed fields, so no two different field lists hash the same byte stream.
class Hasher {
 public:
  Hasher() {
    XXH64_reset(&state_, 0);
  }
  void add(const std::string& s) {
    add(static_cast<uint64_t>(s.size()));
    XXH64_update(&state_, s.data(), s.size());
  }
  void add(uint64_t v) {
    XXH64_update(&state_, &v, sizeof(v));
  }
  uint64_t digest() {
    return XXH64_digest(&state_);
  }

 private:
  XXH64_state_t state_;
};

}  // namespace

uint64_t kernel_hash(const KernelKey& key, const KernelSource& source, const DeviceCaps& caps,
                     int optimizer_level) {
  Hasher h;
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
  return h.digest();
}

}  // namespace mlx::core::vulkan::codegen
