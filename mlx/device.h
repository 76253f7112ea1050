// Devices an array can be computed on, and the process-wide default.
#pragma once

namespace mlx::core {

// One device of each type, index 0: the CPU, and the GPU when a backend has one. Any
// other index is accepted here but names no device: set_default_device, default_stream,
// new_stream and every op created on it throw std::invalid_argument.
struct Device {
  enum class DeviceType { cpu, gpu };

  static constexpr DeviceType cpu = DeviceType::cpu;
  static constexpr DeviceType gpu = DeviceType::gpu;

  Device(DeviceType type, int index = 0) : type(type), index(index) {}

  DeviceType type;
  int index;
};

// The GPU when a GPU backend reports one available, else the CPU.
const Device& default_device();
void set_default_device(const Device& d);

// False for an index that names no device, and for the GPU when there is none.
bool is_available(const Device& d);

bool operator==(const Device& lhs, const Device& rhs);
bool operator!=(const Device& lhs, const Device& rhs);

}  // namespace mlx::core
