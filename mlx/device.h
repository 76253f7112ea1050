// Devices an array can be computed on, and the process-wide default.
#pragma once

namespace mlx::core {

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

bool is_available(const Device& d);

bool operator==(const Device& lhs, const Device& rhs);
bool operator!=(const Device& lhs, const Device& rhs);

} // namespace mlx::core
