// Kernel key -> compute pipeline, in memory, thread-safe. The first request for a key
// renders, compiles and builds the pipeline exactly once, even when several threads ask at
// the same time; everyone else waits for that one build.
//
// Lookup order: memory -> disk (validated, kernel_cache.h) -> compile.
//   key -> codegen::render -> kernel hash -> spirv_for: the disk entry's SPIR-V, or
//   glslang (+ optimizer) -> vkCreateComputePipelines with the process's VkPipelineCache
//   (seeded from disk, saved at teardown and at a bounded interval) -> a compiled kernel is
//   stored on disk.
// Rendering is not skipped on a disk hit: the hash covers the rendered source, which is
// what makes a stale entry (a changed template, define or compiler) a miss. It is cheap
// next to glslang (template expansions are cached).
#pragma once

#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/codegen.h"
#include "mlx/backend/vulkan/device.h"

namespace mlx::core::vulkan {

// Where a kernel came from when it was built (a memory hit returns the built one).
enum class KernelOrigin { Compiled, Disk };

struct Kernel {
  codegen::KernelKey key;
  codegen::KernelSource source;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;           // owned by the library (shared)
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;  // owned by the library (shared)
  uint32_t num_buffers = 0;
  uint32_t push_constant_bytes = 0;
  uint64_t hash = 0;
  size_t spirv_bytes = 0;
  double render_ms = 0, glslang_ms = 0, optimize_ms = 0, pipeline_ms = 0;
  KernelOrigin origin = KernelOrigin::Compiled;
  double disk_load_ms = 0;  // reading + validating the entry (disk hits)
};

class KernelCache;

class KernelLibrary {
 public:
  explicit KernelLibrary(Device& d);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  // The pipeline for a key; builds it on first use. Throws what render/compile throw
  // (std::invalid_argument for a bad key, std::runtime_error naming the key otherwise).
  const Kernel& get(const codegen::KernelKey& key);

  size_t size();
  // Pipelines built so far (a memory hit does not count; a disk hit does).
  size_t builds() const {
    return builds_.load();
  }
  VkPipelineCache pipeline_cache() const {
    return pipeline_cache_;
  }
  // Writes the pipeline-cache data now (merged with what is on disk) when it changed;
  // teardown does the same. Returns true when it wrote.
  bool save_pipeline_cache();

 private:
  std::shared_ptr<Kernel> build(const codegen::KernelKey& key);
  // The one place that turns a rendered kernel into SPIR-V: the disk entry's on a hit
  // (k.origin = Disk), else a fresh compile. Fills k's hash, sizes and times.
  codegen::SpirvModule spirv_for(Kernel& k, bool allow_disk);
  VkPipeline create_pipeline(const Kernel& k, const std::vector<uint32_t>& words,
                             VkPipelineCreateFlags flags, VkResult& result);
  void store(const Kernel& k, const codegen::SpirvModule& spirv);
  VkDescriptorSetLayout set_layout_for(uint32_t num_buffers);
  VkPipelineLayout pipeline_layout_for(uint32_t num_buffers, uint32_t push_bytes);

  Device& dev_;
  std::unique_ptr<KernelCache> cache_;
  VkPipelineCache pipeline_cache_ = VK_NULL_HANDLE;
  std::mutex mtx_;
  std::unordered_map<std::string, std::shared_future<std::shared_ptr<Kernel>>> kernels_;
  std::mutex layout_mtx_;
  std::unordered_map<uint32_t, VkDescriptorSetLayout> set_layouts_;
  std::unordered_map<uint64_t, VkPipelineLayout> pipeline_layouts_;
  std::atomic<size_t> builds_{0};
};

// The process-wide library for the device (created on first use).
KernelLibrary& kernel_library();

}  // namespace mlx::core::vulkan
