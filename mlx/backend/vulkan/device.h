// The Vulkan instance, the chosen physical device, its logical device and compute queue,
// and what the device can do (probed once, never assumed).
//
// Selection: discrete > integrated > virtual > CPU (lavapipe), ties in enumeration order;
// MLX_VK_DEVICE=<vulkan index> overrides. No loader, no ICD or no Vulkan 1.2 device means
// "not available": device_or_null() returns nullptr and nothing is printed. An
// MLX_VK_DEVICE that names no usable device also means "not available", but is a mistake
// worth a warning: one line on stderr when the device is first looked for.
#pragma once

#include "mlx/backend/vulkan/loader.h"

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/codegen.h"
#include "mlx/backend/gpu/device_info.h"

namespace mlx::core::vulkan {

using DeviceInfo = std::unordered_map<std::string, gpu::DeviceInfoValue>;

class Device {
 public:
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device();

  VkInstance instance() const {
    return instance_;
  }
  VkPhysicalDevice physical_device() const {
    return physical_;
  }
  VkDevice handle() const {
    return device_;
  }
  VkQueue queue() const {
    return queue_;
  }
  uint32_t queue_family() const {
    return queue_family_;
  }
  // vkQueueSubmit is externally synchronized: every submission takes this lock.
  std::mutex& queue_mutex() {
    return queue_mtx_;
  }

  const codegen::DeviceCaps& caps() const {
    return caps_;
  }
  // After a cooperative-matrix kernel failed to build (get_kernel_or_drop_coop): the
  // planners stop choosing them. The extensions stay enabled.
  void disable_cooperative_matrices() {
    caps_.cooperative_matrix = false;
    caps_.cooperative_matrix_khr = false;
    caps_.cooperative_matrix_bf16 = false;
  }
  const VkPhysicalDeviceLimits& limits() const {
    return properties_.limits;
  }
  const VkPhysicalDeviceMemoryProperties& memory_properties() const {
    return memory_;
  }
  VkDeviceSize max_allocation_size() const {
    return max_allocation_size_;
  }
  bool has_push_descriptors() const {
    return push_descriptors_;
  }
  bool is_cpu() const {
    return properties_.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
  }
  bool is_discrete() const {
    return properties_.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  }
  const std::string& name() const {
    return name_;
  }
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_fn() const {
    return push_descriptor_fn_;
  }
  // VK_KHR_pipeline_executable_properties with pipelineExecutableInfo: the driver can
  // report what its compiler made of a pipeline (pipeline_stats.h).
  bool has_pipeline_executable_info() const {
    return pipeline_executable_info_;
  }

  // Subsystems (streams, kernels, memory) register their cleanup when they are created;
  // the device runs them in reverse order before it destroys itself, so no Vulkan object
  // outlives the VkDevice it belongs to.
  void on_teardown(std::function<void()> fn);
  bool torn_down() const {
    return torn_down_.load();
  }

  // Validation (MLX_VK_VALIDATION=1): number of error messages the layer has reported.
  size_t validation_errors() const {
    return validation_errors_.load();
  }
  bool validation_enabled() const {
    return validation_enabled_;
  }
  void note_validation_error() {
    validation_errors_++;
  }
  // Warnings too: a clean run has none, and the stress test holds it to that.
  size_t validation_warnings() const {
    return validation_warnings_.load();
  }
  void note_validation_warning() {
    validation_warnings_++;
  }

  // Where arrays live. `array_memory_type` is device-local where the device has such
  // memory; it is mapped for host access when `arrays_mapped` (lavapipe, iGPUs, resizable
  // BAR), else host access stages through `staging_memory_type` (host-visible, coherent).
  // MLX_VK_STAGING=1 forces the staged path (to test it), =0 forbids it.
  uint32_t array_memory_type() const {
    return array_type_;
  }
  bool arrays_mapped() const {
    return arrays_mapped_;
  }
  uint32_t staging_memory_type() const {
    return staging_type_;
  }
  // On the staged path with MLX_VK_SMALL_MAPPED=1, a device-local type the host can map
  // (the BAR window), where the smallest host-made arrays live mapped
  // (VulkanAllocator::malloc_host_written) so that they need no upload; else -1.
  int small_mapped_memory_type() const {
    return small_mapped_type_;
  }

 private:
  Device() = default;
  friend struct DeviceFactory;

  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  std::mutex queue_mtx_;
  VkPhysicalDeviceProperties properties_{};
  VkPhysicalDeviceMemoryProperties memory_{};
  codegen::DeviceCaps caps_;
  bool push_descriptors_ = false;
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_fn_ = nullptr;
  bool pipeline_executable_info_ = false;
  std::string name_;
  VkDeviceSize max_allocation_size_ = 0;
  uint32_t array_type_ = 0;
  bool arrays_mapped_ = true;
  uint32_t staging_type_ = 0;
  int small_mapped_type_ = -1;
  bool validation_enabled_ = false;
  std::atomic<size_t> validation_errors_{0};
  std::atomic<size_t> validation_warnings_{0};
  std::mutex teardown_mtx_;
  std::vector<std::function<void()>> teardown_;
  std::atomic<bool> torn_down_{false};
};

// The process-wide device, created on first use; nullptr when none is usable, and again
// once it has been destroyed at exit (late frees from static arrays then do nothing).
Device* device_or_null();
// The device; throws std::runtime_error naming `who` when there is none.
Device& device(const char* who = "vulkan");
// Why no device is available ("" when one is).
std::string unavailable_reason();
// The reason and what to do about it, for errors raised when the GPU is asked for: a bad
// MLX_VK_DEVICE names the usable indices; anything else suggests a Vulkan driver.
std::string unavailable_remedy();

// Every usable physical device: index 0 is the one in use, then the rest in Vulkan
// enumeration order. Empty when no device is usable.
const std::vector<DeviceInfo>& all_device_info();

}  // namespace mlx::core::vulkan
