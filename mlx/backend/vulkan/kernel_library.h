// Kernel key -> compute pipeline, in memory, thread-safe. The first request for a key
// renders, compiles and builds the pipeline exactly once, even when several threads ask at
// the same time; everyone else waits for that one build.
//
// Miss path (one function, so the disk cache can slot in ahead of the compiler):
//   key -> codegen::render -> spirv_for(key, source) -> vkCreateComputePipelines
// with one VkPipelineCache for the process.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "codegen/codegen.h"
#include "mlx/backend/vulkan/device.h"

namespace mlx::core::vulkan {

struct Kernel {
  codegen::KernelKey key;
  codegen::KernelSource source;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;        // owned by the library (shared)
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE; // owned by the library (shared)
  uint32_t num_buffers = 0;
  uint32_t push_constant_bytes = 0;
  uint64_t hash = 0;
  size_t spirv_bytes = 0;
  double glslang_ms = 0, optimize_ms = 0, pipeline_ms = 0;
};

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
  // Pipelines built so far (a cache hit does not count).
  size_t builds() const { return builds_.load(); }
  VkPipelineCache pipeline_cache() const { return pipeline_cache_; }

 private:
  std::shared_ptr<Kernel> build(const codegen::KernelKey& key);
  // The one place that turns a rendered kernel into SPIR-V: a disk cache lookup goes here.
  codegen::SpirvModule spirv_for(const codegen::KernelKey& key,
                                 const codegen::KernelSource& source);
  VkDescriptorSetLayout set_layout_for(uint32_t num_buffers);
  VkPipelineLayout pipeline_layout_for(uint32_t num_buffers, uint32_t push_bytes);

  Device& dev_;
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

} // namespace mlx::core::vulkan
