// Kernel statistics of this process: where each kernel came from (memory, disk, compiler),
// what compiling cost, and what the disk cache holds. Plain types only, so a program can
// include this header without the Vulkan headers. MLX_VK_STATS=1 prints them at exit.
#pragma once

#include <cstdint>
#include <string>

namespace mlx::core::vulkan {

struct KernelStats {
  // Lookups by outcome. A kernel is a memory miss once per process; that miss is then a
  // disk hit or a compile (or a failure, e.g. a key the device cannot run).
  // Library lookups served from memory. Launches served by the launch memo (a repeated
  // exact geometry) make no lookup and are not counted.
  uint64_t memory_hits = 0;
  uint64_t disk_hits = 0;
  uint64_t compiles = 0;
  uint64_t failures = 0;

  // Time spent on compiles: glslang, the SPIR-V optimizer, vkCreateComputePipelines.
  double glslang_ms = 0;
  double optimize_ms = 0;
  double compile_pipeline_ms = 0;
  // Time spent on disk hits: reading and validating the entry, and creating the pipeline
  // (cheap where the driver honours the persisted VkPipelineCache).
  double disk_load_ms = 0;
  double disk_pipeline_ms = 0;

  // The disk cache ("off" when disabled; dir is empty then).
  std::string cache_mode;
  std::string cache_dir;
  uint64_t disk_misses = 0;  // includes bad entries
  uint64_t bad_entries = 0;  // corrupt, truncated, foreign: each a miss, replaced
  uint64_t stores = 0;
  uint64_t store_failures = 0;
  uint64_t evictions = 0;
  uint64_t pipeline_cache_loads = 0;
  uint64_t pipeline_cache_stores = 0;
  // Measured when kernel_stats() is called: the whole cache root, every device.
  uint64_t bytes_on_disk = 0;
  uint64_t kernel_files = 0;
};

// A snapshot. Never throws and never creates the device: before the first kernel the
// counters are zero; after the device's teardown they keep their final values.
KernelStats kernel_stats();

// The statistics as lines of text ("memory hits: 12", ...), as MLX_VK_STATS=1 prints them.
std::string format_kernel_stats(const KernelStats& stats);

}  // namespace mlx::core::vulkan
