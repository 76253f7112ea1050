#include "mlx/backend/vulkan/coop_shapes.h"

#include <sstream>
#include <vector>

namespace mlx::core::vulkan {

namespace {

constexpr uint32_t kF16 = 0, kF32 = 1, kBF16 = 1000141000, kSubgroup = 3;

std::vector<VkCooperativeMatrixPropertiesKHR> khr_properties(VkPhysicalDevice pd) {
  if (!vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR) {
    return {};
  }
  uint32_t count = 0;
  vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(pd, &count, nullptr);
  VkCooperativeMatrixPropertiesKHR blank{};
  blank.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR;
  std::vector<VkCooperativeMatrixPropertiesKHR> props(count, blank);
  if (count > 0) {
    vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(pd, &count, props.data());
  }
  return props;
}

}  // namespace

bool has_coop_f16_shape(VkPhysicalDevice pd, uint32_t m, uint32_t n, uint32_t k) {
  if (!vkGetPhysicalDeviceCooperativeMatrixPropertiesNV) {
    return false;
  }
  uint32_t count = 0;
  vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &count, nullptr);
  std::vector<VkCooperativeMatrixPropertiesNV> props(
      count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV, nullptr, 0, 0, 0,
              VK_COMPONENT_TYPE_FLOAT16_NV, VK_COMPONENT_TYPE_FLOAT16_NV,
              VK_COMPONENT_TYPE_FLOAT16_NV, VK_COMPONENT_TYPE_FLOAT16_NV, VK_SCOPE_SUBGROUP_NV});
  if (count > 0) {
    vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &count, props.data());
  }
  for (const auto& c : props) {
    if (c.MSize == m && c.NSize == n && c.KSize == k && c.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
        c.BType == VK_COMPONENT_TYPE_FLOAT16_NV && c.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
        c.DType == VK_COMPONENT_TYPE_FLOAT32_NV && c.scope == VK_SCOPE_SUBGROUP_NV) {
      return true;
    }
  }
  return false;
}

std::pair<bool, bool> khr_coop_shapes(VkPhysicalDevice pd, uint32_t m, uint32_t n, uint32_t k) {
  bool f16 = false, bf16 = false;
  for (const auto& c : khr_properties(pd)) {
    if (c.MSize == m && c.NSize == n && c.KSize == k && c.AType == c.BType && c.CType == kF32 &&
        c.ResultType == kF32 && c.scope == kSubgroup) {
      f16 = f16 || c.AType == kF16;
      bf16 = bf16 || c.AType == kBF16;
    }
  }
  return {f16, bf16};
}

std::string khr_coop_shape_list(VkPhysicalDevice pd) {
  std::ostringstream os;
  for (const auto& c : khr_properties(pd)) {
    if (c.scope == kSubgroup) {
      os << (os.tellp() > 0 ? " " : "") << c.MSize << "x" << c.NSize << "x" << c.KSize << ":"
         << c.AType << "*" << c.BType << "+" << c.CType << "=" << c.ResultType;
    }
  }
  return os.str();
}

}  // namespace mlx::core::vulkan
