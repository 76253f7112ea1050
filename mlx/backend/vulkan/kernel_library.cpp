#include "mlx/backend/vulkan/kernel_library.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <semaphore>
#include <thread>
#include <vector>

#include "cache/hash.h"
#include "cache/warn.h"
#include "mlx/backend/vulkan/kernel_cache.h"
#include "mlx/backend/vulkan/pipeline_stats.h"
#include "mlx/backend/vulkan/utils.h"

namespace mlx::core::vulkan {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

thread_local bool defer_here = false;

bool parallel_builds() {
  static const bool on = env_string("MLX_VK_PARALLEL_BUILD", "1") != "0";
  return on;
}

// Pipeline creations running at once: one per hardware thread.
std::counting_semaphore<>& creation_slots() {
  static std::counting_semaphore<> slots(
      static_cast<std::ptrdiff_t>(std::max(1u, std::thread::hardware_concurrency())));
  return slots;
}

std::mutex fault_mtx;
std::string fault_prefix;  // fail_pipelines_for_testing
int fault_delay_ms = 0;

bool injected_fault(const std::string& key) {
  int delay = 0;
  {
    std::lock_guard lk(fault_mtx);
    if (fault_prefix.empty() || key.rfind(fault_prefix, 0) != 0) {
      return false;
    }
    delay = fault_delay_ms;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(delay));
  return true;
}

}  // namespace

DeferredPipelines::DeferredPipelines() : was_(defer_here) {
  defer_here = parallel_builds();
}

DeferredPipelines::~DeferredPipelines() {
  defer_here = was_;
}

void fail_pipelines_for_testing(const std::string& prefix, int delay_ms) {
  std::lock_guard lk(fault_mtx);
  fault_prefix = prefix;
  fault_delay_ms = delay_ms;
}

KernelLibrary::KernelLibrary(Device& d) : dev_(d), cache_(std::make_unique<KernelCache>(d)) {
  pipeline_cache_ = cache_->create_pipeline_cache();
}

KernelLibrary::~KernelLibrary() {
  VkDevice d = dev_.handle();
  // Creations still running on worker threads finish first (their errors have nobody
  // left to go to).
  auto settle = [](const std::shared_ptr<Kernel>& k) {
    if (k && k->created.valid()) {
      k->created.wait();
    }
  };
  for (auto& [name, fut] : kernels_) {
    if (fut.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      try {
        settle(fut.get());
      } catch (...) {
        // A failed build left nothing to wait for.
      }
    }
  }
  for (auto& k : failed_) {
    settle(k);
  }
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
  cache_->save_pipeline_cache(pipeline_cache_);
  vkDestroyPipelineCache(d, pipeline_cache_, nullptr);
}

bool KernelLibrary::save_pipeline_cache() {
  return cache_->save_pipeline_cache(pipeline_cache_);
}

const Kernel& KernelLibrary::get(const codegen::KernelKey& key) {
  std::string name = key.canonical();
  std::shared_future<std::shared_ptr<Kernel>> fut;
  std::optional<std::promise<std::shared_ptr<Kernel>>> promise;  // made by the builder only
  bool builder = false;
  {
    std::lock_guard lk(mtx_);
    auto it = kernels_.find(name);
    if (it != kernels_.end() &&
        it->second.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      // A kernel whose deferred creation failed leaves the map: this call builds it again.
      auto k = it->second.get();  // ready entries hold kernels (failed builds are erased)
      if (k->failed.load()) {
        failed_.push_back(std::move(k));
        kernels_.erase(it);
        it = kernels_.end();
      }
    }
    if (it != kernels_.end()) {
      fut = it->second;
      count_memory_hit();
    } else {
      promise.emplace();
      fut = promise->get_future().share();
      kernels_.emplace(name, fut);
      builder = true;
    }
  }
  const bool defer = defer_here;
  if (builder) {
    try {
      promise->set_value(build(key, defer));
    } catch (...) {
      // Waiters see the same error; the entry goes so a later call tries again.
      promise->set_exception(std::current_exception());
      std::lock_guard lk(mtx_);
      kernels_.erase(name);
    }
  }
  const Kernel& k = *fut.get();  // rethrows a failed build; Kernels live as long as the library
  if (!defer) {
    k.wait_pipeline();
  }
  return k;
}

size_t KernelLibrary::size() {
  std::lock_guard lk(mtx_);
  return kernels_.size();
}

codegen::SpirvModule KernelLibrary::spirv_for(Kernel& k, bool allow_disk) {
  int level = codegen::optimizer_level_for(k.key.family);
  k.hash = codegen::kernel_hash(k.key, k.source, dev_.caps(), level);
  codegen::SpirvModule spirv;
  if (allow_disk) {
    auto t0 = std::chrono::steady_clock::now();
    if (auto entry = cache_->load(k.hash, k.key.canonical())) {
      spirv.words = std::move(entry->spirv);
      spirv.optimizer_level = entry->optimizer_level;
      k.origin = KernelOrigin::Disk;
      k.disk_load_ms = ms_since(t0);
      k.glslang_ms = k.optimize_ms = 0;
      k.spirv_bytes = spirv.words.size() * 4;
      return spirv;
    }
  }
  spirv = codegen::compile(k.key, k.source, level);
  k.origin = KernelOrigin::Compiled;
  k.disk_load_ms = 0;
  k.glslang_ms = spirv.glslang_ms;
  k.optimize_ms = spirv.optimize_ms;
  k.spirv_bytes = spirv.words.size() * 4;
  return spirv;
}

VkPipeline KernelLibrary::create_pipeline(const Kernel& k, const std::vector<uint32_t>& words,
                                          VkPipelineCreateFlags flags, VkResult& result) {
  VkDevice d = dev_.handle();
  auto smi = make_info<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  smi.codeSize = words.size() * sizeof(uint32_t);
  smi.pCode = words.data();
  VkShaderModule module;
  result = vkCreateShaderModule(d, &smi, nullptr, &module);
  if (result != VK_SUCCESS) {
    return VK_NULL_HANDLE;
  }
  std::vector<VkSpecializationMapEntry> entries;
  std::vector<uint32_t> values;
  for (auto& [id, value] : k.source.spec_constants) {
    entries.push_back(
        {id, static_cast<uint32_t>(values.size() * sizeof(uint32_t)), sizeof(uint32_t)});
    values.push_back(value);
  }
  VkSpecializationInfo spec{static_cast<uint32_t>(entries.size()), entries.data(),
                            values.size() * sizeof(uint32_t), values.data()};
  auto pci = make_info<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  pci.flags = flags;
  pci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pci.stage.module = module;
  pci.stage.pName = "main";
  pci.stage.pSpecializationInfo = entries.empty() ? nullptr : &spec;
  pci.layout = k.layout;
  VkPipeline pipeline = VK_NULL_HANDLE;
  result = injected_fault(k.key.canonical())
               ? VK_ERROR_INITIALIZATION_FAILED
               : vkCreateComputePipelines(d, pipeline_cache_, 1, &pci, nullptr, &pipeline);
  vkDestroyShaderModule(d, module, nullptr);
  return result == VK_SUCCESS ? pipeline : VK_NULL_HANDLE;
}

void KernelLibrary::store(const Kernel& k, const codegen::SpirvModule& spirv) {
  cache::KernelEntry e;
  e.hash = k.hash;
  e.key = k.key.canonical();
  e.template_name = k.source.template_name;
  e.template_hash = k.source.template_hash;
  e.defines = k.source.defines;
  e.glsl = k.source.glsl;
  e.compiler_version = codegen::compiler_version();
  e.optimizer_level = spirv.optimizer_level;
  e.glslang_ms = k.glslang_ms;
  e.optimize_ms = k.optimize_ms;
  e.pipeline_ms = k.pipeline_ms;
  e.spirv = spirv.words;
  cache_->store(e);
}

std::shared_ptr<Kernel> KernelLibrary::build(const codegen::KernelKey& key, bool defer) {
  auto k = std::make_shared<Kernel>();
  k->key = key;
  codegen::SpirvModule spirv;
  try {
    auto t_render = std::chrono::steady_clock::now();
    k->source = codegen::render(key, dev_.caps());
    k->render_ms = ms_since(t_render);
    k->num_buffers = k->source.num_buffers;
    k->push_constant_bytes = k->source.push_constant_bytes;
    if (k->push_constant_bytes > dev_.limits().maxPushConstantsSize) {
      throw std::runtime_error("[vulkan] kernel " + key.canonical() + " needs " +
                               std::to_string(k->push_constant_bytes) +
                               " bytes of push constants; the device allows " +
                               std::to_string(dev_.limits().maxPushConstantsSize) + ".");
    }
    // Planning follows DeviceCaps::max_workgroup_invocations; a kernel past it would be an
    // invalid pipeline on the device (and, under MLX_VK_MAX_WORKGROUP_INVOCATIONS, a limit
    // the tests impose on a device that allows more, a plan that ignored it).
    const auto& wgs = k->source.workgroup_size;
    uint64_t invocations = uint64_t{wgs[0]} * wgs[1] * wgs[2];
    if (invocations > dev_.caps().max_workgroup_invocations) {
      throw std::runtime_error("[vulkan] kernel " + key.canonical() + " has " +
                               std::to_string(invocations) +
                               " invocations a workgroup; the device allows " +
                               std::to_string(dev_.caps().max_workgroup_invocations) + ".");
    }
    k->set_layout = set_layout_for(k->num_buffers);
    k->layout = pipeline_layout_for(k->num_buffers, k->push_constant_bytes);
    spirv = spirv_for(*k, true);
    // The same for shared memory (MLX_VK_MAX_SHARED_MEMORY lowers the limit for tests).
    uint32_t shared = codegen::workgroup_memory_bytes(spirv.words, k->source.spec_constants);
    if (shared > dev_.caps().max_shared_memory) {
      throw std::runtime_error("[vulkan] kernel " + key.canonical() + " uses " +
                               std::to_string(shared) +
                               " bytes of shared memory; the device allows " +
                               std::to_string(dev_.caps().max_shared_memory) + ".");
    }
  } catch (...) {
    count_failure();
    throw;
  }
  if (!defer) {
    finish_build(*k, std::move(spirv));
    return k;
  }
  // The kernel stays alive in the map (or failed_) while its creation runs: the task holds
  // a plain pointer, since a shared one inside k->created's state would never be freed.
  Kernel* raw = k.get();
  k->created = std::async(std::launch::async, [this, raw, spirv = std::move(spirv)]() mutable {
                 creation_slots().acquire();
                 struct Release {
                   ~Release() {
                     creation_slots().release();
                   }
                 } release;
                 try {
                   finish_build(*raw, std::move(spirv));
                 } catch (const std::exception& e) {
                   raw->failed = true;
                   std::function<void(const Kernel&, const std::string&)> hook;
                   {
                     std::lock_guard lk(mtx_);
                     hook = failure_hook_;
                   }
                   if (hook) {
                     hook(*raw, e.what());
                   }
                   throw;
                 } catch (...) {
                   raw->failed = true;
                   throw;
                 }
               }).share();
  return k;
}

void KernelLibrary::finish_build(Kernel& k, codegen::SpirvModule spirv) {
  const auto& key = k.key;
  try {
    // Disk hits are created here too, so every built pipeline can report statistics.
    VkPipelineCreateFlags flags =
        pipeline_stats_active(dev_) ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0;
    auto t0 = std::chrono::steady_clock::now();
    VkResult r = VK_SUCCESS;
    k.pipeline = create_pipeline(k, spirv.words, flags, r);
    if (r != VK_SUCCESS && k.origin == KernelOrigin::Disk) {
      // The entry passed validation yet the driver refused it: treat it as a miss, and the
      // store below replaces it.
      cache::warn_once("driver-rejected:" + cache::to_hex(k.hash),
                       "the driver rejected cached kernel " + key.canonical() + " (" +
                           result_name(r) + "); compiling it again");
      spirv = spirv_for(k, false);
      t0 = std::chrono::steady_clock::now();
      k.pipeline = create_pipeline(k, spirv.words, flags, r);
    }
    if (r != VK_SUCCESS) {
      throw std::runtime_error("[vulkan] creating the pipeline of kernel " + key.canonical() +
                               " failed: " + result_name(r) + ".");
    }
    k.pipeline_ms = ms_since(t0);
    if (flags & VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR) {
      capture_pipeline_stats(dev_, k);
    }
  } catch (...) {
    count_failure();
    throw;
  }
  builds_++;
  std::string name = key.canonical();
  if (k.origin == KernelOrigin::Compiled) {
    store(k, spirv);
    count_compile(k.glslang_ms, k.optimize_ms, k.pipeline_ms);
  } else {
    count_disk_hit(k.disk_load_ms, k.pipeline_ms);
  }
  cache_->record(name);
  cache_->pipeline_created(pipeline_cache_);
}

VkDescriptorSetLayout KernelLibrary::set_layout_for(uint32_t num_buffers) {
  std::lock_guard lk(layout_mtx_);
  auto it = set_layouts_.find(num_buffers);
  if (it != set_layouts_.end()) {
    return it->second;
  }
  std::vector<VkDescriptorSetLayoutBinding> bindings(num_buffers);
  for (uint32_t i = 0; i < num_buffers; ++i) {
    bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  }
  auto ci = make_info<VkDescriptorSetLayoutCreateInfo>(
      VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  ci.flags =
      dev_.has_push_descriptors() ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0;
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
      {
        std::lock_guard lk2(mtx);
        delete lib;  // saves the pipeline cache
        lib = nullptr;
      }
      print_stats_if_requested();
    });
  }
  return *lib;
}

}  // namespace mlx::core::vulkan
