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
//
// Parallel first use (docs/vulkan.md): inside a `DeferredPipelines` scope (the eval loop)
// a miss renders and compiles to SPIR-V at once, so a bad key or template still throws at
// the op, but vkCreateComputePipelines (the driver's compiler, most of a cold kernel's
// time on a GPU) runs on a worker thread; the command encoder records the dispatch when
// the batch is submitted. Kernels first needed by one batch are then created together.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
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
  VkPipeline pipeline = VK_NULL_HANDLE;  // read it after pipeline_ready() or wait_pipeline()
  // Valid while and after a creation on a worker thread; its get() rethrows a failure.
  std::shared_future<void> created;
  std::atomic<bool> failed{false};           // that creation failed: get() builds the key again
  VkPipelineLayout layout = VK_NULL_HANDLE;  // owned by the library (shared)
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;  // owned by the library (shared)
  uint32_t num_buffers = 0;
  uint32_t push_constant_bytes = 0;
  uint64_t hash = 0;
  size_t spirv_bytes = 0;
  double render_ms = 0, glslang_ms = 0, optimize_ms = 0, pipeline_ms = 0;
  KernelOrigin origin = KernelOrigin::Compiled;
  double disk_load_ms = 0;  // reading + validating the entry (disk hits)

  bool pipeline_ready() const {
    return !created.valid() ||
           created.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }
  // Waits for a creation on a worker thread; throws std::runtime_error naming the key if it
  // failed.
  void wait_pipeline() const {
    if (created.valid()) {
      created.get();
    }
  }
};

// While one exists on a thread, KernelLibrary::get on that thread may return kernels whose
// pipeline is still being created (MLX_VK_PARALLEL_BUILD=0 turns this off).
class DeferredPipelines {
 public:
  DeferredPipelines();
  ~DeferredPipelines();
  DeferredPipelines(const DeferredPipelines&) = delete;
  DeferredPipelines& operator=(const DeferredPipelines&) = delete;

 private:
  bool was_;
};

// Tests: pipeline creations of kernels whose key starts with `prefix` fail (as a driver
// failure would), after `delay_ms`, until called again with "".
void fail_pipelines_for_testing(const std::string& prefix, int delay_ms = 0);

class KernelCache;

class KernelLibrary {
 public:
  explicit KernelLibrary(Device& d);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  // The pipeline for a key; builds it on first use. Throws what render/compile throw
  // (std::invalid_argument for a bad key, std::runtime_error naming the key otherwise).
  // Inside a DeferredPipelines scope the pipeline may still be in creation (see above).
  const Kernel& get(const codegen::KernelKey& key);
  // Called on the worker thread, with the error, when a deferred creation fails
  // (kernels.cpp: a cooperative-matrix kernel turns them off). Set it once, before use.
  void set_failure_hook(std::function<void(const Kernel&, const std::string&)> hook) {
    std::lock_guard lk(mtx_);
    failure_hook_ = std::move(hook);
  }

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
  std::shared_ptr<Kernel> build(const codegen::KernelKey& key, bool defer);
  // Pipeline creation and what follows it (statistics, disk store, counts); throws
  // std::runtime_error naming the key.
  void finish_build(Kernel& k, codegen::SpirvModule spirv);

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
  std::function<void(const Kernel&, const std::string&)> failure_hook_;  // under mtx_
  // Kernels whose deferred creation failed, out of the map (a later get() builds the key
  // again) but alive, since batches may still name them. Under mtx_.
  std::vector<std::shared_ptr<Kernel>> failed_;
};

// The process-wide library for the device (created on first use).
KernelLibrary& kernel_library();

}  // namespace mlx::core::vulkan
