// Normalizing and packing elementwise launch geometry (codegen/geometry.h).
#include "codegen/geometry.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace mlx::core::vulkan::codegen {

uint64_t ElementwiseGeometry::size() const {
  uint64_t n = 1;
  for (auto d : shape) {
    if (d < 0) {
      throw std::invalid_argument("[elementwise] negative extent in the output shape.");
    }
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

Normalized normalize(const ElementwiseGeometry& g, size_t inputs) {
  if (g.in_strides.size() != inputs) {
    throw std::invalid_argument("[elementwise] geometry has " +
                                std::to_string(g.in_strides.size()) + " stride vectors for " +
                                std::to_string(inputs) + " inputs.");
  }
  if (!g.in_offsets.empty() && g.in_offsets.size() != inputs) {
    throw std::invalid_argument("[elementwise] geometry has " +
                                std::to_string(g.in_offsets.size()) + " offsets for " +
                                std::to_string(inputs) + " inputs.");
  }
  Normalized n;
  n.size = g.size();
  n.out_offset = g.out_offset;
  n.offsets = g.in_offsets.empty() ? std::vector<uint64_t>(inputs, 0) : g.in_offsets;
  n.strides.resize(inputs);
  for (size_t k = 0; k < inputs; ++k) {
    if (g.in_strides[k].size() != g.shape.size()) {
      throw std::invalid_argument("[elementwise] input " + std::to_string(k) + " has " +
                                  std::to_string(g.in_strides[k].size()) +
                                  " strides for a shape of rank " + std::to_string(g.shape.size()) +
                                  ".");
    }
  }
  if (n.size == 0) {
    return n;
  }
  for (size_t d = 0; d < g.shape.size(); ++d) {
    if (g.shape[d] == 1) {
      continue;
    }
    bool merge = !n.shape.empty();
    for (size_t k = 0; k < inputs && merge; ++k) {
      merge = n.strides[k].back() == g.in_strides[k][d] * g.shape[d];
    }
    if (merge) {
      n.shape.back() *= g.shape[d];
      for (size_t k = 0; k < inputs; ++k) {
        n.strides[k].back() = g.in_strides[k][d];
      }
    } else {
      n.shape.push_back(g.shape[d]);
      for (size_t k = 0; k < inputs; ++k) {
        n.strides[k].push_back(g.in_strides[k][d]);
      }
    }
  }
  return n;
}

uint64_t input_reach(const Normalized& n, size_t k) {
  uint64_t reach = n.offsets[k];
  const auto& s = n.strides[k];
  for (size_t d = 0; d < s.size(); ++d) {
    reach += static_cast<uint64_t>(s[d] < 0 ? -s[d] : s[d]) * static_cast<uint64_t>(n.shape[d] - 1);
  }
  return reach;
}

bool needs_idx64(const Normalized& n) {
  uint64_t max_index = n.size == 0 ? 0 : n.out_offset + n.size - 1;
  max_index = std::max<uint64_t>(max_index, n.size);
  for (size_t k = 0; k < n.strides.size(); ++k) {
    max_index = std::max(max_index, input_reach(n, k));
  }
  return max_index > static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
}

void check_binding_reach(const Normalized& n, const std::string& where) {
  if (n.size == 0) {
    return;
  }
  uint64_t reach = n.out_offset + n.size - 1;
  for (size_t k = 0; k < n.strides.size(); ++k) {
    reach = std::max(reach, input_reach(n, k));
  }
  if (reach > std::numeric_limits<uint32_t>::max()) {
    throw std::invalid_argument("[elementwise_launch] " + where +
                                ": a binding would need element index " + std::to_string(reach) +
                                ", beyond 2^32 - 1; split the array into smaller bindings.");
  }
}

void put(std::vector<uint8_t>& out, int64_t v, bool idx64) {
  if (idx64) {
    uint8_t b[8];
    std::memcpy(b, &v, 8);
    out.insert(out.end(), b, b + 8);
  } else {
    int32_t v32 = static_cast<int32_t>(v);
    uint8_t b[4];
    std::memcpy(b, &v32, 4);
    out.insert(out.end(), b, b + 4);
  }
}

}  // namespace mlx::core::vulkan::codegen
