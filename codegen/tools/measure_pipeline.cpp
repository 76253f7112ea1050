// Measures what the SPIRV-Tools optimizer buys at pipeline creation: for a few kernels,
// vkCreateComputePipelines time (driver caches off) for SPIR-V at optimizer levels 0, 1, 2,
// next to the optimizer's own cost. Numbers go to docs/codegen.md.
//   cmake --build <build> --target mlxvk_codegen_measure_pipeline
//   <build>/codegen/mlxvk_codegen_measure_pipeline
// Not part of the library: codegen itself knows nothing about Vulkan.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <vulkan/vulkan.h>

#include "codegen/codegen.h"

using namespace mlx::core::vulkan::codegen;

namespace {

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) {
    throw std::runtime_error(std::string(what) + " failed: " + std::to_string(r));
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Vk {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  DeviceCaps caps;
  std::string name;

  Vk() {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pApplicationInfo = &app;
    check(vkCreateInstance(&ici, nullptr, &instance), "vkCreateInstance");
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(instance, &n, nullptr);
    std::vector<VkPhysicalDevice> devs(n);
    vkEnumeratePhysicalDevices(instance, &n, devs.data());
    if (devs.empty()) {
      throw std::runtime_error("no Vulkan device");
    }
    physical = devs[0];
    for (auto d : devs) {  // prefer a real GPU
      VkPhysicalDeviceProperties p;
      vkGetPhysicalDeviceProperties(d, &p);
      if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) {
        physical = d;
      }
    }
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(physical, &props);
    name = props.deviceName;
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    f11.pNext = &f12;
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    f2.pNext = &f11;
    vkGetPhysicalDeviceFeatures2(physical, &f2);
    caps.storage_8bit = f12.storageBuffer8BitAccess;
    caps.storage_16bit = f11.storageBuffer16BitAccess;
    caps.shader_int64 = f2.features.shaderInt64;
    caps.max_workgroup_invocations = props.limits.maxComputeWorkGroupInvocations;
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueCount = 1;
    qci.pQueuePriorities = &prio;
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = &f2;  // enable what the device has
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    check(vkCreateDevice(physical, &dci, nullptr, &device), "vkCreateDevice");
  }
  ~Vk() {
    vkDestroyDevice(device, nullptr);
    vkDestroyInstance(instance, nullptr);
  }

  // One vkCreateComputePipelines, timed; everything else is set up and torn down around it.
  double pipeline_ms(const KernelSource& src, const std::vector<uint32_t>& words) {
    VkShaderModuleCreateInfo smci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    smci.codeSize = words.size() * 4;
    smci.pCode = words.data();
    VkShaderModule module;
    check(vkCreateShaderModule(device, &smci, nullptr, &module), "vkCreateShaderModule");
    std::vector<VkDescriptorSetLayoutBinding> bindings(src.num_buffers);
    for (uint32_t b = 0; b < src.num_buffers; ++b) {
      bindings[b] = {b, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    }
    VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dl.bindingCount = src.num_buffers;
    dl.pBindings = bindings.data();
    VkDescriptorSetLayout set_layout;
    check(vkCreateDescriptorSetLayout(device, &dl, nullptr, &set_layout), "set layout");
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, src.push_constant_bytes};
    VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &set_layout;
    pl.pushConstantRangeCount = src.push_constant_bytes ? 1 : 0;
    pl.pPushConstantRanges = &range;
    VkPipelineLayout layout;
    check(vkCreatePipelineLayout(device, &pl, nullptr, &layout), "pipeline layout");
    std::vector<VkSpecializationMapEntry> entries;
    std::vector<uint32_t> values;
    for (const auto& [id, v] : src.spec_constants) {
      entries.push_back({id, static_cast<uint32_t>(values.size() * 4), 4});
      values.push_back(v);
    }
    VkSpecializationInfo spec{static_cast<uint32_t>(entries.size()), entries.data(),
                              values.size() * 4, values.data()};
    VkComputePipelineCreateInfo cpci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    cpci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cpci.stage.module = module;
    cpci.stage.pName = "main";
    cpci.stage.pSpecializationInfo = &spec;
    cpci.layout = layout;
    VkPipeline pipeline;
    auto t0 = std::chrono::steady_clock::now();
    check(vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &cpci, nullptr, &pipeline),
          "vkCreateComputePipelines");
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    vkDestroyPipeline(device, pipeline, nullptr);
    vkDestroyPipelineLayout(device, layout, nullptr);
    vkDestroyDescriptorSetLayout(device, set_layout, nullptr);
    vkDestroyShaderModule(device, module, nullptr);
    return ms;
  }
};

}  // namespace

int main() {
  // Measure the driver's compiler, not its shader caches.
  setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
  setenv("__GL_SHADER_DISK_CACHE", "0", 1);
  Vk vk;
  std::printf("device: %s\n\n", vk.name.c_str());
  std::printf(
      "| kernel | glslang ms | opt1 ms | opt2 ms | pipeline O0 ms | pipeline O1 ms | "
      "pipeline O2 ms |\n|---|---|---|---|---|---|---|\n");
  const char* keys[] = {
      "binary:idx=32,in=f32.f32,layout=cc,op=Add,out=f32",
      "binary:idx=32,in=bf16.bf16,layout=cs,op=Multiply,out=bf16",
      "unary:idx=32,in=f32,layout=c,op=Exp,out=f32",
      "unary:idx=32,in=f16,layout=g,op=Sin,out=f16,rank=2",
      "unary:idx=32,in=bf16,layout=c,op=ErfInv,out=bf16",
      "binary:idx=32,in=f32.f32,layout=gc,op=Power,out=f32,rank=n",
      "binary:idx=64,in=i64.i64,layout=cc,op=FloorDivide,out=i64",
      "copy:idx=32,in=f16,layout=g,op=Copy,out=i8,rank=3",
  };
  const int reps = 5;
  for (const char* text : keys) {
    KernelKey key = KernelKey::parse(text);
    KernelSource src = render(key, vk.caps);
    std::vector<double> g, o1, o2, p0, p1, p2;
    for (int r = 0; r < reps; ++r) {
      SpirvModule m0 = compile(key, src, 0);
      SpirvModule m1 = compile(key, src, 1);
      SpirvModule m2 = compile(key, src, 2);
      g.push_back(m0.glslang_ms);
      o1.push_back(m1.optimize_ms);
      o2.push_back(m2.optimize_ms);
      p0.push_back(vk.pipeline_ms(src, m0.words));
      p1.push_back(vk.pipeline_ms(src, m1.words));
      p2.push_back(vk.pipeline_ms(src, m2.words));
    }
    std::printf("| `%s` | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", text, median(g), median(o1),
                median(o2), median(p0), median(p1), median(p2));
  }
  return 0;
}
