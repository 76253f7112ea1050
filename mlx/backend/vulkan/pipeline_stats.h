// What the driver's compiler made of each kernel (registers, shared memory, spills, ...),
// from VK_KHR_pipeline_executable_properties. Off by default; MLX_VK_PIPELINE_STATS=1
// (read once) or set_pipeline_stats(true) makes pipelines created afterwards capture their
// statistics, which are kept per kernel key and printed to stderr, one line per kernel:
//   [vulkan] pipeline stats <key>: <name>=<value>, <name>=<value>, ...
// Devices without the extension (or its pipelineExecutableInfo feature) report nothing.
// Plain types only, so a program can include this header without the Vulkan headers.
#pragma once

#include <string>
#include <vector>

namespace mlx::core::vulkan {

class Device;
struct Kernel;

struct PipelineStat {
  std::string name;   // as the driver names it, e.g. "Register Count"
  std::string value;  // the number as text; a bool32 is "true" or "false"
};

// The statistics captured for a kernel (Kernel::key.canonical()); empty when it was built
// without capture, on a device without the extension, or not built at all.
std::vector<PipelineStat> pipeline_stats(const std::string& kernel_key);
bool pipeline_stats_enabled();
// Turns capture on or off for pipelines created from now on (for tests and tools).
void set_pipeline_stats(bool on);

// For the kernel library: whether a pipeline created now should capture statistics, and
// reading (and printing) them once a capturing pipeline exists.
bool pipeline_stats_active(const Device& d);
void capture_pipeline_stats(const Device& d, const Kernel& k);

}  // namespace mlx::core::vulkan
