#include "mlx/backend/vulkan/loader.h"

#include <dlfcn.h>

#include <mutex>

namespace mlx::core::vulkan {

#define MLX_VK_DEFINE(name) PFN_##name name = nullptr;
MLX_VK_GLOBAL_FUNCTIONS(MLX_VK_DEFINE)
MLX_VK_INSTANCE_FUNCTIONS(MLX_VK_DEFINE)
MLX_VK_OPTIONAL_INSTANCE_FUNCTIONS(MLX_VK_DEFINE)
MLX_VK_DEVICE_FUNCTIONS(MLX_VK_DEFINE)
MLX_VK_OPTIONAL_DEVICE_FUNCTIONS(MLX_VK_DEFINE)
#undef MLX_VK_DEFINE

namespace {
PFN_vkGetInstanceProcAddr get_instance_proc = nullptr;
}

bool load_vulkan(std::string& error) {
  static std::once_flag once;
  static std::string load_error;
  std::call_once(once, [] {
    // The handle is never closed: function pointers from it live for the whole process.
    void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      lib = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
    }
    if (!lib) {
      load_error = "the Vulkan loader (libvulkan.so.1) was not found";
      return;
    }
    get_instance_proc =
        reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (!get_instance_proc) {
      load_error = "libvulkan.so.1 has no vkGetInstanceProcAddr";
      return;
    }
#define MLX_VK_LOAD(name)                                                        \
  name = reinterpret_cast<PFN_##name>(get_instance_proc(VK_NULL_HANDLE, #name)); \
  if (!name) {                                                                   \
    load_error = "the Vulkan loader lacks " #name " (it predates Vulkan 1.1)";   \
    return;                                                                      \
  }
    MLX_VK_GLOBAL_FUNCTIONS(MLX_VK_LOAD)
#undef MLX_VK_LOAD
  });
  error = load_error;
  return load_error.empty();
}

bool load_instance_functions(VkInstance instance, std::string& error) {
#define MLX_VK_LOAD(name)                                                  \
  name = reinterpret_cast<PFN_##name>(get_instance_proc(instance, #name)); \
  if (!name) {                                                             \
    error = "the Vulkan instance lacks " #name;                            \
    return false;                                                          \
  }
  MLX_VK_INSTANCE_FUNCTIONS(MLX_VK_LOAD)
#undef MLX_VK_LOAD
#define MLX_VK_LOAD_OPTIONAL(name) \
  name = reinterpret_cast<PFN_##name>(get_instance_proc(instance, #name));
  MLX_VK_OPTIONAL_INSTANCE_FUNCTIONS(MLX_VK_LOAD_OPTIONAL)
#undef MLX_VK_LOAD_OPTIONAL
  return true;
}

bool load_device_functions(VkDevice device, std::string& error) {
#define MLX_VK_LOAD(name)                                                  \
  name = reinterpret_cast<PFN_##name>(vkGetDeviceProcAddr(device, #name)); \
  if (!name) {                                                             \
    error = "the Vulkan device lacks " #name;                              \
    return false;                                                          \
  }
  MLX_VK_DEVICE_FUNCTIONS(MLX_VK_LOAD)
#undef MLX_VK_LOAD
#define MLX_VK_LOAD_OPTIONAL(name) \
  name = reinterpret_cast<PFN_##name>(vkGetDeviceProcAddr(device, #name));
  MLX_VK_OPTIONAL_DEVICE_FUNCTIONS(MLX_VK_LOAD_OPTIONAL)
#undef MLX_VK_LOAD_OPTIONAL
  return true;
}

}  // namespace mlx::core::vulkan
