// Per-kernel GPU time from Vulkan timestamp queries (MLX_VK_PROFILE=1, off by default).
//
// When on, every dispatch is bracketed by two timestamps: TOP_OF_PIPE before it and
// BOTTOM_OF_PIPE after it. The encoder puts a barrier between dependent dispatches, so for
// those end - start is the kernel's GPU time (a driver may also count the wait at that
// barrier). Dispatches with no barrier between them may overlap, and so may their
// intervals: the sum can exceed the batch's time. Times are in timestampPeriod units
// converted to nanoseconds, masked to the queue's timestampValidBits.
// Fills, copies and uploads are not timed. Results are read when a batch's fence has
// signalled, so a kernel shows up here once its batch completed (after synchronize).
// Plain types only, so a program can include this header without the Vulkan headers.
// With MLX_VK_PROFILE=1 the report is printed to stderr at process exit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mlx::core::vulkan {

class Device;

// On when MLX_VK_PROFILE=1 (read once) or after set_profiling(true), unless the device
// cannot time compute work (it says so once on stderr and stays off).
bool profiling_enabled();
// Turns profiling on or off for command buffers begun from now on (for tests and tools).
void set_profiling(bool on);

// Batch timing (MLX_VK_PROFILE=batch, or set_batch_profiling(true)): two timestamps per
// command buffer, at its start and its end, and none around dispatches. Each batch is then
// one interval keyed "(batch)", so gpu_busy_us() is the time the GPU spent inside submitted
// work (barrier drains included) without the per-dispatch timestamps' own cost, and
// gpu_gaps() the time it waited between submissions: for the host, or for a submission to
// start. Per-kernel profiling wins where both are on.
bool batch_profiling_enabled();
void set_batch_profiling(bool on);

struct KernelTime {
  std::string key;  // Kernel::key.canonical()
  uint64_t calls = 0;
  double total_us = 0, min_us = 0, max_us = 0;
};

// Every timed kernel so far, by total time, descending.
std::vector<KernelTime> kernel_times();
// The length of the union of every timed dispatch interval since the last reset: the time
// the GPU spent on timed kernels, each moment counted once. For independent ops whose
// intervals overlap this is the honest "GPU time" (kernel totals count the overlap twice).
double gpu_busy_us();
// The idle time between those busy runs since the last reset: dispatch and submission gaps
// (the time the GPU waits for the host, for a barrier's drain, or between command buffers).
struct GpuGaps {
  uint64_t count = 0;
  double total_us = 0, max_us = 0;
  double span_us = 0;  // first timed start to last timed end
};
GpuGaps gpu_gaps();
void reset_kernel_times();
// kernel_times() as a markdown table, then the gaps.
std::string profile_report();

// For the command encoder: whether a command buffer begun now gets timestamps (checks the
// device's support once), and one timed dispatch's raw timestamps.
bool profiling_active(Device& d);
bool batch_profiling_active(Device& d);
void add_kernel_ticks(const std::string& key, uint64_t start, uint64_t end);

}  // namespace mlx::core::vulkan
