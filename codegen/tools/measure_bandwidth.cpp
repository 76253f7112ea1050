// Measures the memory bandwidth the elementwise kernels reach, with GPU timestamps and
// nothing of the runtime in between: large contiguous, broadcast and transposed launches
// against vkCmdCopyBuffer on the same device. Numbers go to docs/codegen.md.
//   cmake --build <build> --target mlxvk_codegen_measure_bandwidth
//   <build>/codegen/mlxvk_codegen_measure_bandwidth
#include <cstdio>
#include <cstdlib>

#include "codegen/elementwise.h"
#include "codegen/tools/vk_min.h"

using namespace mlxvk_tools;

namespace {

size_t dtype_bytes(const std::string& dt) {
  if (dt == "b" || dt == "u8" || dt == "i8") {
    return 1;
  }
  if (dt == "u16" || dt == "i16" || dt == "f16" || dt == "bf16") {
    return 2;
  }
  if (dt == "u64" || dt == "i64") {
    return 8;
  }
  return 4;
}

struct Case {
  const char* label;
  std::string family, op;
  std::vector<std::string> in;
  std::string out;
  ElementwiseGeometry geometry;
  double bytes;  // moved per launch, counting each array once
};

}  // namespace

int main(int argc, char** argv) {
  Vk vk;
  std::printf("device: %s\n\n", vk.props.deviceName);
  const int log2n = argc > 1 ? std::atoi(argv[1]) : 28;  // even; 2^28 elements by default
  const int64_t n = int64_t(1) << log2n;
  const int64_t side = int64_t(1) << (log2n / 2);  // n = side * side
  const int reps = 20;

  // Reference: the copy engine and a plain f32 copy kernel.
  Buffer a = vk.buffer(n * 8), b = vk.buffer(n * 8), c = vk.buffer(n * 8);
  double copy_ms = vk.gpu_ms(reps, [&](VkCommandBuffer cb) {
    VkBufferCopy region{0, 0, VkDeviceSize(n * 4)};
    vkCmdCopyBuffer(cb, a.buffer, c.buffer, 1, &region);
  });
  double peak = 2.0 * n * 4 / copy_ms / 1e6;
  std::printf("vkCmdCopyBuffer of n f32: %.3f ms, %.0f GB/s (read + write)\n\n", copy_ms, peak);

  auto contiguous = [&](size_t k) {
    ElementwiseGeometry g;
    g.shape = {n};
    g.in_strides.assign(k, {1});
    g.in_offsets.assign(k, 0);
    return g;
  };
  std::vector<Case> cases;
  for (const char* dt : {"f32", "bf16", "f16", "u8", "i64"}) {
    double s = double(dtype_bytes(dt));
    cases.push_back({"copy c", "copy", "Copy", {dt}, dt, contiguous(1), 2 * n * s});
    cases.push_back({"unary Negative c", "unary", "Negative", {dt}, dt, contiguous(1), 2 * n * s});
    cases.push_back({"binary Add cc", "binary", "Add", {dt, dt}, dt, contiguous(2), 3 * n * s});
    ElementwiseGeometry row;
    row.shape = {side, side};
    row.in_strides = {{side, 1}, {0, 1}};
    row.in_offsets = {0, 0};
    cases.push_back({"binary Add row-broadcast", "binary", "Add", {dt, dt}, dt, row, 2 * n * s});
    ElementwiseGeometry tr;
    tr.shape = {side, side};
    tr.in_strides = {{side, 1}, {1, side}};
    tr.in_offsets = {0, 0};
    cases.push_back({"binary Add transposed", "binary", "Add", {dt, dt}, dt, tr, 3 * n * s});
  }
  cases.push_back({"copy f32->bf16 c", "copy", "Copy", {"f32"}, "bf16", contiguous(1), 6.0 * n});

  VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4};
  VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dpi.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT;
  dpi.maxSets = 1;
  dpi.poolSizeCount = 1;
  dpi.pPoolSizes = &ps;
  VkDescriptorPool dpool;
  check(vkCreateDescriptorPool(vk.device, &dpi, nullptr, &dpool), "descriptor pool");

  // "sweep": the contiguous kernels again at other workgroup sizes and elements per
  // invocation (spec constants 0 and 1), to choose the defaults.
  bool sweep = argc > 2 && std::string(argv[2]) == "sweep";
  std::vector<std::pair<uint32_t, uint32_t>> configs = {{0, 0}};
  if (sweep) {
    configs.clear();
    for (uint32_t wg : {256u, 512u}) {
      for (uint32_t ept : {1u, 2u, 4u, 8u, 16u}) {
        configs.push_back({wg, ept});
      }
    }
  }
  std::printf(
      "| kernel | dtype | WG | EPT | ms | GB/s | of copy |\n|---|---|---|---|---|---|---|\n");
  for (auto& k : cases) {
    if (sweep && std::string(k.label).find(" c") == std::string::npos) {
      continue;
    }
    for (auto [wg, ept] : configs) {
      KernelKey key = elementwise_key(k.family, k.op, k.in, k.out, k.geometry);
      KernelSource src = render(key, vk.caps);
      if (wg) {
        src.workgroup_size[0] = wg;
        src.spec_constants[0] = wg;
        src.spec_constants[1] = ept;
      }
      Launch launch = elementwise_launch(key, src, k.geometry);
      Pipeline p = vk.pipeline(src, compile(key, src).words);
      VkDescriptorSetAllocateInfo dsai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
      dsai.descriptorPool = dpool;
      dsai.descriptorSetCount = 1;
      dsai.pSetLayouts = &p.set_layout;
      VkDescriptorSet set;
      check(vkAllocateDescriptorSets(vk.device, &dsai, &set), "descriptor set");
      Buffer* bufs[3] = {&a, &b, &c};
      std::vector<VkDescriptorBufferInfo> infos;
      for (uint32_t i = 0; i < src.num_buffers; ++i) {
        Buffer* buf = i + 1 == src.num_buffers ? &c : bufs[i];
        infos.push_back({buf->buffer, 0, VK_WHOLE_SIZE});
      }
      std::vector<VkWriteDescriptorSet> writes;
      for (uint32_t i = 0; i < src.num_buffers; ++i) {
        VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        w.dstSet = set;
        w.dstBinding = i;
        w.descriptorCount = 1;
        w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        w.pBufferInfo = &infos[i];
        writes.push_back(w);
      }
      vkUpdateDescriptorSets(vk.device, uint32_t(writes.size()), writes.data(), 0, nullptr);
      double ms = vk.gpu_ms(reps, [&](VkCommandBuffer cb) {
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0,
                                nullptr);
        if (!launch.push_constants.empty()) {
          vkCmdPushConstants(cb, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                             uint32_t(launch.push_constants.size()), launch.push_constants.data());
        }
        vkCmdDispatch(cb, launch.groups[0], launch.groups[1], launch.groups[2]);
      });
      double gbs = k.bytes / ms / 1e6;
      std::printf("| %s | %s | %u | %u | %.3f | %.0f | %.0f%% |\n", k.label, k.out.c_str(),
                  src.spec_constants.at(0), src.spec_constants.at(1), ms, gbs, 100 * gbs / peak);
      std::fflush(stdout);
      vkFreeDescriptorSets(vk.device, dpool, 1, &set);
      vk.destroy(p);
    }
  }
  vkDestroyDescriptorPool(vk.device, dpool, nullptr);
  vk.destroy(a);
  vk.destroy(b);
  vk.destroy(c);
  return 0;
}
