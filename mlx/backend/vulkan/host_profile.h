// Host time of the GPU eval loop per primitive (MLX_VK_HOST_PROFILE=1, off by default).
//
// A decode step of a small model is bound by the host as much as by the GPU: this says
// where the recording half of it goes, on the driver of the machine it runs on (a profiler
// on lavapipe mostly sees lavapipe). When on, gpu::eval times each op from its arrival to
// its end_op: the cross-stream check, the primitive's eval_gpu (planning, binding,
// recording) and the encoder's bookkeeping. The graph walk around it is not counted, so the
// sum here against the eval's wall time shows what the walk costs. Rows in parentheses are
// parts of the recording, timed where they happen and not added to the total:
// "(encoder dispatch)" is CommandEncoder::dispatch (the driver's recording of a dispatch
// included), "(commit)" the encoder's submission of a batch, inside an op that filled the
// batch or after the loop, and its parts "(commit: end and submit)" (vkEndCommandBuffer,
// vkQueueSubmit) and "(commit: retire finished batches)" (releasing what completed
// batches held).
// Plain types only, so a program can include this header without the Vulkan headers.
// With MLX_VK_HOST_PROFILE=1 the report is printed to stderr at process exit.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace mlx::core::vulkan {

// On when MLX_VK_HOST_PROFILE=1 (read once) or after set_host_profiling(true).
bool host_profiling_enabled();
void set_host_profiling(bool on);

struct HostTime {
  std::string primitive;  // Primitive::name()
  uint64_t calls = 0;
  double total_us = 0;
};

// Adds one op's host time (the eval loop calls this). `primitive` must outlive the
// process's profile (a string literal, as Primitive::name() returns).
void add_host_time(const char* primitive, uint64_t ns);

// Adds its lifetime to `name` when host profiling is on (one relaxed load when off).
class HostTimer {
 public:
  explicit HostTimer(const char* name) : name_(host_profiling_enabled() ? name : nullptr) {
    if (name_ != nullptr) {
      start_ = std::chrono::steady_clock::now();
    }
  }
  ~HostTimer() {
    if (name_ != nullptr) {
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now() - start_);
      add_host_time(name_, static_cast<uint64_t>(ns.count()));
    }
  }
  HostTimer(const HostTimer&) = delete;
  HostTimer& operator=(const HostTimer&) = delete;

 private:
  const char* name_;
  std::chrono::steady_clock::time_point start_;
};
// Every timed primitive so far, by total time, descending.
std::vector<HostTime> host_times();
void reset_host_times();
// host_times() as a markdown table with each primitive's mean, then the total.
std::string host_profile_report();

}  // namespace mlx::core::vulkan
