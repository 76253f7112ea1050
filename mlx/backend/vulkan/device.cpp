#include "mlx/backend/vulkan/device.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <memory>
#include <set>
#include <sstream>

#include "mlx/backend/vulkan/coop_shapes.h"
#include "mlx/backend/vulkan/device_tuning.h"
#include "mlx/backend/vulkan/driver_facts.h"
#include "mlx/backend/vulkan/utils.h"

namespace mlx::core::vulkan {

namespace {

constexpr uint32_t required_api = VK_API_VERSION_1_2;

// Lowers `limit` to the positive integer in environment variable `name`, if it is smaller.
void lower_limit(uint32_t& limit, const char* name) {
  if (const char* text = std::getenv(name); text && *text) {
    long v = std::strtol(text, nullptr, 10);
    if (v >= 1 && static_cast<uint64_t>(v) < limit) {
      limit = static_cast<uint32_t>(v);
    }
  }
}

std::string api_string(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
         "." + std::to_string(VK_API_VERSION_PATCH(v));
}

const char* vendor_name(uint32_t id) {
  switch (id) {
    case 0x10DE:
      return "NVIDIA";
    case 0x1002:
      return "AMD";
    case 0x8086:
      return "Intel";
    case 0x13B5:
      return "ARM";
    case 0x5143:
      return "Qualcomm";
    case 0x106B:
      return "Apple";
    case 0x1010:
      return "ImgTec";
    case 0x10005:
      return "Mesa";
    default:
      return "unknown";
  }
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    default:
      return "other";
  }
}

// Lower is preferred: discrete > integrated > virtual > CPU > other.
int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return 3;
    default:
      return 4;
  }
}

std::string subgroup_ops_string(VkSubgroupFeatureFlags f) {
  std::string s;
  auto add = [&](VkSubgroupFeatureFlags bit, const char* name) {
    if (f & bit) {
      s += (s.empty() ? "" : ",");
      s += name;
    }
  };
  add(VK_SUBGROUP_FEATURE_BASIC_BIT, "basic");
  add(VK_SUBGROUP_FEATURE_VOTE_BIT, "vote");
  add(VK_SUBGROUP_FEATURE_ARITHMETIC_BIT, "arithmetic");
  add(VK_SUBGROUP_FEATURE_BALLOT_BIT, "ballot");
  add(VK_SUBGROUP_FEATURE_SHUFFLE_BIT, "shuffle");
  add(VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT, "shuffle_relative");
  add(VK_SUBGROUP_FEATURE_CLUSTERED_BIT, "clustered");
  add(VK_SUBGROUP_FEATURE_QUAD_BIT, "quad");
  return s;
}

std::string hex_bytes(const uint8_t* p, size_t n) {
  std::ostringstream os;
  for (size_t i = 0; i < n; ++i) {
    os << std::hex << std::setw(2) << std::setfill('0') << static_cast<int>(p[i]);
  }
  return os.str();
}

// Everything probed about one physical device.
struct Probe {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  uint32_t vulkan_index = 0;
  VkPhysicalDeviceProperties props{};
  VkPhysicalDeviceVulkan11Properties props11{};
  VkPhysicalDeviceVulkan12Properties props12{};
  VkPhysicalDeviceFeatures features{};
  VkPhysicalDeviceVulkan11Features features11{};
  VkPhysicalDeviceVulkan12Features features12{};
  VkPhysicalDeviceVulkan13Features features13{};
  VkPhysicalDeviceMemoryProperties memory{};
  uint32_t compute_units = 0;  // 0 where the driver does not say
  std::set<std::string> extensions;
  int queue_family = -1;
  uint64_t device_local_bytes = 0;

  bool has(const char* ext) const {
    return extensions.count(ext) > 0;
  }
  bool is_13() const {
    return props.apiVersion >= VK_API_VERSION_1_3;
  }

  void run(VkPhysicalDevice pd, uint32_t index) {
    handle = pd;
    vulkan_index = index;
    vkGetPhysicalDeviceProperties(pd, &props);
    if (props.apiVersion < required_api) {
      return;
    }
    props11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES;
    props12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES;
    props11.pNext = &props12;
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &props11, {}};
    vkGetPhysicalDeviceProperties2(pd, &p2);

    features11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    features12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    features13.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES;
    features11.pNext = &features12;
    features12.pNext = is_13() ? &features13 : nullptr;
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &features11, {}};
    vkGetPhysicalDeviceFeatures2(pd, &f2);
    features = f2.features;
    features11.pNext = nullptr;
    features12.pNext = nullptr;

    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
    std::vector<VkExtensionProperties> exts(n);
    vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, exts.data());
    for (auto& e : exts) {
      extensions.insert(e.extensionName);
    }

    compute_units = probe_compute_units(pd);

    vkGetPhysicalDeviceMemoryProperties(pd, &memory);
    for (uint32_t i = 0; i < memory.memoryHeapCount; ++i) {
      if (memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) {
        device_local_bytes = std::max<uint64_t>(device_local_bytes, memory.memoryHeaps[i].size);
      }
    }

    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> qs(nq);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qs.data());
    for (uint32_t i = 0; i < nq; ++i) {
      if (qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
        queue_family = static_cast<int>(i);
        break;
      }
    }
  }

  // Multiprocessors (NVIDIA) or compute units (AMD), from the vendor's property extension;
  // 0 elsewhere. The GEMM's tile rule counts waves with it (codegen/matmul.cpp).
  uint32_t probe_compute_units(VkPhysicalDevice pd) const {
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV nv{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV, nullptr, 0, 0};
    VkPhysicalDeviceShaderCorePropertiesAMD amd{};
    amd.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD;
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, nullptr, {}};
    if (has(VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) {
      p2.pNext = &nv;
    } else if (has(VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME)) {
      p2.pNext = &amd;
    } else {
      return 0;
    }
    vkGetPhysicalDeviceProperties2(pd, &p2);
    if (p2.pNext == &nv) {
      return nv.shaderSMCount;
    }
    return amd.shaderEngineCount * amd.shaderArraysPerEngineCount * amd.computeUnitsPerShaderArray;
  }

  bool usable() const {
    return props.apiVersion >= required_api && queue_family >= 0;
  }

  std::string fingerprint() const {
    std::ostringstream os;
    os << std::hex << props.vendorID << ":" << props.deviceID << ":" << props.driverVersion << ":"
       << hex_bytes(props.pipelineCacheUUID, VK_UUID_SIZE) << ":" << props12.driverName << "/"
       << props12.driverInfo << ":p" << std::dec << sizeof(void*) * 8;  // pointer width
    return os.str();
  }

  std::string cooperative_matrix() const {
    std::string s;
    for (const char* e :
         {"VK_KHR_cooperative_matrix", "VK_NV_cooperative_matrix", "VK_NV_cooperative_matrix2"}) {
      if (has(e)) {
        s += (s.empty() ? "" : ",");
        s += e;
      }
    }
    return s.empty() ? "none" : s;
  }

  DeviceInfo info() const {
    DeviceInfo m;
    auto flag = [](bool b) { return static_cast<size_t>(b ? 1 : 0); };
    m["device_name"] = std::string(props.deviceName);
    m["vendor"] = std::string(vendor_name(props.vendorID));
    m["vendor_id"] = static_cast<size_t>(props.vendorID);
    m["device_id"] = static_cast<size_t>(props.deviceID);
    m["device_type"] = std::string(type_name(props.deviceType));
    m["driver"] = std::string(props12.driverName) + " " + props12.driverInfo;
    m["driver_name"] = std::string(props12.driverName);
    m["driver_info"] = std::string(props12.driverInfo);
    m["driver_version"] = static_cast<size_t>(props.driverVersion);
    m["api_version"] = api_string(props.apiVersion);
    m["vulkan_index"] = static_cast<size_t>(vulkan_index);
    m["memory_size"] = static_cast<size_t>(device_local_bytes);
    m["subgroup_size"] = static_cast<size_t>(props11.subgroupSize);
    m["subgroup_operations"] = subgroup_ops_string(props11.subgroupSupportedOperations);
    m["subgroup_in_compute"] = flag(props11.subgroupSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT);
    m["shader_float16"] = flag(features12.shaderFloat16);
    m["shader_int8"] = flag(features12.shaderInt8);
    m["shader_int16"] = flag(features.shaderInt16);
    m["shader_int64"] = flag(features.shaderInt64);
    m["storage_8bit"] = flag(features12.storageBuffer8BitAccess);
    m["storage_16bit"] = flag(features11.storageBuffer16BitAccess);
    m["push_descriptors"] = flag(has(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME));
    m["integer_dot_product"] =
        flag(is_13() ? features13.shaderIntegerDotProduct
                     : has(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME));
    m["cooperative_matrix"] = cooperative_matrix();
    if (has(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME)) {
      m["cooperative_matrix_khr_shapes"] = khr_coop_shape_list(handle);
    }
    m["max_storage_buffer_range"] = static_cast<size_t>(props.limits.maxStorageBufferRange);
    m["min_storage_buffer_offset_alignment"] =
        static_cast<size_t>(props.limits.minStorageBufferOffsetAlignment);
    m["max_compute_shared_memory_size"] =
        static_cast<size_t>(props.limits.maxComputeSharedMemorySize);
    m["max_compute_workgroup_invocations"] =
        static_cast<size_t>(props.limits.maxComputeWorkGroupInvocations);
    m["max_push_constants_size"] = static_cast<size_t>(props.limits.maxPushConstantsSize);
    m["max_memory_allocation_size"] = static_cast<size_t>(props11.maxMemoryAllocationSize);
    m["pipeline_cache_uuid"] = hex_bytes(props.pipelineCacheUUID, VK_UUID_SIZE);
    m["fingerprint"] = fingerprint();
    std::ostringstream types;
    for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
      types << (i ? " " : "") << i << ":heap" << memory.memoryTypes[i].heapIndex << ":0x"
            << std::hex << memory.memoryTypes[i].propertyFlags << std::dec << ":"
            << (memory.memoryHeaps[memory.memoryTypes[i].heapIndex].size >> 20) << "MiB";
    }
    m["memory_types"] = types.str();
    return m;
  }
};

int find_type(const VkPhysicalDeviceMemoryProperties& mem, VkMemoryPropertyFlags want,
              uint64_t min_heap = 0) {
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
    auto& t = mem.memoryTypes[i];
    if ((t.propertyFlags & want) == want && mem.memoryHeaps[t.heapIndex].size >= min_heap) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

struct Registry {
  std::unique_ptr<Device> device;
  std::string reason;
  // The reason is a setting of ours (MLX_VK_DEVICE), not a missing driver.
  bool misconfigured = false;
  std::vector<DeviceInfo> infos;
};

// Counts validation errors (gpu::synchronize turns a new one into an exception) and
// prints errors and warnings, so a validation run fails loudly and says why.
VKAPI_ATTR VkBool32 VKAPI_CALL debug_callback_impl(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                   void* user) {
  auto* dev = static_cast<Device*>(user);
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    dev->note_validation_error();
    std::fprintf(stderr, "[vulkan validation error] %s\n", data->pMessage);
  } else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
    dev->note_validation_warning();
    std::fprintf(stderr, "[vulkan validation warning] %s\n", data->pMessage);
  }
  return VK_FALSE;
}

}  // namespace

struct DeviceFactory {
  // Creates the device or explains why not. Never throws.
  static void create(Registry& r) {
    try {
      create_impl(r);
    } catch (const std::exception& e) {
      r.device.reset();
      r.infos.clear();
      r.reason = e.what();
    }
  }

  static void create_impl(Registry& r) {
    std::string err;
    if (!load_vulkan(err)) {
      r.reason = err;
      return;
    }
    uint32_t loader_version = VK_API_VERSION_1_0;
    vkEnumerateInstanceVersion(&loader_version);
    if (loader_version < required_api) {
      r.reason = "the Vulkan loader supports only Vulkan " + api_string(loader_version);
      return;
    }

    std::unique_ptr<Device> dev(new Device());

    // Instance layers and extensions.
    std::vector<const char*> layers;
    std::vector<const char*> extensions;
    std::set<std::string> available_exts;
    auto collect_exts = [&](const char* layer) {
      uint32_t n = 0;
      vkEnumerateInstanceExtensionProperties(layer, &n, nullptr);
      std::vector<VkExtensionProperties> v(n);
      vkEnumerateInstanceExtensionProperties(layer, &n, v.data());
      for (auto& e : v) {
        available_exts.insert(e.extensionName);
      }
    };
    collect_exts(nullptr);
    bool want_validation = env_flag("MLX_VK_VALIDATION", false);
    if (want_validation) {
      uint32_t n = 0;
      vkEnumerateInstanceLayerProperties(&n, nullptr);
      std::vector<VkLayerProperties> v(n);
      vkEnumerateInstanceLayerProperties(&n, v.data());
      bool found = std::any_of(v.begin(), v.end(), [](auto& l) {
        return std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation") == 0;
      });
      if (found) {
        layers.push_back("VK_LAYER_KHRONOS_validation");
        collect_exts("VK_LAYER_KHRONOS_validation");
      } else {
        // Asked for explicitly, so say why it is not on rather than run unchecked quietly.
        std::fprintf(stderr,
                     "[vulkan] MLX_VK_VALIDATION=1 but VK_LAYER_KHRONOS_validation is not "
                     "installed; running without validation.\n");
      }
    }
    bool debug_utils = !layers.empty() && available_exts.count(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    if (debug_utils) {
      extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    }
    VkInstanceCreateFlags instance_flags = 0;
    if (available_exts.count(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
      extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
      instance_flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }

    auto app = make_info<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
    app.pApplicationName = "mlx";
    app.pEngineName = "mlx-vulkan";
    app.apiVersion = std::min<uint32_t>(loader_version, VK_API_VERSION_1_3);
    auto messenger_info = make_info<VkDebugUtilsMessengerCreateInfoEXT>(
        VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
    messenger_info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                                     VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
    messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
    messenger_info.pfnUserCallback = debug_callback_impl;
    messenger_info.pUserData = dev.get();

    // Validation also checks synchronization: a missing barrier is an error too.
    VkValidationFeatureEnableEXT sync_check =
        VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
    auto features = make_info<VkValidationFeaturesEXT>(VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT);
    features.enabledValidationFeatureCount = 1;
    features.pEnabledValidationFeatures = &sync_check;
    bool validation_features =
        !layers.empty() && available_exts.count(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
    if (validation_features) {
      extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
    }
    messenger_info.pNext = validation_features ? &features : nullptr;

    auto ici = make_info<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
    // The messenger in the chain also reports problems during instance creation.
    ici.pNext = debug_utils ? static_cast<const void*>(&messenger_info)
                            : (validation_features ? &features : nullptr);
    ici.flags = instance_flags;
    ici.pApplicationInfo = &app;
    ici.enabledLayerCount = static_cast<uint32_t>(layers.size());
    ici.ppEnabledLayerNames = layers.data();
    ici.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    ici.ppEnabledExtensionNames = extensions.data();
    VkResult res = vkCreateInstance(&ici, nullptr, &dev->instance_);
    if (res != VK_SUCCESS) {
      dev->instance_ = VK_NULL_HANDLE;
      r.reason = std::string("vkCreateInstance failed: ") + result_name(res);
      return;
    }
    if (!load_instance_functions(dev->instance_, err)) {
      r.reason = err;
      return;
    }
    if (debug_utils && vkCreateDebugUtilsMessengerEXT) {
      messenger_info.pNext = nullptr;
      check(vkCreateDebugUtilsMessengerEXT(dev->instance_, &messenger_info, nullptr,
                                           &dev->messenger_),
            "vkCreateDebugUtilsMessengerEXT");
      dev->validation_enabled_ = true;
    }

    // Probe and rank the physical devices.
    uint32_t count = 0;
    vkEnumeratePhysicalDevices(dev->instance_, &count, nullptr);
    std::vector<VkPhysicalDevice> pds(count);
    if (count) {
      vkEnumeratePhysicalDevices(dev->instance_, &count, pds.data());
    }
    std::vector<Probe> probes;
    for (uint32_t i = 0; i < count; ++i) {
      Probe p;
      p.run(pds[i], i);
      if (p.usable()) {
        probes.push_back(std::move(p));
      }
    }
    if (probes.empty()) {
      r.reason = count ? "no Vulkan 1.2 device with a compute queue was found"
                       : "no Vulkan device was found";
      return;
    }
    size_t chosen = 0;
    for (size_t i = 1; i < probes.size(); ++i) {
      if (type_rank(probes[i].props.deviceType) < type_rank(probes[chosen].props.deviceType)) {
        chosen = i;
      }
    }
    auto requested = env_string("MLX_VK_DEVICE");
    if (!requested.empty()) {
      // Digits only: "-1" or "abc" must not parse as some index.
      bool digits =
          requested.size() <= 9 && std::all_of(requested.begin(), requested.end(),
                                               [](char c) { return c >= '0' && c <= '9'; });
      size_t want = digits ? std::stoul(requested) : SIZE_MAX;
      auto it = std::find_if(probes.begin(), probes.end(),
                             [&](const Probe& p) { return p.vulkan_index == want; });
      if (it == probes.end()) {
        std::string usable;
        for (const auto& probe : probes) {
          usable += (usable.empty() ? "" : ", ") + std::to_string(probe.vulkan_index) + " = " +
                    probe.props.deviceName;
        }
        r.reason = "MLX_VK_DEVICE=" + requested +
                   " names no usable Vulkan device (usable: " + usable +
                   "); unset it or set it to one of those indices";
        r.misconfigured = true;
        // The GPU is silently gone otherwise: say so once, when the device is first looked
        // for (the registry is created once per process).
        std::fprintf(stderr, "[vulkan] warning: %s. The GPU is unavailable; running on the CPU.\n",
                     r.reason.c_str());
        return;
      }
      chosen = static_cast<size_t>(it - probes.begin());
    }
    const Probe& p = probes[chosen];
    init_logical_device(*dev, p);

    r.infos.push_back(p.info());
    for (size_t i = 0; i < probes.size(); ++i) {
      if (i != chosen) {
        r.infos.push_back(probes[i].info());
      }
    }
    auto& selected = r.infos.front();
    selected["selected"] = size_t(1);
    selected["push_descriptors"] = static_cast<size_t>(dev->push_descriptors_ ? 1 : 0);
    selected["cooperative_matrix_f16_16x8x16"] =
        static_cast<size_t>(dev->caps_.coop_f16_n8 ? 1 : 0);
    selected["cooperative_matrix_bf16_16x8x16"] =
        static_cast<size_t>(dev->caps_.coop_bf16_n8 ? 1 : 0);
    selected["compute_units"] = static_cast<size_t>(dev->caps_.compute_units);
    selected["array_memory_type"] = static_cast<size_t>(dev->array_type_);
    auto& flags = p.memory.memoryTypes[dev->array_type_].propertyFlags;
    selected["memory_path"] = std::string(
        dev->arrays_mapped_ ? ((flags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) ? "mapped device-local"
                                                                             : "mapped host")
                            : "staged");
    selected["validation"] = static_cast<size_t>(dev->validation_enabled_ ? 1 : 0);
    r.device = std::move(dev);
  }

  static void init_logical_device(Device& dev, const Probe& p) {
    dev.physical_ = p.handle;
    dev.properties_ = p.props;
    dev.memory_ = p.memory;
    dev.name_ = p.props.deviceName;
    dev.max_allocation_size_ = p.props11.maxMemoryAllocationSize;
    dev.queue_family_ = static_cast<uint32_t>(p.queue_family);

    // Enable every probed feature the kernels may use; codegen is told exactly these.
    VkPhysicalDeviceFeatures features{};
    features.shaderInt64 = p.features.shaderInt64;
    features.shaderInt16 = p.features.shaderInt16;
    auto f11 = make_info<VkPhysicalDeviceVulkan11Features>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
    f11.storageBuffer16BitAccess = p.features11.storageBuffer16BitAccess;
    f11.uniformAndStorageBuffer16BitAccess = p.features11.uniformAndStorageBuffer16BitAccess;
    f11.storagePushConstant16 = p.features11.storagePushConstant16;
    auto f12 = make_info<VkPhysicalDeviceVulkan12Features>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
    f12.shaderFloat16 = p.features12.shaderFloat16;
    f12.shaderInt8 = p.features12.shaderInt8;
    f12.storageBuffer8BitAccess = p.features12.storageBuffer8BitAccess;
    f12.uniformAndStorageBuffer8BitAccess = p.features12.uniformAndStorageBuffer8BitAccess;
    f12.storagePushConstant8 = p.features12.storagePushConstant8;
    f12.scalarBlockLayout = p.features12.scalarBlockLayout;
    f12.shaderSubgroupExtendedTypes = p.features12.shaderSubgroupExtendedTypes;
    f12.vulkanMemoryModel = p.features12.vulkanMemoryModel;
    f12.vulkanMemoryModelDeviceScope = p.features12.vulkanMemoryModelDeviceScope;
    f11.pNext = &f12;
    auto f13 = make_info<VkPhysicalDeviceVulkan13Features>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES);
    if (p.is_13()) {
      f13.subgroupSizeControl = p.features13.subgroupSizeControl;
      f13.computeFullSubgroups = p.features13.computeFullSubgroups;
      f13.shaderIntegerDotProduct = p.features13.shaderIntegerDotProduct;
      f13.maintenance4 = p.features13.maintenance4;
      f12.pNext = &f13;
    }

    std::vector<const char*> exts;
    bool push =
        p.has(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME) && env_flag("MLX_VK_PUSH_DESCRIPTORS", true);
    if (push) {
      exts.push_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    }
    if (p.has("VK_KHR_portability_subset")) {
      exts.push_back("VK_KHR_portability_subset");
    }
    // Optional: compiler statistics for MLX_VK_PIPELINE_STATS (pipeline_stats.h).
    auto executable_info = make_info<VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR);
    if (p.has(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
      VkPhysicalDeviceFeatures2 query{
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &executable_info, {}};
      vkGetPhysicalDeviceFeatures2(p.handle, &query);
    }
    if (executable_info.pipelineExecutableInfo) {
      exts.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
      executable_info.pNext = &f11;
    }

    // Cooperative matrices for the f16/bf16 GEMMs (templates/gemm_coop.glsl), on by default
    // where the device multiplies 16x16x16 into f32 per subgroup: VK_NV_cooperative_matrix
    // for f16, VK_KHR_cooperative_matrix (the rewritten module) for bf16 and for f16 where
    // NV is absent. MLX_VK_COOPMAT=off keeps the FMA tiles; nv or khr allows one path only
    // (docs/matmul.md).
    std::string coop_mode = env_string("MLX_VK_COOPMAT", "on");
    bool coop_on = coop_mode != "off" && coop_mode != "0";
    bool f16_ready = p.features12.shaderFloat16 && p.features.shaderInt16 &&
                     p.features11.storageBuffer16BitAccess && p.features12.vulkanMemoryModel;
    auto coop = make_info<VkPhysicalDeviceCooperativeMatrixFeaturesNV>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
    bool want_coop = coop_on && coop_mode != "khr" &&
                     p.has(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) && p.features12.shaderFloat16 &&
                     p.features.shaderInt16 && p.features11.storageBuffer16BitAccess &&
                     has_coop_f16_shape(p.handle, 16, 16, 16);
    if (want_coop) {
      VkPhysicalDeviceFeatures2 query{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &coop, {}};
      vkGetPhysicalDeviceFeatures2(p.handle, &query);
      want_coop = coop.cooperativeMatrix == VK_TRUE;
    }
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop_khr{};
    coop_khr.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR;
    VkPhysicalDeviceShaderBfloat16FeaturesKHR bf16_features{};
    bf16_features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR;
    bool want_khr_f16 = false, want_khr_bf16 = false;
    if (coop_on && coop_mode != "nv" && f16_ready &&
        p.has(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME)) {
      VkPhysicalDeviceFeatures2 query{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &coop_khr, {}};
      bool bf16_ext = p.has(VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME);
      if (bf16_ext) {
        coop_khr.pNext = &bf16_features;
      }
      vkGetPhysicalDeviceFeatures2(p.handle, &query);
      auto [f16_shape, bf16_shape] = khr_coop_shapes(p.handle, 16, 16, 16);
      bool khr = coop_khr.cooperativeMatrix == VK_TRUE;
      want_khr_f16 = khr && f16_shape;
      want_khr_bf16 = khr && bf16_shape && bf16_ext && bf16_features.shaderBFloat16Type &&
                      bf16_features.shaderBFloat16CooperativeMatrix;
    }
    void* chain = executable_info.pipelineExecutableInfo ? static_cast<void*>(&executable_info)
                                                         : static_cast<void*>(&f11);
    if (want_coop) {
      exts.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
      coop.pNext = chain;
      chain = &coop;
    }
    if (want_khr_f16 || want_khr_bf16) {
      exts.push_back(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
      coop_khr = {};
      coop_khr.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR;
      coop_khr.cooperativeMatrix = VK_TRUE;
      coop_khr.pNext = chain;
      chain = &coop_khr;
    }
    if (want_khr_bf16) {
      exts.push_back(VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME);
      bf16_features = {};
      bf16_features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR;
      bf16_features.shaderBFloat16Type = VK_TRUE;
      bf16_features.shaderBFloat16CooperativeMatrix = VK_TRUE;
      bf16_features.pNext = chain;
      chain = &bf16_features;
    }

    float priority = 1.0f;
    auto qci = make_info<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
    qci.queueFamilyIndex = dev.queue_family_;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    auto dci = make_info<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
    dci.pNext = chain;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = static_cast<uint32_t>(exts.size());
    dci.ppEnabledExtensionNames = exts.data();
    dci.pEnabledFeatures = &features;
    check(vkCreateDevice(p.handle, &dci, nullptr, &dev.device_), "vkCreateDevice");
    std::string err;
    if (!load_device_functions(dev.device_, err)) {
      throw std::runtime_error("[vulkan] " + err);
    }
    vkGetDeviceQueue(dev.device_, dev.queue_family_, 0, &dev.queue_);
    dev.push_descriptors_ = push && vkCmdPushDescriptorSetKHR != nullptr;
    dev.push_descriptor_fn_ = dev.push_descriptors_ ? vkCmdPushDescriptorSetKHR : nullptr;
    dev.pipeline_executable_info_ = executable_info.pipelineExecutableInfo &&
                                    vkGetPipelineExecutablePropertiesKHR &&
                                    vkGetPipelineExecutableStatisticsKHR;

    auto& c = dev.caps_;
    c.subgroup_size = p.props11.subgroupSize;
    // MLX_VK_SUBGROUP_SHUFFLE=0 runs the kernels' shared-memory paths, those of devices
    // without shuffles (the `shuffleless` ctest covers them on lavapipe).
    c.subgroup_shuffle = (p.props11.subgroupSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                         (p.props11.subgroupSupportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT) &&
                         (p.props11.subgroupSupportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) &&
                         env_flag("MLX_VK_SUBGROUP_SHUFFLE", true);
    c.shader_float16 = p.features12.shaderFloat16;
    c.shader_int8 = p.features12.shaderInt8;
    // Enabled at device creation with the rest of Vulkan 1.3's features (above).
    c.integer_dot_product = p.is_13() && p.features13.shaderIntegerDotProduct;
    c.shader_int16 = p.features.shaderInt16;
    c.shader_int64 = p.features.shaderInt64;
    c.storage_8bit = p.features12.storageBuffer8BitAccess;
    c.storage_16bit = p.features11.storageBuffer16BitAccess;
    // bf16 arithmetic in GLSL is not used (glslang 12 has no bf16 type); VK_KHR_shader_bfloat16
    // is enabled only for the cooperative-matrix kernels' bf16 fragments (above).
    c.bfloat16 = false;
    c.cooperative_matrix = want_coop;
    c.cooperative_matrix_khr = want_khr_f16;
    c.cooperative_matrix_bf16 = want_khr_bf16;
    c.f16_hw_convert = f16_hardware_conversions(p.props12.driverID);
    c.fma_fused = fused_fma(p.props12.driverID);
    c.fused_vector_steps =
        fused_vector_steps(p.props.vendorID, p.props.deviceID, p.props.deviceName);
    c.coop_acc_nv_layout =
        (want_coop || want_khr_f16 || want_khr_bf16) && nv_accumulator_layout(p.props12.driverID);
    // The f16 path qmvc takes (KHR where on, else NV) with its 16x8x16 shape too.
    c.coop_f16_n8 = want_khr_f16 ? khr_coop_shapes(p.handle, 16, 8, 16).first
                    : want_coop  ? has_coop_f16_shape(p.handle, 16, 8, 16)
                                 : false;
    c.coop_bf16_n8 = want_khr_bf16 && khr_coop_shapes(p.handle, 16, 8, 16).second;
    c.max_workgroup_invocations = p.props.limits.maxComputeWorkGroupInvocations;
    c.max_shared_memory = p.props.limits.maxComputeSharedMemorySize;
    c.compute_units = p.compute_units;
    // MLX_VK_COMPUTE_UNITS replaces the count (0: unknown, the GEMM's grid rule), to compare
    // the tile rules on one machine or plan for another device's count.
    if (const char* text = std::getenv("MLX_VK_COMPUTE_UNITS"); text && *text) {
      c.compute_units =
          static_cast<uint32_t>(std::clamp(std::strtol(text, nullptr, 10), 0L, 65536L));
    }
    // MLX_VK_MAX_WORKGROUP_INVOCATIONS and MLX_VK_MAX_SHARED_MEMORY lower the limits the
    // kernels are planned for (never raise them), so one machine runs them as a device with
    // less would (Vulkan guarantees 128 invocations and 16 KiB). For tests; docs/vulkan.md.
    lower_limit(c.max_workgroup_invocations, "MLX_VK_MAX_WORKGROUP_INVOCATIONS");
    lower_limit(c.max_shared_memory, "MLX_VK_MAX_SHARED_MEMORY");
    c.fingerprint = p.fingerprint();

    choose_memory(dev, p);
  }

  // Arrays go to device-local memory. They are mapped for host access only where the
  // CPU reads that memory through its caches: a device-local, host-visible, coherent and
  // *cached* type with a large heap (lavapipe, integrated GPUs). A discrete GPU's BAR
  // window, even a resizable one covering all of VRAM, is uncached for the CPU: reading it
  // runs at PCIe round-trip speed (the GPU-vs-CPU test suite took 411 s on an H200 mapped
  // that way), so there arrays stay unmapped and host access stages through cached host
  // memory. MLX_VK_STAGING=1 forces staging; MLX_VK_STAGING=0 maps whatever large
  // host-visible device memory exists (else host memory).
  static void choose_memory(Device& dev, const Probe& p) {
    const auto& mem = p.memory;
    constexpr auto device_local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    constexpr auto host =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    constexpr auto cached = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    const uint64_t large = p.device_local_bytes / 2;
    int local = find_type(mem, device_local);
    int cached_local = find_type(mem, device_local | host | cached, large);
    int mapped_local = find_type(mem, device_local | host, large);
    int staging = find_type(mem, host | cached);
    if (staging < 0) {
      staging = find_type(mem, host);
    }
    if (staging < 0) {
      throw std::runtime_error("[vulkan] the device has no host-visible coherent memory.");
    }
    const char* forced = std::getenv("MLX_VK_STAGING");
    bool force_staging = forced && env_flag("MLX_VK_STAGING", false);
    bool forbid_staging = forced && !env_flag("MLX_VK_STAGING", true);
    dev.staging_type_ = static_cast<uint32_t>(staging);
    auto use = [&](int type, bool mapped) {
      dev.array_type_ = static_cast<uint32_t>(type);
      dev.arrays_mapped_ = mapped;
    };
    if (force_staging) {
      use(local >= 0 ? local : staging, false);
    } else if (forbid_staging) {
      use(cached_local >= 0 ? cached_local : (mapped_local >= 0 ? mapped_local : staging), true);
    } else if (cached_local >= 0) {
      use(cached_local, true);
    } else if (local >= 0) {
      use(local, false);
    } else {
      use(staging, true);  // no device-local memory at all: arrays live in host memory
    }
    // Staged: the smallest host-made arrays may live in host-visible device memory of any
    // heap size (a 256 MiB BAR window will do), where the host copies their shadow's bytes at
    // their first GPU use and no copy command is needed (docs/vulkan.md, "Small host-made
    // arrays": a decode step's position no longer needs an upload command buffer).
    // MLX_VK_SMALL_MAPPED=0 turns it off.
    if (!dev.arrays_mapped_ && env_flag("MLX_VK_SMALL_MAPPED", true)) {
      dev.small_mapped_type_ = find_type(mem, device_local | host);
    }
  }
};

namespace {

// The registry is never destroyed, so code running after the device's teardown (a static
// array freed late at exit) still finds it and sees "no device".
Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry();
    DeviceFactory::create(*reg);
    return reg;
  }();
  // Destroyed at exit in reverse order of construction: after every static constructed
  // later (arrays made after the device), before those constructed earlier.
  struct Reaper {
    ~Reaper() {
      registry_ptr()->device.reset();
    }
    static Registry* registry_ptr() {
      return r;
    }
  };
  static Reaper reaper;
  return *r;
}

}  // namespace

Device::~Device() {
  std::vector<std::function<void()>> fns;
  {
    std::lock_guard lk(teardown_mtx_);
    fns.swap(teardown_);
  }
  if (device_) {
    vkDeviceWaitIdle(device_);
  }
  for (auto it = fns.rbegin(); it != fns.rend(); ++it) {
    try {
      (*it)();
    } catch (...) {
      // Exceptions must not escape a destructor run at exit.
    }
  }
  torn_down_ = true;
  if (device_) {
    vkDestroyDevice(device_, nullptr);
  }
  if (messenger_ && vkDestroyDebugUtilsMessengerEXT) {
    vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  }
  if (instance_) {
    vkDestroyInstance(instance_, nullptr);
  }
}

void Device::on_teardown(std::function<void()> fn) {
  std::lock_guard lk(teardown_mtx_);
  teardown_.push_back(std::move(fn));
}

Device* device_or_null() {
  return registry().device.get();
}

Device& device(const char* who) {
  auto* d = device_or_null();
  if (!d) {
    throw std::runtime_error(std::string("[") + who +
                             "] no Vulkan device is available: " + registry().reason + ".");
  }
  return *d;
}

std::string unavailable_reason() {
  return registry().reason;
}

std::string unavailable_remedy() {
  if (device_or_null()) {
    return "";
  }
  return registry().misconfigured
             ? registry().reason
             : registry().reason + "; install or update a Vulkan driver (e.g. mesa-vulkan-drivers)";
}

const std::vector<DeviceInfo>& all_device_info() {
  return registry().infos;
}

}  // namespace mlx::core::vulkan

namespace mlx::core::gpu {

// The backend contract's other half lives in eval.cpp; the reason is known only here.
std::string unavailable_reason() {
  return vulkan::unavailable_remedy();
}

}  // namespace mlx::core::gpu
