// kernel_hash: stable for the same kernel, different when anything that shapes the binary
// changes.
#include <doctest/doctest.h>

#include <set>

#include "codegen/codegen.h"

using namespace mlx::core::vulkan::codegen;

namespace {

DeviceCaps caps(const std::string& fingerprint = "10de:2330:555.42:uuid:NVIDIA") {
  DeviceCaps c;
  c.storage_8bit = c.storage_16bit = c.shader_int64 = true;
  c.fingerprint = fingerprint;
  return c;
}

KernelKey add_key(const std::string& dtype = "f32") {
  return {"binary",
          {{"op", "Add"},
           {"in", dtype + "." + dtype},
           {"out", dtype},
           {"layout", "cc"},
           {"idx", "32"}}};
}

}  // namespace

TEST_CASE("kernel_hash is stable for the same key, source, device and level") {
  KernelKey k = add_key();
  uint64_t h1 = kernel_hash(k, render(k, caps()), caps(), 0);
  uint64_t h2 = kernel_hash(KernelKey::parse(k.canonical()), render(k, caps()), caps(), 0);
  CHECK(h1 == h2);
  CHECK(h1 != 0);
}

TEST_CASE("kernel_hash changes with the key, template, defines, device and optimizer level") {
  KernelKey k = add_key();
  KernelSource src = render(k, caps());
  uint64_t base = kernel_hash(k, src, caps(), 0);
  std::set<uint64_t> seen{base};
  auto distinct = [&](uint64_t h) { return seen.insert(h).second; };

  // Another key (even one rendering identical text would differ by its canonical form).
  KernelKey other = add_key("i32");
  CHECK(distinct(kernel_hash(other, render(other, caps()), caps(), 0)));
  KernelKey renamed = k;
  renamed.params["op"] = "Subtract";
  CHECK(distinct(kernel_hash(renamed, src, caps(), 0)));

  // Template text (its hash and its text each count).
  KernelSource t = src;
  t.template_hash ^= 1;
  CHECK(distinct(kernel_hash(k, t, caps(), 0)));
  t = src;
  t.glsl += "\n// edited\n";
  CHECK(distinct(kernel_hash(k, t, caps(), 0)));

  // Defines.
  KernelSource d = src;
  d.defines.push_back("EXTRA 1");
  CHECK(distinct(kernel_hash(k, d, caps(), 0)));
  d = src;
  d.defines.back() += " ";
  CHECK(distinct(kernel_hash(k, d, caps(), 0)));

  // Specialization constants (workgroup size).
  KernelSource s = src;
  s.spec_constants[0] = 64;
  CHECK(distinct(kernel_hash(k, s, caps(), 0)));

  // Device fingerprint and optimizer level.
  CHECK(distinct(kernel_hash(k, src, caps("1002:744c:2.0.279:uuid:AMD"), 0)));
  CHECK(distinct(kernel_hash(k, src, caps(""), 0)));
  CHECK(distinct(kernel_hash(k, src, caps(), 1)));
  CHECK(distinct(kernel_hash(k, src, caps(), 2)));

  // Capabilities outside the fingerprint do not change the identity by themselves; the
  // runtime puts everything that matters into the fingerprint.
  DeviceCaps same = caps();
  same.subgroup_size = 64;
  CHECK(kernel_hash(k, src, same, 0) == base);
}

TEST_CASE("compiler_version names glslang and SPIRV-Tools") {
  std::string v = compiler_version();
  CHECK(v.find("glslang") != std::string::npos);
  CHECK(v.find("SPIRV-Tools") != std::string::npos);
}
