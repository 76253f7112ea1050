// One cached kernel: its SPIR-V and the metadata a person needs to understand it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mlx::core::vulkan::cache {

struct KernelEntry {
  uint64_t hash = 0;        // codegen::kernel_hash: the lookup key and the file name
  std::string key;          // canonical KernelKey text, e.g. "binary:in=f32,layout=vv,op=Add"
  std::string fingerprint;  // the device fingerprint; filled by load/list, ignored by store
  std::string template_name;
  uint64_t template_hash = 0;
  std::vector<std::string> defines;  // injected "NAME VALUE" lines
  std::string glsl;                  // the rendered source; may be empty to save space
  std::string compiler_version;
  int32_t optimizer_level = 0;
  double glslang_ms = 0;
  double optimize_ms = 0;
  double pipeline_ms = 0;    // vkCreateComputePipelines on the device that stored it
  int64_t created_ms = 0;    // Unix time in ms; store() fills it when 0
  int64_t last_used_ms = 0;  // from the file's mtime (see docs/cache-format.md); not stored
  std::vector<uint32_t> spirv;
};

}  // namespace mlx::core::vulkan::cache
