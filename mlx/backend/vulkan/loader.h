// Vulkan entry points, loaded at run time from libvulkan.so.1 with dlopen.
//
// Linking the loader directly would make a machine without it unable to even start a
// CPU-only program; loading it at run time lets gpu::is_available() say "no" instead.
// Every backend file includes this header (never <vulkan/vulkan.h> directly) and calls
// Vulkan through these pointers, which live in namespace mlx::core::vulkan.
#pragma once

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include "mlx/backend/vulkan/khr_coopmat.h"

#include <string>

// Functions that need no instance.
#define MLX_VK_GLOBAL_FUNCTIONS(X)      \
  X(vkCreateInstance)                   \
  X(vkEnumerateInstanceVersion)         \
  X(vkEnumerateInstanceLayerProperties) \
  X(vkEnumerateInstanceExtensionProperties)

#define MLX_VK_INSTANCE_FUNCTIONS(X)          \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures)              \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)

// Instance functions of extensions that may be missing (null then).
#define MLX_VK_OPTIONAL_INSTANCE_FUNCTIONS(X)         \
  X(vkCreateDebugUtilsMessengerEXT)                   \
  X(vkDestroyDebugUtilsMessengerEXT)                  \
  X(vkGetPhysicalDeviceCooperativeMatrixPropertiesNV) \
  X(vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)

#define MLX_VK_DEVICE_FUNCTIONS(X) \
  X(vkDestroyDevice)               \
  X(vkGetDeviceQueue)              \
  X(vkDeviceWaitIdle)              \
  X(vkQueueSubmit)                 \
  X(vkQueueWaitIdle)               \
  X(vkAllocateMemory)              \
  X(vkFreeMemory)                  \
  X(vkMapMemory)                   \
  X(vkUnmapMemory)                 \
  X(vkCreateBuffer)                \
  X(vkDestroyBuffer)               \
  X(vkGetBufferMemoryRequirements) \
  X(vkBindBufferMemory)            \
  X(vkCreateCommandPool)           \
  X(vkDestroyCommandPool)          \
  X(vkAllocateCommandBuffers)      \
  X(vkFreeCommandBuffers)          \
  X(vkBeginCommandBuffer)          \
  X(vkEndCommandBuffer)            \
  X(vkResetCommandBuffer)          \
  X(vkCreateFence)                 \
  X(vkDestroyFence)                \
  X(vkResetFences)                 \
  X(vkWaitForFences)               \
  X(vkGetFenceStatus)              \
  X(vkCmdPipelineBarrier)          \
  X(vkCmdBindPipeline)             \
  X(vkCmdBindDescriptorSets)       \
  X(vkCmdPushConstants)            \
  X(vkCmdDispatch)                 \
  X(vkCmdCopyBuffer)               \
  X(vkCmdFillBuffer)               \
  X(vkCmdUpdateBuffer)             \
  X(vkCreateDescriptorSetLayout)   \
  X(vkDestroyDescriptorSetLayout)  \
  X(vkCreatePipelineLayout)        \
  X(vkDestroyPipelineLayout)       \
  X(vkCreateShaderModule)          \
  X(vkDestroyShaderModule)         \
  X(vkCreateComputePipelines)      \
  X(vkDestroyPipeline)             \
  X(vkCreatePipelineCache)         \
  X(vkDestroyPipelineCache)        \
  X(vkGetPipelineCacheData)        \
  X(vkCreateDescriptorPool)        \
  X(vkDestroyDescriptorPool)       \
  X(vkResetDescriptorPool)         \
  X(vkAllocateDescriptorSets)      \
  X(vkUpdateDescriptorSets)        \
  X(vkCreateQueryPool)             \
  X(vkDestroyQueryPool)            \
  X(vkCmdResetQueryPool)           \
  X(vkCmdWriteTimestamp)           \
  X(vkGetQueryPoolResults)

#define MLX_VK_OPTIONAL_DEVICE_FUNCTIONS(X) \
  X(vkCmdPushDescriptorSetKHR)              \
  X(vkGetPipelineExecutablePropertiesKHR)   \
  X(vkGetPipelineExecutableStatisticsKHR)

namespace mlx::core::vulkan {

#define MLX_VK_DECLARE(name) extern PFN_##name name;
MLX_VK_GLOBAL_FUNCTIONS(MLX_VK_DECLARE)
MLX_VK_INSTANCE_FUNCTIONS(MLX_VK_DECLARE)
MLX_VK_OPTIONAL_INSTANCE_FUNCTIONS(MLX_VK_DECLARE)
MLX_VK_DEVICE_FUNCTIONS(MLX_VK_DECLARE)
MLX_VK_OPTIONAL_DEVICE_FUNCTIONS(MLX_VK_DECLARE)
#undef MLX_VK_DECLARE

// Opens the loader and resolves the global functions. Returns false (with `error` set)
// when there is no loader; never throws. Safe to call more than once.
bool load_vulkan(std::string& error);
// Resolves instance (and optional extension) functions; false if a required one is missing.
bool load_instance_functions(VkInstance instance, std::string& error);
// Resolves device functions through vkGetDeviceProcAddr; false if a required one is missing.
bool load_device_functions(VkDevice device, std::string& error);

}  // namespace mlx::core::vulkan
