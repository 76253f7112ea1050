#include "mlx/backend/vulkan/kernel_library.h"

#include <chrono>
#include <vector>

#include "mlx/backend/vulkan/utils.h"

namespace mlx::core::vulkan {

KernelLibrary::KernelLibrary(Device& d) : dev_(d) {
  auto ci = make_info<VkPipelineCacheCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO);
  check(vkCreatePipelineCache(d.handle(), &ci, nullptr, &pipeline_cache_),
        "vkCreatePipelineCache");
}

KernelLibrary::~KernelLibrary() {
  VkDevice d = dev_.handle();
  for (auto& [name, fut] : kernels_) {
    if (fut.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      continue;
    }
    try {
      auto k = fut.get();
      if (k && k->pipeline) {
        vkDestroyPipeline(d, k->pipeline, nullptr);
      }
    } catch (...) {
      // A failed build left nothing to destroy.
    }
  }
  for (auto& [n, l] : pipeline_layouts_) {
    vkDestroyPipelineLayout(d, l, nullptr);
  }
  for (auto& [n, l] : set_layouts_) {
    vkDestroyDescriptorSetLayout(d, l, nullptr);
  }
  vkDestroyPipelineCache(d, pipeline_cache_, nullptr);
}

const Kernel& KernelLibrary::get(const codegen::KernelKey& key) {
  std::string name = key.canonical();
  std::shared_future<std::shared_ptr<Kernel>> fut;
  std::promise<std::shared_ptr<Kernel>> promise;
  bool builder = false;
  {
    std::lock_guard lk(mtx_);
    auto it = kernels_.find(name);
    if (it != kernels_.end()) {
      fut = it->second;
    } else {
      fut = promise.get_future().share();
      kernels_.emplace(name, fut);
      builder = true;
    }
  }
  if (builder) {
    try {
      promise.set_value(build(key));
    } catch (...) {
      // Waiters see the same error; the entry goes so a later call tries again.
      promise.set_exception(std::current_exception());
      std::lock_guard lk(mtx_);
      kernels_.erase(name);
    }
  }
  return *fut.get(); // rethrows a failed build; Kernels live as long as the library
}

size_t KernelLibrary::size() {
  std::lock_guard lk(mtx_);
  return kernels_.size();
}

codegen::SpirvModule KernelLibrary::spirv_for(const codegen::KernelKey& key,
                                              const codegen::KernelSource& source) {
  return codegen::compile(key, source);
}

std::shared_ptr<Kernel> KernelLibrary::build(const codegen::KernelKey& key) {
  auto k = std::make_shared<Kernel>();
  k->key = key;
  k->source = codegen::render(key, dev_.caps());
  auto spirv = spirv_for(key, k->source);
  k->glslang_ms = spirv.glslang_ms;
  k->optimize_ms = spirv.optimize_ms;
  k->spirv_bytes = spirv.words.size() * 4;
  k->hash = codegen::kernel_hash(key, k->source, dev_.caps(), spirv.optimizer_level);
  k->num_buffers = k->source.num_buffers;
  k->push_constant_bytes = k->source.push_constant_bytes;
  if (k->push_constant_bytes > dev_.limits().maxPushConstantsSize) {
    throw std::runtime_error("[vulkan] kernel " + key.canonical() + " needs " +
                             std::to_string(k->push_constant_bytes) +
                             " bytes of push constants; the device allows " +
                             std::to_string(dev_.limits().maxPushConstantsSize) + ".");
  }
  k->set_layout = set_layout_for(k->num_buffers);
  k->layout = pipeline_layout_for(k->num_buffers, k->push_constant_bytes);

  auto t0 = std::chrono::steady_clock::now();
  VkDevice d = dev_.handle();
  auto smi = make_info<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  smi.codeSize = spirv.words.size() * sizeof(uint32_t);
  smi.pCode = spirv.words.data();
  VkShaderModule module;
  check(vkCreateShaderModule(d, &smi, nullptr, &module), "vkCreateShaderModule");

  std::vector<VkSpecializationMapEntry> entries;
  std::vector<uint32_t> values;
  for (auto& [id, value] : k->source.spec_constants) {
    entries.push_back({id, static_cast<uint32_t>(values.size() * sizeof(uint32_t)),
                       sizeof(uint32_t)});
    values.push_back(value);
  }
  VkSpecializationInfo spec{static_cast<uint32_t>(entries.size()), entries.data(),
                            values.size() * sizeof(uint32_t), values.data()};
  auto pci = make_info<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  pci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pci.stage.module = module;
  pci.stage.pName = "main";
  pci.stage.pSpecializationInfo = entries.empty() ? nullptr : &spec;
  pci.layout = k->layout;
  VkResult r = vkCreateComputePipelines(d, pipeline_cache_, 1, &pci, nullptr, &k->pipeline);
  vkDestroyShaderModule(d, module, nullptr);
  if (r != VK_SUCCESS) {
    throw std::runtime_error("[vulkan] vkCreateComputePipelines failed for kernel " +
                             key.canonical() + ": " + result_name(r) + ".");
  }
  k->pipeline_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  builds_++;
  return k;
}

VkDescriptorSetLayout KernelLibrary::set_layout_for(uint32_t num_buffers) {
  std::lock_guard lk(layout_mtx_);
  auto it = set_layouts_.find(num_buffers);
  if (it != set_layouts_.end()) {
    return it->second;
  }
  std::vector<VkDescriptorSetLayoutBinding> bindings(num_buffers);
  for (uint32_t i = 0; i < num_buffers; ++i) {
    bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT,
                   nullptr};
  }
  auto ci = make_info<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  ci.flags = dev_.has_push_descriptors()
                 ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR
                 : 0;
  ci.bindingCount = num_buffers;
  ci.pBindings = bindings.data();
  VkDescriptorSetLayout l;
  check(vkCreateDescriptorSetLayout(dev_.handle(), &ci, nullptr, &l),
        "vkCreateDescriptorSetLayout");
  set_layouts_.emplace(num_buffers, l);
  return l;
}

VkPipelineLayout KernelLibrary::pipeline_layout_for(uint32_t num_buffers, uint32_t push_bytes) {
  auto set_layout = set_layout_for(num_buffers);
  std::lock_guard lk(layout_mtx_);
  uint64_t id = (uint64_t(num_buffers) << 32) | push_bytes;
  auto it = pipeline_layouts_.find(id);
  if (it != pipeline_layouts_.end()) {
    return it->second;
  }
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
  auto ci = make_info<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  ci.setLayoutCount = 1;
  ci.pSetLayouts = &set_layout;
  ci.pushConstantRangeCount = push_bytes ? 1 : 0;
  ci.pPushConstantRanges = push_bytes ? &range : nullptr;
  VkPipelineLayout l;
  check(vkCreatePipelineLayout(dev_.handle(), &ci, nullptr, &l), "vkCreatePipelineLayout");
  pipeline_layouts_.emplace(id, l);
  return l;
}

KernelLibrary& kernel_library() {
  static std::mutex mtx;
  static KernelLibrary* lib = nullptr;
  std::lock_guard lk(mtx);
  if (!lib) {
    auto& d = device("kernel_library");
    lib = new KernelLibrary(d);
    d.on_teardown([] {
      std::lock_guard lk2(mtx);
      delete lib;
      lib = nullptr;
    });
  }
  return *lib;
}

} // namespace mlx::core::vulkan
